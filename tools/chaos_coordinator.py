"""Consumer groups whose coordinator's broker is killed (tools/chaos.py
``group-coordinator-kill``, issue 33).

On Apache Kafka's 3-node cluster (one ``__consumer_offsets`` partition, so every group
has the same coordinator), groups of three members each read a 6-partition topic while
an idempotent producer writes to it at a steady rate.  The coordinator's node is
killed (-9) and not restarted.  For each group: its *stall*, the longest a record
waited to be processed after the kill (from the kill, or from its acknowledgement if
later: the producer's own wait for the partitions that lose their leader with the node
does not count) on the partitions whose leader stayed, the same on the partitions whose
leader was killed too (marked ``*``), and the records it never processed.  The
cluster's leader failover (the kill to the first record a killed leader's successor
acknowledged: Kafka fences the dead node after ``broker.session.timeout.ms``, later
when the active controller died with it, which the report says) bounds the latter
from below; each group's delay *past the failover* (the longest a record waited
after a new leader acknowledged it) is the client's own part.  afkak's groups run
in this process (each member with a client of its own), confluent-kafka's members
in child processes; both with their defaults but the session timeout and a
1 s heartbeat interval.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from chaos_kafka import _drive
from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak.admin import KafkaAdminClient
from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.test.brokers import KafkaCluster

Progress = Callable[[int], None]
PARTITIONS = 6
MEMBERS = 3
CLIENTS = ("afkak", "confluent")

#: A confluent-kafka member: ``R partition offset value time`` per record processed.
_CONFLUENT_MEMBER = """
import sys, time, confluent_kafka as ck
bootstrap, group, topic, path, session_ms = sys.argv[1:]
c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                 "auto.offset.reset": "earliest", "session.timeout.ms": int(session_ms),
                 "heartbeat.interval.ms": 1000})
c.subscribe([topic])
with open(path, "a") as out:
    while True:
        msgs = [m for m in c.consume(500, 0.2) if m.error() is None]
        now = time.time()
        out.writelines(f"R {m.partition()} {m.offset()} {int(m.value())} {now}\\n" for m in msgs)
        out.flush()
"""


@attrs.define
class GroupOutcome:
    client: str
    session_timeout_ms: int
    #: (wall time, partition, value) of each record processed.
    processed: list[tuple[float, int, int]] = attrs.field(factory=list)
    #: Per partition: the longest a record waited, in seconds (see :func:`_waits`).
    waits: dict[int, float] = attrs.field(factory=dict)
    #: The partitions whose leader was on the killed node (their leaders moved too).
    moved: frozenset[int] = frozenset()
    #: Per partition: the longest a record acknowledged after the kill waited.
    waits_after_kill: dict[int, float] = attrs.field(factory=dict)
    lost: int = 0

    @property
    def stall(self) -> float:
        """The group's stall: on the partitions whose leader stayed."""
        return max((w for p, w in self.waits.items() if p not in self.moved), default=0.0)

    @property
    def moved_stall(self) -> float:
        """On the partitions whose leader was killed too (the group's stall and the
        leader's failover, whichever is longer)."""
        return max((w for p, w in self.waits.items() if p in self.moved), default=0.0)

    @property
    def past_failover(self) -> float:
        """On the partitions whose leader was killed: the longest a record waited that
        their new leader acknowledged (the client's own delay past the failover)."""
        return max((w for p, w in self.waits_after_kill.items() if p in self.moved), default=0.0)

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.stall < 2 * self.session_timeout_ms / 1000.0


@attrs.define
class CoordinatorKillReport:
    records: int = 0
    killed_node: int = -1
    #: The node leading the KRaft quorum (the active controller) at the kill.
    controller: int = -1
    #: Seconds from the kill to the first acknowledgement by a killed leader's successor.
    failover: float = 0.0
    groups: list[GroupOutcome] = attrs.field(factory=list)
    seconds: float = 0.0

    def ok(self) -> bool:
        return all(g.ok for g in self.groups if g.client == "afkak")

    def lines(self) -> Iterator[str]:
        yield (
            f"records: {self.records}; kill -9 of node {self.killed_node} (the coordinator"
            f"{', and the active controller' if self.controller == self.killed_node else ''})"
        )
        yield (
            f"leader failover (the kill to the first record a new leader acknowledged):"
            f" {self.failover:.1f} s"
        )
        for g in self.groups:
            yield (
                f"{g.client} session_timeout_ms={g.session_timeout_ms}: "
                f"stall {g.stall:.1f} s ({g.moved_stall:.1f} s where the leader moved too), "
                f"{g.past_failover:.1f} s past the failover, lost {g.lost}; per partition: "
                + ", ".join(
                    f"{w:.1f}{'*' if p in g.moved else ''}" for p, w in sorted(g.waits.items())
                )
            )


def _waits(
    processed: list[tuple[float, int, int]], acked: dict[int, float], killed: float
) -> dict[int, float]:
    """Per partition, the longest a record waited to be processed after the kill: from
    the kill or its acknowledgement, whichever came later, to its first processing."""
    first: dict[int, tuple[float, int]] = {}
    for t, p, v in processed:
        if v not in first or t < first[v][0]:
            first[v] = (t, p)
    waits = dict.fromkeys(range(PARTITIONS), 0.0)
    for v, (t, p) in first.items():
        if t > killed and v in acked:
            waits[p] = max(waits[p], t - max(acked[v], killed))
    return waits


def _read_confluent(path: str) -> list[tuple[float, int, int]]:
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                cells = line.split()
                if line.endswith("\n") and len(cells) == 5 and cells[0] == "R":
                    rows.append((float(cells[4]), int(cells[1]), int(cells[3])))
    return rows


def coordinator_kill(
    records_per_second: int = 60,
    before: float = 5.0,
    margin: float = 4.0,
    session_timeouts: tuple[int, ...] = (6000, 10000),
    clients: tuple[str, ...] = CLIENTS,
    progress: Progress | None = None,
) -> CoordinatorKillReport:
    """One group per client and session timeout; *before* seconds of records, the kill,
    then records for two of the longest session timeouts and *margin* seconds more."""
    report = CoordinatorKillReport()
    began = time.monotonic()
    stamp = int(time.time())
    topic = f"chaos-coordinator-{stamp}"
    workdir = tempfile.mkdtemp(prefix="afkak-chaos-coordinator-")
    outcomes: list[GroupOutcome] = []
    groups: list[ConsumerGroup] = []
    children: list[tuple[GroupOutcome, list[str], list[subprocess.Popen[bytes]]]] = []
    clients_made: list[KafkaClient] = []
    logs: list[Any] = []

    def client() -> KafkaClient:
        made = KafkaClient(cluster.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        clients_made.append(made)
        return made

    def afkak_group(outcome: GroupOutcome, group_id: str) -> None:
        def processor(consumer: Any, messages: list[Any]) -> None:
            now = time.time()
            outcome.processed.extend((now, m.partition, int(m.message.value)) for m in messages)

        for _ in range(MEMBERS):
            group = ConsumerGroup(
                client(),
                group_id,
                [topic],
                processor,
                session_timeout_ms=outcome.session_timeout_ms,
                heartbeat_interval_ms=1000,
                auto_offset_reset=OFFSET_EARLIEST,
            )
            group.start().addErrback(lambda f: print("afkak member failed:", f, file=sys.stderr))
            groups.append(group)

    def confluent_group(outcome: GroupOutcome, group_id: str) -> None:
        paths = [os.path.join(workdir, f"{group_id}-{i}.txt") for i in range(MEMBERS)]
        log = open(os.path.join(workdir, f"{group_id}.log"), "ab")  # librdkafka's complaints
        logs.append(log)
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", _CONFLUENT_MEMBER, cluster.bootstrap, group_id, topic]
                + [path, str(outcome.session_timeout_ms)],
                stderr=log,
            )
            for path in paths
        ]
        children.append((outcome, paths, processes))

    def collect() -> None:
        for outcome, paths, _ in children:
            outcome.processed = [row for path in paths for row in _read_confluent(path)]

    def everything_processed(sent: int) -> bool:
        collect()
        done = [len({v for _, _, v in o.processed}) for o in outcomes]
        if progress is not None:
            progress(min(done))
        return min(done) >= sent

    with KafkaCluster() as cluster:
        cluster.create_topic(topic, PARTITIONS)
        for name in clients:
            for session in session_timeouts:
                outcome = GroupOutcome(name, session)
                outcomes.append(outcome)
                start = afkak_group if name == "afkak" else confluent_group
                start(outcome, f"{topic}-{name}-{session}")
        producer = Producer(client(), linger_ms=5)
        sent = 0
        acked: dict[int, float] = {}

        def send_until(until: float) -> None:
            """Send *records_per_second* until the wall clock reads *until*."""
            nonlocal sent
            base, began_sending = sent, time.time()
            while time.time() < until:
                due = base + int((time.time() - began_sending) * records_per_second)
                for value in range(sent, due):
                    d = producer.send(topic, b"%d" % value, partition=value % PARTITIONS)
                    d.addCallback(lambda _, v=value: acked.__setitem__(v, time.time()))
                sent = max(sent, due)
                _drive(lambda: False, timeout=0.05)
            report.records = sent

        try:
            # Every group is in and has read the first records before the kill.
            send_until(time.time() + 1.0)
            if not _drive(lambda: everything_processed(sent), timeout=90):
                raise TimeoutError("the groups did not start reading in 90 s")
            send_until(time.time() + before)
            finder = client()
            found = finder.load_coordinator_for_group(f"{topic}-{clients[0]}-{session_timeouts[0]}")
            _drive(lambda: found.called, timeout=30)
            [coordinator] = finder.consumer_group_to_brokers().values()
            report.killed_node = coordinator.node_id
            loaded = finder.load_metadata_for_topics(topic)
            _drive(lambda: loaded.called, timeout=30)
            leaders = finder.topics_to_brokers
            moved = frozenset(
                key.partition
                for key, leader in leaders.items()
                if key.topic == topic and getattr(leader, "node_id", None) == coordinator.node_id
            )
            quorum = KafkaAdminClient(finder).describe_metadata_quorum()
            _drive(lambda: quorum.called, timeout=30)
            quorum.addCallback(lambda q: setattr(report, "controller", q.leader_id))
            cluster.nodes[coordinator.node_id - 1].kill()
            killed = time.time()
            send_until(killed + 2 * max(session_timeouts) / 1000.0 + margin)
            flushed = producer.flush()
            if not _drive(lambda: flushed.called, timeout=120):
                raise TimeoutError("the producer did not flush in 120 s")
            _drive(lambda: everything_processed(sent), timeout=60)
            collect()
        finally:
            leaving = [group.stop() for group in groups if group.member.state.value != "stopped"]
            _drive(lambda: all(d.called for d in leaving), timeout=30)
            for _, _, processes in children:
                for process in processes:
                    process.kill()
                    process.wait()
            for log in logs:
                log.close()
            stopping = producer.stop()
            _drive(lambda: stopping.called, timeout=30)
            for made in clients_made:
                closed = made.close()
                _drive(lambda: closed.called, timeout=30)  # noqa: B023
    acked_after_kill = {v: t for v, t in acked.items() if t > killed}
    report.failover = min(
        (t - killed for v, t in acked_after_kill.items() if v % PARTITIONS in moved), default=0.0
    )
    for outcome in outcomes:
        outcome.waits = _waits(outcome.processed, acked, killed)
        outcome.waits_after_kill = _waits(outcome.processed, acked_after_kill, killed)
        outcome.moved = moved
        outcome.lost = sent - len({v for _, _, v in outcome.processed if v < sent})
    report.groups = outcomes
    report.seconds = time.monotonic() - began
    return report
