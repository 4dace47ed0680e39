"""The server side of an in-memory fake broker: requests in, a handler's responses out.

A handler is called as ``handle(header, request)`` with the decoded
:class:`~afkak.protocol.messages.RequestHeader` and request message, and
returns the response message (encoded at the request's version), a Deferred
of one, ``bytes`` written as they are (a complete frame, size prefix included:
for answers no schema can express), or ``None`` for no response.  As a Kafka
broker does, a connection answers its requests in the order they arrived,
unless built with ``ordered=False``.

:class:`ServerFaults`, shared by every connection of one fake broker, injects
failures: dropping the connection on a request, delaying responses, refusing
connections.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import CancelledError, Deferred, maybeDeferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory, connectionDone
from twisted.internet.task import deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._errors import DecodeError
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FramedProtocol
from afkak.protocol.header import decode_request, encode_response

log = Logger()

Handler = Callable[[Any, Any], Any]
"""``handle(header, request) -> response | Deferred | bytes | None``."""


class ServerFaults:
    """Failures one fake broker injects; shared by all its connections."""

    def __init__(self) -> None:
        self._drops: dict[int, int] = {}
        self._delays: dict[int, float] = {}
        self.refusing = False

    def drop_next(self, api_key: int, count: int = 1) -> None:
        """Close the connection, unanswered, on each of the next ``count`` ``api_key`` requests."""
        self._drops[api_key] = self._drops.get(api_key, 0) + count

    def delay(self, api_key: int, seconds: float) -> None:
        """Hold each response to ``api_key`` for ``seconds`` on the clock; 0 stops delaying."""
        if seconds:
            self._delays[api_key] = seconds
        else:
            self._delays.pop(api_key, None)

    def refuse_connections(self, refuse: bool = True) -> None:
        """Refuse new connections (a factory's ``buildProtocol`` returns ``None``)."""
        self.refusing = refuse

    def take_drop(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` must drop its connection now (uses up one drop)."""
        left = self._drops.get(api_key, 0)
        if left:
            self._drops[api_key] = left - 1
        return left > 0

    def delay_for(self, api_key: int) -> float:
        return self._delays.get(api_key, 0.0)


class _Reply:
    __slots__ = ("header", "deferred", "frame", "done")

    def __init__(self, header: Any) -> None:
        self.header = header
        self.deferred: Deferred[Any] | None = None
        self.frame: bytes | None = None
        self.done = False


class KafkaServerProtocol(FramedProtocol):
    """One connection to a fake broker, answering requests through a handler."""

    factory: KafkaServerFactory | None = None

    def __init__(
        self,
        handle: Handler,
        clock: IReactorTime,
        faults: ServerFaults | None = None,
        *,
        ordered: bool = True,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        super().__init__(max_frame_size)
        self._handle = handle
        self._clock = clock
        self.faults = ServerFaults() if faults is None else faults
        self._ordered = ordered
        self._outbox: deque[_Reply] = deque()  # in request order, when ordered
        self._pending: set[_Reply] = set()
        self._lost = False

    def connectionMade(self) -> None:
        if self.factory is not None:
            self.factory.connections.append(self)

    def frameReceived(self, frame: bytes) -> None:
        try:
            header, request = decode_request(frame)
        except DecodeError as error:
            log.error(
                "Fake broker: closing the connection on an undecodable request: {error}",
                error=error,
            )
            self.drop()
            return
        if self.faults.take_drop(header.request_api_key):
            log.info(
                "Fake broker: dropping the connection on {request}", request=type(request).__name__
            )
            self.drop()
            return
        reply = _Reply(header)
        if self._ordered:
            self._outbox.append(reply)
        self._pending.add(reply)
        answer = reply.deferred = maybeDeferred(self._handle, header, request)
        delay = self.faults.delay_for(header.request_api_key)
        if delay:
            answer.addCallback(lambda response: deferLater(self._clock, delay, lambda: response))
        answer.addCallback(self._answered, reply).addErrback(self._handler_failed, reply)

    def _answered(self, response: Any, reply: _Reply) -> None:
        self._pending.discard(reply)
        header = reply.header
        if response is None or isinstance(response, bytes):
            reply.frame = response
        else:
            reply.frame = encode_response(
                response, header.request_api_version, header.correlation_id
            )
        reply.done = True
        if self._ordered:
            while self._outbox and self._outbox[0].done:
                self._write(self._outbox.popleft().frame)
        else:
            self._write(reply.frame)

    def _handler_failed(self, failure: Failure, reply: _Reply) -> None:
        self._pending.discard(reply)
        if self._lost and failure.check(CancelledError):
            return
        log.failure("Fake broker: closing the connection: the handler failed", failure)
        self.drop()

    def _write(self, frame: bytes | None) -> None:
        if frame is not None and not self._lost:
            self.transport.write(frame)

    def drop(self) -> None:
        """Abort this connection, discarding requests not yet read."""
        self.stopFraming()
        self.transport.abortConnection()

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._lost = True
        self.stopFraming()
        if self.factory is not None and self in self.factory.connections:
            self.factory.connections.remove(self)
        for reply in list(self._pending):
            if reply.deferred is not None:
                reply.deferred.cancel()
        self._outbox.clear()


class KafkaServerFactory(Factory):
    """Serves one fake broker: a :class:`KafkaServerProtocol` per accepted connection."""

    noisy = False

    def __init__(
        self,
        handle: Handler,
        clock: IReactorTime,
        *,
        ordered: bool = True,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.handle = handle
        self.clock = clock
        self.ordered = ordered
        self.max_frame_size = max_frame_size
        self.faults = ServerFaults()
        self.connections: list[KafkaServerProtocol] = []

    # Twisted's Factory is generic only in recent releases (23.8 cannot subscript it), so
    # the narrower return type is declared against the unparameterised base.
    def buildProtocol(self, addr: Any) -> KafkaServerProtocol | None:  # type: ignore[override]
        if self.faults.refusing:
            return None
        protocol = KafkaServerProtocol(
            self.handle,
            self.clock,
            self.faults,
            ordered=self.ordered,
            max_frame_size=self.max_frame_size,
        )
        protocol.factory = self
        return protocol

    def drop_connections(self) -> None:
        """Abort every open connection (the broker went away)."""
        for protocol in list(self.connections):
            protocol.drop()
