"""Idempotent producing through faults, checked with confluent-kafka (tools/chaos.py).

Record *i* goes to partition ``i % partitions`` with value ``b"%d" % i``, so
each partition's values must be read back increasing: a value missing is a
lost record, one seen twice a duplicate, one smaller than the one before it
(duplicates aside) reordered.  The producer's own accounting (sends
acknowledged, sends failed and why) is reported beside.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import LoopingCall

from afkak.client import KafkaClient
from afkak.producer import Producer
from afkak.test.brokers import KafkaCluster, NoidaBroker, RdkafkaMockCluster, consume
from afkak.test.brokers.interop import client_config, end_offsets
from afkak.test.brokers.java_tools import console_consume

Progress = Callable[[int], None]
#: Retriable produce errors the mock pushes: NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
#: NETWORK_EXCEPTION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND.
RETRIABLE_CODES = (6, 7, 13, 19, 20)


@attrs.define
class ProduceReport:
    broker: str
    records: int = 0
    partitions: int = 0
    acknowledged: int = 0
    failed: Counter[str] = attrs.field(factory=Counter)
    faults: Counter[str] = attrs.field(factory=Counter)
    lost: int = 0
    lost_in_loss_window: int = 0
    duplicated: int = 0
    reordered: int = 0
    read_back: int = 0
    #: (record, seconds from its acknowledgement to the next kill) of losses outside the window.
    lost_outside: list[tuple[int, float]] = attrs.field(factory=list)

    def ok(self, checks_sequences: bool) -> bool:
        """0 lost (beyond the broker's loss window), no failed send; where the broker
        checks sequence numbers also 0 duplicated and 0 reordered."""
        unexplained = self.lost - self.lost_in_loss_window
        ordered = (self.duplicated == 0 and self.reordered == 0) or not checks_sequences
        return unexplained == 0 and ordered and not self.failed

    def lines(self) -> Iterator[str]:
        yield f"{self.broker}: {self.records:,} records to {self.partitions} partition(s)"
        yield "faults: " + ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        failed = sum(self.failed.values())
        yield f"producer: {self.acknowledged:,} acknowledged, {failed:,} failed {dict(self.failed)}"
        yield (
            f"read back {self.read_back:,}: lost {self.lost} (of which acknowledged within the"
            f" broker's loss window before a kill: {self.lost_in_loss_window}),"
            f" duplicated {self.duplicated}, reordered {self.reordered}"
        )
        if self.lost_outside:
            first, last = self.lost_outside[0], self.lost_outside[-1]
            yield (
                f"lost outside the window: records {first[0]}..{last[0]},"
                f" {first[1]:.1f}..{last[1]:.1f} s before a kill"
            )


def _drive(until: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout} s")
        reactor.iterate(0.01)  # type: ignore[attr-defined]


def _verify(
    report: ProduceReport,
    bootstrap: str,
    topic: str,
    partitions: int,
    acked: dict[int, float],
    kills: list[float],
    loss_window: float,
    java: bool = False,
) -> None:
    """Read *topic* back (with Kafka's Java ConsoleConsumer if *java*, else
    confluent-kafka) and count what was lost, duplicated and reordered."""
    ends = end_offsets(bootstrap, topic)
    total = sum(ends.values())
    timeout = max(60.0, total / 5000)
    if java:
        read = [
            (r.partition, r.value or "-1")
            for r in console_consume(bootstrap, topic, total, timeout=timeout)
        ]
    else:
        read = [
            (r.partition, r.value or b"-1")
            for r in consume(bootstrap, topic, total, timeout=timeout)
        ]
    report.read_back = len(read)
    by_partition: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for partition, value in read:
        by_partition.setdefault(partition, []).append(int(value))
    seen: set[int] = set()
    for values in by_partition.values():
        last = -1
        for v in values:
            if v in seen:
                report.duplicated += 1
                continue
            seen.add(v)
            if v < last:
                report.reordered += 1
            last = max(last, v)
    for i, when in acked.items():
        if i not in seen:
            report.lost += 1
            if any(0 <= kill - when <= loss_window for kill in kills):
                report.lost_in_loss_window += 1
            else:
                before_kill = min((k - when for k in kills if k >= when), default=-1)
                report.lost_outside.append((i, before_kill))


def produce_mock(
    records: int, seed: int = 0, progress: Progress | None = None, seconds: float = 100.0
) -> ProduceReport:
    """Through errors, leader moves, a broker down and up, latency on the 3-broker mock.

    Records flow evenly over *seconds*; a fault comes every 0.2 s.
    """
    rng = random.Random(seed)
    partitions = 8
    topic = f"chaos-{int(time.time())}"
    report = ProduceReport("librdkafka mock cluster", records, partitions)
    with RdkafkaMockCluster(broker_count=3) as mock:
        mock.create_topic(topic, partitions)
        client = KafkaClient(mock.bootstrap, timeout=5000, endpoint_factory=TCP4ClientEndpoint)
        down: list[int] = []

        def fault() -> None:
            while down:
                mock.broker_set_up(down.pop())
            kind = rng.choice(("errors", "leader", "down", "latency", "none"))
            report.faults[kind] += 1
            if kind == "errors":
                codes = [rng.choice(RETRIABLE_CODES) for _ in range(rng.randint(1, 3))]
                mock.push_request_errors(0, *codes)
            elif kind == "leader":
                mock.partition_set_leader(topic, rng.randrange(partitions), rng.randint(1, 3))
            elif kind == "down":
                broker = rng.randint(1, 3)
                mock.broker_set_down(broker)
                down.append(broker)
            elif kind == "latency":
                mock.broker_set_rtt(-1, rng.choice((0, 0, 50, 200)))

        faults = LoopingCall(fault)
        faults.start(0.2, now=False)
        try:
            acked = _produce_evenly(client, topic, records, partitions, report, seconds, progress)
        finally:
            faults.stop()
            while down:
                mock.broker_set_up(down.pop())
            mock.broker_set_rtt(-1, 0)
            mock.clear_request_errors(0)
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)
        _verify(report, mock.bootstrap, topic, partitions, acked, [], 0.0)
    return report


class _Pipe(Protocol):
    """One direction-pair of the proxy; ``peer`` is the other side."""

    peer: _Pipe | None = None

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self.pending: list[bytes] = []

    def dataReceived(self, data: bytes) -> None:
        delay = self.proxy.latency
        if delay:
            reactor.callLater(delay, self._forward, data)
        else:
            self._forward(data)

    def _forward(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            self.pending.append(data)

    def connectionLost(self, reason: Any) -> None:
        self.proxy.pipes.discard(self)
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.loseConnection()


class FaultProxy:
    """A loopback TCP proxy to one broker port that cuts connections and adds latency."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.latency = 0.0
        self.pipes: set[_Pipe] = set()
        factory = Factory.forProtocol(lambda: self._accept())
        self.port = reactor.listenTCP(0, factory, interface="127.0.0.1")  # type: ignore[attr-defined]

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port.getHost().port

    def _accept(self) -> _Pipe:
        inner = _Pipe(self)
        self.pipes.add(inner)
        endpoint = TCP4ClientEndpoint(reactor, "127.0.0.1", self.upstream_port, timeout=5)
        outer = _Pipe(self)

        def connected(protocol: _Pipe) -> None:
            protocol.peer, inner.peer = inner, protocol
            self.pipes.add(protocol)
            for data in inner.pending:
                protocol.transport.write(data)
            inner.pending.clear()

        def failed(_: Any) -> None:
            if inner.transport is not None:
                inner.transport.loseConnection()

        endpoint.connect(Factory.forProtocol(lambda: outer)).addCallbacks(connected, failed)
        return inner

    def cut(self) -> None:
        """Abort every proxied connection."""
        for pipe in list(self.pipes):
            if pipe.transport is not None:
                pipe.transport.abortConnection()

    def close(self) -> None:
        self.cut()
        self.port.stopListening()


def produce_noida(
    records: int,
    kills: int = 5,
    seed: int = 0,
    progress: Progress | None = None,
    period: float = 6.0,
) -> ProduceReport:
    """Through kill -9 cycles of noida-db and a proxy that cuts connections and adds latency.

    Records flow evenly over ``(kills + 1) * period`` seconds; the broker is
    killed and restarted every *period* seconds.
    """
    rng = random.Random(seed)
    topic = f"chaos-{int(time.time())}"
    report = ProduceReport("noida-db", records, 1)  # one partition: a restart forgets more
    kill_times: list[float] = []
    with NoidaBroker() as broker:
        broker.create_topic(topic, 1)
        port = int(broker.bootstrap.rsplit(":", 1)[1])
        proxy = FaultProxy(port)

        def endpoint_factory(_reactor: Any, host: str, port: int) -> Any:
            return TCP4ClientEndpoint(reactor, *proxy.address)

        client = KafkaClient(broker.bootstrap, timeout=5000, endpoint_factory=endpoint_factory)

        def fault() -> None:
            kind = rng.choice(("cut", "latency", "none"))
            report.faults[kind] += 1
            if kind == "cut":
                proxy.cut()
            elif kind == "latency":
                proxy.latency = rng.choice((0.0, 0.0, 0.05, 0.2))

        def kill() -> None:
            if len(kill_times) >= kills:
                return
            kill_times.append(reactor.seconds())
            broker.crash_and_restart()
            # Answers the dead broker sent before the kill are read after the restart.
            kill_times[-1] = reactor.seconds()
            report.faults["kill -9"] += 1

        faults = LoopingCall(fault)
        faults.start(1.0, now=False)
        killer = LoopingCall(kill)
        killer.start(period, now=False)
        try:
            duration = (kills + 1) * period
            acked = _produce_evenly(client, topic, records, 1, report, duration, progress)
        finally:
            killer.stop()
            faults.stop()
            proxy.latency = 0.0
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)
            proxy.close()
        window = 2 * broker.quirks.acknowledged_writes_lost_on_kill
        kill_times = [k + 0.2 for k in kill_times]  # and until the reactor read them
        _verify(report, broker.bootstrap, topic, 1, acked, kill_times, window)
    return report


def produce_kafka_cluster(
    records: int,
    kills: int = 5,
    seed: int = 0,
    progress: Progress | None = None,
    period: float = 6.0,
) -> ProduceReport:
    """Through kill -9 of partition leaders on Apache Kafka's 3-node cluster.

    The topic has 3 partitions, 3 replicas and ``min.insync.replicas=2``.  Every
    *period* seconds the leader of a random partition is killed (kill -9), and at the
    next period started again with its data (launched without blocking the reactor),
    so records flow over ``(2 * kills + 1) * period`` seconds.  Kafka acknowledges an
    acks=all write only once two replicas have it: nothing may be lost, duplicated or
    reordered, counted by Kafka's Java ConsoleConsumer.
    """
    from confluent_kafka.admin import AdminClient

    rng = random.Random(seed)
    topic = f"chaos-kafka-{int(time.time())}"
    report = ProduceReport("kafka-cluster", records, 3)
    kill_times: list[float] = []
    with KafkaCluster() as cluster:
        cluster.create_topic(topic, 3)
        admin = AdminClient(client_config(cluster.bootstrap))
        client = KafkaClient(cluster.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
        down: list[Any] = []

        def fault() -> None:
            if down:
                down.pop().launch()  # back with its data; ready a few seconds later
                return
            if len(kill_times) >= kills:
                return
            partition = rng.randrange(3)
            metadata = admin.list_topics(topic, timeout=10)
            leader = metadata.topics[topic].partitions[partition].leader
            if leader < 1:
                return
            node = cluster.nodes[leader - 1]
            node.kill()
            down.append(node)
            kill_times.append(reactor.seconds())
            report.faults["kill -9 of a leader"] += 1

        faults = LoopingCall(fault)
        faults.start(period, now=False)
        try:
            duration = (2 * kills + 1) * period
            acked = _produce_evenly(client, topic, records, 3, report, duration, progress)
        finally:
            faults.stop()
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)
        for node in down:
            node.start(cluster.start_timeout)
        cluster.wait_for_brokers(3)
        _verify(report, cluster.bootstrap, topic, 3, acked, kill_times, 0.0, java=True)
    return report


def _produce_evenly(
    client: KafkaClient,
    topic: str,
    records: int,
    partitions: int,
    report: ProduceReport,
    duration: float,
    progress: Progress | None,
) -> dict[int, float]:
    """Send *records* spread over *duration* seconds; then flush.

    Returns {record: reactor time of its acknowledgement}.
    """
    producer = Producer(client, linger_ms=5, batch_size=64 * 1024)
    acked: dict[int, float] = {}

    def settled(result: Any, i: int) -> None:
        if hasattr(result, "trap"):
            report.failed[type(result.value).__name__] += 1
        else:
            acked[i] = reactor.seconds()

    began = time.monotonic()
    chunk = max(100, int(records * 0.1 / duration))
    for start in range(0, records, chunk):
        for i in range(start, min(records, start + chunk)):
            producer.send(topic, b"%d" % i, partition=i % partitions).addBoth(settled, i)
        due = began + duration * min(records, start + chunk) / records
        _drive(lambda: time.monotonic() >= due, timeout=duration + 60)  # noqa: B023
        if progress is not None:
            progress(len(acked) + sum(report.failed.values()))
    flushed = producer.flush()
    _drive(lambda: flushed.called, timeout=600)
    if progress is not None:
        progress(records)
    stopped = producer.stop()
    _drive(lambda: stopped.called, timeout=30)
    report.acknowledged = len(acked)
    return acked
