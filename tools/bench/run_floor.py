"""The floors under afkak's rows (issue 39): what a Twisted application pays, and the broker's.

produce: beside afkak's "defaults send+gather" row, one Twisted ``Deferred``
created and fired per record (with a small result object, as a send's
``RecordMetadata``), kept in a list and gathered (``gatherResults``) at the
end, the reactor turning every ``--yield-every`` records, under
``reactor.run()`` with the cyclic GC on.  Whatever afkak's gathered
``send()`` costs beyond this row is afkak's.

latency: beside the awaited send, one Produce request (acks=1, one record,
v9; encoded once by afkak, its correlation id renewed per send) written and
its answer read in turn over a blocking socket: the broker's and the
kernel's round trip as Python sees it.  The same through a bare Twisted
protocol is the "twisted-floor" client (:mod:`bench.run_twisted_floor`).
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.task import deferLater

from bench.common import ACKS, Job, Meter, Result, in_turn, payload, under_reactor

GATHERED = "Deferred per record, gathered"
SOCKET = "socket"
VARIANTS = {"produce": (GATHERED,), "latency": (SOCKET,)}
#: Produce v9: the last version naming topics (v13 names them by id).
_PRODUCE_VERSION = 9
SIZE = struct.Struct(">i")


class _Ack:
    """A result per record (four slots, as afkak's ``RecordMetadata``)."""

    __slots__ = ("topic", "partition", "offset", "timestamp")

    def __init__(self, topic: str, offset: int) -> None:
        self.topic = topic
        self.partition = 0
        self.offset = offset
        self.timestamp = -1


def run(job: Job) -> Result:
    if job.workload == "latency":
        return _socket_latency(job)
    return under_reactor(lambda reactor: _gathered(reactor, job))


async def _gathered(reactor: Any, job: Job) -> Result:
    n, every, topic = job.count, job.yield_every, job.topic
    meter = Meter(job)
    meter.start()
    sent: list[Deferred[Any]] = []
    append = sent.append
    waiting: list[Deferred[Any]] = []
    for i in range(n):
        d: Deferred[Any] = Deferred()
        append(d)
        waiting.append(d)
        if i % every == every - 1:
            # Fired a turn later, as a batch of sends is acknowledged.
            await deferLater(reactor, 0, _fire, waiting, topic, i + 1 - len(waiting))
            waiting = []
    _fire(waiting, topic, n - len(waiting))
    acks = await gatherResults(sent, consumeErrors=True)
    result = meter.stop(len(acks))
    if acks[-1].offset != n - 1:
        raise RuntimeError(f"last result {acks[-1].offset}, not {n - 1}")
    return result


def _fire(waiting: list[Deferred[Any]], topic: str, first: int) -> None:
    for offset, d in enumerate(waiting, first):
        d.callback(_Ack(topic, offset))


class Frames:
    """One Produce request's frame, with a fresh correlation id each time."""

    def __init__(self, job: Job) -> None:
        from afkak.client._produce_call import ProduceCall, encode_messages
        from afkak.common import Message, ProduceRequest
        from afkak.protocol.header import encode_request

        batch = encode_messages([Message(0, 0, None, payload(job.size))], int(time.time() * 1000))
        call = ProduceCall(
            [ProduceRequest(job.topic, 0, None)], ACKS, 30000, {(job.topic, 0): batch}, {}
        )
        frame = encode_request(call(_PRODUCE_VERSION), _PRODUCE_VERSION, 0, "floor")
        # size (4), api key (2), api version (2), then the correlation id
        self._head, self._tail = frame[:8], frame[12:]
        self._id = 0

    def next(self) -> bytes:
        self._id += 1
        return self._head + SIZE.pack(self._id) + self._tail

    @staticmethod
    def error_code(answer: bytes) -> int:
        """The partition's error code in a Produce answer (with its size prefix)."""
        from afkak.protocol.header import decode_response
        from afkak.protocol.messages import ProduceRequest

        _, response = decode_response(answer[4:], ProduceRequest.API_KEY, _PRODUCE_VERSION)
        [topic] = response.responses
        [partition] = topic.partition_responses
        return int(partition.error_code)


def check(answer: bytes, job: Job) -> None:
    error = Frames.error_code(answer)
    if error:
        raise RuntimeError(f"{job.topic}: produce answered with error code {error}")


def address(job: Job) -> tuple[str, int]:
    host, port = job.bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _socket_latency(job: Job) -> Result:
    frames = Frames(job)
    sock = socket.create_connection(address(job))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def round_trip() -> bytes:
        sock.sendall(frames.next())
        answer = sock.recv(65536)
        while len(answer) < 4 or len(answer) < 4 + SIZE.unpack_from(answer)[0]:
            answer += sock.recv(65536)
        return answer

    check(round_trip(), job)  # warm-up: the topic is there and led
    result = in_turn(job, round_trip)
    check(round_trip(), job)
    sock.close()
    return result
