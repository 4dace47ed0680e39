"""In-memory, synchronous TCP connections between a client and a fake broker.

Writes are not delivered inside the writing protocol's callbacks: they go
through one FIFO per cluster (:class:`DeliveryLoop`), drained by whichever
call posted to it first, so deliveries never nest (the broker's answer is not
handed to the client while the broker is still handling the request) and
everything settles before the outermost call returns.  A test therefore needs
no pumping: ``successResultOf(client.request(...))`` works.

The price: the outermost ``write()`` returns only after the exchange it
started has settled, so a client's ``dataReceived`` may see the response
before its ``write()`` returns.  A client must register a request as in
flight before writing it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import (
    IConsumer,
    IProducer,
    IProtocol,
    IPullProducer,
    IPushProducer,
    ITCPTransport,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

_log = Logger()
_client_ports = itertools.count(50000)


class DeliveryLoop:
    """A FIFO of pending calls, drained non-reentrantly by the first poster."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._draining = False

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        self._queue.append((fn, args))
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue:
                fn, args = self._queue.popleft()
                fn(*args)
        finally:
            self._draining = False


@implementer(ITCPTransport, IConsumer, IPushProducer)
class MemoryTransport:
    """One end of an in-memory TCP connection.

    Data written here reaches the peer's protocol in order, through the
    cluster's :class:`DeliveryLoop`.  Buffers are unbounded, so a registered
    streaming producer is never paused; a pull producer is asked for more
    whenever its last write has been delivered.  ``pauseProducing`` holds
    incoming data until ``resumeProducing``.
    """

    def __init__(
        self, loop: DeliveryLoop, protocol: IProtocol, host: IPv4Address, peer: IPv4Address
    ) -> None:
        self._loop = loop
        self.protocol = protocol
        self._host = host
        self._peer_address = peer
        self.peer: MemoryTransport | None = None
        self.connected = True
        self.disconnecting = False
        self.tcp_nodelay = False
        self.tcp_keepalive = False
        self.producer: IProducer | None = None
        self.streaming = False
        self._paused = False
        self._held: list[bytes] = []
        self._in_flight = 0
        self._receiving = True

    # ITransport
    def write(self, data: bytes) -> None:
        if not data or self.disconnecting:
            return
        self._in_flight += 1
        self._loop.post(self._deliver, bytes(data))

    def writeSequence(self, data: Any) -> None:
        self.write(b"".join(data))

    def loseConnection(self) -> None:
        """Close after everything already written has been delivered."""
        if self.connected and not self.disconnecting:
            self.disconnecting = True
            self._loop.post(self._close, Failure(ConnectionDone("Connection was closed cleanly.")))

    def loseWriteConnection(self) -> None:
        self.loseConnection()

    def abortConnection(self) -> None:
        """Close at once: data not yet delivered, in either direction, is lost."""
        if not self.connected:
            return
        for end in (self, self.peer):
            if end is not None:
                end._receiving = False
                end.disconnecting = True
        self._loop.post(self._close, Failure(ConnectionLost("Connection was aborted.")))

    def getHost(self) -> IPv4Address:
        return self._host

    def getPeer(self) -> IPv4Address:
        return self._peer_address

    # ITCPTransport
    def getTcpNoDelay(self) -> bool:
        return self.tcp_nodelay

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.tcp_nodelay = bool(enabled)

    def getTcpKeepAlive(self) -> bool:
        return self.tcp_keepalive

    def setTcpKeepAlive(self, enabled: bool) -> None:
        self.tcp_keepalive = bool(enabled)

    # IConsumer
    def registerProducer(self, producer: IProducer, streaming: bool) -> None:
        if self.producer is not None:
            raise RuntimeError(
                f"Cannot register producer {producer}: {self.producer} is registered"
            )
        if not self.connected:
            producer.stopProducing()
            return
        self.producer = producer
        self.streaming = streaming
        if not streaming:
            self._loop.post(self._pull)

    def unregisterProducer(self) -> None:
        self.producer = None

    # IPushProducer: flow control of incoming data
    def pauseProducing(self) -> None:
        self._paused = True

    def resumeProducing(self) -> None:
        if self._paused:
            self._paused = False
            held, self._held = self._held, []
            for data in held:
                self._loop.post(self._receive, data)

    def stopProducing(self) -> None:
        self.loseConnection()

    def _deliver(self, data: bytes) -> None:
        self._in_flight -= 1
        if self.connected and self.peer is not None:
            self.peer._receive(data)
        if self._in_flight == 0 and self.producer is not None and not self.streaming:
            self._loop.post(self._pull)

    def _pull(self) -> None:
        if self.producer is not None and not self.streaming and self.connected:
            cast(IPullProducer, self.producer).resumeProducing()  # not streaming: a pull producer

    def _receive(self, data: bytes) -> None:
        if not (self.connected and self._receiving):
            return
        if self._paused:
            self._held.append(data)
            return
        try:
            self.protocol.dataReceived(data)
        except Exception:
            failure = Failure()
            _log.failure(
                "Unhandled error in dataReceived of {protocol}", failure, protocol=self.protocol
            )
            self._close(failure)

    def _close(self, reason: Failure) -> None:
        """Disconnect both ends; each protocol sees connectionLost(reason) once."""
        ends = [end for end in (self, self.peer) if end is not None and end.connected]
        for end in ends:
            end.connected = False
            end.disconnecting = True
        for end in ends:
            producer, end.producer = end.producer, None
            if producer is not None:
                producer.stopProducing()
            end.protocol.connectionLost(reason)


def connect_pair(
    loop: DeliveryLoop,
    client_protocol: IProtocol,
    server_protocol: IProtocol,
    server_address: IPv4Address,
    connected: Deferred[Any],
) -> tuple[MemoryTransport, MemoryTransport]:
    """Connect two protocols; ``connected`` fires with the client protocol.

    Runs inside the delivery loop so that what either side writes in
    ``connectionMade`` (or in ``connected``'s callbacks) is delivered only
    after both sides are connected.
    """
    client_address = IPv4Address("TCP", "127.0.0.1", next(_client_ports))
    client = MemoryTransport(loop, client_protocol, client_address, server_address)
    server = MemoryTransport(loop, server_protocol, server_address, client_address)
    client.peer, server.peer = server, client

    def make() -> None:
        server_protocol.makeConnection(server)
        client_protocol.makeConnection(client)
        connected.callback(client_protocol)

    loop.post(make)
    return client, server
