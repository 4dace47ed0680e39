"""What every client's runner shares: the settings, the workloads' shapes, the meter.

A runner function measures one workload in the current process and returns a
:class:`Result`; tools/bench_clients.py runs each in its own subprocess.
"""

from __future__ import annotations

import cProfile
import resource
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import attrs

#: Settings every client's producer gets (issue 4): acks=1, no idempotence,
#: linger 5 ms, 64 KiB batches.  The latency workload uses linger 0 instead
#: (a 5 ms linger would be the whole latency of a lone send).
ACKS = 1
LINGER_MS = 5
BATCH_SIZE = 64 * 1024
#: Largest fetch per partition for every consumer (the Java client's default).
FETCH_BYTES = 1024 * 1024
#: Bytes afkak's producer adds to a value's size when it estimates a batch's.
AFKAK_RECORD_OVERHEAD = 10


def list_length(size: int) -> int:
    """Messages per afkak list send: as many as fill one 64 KiB batch, at most 1,000."""
    return min(1000, BATCH_SIZE // (size + AFKAK_RECORD_OVERHEAD))


@attrs.frozen
class Job:
    """One measurement: a client variant, a workload and where to run it."""

    client: str
    variant: str
    workload: str  # "produce", "consume" or "latency"
    bootstrap: str
    topic: str
    count: int
    size: int
    profile: str = ""  # a file to write cProfile stats of the measured part to
    yield_every: int = 1000  # afkak's one-per-call sends: reactor turns every this many
    partitions: int = 1  # consume every partition of the topic (0 .. partitions - 1)
    acks: int = ACKS  # the tuned producers' acks (-1, all, on a replicated cluster)


@attrs.frozen
class Result:
    count: int
    bytes: int
    wall: float
    cpu: float
    latencies_ms: tuple[float, ...] = ()
    fetches: int = 0  # Fetch requests the consumer sent (0: not counted)

    def asdict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def cpu_seconds() -> float:
    """This process's user + system CPU seconds (all threads, librdkafka's too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """Wall-clock and CPU seconds between start() and stop(), cProfiled if the job says so."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._profiler = cProfile.Profile() if job.profile else None

    def start(self) -> None:
        if self._profiler is not None:
            self._profiler.enable()
        self._cpu = cpu_seconds()
        self._wall = time.perf_counter()

    def stop(self, count: int, latencies_ms: tuple[float, ...] = (), fetches: int = 0) -> Result:
        wall = time.perf_counter() - self._wall
        cpu = cpu_seconds() - self._cpu
        if self._profiler is not None:
            self._profiler.disable()
            self._profiler.dump_stats(self._job.profile)
        check_count(count, self._job)
        return Result(count, count * self._job.size, wall, cpu, latencies_ms, fetches)


def in_turn(job: Job, round_trip: Callable[[], object]) -> Result:
    """The latency workload: ``round_trip()`` timed ``job.count`` times, one after another."""
    latencies = []
    clock = time.perf_counter
    meter = Meter(job)
    meter.start()
    for _ in range(job.count):
        began = clock()
        round_trip()
        latencies.append((clock() - began) * 1000)
    return meter.stop(len(latencies), tuple(latencies))


async def awaited_in_turn(job: Job, round_trip: Callable[[], Awaitable[object]]) -> Result:
    """:func:`in_turn` for a round trip that is awaited."""
    latencies = []
    clock = time.perf_counter
    meter = Meter(job)
    meter.start()
    for _ in range(job.count):
        began = clock()
        await round_trip()
        latencies.append((clock() - began) * 1000)
    return meter.stop(len(latencies), tuple(latencies))


def payload(size: int) -> bytes:
    return b"x" * size


def check_count(seen: int, job: Job) -> None:
    if seen != job.count:
        raise RuntimeError(f"{job.client}: {seen} of {job.count} messages")


def under_reactor(work: Callable[[Any], Coroutine[Any, Any, Result]]) -> Result:
    """Run ``work(reactor)`` under ``reactor.run()``, as an application would; its result."""
    from twisted.internet import reactor
    from twisted.internet.defer import ensureDeferred
    from twisted.python.failure import Failure

    out: list[Any] = []

    def go() -> None:
        d = ensureDeferred(work(reactor))
        d.addBoth(out.append)
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run(installSignalHandlers=False)
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]
