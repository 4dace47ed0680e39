"""The SASL mechanisms Kafka brokers offer: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Each is a :class:`~afkak.connection.SaslMechanism`; pass one to
:class:`~afkak.KafkaClient` as ``sasl=``.  Secrets are kept out of ``repr``
(attrs ``repr=False``) and out of every error message.
"""

from __future__ import annotations

import random as _random
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.python.failure import Failure


def _text(name: str) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if not isinstance(value, str) or not value:
            raise TypeError(f"{name} must be a non-empty str")
        if "\0" in value:
            raise ValueError(f"{name} must not contain NUL characters")

    return check


@attrs.frozen(repr=False)
class _Finished:
    """A conversation whose one client message has been sent: done once the server answers."""

    first: bytes

    def respond(self, challenge: bytes | None) -> bytes | None:
        return self.first if challenge is None else None


@attrs.frozen
class Plain:
    """SASL PLAIN (RFC 4616): user name and password, in the clear (use TLS)."""

    name: ClassVar[str] = "PLAIN"
    username: str = attrs.field(validator=_text("username"))
    password: str = attrs.field(validator=_text("password"), repr=False)

    def start(self, host: str, clock: Any) -> _Finished:
        return _Finished(b"\0" + self.username.encode() + b"\0" + self.password.encode())


@attrs.define(repr=False)
class _ScramConversation:
    client: Any
    step: int = 0

    def respond(self, challenge: bytes | None) -> bytes | None:
        self.step += 1
        if challenge is None:
            return str(self.client.get_client_first()).encode()
        if self.step == 2:
            self.client.set_server_first(challenge.decode())
            return str(self.client.get_client_final()).encode()
        self.client.set_server_final(challenge.decode())  # verifies the server's signature
        return None


@attrs.frozen
class Scram:
    """SASL SCRAM (RFC 5802, 7677) with SHA-256 or SHA-512, computed by ``scramp``.

    :param mechanism: ``"SCRAM-SHA-256"`` or ``"SCRAM-SHA-512"``; or use
        :func:`ScramSha256` / :func:`ScramSha512`.
    """

    MECHANISMS: ClassVar[tuple[str, ...]] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    mechanism: str = attrs.field(validator=attrs.validators.in_(MECHANISMS))
    username: str = attrs.field(validator=_text("username"))
    password: str = attrs.field(validator=_text("password"), repr=False)

    @property
    def name(self) -> str:
        return self.mechanism

    def start(self, host: str, clock: Any) -> _ScramConversation:
        return _ScramConversation(self.client())

    def client(self, nonce: str | None = None) -> Any:
        """A ``scramp.ScramClient`` for one exchange (*nonce*: fixed, for test vectors only)."""
        from scramp import ScramClient  # type: ignore[import-untyped]

        return ScramClient([self.mechanism], self.username, self.password, c_nonce=nonce)


def ScramSha256(username: str, password: str) -> Scram:  # noqa: N802 -- reads as a class
    """SCRAM-SHA-256 with these credentials."""
    return Scram("SCRAM-SHA-256", username, password)


def ScramSha512(username: str, password: str) -> Scram:  # noqa: N802 -- reads as a class
    """SCRAM-SHA-512 with these credentials."""
    return Scram("SCRAM-SHA-512", username, password)


_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]*")


def _check_extensions(instance: Any, attribute: Any, value: Mapping[str, str]) -> None:
    for key, text in value.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key) or key == "auth":
            raise ValueError(f"SASL extension name {key!r} must be letters only, not 'auth'")
        if not isinstance(text, str) or not _EXTENSION_VALUE.fullmatch(text):
            raise ValueError(f"SASL extension {key} must be printable ASCII")


@attrs.frozen
class OAuthBearerToken:
    """A bearer token from a token provider.

    :param value: the token (a JWT, usually); never shown in ``repr``.
    :param expires_at: when it expires, in seconds on the reactor's clock
        (``reactor.seconds()``: the Unix epoch for a real reactor).
    :param principal: the name the token stands for, for logs.
    :param extensions: SASL extensions to send with this token; they are
        added to (and override) the mechanism's own.
    """

    value: str = attrs.field(validator=_text("token value"), repr=False)
    expires_at: float
    principal: str | None = None
    extensions: Mapping[str, str] = attrs.field(
        factory=dict, converter=dict, validator=_check_extensions
    )


def _range(low: float, high: float) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{attribute.name} must be a number")
        if not low <= value <= high:
            raise ValueError(f"{attribute.name} must be within {low}-{high}, not {value!r}")

    return check


@attrs.frozen
class LoginRefresh:
    """When to replace a token before it expires: Kafka's ``sasl.login.refresh.*`` settings.

    As Java's refreshing login: a token fetched at *t* and expiring at *e* is
    replaced at ``t + (e - t) * (window_factor + window_jitter * random())``,
    but no later than *buffer* seconds before *e* and no sooner than
    *min_period* seconds after *t*; a token expiring within ``min_period +
    buffer`` is replaced half-way to its expiry.  The defaults are Java's
    (0.8, 0.05, 60 s, 300 s); :meth:`window` refreshes at a fixed fraction.

    :param random: ``() -> float`` in [0, 1), injectable so tests are repeatable.
    """

    window_factor: float = attrs.field(default=0.8, validator=_range(0.5, 1.0))
    window_jitter: float = attrs.field(default=0.05, validator=_range(0.0, 0.25))
    min_period: float = attrs.field(default=60.0, validator=_range(0, 900))
    buffer: float = attrs.field(default=300.0, validator=_range(0, 3600))
    random: Callable[[], float] = attrs.field(
        default=_random.random, eq=False, repr=False, kw_only=True
    )

    @classmethod
    def window(cls, factor: float) -> LoginRefresh:
        """Refresh after *factor* of the lifetime, without jitter, period or buffer."""
        return cls(factor, 0.0, 0.0, 0.0)

    def refresh_at(self, fetched: float, expires: float) -> float:
        """When a token fetched at *fetched* (seconds) and expiring at *expires* is replaced."""
        if fetched + self.min_period + self.buffer > expires:
            return fetched + (expires - fetched) / 2
        share = self.window_factor + self.window_jitter * self.random()
        proposed = fetched + (expires - fetched) * share
        return max(min(proposed, expires - self.buffer), fetched + self.min_period)


@attrs.define(repr=False)
class _CachedToken:
    token: OAuthBearerToken
    refresh_at: float


class OAuthBearer:
    """SASL OAUTHBEARER (RFC 7628, KIP-255) with tokens from *token_provider*.

    :param token_provider: a callable returning an :class:`OAuthBearerToken`
        or a Deferred of one.  It is called when a connection authenticates
        and no token is cached, or the cached one has used up
        *refresh_window* of its lifetime, so that connections and
        re-authentications (which the broker asks for before the token
        expires, KIP-368) always present a fresh token.
    :param extensions: SASL extensions sent with every token (KIP-342).
    :param refresh_window: the fraction of a token's lifetime after which a
        new one is fetched (Kafka's ``sasl.login.refresh.window.factor``).
    :param refresh: Java's full refresh rule instead (:class:`LoginRefresh`:
        window factor and jitter, minimum period, buffer before expiry).
    """

    name = "OAUTHBEARER"

    def __init__(
        self,
        token_provider: Callable[[], OAuthBearerToken | Deferred[OAuthBearerToken]],
        *,
        extensions: Mapping[str, str] | None = None,
        refresh_window: float = 0.8,
        refresh: LoginRefresh | None = None,
    ) -> None:
        if not callable(token_provider):
            raise TypeError("token_provider must be callable")
        if not 0.5 <= refresh_window <= 1.0:
            raise ValueError(f"refresh_window must be within 0.5-1.0, not {refresh_window!r}")
        if refresh is not None and not isinstance(refresh, LoginRefresh):
            raise TypeError("refresh must be a LoginRefresh")
        #: Where tokens come from.
        self.token_provider = token_provider
        self._extensions = dict(extensions or {})
        _check_extensions(None, None, self._extensions)
        #: When a token is replaced.
        self.refresh = refresh or LoginRefresh.window(refresh_window)
        self._cached: _CachedToken | None = None
        self._fetching: list[Deferred[OAuthBearerToken]] | None = None

    def __repr__(self) -> str:
        return f"<OAuthBearer extensions={sorted(self._extensions)}>"

    def token(self, clock: Any) -> Deferred[OAuthBearerToken]:
        """The cached token while fresh, else a new one (one provider call at a time)."""
        now = clock.seconds()
        cached = self._cached
        if cached is not None and now < cached.refresh_at:
            return succeed(cached.token)
        waiter: Deferred[OAuthBearerToken] = Deferred()
        if self._fetching is not None:
            self._fetching.append(waiter)
            return waiter
        self._fetching = [waiter]
        maybeDeferred(self.token_provider).addBoth(self._fetched, clock, now)
        return waiter

    def _fetched(self, result: Any, clock: Any, asked: float) -> None:
        waiters, self._fetching = self._fetching or [], None
        if isinstance(result, OAuthBearerToken):
            if result.expires_at <= clock.seconds():
                result = ValueError("the token provider returned an expired token")
            else:
                refresh_at = self.refresh.refresh_at(asked, result.expires_at)
                self._cached = _CachedToken(result, refresh_at)
        elif not isinstance(result, Failure):
            result = TypeError(
                f"the token provider returned {type(result).__name__}, not OAuthBearerToken"
            )
        for waiter in waiters:
            if waiter.called:  # cancelled: its authentication timed out
                continue
            if isinstance(result, OAuthBearerToken):
                waiter.callback(result)
            else:
                waiter.errback(result)

    def start(self, host: str, clock: Any) -> Deferred[_OAuthBearerConversation]:
        return self.token(clock).addCallback(
            lambda token: _OAuthBearerConversation(
                initial_response(token.value, {**self._extensions, **token.extensions})
            )
        )


def initial_response(token: str, extensions: Mapping[str, str]) -> bytes:
    """OAUTHBEARER's client message (RFC 7628 section 3.1, as Kafka sends it)."""
    kvs = "".join(f"\x01{key}={value}" for key, value in extensions.items())
    return f"n,,\x01auth=Bearer {token}{kvs}\x01\x01".encode()


@attrs.define(repr=False)
class _OAuthBearerConversation:
    first: bytes

    def respond(self, challenge: bytes | None) -> bytes | None:
        if challenge is None:
            return self.first
        if challenge:
            # An error (RFC 7628 3.2.2): acknowledge it; the broker then fails the exchange.
            return b"\x01"
        return None
