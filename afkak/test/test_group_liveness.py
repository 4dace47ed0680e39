"""max_poll_interval_ms (issue 22): a stuck processor makes its member leave the group."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import globalLogPublisher

from afkak.common import TopicAndPartition
from afkak.group import MemberState
from afkak.protocol.messages import LeaveGroupRequest
from afkak.test.test_group_consumer import PARTITIONS, GroupTestCase

T0 = TopicAndPartition("t", 0)


class LivenessTests(GroupTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.logged: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(self.logged.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.logged.append)

    def leaves(self) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == LeaveGroupRequest.API_KEY]

    def test_a_stuck_processor_hands_the_partitions_to_the_others(self) -> None:
        self.produce(3)
        stuck: list[Deferred[None]] = []
        cancelled: list[bool] = []
        seen: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}

        def processor(name: str) -> Any:
            def process(consumer: Any, messages: list[Any]) -> Any:
                seen[name].extend((consumer.partition, m.offset) for m in messages)
                if name == "a" and consumer.partition == 0 and not stuck:
                    d: Deferred[None] = Deferred(lambda _: cancelled.append(True))
                    stuck.append(d)
                    return d
                return None

            return process

        a = self.group("a", processor("a"), max_poll_interval_ms=4000, auto_commit_every_n=1)
        a.start()
        b = self.group("b", processor("b"), max_poll_interval_ms=4000)
        b.start()
        self.advance(6)
        self.assertNotIn(T0, b.assignment())
        self.assertEqual(len(stuck), 1, "a's call for t/0 is stuck")
        self.assertEqual(self.leaves(), [])
        self.advance(4)  # the stuck call passes 4 s: a leaves at its next heartbeat
        self.assertEqual(len(self.leaves()), 1)
        warnings = [
            e
            for e in self.logged
            if "leaving the group" in e.get("log_format", "")
            and "max_poll_interval_ms=4000" in str(e.get("reason"))
        ]
        self.assertEqual(len(warnings), 1)
        self.assertIn("processor of t/0", warnings[0]["reason"])
        self.advance(10)
        # b took every partition and processed t/0; a stays out while its call is stuck.
        self.assertEqual(len(b.assignment()), PARTITIONS)
        self.assertIn((0, 0), seen["b"])
        self.assertIs(a.state, MemberState.UNJOINED)
        self.assertEqual(cancelled, [], "the stuck call is left alone")
        stuck[0].callback(None)  # it returns at last: a joins again, as a new member
        self.advance(10)
        self.assertEqual((a.state, b.state), (MemberState.STABLE, MemberState.STABLE))
        self.assertEqual((len(a.assignment()), len(b.assignment())), (3, 3))
        self.produce(1)
        self.advance(3)
        everything = seen["a"] + seen["b"]
        self.assertEqual(everything.count((0, 0)), 2, "only the stuck record twice")
        self.assertEqual(set(everything), self.expected())

    def test_a_slow_but_live_processor_keeps_its_membership(self) -> None:
        self.produce(3)
        held: list[Deferred[None]] = []

        def processor(consumer: Any, messages: list[Any]) -> Any:
            d: Deferred[None] = Deferred()
            held.append(d)
            return d

        g = self.group("a", processor, max_poll_interval_ms=4000)
        g.start()
        self.advance(5)
        for _ in range(6):  # each call returns within 3 s
            for d in held[:]:
                held.remove(d)
                d.callback(None)
            self.advance(3)
        self.assertEqual(self.leaves(), [])
        self.assertEqual(g.state, MemberState.STABLE)

    def test_bad_max_poll_interval(self) -> None:
        for bad, error in [(0, ValueError), ("1", TypeError)]:
            with self.assertRaises(error):
                self.group("a", max_poll_interval_ms=bad)
