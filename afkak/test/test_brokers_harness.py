"""The real-broker test harness: each broker starts, answers Kafka, interoperates with
confluent-kafka, injects faults (mock cluster), and leaves no process behind; Apache
Kafka's nodes are killed, paused and restarted with their data, its 3-node cluster
replicates through those faults, and CI fails when a Kafka test is skipped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest
import uuid
from typing import ClassVar

from twisted.trial.unittest import SynchronousTestCase

import afkak
from afkak.test.brokers import (
    BROKERS,
    TRANSPORT_ERROR,
    Broker,
    BrokerUnavailable,
    KafkaBroker,
    KafkaCluster,
    MockCommandError,
    NoidaBroker,
    Quirks,
    RdkafkaMockCluster,
    TansuBroker,
    api_versions,
    can_connect,
    client_config,
    consume,
    free_port,
    pid_exists,
    produce,
    shared_broker,
    wait_for_partitions,
)
from afkak.test.brokers.kafka import keep_running_logs
from afkak.test.brokers.process import ManagedProcess
from afkak.test.brokers.pytest_plugin import is_kafka_test
from afkak.testing.apache_kafka import metadata_brokers

_PRODUCE, _FETCH, _METADATA, _API_VERSIONS = 0, 1, 3, 18
_MESSAGE_TOO_LARGE = 10


def _topic() -> str:
    return f"harness-{uuid.uuid4().hex[:12]}"


def _wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while pid_exists(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class _BrokerChecks:
    """What every broker must do; mixed into one TestCase per broker."""

    broker_class: ClassVar[type[Broker]]

    def test_start_answers_api_versions_and_stop_leaves_nothing(self) -> None:
        broker = self.broker_class()
        broker.start()
        self.addCleanup(broker.stop)
        pid, workdir = broker.pid, broker.workdir
        self.assertTrue(pid_exists(pid))
        for address in broker.bootstrap.split(","):
            self.assertRegex(address, r"^127\.0\.0\.1:\d+$")
            versions = api_versions(address)
            self.assertIn(_API_VERSIONS, versions)
            for api_key in (_PRODUCE, _FETCH):
                _low, high = versions[api_key]
                self.assertGreaterEqual(high, broker.quirks.min_working_versions[api_key])
        self.assertEqual(broker.api_versions, versions)
        self.assertLess(broker.start_seconds, broker.start_timeout)

        broker.stop()
        self.assertFalse(pid_exists(pid))
        self.assertFalse(os.path.exists(workdir))
        self.assertFalse(broker.running)
        self.assertRaises(RuntimeError, lambda: broker.bootstrap)
        broker.stop()  # idempotent

    def test_confluent_kafka_create_produce_consume(self) -> None:
        broker = shared_broker(self.broker_class.name)
        self.assertIs(shared_broker(self.broker_class.name), broker)
        topic = _topic()
        broker.create_topic(topic, partitions=3)
        values = [b"value-%d" % i for i in range(10)]
        delivered = produce(broker.bootstrap, topic, values, headers=[("h", b"1")])
        self.assertEqual(len(delivered), 10)
        records = consume(broker.bootstrap, topic, 10)
        self.assertEqual(sorted(r.value for r in records), sorted(values))
        self.assertEqual(sorted((r.partition, r.offset) for r in records), sorted(delivered))
        self.assertEqual({r.headers for r in records}, {(("h", b"1"),)})
        self.assertTrue(all(r.timestamp_ms > 0 for r in records))

    def test_metadata_auto_creates_with_documented_partitions(self) -> None:
        broker = shared_broker(self.broker_class.name)
        topic = _topic()
        self.assertEqual(produce(broker.bootstrap, topic, [b"auto"])[0][1], 0)
        wait_for_partitions(broker.bootstrap, topic, broker.quirks.auto_create_partitions)

    def test_quirks_name_the_broker_and_give_reasons(self) -> None:
        quirks = self.broker_class.quirks
        self.assertEqual(quirks.broker, self.broker_class.name)
        self.assertIs(BROKERS[quirks.broker], self.broker_class)
        for name in quirks.reasons:
            self.assertTrue(quirks.differs(name), name)
            self.assertNotIn("behaves like Kafka", quirks.reason(name))


class KafkaHarnessTests(_BrokerChecks, SynchronousTestCase):
    """Apache Kafka: one node (the suite's shared broker) and its node operations."""

    broker_class = KafkaBroker

    def test_kafka_has_no_deviations(self) -> None:
        quirks = KafkaBroker.quirks
        self.assertEqual(dict(quirks.reasons), {})
        self.assertFalse(quirks.answers_acks0_produce)
        self.assertEqual(quirks.reason("no_fetch_long_poll"), "kafka: behaves like Kafka")

    def test_kill_and_restart_keeps_data_and_port(self) -> None:
        broker = KafkaBroker().start()
        self.addCleanup(broker.stop)
        bootstrap, topic = broker.bootstrap, _topic()
        broker.create_topic(topic, partitions=2)
        delivered = produce(bootstrap, topic, [b"kept-%d" % i for i in range(20)])
        old_pid = broker.pid
        seconds = broker.crash_and_restart()
        self.assertFalse(pid_exists(old_pid))
        self.assertNotEqual(broker.pid, old_pid)
        self.assertEqual(broker.bootstrap, bootstrap)
        self.assertLess(seconds, broker.start_timeout)
        records = consume(bootstrap, topic, 20, timeout=30.0)
        self.assertEqual(sorted((r.partition, r.offset) for r in records), sorted(delivered))

    def test_paused_node_hangs_and_resumes(self) -> None:
        broker = shared_broker("kafka")
        assert isinstance(broker, KafkaBroker)
        broker.node.pause()
        try:
            self.assertRaises(OSError, api_versions, broker.bootstrap, 0.5)
            self.assertTrue(can_connect(broker.bootstrap))  # the kernel still accepts
        finally:
            broker.node.resume()
        self.assertIn(_API_VERSIONS, api_versions(broker.bootstrap))

    def test_failed_test_keeps_the_logs(self) -> None:
        broker = shared_broker("kafka")
        # Other shared Kafka brokers of this process (kafka-secure ...) keep theirs too.
        every = keep_running_logs("harness::kept")
        for path in every:
            self.addCleanup(os.remove, path)
        [kept] = [path for path in every if path.endswith("-kafka-node1.log")]
        with open(kept) as log:
            self.assertIn("Kafka Server started", log.read())
        self.assertTrue(os.path.exists(broker.workdir))


class KafkaClusterHarnessTests(SynchronousTestCase):
    """Three Apache Kafka nodes: replication survives a node killed, stopped, paused."""

    def test_cluster_replicates_through_node_faults(self) -> None:
        cluster = KafkaCluster().start()
        self.addCleanup(cluster.stop)
        self.assertEqual(len(cluster.bootstrap.split(",")), 3)
        self.assertEqual(metadata_brokers(cluster.nodes[0].bootstrap), {1, 2, 3})
        topic = _topic()
        cluster.create_topic(topic, partitions=1)
        produce(cluster.bootstrap, topic, [b"before-%d" % i for i in range(5)])

        leader = _leader(cluster.bootstrap, topic)
        node = cluster.nodes[leader - 1]
        node.kill()
        produce(cluster.bootstrap, topic, [b"leader-killed"], timeout=60.0)
        self.assertNotEqual(_leader(cluster.bootstrap, topic), leader)
        node.start(cluster.start_timeout)
        cluster.wait_for_brokers(3)

        other = cluster.nodes[leader % 3]
        other.pause()
        try:
            produce(cluster.bootstrap, topic, [b"one-paused"], timeout=60.0)
        finally:
            other.resume()
        other.shutdown()
        produce(cluster.bootstrap, topic, [b"one-stopped"], timeout=60.0)
        other.start(cluster.start_timeout)
        cluster.wait_for_brokers(3)

        values = [r.value for r in consume(cluster.bootstrap, topic, 8, timeout=60.0)]
        self.assertEqual(
            values,
            [b"before-%d" % i for i in range(5)]
            + [b"leader-killed", b"one-paused", b"one-stopped"],
        )
        pids = [n.pid for n in cluster.nodes]
        cluster.stop()
        self.assertFalse(any(pid_exists(pid) for pid in pids))


def _leader(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(client_config(bootstrap)).list_topics(topic, timeout=30)
    return int(metadata.topics[topic].partitions[0].leader)


class KafkaSkipCheckTests(SynchronousTestCase):
    """Under CI=true a skipped Apache Kafka test fails the run."""

    def _pytest_with_skips(self, ci: str) -> subprocess.CompletedProcess[bytes]:
        root = os.path.dirname(os.path.dirname(os.path.abspath(afkak.__file__)))
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        with open(os.path.join(directory, "test_skips.py"), "w") as test_file:
            test_file.write(
                "import unittest\n"
                "class KafkaThingTests(unittest.TestCase):\n"
                "    def test_skipped(self):\n"
                "        raise unittest.SkipTest('kafka: no java')\n"
                "class TansuThingTests(unittest.TestCase):\n"
                "    def test_skipped(self):\n"
                "        raise unittest.SkipTest('tansu: not installed')\n"
            )
        env = dict(os.environ, PYTHONPATH=root, CI=ci)
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "afkak.test.brokers.pytest_plugin",
             "-c", os.devnull, "--rootdir", directory, directory],
            env=env, capture_output=True, timeout=120, check=False,
        )  # fmt: skip

    def test_skipped_kafka_test_fails_under_ci(self) -> None:
        done = self._pytest_with_skips("true")
        output = done.stdout.decode()
        self.assertEqual(done.returncode, 1, output)
        self.assertIn("Apache Kafka tests skipped under CI=true", output)
        self.assertIn("KafkaThingTests::test_skipped: Skipped: kafka: no java", output)
        self.assertNotIn("TansuThingTests::test_skipped:", output)

    def test_skips_pass_outside_ci(self) -> None:
        done = self._pytest_with_skips("false")
        self.assertEqual(done.returncode, 0, done.stdout.decode())

    def test_kafka_tests_are_named(self) -> None:
        self.assertTrue(is_kafka_test("afkak/test/test_x.py::KafkaProducerTests::test_a"))
        self.assertTrue(is_kafka_test("afkak/test/test_apache_kafka.py::NodeTests::test_a"))
        self.assertFalse(is_kafka_test("afkak/test/test_x.py::TansuProducerTests::test_a"))
        self.assertTrue(is_kafka_test("afkak/test/test_x.py::EveryBroker::test_kafka"))
        self.assertFalse(is_kafka_test("afkak/test/test_x.py::EveryBroker::test_kafka_like"))
        self.assertFalse(is_kafka_test("afkak/test/test_x.py::EveryBroker::test_noida"))


class TansuHarnessTests(_BrokerChecks, SynchronousTestCase):
    broker_class = TansuBroker


class NoidaHarnessTests(_BrokerChecks, SynchronousTestCase):
    broker_class = NoidaBroker

    def test_advertises_v0_below_its_working_floor(self) -> None:
        versions = shared_broker("noida").api_versions
        quirks = NoidaBroker.quirks
        self.assertTrue(quirks.differs("min_working_versions"))
        for api_key, floor in quirks.min_working_versions.items():
            self.assertEqual(versions[api_key][0], 0)
            self.assertGreaterEqual(versions[api_key][1], floor)


class RdkafkaMockHarnessTests(_BrokerChecks, SynchronousTestCase):
    broker_class = RdkafkaMockCluster

    def setUp(self) -> None:
        self.cluster = RdkafkaMockCluster(broker_count=3)
        self.cluster.start()
        self.addCleanup(self.cluster.stop)

    def test_has_three_brokers(self) -> None:
        self.assertEqual(sorted(self.cluster.addresses), [1, 2, 3])
        self.assertEqual(self.cluster.librdkafka_version.split(".")[0], "2")

    def test_broker_down_refuses_connections_and_up_restores(self) -> None:
        address = self.cluster.addresses[2]
        self.cluster.broker_set_down(2)
        self.assertFalse(can_connect(address))
        self.assertTrue(can_connect(self.cluster.addresses[1]))
        self.cluster.broker_set_up(2)
        self.assertIn(_API_VERSIONS, api_versions(address))

    def test_pushed_produce_error_reaches_confluent_kafka(self) -> None:
        topic = _topic()
        self.cluster.create_topic(topic, partitions=1)
        self.cluster.start_request_tracking()
        self.cluster.push_request_errors(_PRODUCE, _MESSAGE_TOO_LARGE)
        with self.assertRaises(RuntimeError) as caught:
            produce(self.cluster.bootstrap, topic, [b"rejected"])
        self.assertIn("MSG_SIZE_TOO_LARGE", str(caught.exception))
        self.assertEqual(produce(self.cluster.bootstrap, topic, [b"accepted"]), [(0, 0)])
        produce_requests = [r for r in self.cluster.tracked_requests() if r.api_key == _PRODUCE]
        self.assertEqual(len(produce_requests), 2)
        self.assertLessEqual(produce_requests[0].timestamp_us, produce_requests[1].timestamp_us)

    def test_pushed_transport_error_disconnects_then_recovers(self) -> None:
        topic = _topic()
        self.cluster.create_topic(topic, partitions=1)
        self.cluster.broker_push_request_error_rtts(1, _PRODUCE, (TRANSPORT_ERROR, 0))
        self.cluster.partition_set_leader(topic, 0, 1)
        self.assertEqual(produce(self.cluster.bootstrap, topic, [b"retried"]), [(0, 0)])

    def test_partition_leader_moves(self) -> None:
        topic = _topic()
        self.cluster.create_topic(topic, partitions=2)
        self.cluster.partition_set_leader(topic, 1, 3)
        self.cluster.start_request_tracking()
        produce(self.cluster.bootstrap, topic, [b"to-3"], partition=1)
        brokers = {r.broker_id for r in self.cluster.tracked_requests() if r.api_key == _PRODUCE}
        self.assertEqual(brokers, {3})

    def test_rtt_delays_responses(self) -> None:
        address = self.cluster.addresses[1]
        self.cluster.broker_set_rtt(1, 200)
        began = time.monotonic()
        api_versions(address)
        self.assertGreaterEqual(time.monotonic() - began, 0.19)
        self.cluster.broker_set_rtt(1, 0)

    def test_bad_commands_raise(self) -> None:
        self.assertRaises(MockCommandError, self.cluster.broker_set_down, 99)
        self.assertRaises(MockCommandError, self.cluster.coordinator_set, "group", "g", "x")
        self.cluster.coordinator_set("group", "g", 2)  # the helper still answers

    def test_stop_ends_helper_even_if_it_ignores_shutdown(self) -> None:
        cluster = RdkafkaMockCluster(broker_count=1)
        cluster.stop_timeout = 0.5
        cluster.start()
        pid = cluster.pid
        os.kill(pid, signal.SIGSTOP)
        began = time.monotonic()
        cluster.stop()
        self.assertFalse(pid_exists(pid))
        self.assertLess(time.monotonic() - began, 5.0)


class QuirksTests(SynchronousTestCase):
    def test_every_deviation_needs_a_reason(self) -> None:
        self.assertRaises(ValueError, Quirks, broker="x", no_fetch_long_poll=True)
        self.assertRaises(ValueError, Quirks, broker="x", reasons={"no_such_quirk": "r"})

    def test_skip_if_reports_the_reason(self) -> None:
        quirks = Quirks(
            broker="x", no_fetch_long_poll=True, reasons={"no_fetch_long_poll": "spins"}
        )
        quirks.skip_if("produce_to_unknown_topic_succeeds")
        with self.assertRaises(unittest.SkipTest) as caught:
            quirks.skip_if("one_batch_per_fetch", "no_fetch_long_poll")
        self.assertEqual(str(caught.exception), "x: spins")

    def test_capabilities_are_not_deviations(self) -> None:
        quirks = Quirks(broker="x", broker_count=3, supports_fault_injection=True)
        self.assertEqual(quirks.broker_count, 3)
        self.assertFalse(Quirks(broker="x").differs("min_working_versions"))


class _MissingBinary(Broker):
    name = "missing"
    quirks = Quirks(broker="missing")

    def _spawn(self, port: int) -> tuple[ManagedProcess, str]:
        return ManagedProcess(self.name, ["/nonexistent/afkak-broker"]), f"127.0.0.1:{port}"

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        raise AssertionError("never started")


class UnavailableTests(SynchronousTestCase):
    def setUp(self) -> None:
        saved = os.environ.get("CI")
        self.addCleanup(
            lambda: os.environ.pop("CI", None) if saved is None else os.environ.update(CI=saved)
        )

    def test_missing_binary_skips(self) -> None:
        os.environ["CI"] = "false"
        with self.assertRaises(unittest.SkipTest) as caught:
            _MissingBinary().start()
        self.assertIn("missing broker cannot be executed", str(caught.exception))

    def test_missing_binary_fails_on_ci(self) -> None:
        os.environ["CI"] = "true"
        self.assertRaises(BrokerUnavailable, _MissingBinary().start)


class ProbeTests(SynchronousTestCase):
    def test_nothing_listening(self) -> None:
        address = f"127.0.0.1:{free_port()}"
        self.assertFalse(can_connect(address))
        self.assertRaises(OSError, api_versions, address)


_CHILD = """
import json, os, signal, sys
from afkak.test.brokers import shared_broker
tansu, mock = shared_broker("tansu"), shared_broker("rdkafka_mock")
print(json.dumps([tansu.pid, mock.pid, tansu.workdir, mock.workdir]), flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


class ProcessExitTests(SynchronousTestCase):
    """Brokers die with the test process, whether it exits or is killed."""

    def _run_child(self, how: str) -> list[int | str]:
        root = os.path.dirname(os.path.dirname(os.path.abspath(afkak.__file__)))
        env = dict(os.environ, PYTHONPATH=root, CI="false")
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, how],
            env=env,
            capture_output=True,
            timeout=30,
            check=False,
        )
        lines = done.stdout.decode().splitlines()
        if not lines:
            self.fail(f"child printed nothing: {done.stderr.decode()[-2000:]}")
        started: list[int | str] = json.loads(lines[-1])
        return started

    def test_normal_exit_stops_shared_brokers(self) -> None:
        tansu_pid, mock_pid, tansu_dir, mock_dir = self._run_child("exit")
        self.assertTrue(_wait_gone(tansu_pid) and _wait_gone(mock_pid))
        self.assertFalse(os.path.exists(tansu_dir) or os.path.exists(mock_dir))

    def test_killed_test_process_takes_brokers_along(self) -> None:
        tansu_pid, mock_pid, *workdirs = self._run_child("kill")
        self.assertTrue(_wait_gone(tansu_pid), "tansu outlived its killed parent")
        self.assertTrue(_wait_gone(mock_pid), "mock helper outlived its killed parent")
        for workdir in workdirs:  # nothing ran atexit: clean up for it
            shutil.rmtree(str(workdir), ignore_errors=True)
