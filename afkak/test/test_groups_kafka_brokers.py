"""afkak's consumer groups beside Kafka's Java consumer, on Apache Kafka (issues 19, 22).

afkak ``ConsumerGroup`` members and Java ``VerifiableConsumer`` members (classic
protocol, the same assignor) share one group; Kafka's ``kafka-consumer-groups``
describes afkak's group.  Java members are counted from their ``records_consumed``
events, afkak's from their processor, into one :class:`Events`.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from afkak.common import TopicAndPartition
from afkak.consumer import OffsetAndMetadata
from afkak.group import group_lag
from afkak.test.brokers import produce
from afkak.test.brokers.java_tools import VerifiableConsumer, describe_group
from afkak.test.helpers import pump, wait
from afkak.test.test_group_brokers import GroupBrokerFixture, StuckProcessor


class KafkaJavaGroupFixture(GroupBrokerFixture):
    broker_name = "kafka"

    def java(self, name: str, instance: str | None = None) -> VerifiableConsumer:
        """A Java member of the group (static with *instance*), its records counted
        as *name*'s."""
        java = VerifiableConsumer(
            self.broker.bootstrap,
            self.topic,
            self.group_id,
            lambda partition, offsets: self.events.add(name, partition, offsets),
            strategy=self.strategy,
            session_timeout_ms=self.session_ms,
            group_instance_id=instance,
            config={"max.poll.records": "50", "fetch.max.wait.ms": "100"},
        )
        self.addCleanup(java.stop)  # type: ignore[attr-defined]
        return java


class KafkaMixedJavaGroupTests(KafkaJavaGroupFixture):
    """Joins, a leave and a kill -9 of a Java member, with records arriving throughout."""

    def test_every_record_once_through_joins_leaves_and_a_kill(self: Any) -> None:
        self.broker.create_topic(self.topic, 6)
        self.produce(0, 300)
        a = self.member("a")
        a.start()
        j1 = self.java("j1")
        pump(
            lambda: a.assignment() and j1.assigned and len(a.assignment()) + len(j1.assigned) == 6,
            60,
            "afkak + Java share the topic",
        )
        self.produce(300, 300)
        b = self.member("b")  # an afkak member joins
        b.start()
        j2 = self.java("j2")  # and a Java member
        pump(
            lambda: (
                b.assignment()
                and j2.assigned
                and len(a.assignment()) + len(b.assignment()) + len(j1.assigned | j2.assigned) == 6
            ),
            60,
            "b and j2 join",
        )
        self.produce(600, 300)
        wait(a.shutdown(), 30)  # an afkak member leaves
        pump(
            lambda: (
                len(b.assignment()) + len(j1.assigned) + len(j2.assigned) == 6
                and len(b.partition_consumers) == len(b.assignment())
            ),
            60,
            "a leaves",
        )
        arriving: set[tuple[int, int]] = set()
        for p in set(j1.assigned):  # records into j1's partitions, to kill it while reading
            arriving |= set(produce(self.broker.bootstrap, self.topic, [b"j1"] * 50, partition=p))
        self.produced |= arriving
        pump(
            lambda: any(m == "j1" and (p, o) in arriving for _, m, p, o in self.events.rows),
            30,
            "j1 reads the arriving records",
        )
        j1.kill()  # kill -9 while records arrive: no LeaveGroup, no last commit
        start = time.monotonic()
        self.produce(900, 300)
        t = pump(
            lambda: len(b.assignment()) + len(j2.assigned) == 6,
            60,
            "j1's partitions move after its session",
        )
        self.report(f"[{self.strategy}] killed Java member replaced", time.monotonic() - start)
        pump(lambda: self.events.processed() >= self.produced, 60, "every record processed")
        self.assertEqual(len(self.produced), 1200 + len(arriving))
        # Only what j1 read after its last commit is read twice.
        committed: dict[int, int] = {}
        for event in j1.named("offsets_committed"):
            for o in event.get("offsets", ()):
                committed[o["partition"]] = max(committed.get(o["partition"], 0), o["offset"])
        window = {
            (p, o) for _, m, p, o in self.events.rows if m == "j1" and o >= committed.get(p, 0)
        }
        rows = Counter((p, o) for _, _, p, o in self.events.rows)
        twice = {k for k, n in rows.items() if n > 1}
        print(f"[{self.strategy}] read twice: {len(twice)}, j1's uncommitted window: {len(window)}")
        self.assertLessEqual(twice, window, "only j1's uncommitted records are read twice")
        self.assertTrue(t >= 0)


class KafkaRangeJavaGroupTests(KafkaMixedJavaGroupTests, SynchronousTestCase):
    strategy = "range"


class KafkaRoundRobinJavaGroupTests(KafkaMixedJavaGroupTests, SynchronousTestCase):
    strategy = "roundrobin"


class KafkaCooperativeStickyJavaGroupTests(KafkaMixedJavaGroupTests, SynchronousTestCase):
    strategy = "cooperative-sticky"


class KafkaGroupControlTests(KafkaJavaGroupFixture, SynchronousTestCase):
    """kafka-consumer-groups, position control and liveness in groups Java shares."""

    strategy = "range"

    def test_consumer_groups_command_describes_afkak_offsets_and_lag(self) -> None:
        self.broker.create_topic(self.topic, 3)
        self.produce(0, 30)
        a = self.member("a", auto_commit_every_ms=0)
        a.start()
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        t0 = TopicAndPartition(self.topic, 0)
        wait(a.commit({t0: OffsetAndMetadata(2, "by hand")}), 30)
        wait(a.commit({tp: OffsetAndMetadata(1, "") for tp in a.assignment() if tp != t0}), 30)
        for p in range(3):
            produce(self.broker.bootstrap, self.topic, [b"late"] * (p + 1), partition=p)
        lag = wait(group_lag(self.client("admin"), self.group_id, [self.topic]))
        rows = describe_group(self.broker.bootstrap, self.group_id)
        self.assertEqual(len(rows), 3)
        for (topic, p), row in rows.items():
            mine = lag[TopicAndPartition(topic, p)]
            self.assertEqual(
                (int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]), int(row["LAG"])),
                (mine.committed, mine.log_end, mine.lag),
            )
            self.assertEqual(row["CLIENT-ID"], "a")
        self.assertEqual(lag[t0].committed, 2)

    def test_seek_pause_and_commit_beside_a_java_member(self) -> None:
        self.broker.create_topic(self.topic, 4)
        self.produce(0, 80)
        a = self.member("a", auto_commit_every_ms=0)
        a.start()
        j = self.java("java")
        pump(lambda: len(a.assignment()) == 2 and len(j.assigned) == 2, 60, "a and Java split")
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        mine = sorted(a.assignment(), key=lambda tp: tp.partition)
        seek, paused = mine
        before = Counter(p for _, _, p, _ in self.events.rows)
        a.seek_to_beginning(seek)
        owned = sum(1 for p, _ in self.produced if p == seek.partition)
        pump(
            lambda: (
                Counter(p for _, _, p, _ in self.events.rows)[seek.partition]
                >= before[seek.partition] + owned
            ),
            30,
            "the sought partition read again",
        )
        a.pause(paused)
        fresh = {
            p: set(produce(self.broker.bootstrap, self.topic, [b"new"] * 3, partition=p))
            for p in range(4)
        }
        for got in fresh.values():
            self.produced |= got
        others = set().union(*(fresh[p] for p in range(4) if p != paused.partition))
        pump(lambda: others <= self.events.processed(), 30, "every unpaused partition's records")
        self.assertFalse(fresh[paused.partition] & self.events.processed(), "paused")
        self.assertTrue(
            {p for _, m, p, _ in self.events.rows if m == "java"} <= j.assigned, "Java untouched"
        )
        a.resume(paused)
        pump(lambda: self.events.processed() == self.produced, 30, "read after resume")
        wait(a.commit({seek: OffsetAndMetadata(5, "replay from 5")}), 30)
        self.assertEqual(wait(a.committed(seek), 30).offset, 5)
        row = describe_group(self.broker.bootstrap, self.group_id)[self.topic, seek.partition]
        self.assertEqual(row["CURRENT-OFFSET"], "5")
        # Java may have read this partition before the split settled: only its reads
        # after the kill show where it resumed.
        since = len(self.events.rows)
        self.kill(a)  # no last commit: the Java member resumes from 5
        pump(lambda: len(j.assigned) == 4, 60, "Java takes a's partitions")

        def java_offsets() -> list[int]:
            rows = self.events.rows[since:]
            return [o for _, m, p, o in rows if m == "java" and p == seek.partition]

        pump(lambda: bool(java_offsets()), 30, "Java reads from the offset afkak committed")
        self.assertEqual(min(java_offsets()), 5)

    def test_pattern_subscription_picks_up_a_topic_created_later(self) -> None:
        took = self.pattern_picks_up_a_later_topic(1000)
        self.report("pattern picks up a new topic", took)
        self.assertLess(took, 1.0 + 3.0, "one metadata age, then one one-member rebalance")

    def test_stuck_member_loses_its_partitions_to_java(self) -> None:
        self.broker.create_topic(self.topic, 2)
        self.produce(0, 20)
        sticky = StuckProcessor(self.events.afkak_processor("a"))
        poll_ms = 3000
        a = self.member("a", processor=sticky, max_poll_interval_ms=poll_ms, auto_commit_every_ms=0)
        a.start()
        j = self.java("java")
        pump(lambda: len(a.assignment()) == 1 and len(j.assigned) == 1, 60, "a and Java split")
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        (mine,) = a.assignment()
        wait(a.commit(), 30)
        committed = wait(a.committed(mine), 30).offset
        sticky.armed = True
        self.produced.update(
            produce(self.broker.bootstrap, self.topic, [b"late"] * 5, partition=mine.partition)
        )
        pump(lambda: bool(sticky.stuck), 30, "a's processor is stuck")
        since = time.monotonic()
        t = pump(lambda: len(j.assigned) == 2, 60, "Java owns both partitions")
        self.report("a stuck member's partition moves to Java", t)
        self.assertLess(time.monotonic() - since, poll_ms / 1000 + self.session_ms / 1000)
        pump(lambda: self.events.processed() == self.produced, 30, "Java read them")
        # The uncommitted window is the stuck batch: the only records read twice.
        window = {(p, o) for _, m, p, o in self.events.rows if m == "a" and o >= committed}
        twice = {k for k, n in Counter((p, o) for _, _, p, o in self.events.rows).items() if n > 1}
        self.assertLessEqual(twice, window)
        sticky.stuck[0].callback(None)

    def test_static_java_member_restarts_into_its_assignment(self) -> None:
        """A static Java member killed (-9) and restarted within its session gets its
        partitions back without a rebalance: afkak's static member keeps its own."""
        self.session_ms = 10000
        self.broker.create_topic(self.topic, 4)
        self.produce(0, 40)
        a = self.member("a", instance="afkak-1")
        a.start()
        j = self.java("java", instance="java-1")
        pump(lambda: len(a.assignment()) == 2 and len(j.assigned) == 2, 60, "a and Java split")
        pump(lambda: self.events.processed() == self.produced, 30, "consumed")
        generation, mine, theirs = a.member.generation_id, a.assignment(), set(j.assigned)
        j.kill()
        again = self.java("java-again", instance="java-1")
        t = pump(lambda: again.assigned == theirs, 30, "the static Java member is back")
        self.report("static Java member restarts", t)
        self.produce(40, 40)
        pump(lambda: self.events.processed() == self.produced, 30, "consumed after the restart")
        self.assertEqual((a.member.generation_id, a.assignment()), (generation, mine))
