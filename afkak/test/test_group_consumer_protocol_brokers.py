"""KIP-848's consumer group protocol on Apache Kafka 4.4: afkak members through a join and a leave.

Each test produces while members join and leave, and checks that every
record was processed once and no partition by two members at once.  The
rebalance is timed for both protocols on the same broker (run with ``-s``
to see the numbers): how long the joining member waits for its partitions,
and how long the first member held no partition at all.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import ConfigResource, KafkaAdminClient
from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST, TopicAndPartition
from afkak.group import ConsumerGroup
from afkak.test.brokers import produce, shared_broker
from afkak.test.brokers.java_tools import (
    AfkakVerifiableConsumer,
    VerifiableConsumer,
    describe_members,
)
from afkak.test.helpers import pump, run_for, wait
from afkak.test.test_group_consumer import Ledger

PARTITIONS = 6
_names = itertools.count()


class _GroupOnKafka(SynchronousTestCase):
    """A fresh topic and group on the shared Kafka broker; members; what they processed."""

    def setUp(self) -> None:
        self.broker = shared_broker("kafka")
        stamp = f"{next(_names)}-{int(time.time() * 1000)}"
        self.topic = f"kip848-{stamp}"
        self.group_id = f"kip848-group-{stamp}"
        self.broker.create_topic(self.topic, PARTITIONS)
        self.ledger = Ledger()
        self.produced: set[tuple[int, int]] = set()

    def produce(self, count: int) -> None:
        for p in range(PARTITIONS):
            self.produced.update(
                produce(self.broker.bootstrap, self.topic, [b"v"] * count, partition=p)
            )

    def member(self, name: str, protocol: str, **options: Any) -> ConsumerGroup:
        client = KafkaClient(
            self.broker.bootstrap, clientId=name, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close()))

        group = ConsumerGroup(
            client,
            self.group_id,
            [] if "pattern" in options else [self.topic],
            self.ledger.processor(name),
            group_protocol=protocol,
            auto_offset_reset=OFFSET_EARLIEST,
            auto_commit_every_ms=500,
            **options,
        )
        done = group.start()
        self.addCleanup(lambda: None if done.called else wait(group.stop(), 30))
        return group

    @property
    def seen(self) -> Counter[tuple[int, int]]:
        """How many times each ``(partition, offset)`` was processed."""
        return Counter(self.ledger.seen)

    @property
    def overlaps(self) -> list[tuple[int, str, str]]:
        return self.ledger.overlaps

    def all_seen(self) -> bool:
        return self.produced <= set(self.seen)


class KafkaConsumerProtocolTests(_GroupOnKafka):
    def join_and_leave(self, protocol: str) -> dict[str, float]:
        """Two members through a join and a leave; the join's timings."""
        self.produce(20)
        a = self.member("a", protocol)
        pump(lambda: len(a.assignment()) == PARTITIONS, 60, "a owns every partition")
        pump(self.all_seen, 60, "a consumed the backlog")
        self.produce(20)
        started = time.monotonic()
        b = self.member("b", protocol)
        a_idle_since: float | None = None
        a_idle = 0.0

        def split() -> bool:
            nonlocal a_idle_since, a_idle
            now = time.monotonic()
            if not a.assignment():
                a_idle_since = a_idle_since or now
            elif a_idle_since is not None:
                a_idle += now - a_idle_since
                a_idle_since = None
            return len(a.assignment()) == len(b.assignment()) == PARTITIONS // 2

        pump(split, 90, "the partitions are split between a and b")
        joined = time.monotonic() - started
        self.produce(20)
        pump(self.all_seen, 60, "a and b consumed everything")
        wait(b.shutdown(), 30)
        self.produce(20)
        pump(lambda: len(a.assignment()) == PARTITIONS, 60, "a owns every partition again")
        pump(self.all_seen, 60, "a consumed what was produced after b left")
        wait(a.shutdown(), 30)
        self.assertEqual(self.overlaps, [])
        self.assertEqual(set(self.seen), self.produced)
        repeated = {k: n for k, n in self.seen.items() if n > 1}
        self.assertEqual(repeated, {}, "every record processed once")
        timings = {"join_s": joined, "first_member_idle_s": a_idle}
        print(f"\n{protocol} protocol on Kafka 4.4: {timings}")
        return timings

    def test_consumer_protocol_members_process_every_record_once(self) -> None:
        timings = self.join_and_leave("consumer")
        self.assertEqual(timings["first_member_idle_s"], 0.0, "no stop-the-world pause")

    def test_classic_protocol_for_comparison(self) -> None:
        self.join_and_leave("classic")


class KafkaConsumerProtocolJavaTests(_GroupOnKafka):
    """An afkak member and Java's VerifiableConsumer (``--group-protocol consumer``), one group."""

    def test_afkak_and_java_members_process_every_record_once(self) -> None:
        self.produce(20)
        a = self.member("a", "consumer")
        pump(lambda: len(a.assignment()) == PARTITIONS, 60, "a owns every partition")
        java_seen: list[tuple[int, int]] = []
        java = VerifiableConsumer(
            self.broker.bootstrap,
            self.topic,
            self.group_id,
            lambda partition, offsets: java_seen.extend((partition, o) for o in offsets),
            protocol="consumer",
        )
        self.addCleanup(java.stop)
        pump(lambda: len(a.assignment()) == PARTITIONS // 2, 90, "the Java member took its half")
        self.produce(20)

        def everything() -> bool:
            return self.produced <= set(self.seen) | set(java_seen)

        pump(everything, 60, "both consumed")
        self.assertTrue(java_seen, "the Java member processed records")
        java.stop()
        self.assertTrue(java.named("shutdown_complete"))
        self.produce(20)
        pump(lambda: len(a.assignment()) == PARTITIONS, 60, "a owns every partition again")
        pump(everything, 60, "a consumed after the Java member left")
        wait(a.shutdown(), 30)
        both = Counter(self.seen) + Counter(java_seen)
        self.assertEqual(set(both), self.produced)
        self.assertEqual({k: n for k, n in both.items() if n > 1}, {}, "every record once")
        self.assertEqual(self.overlaps, [])


class KafkaBrokerSideRegexTests(_GroupOnKafka):
    def test_a_topic_created_later_joins_the_assignment(self) -> None:
        a = self.member("a", "consumer", pattern=re.compile(re.escape(self.topic) + "(-later)?"))
        pump(lambda: len(a.assignment()) == PARTITIONS, 60, "a owns the first topic")
        self.broker.create_topic(self.topic + "-later", 2)
        took = pump(lambda: len(a.assignment()) == PARTITIONS + 2, 120, "the later topic assigned")
        print(f"\nKafka 4.4 assigned a topic created later after {took:.1f} s")
        self.assertEqual({tp.topic for tp in a.assignment()}, {self.topic, self.topic + "-later"})
        wait(a.shutdown(), 30)


class KafkaStaticMemberTests(_GroupOnKafka):
    def test_a_static_member_comes_back_to_its_partitions(self) -> None:
        a = self.member("a", "consumer", group_instance_id="static-a")
        b = self.member("b", "consumer")
        pump(lambda: len(a.assignment()) == len(b.assignment()) == 3, 90, "a and b split")
        held = a.assignment()
        wait(a.shutdown(), 30)  # epoch -2: the broker keeps a's partitions for it
        run_for(5)
        self.assertEqual(len(b.assignment()), 3, "a's partitions wait for it")
        again = self.member("a-again", "consumer", group_instance_id="static-a")
        pump(lambda: again.assignment() == held, 60, "a is back on its partitions")
        wait(again.shutdown(), 30)
        wait(b.shutdown(), 30)


class KafkaConsumerGroupDescribeTests(_GroupOnKafka):
    """describe_consumer_groups (ConsumerGroupDescribe) against ``kafka-consumer-groups
    --describe --members --verbose`` on one group of afkak and Java members."""

    def test_describe_matches_kafka_consumer_groups(self) -> None:
        a = self.member("a", "consumer")
        b = self.member("b", "consumer")
        java = VerifiableConsumer(
            self.broker.bootstrap, self.topic, self.group_id, lambda p, o: None, protocol="consumer"
        )
        self.addCleanup(java.stop)
        pump(lambda: len(a.assignment()) == len(b.assignment()) == 2, 120, "three members split")
        client = KafkaClient(self.broker.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        admin = KafkaAdminClient(client)

        def stable() -> Any:
            d = wait(admin.describe_consumer_groups([self.group_id]))[self.group_id]
            return d if d.state == "Stable" and len(d.members) == 3 else None

        pump(lambda: stable() is not None, 60, "the group is Stable")
        rows = describe_members(self.broker.bootstrap, self.group_id)
        described = stable()
        print(f"\nkafka-consumer-groups: {rows}\nafkak: {described}")
        self.assertIsNotNone(described)
        self.assertEqual((described.group_type, described.protocol), ("consumer", "uniform"))
        self.assertEqual(described.group_epoch, described.assignment_epoch)
        by_id = {m.member_id: m for m in described.members}
        self.assertEqual({r["CONSUMER-ID"] for r in rows}, set(by_id))
        for row in rows:
            m = by_id[row["CONSUMER-ID"]]
            self.assertEqual(row["CLIENT-ID"], m.client_id)
            self.assertEqual(row["HOST"], m.client_host)
            self.assertEqual(int(row["#PARTITIONS"]), len(m.assignment))
            self.assertEqual(int(row["CURRENT-EPOCH"]), m.member_epoch)
            self.assertEqual(int(row["TARGET-EPOCH"]), described.assignment_epoch)
            self.assertEqual(_assignment(row["CURRENT-ASSIGNMENT"]), set(m.assignment))
            self.assertEqual(_assignment(row["TARGET-ASSIGNMENT"]), set(m.target_assignment))
            self.assertEqual((m.upgraded, m.topics, m.topic_regex), (True, (self.topic,), None))
        wait(a.shutdown(), 30)
        wait(b.shutdown(), 30)


def _assignment(cell: str) -> set[TopicAndPartition]:
    """``kafka-consumer-groups``' assignment cell: ``topic:0,1`` per topic, or ``-``."""
    found = set()
    for topic, partitions in re.findall(r"([^:,;()]+):([\d,]+)", cell):
        found.update(TopicAndPartition(topic, int(p)) for p in partitions.split(",") if p)
    return found


class KafkaOnlineUpgradeTests(_GroupOnKafka):
    """Kafka's online upgrade and downgrade (``group.consumer.migration.policy``, by
    default "bidirectional" in Kafka 4): a group's members replaced one by one by members
    of the other protocol while the group keeps consuming."""

    def describe(self) -> Any:
        return wait(self.admin.describe_consumer_groups([self.group_id]))[self.group_id]

    def replace(self, old: ConsumerGroup, name: str, protocol: str) -> ConsumerGroup:
        """Start *name* on *protocol* beside *old*, then stop *old*; everything consumed."""
        new = self.member(name, protocol)
        pump(lambda: bool(new.assignment()), 120, f"{name} ({protocol}) took partitions")
        self.produce(10)
        pump(self.all_seen, 60, f"consumed with {name} beside the old member")
        wait(old.shutdown(), 30)
        self.produce(10)
        pump(self.all_seen, 60, f"consumed after {name} replaced the old member")
        return new

    def test_classic_to_consumer_and_back_member_by_member(self) -> None:
        client = KafkaClient(self.broker.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        self.admin = KafkaAdminClient(client)
        policy = "group.consumer.migration.policy"
        node = wait(self.admin.describe_cluster()).brokers[0].node_id
        resource = ConfigResource.broker(node)
        config = wait(self.admin.describe_configs([resource], keys=[policy]))[resource]
        self.assertEqual(config.entries[policy].value, "bidirectional")  # Kafka 4's default

        self.produce(20)
        a, b = self.member("a", "classic"), self.member("b", "classic")
        pump(lambda: len(a.assignment()) + len(b.assignment()) == PARTITIONS, 120, "classic")
        pump(self.all_seen, 60, "the classic group consumed the backlog")
        self.assertEqual(self.describe().group_type, "classic")
        # Upgrade: the first consumer-protocol member turns the group into a consumer group.
        a2 = self.replace(a, "a2", "consumer")
        half = self.describe()
        self.assertEqual(half.group_type, "consumer")
        self.assertEqual({m.client_id: m.upgraded for m in half.members}, {"a2": True, "b": False})
        b2 = self.replace(b, "b2", "consumer")
        self.assertEqual(self.describe().group_type, "consumer")
        # Downgrade: once the last consumer-protocol member leaves, a classic group again.
        a3 = self.replace(a2, "a3", "classic")
        half = self.describe()
        self.assertEqual(
            (half.group_type, {m.client_id: m.upgraded for m in half.members}),
            ("consumer", {"a3": False, "b2": True}),
        )
        b3 = self.replace(b2, "b3", "classic")
        pump(lambda: self.describe().group_type == "classic", 60, "a classic group again")
        self.produce(10)
        pump(self.all_seen, 60, "the classic group consumed")
        wait(a3.shutdown(), 30)
        wait(b3.shutdown(), 30)
        self.assertEqual(set(self.seen), self.produced)
        self.assertEqual(self.overlaps, [])
        repeated = sum(n - 1 for n in self.seen.values())
        print(f"\nonline upgrade and downgrade: {len(self.produced)} records, {repeated} repeated")
        self.assertEqual(repeated, 0, "every record processed once")


class KafkaConsumerProtocolFaultTests(_GroupOnKafka):
    """Two afkak members (child processes) and two Java ``VerifiableConsumer``s on the
    consumer protocol in one group, through a kill -9 of one of each while records
    arrive and a kill -9 and restart (with its data) of the broker."""

    def test_kills_and_a_broker_restart_lose_nothing(self) -> None:
        rows: list[tuple[str, int, int]] = []

        def member(name: str, kind: type[VerifiableConsumer]) -> VerifiableConsumer:
            def on_records(partition: int, offsets: list[int]) -> None:
                rows.extend((name, partition, o) for o in offsets)

            tool = kind(
                self.broker.bootstrap, self.topic, self.group_id, on_records, protocol="consumer"
            )
            self.addCleanup(tool.kill)
            return tool

        def processed() -> set[tuple[int, int]]:
            return {(p, o) for _, p, o in rows}

        def everything() -> bool:
            return self.produced <= processed()

        client = KafkaClient(self.broker.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        admin = KafkaAdminClient(client)

        def committed() -> dict[int, int]:
            offsets = wait(admin.list_consumer_group_offsets(self.group_id, [self.topic]))
            return {tp.partition: o for tp, o in offsets.items()}

        self.produce(30)
        a, b = member("a", AfkakVerifiableConsumer), member("b", AfkakVerifiableConsumer)
        j1, j2 = member("j1", VerifiableConsumer), member("j2", VerifiableConsumer)
        pump(lambda: all(m.assigned for m in (a, b, j1, j2)), 180, "four members share the topic")
        pump(everything, 60, "the backlog consumed")
        # kill -9 an afkak and a Java member while records arrive.
        killed = b.assigned | j1.assigned
        arriving: set[tuple[int, int]] = set()
        for p in killed:
            arriving |= set(produce(self.broker.bootstrap, self.topic, [b"k"] * 50, partition=p))
        self.produced |= arriving

        def reading() -> set[str]:
            return {name for name, p, o in rows if (p, o) in arriving}

        pump(lambda: reading() >= {"b", "j1"}, 60, "b and j1 read the arriving records")
        b.kill()
        j1.kill()
        before_kills = committed()
        self.produce(20)
        took = pump(lambda: len(a.assigned | j2.assigned) == PARTITIONS, 150, "b, j1 fenced")
        pump(everything, 60, "everything consumed after the kills")
        # kill -9 the broker and start it again with its data.
        before_restart = committed()
        self.broker.kill()
        run_for(2)
        self.broker.restart()
        self.produce(20)
        pump(everything, 180, "everything consumed after the broker restart")
        self.assertIsNone(a.process.poll(), "the afkak member lived through the restart")
        a.stop()
        j2.stop()
        self.assertEqual(processed(), self.produced)
        counts = Counter((p, o) for _, p, o in rows)
        twice = {k for k, n in counts.items() if n > 1}
        window = {
            (p, o)
            for name, p, o in rows
            if (name in ("b", "j1") and p in killed and o >= before_kills.get(p, 0))
            or o >= before_restart.get(p, 0)
        }
        print(
            f"\nKIP-848 kills and broker restart: {len(self.produced)} records, killed members'"
            f" partitions moved after {took:.1f} s, read twice: {len(twice)}"
            f" (uncommitted windows: {len(window)})"
        )
        self.assertLessEqual(twice, window, "only uncommitted records are read twice")
