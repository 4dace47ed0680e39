"""TLS from Python's own ``ssl.SSLContext``, for users who configure TLS that way.

Twisted's TLS runs on pyOpenSSL; an ``ssl.SSLContext`` cannot be turned into
its options (its client certificate cannot be read back).  So this layer
runs the context's TLS itself, over memory BIOs, between the TCP transport
and the protocol above, and tells that protocol ``handshakeCompleted()``
(``IHandshakeListener``) as Twisted's TLS layer does.  The context decides
verification: ``ssl.create_default_context()`` checks chains and host names.
"""

from __future__ import annotations

import ssl
from typing import Any

from twisted.internet.interfaces import IHandshakeListener, ITCPTransport
from twisted.internet.protocol import connectionDone
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.python.failure import Failure

_CHUNK = 1 << 16


class _SSLContextProtocol(ProtocolWrapper):
    """TLS client over the TCP transport; plaintext to and from ``wrappedProtocol``."""

    factory: SSLContextFactory
    #: The TCP connection below, set by ``makeConnection`` before any other call.
    transport: ITCPTransport

    @property
    def _tcp(self) -> Any:
        """The TCP transport below (set from connectionMade on)."""
        return self.transport

    def connectionMade(self) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = self.factory.context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=self.factory.host
        )
        self._handshaken = False
        self._unsent: list[bytes] = []
        self._lose_when_sent = False
        self._step()

    # From the network

    def dataReceived(self, data: bytes) -> None:
        self._incoming.write(data)
        self._step()

    _failed_reason: Failure | None = None

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self._failed_reason is not None:
            reason = self._failed_reason  # the TLS error, not "connection aborted"
        super().connectionLost(reason)  # type: ignore[no-untyped-call]  # Twisted, untyped

    def _step(self) -> None:
        """Advance the handshake, deliver what decrypts, send what TLS produced."""
        try:
            if not self._handshaken:
                try:
                    self._tls.do_handshake()
                except ssl.SSLWantReadError:
                    return
                finally:
                    self._send_tls()
                self._handshaken = True
                if IHandshakeListener.providedBy(self.wrappedProtocol):
                    self.wrappedProtocol.handshakeCompleted()
                for data in self._unsent:
                    self._tls.write(data)
                self._unsent = []
                if self._lose_when_sent:
                    self._close()
                    return
            while True:
                try:
                    data = self._tls.read(_CHUNK)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:  # close_notify from the peer
                    self._tcp.loseConnection()
                    break
                if not data:
                    break
                self.wrappedProtocol.dataReceived(data)
                if self.wrappedProtocol is None:  # the protocol above closed
                    return
        except ssl.SSLError as e:
            self._failed_reason = Failure(e)
            self._send_tls()
            self._tcp.abortConnection()
            return
        self._send_tls()

    def _send_tls(self) -> None:
        data = self._outgoing.read()
        if data:
            self._tcp.write(data)

    # From the protocol above

    def write(self, data: bytes) -> None:
        if not self._handshaken:
            self._unsent.append(bytes(data))
            return
        self._tls.write(data)
        self._send_tls()

    def writeSequence(self, data: Any) -> None:
        self.write(b"".join(data))

    def loseConnection(self) -> None:
        self.disconnecting = True
        if not self._handshaken:
            self._lose_when_sent = True
            return
        self._close()

    def _close(self) -> None:
        try:
            self._tls.unwrap()  # close_notify
        except ssl.SSLError:
            pass
        self._send_tls()
        self._tcp.loseConnection()


class SSLContextFactory(WrappingFactory):
    """Wraps *wrapped*'s protocols in TLS from *context*, for server *host*."""

    protocol = _SSLContextProtocol
    noisy = False

    def __init__(self, context: ssl.SSLContext, host: str, wrapped: Any) -> None:
        super().__init__(wrapped)  # type: ignore[no-untyped-call]
        self.context = context
        self.host = host
