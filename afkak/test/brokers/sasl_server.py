"""A broker-side SASL server for tests: authenticates clients itself, then forwards to a broker.

No broker installable here authenticates for real (see :mod:`afkak.test.brokers.sasl`),
so this loopback proxy plays the broker's SASL part in front of a real broker:

- before authentication it forwards only ApiVersions and answers SaslHandshake
  (v1) and SaslAuthenticate itself; any other request closes the connection,
  as Kafka does;
- PLAIN (RFC 4616) checks the password; SCRAM-SHA-256/512 (RFC 5802/7677)
  runs scramp's *server* side against credentials salted at start-up;
  OAUTHBEARER (RFC 7628, KIP-255) accepts unsecured JWTs (``alg: none``, the
  kind librdkafka's ``enable.sasl.oauthbearer.unsecure.jwt`` makes) that have
  a ``sub`` and an ``exp`` in the future, and answers a bad token with the
  RFC's JSON error challenge, failing once the client acknowledges it;
- wrong credentials get SASL_AUTHENTICATION_FAILED with Kafka's message;
- with ``session_lifetime_ms`` (capped at the token's expiry, as Kafka caps
  it) it tells the client its session lifetime and closes a connection that
  sends anything but a re-authentication after it ended (KIP-368);
- its own answers are queued behind the broker's answers to earlier requests,
  so a client sees every response in request order.

Run as ``python -m afkak.test.brokers.sasl_server CONFIG_JSON``; it prints one
JSON line per event (``listening``, ``authenticated``, ``failed``,
``expired``) on stdout.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import time
from typing import Any

from twisted.internet import protocol, reactor
from twisted.internet.endpoints import serverFromString

from afkak.protocol.header import decode_request, encode_response
from afkak.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse

_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = 18, 17, 36
_SASL_FAILED, _UNSUPPORTED_MECHANISM, _ILLEGAL_SASL_STATE = 58, 33, 34
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def event(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def failed_message(mechanism: str) -> str:
    """What Kafka answers to wrong credentials (never naming the user or the password)."""
    return (
        f"Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


def split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete size-prefixed frames at the start of *buffer* (prefix kept), and the rest."""
    frames = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">i", buffer)
        if len(buffer) < 4 + size:
            break
        frames.append(buffer[: 4 + size])
        buffer = buffer[4 + size :]
    return frames, buffer


class Config:
    def __init__(self, raw: dict[str, Any]) -> None:
        from scramp import ScramMechanism

        self.upstream_port: int = raw["upstream_port"]
        self.mechanisms: list[str] = raw["mechanisms"]
        self.users: dict[str, str] = raw.get("users", {})
        self.session_lifetime_ms: int = raw.get("session_lifetime_ms", 0)
        self.scram = {
            name: {
                user: ScramMechanism(name).make_auth_info(password, iteration_count=4096)
                for user, password in self.users.items()
            }
            for name in _SCRAM
        }


class _Upstream(protocol.Protocol):
    def __init__(self, client: SaslServerProtocol) -> None:
        self.client = client
        self.buffer = b""

    def connectionMade(self) -> None:
        self.client.upstream_ready(self)

    def dataReceived(self, data: bytes) -> None:
        frames, self.buffer = split_frames(self.buffer + data)
        for frame in frames:
            self.client.upstream_response(frame)

    def connectionLost(self, reason: Any = None) -> None:
        self.client.transport.loseConnection()


class SaslServerProtocol(protocol.Protocol):
    def __init__(self, config: Config) -> None:
        self.config = config
        self.buffer = b""
        self.upstream: _Upstream | None = None
        self.to_upstream: list[bytes] = []
        #: [correlation id, response frame or None while the broker owes it], in request order.
        self.answers: list[list[Any]] = []
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.authenticated = False
        self.reauthenticating = False
        self.session_ends: float | None = None
        self.exchange: Any = None
        self.scram_user = ""

    def connectionMade(self) -> None:
        protocol.ClientCreator(reactor, _Upstream, self).connectTCP(
            "127.0.0.1", self.config.upstream_port
        )

    def upstream_ready(self, upstream: _Upstream) -> None:
        self.upstream = upstream
        for frame in self.to_upstream:
            upstream.transport.write(frame)
        self.to_upstream = []

    def connectionLost(self, reason: Any = None) -> None:
        if self.upstream is not None:
            self.upstream.transport.loseConnection()

    # Requests

    def dataReceived(self, data: bytes) -> None:
        frames, self.buffer = split_frames(self.buffer + data)
        for frame in frames:
            self.request(frame)

    def request(self, frame: bytes) -> None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 4)
        if api_key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
            _, message = decode_request(frame[4:])
            if api_key == _SASL_HANDSHAKE:
                answer = self.handshake(message.mechanism, version)
            else:
                answer = self.authenticate(message.auth_bytes)
            self.answers.append([correlation_id, encode_response(answer, version, correlation_id)])
            self.flush()
            return
        if api_key != _API_VERSIONS:
            if not self.authenticated:
                event(event="refused", reason="request before authentication", api_key=api_key)
                self.transport.loseConnection()
                return
            if self.session_ends is not None and time.time() > self.session_ends:
                event(event="expired", principal=self.principal)
                self.transport.loseConnection()
                return
        self.answers.append([correlation_id, None])
        if self.upstream is None:
            self.to_upstream.append(frame)
        else:
            self.upstream.transport.write(frame)

    def upstream_response(self, frame: bytes) -> None:
        (correlation_id,) = struct.unpack_from(">i", frame, 4)
        for answer in self.answers:
            if answer[0] == correlation_id and answer[1] is None:
                answer[1] = frame
                break
        # else: an answer the client did not wait for (acks=0): dropped
        self.flush()

    def flush(self) -> None:
        while self.answers and self.answers[0][1] is not None:
            self.transport.write(self.answers.pop(0)[1])

    # SASL

    def handshake(self, mechanism: str, version: int) -> SaslHandshakeResponse:
        enabled = self.config.mechanisms
        if version < 1 or mechanism not in enabled:
            return SaslHandshakeResponse(error_code=_UNSUPPORTED_MECHANISM, mechanisms=enabled)
        if self.authenticated and mechanism != self.mechanism:
            return SaslHandshakeResponse(error_code=_ILLEGAL_SASL_STATE, mechanisms=enabled)
        self.reauthenticating = self.authenticated
        self.mechanism = mechanism
        self.exchange = None
        return SaslHandshakeResponse(error_code=0, mechanisms=enabled)

    def authenticate(self, auth_bytes: bytes) -> SaslAuthenticateResponse:
        mechanism = self.mechanism
        if mechanism is None:
            return self.failure(_ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake")
        try:
            if mechanism == "PLAIN":
                return self.plain(auth_bytes)
            if mechanism in _SCRAM:
                return self.scram(mechanism, auth_bytes)
            return self.oauthbearer(auth_bytes)
        except Exception as e:
            event(event="failed", mechanism=mechanism, reason=f"{type(e).__name__}: {e}")
            return self.failure(_SASL_FAILED, failed_message(mechanism))

    def plain(self, auth_bytes: bytes) -> SaslAuthenticateResponse:
        _authzid, user, password = auth_bytes.decode().split("\0")
        if self.config.users.get(user) != password:
            raise ValueError(f"wrong password for {user!r}")
        return self.success(user, 0)

    def scram(self, mechanism: str, auth_bytes: bytes) -> SaslAuthenticateResponse:
        if self.exchange is None:
            from scramp import ScramMechanism

            credentials = self.config.scram[mechanism]

            def lookup(user: str) -> Any:
                self.scram_user = user
                return credentials[user]

            self.exchange = ScramMechanism(mechanism).make_server(lookup)
            self.exchange.set_client_first(auth_bytes.decode())
            return SaslAuthenticateResponse(
                error_code=0, auth_bytes=self.exchange.get_server_first().encode()
            )
        exchange, self.exchange = self.exchange, None
        exchange.set_client_final(auth_bytes.decode())
        final = exchange.get_server_final().encode()
        return self.success(self.scram_user, 0, final)

    def oauthbearer(self, auth_bytes: bytes) -> SaslAuthenticateResponse:
        if self.exchange == "error sent":
            self.exchange = None
            if auth_bytes != b"\x01":
                raise ValueError("the client did not acknowledge the error challenge")
            raise ValueError("invalid token")
        text = auth_bytes.decode()
        gs2, _, rest = text.partition("\x01")
        if not gs2.startswith("n,"):
            raise ValueError("no GS2 header")
        fields = dict(kv.split("=", 1) for kv in rest.split("\x01") if kv)
        scheme, _, token = fields.pop("auth", "").partition(" ")
        claims = _unsecured_jwt_claims(token) if scheme.lower() == "bearer" else None
        now = time.time()
        if claims is None or "sub" not in claims or float(claims.get("exp", 0)) <= now:
            self.exchange = "error sent"
            event(event="bad token", mechanism="OAUTHBEARER")
            challenge = json.dumps({"status": "invalid_token"}).encode()
            return SaslAuthenticateResponse(error_code=0, auth_bytes=challenge)
        token_ms = int((float(claims["exp"]) - now) * 1000)
        return self.success(claims["sub"], token_ms, extensions=fields)

    def success(
        self,
        principal: str,
        token_ms: int,
        auth_bytes: bytes = b"",
        extensions: dict[str, str] | None = None,
    ) -> SaslAuthenticateResponse:
        if self.reauthenticating and principal != self.principal:
            raise ValueError("re-authentication as another principal")
        lifetime = self.config.session_lifetime_ms
        if token_ms and lifetime:
            lifetime = min(lifetime, token_ms)
        event(
            event="authenticated",
            mechanism=self.mechanism,
            principal=principal,
            reauthentication=self.reauthenticating,
            extensions=extensions or {},
            session_lifetime_ms=lifetime,
        )
        self.principal = principal
        self.authenticated = True
        self.reauthenticating = False
        self.session_ends = time.time() + lifetime / 1000 if lifetime else None
        return SaslAuthenticateResponse(
            error_code=0, auth_bytes=auth_bytes, session_lifetime_ms=lifetime
        )

    def failure(self, code: int, message: str) -> SaslAuthenticateResponse:
        reactor.callLater(0.05, self.transport.loseConnection)  # as Kafka, after answering
        return SaslAuthenticateResponse(error_code=code, error_message=message)


def _unsecured_jwt_claims(token: str) -> dict[str, Any] | None:
    try:
        header, payload, signature = token.split(".")
        decoded = [
            json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            for part in (header, payload)
        ]
    except ValueError:
        return None
    if decoded[0].get("alg") != "none" or signature:
        return None
    claims: dict[str, Any] = decoded[1]
    return claims


def main(raw: str) -> None:
    options = json.loads(raw)
    config = Config(options)
    factory = protocol.Factory()
    factory.buildProtocol = lambda addr: SaslServerProtocol(config)  # type: ignore[method-assign]
    port = options["port"]
    endpoint = serverFromString(reactor, f"tcp:{port}:interface=127.0.0.1")
    listening = endpoint.listen(factory)
    listening.addCallback(lambda _: event(event="listening", port=port))
    listening.addErrback(lambda f: (event(event="error", reason=str(f.value)), reactor.stop()))
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1])
