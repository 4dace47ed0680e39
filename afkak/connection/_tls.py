"""TLS for broker connections: settings, and an endpoint that connects once the handshake is done.

:class:`TLS` turns into a Twisted client connection creator per broker host
(hostname verification on unless turned off); an ``ssl.SSLContext`` is run
by :mod:`._stdlib_tls` instead.  :func:`tls_endpoint_factory`
wraps any endpoint factory so that a connection attempt succeeds only after
the TLS handshake: a broker whose certificate is refused then fails the
attempt itself, with an error naming the broker and OpenSSL's reason, and
the connection backs off as after any failed attempt.  Except with an
``ssl.SSLContext``, needs Twisted's TLS extra (``pip install 'afkak[tls]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IHandshakeListener, IStreamClientEndpoint
from twisted.internet.protocol import connectionDone
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.python.failure import Failure
from zope.interface import implementer

from afkak._errors import BrokerConnectionError, TLSAuthenticationFailed

EndpointFactory = Callable[[Any, str, int], IStreamClientEndpoint]


def _load_certificate(value: Any) -> Any:
    """A Twisted ``Certificate`` from itself or a PEM file path."""
    from twisted.internet.ssl import Certificate

    if isinstance(value, str):
        with open(value, "rb") as f:
            return Certificate.loadPEM(f.read())
    return value


@attrs.frozen
class TLS:
    """How to secure broker connections; pass as ``KafkaClient(tls=...)`` (or ``tls=True``).

    :param trust_root: the CA that signed the brokers' certificates: a PEM
        file path, a ``twisted.internet.ssl.Certificate``, or any
        ``IOpenSSLTrustRoot``; ``None`` trusts the platform's CAs.
    :param client_certificate: for mutual TLS: a
        ``twisted.internet.ssl.PrivateCertificate``, or a ``(cert_path,
        key_path)`` pair of PEM files.
    :param verify_hostname: check that each broker's certificate names the
        host the client connects to (the advertised host).  Turning it off
        still verifies the chain.
    """

    trust_root: Any = None
    client_certificate: Any = attrs.field(default=None, repr=False)
    verify_hostname: bool = True

    def creator(self, host: str) -> Any:
        """The ``IOpenSSLClientConnectionCreator`` for one broker *host*."""
        from twisted.internet.ssl import (
            CertificateOptions,
            PrivateCertificate,
            optionsForClientTLS,
        )

        trust = self.trust_root
        if trust is not None:
            trust = _load_certificate(trust)
        client = self.client_certificate
        if isinstance(client, tuple):
            cert_path, key_path = client
            with open(cert_path, "rb") as c, open(key_path, "rb") as k:
                client = PrivateCertificate.loadPEM(c.read() + b"\n" + k.read())
        if self.verify_hostname:
            return optionsForClientTLS(host, trustRoot=trust, clientCertificate=client)
        extra: dict[str, Any] = {}
        if client is not None:
            extra = {"privateKey": client.privateKey.original, "certificate": client.original}
        if trust is None:
            from twisted.internet.ssl import platformTrust

            trust = platformTrust()
        return CertificateOptions(trustRoot=trust, **extra)


def creator_factory(tls: Any) -> Callable[[str], Any]:
    """``host -> connection creator`` for ``KafkaClient``'s *tls* option.

    ``True`` (platform CAs), a :class:`TLS`, or a ready
    ``twisted.internet.ssl.CertificateOptions`` / ``IOpenSSLClientConnectionCreator``
    used as it is for every broker (it does its own verification, if any).
    """
    import ssl

    if isinstance(tls, ssl.SSLContext):
        return lambda host: tls
    if tls is True:
        tls = TLS()
    if isinstance(tls, TLS):
        return tls.creator
    from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
    from twisted.internet.ssl import CertificateOptions

    if isinstance(tls, CertificateOptions) or IOpenSSLClientConnectionCreator.providedBy(tls):
        return lambda host: tls
    raise TypeError(
        "tls must be True, an afkak TLS, an ssl.SSLContext, a twisted CertificateOptions or an "
        f"IOpenSSLClientConnectionCreator, not {type(tls).__name__}"
    )


def tls_endpoint_factory(tls: Any, endpoint_factory: EndpointFactory) -> EndpointFactory:
    """*endpoint_factory*'s endpoints, wrapped in TLS per *tls* (see :func:`creator_factory`)."""
    creator = creator_factory(tls)

    def factory(reactor: Any, host: str, port: int) -> Any:
        return _TLSEndpoint(creator(host), endpoint_factory(reactor, host, port), host, port)

    return factory


@implementer(IHandshakeListener)
class _HandshakeWatch(ProtocolWrapper):
    """Reports the end of the TLS handshake, or the connection lost before it ended."""

    factory: _HandshakeWatchFactory
    _handshaken = False
    _received = False

    def handshakeCompleted(self) -> None:
        self._handshaken = True
        self.factory.settle(self.wrappedProtocol)

    def dataReceived(self, data: bytes) -> None:
        self._received = True
        super().dataReceived(data)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self._handshaken and not self._received and _is_tls_error(reason.value):
            # TLS 1.3: the broker refused our certificate after our handshake ended.
            reason = Failure(
                TLSAuthenticationFailed(
                    f"{self.factory.where} refused the TLS session (a client certificate "
                    f"missing or not trusted?): {reason.getErrorMessage()}"
                )
            )
        self.factory.settle(reason)
        super().connectionLost(reason)


def _is_tls_error(error: BaseException) -> bool:
    """Whether *error* is pyOpenSSL's or the ssl module's (a TLS alert, say)."""
    import ssl

    if isinstance(error, ssl.SSLError):
        return True
    try:
        from OpenSSL.SSL import Error
    except ImportError:
        return False
    return isinstance(error, Error)


class _HandshakeWatchFactory(WrappingFactory):
    protocol = _HandshakeWatch
    noisy = False

    def __init__(self, wrapped: Any, where: str) -> None:
        super().__init__(wrapped)
        self.where = where
        self.watch: _HandshakeWatch | None = None
        self.done: Deferred[Any] = Deferred(self._cancel)

    def buildProtocol(self, addr: Any) -> Any:
        watch = super().buildProtocol(addr)
        assert isinstance(watch, _HandshakeWatch)
        self.watch = watch
        return watch

    def settle(self, result: Any) -> None:
        if self.done.called:
            return
        if isinstance(result, Failure):
            reason = result.getErrorMessage() or type(result.value).__name__
            self.done.errback(
                BrokerConnectionError(f"TLS handshake with {self.where} failed: {reason}")
            )
        else:
            self.done.callback(result)

    def _cancel(self, _: Deferred[Any]) -> None:
        if self.watch is not None and self.watch.transport is not None:
            self.watch.transport.abortConnection()  # type: ignore[attr-defined]


@implementer(IStreamClientEndpoint)
class _TLSEndpoint:
    """Connects over TLS; fires with the protocol once the handshake has succeeded."""

    def __init__(self, creator: Any, endpoint: IStreamClientEndpoint, host: str, port: int):
        self._creator = creator
        self._endpoint = endpoint
        self._host = host
        self._where = f"{host}:{port}"

    def connect(self, factory: Any) -> Deferred[Any]:
        import ssl

        from afkak.connection._stdlib_tls import SSLContextFactory

        watch = _HandshakeWatchFactory(factory, self._where)
        if isinstance(self._creator, ssl.SSLContext):
            tls: Any = SSLContextFactory(self._creator, self._host, watch)
        else:
            from twisted.protocols.tls import TLSMemoryBIOFactory

            tls = TLSMemoryBIOFactory(self._creator, True, watch)
        tcp = self._endpoint.connect(tls)

        def tcp_failed(failure: Failure) -> None:
            if not watch.done.called:
                watch.done.errback(failure)

        def cancel_tcp(failure: Failure) -> Failure:
            if not tcp.called:
                tcp.cancel()
            return failure

        tcp.addErrback(tcp_failed)
        return watch.done.addErrback(cancel_tcp)
