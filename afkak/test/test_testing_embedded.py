"""afkak.testing.EmbeddedBroker: a real Kafka-protocol broker, stopped for sure.

That afkak produces to and consumes from it is test_main_job's embedded run.
"""

from __future__ import annotations

import os
import unittest

from afkak.test.brokers import api_versions, pid_exists
from afkak.test.brokers.process import unavailable
from afkak.testing import EmbeddedBroker, EmbeddedBrokerUnavailable


class EmbeddedBrokerTests(unittest.TestCase):
    def test_start_answers_kafka_and_stop_ends_the_process(self) -> None:
        broker = EmbeddedBroker()
        try:
            broker.start()
        except EmbeddedBrokerUnavailable as exc:
            unavailable(str(exc))
        self.addCleanup(broker.stop)
        self.assertRegex(broker.bootstrap, r"^127\.0\.0\.1:\d+$")
        self.assertIn(18, api_versions(broker.bootstrap))  # ApiVersions itself
        with self.assertRaises(RuntimeError):
            broker.start()
        pid = broker._process.pid  # type: ignore[union-attr]
        workdir = broker._workdir
        assert workdir is not None
        broker.stop()
        self.assertFalse(pid_exists(pid))
        self.assertFalse(os.path.exists(workdir))
        with self.assertRaises(RuntimeError):
            _ = broker.bootstrap
        broker.stop()  # idempotent

    def test_context_manager(self) -> None:
        try:
            with EmbeddedBroker() as broker:
                self.assertIn(18, api_versions(broker.bootstrap))
        except EmbeddedBrokerUnavailable as exc:
            unavailable(str(exc))
        with self.assertRaises(RuntimeError):
            _ = broker.bootstrap
