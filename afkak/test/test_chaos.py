"""Short runs of the chaos harness (tools/chaos.py); the long runs are in docs/reliability.rst.

Each run stays under a minute or two.  The broker runs skip when their broker
cannot start; the whole module skips outside a source checkout (no tools/).
"""

from __future__ import annotations

import importlib
import os
import sys
import unittest
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

TOOLS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "tools")


def tool(name: str) -> Any:
    if not os.path.exists(os.path.join(TOOLS, name + ".py")):
        raise unittest.SkipTest("tools/ is not here (not a source checkout)")
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    return importlib.import_module(name)


class FuzzTests(SynchronousTestCase):
    def test_mutated_responses_break_nothing(self) -> None:
        report = tool("chaos_fuzz").fuzz(3000, seed=1)
        self.assertGreaterEqual(report.mutated, 3000)
        self.assertEqual((report.crashes, report.hung, report.collateral), (0, 0, 0))
        self.assertEqual(report.timers_left, 0)
        self.assertGreater(report.hostile_failed, 0)
        self.assertTrue(all(report.mutations.values()), report.mutations)


class ProduceTests(SynchronousTestCase):
    def test_mock_cluster_faults(self) -> None:
        report = tool("chaos_produce").produce_mock(10_000, seed=1, seconds=4)
        self.assertGreater(sum(report.faults.values()), 10)
        self.assertEqual(report.acknowledged, 10_000, report.failed)
        self.assertEqual(report.lost, 0)
        self.assertTrue(report.ok(checks_sequences=False), list(report.lines()))

    def test_noida_kills_behind_the_fault_proxy(self) -> None:
        report = tool("chaos_produce").produce_noida(6_000, kills=2, seed=1, period=3.0)
        self.assertEqual(report.faults["kill -9"], 2)
        self.assertTrue(report.ok(checks_sequences=True), list(report.lines()))


class KafkaClusterProduceTests(SynchronousTestCase):
    def test_leader_kills_lose_nothing(self) -> None:
        report = tool("chaos_produce").produce_kafka_cluster(6_000, kills=2, seed=1, period=5.0)
        self.assertEqual(report.faults["kill -9 of a leader"], 2)
        self.assertEqual(report.acknowledged, 6_000, report.failed)
        self.assertEqual((report.lost, report.duplicated, report.reordered), (0, 0, 0))
        self.assertTrue(report.ok(checks_sequences=True), list(report.lines()))


class GroupTests(SynchronousTestCase):
    def test_members_killed_while_records_flow(self) -> None:
        report = tool("chaos_group").group(2_000, kills=3, seed=1, period=3.0)
        self.assertEqual(sum(report.kills.values()), 3)
        self.assertEqual(report.lost, 0, list(report.lines()))


class KafkaClusterGroupTests(SynchronousTestCase):
    def test_rolling_restarts_and_member_kills_kafka(self) -> None:
        report = tool("chaos_kafka").group_kafka(3_000, kills=2, seed=1, period=3.0)
        restarts = {k: v for k, v in report.faults.items() if k.startswith("restart")}
        self.assertEqual(len(restarts), 3, report.faults)  # each of the three nodes
        self.assertEqual(report.faults["SIGKILL of a member"], 2)
        self.assertEqual(report.member_failures, 0, list(report.lines()))
        self.assertEqual(report.lost, 0, list(report.lines()))
        self.assertEqual(report.duplicates_outside_windows, 0, list(report.lines()))


class KafkaClusterCoordinatorKillTests(SynchronousTestCase):
    def test_groups_move_off_a_killed_coordinator_kafka(self) -> None:
        """Issue 33: three members each, session timeouts 6 s and 10 s; the coordinator's
        node killed (-9) and not restarted: processing resumes within two session
        timeouts on the partitions whose leader stayed, nothing is lost (the others
        wait for their leader's failover too)."""
        report = tool("chaos_coordinator").coordinator_kill(
            clients=("afkak",), before=3.0, margin=2.0
        )
        lines = list(report.lines())
        self.assertEqual([g.session_timeout_ms for g in report.groups], [6000, 10000])
        for group in report.groups:
            self.assertEqual(group.lost, 0, lines)
            self.assertLess(group.stall, 2 * group.session_timeout_ms / 1000.0, lines)
        self.assertTrue(report.ok(), lines)


class KafkaClusterExactlyOnceTests(SynchronousTestCase):
    def test_pipeline_through_leader_kills_kafka(self) -> None:
        report = tool("chaos_kafka").eos_kafka(2_000, kills=2, seed=1, period=4.0)
        self.assertEqual(report.faults["kill -9 of a leader"], 2)
        self.assertEqual(
            (report.outputs, report.duplicated, report.missing), (2_000, 0, 0), report.restarts
        )
        # kafka-transactions sees afkak's transactional producer.
        self.assertTrue(report.listed)
        self.assertEqual(report.described["TransactionState"], "CompleteCommit")
