"""ConsumerGroup position control (issue 22), and its races with processing and rebalances."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred

from afkak.common import TopicAndPartition
from afkak.consumer import OffsetAndMetadata
from afkak.group import MemberState
from afkak.protocol.messages import OffsetCommitRequest
from afkak.test.test_group_consumer import PARTITIONS, TOPIC, GroupTestCase

ALL = [TopicAndPartition(TOPIC, p) for p in range(PARTITIONS)]
T0 = ALL[0]


class GroupPositionTests(GroupTestCase):
    def test_seek_in_on_assigned_sets_where_consumers_start(self) -> None:
        self.produce(10)
        holder: list[Any] = []

        def on_assigned(partitions: list[TopicAndPartition]) -> None:
            for tp in partitions:
                holder[0].seek(tp, 5 + tp.partition % 2)
            holder[0].seek_to_end(ALL[5])

        g = self.group("a", on_assigned=on_assigned)
        holder.append(g)
        g.start()
        self.advance(5)
        expected = {(p, o) for p in range(5) for o in range(5 + p % 2, 10)}
        self.assertEqual(set(self.ledger.seen), expected)

    def test_seek_during_a_processor_call(self) -> None:
        """The call under way finishes; nothing fetched before the seek is delivered after."""
        self.produce(10)
        hold: list[Deferred[None]] = [Deferred()]
        seen: list[tuple[int, int]] = []

        def processor(consumer: Any, messages: list[Any]) -> Any:
            seen.extend((consumer.partition, m.offset) for m in messages)
            if consumer.partition == 0 and hold:
                return hold.pop()
            return None

        g = self.group("a", processor, auto_commit_every_n=2)
        g.start()
        self.advance(5)
        self.assertEqual([o for p, o in seen if p == 0], [0, 1])
        self.assertEqual(hold, [], "the processor holds partition 0's call")
        g.seek(T0, 7)
        self.advance(1)
        self.assertEqual([o for p, o in seen if p == 0], [0, 1])
        self.assertEqual(self.successResultOf(g.position(T0)), 7)

    def test_seek_during_a_processor_call_then_release(self) -> None:
        self.produce(10)
        held: list[Deferred[None]] = []

        def processor(consumer: Any, messages: list[Any]) -> Any:
            self.ledger.seen.extend((consumer.partition, m.offset) for m in messages)
            if consumer.partition == 0 and not held:
                held.append(Deferred())
                return held[0]
            return None

        g = self.group("a", processor, auto_commit_every_n=2)
        g.start()
        self.advance(5)
        g.seek(T0, 7)
        held[0].callback(None)
        self.advance(2)
        self.assertEqual([o for p, o in self.ledger.seen if p == 0], [0, 1, 7, 8, 9])
        offsets = self.result(g.shutdown())
        self.assertEqual(offsets[T0], 9)

    def test_pause_resume_and_paused(self) -> None:
        self.produce(2)
        g = self.group("a")
        g.start()
        self.advance(5)
        g.pause(T0, ALL[1])
        self.assertEqual(g.paused(), {T0, ALL[1]})
        self.produce(2)
        self.advance(3)
        self.assertEqual(sorted(o for p, o in self.ledger.seen if p == 0), [0, 1])
        self.assertEqual(sorted(o for p, o in self.ledger.seen if p == 2), [0, 1, 2, 3])
        self.assertEqual(g.state, MemberState.STABLE, "the membership goes on")
        g.resume(T0, ALL[1])
        self.advance(2)
        self.assertEqual(set(self.ledger.seen), self.expected())
        self.assertEqual(g.paused(), frozenset())

    def test_pause_during_a_rebalance(self) -> None:
        """Paused partitions the member keeps stay paused; those revoked go unpaused to
        their new owner."""
        self.produce(2)
        a = self.group("a")
        a.start()
        self.advance(5)
        b = self.group("b")
        b.start()
        self.advance(1.0)
        self.assertIs(a.state, MemberState.JOINING)
        a.pause(*a.assignment())
        self.advance(8)
        self.assertEqual((len(a.assignment()), len(b.assignment())), (3, 3))
        self.assertEqual(a.paused(), a.assignment())
        self.assertEqual(b.paused(), frozenset())
        self.produce(1)
        self.advance(3)
        got = {p for p, o in self.ledger.seen if o == 2}
        self.assertEqual(got, {tp.partition for tp in b.assignment()})
        a.resume(*a.assignment())
        self.advance(2)
        self.assertEqual(set(self.ledger.seen), self.expected())

    def test_commit_of_explicit_offsets_after_revocation_is_refused(self) -> None:
        self.produce(4)
        a = self.group("a", auto_commit_every_n=0, auto_commit_every_ms=0)
        a.start()
        self.advance(5)
        d = a.commit({T0: OffsetAndMetadata(2, "replay from 2")})
        self.advance(0.5)
        self.assertEqual(self.successResultOf(d), {T0: OffsetAndMetadata(2, "replay from 2")})
        stored = self.cluster.committed_offsets[("g", TOPIC, 0)]
        self.assertEqual((stored.offset, stored.metadata), (2, "replay from 2"))
        request = [
            r.request
            for r in self.cluster.requests_seen
            if r.api_key == OffsetCommitRequest.API_KEY
        ][-1]
        self.assertEqual(request.member_id, a.member.member_id)
        self.assertEqual(self.result(a.committed(T0)), OffsetAndMetadata(2, "replay from 2"))
        b = self.group("b")
        b.start()
        self.advance(8)
        lost = sorted(set(ALL) - a.assignment())
        self.assertEqual(len(lost), 3)
        before = self.cluster.committed_offsets[("g", TOPIC, lost[0].partition)]
        with self.assertRaises(ValueError):
            a.commit({lost[0]: 0})
        self.advance(1)
        self.assertEqual(self.cluster.committed_offsets[("g", TOPIC, lost[0].partition)], before)

    def test_commit_everything_processed(self) -> None:
        self.produce(3)
        g = self.group("a", auto_commit_every_n=0, auto_commit_every_ms=0)
        g.start()
        self.advance(5)
        self.assertEqual(self.cluster.committed_offsets, {})
        self.assertEqual(self.result(g.commit()), {tp: 2 for tp in ALL})
        self.assertEqual(
            {k[2]: v.offset for k, v in self.cluster.committed_offsets.items()},
            {p: 3 for p in range(PARTITIONS)},
        )

    def test_unassigned_partitions_and_bad_arguments_raise(self) -> None:
        g = self.group("a")
        unknown = TopicAndPartition("other", 0)
        for call, args, error in [
            (g.seek, (T0, 1), ValueError),  # not started: nothing assigned
            (g.pause, (T0,), ValueError),
            (g.seek_to_beginning, (T0,), ValueError),
            (g.position, (T0,), ValueError),
            (g.commit, ({T0: 1},), ValueError),
            (g.commit, ([T0],), TypeError),
            (g.seek, ("t0", 1), TypeError),
            (g.committed, (5,), TypeError),
            (g.offsets_for_times, ({T0: "x"},), TypeError),
        ]:
            with self.assertRaises(error, msg=(call.__name__, args)):
                call(*args)
        g.start()
        self.advance(5)
        with self.assertRaises(ValueError):
            g.seek(unknown, 1)
        with self.assertRaises(ValueError):
            g.seek(T0, -1)
        self.assertEqual(g.assignment(), set(ALL))

    def test_offsets_for_times_then_seek(self) -> None:
        for i in range(3):
            self.cluster.append(TOPIC, 0, [b"%d" % i], timestamp=1000 * (i + 1))
        g = self.group("a")
        g.start()
        self.advance(5)
        found = self.result(g.offsets_for_times({T0: 1500}))
        self.assertEqual(found, {T0: 1})
        g.seek(T0, found[T0])
        self.advance(1)
        self.assertEqual([o for p, o in self.ledger.seen if p == 0], [0, 1, 2, 1, 2])
