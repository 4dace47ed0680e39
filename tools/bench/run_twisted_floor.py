"""The floor of afkak's awaited send on its reactor (issue 39): a bare Twisted protocol.

One Produce request (acks=1, one record, v9; encoded once by afkak, its
correlation id renewed per send, as the "floor" client's blocking socket
sends it) written and its answer read in turn by a minimal ``Protocol``
under ``reactor.run()`` (the default reactor: epoll on Linux, as afkak's
runs): the answer's frame fires a Deferred that the loop awaits.  Three
ways to write, each a latency row:

- "Twisted protocol": ``transport.write``, sent at the reactor's next
  iteration (what a Twisted application gets by default);
- "written at once": then the transport's ``doWrite``;
- "straight to the socket": the transport's ``writeSomeData`` when it holds
  nothing, as afkak's connection writes (``BrokerProtocol.flush``).

The last is what Python and Twisted can reach per awaited send on this
machine: whatever afkak's awaited send costs beyond it is afkak's.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.protocol import Protocol

from bench.common import Job, Result, awaited_in_turn, under_reactor
from bench.run_floor import SIZE, Frames, address, check

TWISTED = "Twisted protocol"
TWISTED_NOW = "Twisted protocol, written at once"
TWISTED_SOCKET = "Twisted protocol, straight to the socket"
VARIANTS = {"latency": (TWISTED, TWISTED_NOW, TWISTED_SOCKET)}


def run(job: Job) -> Result:
    return under_reactor(lambda reactor: _latency(reactor, job))


class _RoundTrips(Protocol):
    """Writes a frame, fires a Deferred when the answer's frame is whole."""

    def __init__(self, variant: str) -> None:
        self._variant = variant
        self._buffer = b""
        self.answered: Deferred[bytes] | None = None
        self.tcp: Any = None

    def connectionMade(self) -> None:
        self.tcp = self.transport  # a TCP transport: setTcpNoDelay, doWrite
        self.tcp.setTcpNoDelay(True)

    def round_trip(self, frame: bytes) -> Deferred[bytes]:
        self.answered = Deferred()
        if self._variant == TWISTED_SOCKET:
            sent = self.tcp.writeSomeData(frame)  # the transport holds nothing: in turn
            if sent != len(frame):
                self.tcp.write(frame[sent if type(sent) is int and sent > 0 else 0 :])
            return self.answered
        self.tcp.write(frame)
        if self._variant == TWISTED_NOW:
            self.tcp.doWrite()
        return self.answered

    def dataReceived(self, data: bytes) -> None:
        buffer = self._buffer = self._buffer + data
        if len(buffer) >= 4 and len(buffer) >= 4 + SIZE.unpack_from(buffer)[0]:
            self._buffer = b""
            answered, self.answered = self.answered, None
            assert answered is not None
            answered.callback(buffer)


async def _latency(reactor: Any, job: Job) -> Result:
    frames = Frames(job)
    host, port = address(job)
    protocol = await connectProtocol(
        TCP4ClientEndpoint(reactor, host, port), _RoundTrips(job.variant)
    )
    check(await protocol.round_trip(frames.next()), job)  # warm-up
    result = await awaited_in_turn(job, lambda: protocol.round_trip(frames.next()))
    check(await protocol.round_trip(frames.next()), job)
    protocol.tcp.loseConnection()
    return result
