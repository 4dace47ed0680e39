"""Consumer groups and exactly-once pipelines on Apache Kafka's 3-node cluster under
broker faults (tools/chaos.py ``group-kafka`` and ``eos-kafka``).

The broker faults (a controlled restart of each node in turn, kill -9 of a partition's
leader) run in a thread of their own, since starting a node blocks until it is ready;
afkak runs on the reactor in the main thread (the producer, the pipeline) or in child
processes (the group's members, so that a member can be SIGKILLed).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak._broker_errors import ErrorCode
from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST, OffsetFetchRequest
from afkak.group import ConsumerGroup, TransactionalProcessor
from afkak.producer import Producer
from afkak.test.brokers import KafkaCluster, client_config
from afkak.test.brokers.java_tools import console_consume, transactions

Progress = Callable[[int], None]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSION_TIMEOUT_MS = 6000
REBALANCE_TIMEOUT_MS = 10000
#: Seconds between a member's commits of a partition.
COMMIT_EVERY = 0.5

#: One afkak ConsumerGroup member in a process of its own.  It writes ``R partition offset
#: value`` for each record it processed; at most every COMMIT_EVERY seconds per partition
#: (auto-commit is off) it then commits that partition's next offset and writes ``C
#: partition offset`` once the commit succeeded.  What it processed since is its
#: uncommitted window: another member processes it again after a SIGKILL.
_AFKAK_MEMBER = """
import sys
from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint
from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST, TopicAndPartition
from afkak.group import ConsumerGroup

bootstrap, group, topic, path, session_ms, rebalance_ms, commit_every = sys.argv[1:]
commit_every = float(commit_every)
out = open(path, "a")

last_commit = {}

def processor(consumer, messages):
    out.writelines(f"R {m.partition} {m.offset} {int(m.message.value)}\\n" for m in messages)
    out.flush()
    last = messages[-1]
    now = reactor.seconds()
    if now - last_commit.get(last.partition, 0) < commit_every:
        return None
    last_commit[last.partition] = now
    d = consumer.commit({TopicAndPartition(topic, last.partition): last.offset + 1})

    def committed(_):
        out.write(f"C {last.partition} {last.offset + 1}\\n")
        out.flush()

    return d.addCallbacks(committed, lambda f: None)

def failed(f):
    print("afkak member failed:", f.getTraceback(), file=sys.stderr, flush=True)
    reactor.stop()
    sys.exit(1)

client = KafkaClient(bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
member = ConsumerGroup(
    client, group, [topic], processor, assignors=["range"],
    session_timeout_ms=int(session_ms), rebalance_timeout_ms=int(rebalance_ms),
    heartbeat_interval_ms=1000, auto_offset_reset=OFFSET_EARLIEST,
    auto_commit_every_n=0, auto_commit_every_ms=0, fetch_max_wait_time=200,
)
member.start().addErrback(failed)
reactor.run()
"""


def _drive(until: Callable[[], bool], timeout: float) -> bool:
    """Run the reactor until *until()* or *timeout* seconds; whether it became true."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            return False
        reactor.iterate(0.01)  # type: ignore[attr-defined]
    return True


class Faults(threading.Thread):
    """Runs *events* one every *period* seconds in a thread (starting a node blocks)."""

    def __init__(self, events: list[Callable[[], None]], period: float) -> None:
        super().__init__(daemon=True)
        self.events = events
        self.period = period
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for event in self.events:
                if self.stopping.wait(self.period):
                    return
                event()
        except BaseException as e:
            self.error = e

    def finish(self) -> None:
        """Wait until every event ran (a node start takes seconds; the reactor runs on)."""
        _drive(lambda: not self.is_alive(), timeout=len(self.events) * (self.period + 300))
        if self.error is not None:
            raise RuntimeError("a fault failed") from self.error


def start_node(cluster: KafkaCluster, node: Any) -> None:
    """Start *node* again with its data and wait until all three nodes are up.  The JVM is
    spawned by the main thread (through the reactor): the harness launches it under
    ``setpriv --pdeathsig``, whose signal follows the *thread* that spawned it, so a JVM
    spawned by this thread would get SIGTERM when the thread ends."""
    launched = threading.Event()
    errors: list[BaseException] = []

    def launch() -> None:
        try:
            node.launch()
        except BaseException as e:
            errors.append(e)
        finally:
            launched.set()

    reactor.callFromThread(launch)  # type: ignore[attr-defined]
    launched.wait()
    if errors:
        raise errors[0]
    failure = node.wait_ready(cluster.start_timeout)
    if failure:
        raise RuntimeError(f"node {node.node_id}: {failure}")
    cluster.wait_for_brokers(3, cluster.start_timeout)


def rolling_restart(cluster: KafkaCluster, index: int, report: Counter[str]) -> Callable[[], None]:
    """A controlled restart of node *index* (SIGTERM, then :func:`start_node`)."""

    def restart() -> None:
        node = cluster.nodes[index]
        node.shutdown(cluster.stop_timeout)
        start_node(cluster, node)
        report[f"restart of node {node.node_id}"] += 1

    return restart


def leader_kill(
    cluster: KafkaCluster, topics: list[str], rng: random.Random, report: Counter[str]
) -> Callable[[], None]:
    """kill -9 the leader of a random partition of *topics*, and start it again after a
    period (the next event of the same kind): an event that alternates."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(cluster.bootstrap))
    down: list[Any] = []

    def fault() -> None:
        if down:
            start_node(cluster, down.pop())
            return
        topic = rng.choice(topics)
        metadata = admin.list_topics(topic, timeout=30).topics[topic]
        leader = metadata.partitions[rng.choice(sorted(metadata.partitions))].leader
        if leader >= 1:
            node = cluster.nodes[leader - 1]
            node.kill()
            down.append(node)
            report["kill -9 of a leader"] += 1

    return fault


# -- group-kafka ---------------------------------------------------------------------


@attrs.define
class GroupReport:
    records: int = 0
    faults: Counter[str] = attrs.field(factory=Counter)
    #: Members that exited by themselves (their group failed), replaced.
    member_failures: int = 0
    processed: int = 0
    lost: int = 0
    #: Processings beyond the first of a record.
    duplicates: int = 0
    #: Of those, processings a commit of the same member covered (outside any uncommitted
    #: window): must be 0.
    duplicates_outside_windows: int = 0
    seconds: float = 0.0

    def ok(self) -> bool:
        return self.lost == 0 and self.duplicates_outside_windows == 0

    def lines(self) -> Iterator[str]:
        yield f"{self.records:,} records; faults: {dict(self.faults)}"
        yield f"members that failed by themselves: {self.member_failures}"
        yield (
            f"processed {self.processed:,} distinct records: lost {self.lost}, processed again"
            f" {self.duplicates} (outside an uncommitted window: {self.duplicates_outside_windows})"
        )


def _member_files(paths: list[str]) -> Iterator[list[tuple[str, int, int, int]]]:
    """Each member file's lines: ("R", partition, offset, value) and ("C", partition,
    offset, 0); a half-written last line (a killed member) is skipped."""
    for path in paths:
        rows = []
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    cells = line.split()
                    if line.endswith("\n") and cells[0] == "R" and len(cells) == 4:
                        rows.append(("R", int(cells[1]), int(cells[2]), int(cells[3])))
                    elif line.endswith("\n") and cells[0] == "C" and len(cells) == 3:
                        rows.append(("C", int(cells[1]), int(cells[2]), 0))
        yield rows


def count_processing(report: GroupReport, paths: list[str], records: int) -> None:
    """Lost and repeated records from the members' files.  A processing is *committed*
    when a later commit of the same member covers its offset; a record processed n times
    must have at least n - 1 uncommitted processings (a committed record is never read
    again: the next owner starts from the commit)."""
    times: Counter[int] = Counter()
    committed: Counter[int] = Counter()
    for rows in _member_files(paths):
        covered: dict[int, int] = {}
        for kind, partition, offset, value in reversed(rows):
            if kind == "C":
                covered[partition] = max(covered.get(partition, 0), offset)
            else:
                times[value] += 1
                committed[value] += offset < covered.get(partition, 0)
    report.processed = len(set(times) & set(range(records)))
    report.lost = records - report.processed
    report.duplicates = sum(n - 1 for n in times.values() if n > 1)
    report.duplicates_outside_windows = sum(
        max(0, committed[v] - 1) for v, n in times.items() if n > 1
    )


def group_kafka(
    records: int,
    kills: int = 4,
    seed: int = 0,
    progress: Progress | None = None,
    period: float = 8.0,
    members: int = 3,
) -> GroupReport:
    """*members* afkak ConsumerGroup processes share a 6-partition topic while an
    idempotent producer writes *records* over ``(kills + 1) * period`` seconds.  Every
    *period* seconds a random member is SIGKILLed (and replaced by a new one), and,
    meanwhile, each of the three nodes in turn gets a controlled restart (the group
    coordinator's among them), a period apart (each restart waits until the node is back)."""
    rng = random.Random(seed)
    report = GroupReport(records)
    topic = f"chaos-group-kafka-{int(time.time())}"
    workdir = tempfile.mkdtemp(prefix="afkak-chaos-group-kafka-")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    files: list[str] = []
    running: list[subprocess.Popen[bytes]] = []
    began = time.monotonic()
    with KafkaCluster() as cluster:
        cluster.create_topic(topic, 6)

        def member() -> subprocess.Popen[bytes]:
            path = os.path.join(workdir, f"member-{len(files)}.txt")
            files.append(path)
            argv = [sys.executable, "-c", _AFKAK_MEMBER, cluster.bootstrap, topic, topic, path]
            argv += [str(SESSION_TIMEOUT_MS), str(REBALANCE_TIMEOUT_MS), str(COMMIT_EVERY)]
            return subprocess.Popen(argv, env=env)

        running.extend(member() for _ in range(members))
        client = KafkaClient(cluster.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
        producer = Producer(client, linger_ms=5)
        faults = Faults([rolling_restart(cluster, i, report.faults) for i in range(3)], period)
        faults.start()
        try:
            duration = (kills + 1) * period
            chunk = max(100, int(records * 0.1 / duration))
            started = time.monotonic()
            next_kill = started + period
            for start in range(0, records, chunk):
                for i in range(start, min(records, start + chunk)):
                    producer.send(topic, b"%d" % i, partition=i % 6)
                due = started + duration * min(records, start + chunk) / records
                _drive(lambda: time.monotonic() >= due, timeout=duration + 60)  # noqa: B023
                for index, process in enumerate(running):
                    if process.poll() is not None:
                        report.member_failures += 1
                        running[index] = member()
                if time.monotonic() >= next_kill and report.faults["SIGKILL of a member"] < kills:
                    next_kill += period
                    index = rng.randrange(len(running))
                    running[index].kill()
                    running[index].wait()
                    running[index] = member()
                    report.faults["SIGKILL of a member"] += 1
            flushed = producer.flush()
            if not _drive(lambda: flushed.called, timeout=600):
                raise TimeoutError("the producer did not flush in 600 s")
            faults.finish()

            def all_processed() -> bool:
                seen = {row[3] for rows in _member_files(files) for row in rows if row[0] == "R"}
                if progress is not None:
                    progress(len(seen))
                return len(seen) >= records

            deadline = time.monotonic() + 120 + records / 2000
            while not all_processed() and time.monotonic() < deadline:
                time.sleep(1.0)
        finally:
            faults.stopping.set()
            for process in running:
                process.kill()
                process.wait()
            stopped = producer.stop()
            _drive(lambda: stopped.called, timeout=30)
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)
        count_processing(report, files, records)
    shutil.rmtree(workdir, ignore_errors=True)
    report.seconds = time.monotonic() - began
    return report


# -- eos-kafka -----------------------------------------------------------------------


@attrs.define
class EosReport:
    records: int = 0
    faults: Counter[str] = attrs.field(factory=Counter)
    #: Times the pipeline's group failed (a transaction failed) and was started again.
    restarts: int = 0
    outputs: int = 0
    duplicated: int = 0
    missing: int = 0
    #: ``kafka-transactions describe`` of the pipeline's transactional id at the end.
    described: dict[str, str] = attrs.field(factory=dict)
    listed: bool = False
    seconds: float = 0.0

    def ok(self) -> bool:
        return self.duplicated == 0 and self.missing == 0 and self.outputs == self.records

    def lines(self) -> Iterator[str]:
        yield f"{self.records:,} input records; faults: {dict(self.faults)}"
        yield f"pipeline restarts (a failed transaction): {self.restarts}"
        yield (
            f"read_committed by Kafka's ConsoleConsumer: {self.outputs:,} outputs,"
            f" {self.duplicated} duplicated, {self.missing} missing"
        )
        yield (
            f"kafka-transactions: listed {self.listed},"
            f" state {self.described.get('TransactionState')}"
        )


def eos_kafka(
    records: int,
    kills: int = 4,
    seed: int = 0,
    progress: Progress | None = None,
    period: float = 6.0,
) -> EosReport:
    """An afkak ConsumerGroup with a TransactionalProcessor upper-cases 3 input partitions
    into 3 output partitions while the leader of a random input or output partition is
    killed (-9) every *period* seconds and started again a period later (the group and
    transaction coordinators move too).  A group that fails (a transaction failed) is
    started again with a new producer of the same transactional id.  The output is read
    read_committed by Kafka's Java ConsoleConsumer: each input exactly once."""
    rng = random.Random(seed)
    report = EosReport(records)
    stamp = int(time.time() * 1000)
    topic_in, topic_out = f"eos-in-{stamp}", f"eos-out-{stamp}"
    group_id, tid = f"eos-group-{stamp}", f"eos-tid-{stamp}"
    began = time.monotonic()
    with KafkaCluster() as cluster:
        cluster.create_topic(topic_in, 3)
        cluster.create_topic(topic_out, 3)
        client = KafkaClient(cluster.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
        producer = Producer(client, linger_ms=5)
        sent = producer.send_messages(topic_in, msgs=[b"record-%d" % i for i in range(records)])
        flushed = producer.flush()
        _drive(lambda: flushed.called and sent.called, timeout=120 + records / 1000)
        stopped = producer.stop()
        _drive(lambda: stopped.called, timeout=30)

        def upper(messages: Any) -> list[tuple[str, bytes | None, bytes | None]]:
            return [(topic_out, (m.message.value or b"").upper(), None) for m in messages]

        pipeline: list[Any] = []

        async def start_pipeline() -> None:
            producer = Producer(client, transactional_id=tid, linger_ms=5)
            pipeline[:] = [producer]
            await producer.init_transactions()
            group = ConsumerGroup(
                client, group_id, [topic_in], TransactionalProcessor(producer, upper),
                isolation_level="read_committed", auto_commit_every_n=0,
                auto_commit_every_ms=0, auto_offset_reset=OFFSET_EARLIEST,
                session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                heartbeat_interval_ms=1000, fetch_max_wait_time=200,
            )  # fmt: skip
            pipeline.insert(0, group)
            await group.start()

        async def committed() -> int:
            answers = await client.send_offset_fetch_request(
                group_id, [OffsetFetchRequest(topic_in, p) for p in range(3)], require_stable=True
            )
            return sum(max(a.offset, 0) for a in answers)

        async def run() -> None:
            while True:
                try:
                    await start_pipeline()
                    return
                except Exception as e:
                    print("the pipeline failed, starting it again:", repr(e), file=sys.stderr)
                    report.restarts += 1
                    for each in pipeline:
                        await each.stop().addErrback(lambda _: None)

        def done() -> bool:
            d = Deferred.fromCoroutine(committed())
            progressed: list[int] = []
            d.addCallbacks(progressed.append, lambda _: progressed.append(-1))
            _drive(lambda: bool(progressed), timeout=30)
            if progress is not None and progressed:
                progress(max(progressed[0], 0))
            return bool(progressed) and progressed[0] >= records

        faults = Faults(
            [leader_kill(cluster, [topic_in, topic_out], rng, report.faults)] * (2 * kills),
            period,
        )
        running = Deferred.fromCoroutine(run())
        faults.start()
        try:
            deadline = time.monotonic() + (2 * kills + 1) * period + 120 + records / 500
            faults.finish()
            while not done() and time.monotonic() < deadline:
                _drive(lambda: running.called, timeout=1.0)
            report.listed = tid in {
                r["TransactionalId"] for r in transactions(cluster.bootstrap, "list")
            }
            (report.described,) = transactions(
                cluster.bootstrap, "describe", "--transactional-id", tid
            )
        finally:
            faults.stopping.set()
            for each in pipeline:
                stopped = each.stop()
                _drive(lambda: stopped.called, timeout=30)  # noqa: B023
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)
        read = console_consume(
            cluster.bootstrap,
            topic_out,
            records,
            timeout=max(60.0, records / 5000),
            isolation_level="read_committed",
        )
        counts = Counter(r.value for r in read)
        expected = {f"RECORD-{i}" for i in range(records)}
        report.outputs = len(read)
        report.duplicated = sum(n - 1 for n in counts.values() if n > 1)
        report.missing = len(expected - set(counts))
    report.seconds = time.monotonic() - began
    return report


# -- sessions-kafka ------------------------------------------------------------------


@attrs.define
class SessionsReport:
    readers: int = 0
    #: Small readers whose session was granted, then evicted (FETCH_SESSION_ID_NOT_FOUND).
    evicted: int = 0
    #: Session errors by name, over every reader.
    errors: Counter[str] = attrs.field(factory=Counter)
    #: Evicted readers whose next Fetch was a full one asking for a new session.
    full_after: int = 0
    #: Readers that read every record of their partitions, in order.
    complete: int = 0
    seconds: float = 0.0

    def ok(self) -> bool:
        return (
            self.evicted > 0
            and self.full_after == self.evicted
            and (self.complete == 2 * self.readers)
        )

    def lines(self) -> Iterator[str]:
        yield f"{self.readers} one-partition readers, then {self.readers} four-partition readers"
        yield f"session errors: {dict(self.errors)}"
        yield (
            f"evicted: {self.evicted}, of which went on with a full fetch: {self.full_after};"
            f" readers that read everything in order: {self.complete} of {2 * self.readers}"
        )


def sessions_kafka(readers: int = 8, age: float = 125.0, records: int = 300) -> SessionsReport:
    """KIP-227 eviction on an Apache Kafka node keeping 8 sessions
    (``max.incremental.fetch.session.cache.slots=8``: one in each of its 8 cache shards).
    *readers* clients reading partition 0 take the slots; after *age* seconds (Kafka 4.4
    evicts only sessions older than its fixed 120 s) as many clients reading all four
    partitions arrive, and a session with more partitions evicts a smaller one.  Every
    reader must read every record of its partitions in order; an evicted one gets
    FETCH_SESSION_ID_NOT_FOUND and must go on with a full fetch."""
    from afkak.consumer import Consumer
    from afkak.test.brokers import KafkaBroker, produce
    from afkak.test.test_faults_kafka import Collector, RecordingClient

    report = SessionsReport(readers)
    began = time.monotonic()
    topic = f"chaos-sessions-{int(time.time())}"
    broker = KafkaBroker(config={"max.incremental.fetch.session.cache.slots": "8"}).start()
    clients: list[RecordingClient] = []
    consumers: list[Any] = []
    #: Each reader's (partition, collector) pairs.
    groups: list[list[tuple[int, Collector]]] = []
    try:
        broker.create_topic(topic, 4)

        def write(start: int) -> None:
            for p in range(4):
                values = [b"%d-%d" % (p, i) for i in range(start, start + records // 3)]
                produce(broker.bootstrap, topic, values, partition=p)

        def reader(partitions: range) -> None:
            client = RecordingClient(
                broker.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint
            )
            clients.append(client)
            groups.append([])
            for p in partitions:
                collector = Collector()
                consumer = Consumer(client, topic, p, collector, fetch_max_wait_time=100)
                consumer.start(0)
                consumers.append(consumer)
                groups[-1].append((p, collector))

        def read(n: int) -> bool:
            return all(len(c.values) >= n for group in groups for _, c in group)

        write(0)
        for _ in range(readers):
            reader(range(1))
        _drive(lambda: read(records // 3), timeout=120)
        old_enough = time.monotonic() + age
        _drive(lambda: time.monotonic() >= old_enough, timeout=age + 10)
        for _ in range(readers):
            reader(range(4))
        for step in (1, 2):
            write(step * (records // 3))
            _drive(lambda: read((step + 1) * (records // 3)), timeout=120)  # noqa: B023
        settled = time.monotonic() + 3.0  # the Fetches after the last evictions
        _drive(lambda: time.monotonic() >= settled, timeout=10)
        total = 3 * (records // 3)
        report.complete = sum(
            all(c.values == [b"%d-%d" % (p, i) for i in range(total)] for p, c in group)
            for group in groups
        )
        for client in clients:
            for f in client.fetches:
                if f[2] > 0:
                    report.errors[ErrorCode(f[2]).name] += 1
        for client in clients[:readers]:
            errors = [
                i
                for i, f in enumerate(client.fetches)
                if f[2] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            ]
            if errors and any(f[3] for f in client.fetches[: errors[0]]):
                report.evicted += 1
                following = client.fetches[errors[0] + 1 : errors[0] + 2]
                report.full_after += bool(following) and following[0][:2] == (0, 0)
    finally:
        for consumer in consumers:
            consumer.stop()
        for client in clients:
            closed = client.close()
            _drive(lambda: closed.called, timeout=30)  # noqa: B023
        broker.stop()
    report.seconds = time.monotonic() - began
    return report
