"""Pattern subscription (issue 22): ConsumerGroup(..., pattern=re.compile(...))."""

from __future__ import annotations

import re
from typing import Any

from afkak.common import OFFSET_EARLIEST, TopicAndPartition
from afkak.group import ConsumerGroup, MemberState
from afkak.test.test_group_consumer import GroupTestCase


class PatternTests(GroupTestCase):
    def pattern_group(self, name: str, **options: Any) -> ConsumerGroup:
        settings: dict[str, Any] = {
            "assignors": ["cooperative-sticky"],
            "session_timeout_ms": 10000,
            "heartbeat_interval_ms": 1000,
            "auto_offset_reset": OFFSET_EARLIEST,
            "metadata_max_age_ms": 5000,
            **options,
        }
        g = ConsumerGroup(
            self.client(name),
            "g",
            [],
            self.ledger.processor(name),
            pattern=re.compile(r"orders-\d+"),
            **settings,
        )
        self.groups.append(g)
        return g

    def seen_topics(self) -> set[str]:
        return set(self.seen_by_topic)

    def setUp(self) -> None:
        super().setUp()
        # A deleted topic's consumers ask for its metadata: it must stay deleted.
        self.cluster.auto_create_topics = False
        self.seen_by_topic: dict[str, list[int]] = {}
        ledger_processor = self.ledger.processor

        def processor(name: str, hold: Any = None) -> Any:
            inner = ledger_processor(name, hold)

            def process(consumer: Any, messages: list[Any]) -> Any:
                self.seen_by_topic.setdefault(consumer.topic, []).extend(m.offset for m in messages)
                return inner(consumer, messages)

            return process

        self.ledger.processor = processor  # type: ignore[method-assign]

    def test_matching_topics_created_and_deleted_rebalance_the_group(self) -> None:
        self.cluster.create_topic("orders-1", 2)
        self.cluster.create_topic("orders-x", 1)  # no full match
        self.cluster.append("orders-1", 0, [b"a", b"b"])
        self.cluster.append("orders-x", 0, [b"no"])
        self.cluster.append("t", 0, [b"no"])
        g = self.pattern_group("a")
        g.start()
        self.advance(5)
        self.assertEqual(g.topics, ["orders-1"])
        self.assertEqual(self.seen_by_topic, {"orders-1": [0, 1]})
        self.cluster.create_topic("orders-2", 1)
        self.cluster.append("orders-2", 0, [b"c"])
        self.advance(9)  # within the metadata age and a rebalance
        self.assertEqual(g.topics, ["orders-1", "orders-2"])
        self.assertEqual(self.seen_by_topic["orders-2"], [0])
        self.assertIn(TopicAndPartition("orders-2", 0), g.assignment())
        self.cluster.delete_topic("orders-1")
        self.advance(9)
        self.assertEqual(g.topics, ["orders-2"])
        self.assertEqual(g.assignment(), {TopicAndPartition("orders-2", 0)})
        self.assertIs(g.state, MemberState.STABLE)

    def test_a_pattern_matching_nothing_yet(self) -> None:
        g = self.pattern_group("a")
        g.start()
        self.advance(5)
        self.assertEqual((g.topics, g.assignment()), ([], frozenset()))
        self.cluster.create_topic("orders-7", 1)
        self.cluster.append("orders-7", 0, [b"x"])
        self.advance(9)
        self.assertEqual(self.seen_by_topic, {"orders-7": [0]})

    def test_stop_before_the_first_lookup_answered(self) -> None:
        g = self.pattern_group("a")
        done = g.start()
        stopped = g.stop()
        self.advance(2)
        self.assertEqual(self.successResultOf(stopped), {})
        self.assertEqual(self.successResultOf(done), {})

    def test_bad_arguments(self) -> None:
        client = self.client("x")
        for args, options, error in [
            (["t"], {"pattern": re.compile("t")}, ValueError),
            ([], {"pattern": "orders-.*"}, TypeError),
            ([], {}, ValueError),
            ([], {"pattern": re.compile("t"), "metadata_max_age_ms": 0}, ValueError),
        ]:
            with self.assertRaises(error, msg=(args, options)):
                ConsumerGroup(client, "g", args, print, **options)
