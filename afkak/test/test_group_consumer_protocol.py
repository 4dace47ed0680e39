"""ConsumerGroup(group_protocol="consumer") (KIP-848) against the fake cluster's coordinator."""

from __future__ import annotations

import re
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure

from afkak import KafkaConsumer
from afkak.common import (
    OFFSET_EARLIEST,
    FencedMemberEpoch,
    GroupAuthorizationFailed,
    GroupIdNotFound,
    UnknownMemberId,
)
from afkak.group import ConsumerGroup
from afkak.group._kip848_member import TABLE, ConsumerMemberEvent, ConsumerMemberState
from afkak.protocol.messages import ConsumerGroupHeartbeatRequest, OffsetCommitRequest
from afkak.test.test_group_consumer import PARTITIONS, TOPIC, GroupTestCase

S, E = ConsumerMemberState, ConsumerMemberEvent


class ConsumerProtocolTestCase(GroupTestCase):
    def stop_all(self) -> None:
        for g in self.groups:
            if g.member.state not in (S.STOPPED, S.LEAVING):
                g.stop()
        self.advance(10)

    def group(self, name: str, processor: Any = None, **options: Any) -> ConsumerGroup:
        options.setdefault("group_protocol", "consumer")
        options.setdefault("assignors", ["range"])
        topics = options.pop("topics", [TOPIC])
        if topics == [TOPIC]:
            return super().group(name, processor, **options)
        settings = {"auto_offset_reset": -2, "heartbeat_interval_ms": 1000, **options}
        group = ConsumerGroup(
            self.client(name), "g", topics, processor or self.ledger.processor(name), **settings
        )
        self.groups.append(group)
        return group

    def heartbeats(self) -> list[Any]:
        return [
            r
            for r in self.cluster.requests_seen
            if r.api_key == ConsumerGroupHeartbeatRequest.API_KEY
        ]


class ConsumerProtocolTests(ConsumerProtocolTestCase):
    def test_one_member_takes_every_partition_and_commits_with_its_epoch(self) -> None:
        self.produce(10)
        states: list[S] = []
        a = self.group("a", on_assigned=lambda ps: states.append(a.member.state))
        a.start()
        self.advance(1)
        self.assertEqual(states, [S.RECONCILING])
        self.assertIs(a.member.state, S.STABLE)
        self.assertEqual(len(a.assignment()), PARTITIONS)
        self.assertEqual(a.member.generation_id, 1)
        self.advance(3)
        self.assertEqual(set(self.ledger.seen), self.expected())
        commits = [
            r for r in self.cluster.requests_seen if r.api_key == OffsetCommitRequest.API_KEY
        ]
        self.assertTrue(commits)
        self.assertEqual({r.request.generation_id_or_member_epoch for r in commits}, {1})
        group = self.cluster.state.consumer_groups.groups["g"]
        self.assertEqual(list(group.members), [a.member_id])

    def test_second_member_gets_partitions_after_the_first_revoked_them(self) -> None:
        self.produce(20)
        calls: list[tuple[str, str, int]] = []
        a = self.group(
            "a",
            on_assigned=lambda ps: calls.append(("a", "+", len(ps))),
            on_revoked=lambda ps: calls.append(("a", "-", len(ps))),
        )
        a.start()
        self.advance(3)
        b = self.group("b", on_assigned=lambda ps: calls.append(("b", "+", len(ps))))
        b.start()
        self.produce(20)
        self.advance(12)
        self.assertEqual(calls, [("a", "+", 6), ("a", "-", 3), ("b", "+", 3)])
        self.assertEqual(len(a.assignment()), 3)
        self.assertEqual(len(b.assignment()), 3)
        self.assertIs(a.member.state, S.STABLE)
        self.assertIs(b.member.state, S.STABLE)
        self.produce(5)
        self.advance(3)
        self.assertEqual(self.ledger.overlaps, [])
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(len(self.ledger.seen), len(set(self.ledger.seen)), "revocation committed")
        # The member leaves with epoch -1; a takes everything back.
        self.result(b.shutdown())
        self.assertEqual(self.heartbeats()[-1].request.member_epoch, -1)
        self.produce(5)
        self.advance(12)
        self.assertEqual(len(a.assignment()), PARTITIONS)
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(len(self.ledger.seen), len(set(self.ledger.seen)))


class ConsumerProtocolFailoverTests(ConsumerProtocolTestCase):
    def test_group_moves_off_a_dead_coordinator(self) -> None:
        self.check_moving_off_a_dead_coordinator()


class Transitions:
    """The member transitions logged while a test runs: ``(state, event)`` pairs."""

    def __init__(self, test: Any) -> None:
        self.seen: list[tuple[S, E]] = []
        globalLogPublisher.addObserver(self.observe)
        test.addCleanup(globalLogPublisher.removeObserver, self.observe)

    def observe(self, event: dict[str, Any]) -> None:
        transition = event.get("transition")
        if transition is not None:
            self.seen.append(transition)


class TransitionsTestCase(ConsumerProtocolTestCase):
    """Checks the member transitions a test went through."""

    def setUp(self) -> None:
        super().setUp()
        self.transitions = Transitions(self)
        self.coordinator = self.cluster.state.consumer_groups

    def assertTransitions(self, *expected: tuple[S, E]) -> None:  # noqa: N802
        for t in expected:
            self.assertIn(t, self.transitions.seen)
            self.assertIn(t, TABLE.transitions)

    def commits(self) -> int:
        return len(
            [r for r in self.cluster.requests_seen if r.api_key == OffsetCommitRequest.API_KEY]
        )


class ConsumerProtocolStateTests(TransitionsTestCase):
    """The member's table, transition by transition, on the fake cluster."""

    def test_join_reconcile_acknowledge_leave(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(1)
        self.assertIs(a.member.state, S.STABLE)
        self.result(a.shutdown())
        self.assertIs(a.member.state, S.STOPPED)
        self.assertTransitions(
            (S.STOPPED, E.START),
            (S.JOINING, E.ASSIGNED),
            (S.RECONCILING, E.RECONCILED),
            (S.ACKNOWLEDGING, E.ACKNOWLEDGED),
            (S.STABLE, E.STOP),
            (S.LEAVING, E.LEFT),
        )
        joined, left = self.heartbeats()[0].request, self.heartbeats()[-1].request
        self.assertEqual((joined.member_epoch, left.member_epoch), (0, -1))
        self.assertEqual(joined.member_id, left.member_id)
        self.assertEqual(len(joined.member_id), 22, "a client-made base64 UUID (KIP-1082)")
        self.assertEqual(joined.subscribed_topic_names, [TOPIC])
        self.assertEqual(self.coordinator.groups["g"].members, {})

    def test_fenced_member_loses_its_partitions_and_joins_with_epoch_zero(self) -> None:
        self.produce(10)
        lost: list[int] = []
        a = self.group("a", on_lost=lambda ps: lost.append(len(ps)))
        a.start()
        self.advance(3)
        member = self.coordinator.groups["g"].members[a.member_id]
        member.epoch += 7  # the coordinator moved on without it
        commits_before = self.commits()
        self.advance(6)
        self.assertEqual(lost, [PARTITIONS])
        self.assertEqual(self.commits(), commits_before, "fenced: nothing committed")
        self.assertIs(a.member.state, S.STABLE)
        self.assertEqual(len(a.assignment()), PARTITIONS)
        self.assertIn(0, [h.request.member_epoch for h in self.heartbeats()[2:]])
        self.assertTransitions((S.STABLE, E.FENCED), (S.UNJOINED, E.JOIN))

    def test_unknown_member_is_fenced_too(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(3)
        del self.coordinator.groups["g"].members[a.member_id]
        self.advance(6)
        self.assertTransitions((S.STABLE, E.FENCED), (S.UNJOINED, E.JOIN))
        self.assertIs(a.member.state, S.STABLE)

    def test_stuck_processor_leaves_then_joins_again(self) -> None:
        self.produce(3)
        held: Deferred[None] = Deferred()
        hold = [held]
        a = self.group("a", self.ledger.processor("a", hold), max_poll_interval_ms=4000)
        a.start()
        self.advance(12)
        self.assertTransitions((S.STABLE, E.POLL_TIMEOUT))
        self.assertIn(-1, [h.request.member_epoch for h in self.heartbeats()])
        self.assertIs(a.member.state, S.UNJOINED)
        self.produce(1)
        self.advance(1)
        self.assertIs(a.member.state, S.UNJOINED, "joins again only once live")
        # a's abandoned processor call returns: it joins again as a new epoch-0 member.
        held.callback(None)
        self.advance(8)
        self.assertTransitions((S.UNJOINED, E.JOIN))
        self.assertIs(a.member.state, S.STABLE)
        self.assertEqual(len(a.assignment()), PARTITIONS)

    def test_a_new_assignment_while_acknowledging_or_reconciling(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(0.2)
        # Reconciled and acknowledging: a new epoch arrives before the ack is answered.
        self.assertTrue(any(t == (S.RECONCILING, E.RECONCILED) for t in self.transitions.seen))
        self.advance(1)
        b = self.group("b")
        b.start()
        self.advance(12)
        self.assertTransitions((S.STABLE, E.ASSIGNED))
        self.assertEqual(sorted(len(g.assignment()) for g in (a, b)), [3, 3])

    def test_fatal_coordinator_error_fails_the_group(self) -> None:
        classic = self.group("classic", group_protocol="classic", assignors=["range"])
        classic.start()
        self.advance(5)
        a = self.group("a")
        failed = a.start()
        self.advance(1)
        self.failureResultOf(failed, GroupIdNotFound)
        self.assertTransitions((S.JOINING, E.FAIL))

    def test_processor_error_stops_and_leaves(self) -> None:
        self.produce(1)

        def broken(consumer: Any, messages: Any) -> None:
            raise ZeroDivisionError()

        a = self.group("a", broken)
        failed = a.start()
        self.advance(3)
        self.failureResultOf(failed, ZeroDivisionError)
        self.assertTransitions((S.STABLE, E.STOP), (S.LEAVING, E.LEFT))


class ConsumerProtocolOptionsTests(ConsumerProtocolTestCase):
    def test_range_assignor_gives_contiguous_ranges(self) -> None:
        a = self.group("a", group_remote_assignor="range")
        b = self.group("b", group_remote_assignor="range")
        a.start()
        b.start()
        self.advance(15)
        ranges = sorted(sorted(tp.partition for tp in g.assignment()) for g in (a, b))
        self.assertEqual(ranges, [[0, 1, 2], [3, 4, 5]])
        self.assertEqual(self.heartbeats()[0].request.server_assignor, "range")

    def test_static_member_comes_back_to_its_partitions(self) -> None:
        a = self.group("a", group_instance_id="static-a")
        b = self.group("b")
        a.start()
        b.start()
        self.advance(15)
        held = a.assignment()
        self.result(a.shutdown())
        mine = [h.request for h in self.heartbeats() if h.request.member_id == a.member_id]
        self.assertEqual(mine[-1].member_epoch, -2)
        self.advance(10)
        self.assertEqual(len(b.assignment()), 3, "a static member's partitions wait for it")
        again = self.group("a2", group_instance_id="static-a")
        again.start()
        self.advance(10)
        self.assertEqual(again.assignment(), held)

    def test_regex_subscription_on_the_broker(self) -> None:
        self.cluster.create_topic("other", 2)
        a = self.group("a", pattern=re.compile("t|late.*"), topics=[])
        a.start()
        self.advance(3)
        self.assertEqual({tp.topic for tp in a.assignment()}, {TOPIC})
        request = self.heartbeats()[0].request
        self.assertEqual(request.subscribed_topic_regex, "t|late.*")
        self.assertIsNone(request.subscribed_topic_names)
        self.cluster.create_topic("later", 2)
        self.advance(12)
        self.assertEqual(len(a.assignment()), PARTITIONS + 2)

    def test_bad_arguments(self) -> None:
        with self.assertRaises(ValueError):
            self.group("a", group_protocol="modern")
        with self.assertRaises(ValueError):
            self.group("a", group_protocol="classic", group_remote_assignor="range")
        with self.assertRaises(ValueError):
            self.group("a", group_remote_assignor="sticky")

    def test_dead_member_partitions_move_after_the_broker_session(self) -> None:
        self.produce(10)
        a, b = self.group("a"), self.group("b")
        a.start()
        b.start().addErrback(lambda f: None)
        self.advance(15)
        self.assertEqual(sorted(len(g.assignment()) for g in (a, b)), [3, 3])
        b.client.close()  # b's process dies: no more heartbeats, no leave
        self.produce(10)
        self.advance(50)  # the fake's 45 s consumer session
        self.assertEqual(len(a.assignment()), PARTITIONS)
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(self.ledger.overlaps, [])


class ConsumerProtocolPullTests(ConsumerProtocolTestCase):
    def test_kafka_consumer_subscribes_with_the_consumer_protocol(self) -> None:
        self.produce(10)
        c = KafkaConsumer(
            self.client("pull"),
            group_id="g",
            group_protocol="consumer",
            auto_offset_reset=OFFSET_EARLIEST,
            fetch_max_wait_time=200,
        )
        self.addCleanup(lambda: (c.close(), self.advance(5)))
        c.subscribe([TOPIC])
        self.advance(3)
        self.assertEqual(len(c.assignment()), PARTITIONS)
        seen: set[tuple[int, int]] = set()
        for _ in range(10):
            got = self.successResultOf(c.getmany())
            seen |= {(tp.partition, r.offset) for tp, rs in got.items() for r in rs}
            self.advance(0.2)
        self.assertEqual(seen, self.expected())
        self.result(c.commit())
        self.assertEqual(self.heartbeats()[0].request.subscribed_topic_names, [TOPIC])


class ConsumerProtocolInterruptionTests(TransitionsTestCase):
    """Stops, fencing and fatal errors in the middle of joining and reconciling."""

    def test_stop_while_joining(self) -> None:
        self.cluster.delay(ConsumerGroupHeartbeatRequest, 1.0)
        a = self.group("a")
        done = a.start()
        self.advance(0.5)
        a.stop()
        self.advance(1)
        self.assertEqual(self.successResultOf(done), {})
        self.assertTransitions((S.JOINING, E.STOP), (S.LEAVING, E.LEFT))
        self.assertNotIn(-1, [h.request.member_epoch for h in self.heartbeats()])

    def test_fenced_while_joining(self) -> None:
        self.cluster.fail_next(ConsumerGroupHeartbeatRequest, UnknownMemberId)
        a = self.group("a")
        a.start()
        self.advance(2)
        self.assertTransitions((S.JOINING, E.FENCED), (S.UNJOINED, E.JOIN))
        self.assertIs(a.member.state, S.STABLE)

    def revoking_member(self) -> tuple[ConsumerGroup, Deferred[None]]:
        """Member a, revoking 3 partitions for b: its on_revoked has not returned yet."""
        held: Deferred[None] = Deferred()
        a = self.group("a", on_revoked=lambda ps: held)
        a.start()
        self.advance(3)
        self.group("b").start()
        self.advance(6)
        self.assertIs(a.member.state, S.RECONCILING)
        return a, held

    def test_stop_while_reconciling(self) -> None:
        a, held = self.revoking_member()
        a.stop()
        self.advance(1)
        self.assertIs(a.member.state, S.LEAVING, "the revocation under way ends first")
        held.callback(None)
        self.advance(1)
        self.assertIs(a.member.state, S.STOPPED)
        self.assertTransitions((S.RECONCILING, E.STOP), (S.LEAVING, E.LEFT))

    def test_fenced_while_reconciling(self) -> None:
        a, held = self.revoking_member()
        self.coordinator.groups["g"].members[a.member_id].epoch += 7
        self.advance(6)  # a heartbeat while revoking: fenced
        held.callback(None)
        self.advance(10)
        self.assertTransitions((S.RECONCILING, E.FENCED), (S.UNJOINED, E.JOIN))
        self.assertIn(a.member.state, (S.STABLE, S.RECONCILING))

    def acknowledging_member(self) -> ConsumerGroup:
        """Member a, reconciled, its acknowledging heartbeat held 1 s by the broker."""
        self.cluster.delay(ConsumerGroupHeartbeatRequest, 1.0)
        a = self.group("a")
        a.start()
        self.advance(1.5)
        self.assertIs(a.member.state, S.ACKNOWLEDGING)
        return a

    def test_stop_while_acknowledging(self) -> None:
        a = self.acknowledging_member()
        a.stop()
        self.advance(3)
        self.assertTransitions((S.ACKNOWLEDGING, E.STOP))
        self.assertIs(a.member.state, S.STOPPED)

    def test_fenced_or_refused_while_acknowledging(self) -> None:
        self.cluster.delay(ConsumerGroupHeartbeatRequest, 1.0)
        a = self.group("a")
        failed = a.start()
        # The join goes through, the acknowledgement is fenced.
        self.advance(0.5)
        self.cluster.fail_next(ConsumerGroupHeartbeatRequest, FencedMemberEpoch)
        self.advance(3)
        self.assertTransitions((S.ACKNOWLEDGING, E.FENCED))
        self.cluster.delay(ConsumerGroupHeartbeatRequest, 0)
        self.advance(8)
        self.assertIs(a.member.state, S.STABLE)
        # A fatal refusal of a STABLE member's heartbeat fails the group.
        self.cluster.fail_next(ConsumerGroupHeartbeatRequest, GroupAuthorizationFailed)
        self.advance(8)
        self.failureResultOf(failed, GroupAuthorizationFailed)
        self.assertTransitions((S.STABLE, E.FAIL))

    def test_stop_while_unjoined_waiting_for_the_application(self) -> None:
        self.produce(3)
        held: Deferred[None] = Deferred()
        a = self.group("a", self.ledger.processor("a", [held]), max_poll_interval_ms=4000)
        done = a.start()
        self.advance(12)
        self.assertIs(a.member.state, S.UNJOINED)
        a.stop()
        self.advance(2)
        self.assertTransitions((S.UNJOINED, E.STOP), (S.LEAVING, E.LEFT))
        self.successResultOf(done)
        held.callback(None)

    def test_fatal_refusal_while_reconciling_or_acknowledging_or_unjoined(self) -> None:
        a, held = self.revoking_member()
        failed = a._start_d  # noqa: SLF001 -- what a.start() returned
        assert failed is not None
        self.cluster.fail_next(ConsumerGroupHeartbeatRequest, GroupAuthorizationFailed)
        self.advance(6)
        held.callback(None)
        self.advance(1)
        self.failureResultOf(failed, GroupAuthorizationFailed)
        self.assertTransitions((S.RECONCILING, E.FAIL))

    def test_fatal_refusal_while_acknowledging(self) -> None:
        self.cluster.delay(ConsumerGroupHeartbeatRequest, 1.0)
        a = self.group("a")
        failed = a.start()
        self.advance(0.5)
        self.cluster.fail_next(ConsumerGroupHeartbeatRequest, GroupAuthorizationFailed)
        self.advance(3)
        self.failureResultOf(failed, GroupAuthorizationFailed)
        self.assertTransitions((S.ACKNOWLEDGING, E.FAIL))

    def test_fatal_consumer_error_while_unjoined(self) -> None:
        self.produce(3)
        held: Deferred[None] = Deferred()
        a = self.group("a", self.ledger.processor("a", [held]), max_poll_interval_ms=4000)
        failed = a.start()
        self.advance(12)
        self.assertIs(a.member.state, S.UNJOINED)
        a.on_consumer_error(Failure(GroupAuthorizationFailed()))
        self.advance(1)
        self.failureResultOf(failed, GroupAuthorizationFailed)
        self.assertTransitions((S.UNJOINED, E.FAIL))
        held.callback(None)
