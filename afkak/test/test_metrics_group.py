"""ConsumerGroup.metrics(): Java's consumer-coordinator-metrics after rebalances (fake cluster)."""

from __future__ import annotations

from twisted.logger import capturedLogs

from afkak.group import ConsumerGroup
from afkak.metrics import COORDINATOR, MetricName
from afkak.protocol.messages import HeartbeatRequest
from afkak.test.test_group_consumer import PARTITIONS, GroupTestCase


def value(group: ConsumerGroup, name: str, client_id: str) -> float:
    tags = {"client-id": client_id, "group-id": "g"}
    return group.metrics()[MetricName(name, COORDINATOR, tags=tags)]


class GroupMetricsTests(GroupTestCase):
    def test_rebalances_heartbeats_commits_assignment(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(6)
        self.assertEqual(value(a, "rebalance-total", "a"), 1)
        self.assertEqual(value(a, "assigned-partitions", "a"), PARTITIONS)
        self.assertGreaterEqual(value(a, "heartbeat-total", "a"), 2)
        self.assertLess(value(a, "last-heartbeat-seconds-ago", "a"), 1.0)
        # The coordinator waits group.initial.rebalance.delay.ms (3 s) for more members.
        self.assertAlmostEqual(value(a, "rebalance-latency-max", "a"), 3000.0)
        self.produce(10)
        self.advance(3)
        self.assertGreater(value(a, "commit-total", "a"), 0)
        self.assertGreaterEqual(value(a, "commit-latency-avg", "a"), 0)

        b = self.group("b")
        b.start()
        self.advance(10)
        self.assertEqual(value(a, "assigned-partitions", "a"), PARTITIONS // 2)
        self.assertEqual(value(b, "assigned-partitions", "b"), PARTITIONS // 2)
        # The cooperative protocol: a revokes in one rebalance, then gets its share in another.
        self.assertGreaterEqual(value(a, "rebalance-total", "a"), 2)
        # A rebalance waits for every member to join: b's took some time.
        self.assertGreater(value(b, "rebalance-latency-max", "b"), 0)

    def test_heartbeats_stop_counting_when_stopped(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(6)
        a.stop()
        self.advance(5)
        self.assertGreaterEqual(value(a, "last-heartbeat-seconds-ago", "a"), 5)

    def test_failed_heartbeat_is_logged_not_counted(self) -> None:
        """The errback gets its generation (it raised TypeError, and nothing was logged)."""
        a = self.group("a")
        a.start()
        self.advance(6)
        beats = value(a, "heartbeat-total", "a")
        self.cluster.drop_next(HeartbeatRequest)
        failed = "{member}: heartbeat failed: {error}"
        with capturedLogs() as logs:
            for _ in range(15):  # until the dropped heartbeat failed, before the next one
                self.advance(0.1)
                if any(e.get("log_format") == failed for e in logs):
                    break
        self.assertEqual(value(a, "heartbeat-total", "a"), beats)
        messages = [e.get("log_format", "") for e in logs]
        self.assertIn(failed, messages)
        self.assertFalse([e for e in logs if e.get("log_failure") is not None])
