"""afkak 21's private ``afkak._group.Coordinator`` on the fake cluster, used as 21.5's
own test_group_integration uses it: hooks set on the instance, assignments as tuples."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred

from afkak._group import ConsumerGroup, Coordinator
from afkak.common import RestartError, RestopError, UnknownMemberId
from afkak.group import ConsumerGroup as PublicConsumerGroup
from afkak.protocol.messages import HeartbeatRequest
from afkak.test.helpers import ClockTestCase
from afkak.testing import FakeKafkaCluster

TOPIC = "test-topic"


class CoordinatorTests(ClockTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        self.cluster.create_topic(TOPIC, 6)

    def coordinator(self, name: str, **options: Any) -> Coordinator:
        client = self.client_of(self.cluster, name)
        return Coordinator(client, "g", [TOPIC], heartbeat_interval_ms=100, **options)

    def advance(self, seconds: float) -> None:
        for _ in range(int(seconds / 0.1)):
            self.clock.advance(0.1)

    def test_members_share_the_partitions_round_robin(self) -> None:
        a, b = self.coordinator("a"), self.coordinator("b")
        seen: dict[str, list[Any]] = {"a": [], "b": []}
        a.on_join_complete = seen["a"].append  # type: ignore[method-assign]
        b.on_join_complete = seen["b"].append  # type: ignore[method-assign]
        a_done = a.start()
        self.advance(4)
        self.assertEqual(seen["a"], [{TOPIC: (0, 1, 2, 3, 4, 5)}])
        self.assertEqual(a.leader_id, a.member_id)
        first = a.generation_id
        b.start()
        self.advance(4)
        self.assertEqual(seen["a"][-1], {TOPIC: (0, 2, 4)})
        self.assertEqual(seen["b"], [{TOPIC: (1, 3, 5)}])
        self.assertEqual((b.generation_id, b.leader_id), (a.generation_id, a.leader_id))
        self.assertNotEqual(a.generation_id, first)
        stopped = a.stop()
        self.advance(1)
        self.assertIsNone(self.successResultOf(stopped))
        self.assertIs(self.successResultOf(a_done), a)
        self.assertEqual((a.member_id, a.generation_id), ("", None))
        self.advance(2)
        self.assertEqual(seen["b"][-1], {TOPIC: (0, 1, 2, 3, 4, 5)})
        self.assertRaises(RestopError, a.stop)
        b.stop()
        self.advance(1)

    def test_hooks_and_restart(self) -> None:
        calls: list[str] = []

        class Hooked(Coordinator):
            def on_join_prepare(self) -> Any:
                calls.append("prepare")
                return Deferred.fromCoroutine(self._later())

            async def _later(self) -> None:
                calls.append("prepared")

            def on_group_leave(self) -> None:
                calls.append("leave")

        c = Hooked(self.coordinator("c").client, "g", [TOPIC], heartbeat_interval_ms=100)
        c.start()
        self.assertRaises(RestartError, c.start)
        self.advance(2)
        self.cluster.fail_next(HeartbeatRequest, UnknownMemberId)
        self.advance(2)
        self.assertEqual(calls, ["prepare", "prepared", "leave", "prepare", "prepared"])
        c.stop()
        self.advance(1)

    def test_arguments_and_consumer_group(self) -> None:
        self.assertRaises(ValueError, Coordinator, None, "g", [])
        c = self.coordinator("d", session_timeout_ms=6000, fatal_backoff_ms=3000)
        self.assertEqual((c.session_timeout_ms, c.fatal_backoff_ms), (6000, 3000))
        self.assertEqual(c.member.session_timeout_ms, 6000)
        self.assertIs(ConsumerGroup, PublicConsumerGroup)
