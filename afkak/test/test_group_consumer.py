"""ConsumerGroup on the fake cluster: Consumers per partition, commits, rebalances, inspection."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import (
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    CoordinatorLoadInProgress,
    IllegalGeneration,
    RebalanceInProgress,
    RestartError,
    RestopError,
    TopicAndPartition,
)
from afkak.group import (
    DEFAULT_ASSIGNORS,
    ConsumerGroup,
    MemberState,
    committed_offsets,
    describe_group,
    group_lag,
    list_groups,
)
from afkak.protocol.messages import (
    HeartbeatRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.testing import FakeKafkaCluster

TOPIC = "t"
PARTITIONS = 6
#: What a member sends its coordinator: JoinGroup, Heartbeat, ConsumerGroupHeartbeat.
GROUP_APIS = {11, 12, 68}


class Ledger:
    """What every processor saw, and who was processing each partition when."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []
        self.by_group: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.active: dict[int, str] = {}
        self.overlaps: list[tuple[int, str, str]] = []

    def processor(self, name: str, hold: list[Deferred[None]] | None = None) -> Any:
        def process(consumer: Any, messages: list[Any]) -> Any:
            p = consumer.partition
            other = self.active.get(p)
            if other not in (None, name):
                self.overlaps.append((p, other, name))
            self.active[p] = name
            for m in messages:
                self.seen.append((p, m.offset))
                self.by_group[name].append((p, m.offset))
            if hold:
                d = hold.pop(0)
                return d.addCallback(lambda _: self.active.pop(p, None))
            self.active.pop(p, None)
            return None

        return process


def abandon(group: ConsumerGroup) -> None:
    """Simulate the death of *group*'s process: it stops everything and says nothing.

    Its Consumers and heartbeats stop, and its member forgets it was running,
    without LeaveGroup or commits; close its client to drop its connections.
    """
    member = group.member
    member.heartbeats.stop()
    member.state = MemberState.STOPPED
    dead, group.partition_consumers = list(group.partition_consumers.values()), {}
    for consumer in dead:
        consumer.stop()


class GroupTestCase(ClockTestCase):
    """Topic "t" (6 partitions) on a 3-broker fake cluster, members of group "g", a Clock."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic(TOPIC, PARTITIONS)
        self.ledger = Ledger()
        self.groups: list[ConsumerGroup] = []
        self.clients: list[KafkaClient] = []
        self.addCleanup(self.close_clients)
        self.addCleanup(self.stop_all)

    def close_clients(self) -> None:
        for c in self.clients:
            c.close()

    def stop_all(self) -> None:
        for g in self.groups:
            if g.state is not MemberState.STOPPED:
                g.stop()
        self.advance(10)

    def client(self, name: str) -> KafkaClient:
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            clientId=name,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.clients.append(client)
        return client

    def group(self, name: str, processor: Any = None, **options: Any) -> ConsumerGroup:
        settings: dict[str, Any] = {
            "assignors": ["cooperative-sticky"],
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 20000,
            "heartbeat_interval_ms": 1000,
            "auto_offset_reset": OFFSET_EARLIEST,
            "auto_commit_every_n": 5,
            "auto_commit_every_ms": 1000,
            "fetch_max_wait_time": 200,
        }
        settings.update(options)
        group = ConsumerGroup(
            self.client(name), "g", [TOPIC], processor or self.ledger.processor(name), **settings
        )
        self.groups.append(group)
        return group

    def produce(self, per_partition: int) -> None:
        for p in range(PARTITIONS):
            self.cluster.append(TOPIC, p, [b"v%d" % i for i in range(per_partition)])

    def advance(self, seconds: float, step: float = 0.1) -> None:
        for _ in range(int(seconds / step)):
            self.clock.advance(step)

    def result(self, d: Deferred[Any]) -> Any:
        """The result of *d* once in-flight fetches (ahead of it on a connection) are answered."""
        self.advance(0.5)
        return self.successResultOf(d)

    def expected(self) -> set[tuple[int, int]]:
        return {(p, r.offset) for p in range(PARTITIONS) for r in self.cluster.records(TOPIC, p)}

    def check_moving_off_a_dead_coordinator(self, **options: Any) -> None:
        """Issue 33: three members; the coordinator's broker is killed (-9: connections
        dropped and refused) and not restarted; the cluster names it for 6 s more (until
        its controller notices, Kafka's broker session), then moves its groups.  The
        members find the new coordinator and every record is processed within one
        session timeout (6 s) of that, as with Java's and librdkafka's consumers."""
        self.produce(5)
        groups = [self.group(name, session_timeout_ms=6000, **options) for name in "abc"]
        for g in groups:
            g.start()
        self.advance(10)
        self.assertEqual(set(self.ledger.seen), self.expected())
        old = self.cluster.coordinator("g")
        self.cluster.refuse_connections(old)
        self.cluster.drop_connections(old)
        self.produce(5)
        self.advance(6)
        self.cluster.set_broker_down(old)
        noticed = len(self.cluster.requests_seen)
        self.advance(3)  # a heartbeat interval and the longest back-off (1 s each), and some
        new = self.cluster.coordinator("g")
        to_new = {
            r.client_id
            for r in self.cluster.requests_seen[noticed:]
            if r.broker == new and r.api_key in GROUP_APIS
        }
        self.assertEqual(to_new, set("abc"))
        self.advance(3)
        self.assertEqual(set(self.ledger.seen), self.expected())
        owned = sorted(tp.partition for g in groups for tp in g.assignment())
        self.assertEqual(owned, list(range(PARTITIONS)))


class ConsumerGroupTests(GroupTestCase):
    def test_setting_consumer_kwargs_sets_the_consumers_options(self) -> None:
        """afkak 21's ``consumer_kwargs`` is the options new Consumers get, set or read."""
        self.produce(1)
        g = self.group("a")
        g.consumer_kwargs = {**g.consumer_kwargs, "buffer_size": 4096}
        self.assertEqual(g.consumer_options["buffer_size"], 4096)
        g.start()
        self.advance(5)
        self.assertTrue(g.partition_consumers)
        self.assertEqual({c.buffer_size for c in g.partition_consumers.values()}, {4096})

    def test_setting_afkak21_backoffs_retimes_the_member(self) -> None:
        """afkak 21 read its backoff attributes at each retry; setting one still counts
        (it was copied into the member at construction and then ignored)."""
        g = self.group("a", retry_backoff_ms=100)
        g.retry_backoff_ms = 4000
        g.fatal_backoff_ms = 8000
        self.assertTrue(3.2 <= g.member._delay(1) <= 4.8)
        self.assertTrue(6.4 <= g.member._delay(2) <= 9.6)
        self.assertTrue(6.4 <= g.member._delay(5) <= 9.6)
        g.initial_backoff_ms = 250
        self.assertEqual(g.member._delay(3), 0.25)  # until the member first joined
        self.assertEqual(
            (g.retry_backoff_ms, g.fatal_backoff_ms, g.initial_backoff_ms), (4000, 8000, 250)
        )

    def test_consumes_and_commits_with_member_and_generation(self) -> None:
        self.produce(10)
        g = self.group("a")
        g.start()
        self.advance(5)
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(len(self.ledger.seen), 60)
        commits = [
            r.request
            for r in self.cluster.requests_seen
            if r.api_key == OffsetCommitRequest.API_KEY
        ]
        self.assertTrue(commits)
        self.assertEqual(
            {(c.generation_id_or_member_epoch, c.member_id) for c in commits},
            {(1, g.member.member_id)},
        )
        offsets = {k[2]: v.offset for k, v in self.cluster.committed_offsets.items()}
        self.assertEqual(offsets, {p: 10 for p in range(PARTITIONS)}, "next-offset semantics")

    def test_new_group_reads_the_backlog_by_default(self) -> None:
        """afkak 21's rule (issue 20): no committed offset and no ``auto_offset_reset``
        given: every partition starts at its earliest offset, not at the log end."""
        self.produce(10)
        g = ConsumerGroup(
            self.client("a"), "g", [TOPIC], self.ledger.processor("a"), {"fetch_max_wait_time": 200}
        )
        self.groups.append(g)
        g.start()
        self.advance(5)
        self.assertEqual(set(self.ledger.seen), self.expected())

    def test_new_group_with_offset_latest_skips_the_backlog(self) -> None:
        """``auto_offset_reset=OFFSET_LATEST`` gives Java's ``auto.offset.reset=latest``."""
        self.produce(10)
        g = self.group("a", auto_offset_reset=OFFSET_LATEST)
        g.start()
        self.advance(5)
        self.assertEqual(self.ledger.seen, [])
        self.produce(1)
        self.advance(2)
        self.assertEqual(sorted(self.ledger.seen), [(p, 10) for p in range(PARTITIONS)])

    def test_new_partitions_start_with_one_lookup_for_all(self) -> None:
        """Issue 28: a member's assigned partitions get their committed offsets in one
        OffsetFetch and, where none is committed, their earliest in one ListOffsets per
        leader, as Java's consumer does (each Consumer asked alone: 2 requests a partition,
        2,000 before the first fetch at 1,000 partitions)."""
        self.produce(10)
        self.cluster.commit("g", TOPIC, 1, 4)
        self.cluster.commit("g", TOPIC, 4, 7)
        g = self.group("a")
        g.start()
        self.advance(5)
        seen = self.cluster.requests_seen
        fetches = [r.request for r in seen if r.api_key == OffsetFetchRequest.API_KEY]
        lists = [r for r in seen if r.api_key == ListOffsetsRequest.API_KEY]
        self.assertEqual(len(fetches), 1)
        leaders = {self.cluster.partition(TOPIC, p).leader for p in range(PARTITIONS)}
        self.assertLessEqual(len(lists), len(leaders))
        starts = {p: min(o for q, o in self.ledger.seen if q == p) for p in range(PARTITIONS)}
        self.assertEqual(starts, {0: 0, 1: 4, 2: 0, 3: 0, 4: 7, 5: 0})
        self.assertEqual(len(self.ledger.seen), 60 - 4 - 7)

    def test_a_failed_shared_lookup_falls_back_to_each_partition_s_own(self) -> None:
        """The shared start lookup failing costs a retry, not the partitions' starts."""
        self.produce(3)
        self.cluster.fail_next(OffsetFetchRequest, CoordinatorLoadInProgress)
        g = self.group("a")
        g.start()
        self.advance(5)
        self.assertEqual(set(self.ledger.seen), self.expected())

    def test_start_twice_and_stop_when_stopped(self) -> None:
        g = self.group("a")
        g.start()
        self.assertRaises(RestartError, g.start)
        self.advance(4)
        self.result(g.stop())
        self.assertRaises(RestopError, g.shutdown)

    def test_rebalance_hands_partitions_over_after_committing(self) -> None:
        self.produce(20)
        a = self.group("a")
        done_a = a.start()
        self.advance(5)
        b = self.group("b")
        b.start()
        self.advance(1)
        self.produce(20)  # during the rebalance
        self.advance(8)
        self.assertEqual(len(a.assignment()), 3)
        self.assertEqual(len(b.assignment()), 3)
        self.produce(5)
        self.advance(3)
        self.assertEqual(self.ledger.overlaps, [])
        self.assertEqual(set(self.ledger.seen), self.expected())
        # Everything b was given had been committed by a: b re-read nothing.
        self.assertEqual(len(self.ledger.seen), len(set(self.ledger.seen)))
        offsets = self.result(a.shutdown())
        self.assertEqual(len(offsets), 3)
        self.assertEqual(set(offsets.values()), {44})
        self.assertEqual(self.successResultOf(done_a), offsets)

    def test_default_assignors_rebalance_eagerly(self) -> None:
        """[range, cooperative-sticky] (Kafka 4's default): eager, everything revoked first."""
        calls: list[tuple[str, int]] = []
        self.produce(20)
        a = self.group(
            "a",
            assignors=DEFAULT_ASSIGNORS,
            on_assigned=lambda ps: calls.append(("+", len(ps))),
            on_revoked=lambda ps: calls.append(("-", len(ps))),
        )
        a.start()
        self.advance(5)
        b = self.group("b", assignors=DEFAULT_ASSIGNORS)
        b.start()
        self.produce(20)
        self.advance(6)
        self.assertEqual(calls, [("+", 6), ("-", 6), ("+", 3)])
        self.assertEqual(a.member.generation_id, 2, "one rebalance")
        self.assertEqual(b.member.protocol_name, "range")
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(len(self.ledger.seen), len(set(self.ledger.seen)), "revocations committed")
        self.assertEqual(self.ledger.overlaps, [])

    def test_member_leaving_and_member_killed(self) -> None:
        self.produce(10)
        a, b, c = self.group("a"), self.group("b"), self.group("c")
        for g in (a, b):
            g.start()
        c.start().addErrback(lambda f: f.trap(Exception))  # c is killed
        self.advance(5)
        self.assertEqual(sorted(len(g.assignment()) for g in (a, b, c)), [2, 2, 2])
        self.result(b.shutdown())
        self.produce(10)
        self.advance(5)
        self.assertEqual(sorted(len(g.assignment()) for g in (a, c)), [3, 3])
        # c dies: no LeaveGroup, no commits; a takes over after c's session expires.
        leaves = len(
            [r for r in self.cluster.requests_seen if r.api_key == LeaveGroupRequest.API_KEY]
        )
        abandon(c)
        c.client.close()
        self.produce(10)
        self.advance(20)
        self.assertEqual(len(a.assignment()), 6)
        self.assertEqual(
            leaves,
            len([r for r in self.cluster.requests_seen if r.api_key == LeaveGroupRequest.API_KEY]),
        )
        self.assertEqual(set(self.ledger.seen), self.expected())
        duplicates = len(self.ledger.seen) - len(set(self.ledger.seen))
        self.assertLessEqual(duplicates, 2 * 5, "only c's uncommitted work is re-read")

    def test_heartbeats_continue_while_the_processor_is_slow(self) -> None:
        self.produce(1)
        held: list[Deferred[None]] = [Deferred() for _ in range(PARTITIONS)]
        g = self.group("a", self.ledger.processor("a", list(held)))
        g.start()
        self.advance(4)
        beats = len(
            [r for r in self.cluster.requests_seen if r.api_key == HeartbeatRequest.API_KEY]
        )
        self.advance(30)
        after = len(
            [r for r in self.cluster.requests_seen if r.api_key == HeartbeatRequest.API_KEY]
        )
        self.assertGreaterEqual(after - beats, 25)
        self.assertEqual(g.state, MemberState.STABLE)
        self.assertEqual(g.member.generation_id, 1)
        for d in held:
            d.callback(None)

    def test_processor_error_fails_start_and_leaves(self) -> None:
        self.produce(1)

        def broken(consumer: Any, messages: Any) -> None:
            raise ValueError("bad record")

        g = self.group("a", broken)
        done = g.start()
        self.advance(5)
        self.failureResultOf(done, ValueError)
        self.assertEqual(g.state, MemberState.STOPPED)
        self.assertEqual(
            len([r for r in self.cluster.requests_seen if r.api_key == LeaveGroupRequest.API_KEY]),
            1,
        )

    def test_refused_commit_rejoins_and_resumes(self) -> None:
        self.produce(10)
        g = self.group("a")
        g.start()
        self.advance(5)
        self.cluster.fail_next(OffsetCommitRequest, IllegalGeneration)
        self.produce(10)
        self.advance(6)
        self.assertEqual(g.state, MemberState.STABLE)
        self.assertEqual(len(g.partition_consumers), PARTITIONS)
        self.assertEqual(set(self.ledger.seen), self.expected())

    def test_final_commit_retried_while_the_coordinator_refuses(self) -> None:
        self.produce(10)
        g = self.group("a", auto_commit_every_n=0, auto_commit_every_ms=0)
        g.start()
        self.advance(4)
        self.assertEqual(self.cluster.committed_offsets, {})
        self.cluster.fail_next(OffsetCommitRequest, RebalanceInProgress, count=8)
        offsets = self.result(g.shutdown())
        self.assertEqual(set(offsets.values()), {9})
        offsets = {k[2]: v.offset for k, v in self.cluster.committed_offsets.items()}
        self.assertEqual(offsets, {p: 10 for p in range(PARTITIONS)})

    def test_callbacks(self) -> None:
        calls: list[tuple[str, list[TopicAndPartition]]] = []
        a = self.group(
            "a",
            on_assigned=lambda ps: calls.append(("a+", ps)),
            on_revoked=lambda ps: calls.append(("a-", ps)),
        )
        a.start()
        self.advance(4)
        self.assertEqual(calls, [("a+", [TopicAndPartition(TOPIC, p) for p in range(6)])])
        self.group("b").start()
        self.advance(5)
        self.assertEqual([k for k, _ in calls], ["a+", "a-"])
        self.assertEqual(len(calls[1][1]), 3)

    def test_afkak_21_keywords_attributes_and_hooks(self) -> None:
        # afkak 21's signature: consumer_kwargs reach every Consumer; its backoffs are accepted.
        self.produce(3)
        calls: list[Any] = []

        class Group(ConsumerGroup):
            def on_join_prepare(self) -> Any:
                calls.append(("prepare", self.generation_id))
                return super().on_join_prepare()

            def on_join_complete(self, assignments: dict[str, list[int]]) -> Any:
                calls.append(("complete", assignments))
                return super().on_join_complete(assignments)

            def on_group_leave(self) -> None:
                calls.append(("leave", len(self.consumers)))
                super().on_group_leave()

        client = self.client("a")
        g = Group(
            client,
            "g",
            [TOPIC],
            self.ledger.processor("a"),
            consumer_kwargs={
                "auto_offset_reset": OFFSET_EARLIEST,
                "auto_commit_every_n": 1,
                "fetch_max_wait_time": 150,
            },
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            initial_backoff_ms=500,
            retry_backoff_ms=50,
            fatal_backoff_ms=2000,
        )
        self.groups.append(g)
        self.assertEqual(
            (g.member_id, g.generation_id, g.leader_id, g.coordinator_broker),
            ("", None, None, None),
        )
        self.assertEqual((g.session_timeout_ms, g.heartbeat_interval_ms), (10000, 1000))
        self.assertEqual(
            (g.initial_backoff_ms, g.retry_backoff_ms, g.fatal_backoff_ms), (500, 50, 2000)
        )
        self.assertEqual(g.topics, [TOPIC])
        g.start()
        self.advance(5)
        self.assertEqual(len(self.ledger.seen), 18)
        # afkak 21's consumers: {topic: [Consumer, ...]}, by partition.
        self.assertEqual(list(g.consumers), [TOPIC])
        self.assertEqual([c.partition for c in g.consumers[TOPIC]], list(range(PARTITIONS)))
        self.assertEqual(
            {(c.topic, c.fetch_max_wait_time, c.auto_commit_every_n) for c in g.consumers[TOPIC]},
            {(TOPIC, 150, 1)},
        )
        self.assertEqual(g.consumer_kwargs["fetch_max_wait_time"], 150)
        self.assertEqual(g.generation_id, 1)
        self.assertTrue(g.member_id)
        self.assertEqual(g.leader_id, g.member_id)
        self.assertEqual(g.coordinator_broker, client.consumer_group_to_brokers()["g"])
        self.assertEqual(calls, [("prepare", None), ("complete", {TOPIC: list(range(PARTITIONS))})])
        self.result(g.shutdown())
        self.assertEqual(calls[-1], ("leave", 0))
        self.assertEqual(g.member_id, "")

    def test_group_moves_off_a_dead_coordinator(self) -> None:
        # JoinGroup may wait for the rebalance timeout: Java's default of 5 minutes.
        self.check_moving_off_a_dead_coordinator(rebalance_timeout_ms=300000)

    def test_lost_session_calls_on_group_leave_then_joins_again(self) -> None:
        # afkak 21.5's test_broker_restart: with its broker down, the member leaves the
        # group (on_group_leave, no Consumer left); back up, it joins again.
        calls: list[tuple[str, int]] = []

        class Group(ConsumerGroup):
            def on_join_prepare(self) -> Any:
                calls.append(("prepare", len(self.consumers)))

            def on_join_complete(self, assignments: dict[str, list[int]]) -> Any:
                calls.append(("complete", len(self.consumers[TOPIC])))

            def on_group_leave(self) -> None:
                super().on_group_leave()
                calls.append(("leave", len(self.consumers)))

        g = Group(
            self.client("a"),
            "g",
            [TOPIC],
            self.ledger.processor("a"),
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            fetch_max_wait_time=200,
        )
        self.groups.append(g)
        g.start()
        self.advance(4)
        self.assertEqual(calls, [("prepare", 0), ("complete", PARTITIONS)])
        for node in range(3):
            self.cluster.refuse_connections(node)
        self.cluster.drop_connections()
        self.advance(12)
        self.assertEqual(calls[2:], [("leave", 0), ("prepare", 0)])  # joining meanwhile
        self.assertEqual(g.partition_consumers, {})
        for node in range(3):
            self.cluster.refuse_connections(node, refuse=False)
        self.advance(20)
        self.assertEqual(calls[4:], [("complete", PARTITIONS)])
        self.produce(2)
        self.advance(3)
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.result(g.shutdown())
        self.assertEqual(calls[-1], ("leave", 0))
        self.assertEqual(len(calls), 6, "one on_group_leave per leaving")

    def test_stop_and_shutdown_consumers(self) -> None:
        self.produce(3)
        g = self.group("a")
        g.start()
        self.advance(4)
        consumers = list(g.partition_consumers.values())
        self.assertEqual(len(consumers), PARTITIONS)
        done = g.shutdown_consumers()
        self.advance(1)
        self.successResultOf(done)
        self.assertEqual(g.consumers, {})
        offsets = {k[2]: v.offset for k, v in self.cluster.committed_offsets.items()}
        self.assertEqual(offsets, {p: 3 for p in range(PARTITIONS)})
        g.stop_consumers()  # nothing left: a no-op

    def test_inspection(self) -> None:
        self.produce(10)
        admin = self.client("admin")
        a, b = self.group("a"), self.group("b", assignors=["range", "cooperative-sticky"])
        a.start()
        b.start()
        self.advance(5)
        desc = self.successResultOf(describe_group(admin, "g"))
        self.assertEqual(
            (desc.state, desc.protocol_type, desc.protocol),
            ("Stable", "consumer", "cooperative-sticky"),
        )
        self.assertEqual(
            {m.member_id for m in desc.members}, {a.member.member_id, b.member.member_id}
        )
        self.assertEqual(
            {tp for m in desc.members for tp in m.assignment},
            {TopicAndPartition(TOPIC, p) for p in range(6)},
        )
        self.assertEqual({m.topics for m in desc.members}, {(TOPIC,)})
        self.cluster.commit("simple", TOPIC, 0, 3)
        listed = self.successResultOf(list_groups(admin))
        self.assertEqual(
            [(x.group_id, x.protocol_type, x.state) for x in listed],
            [("g", "consumer", "Stable"), ("simple", "", "Empty")],
        )
        self.produce(5)
        self.advance(0.3)
        self.result(a.shutdown())
        self.result(b.shutdown())
        self.advance(2)
        self.assertEqual(
            self.successResultOf(committed_offsets(admin, "g")),
            {TopicAndPartition(TOPIC, p): 15 for p in range(6)},
        )
        self.assertEqual(
            self.successResultOf(committed_offsets(admin, "simple", [TOPIC]))[
                TopicAndPartition(TOPIC, 1)
            ],
            -1,
        )
        self.produce(2)
        lag = self.successResultOf(group_lag(admin, "g"))
        self.assertEqual(
            {tp: (x.committed, x.log_end, x.lag) for tp, x in lag.items()},
            {TopicAndPartition(TOPIC, p): (15, 17, 2) for p in range(6)},
        )
        self.assertEqual(self.successResultOf(describe_group(admin, "g")).state, "Empty")


class PublicSurfaceTests(SynchronousTestCase):
    def test_public_names(self) -> None:
        """What afkak.group promises: its ``__all__``, and nothing else without an underscore
        (state-machine tables and events, the member's listener calls are afkak's own)."""
        import afkak.group

        public = sorted(name for name in vars(afkak.group) if not name.startswith("_"))
        self.assertEqual(public, sorted(afkak.group.__all__))
        self.assertEqual(
            sorted(afkak.group.__all__),
            sorted(
                [
                    "ASSIGNORS",
                    "DEFAULT_ASSIGNORS",
                    "Assignment",
                    "ConsumerGroup",
                    "CooperativeStickyAssignor",
                    "Generation",
                    "GroupDescription",
                    "GroupListing",
                    "GroupMember",
                    "KafkaConsumer",
                    "Liveness",
                    "MAX_POLL_RECORDS",
                    "Member",
                    "MemberDescription",
                    "MemberState",
                    "PartitionAssignor",
                    "PartitionLag",
                    "RangeAssignor",
                    "RebalanceListener",
                    "RebalanceProtocol",
                    "RoundRobinAssignor",
                    "ShareConsumer",
                    "ShareMemberState",
                    "ShareRecord",
                    "AcknowledgeType",
                    "Subscription",
                    "TransactionalProcessor",
                    "committed_offsets",
                    "decode_assignment",
                    "decode_subscription",
                    "describe_group",
                    "encode_assignment",
                    "encode_subscription",
                    "group_lag",
                    "list_groups",
                ]
            ),
        )
        self.assertEqual(afkak.group.DEFAULT_ASSIGNORS, ("range", "cooperative-sticky"))

    def test_the_member_listener_is_not_the_groups_api(self) -> None:
        """The member's calls (``RebalanceListener``, ``Liveness``) are not ConsumerGroup's."""
        for name in ("prepare_join", "assign", "revoke", "lose", "stuck", "until_live"):
            self.assertFalse(hasattr(ConsumerGroup, name), name)

    def test_bad_arguments(self) -> None:
        client = KafkaClient("broker-0:9092", reactor=Clock())
        self.addCleanup(client.close)
        with self.assertRaises(TypeError):
            ConsumerGroup(client, "g", ["t"], lambda c, m: None, commit_consumer_id="x")
        with self.assertRaises(ValueError):
            ConsumerGroup(client, "g", ["t"], lambda c, m: None, heartbeat_interval_ms=50000)
        with self.assertRaises(ValueError):
            ConsumerGroup(client, "g", [], lambda c, m: None)
        with self.assertRaises(TypeError):
            ConsumerGroup(client, "g", ["t"], None)  # type: ignore[arg-type]
        # Once accepted, these failed only after joining, or start() returned None (issue 10, 4).
        processor = lambda c, m: None  # noqa: E731
        bad: list[tuple[type[Exception], tuple[Any, ...], dict[str, Any]]] = [
            (TypeError, (None, "g", ["t"], processor), {}),
            (TypeError, (client, None, ["t"], processor), {}),
            (ValueError, (client, "", ["t"], processor), {}),
            (TypeError, (client, 5, ["t"], processor), {}),
            (TypeError, (client, "g", [None], processor), {}),
            (TypeError, (client, "g", [b"x"], processor), {}),
            (TypeError, (client, "g", b"x", processor), {}),
            (ValueError, (client, "g", ["bad topic"], processor), {}),
            (ValueError, (client, "g", ["t"], processor), {"buffer_size": -1}),
            (TypeError, (client, "g", ["t"], processor), {"no_such_option": 1}),
            (TypeError, (client, "g", ["t"], processor), {"on_assigned": 5}),
            (TypeError, (client, "g", ["t"], processor), {"group_instance_id": 5}),
            (ValueError, (client, "g", ["t"], processor), {"assignors": ["nope"]}),
        ]
        for error, args, kwargs in bad:
            with self.subTest(args=args, kwargs=kwargs):
                self.assertRaises(error, ConsumerGroup, *args, **kwargs)
