"""Consumer groups on real Kafka-protocol brokers, mixed with librdkafka members.

The global reactor is driven with ``reactor.iterate()`` (see
:mod:`afkak.test.test_client_brokers`); a confluent-kafka consumer, when in
the group, polls in a thread of its own.  Rebalance times are printed (run
with ``-s`` to see them).  The brokers' group-handling deviations found
here are in ``GROUP_QUIRKS``; the harness works around them in the tests.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
import unittest
from collections import Counter
from typing import Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST, TopicAndPartition
from afkak.consumer import OffsetAndMetadata
from afkak.group import ConsumerGroup, describe_group, group_lag, list_groups
from afkak.test.brokers import Broker, client_config, produce, shared_broker
from afkak.test.helpers import pump, wait
from afkak.test.test_group_consumer import abandon

_names = itertools.count()
#: Versions of (JoinGroup, Heartbeat, LeaveGroup, SyncGroup) the mock handles.
_MOCK_GROUP_CAPS = ((11, 5), (12, 3), (13, 2), (14, 3))
#: How each broker's group coordinator differs from Kafka's, as observed here.
GROUP_QUIRKS: dict[str, dict[str, str]] = {
    "tansu": {
        "join_waits_half_session": "each JoinGroup is held session_timeout / 2: short sessions",
        "static_membership_broken": (
            "a static member's SyncGroup is never answered; the group rebalances over and over"
        ),
        "leave_during_sync_stalls": (
            "a member leaving (LeaveGroup) while another member's SyncGroup waits: that "
            "SyncGroup is never answered and the group rebalances over and over"
        ),
        "partial_group_inspection": (
            "DescribeGroups omits the protocol and each member's client id, metadata and "
            "assignment; ListGroups answers no groups; OffsetFetch of all topics answers null"
        ),
        "consumer_group_describe_of_any_group": (
            "ConsumerGroupDescribe (KIP-848) answers every group id, classic or unknown, "
            "with an Empty group of no members and error 0 (Kafka: GROUP_ID_NOT_FOUND, on "
            "which describe_consumer_groups falls back to DescribeGroups, as Java's does)"
        ),
    },
    "noida": {
        "cooperative_stalls": (
            "the second JoinGroup round of a cooperative rebalance never completes "
            "(librdkafka's cooperative-sticky stalls too): groups rebalance eagerly here"
        ),
        "commits_refused_while_rebalancing": (
            "a new member's JoinGroup ends the current generation at once: the old "
            "members' commits (also those made while revoking) get ILLEGAL_GENERATION, "
            "so their uncommitted records are read again"
        ),
        "no_session_expiry": "a member that stops heartbeating is never dropped from the group",
    },
    "rdkafka_mock": {
        "commits_refused_while_rebalancing": (
            "OffsetCommit is refused (REBALANCE_IN_PROGRESS, then ILLEGAL_GENERATION) until "
            "every member has synced, so records processed during a rebalance may be read "
            "again; a follower's SyncGroup may fail with a null assignment, which does not "
            "decode (the member rejoins); each rebalance takes about 5 s"
        ),
        "static_rejoin_rebalances": (
            "a static member rejoining within its session triggers a rebalance (Kafka hands "
            "it its assignment back without one)"
        ),
        "flexible_group_apis_break": (
            "JoinGroup v6+, SyncGroup v4+ and Heartbeat v4+ close the connection or crash the "
            "cluster, LeaveGroup v3+ is misread: the harness caps these versions"
        ),
    },
}
#: Records in the mixed-group test (the issue asks 50,000).
MIXED_RECORDS = int(os.environ.get("AFKAK_GROUP_TEST_RECORDS", "50000"))


def _offset(offset: int | None) -> int:
    return -1 if offset is None else offset


class Events:
    """Every record any member processed: (time, member, partition, offset)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[float, str, int, int]] = []

    def add(self, member: str, partition: int, offsets: list[int]) -> None:
        now = time.monotonic()
        with self.lock:
            self.rows.extend((now, member, partition, o) for o in offsets)

    def processed(self) -> set[tuple[int, int]]:
        with self.lock:
            return {(p, o) for _, _, p, o in self.rows}

    def afkak_processor(self, member: str) -> Any:
        def process(consumer: Any, messages: list[Any]) -> None:
            self.add(member, consumer.partition, [m.offset for m in messages])

        return process

    def owner_runs(self) -> dict[int, list[str]]:
        """Per partition, the owners in processing order, consecutive repeats merged."""
        runs: dict[int, list[str]] = {}
        with self.lock:
            rows = sorted(self.rows)
        for _, member, p, _ in rows:
            seq = runs.setdefault(p, [])
            if not seq or seq[-1] != member:
                seq.append(member)
        return runs


class ConfluentMember:
    """A librdkafka consumer in the group, polling in a thread."""

    def __init__(
        self, broker: Broker, group: str, topic: str, strategy: str, session_ms: int, events: Events
    ) -> None:
        import confluent_kafka

        self.events = events
        self.assigned: set[int] = set()
        self.consumer = confluent_kafka.Consumer(
            client_config(
                broker.bootstrap,
                **{
                    "group.id": group,
                    "client.id": "librdkafka",
                    "partition.assignment.strategy": strategy,
                    "session.timeout.ms": session_ms,
                    "heartbeat.interval.ms": max(100, session_ms // 4),
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": True,
                    "auto.commit.interval.ms": 200,
                    "fetch.wait.max.ms": 100,
                },
            )
        )
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, consumer: Any, partitions: Any) -> None:
        self.assigned |= {p.partition for p in partitions}

    def _revoke(self, consumer: Any, partitions: Any) -> None:
        self.assigned -= {p.partition for p in partitions}

    def _run(self) -> None:
        while not self.stopping.is_set():
            batch = self.consumer.consume(500, timeout=0.05)
            by_partition: dict[int, list[int]] = {}
            for msg in batch:
                if msg.error() is None:
                    by_partition.setdefault(msg.partition(), []).append(msg.offset())
            for p, offsets in by_partition.items():
                self.events.add("librdkafka", p, offsets)
        self.consumer.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(30)


class StuckProcessor:
    """A processor that, once :attr:`armed`, does not return from its next call."""

    def __init__(self, plain: Any) -> None:
        self.plain = plain
        self.armed = False
        self.stuck: list[Deferred[None]] = []

    def __call__(self, consumer: Any, messages: list[Any]) -> Any:
        self.plain(consumer, messages)
        if self.armed and not self.stuck:
            self.stuck.append(Deferred())
            return self.stuck[0]
        return None


class GroupBrokerFixture:
    """A topic, a group id, afkak members and every record they process, on one broker."""

    broker_name: ClassVar[str]
    strategy: ClassVar[str] = "cooperative-sticky"
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        if self.broker_name == "rdkafka_mock":
            for api_key, highest in _MOCK_GROUP_CAPS:
                self.broker.set_apiversion(api_key, 0, highest)  # type: ignore[attr-defined]
        n = next(_names)
        self.topic = f"group-{self.broker_name}-{n}-{os.getpid()}"
        self.group_id = f"{self.topic}-g"
        self.session_ms = 2000 if self.quirk("join_waits_half_session") else 6000
        self.events = Events()
        self.produced: set[tuple[int, int]] = set()
        self.clients: list[KafkaClient] = []
        self.groups: list[ConsumerGroup] = []
        self.addCleanup(self._cleanup)  # type: ignore[attr-defined]

    def _cleanup(self) -> None:
        for g in self.groups:
            if g._start_d is not None:
                try:
                    wait(g.stop(), 20)
                except Exception:
                    pass
        for c in self.clients:
            wait(c.close())

    def client(self, name: str) -> KafkaClient:
        client = KafkaClient(
            self.broker.bootstrap,
            clientId=name,
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.clients.append(client)
        return client

    def member(
        self, name: str, instance: str | None = None, processor: Any = None, **options: Any
    ) -> ConsumerGroup:
        settings: dict[str, Any] = {
            "assignors": [self.strategy],
            "session_timeout_ms": self.session_ms,
            "heartbeat_interval_ms": self.session_ms // 4,
            "rebalance_timeout_ms": 20000,
            "group_instance_id": instance,
            "auto_offset_reset": OFFSET_EARLIEST,
            "auto_commit_every_ms": 200,
            "fetch_max_wait_time": 100,
            **options,
        }
        group = ConsumerGroup(
            self.client(name),
            self.group_id,
            [] if "pattern" in options else [self.topic],
            processor or self.events.afkak_processor(name),
            **settings,
        )
        self.groups.append(group)
        return group

    def produce(self, start: int, count: int) -> None:
        values = (b"%d" % i for i in range(start, start + count))
        self.produced.update(produce(self.broker.bootstrap, self.topic, values, timeout=30))

    def quirk(self, name: str) -> bool:
        return name in GROUP_QUIRKS.get(self.broker_name, {})

    def report(self, what: str, seconds: float) -> None:
        print(f"[{self.broker_name}] {what}: {seconds:.2f} s")

    def pattern_picks_up_a_later_topic(self, metadata_max_age_ms: int) -> float:
        """A pattern member of the group consumes a matching topic created later;
        seconds from that topic's creation to its assignment."""
        self.broker.create_topic(self.topic, 1)
        self.produce(0, 5)
        pattern = re.compile(re.escape(self.topic) + r"(-later)?")
        a = self.member("a", pattern=pattern, metadata_max_age_ms=metadata_max_age_ms)
        a.start()
        pump(lambda: self.events.processed() == self.produced, 30, "the first topic")
        later = f"{self.topic}-later"
        self.broker.create_topic(later, 1)
        created = time.monotonic()
        produce(self.broker.bootstrap, later, [b"x", b"y"], timeout=30)
        pump(lambda: TopicAndPartition(later, 0) in a.assignment(), 60, "the new topic assigned")
        took = time.monotonic() - created
        pump(lambda: len(self.events.rows) >= 7, 30, "its records consumed")
        return took

    def kill(self, group: ConsumerGroup) -> None:
        """The process dies: its consumers and connections vanish; nobody says goodbye."""
        abandon(group)
        self.groups.remove(group)
        self.clients.remove(group.client)
        wait(group.client.close())


class RealBrokerGroupTests(GroupBrokerFixture):
    """Mixed into one SynchronousTestCase per broker kind."""

    def test_join_split_and_leave(self: Any) -> None:
        self.broker.create_topic(self.topic, 6)
        self.produce(0, 600)
        a = self.member("a")
        done_a = a.start()
        self.report(
            "first member stable", pump(lambda: len(a.partition_consumers) == 6, 30, "a owns all")
        )
        b = self.member("b")
        b.start()
        joined = pump(
            lambda: len(a.assignment()) == 3 and len(b.partition_consumers) == 3,
            40,
            "a and b split",
        )
        self.report(f"member joins ({self.strategy})", joined)
        pump(lambda: len(self.events.processed()) >= 600, 30, "all consumed")
        start = time.monotonic()
        wait(b.shutdown(), 30)
        pump(lambda: len(a.partition_consumers) == 6, 40, "a takes b's partitions")
        self.report("member leaves", time.monotonic() - start)
        self.produce(600, 60)
        pump(lambda: len(self.events.processed()) >= 660, 30, "new records consumed")
        offsets = wait(a.shutdown(), 30)
        self.assertEqual(wait(done_a), offsets)
        self.assertEqual(len(offsets), 6)
        self.assertEqual(self.events.processed(), {(p, o) for p, o in self.events.processed()})
        rows = [(p, o) for _, _, p, o in self.events.rows]
        if not self.quirk("commits_refused_while_rebalancing"):
            self.assertEqual(len(rows), len(set(rows)), "handovers committed: nothing re-read")

    def test_new_group_reads_the_backlog(self: Any) -> None:
        """An afkak 21-style group (consumer_kwargs, no auto_offset_reset) on a topic
        with a backlog and no committed offsets reads all of it (issue 20)."""
        self.broker.create_topic(self.topic, 3)
        self.produce(0, 90)
        group = ConsumerGroup(
            self.client("a21"),
            self.group_id,
            [self.topic],
            self.events.afkak_processor("a21"),
            consumer_kwargs={"fetch_max_wait_time": 100},
            assignors=[self.strategy],
            session_timeout_ms=self.session_ms,
            heartbeat_interval_ms=self.session_ms // 4,
        )
        self.groups.append(group)
        group.start()
        pump(lambda: self.events.processed() == self.produced, 60, "the backlog consumed")
        wait(group.shutdown(), 30)

    def test_seek_pause_and_commit_explicit_offsets(self: Any) -> None:
        """Issue 22's position control against the broker's group coordinator."""
        self.broker.create_topic(self.topic, 2)
        self.produce(0, 20)
        a = self.member("a", auto_commit_every_ms=0)
        a.start()
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        t0, t1 = TopicAndPartition(self.topic, 0), TopicAndPartition(self.topic, 1)
        before = len(self.events.rows)
        count0 = sum(1 for p, _ in self.produced if p == 0)
        a.seek_to_beginning(t0)
        pump(lambda: len(self.events.rows) >= before + count0, 30, "t0 read again")
        a.pause(t1)
        fresh = {
            p: set(produce(self.broker.bootstrap, self.topic, [b"new"] * 3, partition=p))
            for p in (0, 1)
        }
        self.produced |= fresh[0] | fresh[1]
        pump(lambda: fresh[0] <= self.events.processed(), 30, "t0's new records")
        later = time.monotonic() + 1.0  # time enough for t1's records, were it fetched
        pump(lambda: time.monotonic() > later, 5, "a second")
        self.assertFalse(fresh[1] & self.events.processed(), "t1 is paused")
        a.resume(t1)
        pump(lambda: self.events.processed() == self.produced, 30, "t1 after resume")
        wait(a.commit({t0: OffsetAndMetadata(3, "by hand")}), 30)
        committed = wait(a.committed(t0), 30)
        self.assertEqual(committed.offset, 3)
        self.assertEqual(wait(a.position(t1)), max(o for p, o in self.produced if p == 1) + 1)
        wait(a.stop(), 30)

    def test_pattern_subscription_picks_up_a_new_topic(self: Any) -> None:
        self.report("pattern picks up a new topic", self.pattern_picks_up_a_later_topic(1000))

    def test_stuck_processor_gives_its_partitions_away(self: Any) -> None:
        if self.quirk("leave_during_sync_stalls"):
            raise unittest.SkipTest(GROUP_QUIRKS[self.broker_name]["leave_during_sync_stalls"])
        self.broker.create_topic(self.topic, 2)
        self.produce(0, 20)
        sticky = StuckProcessor(self.events.afkak_processor("a"))
        a = self.member("a", processor=sticky, max_poll_interval_ms=3000)
        b = self.member("b", max_poll_interval_ms=3000)
        a.start()
        b.start()
        pump(
            lambda: len(a.partition_consumers) == 1 and len(b.partition_consumers) == 1,
            60,
            "a and b split",
        )
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        sticky.armed = True  # a's next call never returns
        for p in (0, 1):
            self.produced.update(
                produce(self.broker.bootstrap, self.topic, [b"late"] * 5, partition=p, timeout=30)
            )
        pump(lambda: bool(sticky.stuck), 30, "a's processor is stuck")
        t = pump(lambda: len(b.assignment()) == 2, 90, "b owns both partitions")
        self.report("a stuck processor's partitions move", t)
        pump(lambda: self.events.processed() == self.produced, 30, "b read them")
        sticky.stuck[0].callback(None)
        pump(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 60, "a is back")

    def test_inspection(self: Any) -> None:
        self.broker.quirks.skip_if("supports_describe_groups")
        if self.quirk("consumer_group_describe_of_any_group"):
            raise unittest.SkipTest(
                GROUP_QUIRKS[self.broker_name]["consumer_group_describe_of_any_group"]
            )
        self.broker.create_topic(self.topic, 3)
        self.produce(0, 30)
        a = self.member("a")
        a.start()
        pump(lambda: len(self.events.processed()) == 30, 30, "consumed")
        admin = self.client("admin")
        desc = wait(describe_group(admin, self.group_id))
        self.assertEqual((desc.state, desc.protocol_type), ("Stable", "consumer"))
        self.assertEqual([m.member_id for m in desc.members], [a.member.member_id])
        if not self.quirk("partial_group_inspection"):
            self.assertEqual(desc.protocol, self.strategy)
            self.assertEqual(sorted(desc.members[0].assignment), sorted(a.assignment()))
            self.assertEqual(desc.members[0].topics, (self.topic,))
            listed = {g.group_id: g for g in wait(list_groups(admin))}
            self.assertEqual(listed[self.group_id].protocol_type, "consumer")
        wait(a.shutdown(), 30)
        for _ in range(3):  # one batch each: Tansu's LATEST is its last batch's base + 1
            produce(self.broker.bootstrap, self.topic, [b"late"], partition=0)
        lag = wait(group_lag(admin, self.group_id, [self.topic]))
        self.assertEqual(lag[TopicAndPartition(self.topic, 0)].lag, 3)
        self.assertEqual(len(lag), 3)

    def test_static_member_restarts_into_its_assignment(self: Any) -> None:
        if self.quirk("static_membership_broken"):
            raise unittest.SkipTest(GROUP_QUIRKS[self.broker_name]["static_membership_broken"])
        self.broker.create_topic(self.topic, 4)
        a, b = self.member("a", instance="instance-1"), self.member("b")
        a.start()
        b.start()
        pump(
            lambda: len(a.partition_consumers) == 2 and len(b.partition_consumers) == 2,
            40,
            "a and b split",
        )
        generation, owned = b.member.generation_id, a.assignment()
        wait(a.shutdown(), 30)  # a static member sends no LeaveGroup
        again = self.member("a-again", instance="instance-1")
        again.start()
        t = pump(lambda: len(again.partition_consumers) == 2, 40, "the static member is back")
        self.report("static member restarts", t)
        self.assertEqual(again.assignment(), owned)
        if not self.quirk("static_rejoin_rebalances"):
            self.assertEqual(b.member.generation_id, generation, "no rebalance")

    def test_mixed_group_with_librdkafka(self: Any) -> None:
        """Two afkak members and one librdkafka consumer share a 6-partition topic
        while a member joins, one leaves and one is killed."""
        self.broker.create_topic(self.topic, 6)
        total = MIXED_RECORDS
        quarter = total // 4
        started = time.monotonic()
        self.produce(0, quarter)
        a = self.member("a")
        a.start()
        confluent = ConfluentMember(
            self.broker, self.group_id, self.topic, self.strategy, self.session_ms, self.events
        )
        self.addCleanup(confluent.close)
        t = pump(
            lambda: (
                len(a.assignment()) + len(confluent.assigned) == 6
                and confluent.assigned
                and a.assignment()
            ),
            60,
            "afkak + librdkafka share the topic",
        )
        self.report("afkak + librdkafka stable", t)
        self.produce(quarter, quarter)
        b = self.member("b")  # a member joins, with records arriving
        b.start()
        self.produce(2 * quarter, quarter // 2)
        t = pump(
            lambda: (
                b.assignment()
                and len(a.assignment()) + len(b.assignment()) + len(confluent.assigned) == 6
            ),
            60,
            "b joins",
        )
        self.report("third member joins", t)
        self.produce(2 * quarter + quarter // 2, quarter - quarter // 2)
        start = time.monotonic()
        wait(a.shutdown(), 30)  # a member leaves
        t = pump(
            lambda: (
                len(b.assignment()) + len(confluent.assigned) == 6
                and len(b.partition_consumers) == len(b.assignment())
            ),
            60,
            "a leaves",
        ) + (time.monotonic() - start)
        self.report("member leaves", t)
        # b dies: no LeaveGroup, no final commits; its session must expire.
        uncommitted = sum(
            max(0, _offset(c.last_processed_offset) - _offset(c.last_committed_offset))
            for c in b.partition_consumers.values()
        )
        b_partitions = {tp.partition for tp in b.assignment()}
        if self.quirk("no_session_expiry"):
            wait(b.stop(), 30)  # killed, it would hold its partitions forever
        else:
            self.kill(b)
        self.produce(3 * quarter, total - 3 * quarter)
        start = time.monotonic()
        t = pump(
            lambda: len(confluent.assigned) == 6, 60, "librdkafka takes over after b's session"
        )
        self.report(f"killed member replaced (session {self.session_ms} ms)", t)
        self.assertEqual(len(self.produced), total)
        pump(lambda: self.events.processed() >= self.produced, 120, "every record processed")
        self.report(f"{total} records, whole test", time.monotonic() - started)
        rows = Counter((p, o) for _, _, p, o in self.events.rows)
        duplicates = {k: n for k, n in rows.items() if n > 1}
        print(
            f"[{self.broker_name}] duplicates: {sum(duplicates.values()) - len(duplicates)}; "
            f"b's uncommitted at its death: {uncommitted}"
        )
        if not self.quirk("commits_refused_while_rebalancing"):
            self.assertLessEqual(
                sum(duplicates.values()) - len(duplicates), max(uncommitted, 0) + 6 * 500
            )
        for p, owners in self.events.owner_runs().items():
            self.assertLessEqual(len(owners), 5, f"partition {p} changed hands too often: {owners}")
        self.assertTrue(b_partitions)


class KafkaGroupTests(RealBrokerGroupTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuGroupTests(RealBrokerGroupTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaGroupTests(RealBrokerGroupTests, SynchronousTestCase):
    broker_name = "noida"
    strategy = "range"


class RdkafkaMockGroupTests(RealBrokerGroupTests, SynchronousTestCase):
    broker_name = "rdkafka_mock"

    def test_heartbeat_errors_from_the_broker(self) -> None:
        """Heartbeats answered REBALANCE_IN_PROGRESS, then UNKNOWN_MEMBER_ID: the member
        rejoins, then joins again as a new member, and keeps consuming."""
        mock: Any = self.broker
        self.broker.create_topic(self.topic, 3)
        self.produce(0, 30)
        a = self.member("a")
        a.start()
        pump(lambda: len(self.events.processed()) == 30, 30, "consumed")
        generation = a.member.generation_id
        mock.push_request_errors(12, 27)  # Heartbeat: REBALANCE_IN_PROGRESS
        t = pump(
            lambda: a.member.generation_id > generation and len(a.partition_consumers) == 3,
            60,
            "rejoined after REBALANCE_IN_PROGRESS",
        )
        self.report("heartbeat REBALANCE_IN_PROGRESS: rejoined", t)
        member_id = a.member.member_id
        mock.push_request_errors(12, 25)  # Heartbeat: UNKNOWN_MEMBER_ID
        t = pump(
            lambda: a.member.member_id not in ("", member_id) and len(a.partition_consumers) == 3,
            60,
            "a new member after UNKNOWN_MEMBER_ID",
        )
        self.report("fenced (UNKNOWN_MEMBER_ID): rejoined", t)
        self.produce(30, 30)
        pump(lambda: len(self.events.processed()) == 60, 30, "consumed after rejoining")
