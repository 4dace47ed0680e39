"""afkak 21.5's own integration tests pass with this afkak on a real broker.

``tools/afkak21_suite.py`` runs them (downloaded from PyPI, sha256-pinned, unchanged) in
a process of its own.  On Apache Kafka every one of them must pass: the tool starts a
Kafka node (its restart test kills and restarts it) and then the 3-node cluster (its
failover test kills partition leaders), one after the other.  On noida-db (started
by the tool too, restartable) the failures must be the ones its recorded quirks
explain; on Tansu the client, consumer and producer modules run against this
process's shared broker.  Skips when the sdist cannot be downloaded, except in CI.
``HarnessTests``: what each 21.5 test gets from the harness, without a broker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
from typing import Any

import attrs
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.test.brokers import shared_broker
from afkak.test.brokers.afkak21 import CHANGED_SINCE_21, KafkaHarness, Node
from afkak.test.brokers.process import unavailable

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(_ROOT, "tools", "afkak21_suite.py")
MODULES = ("test_client_integration", "test_consumer_integration", "test_producer_integration")
#: 21.5's integration suite: every test of its six modules.
ALL_TESTS = 39
#: The tool's exit status when pip cannot download the sdist.
_NO_SDIST = 2


def run_tool(test: SynchronousTestCase, *args: str, timeout: float) -> tuple[str, re.Match[str]]:
    """Run the tool; its summary and the match of its counts line (asserted exit 0)."""
    if not os.path.exists(TOOL):
        test.skipTest("tools/ is not here (not a source checkout)")
    run = subprocess.run(
        [sys.executable, TOOL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": _ROOT},
    )
    if run.returncode == _NO_SDIST:
        unavailable(f"afkak 21.5's sdist cannot be downloaded: {run.stderr.strip()}")
    summary = run.stdout[run.stdout.rfind("afkak 21.5 integration suite") :]
    test.assertEqual(run.returncode, 0, summary or run.stdout[-3000:] + run.stderr[-3000:])
    counts = re.search(
        r"(\d+) tests, (\d+) passed, (\d+) failed \((\d+) expected\), (\d+) skipped", summary
    )
    assert counts is not None, summary
    return summary, counts


class KafkaAfkak21SuiteTests(SynchronousTestCase):
    """On Apache Kafka, the reference broker, all of 21.5's integration tests pass."""

    def test_every_afkak21_integration_test_passes_kafka(self) -> None:
        summary, counts = run_tool(self, "--broker", "kafka", "--all-pass", timeout=1800)
        self.assertEqual(
            [int(n) for n in counts.groups()], [ALL_TESTS, ALL_TESTS, 0, 0, 0], summary
        )


class NoidaAfkak21SuiteTests(SynchronousTestCase):
    """On noida-db, only failures its recorded quirks explain (no Fetch long-poll, commits
    refused while the group rebalances, partitions lost on restart)."""

    def test_afkak21_integration_tests_pass_but_for_quirks(self) -> None:
        # Opt-in: noida-db's runs are timing-bound (its Fetches answer at once, so 21.5's
        # throughput and group tests race its spinning consumers) and took from 2 to over
        # 10 minutes on one machine; Kafka's run above is the one CI requires.
        if os.environ.get("AFKAK_NOIDA_21_SUITE") != "1":
            raise SkipTest("set AFKAK_NOIDA_21_SUITE=1 to run 21.5's suite on noida-db")
        summary, counts = run_tool(self, "--broker", "noida", timeout=1800)
        tests, passed, failed, expected, skipped = (int(n) for n in counts.groups())
        self.assertEqual((tests, failed), (ALL_TESTS, expected), summary)
        # A single node: only the failover test, which kills leaders of 3 brokers, skips.
        self.assertEqual(skipped, 1, summary)
        self.assertIn("test_switch_leader", summary)
        self.assertEqual(passed + failed + skipped, ALL_TESTS, summary)


class TansuAfkak21SuiteTests(SynchronousTestCase):
    """On Tansu (its quirks in afkak.test.brokers.quirks), the fast modules."""

    def test_afkak21_integration_tests_pass(self) -> None:
        broker = shared_broker("tansu")
        selection = [arg for module in MODULES for arg in ("-k", module)]
        summary, counts = run_tool(
            self, "--bootstrap", broker.bootstrap, "--quirks", "tansu", *selection, timeout=300
        )
        self.assertGreaterEqual(int(counts[2]), 10, summary)  # they ran (no skip-all)


@attrs.define
class FakeTarget:
    bootstrap: str
    nodes: dict[int, Node] = attrs.field(factory=dict)
    created: list[tuple[str, int, int, bool]] = attrs.field(factory=list)

    def create_topic(
        self, topic: str, partitions: int, max_message_bytes: int, exist_ok: bool = False
    ) -> None:
        self.created.append((topic, partitions, max_message_bytes, exist_ok))


class Caller:
    """A 21.5 test: its ``IntegrationMixin.setUp`` calls ``KafkaHarness.start``."""

    topic: str | None = None

    def __init__(self, method: str) -> None:
        self.method = method

    def id(self) -> str:
        return f"afkak.test.int.test_x.TestX.{self.method}"

    def skipTest(self, reason: str) -> None:  # noqa: N802 -- unittest's name
        raise unittest.SkipTest(reason)

    def set_up(self, harness: type[KafkaHarness], **harness_kw: Any) -> KafkaHarness:
        return harness.start(**harness_kw)


def harness(target: FakeTarget, cluster: FakeTarget | None = None) -> type[KafkaHarness]:
    return type("KafkaHarness", (KafkaHarness,), {"target": target, "cluster": cluster})


class HarnessTests(SynchronousTestCase):
    def test_each_test_gets_its_own_topic_as_its_class_asked(self) -> None:
        node = Node(lambda: None, lambda: None)
        target = FakeTarget("127.0.0.1:1,127.0.0.1:2", {0: node})
        test = Caller("test_produce")
        served = test.set_up(harness(target), replicas=3, partitions=2, message_max_bytes=99)
        [(topic, partitions, max_bytes, exist_ok)] = target.created
        self.assertEqual(topic, test.topic)
        self.assertTrue(topic.startswith("test_produce-"))
        self.assertEqual((partitions, max_bytes, exist_ok), (2, 99, False))
        self.assertEqual(served.bootstrap_hosts, ["127.0.0.1:1", "127.0.0.1:2"])
        self.assertIs(served.brokers[0], node)

    def test_the_topic_a_test_names_itself_is_created_if_missing(self) -> None:
        target = FakeTarget("b:1")
        Caller("test_three_coordinator_join").set_up(harness(target), replicas=1, partitions=6)
        self.assertEqual(target.created[1], ("test-topic", 6, 1000000, True))

    def test_the_failover_test_runs_on_the_cluster_or_skips(self) -> None:
        test = Caller("test_switch_leader")
        self.assertRaises(unittest.SkipTest, test.set_up, harness(FakeTarget("b:1")), replicas=3)
        nodes = {n: Node(lambda: None, lambda: None) for n in (1, 2, 3)}
        cluster = FakeTarget("c:1,c:2,c:3", nodes)
        served = test.set_up(harness(FakeTarget("b:1"), cluster), replicas=3, partitions=7)
        self.assertEqual([c[1] for c in cluster.created], [7])
        self.assertEqual(sorted(served.brokers), [1, 2, 3])

    def test_a_restart_test_skips_on_a_broker_it_cannot_restart(self) -> None:
        test = Caller("test_broker_restart")
        self.assertRaises(unittest.SkipTest, test.set_up, harness(FakeTarget("b:1")), replicas=1)

    def test_no_21_5_test_is_expected_to_fail_on_apache_kafka(self) -> None:
        self.assertEqual(CHANGED_SINCE_21, {})
