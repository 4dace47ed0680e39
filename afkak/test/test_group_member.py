"""The group membership state machine against the fake cluster's group coordinator.

Everything runs on a :class:`Clock`: session, rebalance and heartbeat timers
advance only when a test says so.  The listener records what the member asks
of it and checks that no partition ever has two owners.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred

from afkak.client import KafkaClient
from afkak.common import (
    ClientError,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedInstanceId,
    IllegalGeneration,
    InconsistentGroupProtocol,
    NoCommonVersionError,
    NotCoordinator,
    RebalanceInProgress,
    TopicAndPartition,
    UnknownMemberId,
)
from afkak.group import (
    CooperativeStickyAssignor,
    Generation,
    GroupMember,
    MemberState,
    RangeAssignor,
    decode_subscription,
)
from afkak.group._states import TRANSITIONS, MemberEvent
from afkak.protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.testing import FakeKafkaCluster

TOPIC = "t"
ALL = [TopicAndPartition(TOPIC, p) for p in range(6)]
JOIN, HEARTBEAT, LEAVE, SYNC = (
    JoinGroupRequest.API_KEY,
    HeartbeatRequest.API_KEY,
    LeaveGroupRequest.API_KEY,
    SyncGroupRequest.API_KEY,
)


class Owners:
    """Who owns each partition, across every listener of a test."""

    def __init__(self) -> None:
        self.owner: dict[TopicAndPartition, str] = {}


class Listener:
    """Records the member's requests; revocations can be held open with ``hold``."""

    def __init__(self, name: str, owners: Owners) -> None:
        self.name = name
        self.owners = owners
        self.log: list[tuple[str, list[TopicAndPartition]]] = []
        self.generations: list[Generation] = []
        self.hold: Deferred[None] | None = None
        self.prepared_joins = 0

    @property
    def owned(self) -> list[TopicAndPartition]:
        return sorted(tp for tp, o in self.owners.owner.items() if o == self.name)

    def _release(self, partitions: list[TopicAndPartition]) -> None:
        for tp in partitions:
            assert self.owners.owner.get(tp) == self.name, (
                tp,
                self.owners.owner.get(tp),
                self.name,
            )
            del self.owners.owner[tp]

    def revoke(self, partitions: list[TopicAndPartition]) -> Deferred[None] | None:
        self.log.append(("revoke", partitions))
        if self.hold is None:
            self._release(partitions)
            return None
        return self.hold.addCallback(lambda _: self._release(partitions))

    def lose(self, partitions: list[TopicAndPartition]) -> None:
        self.log.append(("lose", partitions))
        self._release(partitions)

    def prepare_join(self) -> None:
        self.prepared_joins += 1

    def assign(self, partitions: list[TopicAndPartition], generation: Generation) -> None:
        self.log.append(("assign", partitions))
        self.generations.append(generation)
        for tp in partitions:
            current = self.owners.owner.get(tp)
            assert current in (None, self.name), (
                f"{tp} given to {self.name} while {current} owns it"
            )
            self.owners.owner[tp] = self.name


class GroupMemberTests(ClockTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic(TOPIC, 6)
        self.owners = Owners()
        self.members: list[GroupMember] = []
        self.clients: dict[str, KafkaClient] = {}
        self.addCleanup(self.stop_all)

    def stop_all(self) -> None:
        for m in self.members:
            m.stop()
        self.advance(30)

    def member(
        self,
        name: str,
        assignors: Any = None,
        owners: Owners | None = None,
        timeout_ms: int | None = None,
        **options: Any,
    ) -> tuple[GroupMember, Listener, Deferred[None]]:
        client = self.client_of(
            self.cluster, name, **({} if timeout_ms is None else {"timeout": timeout_ms})
        )
        self.clients[name] = client
        listener = Listener(name, self.owners if owners is None else owners)
        settings = {
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 20000,
            "heartbeat_interval_ms": 1000,
        }
        settings.update(options)
        assignors = [RangeAssignor()] if assignors is None else list(assignors)
        member = GroupMember(client, "g", [TOPIC], listener, assignors, **settings)
        self.members.append(member)
        return member, listener, member.start()

    def advance(self, seconds: float, step: float = 0.25) -> None:
        for _ in range(int(seconds / step)):
            self.clock.advance(step)

    def seen(self, api_key: int) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == api_key]

    def test_transition_table_covers_every_state(self) -> None:
        reachable = {MemberState.STOPPED}
        for (state, _), new in TRANSITIONS.items():
            if state in reachable:
                reachable.add(new)
        for _ in range(3):
            reachable |= {new for (state, _), new in TRANSITIONS.items() if state in reachable}
        self.assertEqual(reachable, set(MemberState))
        self.assertEqual(TRANSITIONS[MemberState.STABLE, MemberEvent.FENCED], MemberState.UNJOINED)

    def test_reaction_tables(self) -> None:
        """What the member does about each coordinator error, per API (Java's choices)."""
        from afkak.group._reactions import HEARTBEAT, JOIN_GROUP, SYNC_GROUP, Reaction, react

        expected = {
            # error: (JoinGroup, SyncGroup, Heartbeat)
            0: (Reaction.DONE, Reaction.DONE, Reaction.DONE),
            14: (Reaction.BACKOFF, Reaction.BACKOFF, Reaction.IGNORE),
            15: (Reaction.BACKOFF, Reaction.BACKOFF, Reaction.IGNORE),
            16: (Reaction.BACKOFF, Reaction.BACKOFF, Reaction.IGNORE),
            22: (Reaction.FENCED, Reaction.FENCED, Reaction.FENCED),
            23: (Reaction.FATAL, Reaction.FATAL, Reaction.FATAL),
            25: (Reaction.FENCED, Reaction.FENCED, Reaction.FENCED),
            27: (Reaction.BACKOFF, Reaction.REJOIN, Reaction.REJOIN),
            79: (Reaction.RETRY, Reaction.FATAL, Reaction.FATAL),
            82: (Reaction.FATAL, Reaction.FATAL, Reaction.FATAL),
        }
        for error, reactions in expected.items():
            got = tuple(react(t, error) for t in (JOIN_GROUP, SYNC_GROUP, HEARTBEAT))
            self.assertEqual(got, reactions, error)

    def test_join_needs_the_member_id_round(self) -> None:
        member, listener, _ = self.member("a")
        self.assertEqual(member.state, MemberState.JOINING)
        self.advance(4)  # the coordinator's initial rebalance delay is 3 s
        self.assertEqual(member.state, MemberState.STABLE)
        first, second = self.seen(JOIN)
        self.assertEqual(first.request.member_id, "")
        self.assertEqual(second.request.member_id, member.member_id)
        self.assertTrue(member.member_id.startswith("a-"))
        self.assertEqual(member.generation_id, 1)
        self.assertEqual(listener.owned, ALL)
        self.assertEqual([p.name for p in second.request.protocols], ["range"])
        self.assertEqual(second.request.protocol_type, "consumer")
        self.assertEqual(decode_subscription(second.request.protocols[0].metadata).topics, (TOPIC,))

    def test_heartbeats_every_interval_while_stable(self) -> None:
        member, _, _ = self.member("a")
        self.advance(4)
        before = len(self.seen(HEARTBEAT))
        self.advance(5)
        beats = self.seen(HEARTBEAT)[before:]
        self.assertIn(len(beats), (4, 5, 6))
        self.assertEqual(
            {(b.request.generation_id, b.request.member_id) for b in beats}, {(1, member.member_id)}
        )

    def test_eager_rebalance_revokes_everything_first(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        b, lb, _ = self.member("b")
        self.advance(5)
        self.assertEqual((a.state, b.state), (MemberState.STABLE, MemberState.STABLE))
        self.assertEqual(a.generation_id, 2)
        self.assertEqual(la.log[1], ("revoke", ALL))
        self.assertEqual(len(la.owned) + len(lb.owned), 6)
        self.assertEqual(len(la.owned), 3)

    def test_cooperative_rebalance_revokes_only_what_moves(self) -> None:
        sticky = (CooperativeStickyAssignor(),)
        a, la, _ = self.member("a", sticky)
        self.advance(4)
        b, lb, _ = self.member("b", sticky)
        self.advance(6)
        self.assertEqual((len(la.owned), len(lb.owned)), (3, 3))
        revocations = [ps for kind, ps in la.log if kind == "revoke"]
        self.assertEqual(len(revocations), 1)
        self.assertEqual(len(revocations[0]), 3)
        self.assertEqual(a.generation_id, 3, "two rebalances: revoke, then hand over")
        # a's second subscription claimed what it owned in generation 1.
        joins = [r for r in self.seen(JOIN) if r.request.member_id == a.member_id]
        sub = decode_subscription(joins[-2].request.protocols[0].metadata)
        self.assertEqual((len(sub.owned), sub.generation_id), (6, 1))
        # Kept partitions carry the new generation to their commits.
        self.assertEqual(la.generations[-1], Generation(3, a.member_id))

    def test_heartbeats_continue_while_revocation_is_slow(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        la.hold = Deferred()
        self.member("b")
        self.advance(2)
        self.assertEqual(a.state, MemberState.PREPARING)
        before = len(self.seen(HEARTBEAT))
        self.advance(8)
        self.assertGreaterEqual(len(self.seen(HEARTBEAT)) - before, 6)
        self.assertEqual(a.state, MemberState.PREPARING)
        la.hold.callback(None)
        la.hold = None
        self.advance(2)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(len(la.owned), 3)

    def test_revocation_beyond_rebalance_timeout_leaves_cleanly(self) -> None:
        # a overstays: b gets a's partitions while a still holds them (as with
        # Kafka's Java consumer), so a keeps its own books.
        a, la, _ = self.member("a", owners=Owners(), rebalance_timeout_ms=5000)
        self.advance(4)
        old_id = a.member_id
        la.hold = Deferred()
        b, lb, _ = self.member("b")
        self.advance(6)
        (leave,) = self.seen(LEAVE)
        self.assertEqual(leave.request.members[0].member_id, old_id)
        self.assertEqual(a.state, MemberState.UNJOINED)
        self.advance(2)
        self.assertEqual(lb.owned, ALL, "b takes everything once a left")
        la.hold.callback(None)
        la.hold = None
        self.advance(8)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertNotEqual(a.member_id, old_id)
        self.assertEqual(len(la.owned), 3)
        self.assertEqual(len(lb.owned), 3)

    def test_heartbeat_rebalance_in_progress_rejoins(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        self.cluster.fail_next(HeartbeatRequest, RebalanceInProgress)
        self.advance(2)
        self.assertEqual(a.generation_id, 2)
        self.assertEqual([k for k, _ in la.log], ["assign", "revoke", "assign"])

    def test_heartbeat_illegal_generation_loses_partitions_keeps_member_id(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        member_id = a.member_id
        self.cluster.fail_next(HeartbeatRequest, IllegalGeneration)
        self.advance(2)
        self.assertEqual(la.log[1], ("lose", ALL))
        self.assertEqual(a.member_id, member_id)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)

    def test_heartbeat_unknown_member_loses_partitions_and_member_id(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        member_id = a.member_id
        self.cluster.fail_next(HeartbeatRequest, UnknownMemberId)
        self.advance(1.25)
        self.assertEqual(la.log[1], ("lose", ALL))
        self.assertEqual(a.generation_id, -1)
        self.assertNotEqual(a.member_id, member_id, "a new id from MEMBER_ID_REQUIRED")
        self.advance(40)  # the old member's session expires; a joins as a new member
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertNotEqual(a.member_id, member_id)
        self.assertEqual(la.owned, ALL)

    def test_fenced_instance_is_fatal(self) -> None:
        a, la, done = self.member("a", group_instance_id="i-1")
        self.advance(4)
        self.cluster.fail_next(HeartbeatRequest, FencedInstanceId)
        self.advance(2)
        self.failureResultOf(done, FencedInstanceId)
        self.assertEqual(a.state, MemberState.STOPPED)
        self.assertEqual(la.log[-1], ("lose", ALL))
        self.assertEqual(self.seen(LEAVE), [])

    def test_second_static_member_fences_the_first(self) -> None:
        # Until a hears it was fenced, both hold the partitions (as with Kafka).
        a, la, done_a = self.member("a", owners=Owners(), group_instance_id="i-1")
        self.advance(4)
        b, lb, _ = self.member("b", group_instance_id="i-1")
        self.advance(1)
        self.assertEqual(b.state, MemberState.STABLE)
        self.assertEqual(b.generation_id, 1, "a static member replaces another without a rebalance")
        self.advance(2)
        self.failureResultOf(done_a, FencedInstanceId)
        self.assertEqual(lb.owned, ALL)

    def test_static_member_restarts_without_rebalance_and_never_leaves(self) -> None:
        a, la, done = self.member("a", group_instance_id="i-1")
        other, lo, _ = self.member("o")
        self.advance(4)
        owned = la.owned
        a.stop()
        self.advance(1)
        self.successResultOf(done)
        self.assertEqual(self.seen(LEAVE), [])
        self.assertEqual(lo.owned, [tp for tp in ALL if tp not in owned], "no rebalance")
        a2, la2, _ = self.member("a2", group_instance_id="i-1")
        self.advance(2)
        self.assertEqual(a2.generation_id, 1)
        self.assertEqual(la2.owned, owned)

    def test_static_member_on_a_broker_without_static_membership_fails_its_start(self) -> None:
        """Issue 33: JoinGroup below v5 (Kafka before 2.3) has no group.instance.id."""
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock, api_versions={JOIN: (0, 4)})
        self.cluster.create_topic(TOPIC, 6)
        a, la, done = self.member("a", group_instance_id="i-1")
        self.advance(1)
        failure = self.failureResultOf(done, NoCommonVersionError)
        self.assertIn("group_instance_id (static membership) needs Kafka 2.3", str(failure.value))
        self.assertIn("JoinGroup v5", str(failure.value))
        self.assertEqual((a.state, la.log), (MemberState.STOPPED, []))
        self.assertEqual(self.seen(JOIN), [])
        b, lb, _ = self.member("b")  # a dynamic member joins as before
        self.advance(4)
        self.assertEqual(lb.owned, ALL)

    def test_dead_member_is_dropped_after_its_session(self) -> None:
        a, la, _ = self.member("a")
        b, lb, b_done = self.member("b", owners=Owners())
        self.advance(4)
        self.assertEqual(len(lb.owned), 3)
        # Kill b: its process is gone (no LeaveGroup, no heartbeats), and with it
        # its claim on partitions (it keeps its own books).
        self.clients["b"].close()
        self.advance(8)
        self.assertEqual(len(la.owned), 3, "b's session (10 s) has not expired yet")
        self.advance(4)
        self.assertEqual(la.owned, ALL)
        self.assertEqual(a.generation_id, 2)
        self.assertEqual(
            list(self.cluster.state.group_coordinator.groups["g"].members), [a.member_id]
        )
        self.assertEqual(self.seen(LEAVE), [])
        # b's own session ended with no heartbeat answered: it lost its partitions, and
        # its closed client refused to join again.
        self.assertEqual(lb.log[-1], ("lose", lb.log[0][1]))
        self.failureResultOf(b_done, ClientError)

    def test_coordinator_move_keeps_the_generation(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        old = self.cluster.coordinator("g")
        self.cluster.set_broker_down(old)
        self.advance(8)  # within the 10 s session: the stuck heartbeat times out at 3.3 s
        new = self.cluster.coordinator("g")
        self.assertNotEqual(new, old)
        beats = [r for r in self.seen(HEARTBEAT) if r.broker == new]
        self.assertTrue(beats)
        self.assertEqual((a.state, a.generation_id), (MemberState.STABLE, 1))
        self.assertEqual(la.owned, ALL)

    def test_dead_coordinator_is_looked_up_again_within_the_backoff(self) -> None:
        """Issue 33: the coordinator's broker is killed (-9): its connections refused,
        while the cluster still names it until its controller notices (Kafka's broker
        session, 6 s here).  A request queued for the dead broker fails as soon as its
        connection attempt does, whatever its timeout (JoinGroup's is the rebalance
        timeout, 5 minutes here): the member looks the coordinator up again, backing
        off, and goes on with the new one as soon as the cluster names it."""
        members = [
            self.member(
                name,
                session_timeout_ms=6000,
                rebalance_timeout_ms=300000,
                heartbeat_interval_ms=1000,
                retry_backoff_ms=100,
                retry_backoff_max_ms=1000,
            )
            for name in "abc"
        ]
        self.advance(8)
        self.assertEqual(sorted(tp for _, listener, _ in members for tp in listener.owned), ALL)
        old = self.cluster.coordinator("g")
        self.cluster.refuse_connections(old)
        self.cluster.drop_connections(old)
        self.advance(6)  # the cluster notices
        self.cluster.set_broker_down(old)
        new = self.cluster.coordinator("g")
        self.advance(6)  # within one more session timeout
        self.assertEqual(sorted(tp for _, listener, _ in members for tp in listener.owned), ALL)
        self.assertEqual({m.state for m, _, _ in members}, {MemberState.STABLE})
        joins = [r.broker for r in self.seen(JOIN)]
        self.assertEqual(joins[-1], new)
        # Each lost coordinator asked for the live brokers: the dead one is dropped.
        self.assertEqual([old in c._brokers for c in self.clients.values()], [False] * 3)

    def test_coordinator_unreachable_for_a_session_loses_partitions(self) -> None:
        """No heartbeat answered for the session timeout: the coordinator has surely
        dropped the member, so its partitions are lost (as librdkafka: "session timed
        out ... revoking assignment and rejoining group"); it joins again when it can,
        with its member id, which a restarted coordinator may still know."""
        a, la, _ = self.member("a")
        self.advance(4)
        member_id = a.member_id
        for node in range(3):
            self.cluster.refuse_connections(node)
        self.cluster.drop_connections()
        self.advance(8)
        self.assertEqual(la.log, [("assign", ALL)], "within the 10 s session: kept")
        self.advance(4)
        self.assertEqual(la.log, [("assign", ALL), ("lose", ALL)])
        self.assertEqual((a.generation_id, a.member_id), (-1, member_id))
        beats, joins = len(self.seen(HEARTBEAT)), len(self.seen(JOIN))
        for node in range(3):
            self.cluster.refuse_connections(node, refuse=False)
        self.advance(20)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)
        # (This coordinator did expire it: UNKNOWN_MEMBER_ID, then a new id.)
        self.assertEqual(self.seen(JOIN)[joins].request.member_id, member_id)
        self.assertGreater(len(self.seen(HEARTBEAT)), beats)

    def test_member_that_stopped_heartbeating_notices_its_lost_session(self) -> None:
        # afkak 21.5's test_consumer_rejoin stops a member's heartbeats: the coordinator
        # drops it after its session while it saw nothing; its own watch tells it.
        a, la, _ = self.member("a")
        self.advance(4)
        a.heartbeats.stop()
        b, lb, _ = self.member("b", owners=Owners())
        self.advance(5)
        self.assertEqual(la.log, [("assign", ALL)])
        self.advance(7)  # a's 10 s session, since its last heartbeat answered, is over
        self.assertEqual(la.log[1], ("lose", ALL))
        self.advance(20)
        self.assertEqual((a.state, b.state), (MemberState.STABLE, MemberState.STABLE))
        self.assertEqual((len(la.owned), len(lb.owned)), (3, 3))

    def test_join_retries_coordinator_errors(self) -> None:
        self.cluster.fail_next(JoinGroupRequest, CoordinatorNotAvailable)
        self.cluster.fail_next(JoinGroupRequest, NotCoordinator)
        a, la, _ = self.member("a")
        self.advance(6)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)
        self.assertEqual(len(self.seen(JOIN)), 4)

    def test_join_failures_and_backoff_answers_share_one_backoff(self) -> None:
        """A BACKOFF answer and a lost request each count as a failure: waits of
        about 1 s, then 2 s (retry_backoff_ms doubling, jittered by 20 %)."""
        self.cluster.fail_next(JoinGroupRequest, CoordinatorLoadInProgress)
        self.cluster.drop_next(JoinGroupRequest)
        a, la, _ = self.member("a", retry_backoff_ms=1000, retry_backoff_max_ms=4000)
        joins = []
        for _ in range(80):
            joins.append(len(self.seen(JOIN)))
            self.clock.advance(0.05)
        self.assertEqual(joins[15], 1)  # 0.75 s: before the first wait can end
        self.assertEqual(joins[25], 2)  # 1.25 s: after it
        self.assertEqual(joins[47], 2)  # 2.35 s: the second wait is at least 1.6 s
        self.assertEqual(joins[79], 4)  # then the member id round
        self.advance(5)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)

    def test_join_inconsistent_protocol_is_fatal(self) -> None:
        a, la, done = self.member("a")
        self.advance(4)
        b, lb, done_b = self.member("b", (CooperativeStickyAssignor(),))
        self.advance(1)
        self.failureResultOf(done_b, InconsistentGroupProtocol)
        self.assertEqual(b.state, MemberState.STOPPED)
        self.assertEqual(la.owned, ALL)

    def test_sync_rebalance_in_progress_rejoins(self) -> None:
        self.cluster.fail_next(SyncGroupRequest, RebalanceInProgress)
        a, la, _ = self.member("a")
        self.advance(5)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)
        self.assertEqual(len(self.seen(SYNC)), 2)

    def test_sync_may_take_the_rebalance_timeout(self) -> None:
        """A follower's SyncGroup waits for the leader's, up to the rebalance timeout:
        its request timeout is the rebalance timeout plus a margin, as JoinGroup's
        (a shorter one made the member time out, rejoin and time out again forever)."""
        self.cluster.delay(SyncGroupRequest, 8)
        a, la, _ = self.member(
            "a", timeout_ms=5000, session_timeout_ms=30000, rebalance_timeout_ms=20000
        )
        self.advance(15)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)
        self.assertEqual(len(self.seen(SYNC)), 1)

    def test_sync_answer_lost_with_the_connection_rejoins(self) -> None:
        """The coordinator handled the SyncGroup but its connection dropped before the
        answer: the member joins again (same member id) and gets its assignment."""
        self.cluster.drop_answer_next(SyncGroupRequest)
        a, la, _ = self.member("a")
        self.advance(6)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)
        syncs = self.seen(SYNC)
        self.assertEqual(len(syncs), 2)
        self.assertEqual(syncs[0].request.member_id, syncs[1].request.member_id)

    def test_join_answer_lost_with_the_connection_joins_again(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        self.cluster.drop_answer_next(JoinGroupRequest)
        b, lb, _ = self.member("b")
        self.advance(30)
        self.assertEqual((a.state, b.state), (MemberState.STABLE, MemberState.STABLE))
        self.assertEqual(sorted(la.owned + lb.owned), ALL)

    def test_silent_coordinator_times_out_and_member_rejoins(self) -> None:
        """A coordinator that never answers SyncGroup: the request times out after the
        rebalance timeout plus the margin and the member joins again; nothing hangs."""
        self.cluster.delay(SyncGroupRequest, 1000)
        a, la, _ = self.member("a", session_timeout_ms=60000, rebalance_timeout_ms=20000)
        self.advance(30)
        self.assertGreaterEqual(len(self.seen(SYNC)), 2)
        self.cluster.delay(SyncGroupRequest, 0)
        self.advance(60)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertEqual(la.owned, ALL)

    def test_sync_unknown_member_rejoins_as_new_member(self) -> None:
        self.cluster.fail_next(SyncGroupRequest, UnknownMemberId)
        a, la, _ = self.member("a")
        self.advance(4)
        first_id = self.seen(SYNC)[0].request.member_id
        self.advance(30)
        self.assertEqual(a.state, MemberState.STABLE)
        self.assertNotEqual(a.member_id, first_id)
        self.assertEqual(la.owned, ALL)

    def test_stop_revokes_then_leaves(self) -> None:
        a, la, done = self.member("a")
        b, lb, _ = self.member("b")
        self.advance(4)
        member_id = a.member_id
        a.stop()
        self.advance(1)
        self.assertIsNone(self.successResultOf(done))
        self.assertEqual(la.log[-1][0], "revoke")
        (leave,) = self.seen(LEAVE)
        self.assertEqual(leave.request.members[0].member_id, member_id)
        self.advance(2)
        self.assertEqual(lb.owned, ALL)
        self.assertEqual(a.state, MemberState.STOPPED)

    def test_leader_rebalances_when_partitions_are_added(self) -> None:
        a, la, _ = self.member("a")
        self.advance(4)
        topic = self.cluster.state.topics[TOPIC]
        self.cluster.create_topic("u", 2)
        topic.partitions.extend(self.cluster.state.topics.pop("u").partitions)
        for i, p in enumerate(topic.partitions):
            p.index, p.topic = i, TOPIC
        self.successResultOf(a.client.load_metadata_for_topics(TOPIC))
        self.advance(3)
        self.assertEqual(a.generation_id, 2)
        self.assertEqual(len(la.owned), 8)
