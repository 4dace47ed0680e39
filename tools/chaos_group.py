"""A consumer group of afkak and confluent-kafka members through member kills (tools/chaos.py).

Records ``b"%d" % i`` flow into a 4-partition topic on noida-db while two
afkak :class:`~afkak.group.ConsumerGroup` members (in this process) and two
confluent-kafka consumers (child processes, committing after they wrote
what they processed to a file) share one group.  Every few seconds one
member is killed: an afkak member is stopped without committing, a
confluent-kafka process gets SIGKILL; a new member takes its place.  At the
end every record must have been processed by some member; records
processed more than once (inside a killed member's uncommitted window) are
counted.

noida-db never expires the session of a member that stops heartbeating
(quirk ``group_sessions_never_expire``): a SIGKILLed member stays in the
group for good, keeps its partitions and, as leader, holds every later
rebalance in SyncGroup.  There the harness does the coordinator's part: a
session timeout after a kill it removes the dead member with a LeaveGroup
naming it, as Kafka's coordinator would have, and counts it.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak.admin import KafkaAdminClient
from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.protocol.messages import LeaveGroupRequest
from afkak.test.brokers import NoidaBroker

PARTITIONS = 4
SESSION_TIMEOUT_MS = 6000
#: A rebalance waits this long for members that do not rejoin (killed ones).
REBALANCE_TIMEOUT_MS = 10000

_CONFLUENT_MEMBER = """
import sys, confluent_kafka as ck
bootstrap, group, topic, path, session_ms, poll_ms, client_id = sys.argv[1:]
c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                 "auto.offset.reset": "earliest", "enable.auto.commit": False,
                 "session.timeout.ms": int(session_ms), "heartbeat.interval.ms": 1000,
                 "max.poll.interval.ms": int(poll_ms),
                 "partition.assignment.strategy": "range"})
c.subscribe([topic])
with open(path, "a") as out:
    while True:
        msgs = [m for m in c.consume(500, 0.2) if m.error() is None]
        for m in msgs:
            out.write(m.value().decode() + "\\n")
        out.flush()
        if msgs:
            try:
                c.commit(asynchronous=False)
            except ck.KafkaException:
                pass  # a rebalance took the partitions: their records come again
"""


@attrs.define
class GroupReport:
    records: int = 0
    kills: Counter[str] = attrs.field(factory=Counter)
    processed: int = 0
    lost: int = 0
    duplicates: int = 0
    #: Killed members the harness removed from the group (noida-db's sessions never expire).
    expired_by_harness: int = 0
    states: list[str] = attrs.field(factory=list)

    def lines(self) -> Iterator[str]:
        yield f"{self.records:,} records; members killed: {dict(self.kills)}"
        if self.expired_by_harness:
            yield (
                f"killed members removed by the harness after their session timeout"
                f" (the broker never expires sessions): {self.expired_by_harness}"
            )
        yield (
            f"processed {self.processed:,} distinct records: lost {self.lost},"
            f" processed more than once {self.duplicates}"
        )
        yield from self.states


def _drive(until: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        reactor.iterate(0.01)  # type: ignore[attr-defined]


def group(
    records: int,
    kills: int = 20,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    period: float = 3.0,
) -> GroupReport:
    """Produce *records* over ``kills * period`` seconds, killing a member every *period*."""
    rng = random.Random(seed)
    report = GroupReport(records)
    topic = f"chaos-group-{int(time.time())}"
    group_id = topic
    seen: Counter[int] = Counter()
    workdir = tempfile.mkdtemp(prefix="afkak-chaos-group-")
    with NoidaBroker() as broker:
        broker.create_topic(topic, PARTITIONS)
        client = KafkaClient(broker.bootstrap, timeout=5000, endpoint_factory=TCP4ClientEndpoint)

        def processor(consumer: Any, messages: list[Any]) -> None:
            for m in messages:
                seen[int(m.message.value)] += 1

        clients: list[KafkaClient] = []

        def afkak_member() -> ConsumerGroup:
            # Its own client, as a process of its own would have: a broker answers a
            # connection's requests in order, so members sharing one would wait in line.
            own = KafkaClient(broker.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint)
            clients.append(own)
            member = ConsumerGroup(
                own,
                group_id,
                [topic],
                processor,
                assignors=["range"],
                session_timeout_ms=SESSION_TIMEOUT_MS,
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                heartbeat_interval_ms=1000,
                auto_offset_reset=OFFSET_EARLIEST,
                auto_commit_every_ms=500,
            )
            member.start().addErrback(lambda f: print("afkak member failed:", f.getErrorMessage()))
            return member

        files: list[str] = []
        client_ids: dict[int, str] = {}

        def confluent_member() -> subprocess.Popen[bytes]:
            path = os.path.join(workdir, f"member-{len(files)}.txt")
            client_id = f"chaos-confluent-{len(files)}"
            files.append(path)
            argv = [sys.executable, "-c", _CONFLUENT_MEMBER, broker.bootstrap, group_id, topic]
            argv += [path, str(SESSION_TIMEOUT_MS), str(REBALANCE_TIMEOUT_MS), client_id]
            process = subprocess.Popen(argv, stderr=None)
            client_ids[process.pid] = client_id
            return process

        admin = KafkaAdminClient(client)

        async def expire(client_id: str) -> None:
            """Remove a killed member as the coordinator would at its session timeout."""
            described = await admin.describe_consumer_groups([group_id])
            for m in described[group_id].members:
                if m.client_id == client_id:
                    leave = LeaveGroupRequest(group_id=group_id, member_id=m.member_id)
                    await client.send_request_to_coordinator(group_id, leave, max_version=2)
                    report.expired_by_harness += 1

        def expire_later(client_id: str) -> None:
            def run() -> None:
                d = Deferred.fromCoroutine(expire(client_id))
                d.addErrback(lambda f: print("removing a killed member failed:", f.value))

            reactor.callLater(SESSION_TIMEOUT_MS / 1000, run)  # type: ignore[attr-defined]

        members: list[Any] = [afkak_member(), afkak_member()]
        members += [confluent_member(), confluent_member()]
        producer = Producer(client, linger_ms=5)
        duration = kills * period
        began = time.monotonic()
        next_kill = began + period
        chunk = max(50, int(records * 0.1 / duration))
        try:
            for start in range(0, records, chunk):
                for i in range(start, min(records, start + chunk)):
                    producer.send(topic, b"%d" % i, partition=i % PARTITIONS)
                due = began + duration * min(records, start + chunk) / records
                _drive(lambda: time.monotonic() >= due, timeout=duration + 60)  # noqa: B023
                if time.monotonic() >= next_kill and sum(report.kills.values()) < kills:
                    next_kill += period
                    index = rng.randrange(len(members))
                    victim = members[index]
                    if isinstance(victim, ConsumerGroup):
                        victim.stop().addErrback(lambda f: None)
                        members[index] = afkak_member()
                        report.kills["afkak"] += 1
                    else:
                        victim.kill()
                        victim.wait()
                        if broker.quirks.group_sessions_never_expire:
                            expire_later(client_ids[victim.pid])
                        members[index] = confluent_member()
                        report.kills["confluent-kafka"] += 1
                if progress is not None:
                    progress(len(seen))
            flushed = producer.flush()
            _drive(lambda: flushed.called, timeout=120)

            def all_processed() -> bool:
                done = set(seen) | _read_files(files)
                if progress is not None:
                    progress(len(done))
                return len(done) >= records

            _drive(all_processed, timeout=REBALANCE_TIMEOUT_MS / 1000 * 4 + 30)
            for member in members:
                if isinstance(member, ConsumerGroup):
                    report.states.append(f"afkak {member.state.name} {sorted(member.assignment())}")
        finally:
            for member in members:
                if isinstance(member, ConsumerGroup):
                    stopped = member.stop()
                    _drive(lambda: stopped.called, timeout=20)  # noqa: B023
                else:
                    member.kill()
                    member.wait()
            producer.stop()
            for each in [client, *clients]:
                closed = each.close()
                _drive(lambda: closed.called, timeout=30)  # noqa: B023
        counts = Counter(seen)
        for path in files:
            if os.path.exists(path):  # a member killed before it processed anything
                with open(path) as f:
                    counts.update(int(line) for line in f if line.strip().isdigit())
        report.processed = len(set(counts) & set(range(records)))
        report.lost = records - report.processed
        report.duplicates = sum(n - 1 for n in counts.values() if n > 1)
    return report


def _read_files(paths: list[str]) -> set[int]:
    values: set[int] = set()
    for path in paths:
        if os.path.exists(path):
            with open(path) as f:
                values.update(int(line) for line in f if line.strip().isdigit())
    return values
