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

import os
from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
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


#: Seconds to wait for the broker's side of a TLS handshake (a TLS listener
#: answers a ClientHello at once; a plaintext one never does).
HANDSHAKE_TIMEOUT = 5.0


class TLSHandshakeError(BrokerConnectionError):
    """The TLS handshake with a broker failed or got no answer."""


def _readable_file(what: str, path: str) -> None:
    """ValueError naming *path* unless it is a file this process can read."""
    if not os.path.isfile(path):
        missing = "does not exist" if not os.path.exists(path) else "is not a file"
        raise ValueError(f"{what} {path} {missing}")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{what} {path} is not readable")


@attrs.frozen
class TLS:
    """How to secure broker connections; pass as ``KafkaClient(tls=...)`` (or ``tls=True``).

    :param trust_root: the CA that signed the brokers' certificates: a PEM
        file path, a :class:`~afkak.connection.TrustStore` (PKCS12, JKS, PEM),
        a ``twisted.internet.ssl.Certificate``, or any ``IOpenSSLTrustRoot``;
        ``None`` trusts the platform's CAs.
    :param client_certificate: for mutual TLS: a
        :class:`~afkak.connection.KeyStore` (PKCS12, JKS, PEM), a
        ``twisted.internet.ssl.PrivateCertificate``, or a ``(cert_path,
        key_path)`` pair of PEM files.
    :param verify_hostname: check that each broker's certificate names the
        host the client connects to (the advertised host).  Turning it off
        still verifies the chain.
    :param handshake_timeout: seconds a connection waits for the broker's side
        of the handshake.  A plaintext listener never answers TLS (Tansu) or
        closes the connection (Kafka): either fails the attempt as a TLS
        handshake failure, not as a request timing out later.
    """

    trust_root: Any = None
    client_certificate: Any = attrs.field(default=None, repr=False)
    verify_hostname: bool = True
    handshake_timeout: float = HANDSHAKE_TIMEOUT

    def __attrs_post_init__(self) -> None:
        if (
            isinstance(self.handshake_timeout, bool)
            or not isinstance(self.handshake_timeout, (int, float))
            or not 0 < self.handshake_timeout < float("inf")
        ):
            raise ValueError(
                f"handshake_timeout must be seconds > 0, not {self.handshake_timeout!r}"
            )
        # A missing file would otherwise surface only as every request timing out.
        if isinstance(self.trust_root, str):
            _readable_file("trust_root (the CA file)", self.trust_root)
        if isinstance(self.client_certificate, tuple):
            cert_path, key_path = self.client_certificate
            _readable_file("client_certificate's certificate file", cert_path)
            _readable_file("client_certificate's key file", key_path)

    def creator(self, host: str) -> Any:
        """The ``IOpenSSLClientConnectionCreator`` for one broker *host*."""
        from twisted.internet.ssl import (
            CertificateOptions,
            PrivateCertificate,
            optionsForClientTLS,
        )

        from afkak.connection._keystores import KeyStore, TrustStore

        trust = self.trust_root
        if isinstance(trust, TrustStore):
            trust = trust.trust_root()
        elif trust is not None:
            trust = _load_certificate(trust)
        client = self.client_certificate
        chain: dict[str, Any] = {}
        if isinstance(client, KeyStore):
            chain = {"extraCertChain": client.extra_chain()}
            client = client.private_certificate()
        elif isinstance(client, tuple):
            cert_path, key_path = client
            with open(cert_path, "rb") as c, open(key_path, "rb") as k:
                client = PrivateCertificate.loadPEM(c.read() + b"\n" + k.read())
        if self.verify_hostname:
            return optionsForClientTLS(
                host, trustRoot=trust, clientCertificate=client, extraCertificateOptions=chain
            )
        extra: dict[str, Any] = dict(chain)
        if client is not None:
            extra |= {"privateKey": client.privateKey.original, "certificate": client.original}
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
    """*endpoint_factory*'s endpoints, wrapped in TLS per *tls* (see ``creator_factory``)."""
    creator = creator_factory(tls)
    timeout = tls.handshake_timeout if isinstance(tls, TLS) else HANDSHAKE_TIMEOUT

    def factory(reactor: Any, host: str, port: int) -> Any:
        endpoint = endpoint_factory(reactor, host, port)
        return _TLSEndpoint(creator(host), endpoint, host, port, reactor, timeout)

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
        super().dataReceived(data)  # type: ignore[no-untyped-call]  # Twisted, untyped

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
        super().connectionLost(reason)  # type: ignore[no-untyped-call]  # Twisted, untyped


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

    def __init__(self, wrapped: Any, where: str, reactor: Any, timeout: float) -> None:
        super().__init__(wrapped)  # type: ignore[no-untyped-call]
        self.where = where
        self._reactor = reactor
        self._timeout = timeout
        self._timer: Any = None
        self.watch: _HandshakeWatch | None = None
        self.done: Deferred[Any] = Deferred(self._cancel)

    def buildProtocol(self, addr: Any) -> Any:
        watch = super().buildProtocol(addr)
        assert isinstance(watch, _HandshakeWatch)
        self.watch = watch
        self._timer = self._reactor.callLater(self._timeout, self._no_answer)
        return watch

    def _no_answer(self) -> None:
        self._timer = None
        self._fail(
            f"TLS handshake with {self.where} got no answer within {self._timeout:g} s "
            "(a plaintext listener does not answer TLS: is this the broker's TLS port?)"
        )
        if self.watch is not None and self.watch.transport is not None:
            self.watch.transport.abortConnection()  # type: ignore[attr-defined]

    def settle(self, result: Any) -> None:
        if self.done.called:
            return
        if isinstance(result, Failure):
            reason = result.getErrorMessage() or type(result.value).__name__
            if result.check(ConnectionDone, ConnectionLost) or "wrong version number" in reason:
                reason += " (is this the broker's TLS port?)"
            self._fail(f"TLS handshake with {self.where} failed: {reason}")
        else:
            self._stop_timer()
            self.done.callback(result)

    def _fail(self, message: str) -> None:
        self._stop_timer()
        if not self.done.called:
            self.done.errback(TLSHandshakeError(message))

    def _stop_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _cancel(self, _: Deferred[Any]) -> None:
        self._stop_timer()
        if self.watch is not None and self.watch.transport is not None:
            self.watch.transport.abortConnection()  # type: ignore[attr-defined]


@implementer(IStreamClientEndpoint)
class _TLSEndpoint:
    """Connects over TLS; fires with the protocol once the handshake has succeeded."""

    def __init__(
        self,
        creator: Any,
        endpoint: IStreamClientEndpoint,
        host: str,
        port: int,
        reactor: Any,
        handshake_timeout: float,
    ):
        self._creator = creator
        self._endpoint = endpoint
        self._host = host
        self.where = f"{host}:{port}"
        self._reactor = reactor
        self._handshake_timeout = handshake_timeout

    def connect(self, factory: Any) -> Deferred[Any]:
        import ssl

        from afkak.connection._stdlib_tls import SSLContextFactory

        watch = _HandshakeWatchFactory(factory, self.where, self._reactor, self._handshake_timeout)
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
