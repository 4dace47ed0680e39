"""One TCP connection to a broker: writes requests and matches responses to them.

:class:`BrokerProtocol` holds what dies with the TCP connection: the requests
in flight by correlation id, the correlation counter, and whether the
transport has asked us to stop writing.  A response whose correlation id was
never given out, or was already answered, breaks the protocol (Kafka's Java
client closes the connection too): responses to requests given up on, or sent
expecting no response, are dropped.  What to send, and when, is decided by
its owner, a :class:`~afkak.connection.BrokerConnection`.
"""

from __future__ import annotations

from typing import Any, Protocol

from twisted.internet.abstract import FileDescriptor
from twisted.internet.interfaces import IPushProducer, IWriteDescriptor
from twisted.internet.protocol import connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from afkak._errors import DecodeError, ProtocolError
from afkak.connection._request import PendingRequest
from afkak.connection.framing import FramedProtocol, FrameTooLargeError
from afkak.protocol.header import encode_request, encode_request_body, peek_correlation_id

log = Logger()

_UNANSWERED_KEPT = 4096
"""Correlation ids of requests sent without expecting a response that are remembered.

Kafka does not answer ``acks=0`` produce requests, but some brokers do; their
answers are dropped as long as their ids are among the latest this many.
"""


class ProtocolOwner(Protocol):
    """What a :class:`BrokerProtocol` reports to the connection that owns it."""

    def _protocol_failed(self, protocol: BrokerProtocol, error: Exception) -> None:
        """The peer sent bytes that break the protocol; the connection must be dropped."""

    def _protocol_answered(
        self, protocol: BrokerProtocol, request: PendingRequest, size: int, response: Any
    ) -> None:
        """*request* got *response*, a frame of *size* bytes; called before its Deferred fires."""

    def _protocol_writable(self, protocol: BrokerProtocol) -> None:
        """A response freed a pipelining slot, or the transport resumed writes."""

    def _protocol_lost(self, protocol: BrokerProtocol, reason: Failure) -> None:
        """The TCP connection is gone."""


@implementer(IPushProducer)
class BrokerProtocol(FramedProtocol):
    """Kafka's client side of one TCP connection.

    It registers as a streaming producer with its transport, so
    :attr:`write_paused` follows the transport's write buffer; the owner
    checks it before writing queued requests and is told by
    :meth:`resumeProducing` when it may write again.
    """

    def __init__(self, owner: ProtocolOwner, client_id: str | None, max_frame_size: int) -> None:
        super().__init__(max_frame_size)
        self._owner = owner
        self._client_id = client_id
        self._correlation_id = 0
        self.in_flight: dict[int, PendingRequest] = {}
        self._forgotten: set[int] = set()
        self._unanswered: dict[int, None] = {}
        self.frames_received = 0
        self.write_paused = False
        self.lost = False
        self._socket: FileDescriptor | None = None
        self._descriptor: Any = None
        #: Frames sent since the last :meth:`flush` (on a socket's transport only).
        self._unwritten: list[bytes] = []

    def connectionMade(self) -> None:
        transport = self.transport
        set_no_delay = getattr(transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        # A reactor-driven transport (TCP, UNIX) holds what is written until
        # the reactor's next iteration polls it writable (twisted#5303), and
        # registers its interest in writing meanwhile: :meth:`flush` sends
        # the frames to its socket itself.  A wrapper of one (TLS) writes to
        # it as it does, and its doWrite sends now; in-memory transports
        # write as they do.
        if isinstance(transport, FileDescriptor):
            self._socket = transport
        elif IWriteDescriptor.providedBy(transport):
            self._descriptor = transport
        transport.registerProducer(self, True)

    def send(self, request: PendingRequest, message: Any) -> int:
        """Write ``message`` for ``request`` at ``request.version``; return the bytes written.

        ``message`` is a request message, or its body already encoded (``bytes``).

        :raises EncodeError: the message cannot be encoded at that version;
            nothing was written.
        """
        correlation_id = self._correlation_id
        self._correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        if type(message) is bytes:
            frame = encode_request_body(
                request.request_class, request.version, correlation_id, self._client_id, message
            )
        else:
            frame = encode_request(message, request.version, correlation_id, self._client_id)
        request.sent = True
        request.correlation_id = correlation_id
        request.frames_before = self.frames_received
        if request.expect_response:  # before writing: a transport may deliver the answer at once
            self.in_flight[correlation_id] = request
        else:
            unanswered = self._unanswered
            unanswered[correlation_id] = None
            if len(unanswered) > _UNANSWERED_KEPT:
                del unanswered[next(iter(unanswered))]
        if self._socket is None:
            self.transport.write(frame)
        else:
            self._unwritten.append(frame)
        return len(frame)

    def flush(self) -> None:
        """Send what :meth:`send` wrote now rather than at the reactor's next iteration.

        Saves a request's round trip one reactor iteration (an ``epoll_wait``
        and the Python around it).  Frames that fit one ``send`` on a
        transport holding nothing unsent go straight to the socket, so the
        transport never registers for writing (two ``epoll_ctl`` calls and
        their Python per request); whatever the socket does not take is
        written to the transport, sent as the reactor finds it writable, and
        an error is left for the reactor's own write to find, so the
        connection is lost the usual way.  A wrapper of such a transport
        (TLS) writes through its own ``write``, then its transport's
        ``doWrite`` sends.  Not once the transport is closing: the reactor's
        write of a closing transport is what completes its close.
        """
        socket = self._socket
        if socket is None:
            descriptor = self._descriptor
            if descriptor is not None and not descriptor.disconnecting:
                descriptor.doWrite()  # looked up now: an aborted transport's is a no-op
            return
        frames = self._unwritten
        if not frames:
            return
        self._unwritten = []
        data = b"".join(frames)
        if (
            socket.connected
            and not socket.disconnecting
            and len(data) <= socket.SEND_LIMIT
            and _drained(socket)
        ):
            sent = socket.writeSomeData(data)
            if sent == len(data):
                return
            if type(sent) is int and sent > 0:
                data = data[sent:]
        socket.write(data)

    def forget(self, request: PendingRequest) -> None:
        """Free the pipelining slot of ``request`` (timed out or cancelled); drop its answer."""
        if self.in_flight.pop(request.correlation_id, None) is request:
            self._forgotten.add(request.correlation_id)

    def close(self) -> None:
        """Close once what was written is sent.

        The write producer is unregistered first: a TLS transport (and any
        transport honouring IConsumer to the letter) holds back its shutdown
        while a producer is registered.
        """
        self.flush()
        self.transport.unregisterProducer()
        self.transport.loseConnection()

    def take_in_flight(self) -> list[PendingRequest]:
        """Forget and return the requests in flight (the connection is going away)."""
        requests = list(self.in_flight.values())
        self.in_flight = {}
        self._forgotten.clear()
        return requests

    def frameReceived(self, frame: bytes) -> None:
        self.frames_received += 1
        try:
            correlation_id = peek_correlation_id(frame)
        except DecodeError as error:
            self._owner._protocol_failed(self, error)
            return
        request = self.in_flight.pop(correlation_id, None)
        if request is None:
            if correlation_id in self._forgotten:
                self._forgotten.discard(correlation_id)
            elif correlation_id in self._unanswered:
                del self._unanswered[correlation_id]
            else:
                self._owner._protocol_failed(
                    self, ProtocolError(f"response with unknown correlation id {correlation_id}")
                )
                return
            log.debug(
                "Dropping a response nobody waits for (correlation id {cid})", cid=correlation_id
            )
            return
        try:
            response = request.decode(frame)
        except DecodeError as error:
            request.fail(error)
            self._owner._protocol_failed(self, error)
            return
        self._owner._protocol_answered(self, request, len(frame) + 4, response)
        request.succeed(response)
        self._owner._protocol_writable(self)

    def frameTooLarge(self, error: FrameTooLargeError) -> None:
        self._owner._protocol_failed(self, error)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self.lost = True
        self.write_paused = True
        self._owner._protocol_lost(self, reason)

    # IPushProducer: the transport's write buffer is full (pause) or drained (resume).
    def pauseProducing(self) -> None:
        self.write_paused = True

    def resumeProducing(self) -> None:
        self.write_paused = False
        self._owner._protocol_writable(self)

    def stopProducing(self) -> None:
        self.write_paused = True


def _drained(socket: FileDescriptor) -> bool:
    """Whether a Twisted ``FileDescriptor`` holds nothing unsent: a frame sent past
    it now keeps its place."""
    return not socket._tempDataLen and socket.offset == len(socket.dataBuffer)
