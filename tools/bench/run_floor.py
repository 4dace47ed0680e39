"""The floor of a Deferred per record (issue 39): no Kafka, only what a Twisted application pays.

Beside afkak's "defaults send+gather" row: one Twisted ``Deferred`` created
and fired per record (with a small result object, as a send's
``RecordMetadata``), kept in a list and gathered (``gatherResults``) at the
end, the reactor turning every ``--yield-every`` records, under
``reactor.run()`` with the cyclic GC on.  Whatever afkak's gathered
``send()`` costs beyond this row is afkak's.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.task import deferLater

from bench.common import Job, Meter, Result, under_reactor

GATHERED = "Deferred per record, gathered"
VARIANTS = {"produce": (GATHERED,)}


class _Ack:
    """A result per record (four slots, as afkak's ``RecordMetadata``)."""

    __slots__ = ("topic", "partition", "offset", "timestamp")

    def __init__(self, topic: str, offset: int) -> None:
        self.topic = topic
        self.partition = 0
        self.offset = offset
        self.timestamp = -1


def run(job: Job) -> Result:
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
