"""Int32 length-prefixed framing for Kafka connections, in linear time.

Twisted's ``Int32StringReceiver`` concatenates its whole buffer with every
chunk it receives, so a 32 MiB response arriving in 64 KiB reads costs
gigabytes of copying.  :class:`FramedProtocol` keeps the chunks of an
incomplete frame in a list with a running length and joins them once, when
the frame is complete; frames that arrive whole are sliced straight out of
the chunk that holds them.
"""

from __future__ import annotations

import struct
from typing import Protocol as TypingProtocol

from twisted.internet.protocol import Protocol
from twisted.logger import Logger

from afkak._errors import ProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameTooLargeError",
    "FramedProtocol",
    "StreamTransport",
]

DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024
"""Largest frame accepted by default: Kafka's ``socket.request.max.bytes``."""

_unpack_size = struct.Struct(">I").unpack_from

log = Logger()


class FrameTooLargeError(ProtocolError):
    """A length prefix announced a frame above the maximum frame size.

    The prefix is read as unsigned, so a negative int32 length shows up here
    as a size of 2 GiB or more.
    """

    def __init__(self, size: int, max_frame_size: int) -> None:
        self.size = size
        self.max_frame_size = max_frame_size
        super().__init__(
            f"frame of {size} bytes exceeds the maximum frame size of {max_frame_size} bytes"
        )


class StreamTransport(TypingProtocol):
    """What a Kafka connection uses of its transport: TCP and TLS transports provide it."""

    def write(self, data: bytes) -> None: ...
    def loseConnection(self) -> None: ...
    def abortConnection(self) -> None: ...
    def registerProducer(self, producer: object, streaming: bool) -> None: ...
    def unregisterProducer(self) -> None: ...


class FramedProtocol(Protocol):
    """A protocol receiving int32 size-prefixed frames through :meth:`frameReceived`.

    Subclasses override :meth:`frameReceived` and may override
    :meth:`frameTooLarge`.  Writing needs no help: Kafka encoders produce the
    size prefix themselves.
    """

    #: Set by ``makeConnection`` before any other method is called.
    transport: StreamTransport  # type: ignore[assignment]

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._chunks: list[bytes] = []
        self._buffered = 0  # bytes held in _chunks
        self._body_size = -1  # size of the partial frame, -1 while its prefix is incomplete
        self._discarding = False

    def frameReceived(self, frame: bytes) -> None:
        """Handle one complete frame (without its size prefix)."""
        raise NotImplementedError

    def frameTooLarge(self, error: FrameTooLargeError) -> None:
        """A hostile or corrupt length prefix arrived; by default, abort the connection."""
        log.error("Closing connection: {error}", error=str(error))
        self.transport.abortConnection()

    def stopFraming(self) -> None:
        """Discard all further input, including frames already received but not delivered."""
        self._discarding = True
        self._chunks = []
        self._buffered = 0

    def dataReceived(self, data: bytes) -> None:
        if self._discarding:
            return
        if self._chunks:
            rest = self._continue_frame(data)
            if rest:
                self._split(rest)
        else:
            self._split(data)

    def _continue_frame(self, data: bytes) -> bytes:
        """Add ``data`` to the partial frame; return what is left to split at a frame boundary."""
        chunks = self._chunks
        chunks.append(data)
        self._buffered += len(data)
        if self._body_size < 0:
            if self._buffered < 4:
                return b""
            # Fewer than 4 bytes were held, so this join copies about one chunk.
            self._reset()
            return b"".join(chunks)
        excess = self._buffered - self._body_size
        if excess < 0:
            return b""
        rest = b""
        if excess:
            last = chunks[-1]
            cut = len(last) - excess
            chunks[-1] = last[:cut]
            rest = last[cut:]
        self._reset()
        self.frameReceived(b"".join(chunks))
        return b"" if self._discarding else rest

    def _split(self, data: bytes) -> None:
        """Deliver every whole frame in ``data``, which starts at a frame boundary."""
        end = len(data)
        offset = 0
        max_frame_size = self.max_frame_size
        while end - offset >= 4:
            (size,) = _unpack_size(data, offset)
            if size > max_frame_size:
                self.stopFraming()
                self.frameTooLarge(FrameTooLargeError(size, max_frame_size))
                return
            start = offset + 4
            offset = start + size
            if offset > end:
                self._body_size = size
                self._hold(data[start:])
                return
            self.frameReceived(data[start:offset])
            if self._discarding:
                return
        if offset < end:
            self._hold(data[offset:])

    def _hold(self, chunk: bytes) -> None:
        self._chunks = [chunk]
        self._buffered = len(chunk)

    def _reset(self) -> None:
        self._chunks = []
        self._buffered = 0
        self._body_size = -1
