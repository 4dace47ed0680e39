"""ShareConsumer (KIP-932 share groups) against the fake cluster's share coordinator, on a Clock."""

from __future__ import annotations

from collections import Counter
from typing import Any

from twisted.internet.defer import CancelledError, Deferred

from afkak import AcknowledgeType, KafkaClient, ShareConsumer
from afkak.common import (
    CoordinatorNotAvailable,
    GroupAuthorizationFailed,
    LeaderNotAvailableError,
    NoCommonVersionError,
    TopicAndPartition,
)
from afkak.group import ShareMemberState, ShareRecord
from afkak.group._share_member import TABLE as SHARE_TRANSITIONS, ShareMemberEvent
from afkak.protocol.messages import (
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.test.test_group_consumer_protocol import Transitions
from afkak.testing import FakeKafkaCluster
from afkak.testing._share_partitions import (
    TABLE as RECORD_TABLE,
    RecordEvent,
    RecordState,
    SharePartition,
)

S, E = ShareMemberState, ShareMemberEvent
TOPIC, PARTITIONS = "q", 3
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


class ShareTestCase(ClockTestCase):
    """Topic "q" (3 partitions) on 3 fake brokers; share group "sg" reads from the start."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic(TOPIC, PARTITIONS)
        self.coordinator = self.cluster.share_groups
        self.coordinator.auto_offset_reset["sg"] = "earliest"
        self.consumers: list[ShareConsumer] = []
        self.clients: list[KafkaClient] = []
        self.addCleanup(self.close_all)

    def close_all(self) -> None:
        for c in self.consumers:
            c.close()
        self.advance(2)
        for client in self.clients:
            client.close()
        self.advance(1)

    def consumer(self, name: str, **options: Any) -> ShareConsumer:
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            clientId=name,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.clients.append(client)
        options.setdefault("heartbeat_interval_ms", 1000)
        consumer = ShareConsumer(client, "sg", [TOPIC], **options)
        self.consumers.append(consumer)
        return consumer

    def produce(self, per_partition: int) -> None:
        for p in range(PARTITIONS):
            self.cluster.append(TOPIC, p, [b"%d-%d" % (p, i) for i in range(per_partition)])

    def advance(self, seconds: float, step: float = 0.1) -> None:
        for _ in range(round(seconds / step)):
            self.clock.advance(step)

    def pull(self, consumer: ShareConsumer, timeout_ms: int = 500, **options: Any) -> list[Any]:
        d = consumer.getmany(timeout_ms=timeout_ms, **options)
        self.advance(timeout_ms / 1000.0 + 1.5)
        return list(self.successResultOf(d))

    def requests(self, request: type) -> list[Any]:
        return [r.request for r in self.cluster.requests_seen if r.api_key == request.API_KEY]

    def closed(self, c: ShareConsumer) -> Deferred[None]:
        d = c.close()
        self.advance(2)
        return d

    def start_offset(self, partition: int) -> int:
        return self.coordinator.partitions["sg", TOPIC, partition].start


def keys(records: list[ShareRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


class ShareConsumerTests(ShareTestCase):
    def test_one_consumer_gets_every_record_once_and_implicitly_accepts_them(self) -> None:
        self.produce(4)
        c = self.consumer("a")
        records = self.pull(c)
        self.assertEqual(sorted(keys(records)), [(p, o) for p in range(3) for o in range(4)])
        self.assertEqual({r.delivery_count for r in records}, {1})
        self.assertEqual(c.assignment(), [TopicAndPartition(TOPIC, p) for p in range(3)])
        self.assertEqual(self.start_offset(0), 0, "nothing acknowledged yet")
        # The next call accepts the batch, piggybacked on its ShareFetch.
        self.assertEqual(self.pull(c), [])
        self.assertEqual([self.start_offset(p) for p in range(3)], [4, 4, 4])
        acks = [p for r in self.requests(ShareFetchRequest) for t in r.topics for p in t.partitions]
        sent = [
            [
                (b.first_offset, b.last_offset, b.acknowledge_types)
                for b in p.acknowledgement_batches
            ]
            for p in acks
        ]
        self.assertIn([(0, 3, [1])], sent)

    def test_fetch_rounds_that_fail_are_retried_until_the_poll_ends(self) -> None:
        """Leaders that cannot be found fail the fetch round; it is tried again, backed
        off, until the poll's time is up: the poll is empty, not failed."""
        c = self.consumer("a")
        self.pull(c)
        self.cluster.fail_next(MetadataRequest, LeaderNotAvailableError, count=1000)
        c.client.note_stale_leaders(c.assignment())
        metadata = len(self.requests(MetadataRequest))
        d = c.getmany(timeout_ms=3000)
        self.advance(2.9, step=0.01)
        self.assertNoResult(d)
        self.advance(0.2, step=0.01)
        self.assertEqual(self.successResultOf(d), [])
        tries = len(self.requests(MetadataRequest)) - metadata
        self.assertTrue(2 < tries < 10, f"{tries} Metadata requests: retried, backed off")

    def test_share_sessions_open_with_epoch_zero_then_count_up(self) -> None:
        self.produce(1)
        c = self.consumer("a")
        self.pull(c)
        self.pull(c)
        self.pull(c)
        by_node: dict[int, list[int]] = {}
        for seen in self.cluster.requests_seen:
            if seen.api_key == ShareFetchRequest.API_KEY:
                by_node.setdefault(seen.broker, []).append(seen.request.share_session_epoch)
        self.assertEqual(len(by_node), 3, "one session per partition leader")
        for epochs in by_node.values():
            self.assertEqual(epochs[:3], [0, 1, 2])

    def test_two_consumers_consume_disjoint_records(self) -> None:
        a, b = self.consumer("a"), self.consumer("b")
        self.pull(a)
        self.pull(b)
        self.produce(10)
        seen: list[tuple[int, int]] = []
        for _ in range(4):
            for c in (a, b):
                seen += keys(self.pull(c))
        self.assertEqual(sorted(seen), [(p, o) for p in range(3) for o in range(10)])
        self.assertEqual(len(seen), len(set(seen)))
        self.assertEqual(len(self.coordinator.groups["sg"].members), 2)

    def test_more_consumers_than_partitions_share_them(self) -> None:
        cs = [self.consumer(n) for n in "abcd"]
        for c in cs:
            self.pull(c, timeout_ms=100)
        for c in cs:
            self.pull(c, timeout_ms=100)
        self.assertTrue(all(c.assignment() for c in cs))
        self.assertEqual(sum(len(c.assignment()) for c in cs), 4)

    def test_released_records_come_back_with_a_higher_delivery_count(self) -> None:
        self.produce(2)
        c = self.consumer("a", acknowledgement_mode="explicit")
        first = self.pull(c)
        for r in first:
            c.acknowledge(r, RELEASE if r.partition == 0 else ACCEPT)
        again = self.pull(c)
        self.assertEqual(sorted(keys(again)), [(0, 0), (0, 1)])
        self.assertEqual({r.delivery_count for r in again}, {2})
        for r in again:
            c.acknowledge(r)
        self.pull(c)
        self.assertEqual([self.start_offset(p) for p in range(3)], [2, 2, 2])

    def test_rejected_records_never_return(self) -> None:
        self.produce(3)
        c = self.consumer("a", acknowledgement_mode="explicit")
        for r in self.pull(c):
            c.acknowledge(r, REJECT if r.offset == 1 else ACCEPT)
        self.assertEqual(self.pull(c), [])
        self.advance(40)  # past any lock
        self.assertEqual(self.pull(c), [])
        self.assertEqual([self.start_offset(p) for p in range(3)], [3, 3, 3])

    def test_records_of_a_silent_consumer_are_redelivered_after_the_lock_timeout(self) -> None:
        self.cluster.create_topic("one", 1)
        self.coordinator.lock_duration_ms = 5000
        a = self.consumer("a")
        b = self.consumer("b")
        a.subscribe(["one"])
        b.subscribe(["one"])
        self.pull(a, timeout_ms=100)
        self.pull(b, timeout_ms=100)
        self.cluster.append("one", 0, [b"x", b"y"])
        got = self.pull(a)
        self.assertEqual([r.value for r in got], [b"x", b"y"])
        # a goes silent with the records acquired; b sees nothing until the lock times out.
        self.assertEqual(self.pull(b, timeout_ms=1000), [])
        self.advance(3)
        redelivered = self.pull(b, timeout_ms=2000)
        self.assertEqual([(r.value, r.delivery_count) for r in redelivered], [(b"x", 2), (b"y", 2)])
        self.assertEqual(self.pull(b), [])
        self.assertEqual(self.coordinator.partitions["sg", "one", 0].start, 2)

    def test_a_dead_members_session_expires_and_its_records_are_released(self) -> None:
        self.cluster.create_topic("one", 1)
        self.coordinator.lock_duration_ms = 600_000  # only the session's end frees them
        a, b = self.consumer("a"), self.consumer("b")
        a.subscribe(["one"])
        b.subscribe(["one"])
        self.pull(a, timeout_ms=100)
        self.pull(b, timeout_ms=100)
        self.cluster.append("one", 0, [b"x"])
        self.assertEqual(len(self.pull(a)), 1)
        # a dies: no heartbeat, no leaving, no acknowledgement.
        a.member.generation_id = -1
        a.member.stop()
        self.advance(40)
        self.assertEqual(self.pull(b), [])
        self.assertEqual(len(self.coordinator.groups["sg"].members), 2)
        self.advance(6)  # 45 s without a heartbeat
        self.assertEqual(list(self.coordinator.groups["sg"].members), [b.member_id])
        again = self.pull(b)
        self.assertEqual([(r.value, r.delivery_count) for r in again], [(b"x", 2)])

    def test_explicit_mode_needs_every_record_acknowledged_before_the_next_batch(self) -> None:
        self.produce(1)
        c = self.consumer("a", acknowledgement_mode="explicit")
        records = self.pull(c)
        self.assertRaises(RuntimeError, c.getmany)
        c.acknowledge(records[0])
        self.assertRaises(ValueError, c.acknowledge, records[0])  # settled already
        stranger = ShareRecord(TOPIC, 0, 99, 0, None, b"", (), 1)
        self.assertRaises(ValueError, c.acknowledge, stranger)
        self.assertRaises(TypeError, c.acknowledge, (TOPIC, 0, 0))
        for r in records[1:]:
            c.acknowledge(r)
        self.assertEqual(self.pull(c), [])

    def test_commit_sends_share_acknowledge_and_fires_with_each_partition(self) -> None:
        self.produce(2)
        c = self.consumer("a")
        self.pull(c)
        d = c.commit()
        self.advance(1)
        results = self.successResultOf(d)
        self.assertEqual(results, {TopicAndPartition(TOPIC, p): None for p in range(3)})
        self.assertEqual(len(self.requests(ShareAcknowledgeRequest)), 3)
        self.assertEqual([self.start_offset(p) for p in range(3)], [2, 2, 2])
        # Nothing left to send: no request, an empty result.
        d = c.commit()
        self.assertEqual(self.successResultOf(d), {})

    def test_close_sends_the_last_acks_closes_sessions_and_leaves(self) -> None:
        self.produce(2)
        c = self.consumer("a")
        self.pull(c)
        d = c.close()
        self.advance(2)
        self.successResultOf(d)
        closing = self.requests(ShareAcknowledgeRequest)
        self.assertEqual({r.share_session_epoch for r in closing}, {-1})
        self.assertEqual([self.start_offset(p) for p in range(3)], [2, 2, 2])
        self.assertEqual(self.requests(ShareGroupHeartbeatRequest)[-1].member_epoch, -1)
        self.assertEqual(self.coordinator.groups["sg"].members, {})
        self.assertEqual(self.coordinator.sessions, {})
        self.assertIs(c.member.state, S.STOPPED)
        self.assertRaises(RuntimeError, c.getmany)

    def test_explicit_close_releases_what_was_not_acknowledged(self) -> None:
        self.produce(1)
        c = self.consumer("a", acknowledgement_mode="explicit")
        self.pull(c)
        self.successResultOf(self.closed(c))
        d = self.consumer("b")
        again = self.pull(d)
        self.assertEqual({r.delivery_count for r in again}, {2})
        self.assertEqual(len(again), 3)

    def test_processor_form_processes_every_record_and_a_failure_releases(self) -> None:
        self.produce(3)
        seen: Counter[tuple[int, int, int]] = Counter()
        failed: list[int] = []

        def process(consumer: ShareConsumer, records: list[ShareRecord]) -> None:
            for r in records:
                seen[r.partition, r.offset, r.delivery_count] += 1
            if not failed:
                failed.append(len(records))
                raise ValueError("first batch fails")

        c = self.consumer("a", processor=process)
        done = c.start()
        self.advance(5)
        self.assertNoResult(done)
        self.assertEqual(len(self.flushLoggedErrors(ValueError)), 1)
        once = {(p, o) for p, o, n in seen if n == 1}
        twice = {(p, o) for p, o, n in seen if n == 2}
        self.assertEqual(once, {(p, o) for p in range(3) for o in range(3)})
        self.assertEqual(len(twice), failed[0], "the failed batch came back")
        self.successResultOf(self.closed(c))
        self.successResultOf(done)
        self.assertEqual([self.start_offset(p) for p in range(3)], [3, 3, 3])

    def test_getmany_is_cancellable(self) -> None:
        c = self.consumer("a")
        self.pull(c)
        d = c.getmany(timeout_ms=5000)
        self.advance(0.5)
        self.assertNoResult(d)
        d.cancel()
        self.failureResultOf(d, CancelledError)
        self.produce(1)
        self.assertEqual(len(self.pull(c)), 3, "a new session picks up")

    def test_a_session_epoch_mismatch_starts_a_new_session(self) -> None:
        self.produce(1)
        c = self.consumer("a")
        self.coordinator.lock_duration_ms = 5000
        self.pull(c)
        for session in c._sessions.values():
            session.epoch += 7
        # INVALID_SHARE_SESSION_EPOCH: the acknowledgements are lost with the session, and
        # the new session's opening releases what the old one held.
        again = self.pull(c)
        self.assertEqual({r.delivery_count for r in again}, {2}, "unacknowledged: redelivered")
        self.assertEqual(len(again), 3)

    def test_a_lost_connection_starts_new_sessions_and_nothing_is_lost(self) -> None:
        c = self.consumer("a")
        self.pull(c, timeout_ms=100)
        self.cluster.drop_next(ShareFetchRequest, count=3)
        self.produce(3)
        seen: Counter[tuple[int, int]] = Counter()
        for _ in range(4):
            seen.update(keys(self.pull(c)))
        self.advance(31)  # past any lock
        seen.update(keys(self.pull(c)))
        self.assertEqual(set(seen), {(p, o) for p in range(3) for o in range(3)})
        self.assertEqual(c.member.state, S.STABLE)
        self.assertEqual([self.start_offset(p) for p in range(3)], [3, 3, 3])

    def test_a_dead_coordinator_is_looked_up_again(self) -> None:
        """Issue 33: the coordinator's broker is killed (-9) and the cluster names it for
        6 s more; the member's heartbeats go to the new coordinator within its back-off
        of that, not after their request timeout, and it stays in the group."""
        c = self.consumer("a")
        self.pull(c, timeout_ms=100)
        old = self.cluster.coordinator("sg")
        self.cluster.refuse_connections(old)
        self.cluster.drop_connections(old)
        self.advance(6)
        self.cluster.set_broker_down(old)
        noticed = len(self.cluster.requests_seen)
        self.advance(3)
        new = self.cluster.coordinator("sg")
        beats = [r.broker for r in self.cluster.requests_seen[noticed:] if r.api_key == 76]
        self.assertIn(new, beats)
        self.assertEqual(list(self.coordinator.groups["sg"].members), [c.member_id])
        self.assertEqual(c.member.state, S.STABLE)

    def test_a_consumer_without_topics_does_not_join(self) -> None:
        c = self.consumer("a")
        c.member.topics = ()
        c = ShareConsumer(c.client, "sg")
        self.consumers.append(c)
        self.assertEqual(self.pull(c, timeout_ms=200), [])
        self.assertIs(c.member.state, S.STOPPED)
        self.assertEqual(self.requests(ShareGroupHeartbeatRequest), [])
        c.subscribe([TOPIC])
        self.produce(1)
        self.advance(1)
        self.assertEqual(len(self.pull(c)), 3)

    def test_a_broker_without_share_groups_fails_the_call(self) -> None:
        self.cluster.state.api_versions.pop(ShareGroupHeartbeatRequest.API_KEY)
        c = self.consumer("a")
        d = c.getmany(timeout_ms=1000)
        self.advance(2)
        self.failureResultOf(d, NoCommonVersionError)  # "the broker does not support it"
        self.flushLoggedErrors(NoCommonVersionError)
        self.assertIs(c.member.state, S.STOPPED)

    def test_bad_arguments_raise_at_the_call(self) -> None:
        client = self.consumer("a").client
        self.assertRaises(ValueError, ShareConsumer, client, "")
        self.assertRaises(TypeError, ShareConsumer, client, "g", "topic")
        self.assertRaises(ValueError, ShareConsumer, client, "g", acknowledgement_mode="auto")
        self.assertRaises(ValueError, ShareConsumer, client, "g", max_records=0)
        self.assertRaises(TypeError, ShareConsumer, client, "g", processor=1)
        self.assertRaises(TypeError, ShareConsumer, client, "g", value_deserializer=b"")
        self.assertRaises(ValueError, ShareConsumer(client, "g").start)
        self.assertRaises(ValueError, self.consumers[0].getmany, -1)


class ShareMemberTransitionTests(ShareTestCase):
    """Every transition of the share member's table, on the fake coordinator."""

    def setUp(self) -> None:
        super().setUp()
        self.transitions = Transitions(self)

    def assertTransitions(self, *expected: tuple[S, E]) -> None:  # noqa: N802
        for t in expected:
            self.assertIn(t, self.transitions.seen)
            self.assertIn(t, SHARE_TRANSITIONS.transitions)

    def test_join_heartbeat_stop(self) -> None:
        c = self.consumer("a")
        self.pull(c)
        self.advance(6)
        self.successResultOf(self.closed(c))
        self.assertTransitions(
            (S.STOPPED, E.START), (S.JOINING, E.ASSIGNED), (S.STABLE, E.ASSIGNED),
            (S.STABLE, E.STOP), (S.LEAVING, E.LEFT),
        )  # fmt: skip
        self.assertEqual(c.member.heartbeat_interval, 5.0, "the coordinator's interval")

    def test_fenced_while_stable_joins_again_with_the_same_member_id(self) -> None:
        c = self.consumer("a")
        self.pull(c)
        member_id = c.member_id
        del self.coordinator.groups["sg"].members[member_id]
        self.advance(6)
        self.assertTransitions((S.STABLE, E.FENCED), (S.JOINING, E.ASSIGNED))
        self.assertIs(c.member.state, S.STABLE)
        self.assertEqual(list(self.coordinator.groups["sg"].members), [member_id])

    def test_fenced_while_joining(self) -> None:
        self.cluster.fail_next(ShareGroupHeartbeatRequest, 25)  # UNKNOWN_MEMBER_ID
        c = self.consumer("a")
        self.pull(c)
        self.assertTransitions((S.JOINING, E.FENCED), (S.JOINING, E.ASSIGNED))

    def test_stop_while_joining(self) -> None:
        self.cluster.delay(ShareGroupHeartbeatRequest, 5)
        c = self.consumer("a")
        d = c.getmany(timeout_ms=100)
        self.advance(0.5)
        self.successResultOf(self.closed(c))
        self.advance(6)
        self.successResultOf(d)
        self.assertTransitions((S.JOINING, E.STOP), (S.LEAVING, E.LEFT))

    def test_stop_while_backing_off_a_failed_heartbeat_leaves_at_once(self) -> None:
        """The wait between heartbeat retries is cancelled by a stop, as a request is."""
        c = self.consumer("a")
        self.pull(c)
        self.cluster.fail_next(ShareGroupHeartbeatRequest, CoordinatorNotAvailable, count=50)
        self.advance(5)  # heartbeats failing, backing off up to 1 s
        sent = len(self.requests(ShareGroupHeartbeatRequest))
        self.assertGreater(sent, 4)
        c.member.stop()
        self.clock.advance(0.001)
        self.assertIs(c.member.state, S.STOPPED)
        self.successResultOf(self.closed(c))

    def test_a_fatal_coordinator_error_fails_the_member_and_the_pull(self) -> None:
        c = self.consumer("a")
        self.pull(c)
        self.cluster.fail_next(ShareGroupHeartbeatRequest, GroupAuthorizationFailed)
        d = c.getmany(timeout_ms=8000)
        self.advance(7)
        self.failureResultOf(d, GroupAuthorizationFailed)
        self.flushLoggedErrors(GroupAuthorizationFailed)
        self.assertTransitions((S.STABLE, E.FAIL))

    def test_a_fatal_error_while_joining(self) -> None:
        self.cluster.fail_next(ShareGroupHeartbeatRequest, GroupAuthorizationFailed)
        c = self.consumer("a")
        d = c.getmany(timeout_ms=1000)
        self.advance(2)
        self.failureResultOf(d, GroupAuthorizationFailed)
        self.flushLoggedErrors(GroupAuthorizationFailed)
        self.assertTransitions((S.JOINING, E.FAIL))

    def test_every_transition_is_covered(self) -> None:
        covered = {
            (S.STOPPED, E.START), (S.JOINING, E.ASSIGNED), (S.STABLE, E.ASSIGNED),
            (S.JOINING, E.FENCED), (S.STABLE, E.FENCED), (S.JOINING, E.STOP),
            (S.STABLE, E.STOP), (S.LEAVING, E.LEFT), (S.JOINING, E.FAIL), (S.STABLE, E.FAIL),
        }  # fmt: skip
        self.assertEqual(set(SHARE_TRANSITIONS.transitions), covered)


class SharePartitionTests(ShareTestCase):
    """The fake's record lifecycle: every transition of its table, on the cluster's Clock."""

    def partition(self, limit: int = 5) -> tuple[SharePartition, list[str]]:
        woken: list[str] = []
        sp = SharePartition(0, self.clock, lambda: woken.append("wake"), 1000, limit)
        self.addCleanup(sp.stop)
        return sp, woken

    def test_acquire_accept_reject_gap(self) -> None:
        sp, _ = self.partition()
        self.assertEqual(sp.acquire("m", 4, 10), [(0, 1), (1, 1), (2, 1), (3, 1)])
        self.assertFalse(sp.acknowledge("other", 0, 0, [1]), "not the owner")
        self.assertTrue(sp.acknowledge("m", 0, 3, [1, 3, 0, 1]))
        self.assertEqual(sp.start, 4)
        self.assertFalse(sp.acknowledge("m", 0, 0, [1]), "done already")

    def test_release_and_lock_timeout_make_records_available_until_exhausted(self) -> None:
        sp, woken = self.partition(limit=3)
        sp.acquire("m", 1, 10)
        self.assertTrue(sp.acknowledge("m", 0, 0, [2]))  # release: count 1
        self.assertEqual(woken, ["wake"])
        self.assertEqual(sp.acquire("m", 1, 10), [(0, 2)])
        self.clock.advance(1.0)  # lock timeout: count 2
        self.assertEqual(sp.records[0].state, RecordState.AVAILABLE)
        self.assertEqual(sp.acquire("n", 1, 10), [(0, 3)])
        self.clock.advance(1.0)  # the third delivery timed out: archived
        self.assertEqual(sp.records[0].state, RecordState.ARCHIVED)
        self.assertEqual(sp.acquire("n", 1, 10), [])

    def test_a_leaving_member_releases_its_records(self) -> None:
        sp, _ = self.partition()
        sp.acquire("m", 2, 10)
        sp.release_member("m")
        self.assertEqual(sp.acquire("n", 2, 10), [(0, 2), (1, 2)])

    def test_every_record_transition_is_exercised_above(self) -> None:
        self.assertEqual(
            {event for _, event in RECORD_TABLE.transitions},
            set(RecordEvent),
        )
