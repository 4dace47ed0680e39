"""The hostile-broker fuzzer of tools/chaos.py: mutated responses, counted consequences.

A :class:`~afkak.testing.FakeKafkaCluster` of two brokers runs on a
:class:`~twisted.internet.task.Clock`; every response of broker 0 reaches the
client through :class:`MutatingProtocol`, which rewrites the frame (truncated,
random bytes, absurd length prefix, wrong correlation id, stalled, late,
split, followed by garbage).  Broker 1 answers untouched.  Each round sends
the same requests to both and advances the clock past the request timeout;
then it counts:

- crashes: exceptions escaping the reactor's calls, and "Unhandled error in
  Deferred" logged;
- hung: requests whose Deferred never fired;
- collateral: requests to broker 1 that failed;
- leaks: resident memory at the end against after the warm-up, and timers
  left on the clock once the client is closed.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from afkak.client import KafkaClient
from afkak.common import BrokerMetadata
from afkak.protocol.messages import FetchRequest, ListOffsetsRequest, MetadataRequest
from afkak.testing import FakeKafkaCluster

_SIZE = struct.Struct(">i")
REQUEST_TIMEOUT = 2.0
TOPIC = "fuzz"


def rss_bytes() -> int:
    """This process's resident memory (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


class Mutator:
    """Chooses and applies one mutation per response frame (size prefix included)."""

    KINDS = (
        "truncate",
        "random_bytes",
        "absurd_length",
        "wrong_correlation_id",
        "stall",
        "late",
        "split",
        "garbage_after",
    )

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counts = dict.fromkeys(self.KINDS, 0)
        self.total = 0

    def mutate(self, frame: bytes) -> tuple[str, list[bytes]]:
        """The mutation's name and the chunks to deliver now ([] for none)."""
        rng = self.rng
        kind = rng.choice(self.KINDS)
        self.counts[kind] += 1
        self.total += 1
        body = frame[4:]
        if kind == "truncate":
            cut = body[: rng.randrange(0, max(1, len(body)))]
            return kind, [_SIZE.pack(len(cut)) + cut]
        if kind == "random_bytes":
            data = bytearray(body)
            for _ in range(rng.randint(1, 8)):
                if len(data) > 4:
                    data[rng.randrange(4, len(data))] = rng.randrange(256)
            return kind, [_SIZE.pack(len(data)) + bytes(data)]
        if kind == "absurd_length":
            size = rng.choice((2**31 - 1, -1, -(2**31), len(body) + rng.randint(1, 5000)))
            return kind, [_SIZE.pack(size) + body]
        if kind == "wrong_correlation_id":
            (cid,) = _SIZE.unpack_from(body)
            wrong = (cid + rng.randint(1, 2**31 - 2)) & 0x7FFFFFFF
            return kind, [_SIZE.pack(len(body)) + _SIZE.pack(wrong) + body[4:]]
        if kind in ("stall", "late"):
            return kind, []
        if kind == "split":
            at = rng.randrange(1, len(frame))
            return kind, [frame[:at], frame[at:]]
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
        return kind, [frame, _SIZE.pack(len(junk) + 4) + _SIZE.pack(rng.randrange(2**31)) + junk]


class MutatingProtocol(ProtocolWrapper):
    """Cuts the response stream into frames and hands each to the mutator."""

    def __init__(self, factory: MutatingFactory, wrapped: Any) -> None:
        super().__init__(factory, wrapped)
        self._buffer = b""
        self._live = True

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        factory: MutatingFactory = self.factory  # type: ignore[assignment]
        while len(self._buffer) >= 4:
            (size,) = _SIZE.unpack_from(self._buffer)
            if len(self._buffer) < 4 + size:
                return
            frame, self._buffer = self._buffer[: 4 + size], self._buffer[4 + size :]
            kind, chunks = factory.mutator.mutate(frame)
            if kind == "late":
                factory.clock.callLater(REQUEST_TIMEOUT * 1.5, self._deliver, frame)
            for chunk in chunks:
                self._deliver(chunk)
            if not self._live:
                return

    def _deliver(self, chunk: bytes) -> None:
        if self._live:
            self.wrappedProtocol.dataReceived(chunk)

    def connectionLost(self, reason: Any) -> None:
        self._live = False
        super().connectionLost(reason)


class MutatingFactory(WrappingFactory):
    protocol = MutatingProtocol  # type: ignore[assignment]

    def __init__(self, wrapped: Any, mutator: Mutator, clock: Clock) -> None:
        super().__init__(wrapped)
        self.mutator = mutator
        self.clock = clock


@attrs.define
class FuzzReport:
    mutated: int = 0
    requests: int = 0
    hostile_failed: int = 0
    crashes: int = 0
    hung: int = 0
    collateral: int = 0
    rss_start: int = 0
    rss_end: int = 0
    timers_left: int = 0
    mutations: dict[str, int] = attrs.field(factory=dict)

    @property
    def rss_growth(self) -> float:
        return (self.rss_end - self.rss_start) / self.rss_start if self.rss_start else 0.0

    def lines(self) -> Iterator[str]:
        yield f"mutated responses: {self.mutated:,} ({self.requests:,} requests in all)"
        yield (
            f"requests to the hostile broker that failed (as they should): {self.hostile_failed:,}"
        )
        yield f"crashes: {self.crashes}, hung Deferreds: {self.hung}"
        yield f"failures of requests to the clean broker (collateral): {self.collateral}"
        yield (
            f"RSS {self.rss_start / 2**20:.1f} MiB after warm-up, {self.rss_end / 2**20:.1f} MiB"
            f" at the end ({self.rss_growth:+.1%}); timers left after close: {self.timers_left}"
        )
        yield "mutations: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.mutations.items()))


def fuzz(
    responses: int, seed: int = 0, progress: Callable[[int], None] | None = None
) -> FuzzReport:
    """Run until at least *responses* responses of broker 0 were mutated."""
    rng = random.Random(seed)
    clock = Clock()
    cluster = FakeKafkaCluster(brokers=2, reactor=clock)
    cluster.create_topic(TOPIC, partitions=2)
    for partition in range(2):
        cluster.append(TOPIC, partition, [b"x" * rng.randrange(200) for _ in range(20)])
    mutator = Mutator(rng)

    def endpoint_factory(reactor: Any, host: str, port: int) -> Any:
        endpoint = cluster.endpoint_factory(reactor, host, port)
        if host != cluster.state.brokers[0].host:
            return endpoint
        return _Wrapping(endpoint, mutator, clock)

    client = KafkaClient(
        cluster.bootstrap_hosts,
        reactor=clock,
        endpoint_factory=endpoint_factory,
        timeout=REQUEST_TIMEOUT * 1000,
        retry_policy=lambda failures: 0.05,
    )
    report = FuzzReport()

    def observe(event: dict[str, Any]) -> None:
        if "log_failure" in event and "Unhandled error" in str(event.get("log_format", "")):
            report.crashes += 1

    globalLogPublisher.addObserver(observe)
    brokers = {n: BrokerMetadata(n, b.host, b.port) for n, b in cluster.state.brokers.items()}
    requests = _requests()
    warmup = max(1, responses // 10)
    done = 0
    try:
        while done < responses:
            pending: list[tuple[int, Deferred[Any]]] = []
            for node in (0, 1):
                for request, options in requests:
                    d = client.send_request_to_broker(brokers[node], request, **options)
                    pending.append((node, d))
            outcomes: dict[int, Any] = {}
            for index, (_, d) in enumerate(pending):
                d.addBoth(_store(outcomes, index))
            steps = 0
            while len(outcomes) < len(pending) and steps < 200:
                try:
                    clock.advance(0.05)
                except Exception:
                    report.crashes += 1
                steps += 1
            report.requests += len(pending)
            for index, (node, _) in enumerate(pending):
                if index not in outcomes:
                    report.hung += 1
                elif outcomes[index]:
                    if node == 1:
                        report.collateral += 1
                    else:
                        report.hostile_failed += 1
            done = mutator.total
            cluster.requests_seen.clear()  # the fake cluster's record, not afkak's memory
            if not report.rss_start and done >= warmup:
                report.rss_start = rss_bytes()
            if progress is not None:
                progress(done)
        report.rss_end = rss_bytes()
        closed = client.close()
        for _ in range(100):
            clock.advance(0.1)
        if not closed.called:
            report.hung += 1
        report.timers_left = len(
            [c for c in clock.getDelayedCalls() if "MutatingProtocol" not in repr(c.func)]
        )
    finally:
        globalLogPublisher.removeObserver(observe)
    report.mutated = done
    report.mutations = dict(mutator.counts)
    return report


def _store(outcomes: dict[int, Any], index: int) -> Callable[[Any], None]:
    """Record whether request *index* failed (a Failure is consumed: it is counted)."""

    def store(result: Any) -> None:
        outcomes[index] = hasattr(result, "trap")

    return store


def _requests() -> list[tuple[Any, dict[str, Any]]]:
    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=p, fetch_offset=0, partition_max_bytes=1 << 16
                    )
                    for p in range(2)
                ],
            )
        ],
    )
    offsets = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=TOPIC,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1)
                    for p in range(2)
                ],
            )
        ],
    )
    metadata = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)])
    return [
        (metadata, {}),
        (fetch, {"min_version": 4, "max_version": 12}),
        (offsets, {"min_version": 1}),
    ]


class _Wrapping:
    """An endpoint whose connections' responses pass through a :class:`MutatingFactory`."""

    def __init__(self, endpoint: Any, mutator: Mutator, clock: Clock) -> None:
        self._endpoint = endpoint
        self._mutator = mutator
        self._clock = clock

    def connect(self, protocol_factory: Any) -> Deferred[Any]:
        factory = MutatingFactory(protocol_factory, self._mutator, self._clock)
        return self._endpoint.connect(factory).addCallback(lambda wrapper: wrapper.wrappedProtocol)
