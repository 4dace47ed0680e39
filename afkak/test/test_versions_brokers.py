"""afkak's workload (``afkak.test.brokers.versions``) on the oldest and the newest Kafka
release afkak supports: 2.1.1 (in ZooKeeper mode, a node of its own) and the suite's
shared 4.x node.  Every step
gives what :func:`~afkak.test.brokers.versions.expected` says for the release: it works,
or the broker does not support it and afkak says so (NoCommonVersionError) before
sending anything.  The whole matrix of releases: ``tools/broker_matrix.py``."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from afkak.test.brokers import shared_broker
from afkak.test.brokers.kafka import Kafka21Broker
from afkak.test.brokers.versions import expected, run_workload
from afkak.testing.apache_kafka import resolve_classpath


class KafkaOldestVersionTests(SynchronousTestCase):
    def test_workload_on_kafka_2_1(self) -> None:
        broker = Kafka21Broker().start()  # its own, stopped at once: no other test uses it
        self.addCleanup(broker.stop)
        self.assertEqual(run_workload(broker.bootstrap), expected("2.1.1"))


class KafkaNewestVersionTests(SynchronousTestCase):
    def test_workload_on_kafka_4(self) -> None:
        broker = shared_broker("kafka")
        version = os.path.basename(resolve_classpath())
        self.assertEqual(run_workload(broker.bootstrap), expected(version))
