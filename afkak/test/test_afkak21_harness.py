"""The harness that serves afkak 21.5's integration tests (afkak.test.brokers.afkak21):
what each 21.5 test gets from it, without a broker."""

from __future__ import annotations

import unittest
from typing import Any

import attrs
from twisted.trial.unittest import SynchronousTestCase

from afkak.test.brokers.afkak21 import CHANGED_SINCE_21, KafkaHarness, Node


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
