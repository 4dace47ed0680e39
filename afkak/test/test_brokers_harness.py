"""The real-broker test harness: each broker starts, answers Kafka, interoperates with
confluent-kafka, injects faults (mock cluster), and leaves no process behind."""

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
    MockCommandError,
    NoidaBroker,
    Quirks,
    RdkafkaMockCluster,
    TansuBroker,
    api_versions,
    can_connect,
    consume,
    free_port,
    pid_exists,
    produce,
    shared_broker,
    wait_for_partitions,
)
from afkak.test.brokers.process import ManagedProcess

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
        self.assertTrue(quirks.answers_acks0_produce)
        self.assertIn("acks=0", quirks.reason("answers_acks0_produce"))


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
