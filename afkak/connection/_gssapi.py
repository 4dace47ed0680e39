"""SASL GSSAPI: Kerberos V5 (RFC 4752) through the ``gssapi`` package and MIT Kerberos.

The client asks for the service ``SERVICE@HOST``: *service_name* (Kafka's
``sasl.kerberos.service.name``, ``kafka`` by default) at the broker's host as
afkak connects to it, which the Kerberos library canonicalizes as
``krb5.conf`` says (``dns_canonicalize_hostname``, ``rdns``), much as Java's
client takes the reverse-resolved host name.  Mutual authentication is
required; the security-layer negotiation that ends the exchange chooses "no
security layer", as Kafka does (TLS protects the connection if anything does).

Why the GSSAPI calls run in the reactor's thread pool: acquiring credentials
from a keytab is an AS exchange with the KDC and the first context to a broker
a TGS exchange, blocking network round trips inside MIT's library (its
timeouts times the KDCs listed); on the reactor thread they would stall every
other connection.  Each authentication's steps run one at a time in a thread.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.interfaces import IReactorThreads
from twisted.internet.threads import deferToThreadPool

from afkak._broker_errors import SaslAuthenticationFailed

T = TypeVar("T")

#: The security layer Kafka uses: none (RFC 4752 section 3.3, bit 1).
NO_SECURITY_LAYER = 1
_MEMORY_CACHES = itertools.count(1)


class GSSAPIUnavailable(ImportError):
    """The ``gssapi`` package, or the MIT Kerberos library under it, is not installed."""


def import_gssapi() -> Any:
    """The ``gssapi`` module, or :class:`GSSAPIUnavailable` saying what to install."""
    try:
        import gssapi
    except ImportError as e:
        missing = "the gssapi package" if e.name == "gssapi" else "MIT Kerberos's GSSAPI library"
        raise GSSAPIUnavailable(
            f"SASL GSSAPI needs {missing} ({e}): pip install 'afkak[gssapi]', which builds "
            "against MIT Kerberos (Debian: apt-get install libkrb5-dev; at run time "
            "libgssapi-krb5-2)"
        ) from e
    return gssapi


def run_blocking(clock: Any, call: Callable[[], T]) -> Deferred[T]:
    """*call* in *clock*'s thread pool when it is a reactor; in line otherwise (a test Clock)."""
    if IReactorThreads.providedBy(clock):
        return deferToThreadPool(clock, clock.getThreadPool(), call)
    return maybeDeferred(call)


@attrs.define(repr=False)
class _Login:
    credentials: Any
    refresh_at: float


class GSSAPI:
    """SASL GSSAPI (Kerberos), as Java's ``Krb5LoginModule`` configures it.

    :param principal: the client's principal (``alice@EXAMPLE.COM``); with a
        ticket cache and no keytab, ``None`` takes the cache's.
    :param keytab: a keytab holding *principal*'s key (``useKeyTab=true
        keyTab=...``): afkak logs in from it and logs in again once
        *refresh_window* of the ticket's lifetime has passed, as Java's
        re-login thread does.
    :param ticket_cache: a credential cache (``FILE:/tmp/krb5cc_1000``); by
        default ``KRB5CCNAME``'s or MIT's default, when there is no keytab.
        afkak cannot renew it: ``kinit`` does.
    :param service_name: the brokers' Kerberos service
        (``sasl.kerberos.service.name``).
    :param refresh_window: the fraction of a ticket's lifetime after which a
        keytab login is redone (``sasl.kerberos.ticket.renew.window.factor``).
    """

    name = "GSSAPI"

    def __init__(
        self,
        *,
        principal: str | None = None,
        keytab: str | None = None,
        ticket_cache: str | None = None,
        service_name: str = "kafka",
        refresh_window: float = 0.8,
    ) -> None:
        for option, value in (("principal", principal), ("keytab", keytab)):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{option} must be a non-empty str or None")
        if keytab is not None and principal is None:
            raise ValueError("a keytab needs the principal whose key it holds")
        if keytab is not None and ticket_cache is not None:
            raise ValueError("give a keytab or a ticket_cache, not both")
        if not isinstance(service_name, str) or not service_name or "@" in service_name:
            raise ValueError(f"service_name must be a service name, not {service_name!r}")
        if not 0.5 <= refresh_window <= 1.0:
            raise ValueError(f"refresh_window must be within 0.5-1.0, not {refresh_window!r}")
        self._gssapi = import_gssapi()
        self.principal = principal
        self.keytab = keytab
        self.ticket_cache = ticket_cache
        self.service_name = service_name
        self._refresh_window = refresh_window
        self._login: _Login | None = None
        #: How many times credentials were acquired (keytab logins: the first and re-logins).
        self.logins = 0

    def __repr__(self) -> str:
        source = f"keytab={self.keytab}" if self.keytab else f"ticket_cache={self.ticket_cache}"
        return f"<GSSAPI {self.principal or '(cache principal)'} {source} to {self.service_name}>"

    def start(self, host: str, clock: Any) -> Deferred[_GSSAPIConversation]:
        now = clock.seconds()
        return run_blocking(clock, lambda: self._context(host, now)).addCallback(
            lambda context: _GSSAPIConversation(
                context,
                self._gssapi.RequirementFlag.mutual_authentication,
                self._failure(host),
                clock,
            )
        )

    def _failure(self, host: str) -> Callable[[Exception], SaslAuthenticationFailed]:
        def failed(error: Exception) -> SaslAuthenticationFailed:
            text = error.gen_message() if hasattr(error, "gen_message") else str(error)
            return SaslAuthenticationFailed(
                f"GSSAPI authentication of {self.principal or 'the ticket cache principal'} "
                f"to {self.service_name}@{host} failed: {text}{self._hint(error)}"
            )

        return failed

    def _hint(self, error: Exception) -> str:
        missing = isinstance(error, self._gssapi.exceptions.MissingCredentialsError)
        if missing and self.keytab and "Kerberos database" not in str(error):
            return f" (is {self.principal}'s key in keytab {self.keytab}?)"
        if isinstance(error, self._gssapi.exceptions.ExpiredCredentialsError):
            return " (the ticket expired: kinit again, or use a keytab)"
        return ""

    def _context(self, host: str, now: float) -> Any:
        """A security context to *host* (runs in a thread)."""
        gssapi = self._gssapi
        try:
            credentials = self._credentials(now)
            target = gssapi.Name(f"{self.service_name}@{host}", gssapi.NameType.hostbased_service)
            flags = gssapi.RequirementFlag
            return gssapi.SecurityContext(
                name=target,
                creds=credentials,
                usage="initiate",
                flags=[flags.mutual_authentication, flags.integrity],
            )
        except gssapi.exceptions.GSSError as e:
            raise self._failure(host)(e) from None

    def _credentials(self, now: float) -> Any:
        login = self._login
        if login is not None and now < login.refresh_at:
            return login.credentials
        gssapi = self._gssapi
        name = None
        if self.principal is not None:
            name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
        store: dict[bytes, bytes] = {}
        if self.keytab is not None:
            if not os.path.isfile(self.keytab):
                raise SaslAuthenticationFailed(f"GSSAPI keytab {self.keytab} does not exist")
            if not os.access(self.keytab, os.R_OK):
                raise SaslAuthenticationFailed(f"GSSAPI keytab {self.keytab} is not readable")
            # A new in-memory cache: a fresh AS exchange (a login), not an old ticket.
            store[b"client_keytab"] = self.keytab.encode()
            store[b"ccache"] = f"MEMORY:afkak-{os.getpid()}-{next(_MEMORY_CACHES)}".encode()
        elif self.ticket_cache is not None:
            store[b"ccache"] = self.ticket_cache.encode()
        credentials = gssapi.Credentials(name=name, usage="initiate", store=store or None)
        lifetime = credentials.lifetime  # raises ExpiredCredentialsError for a cache's old ticket
        self.logins += 1
        if self.keytab is not None and lifetime:
            self._login = _Login(credentials, now + lifetime * self._refresh_window)
        return credentials


@attrs.define(repr=False)
class _GSSAPIConversation:
    """One authentication: the context's tokens, then the security-layer message."""

    context: Any
    mutual: Any
    failed: Callable[[Exception], SaslAuthenticationFailed]
    clock: Any
    layer_sent: bool = False

    def respond(self, challenge: bytes | None) -> Deferred[bytes | None]:
        return run_blocking(self.clock, lambda: self._advance(challenge))

    def _advance(self, challenge: bytes | None) -> bytes | None:
        try:
            return self._next(challenge)
        except SaslAuthenticationFailed:
            raise
        except Exception as e:
            raise self.failed(e) from None

    def _next(self, challenge: bytes | None) -> bytes | None:
        context = self.context
        if not context.complete:
            token = context.step(challenge)
            if context.complete and self.mutual not in context.actual_flags:
                raise ValueError("the broker did not prove its identity (no mutual authentication)")
            return token or b""
        if self.layer_sent:
            return None
        offer = context.unwrap(challenge or b"").message
        if len(offer) != 4:
            raise ValueError(f"the broker's security-layer offer is {len(offer)} bytes, not 4")
        if not offer[0] & NO_SECURITY_LAYER:
            raise ValueError(f"the broker does not offer 'no security layer' (offer {offer[0]:#x})")
        self.layer_sent = True
        # No security layer, no maximum buffer size, no authorization id (as Kafka's client).
        return bytes(context.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]), False).message)
