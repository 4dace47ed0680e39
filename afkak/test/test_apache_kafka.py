"""afkak.testing.apache_kafka: the classpath cache, the node's configuration, and one
real node started, answering Metadata, and stopped."""

from __future__ import annotations

import os
import shutil

from twisted.trial.unittest import SynchronousTestCase

from afkak.test.brokers.process import pid_exists, unavailable
from afkak.testing.apache_kafka import (
    KAFKA_VERSIONS,
    ApacheKafka,
    ApacheKafkaUnavailable,
    _pom_arguments,
    cache_root,
    free_port,
    java_available,
    log4j2_version,
    metadata_brokers,
    random_cluster_id,
    resolve_classpath,
    uses_zookeeper,
)


class ConfigurationTests(SynchronousTestCase):
    def test_log4j2_follows_the_kafka_release(self) -> None:
        self.assertEqual(log4j2_version("4.0.0"), "2.24.3")
        self.assertEqual(log4j2_version("4.1.1"), "2.24.3")
        self.assertEqual(log4j2_version("4.2.0"), "2.25.3")
        self.assertEqual(log4j2_version("4.4.0"), "2.25.3")
        self.assertEqual(KAFKA_VERSIONS[0], "4.4.0")

    def test_free_ports_are_below_the_ephemeral_range(self) -> None:
        ports = {free_port() for _ in range(50)}
        self.assertTrue(all(10000 <= port < 32768 for port in ports), ports)
        self.assertNotIn(free_port(taken=[*range(10000, 32767)]), range(10000, 32767))

    def test_cluster_id_is_base64url_of_16_bytes(self) -> None:
        for _ in range(100):
            cluster_id = random_cluster_id()
            self.assertEqual(len(cluster_id), 22)
            self.assertFalse(cluster_id.startswith("-"))
            self.assertNotIn("=", cluster_id)

    def test_single_node_properties(self) -> None:
        node = ApacheKafka(5000, controller_port=5001, listeners={"SASL_PLAINTEXT": 5002})
        node.workdir = "/data/n1"
        node._pick_ports()
        props = node.properties()
        self.assertEqual(node.bootstrap, "127.0.0.1:5000")
        self.assertEqual(props["controller.quorum.voters"], "1@127.0.0.1:5001")
        self.assertEqual(
            props["listeners"],
            "PLAINTEXT://127.0.0.1:5000,CONTROLLER://127.0.0.1:5001,"
            "SASL_PLAINTEXT://127.0.0.1:5002",
        )
        self.assertEqual(
            props["advertised.listeners"],
            "PLAINTEXT://127.0.0.1:5000,SASL_PLAINTEXT://127.0.0.1:5002",
        )
        self.assertEqual(props["log.dirs"], "/data/n1/data")
        self.assertEqual(props["offsets.topic.replication.factor"], "1")
        self.assertEqual(props["min.insync.replicas"], "1")

    def test_cluster_node_properties_and_config_overrides(self) -> None:
        node = ApacheKafka(
            node_id=2,
            quorum={1: 6001, 2: 6002, 3: 6003},
            config={"broker.session.timeout.ms": "6000", "min.insync.replicas": "1"},
        )
        node._pick_ports()
        props = node.properties()
        self.assertEqual(node.ports["CONTROLLER"], 6002)
        self.assertEqual(
            props["controller.quorum.voters"],
            "1@127.0.0.1:6001,2@127.0.0.1:6002,3@127.0.0.1:6003",
        )
        self.assertEqual(props["node.id"], "2")
        self.assertEqual(props["default.replication.factor"], "3")
        self.assertEqual(props["transaction.state.log.min.isr"], "2")
        self.assertEqual(props["min.insync.replicas"], "1")
        self.assertEqual(props["broker.session.timeout.ms"], "6000")

    def test_node_not_in_its_quorum_is_refused(self) -> None:
        self.assertRaises(ValueError, ApacheKafka, node_id=4, quorum={1: 6001})

    def test_zookeeper_mode_before_kafka_3_3(self) -> None:
        self.assertEqual(
            [uses_zookeeper(v) for v in ("2.1.1", "3.2.3", "3.3.2", "4.4.0")],
            [True, True, False, False],
        )
        node = ApacheKafka(5000, version="2.1.1", controller_port=5001)
        node.workdir = "/data/n1"
        node._pick_ports()
        props = node.properties()
        self.assertEqual(node.ports, {"PLAINTEXT": 5000, "ZOOKEEPER": 5001})
        self.assertEqual(props["zookeeper.connect"], "127.0.0.1:5001")
        self.assertEqual(props["broker.id"], "1")
        self.assertEqual(props["listeners"], "PLAINTEXT://127.0.0.1:5000")
        self.assertEqual(props["advertised.listeners"], "PLAINTEXT://127.0.0.1:5000")
        for kraft in ("process.roles", "node.id", "controller.quorum.voters"):
            self.assertNotIn(kraft, props)
        zookeeper = node.zookeeper_properties()
        self.assertEqual(
            (zookeeper["clientPort"], zookeeper["dataDir"]), ("5001", "/data/n1/zookeeper")
        )
        self.assertEqual(zookeeper["admin.enableServer"], "false")
        self.assertRaises(ValueError, ApacheKafka, version="2.8.2", quorum={1: 6001})

    def test_old_releases_take_the_legacy_classpath(self) -> None:
        self.assertIn("-Dscala.binary=2.12", _pom_arguments("2.1.1"))
        self.assertIn("-Dzookeeper.version=3.5.9", _pom_arguments("2.3.1"))
        self.assertTrue(_pom_arguments("2.8.2")[1].endswith("pom-legacy.xml"))
        self.assertEqual(len(_pom_arguments("2.8.2")), 2)
        self.assertTrue(_pom_arguments("3.9.1")[1].endswith("pom.xml"))
        self.assertFalse(_pom_arguments("3.9.1")[1].endswith("pom-legacy.xml"))


class ClasspathCacheTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cache = self.mktemp()
        self.patch(os, "environ", {**os.environ, "XDG_CACHE_HOME": self.cache})

    def test_cache_respects_xdg_cache_home(self) -> None:
        self.assertEqual(cache_root(), os.path.join(self.cache, "afkak", "kafka"))

    def test_a_complete_cache_is_used_without_maven(self) -> None:
        directory = os.path.join(cache_root(), "4.1.1")
        os.makedirs(directory)
        open(os.path.join(directory, ".complete"), "w").close()
        os.environ["PATH"] = ""
        self.assertEqual(resolve_classpath("4.1.1"), directory)
        os.environ["AFKAK_KAFKA_VERSION"] = "4.1.1"
        self.assertEqual(resolve_classpath(), directory)

    def test_no_maven_and_no_cache_is_unavailable(self) -> None:
        os.environ["PATH"] = ""
        os.environ.pop("AFKAK_KAFKA_VERSION", None)
        error = self.assertRaises(ApacheKafkaUnavailable, resolve_classpath)
        self.assertIn("mvn is not installed", str(error))

    def test_an_unknown_version_fails_with_mavens_output(self) -> None:
        if shutil.which("mvn") is None:
            unavailable("mvn is not installed")
        error = self.assertRaises(ApacheKafkaUnavailable, resolve_classpath, "0.0.404")
        self.assertIn("0.0.404", str(error))
        self.assertEqual(os.listdir(cache_root()), [".0.0.404.lock"])


class NodeTests(SynchronousTestCase):
    def test_start_answers_metadata_and_stop_leaves_nothing(self) -> None:
        if not java_available():
            unavailable("java is not installed")
        try:
            node = ApacheKafka().start()
        except ApacheKafkaUnavailable as exc:
            unavailable(str(exc))
        self.addCleanup(node.stop)
        pid, workdir = node.pid, node.workdir
        host, _, port = node.bootstrap.rpartition(":")
        self.assertEqual(host, "127.0.0.1")
        self.assertLess(int(port), 32768)
        self.assertEqual(metadata_brokers(node.bootstrap), {1})
        self.assertIn("Kafka Server started", node.log_tail())
        self.assertGreater(node.start_seconds, 0)

        node.stop()
        self.assertFalse(pid_exists(pid))
        self.assertFalse(os.path.exists(workdir))
        self.assertFalse(node.running)
        self.assertRaises(RuntimeError, lambda: node.bootstrap)
        node.stop()  # idempotent

    def test_given_workdir_is_created_and_kept_with_the_data(self) -> None:
        if not java_available():
            unavailable("java is not installed")
        workdir = os.path.join(os.path.abspath(self.mktemp()), "node")
        node = ApacheKafka(workdir=workdir)
        self.addCleanup(node.stop)
        try:
            node.start()
        except ApacheKafkaUnavailable as exc:
            unavailable(str(exc))
        bootstrap = node.bootstrap
        node.stop()
        self.assertTrue(os.path.exists(os.path.join(workdir, "data", "meta.properties")))
        self.assertIn("Kafka Server started", node.log_tail())
        node.start()  # the same storage (no format), the same ports
        self.assertEqual(node.bootstrap, bootstrap)
        self.assertEqual(metadata_brokers(bootstrap), {1})
