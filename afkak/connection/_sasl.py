"""SASL authentication of a broker connection: the Kafka exchange around any mechanism.

A :class:`SaslMechanism` knows one mechanism's messages (PLAIN, SCRAM,
OAUTHBEARER, GSSAPI, or one a user writes, such as AWS IAM); this module
carries them in Kafka's frames: SaslHandshake v1 names the mechanism, then
each client message travels in a SaslAuthenticate request and each server
message comes back in its response (KIP-152).  The broker's answer to the
last one may carry a session lifetime (KIP-368), which the connection uses to
re-authenticate in time.

Brokers that lack SaslAuthenticate (Kafka before 1.0) expect raw SASL frames
after a v0 handshake; Kafka 4 removed that framing (KIP-896) and afkak does
not speak it: such a broker fails the authentication with an error saying so.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from twisted.internet.defer import Deferred

from afkak._broker_errors import (
    BrokerResponseError,
    IllegalSaslState,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
)
from afkak._errors import KafkaError, NoCommonVersionError
from afkak.connection._connection import Send
from afkak.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest


class SaslConversation(Protocol):
    """The client's side of one authentication with one mechanism."""

    def respond(self, challenge: bytes | None) -> bytes | None | Deferred[bytes | None]:
        """The next client message, given the server's last one (``None`` at the start).

        Return ``None`` once the client has nothing more to send: the
        authentication succeeded as far as the client can tell.  Raise (or
        fail the Deferred) if the server's message is wrong, such as a SCRAM
        server signature that does not verify.
        """


@runtime_checkable
class SaslMechanism(Protocol):
    """A SASL mechanism, passed to :class:`~afkak.KafkaClient` as ``sasl=``.

    ``name`` is the mechanism's registered name (``"PLAIN"``,
    ``"SCRAM-SHA-256"``...).  :meth:`start` is called for every
    authentication, on every connection and on every re-authentication; it
    may return a Deferred (to fetch a token first, for example).
    Implementations must keep their secrets out of ``repr`` and exceptions.
    """

    name: str

    def start(self, host: str, clock: Any) -> SaslConversation | Deferred[SaslConversation]:
        """Begin authenticating to broker *host*; *clock* provides ``seconds()``."""


class SaslAuthenticator:
    """A connection's ``authenticator``: runs *mechanism* over Kafka's SASL requests.

    Fires with the broker's session lifetime in milliseconds (0: none) or
    fails with :class:`~afkak.common.SaslAuthenticationFailed` (wrong
    credentials, the broker's message included),
    :class:`~afkak.common.UnsupportedSaslMechanism` (naming the mechanisms the
    broker enables) or :class:`~afkak.common.IllegalSaslState` (a listener
    without SASL); none is retriable.
    """

    def __init__(self, mechanism: SaslMechanism, host: str, port: int, clock: Any) -> None:
        self._mechanism = mechanism
        self._where = f"{host}:{port}"
        self._host = host
        self._clock = clock

    def __repr__(self) -> str:
        return f"<SaslAuthenticator {self._mechanism.name} to {self._where}>"

    def __call__(self, send: Send) -> Deferred[int | None]:
        return Deferred.fromCoroutine(self._authenticate(send))

    async def _authenticate(self, send: Send) -> int | None:
        name = self._mechanism.name
        try:
            handshake = await send(SaslHandshakeRequest(mechanism=name), min_version=1)
        except NoCommonVersionError as e:
            raise SaslAuthenticationFailed(
                f"{self._where} lacks SaslHandshake v1 and SaslAuthenticate (Kafka < 1.0), "
                "whose raw SASL framing afkak does not speak"
            ) from e
        if handshake.error_code == UnsupportedSaslMechanism.errno:
            enabled = ", ".join(handshake.mechanisms) or "none"
            raise UnsupportedSaslMechanism(
                f"{self._where} does not enable SASL mechanism {name}; it enables: {enabled}"
            )
        if handshake.error_code == IllegalSaslState.errno:
            # Kafka answers so on a listener without SASL (PLAINTEXT, SSL).
            raise IllegalSaslState(
                f"the listener at {self._where} does not take SASL (its SaslHandshake "
                "answer was ILLEGAL_SASL_STATE): is this the broker's SASL port?"
            )
        if handshake.error_code:
            raise BrokerResponseError.from_errno(
                handshake.error_code, f"SaslHandshake with {self._where} for {name}"
            )
        conversation = await _resolved(self._mechanism.start(self._host, self._clock))
        message = await _resolved(conversation.respond(None))
        lifetime_ms = 0
        while message is not None:
            response = await send(SaslAuthenticateRequest(auth_bytes=message))
            if response.error_code:
                error = BrokerResponseError.from_errno(
                    response.error_code,
                    f"{name} authentication to {self._where} failed: "
                    f"{response.error_message or 'no message from the broker'}",
                )
                raise error
            lifetime_ms = response.session_lifetime_ms
            message = await self._respond(conversation, response.auth_bytes)
        return lifetime_ms

    async def _respond(self, conversation: SaslConversation, challenge: bytes) -> bytes | None:
        """The mechanism's answer to the server; its complaints are authentication failures."""
        try:
            return await _resolved(conversation.respond(challenge))
        except KafkaError:
            raise
        except Exception as e:
            raise SaslAuthenticationFailed(
                f"{self._mechanism.name} authentication to {self._where} failed: "
                f"the server's message was refused: {e}"
            ) from e


T = TypeVar("T")


async def _resolved(value: T | Deferred[T]) -> T:
    """*value*, or what it fires with if it is a Deferred."""
    if isinstance(value, Deferred):
        return await value
    return value
