"""Apache Kafka itself (afkak.testing.apache_kafka): the reference broker of the suite.

:class:`KafkaBroker` is one KRaft node, shared per test process as
``shared_broker("kafka")``; :class:`KafkaCluster` is three nodes (replication factor
3, ``min.insync.replicas=2``) whose nodes a test can stop, kill, pause and restart.
Both take extra ``listeners`` ({name: port}), server ``config`` and storage
``format_args``, so SASL_PLAINTEXT, SSL, SASL_SSL and the StandardAuthorizer are
options of the same builder (``ApacheKafka.properties``).

When a test fails, the logs of every running Kafka node are copied to
``$TMPDIR/afkak-kafka-logs/`` and their paths printed (``conftest.py``).
"""

from __future__ import annotations

import abc
import os
import re
import shutil
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Self, TypedDict, Unpack

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.interop import admin_create_topic, wait_for_leaders
from afkak.test.brokers.probe import api_versions
from afkak.test.brokers.process import unavailable
from afkak.test.brokers.quirks import Quirks
from afkak.testing.apache_kafka import (
    ApacheKafka,
    ApacheKafkaUnavailable,
    free_port,
    java_available,
    metadata_brokers,
    random_cluster_id,
)

#: Faster failure detection than Kafka's defaults (9 s session, 2 s heartbeat, 30 s
#: replica lag), still safe on 2 busy cores.
CLUSTER_CONFIG: Mapping[str, str] = {
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "10000",
    "controller.quorum.fetch.timeout.ms": "4000",
    "controller.quorum.election.timeout.ms": "2000",
}

#: Every Kafka broker or cluster that is running, for the logs of a failed test.
_live: weakref.WeakSet[_KafkaNodes] = weakref.WeakSet()


def _require_java() -> None:
    if not java_available():
        unavailable("kafka: java is not installed (apt-get install openjdk-17-jdk-headless)")


class NodeOptions(TypedDict, total=False):
    """ApacheKafka's options that a KafkaBroker or KafkaCluster passes to its nodes."""

    version: str | None
    listeners: Mapping[str, int] | None
    config: Mapping[str, str] | None
    format_args: Sequence[str]
    classpath: Sequence[str]
    jvm_options: Sequence[str]


class _KafkaNodes(Broker):
    """What a Kafka node and a Kafka cluster share: nodes, logs, topic creation.

    Options (``NodeOptions``): ``version``; extra ``listeners`` ({name: port}); server
    ``config``; storage ``format_args``; extra ``classpath`` entries (plugins).
    """

    start_timeout = 120.0
    stop_timeout = 15.0

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        super().__init__()
        self.nodes = self._make_nodes(options)

    @abc.abstractmethod
    def _make_nodes(self, options: NodeOptions) -> list[ApacheKafka]:
        """The nodes, not started."""

    @property
    def running(self) -> bool:
        return bool(self._bootstrap) and all(node.running for node in self.nodes)

    @property
    def pid(self) -> int:
        return self.nodes[0].pid

    @property
    def workdir(self) -> str:
        """The first node's working directory (its data, config and ``kafka.log``)."""
        if not self._bootstrap:
            raise RuntimeError(f"{self.name} broker is not running")
        return self.nodes[0].workdir

    def address(self, listener: str, node: int = 0) -> str:
        """``"127.0.0.1:PORT"`` of a listener (``SASL_PLAINTEXT``, ...) of one node."""
        return self.nodes[node].address(listener)

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """CreateTopics with the cluster's default replication factor; returns once every
        partition's leader answers (``wait_for_leaders``)."""
        admin_create_topic(self.bootstrap, topic, partitions, timeout=30.0, replication_factor=-1)
        wait_for_leaders(self.bootstrap, topic, partitions)

    def keep_logs(self, label: str) -> list[str]:
        """Copy every node's log to ``$TMPDIR/afkak-kafka-logs/``; their new paths."""
        directory = os.path.join(tempfile.gettempdir(), "afkak-kafka-logs")
        os.makedirs(directory, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[-120:]
        kept = []
        for node in self.nodes:
            if node.workdir and os.path.exists(node.log_path):
                path = os.path.join(directory, f"{safe}-{self.name}-node{node.node_id}.log")
                shutil.copyfile(node.log_path, path)
                kept.append(path)
        return kept

    def stop(self) -> None:
        """SIGTERM to every node at once, SIGKILL after ``stop_timeout``; idempotent."""
        _live.discard(self)
        self._bootstrap = None
        for node in self.nodes:
            node.terminate()
        for node in self.nodes:
            node.stop(self.stop_timeout)

    def _started(self) -> None:
        self._bootstrap = ",".join(node.bootstrap for node in self.nodes)
        self.api_versions = api_versions(self.nodes[0].bootstrap)
        _live.add(self)


class KafkaBroker(_KafkaNodes):
    """One Apache Kafka node (broker and controller) with Kafka's defaults."""

    name = "kafka"
    #: Apache Kafka is the reference: no deviations.
    quirks = Quirks(broker="kafka")

    def _make_nodes(self, options: NodeOptions) -> list[ApacheKafka]:
        self.node = ApacheKafka(**options)
        return [self.node]

    def start(self) -> Self:
        """Start the node after :meth:`prepare`; skip (fail when CI is "true") if Kafka
        cannot run here.  A start that fails stops what it started."""
        _require_java()
        try:
            self.prepare()
            self.node.start(self.start_timeout)
        except ApacheKafkaUnavailable as exc:
            self.stop()
            unavailable(f"kafka: {exc}")
        except BaseException:
            self.stop()
            raise
        self.start_seconds = self.node.start_seconds
        self._started()
        return self

    def prepare(self) -> None:
        """What the node needs started or written first (a KDC, an identity provider)."""

    def kill(self) -> None:
        """kill -9 the node, keeping its ports and data for restart()."""
        self.node.kill()

    def restart(self) -> None:
        """Start the killed node again on its ports with its data."""
        self.node.start(self.start_timeout)


class Kafka39Broker(KafkaBroker):
    """One Apache Kafka 3.9.1 node: the oldest Kafka line afkak negotiates versions with
    (no KIP-848 groups by default, transactions v1, no share groups)."""

    name = "kafka-3.9"
    quirks = Quirks(broker="kafka-3.9")

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        super().__init__(**{"version": "3.9.1", **options})


class Kafka21Broker(KafkaBroker):
    """One Apache Kafka 2.1.1 node, in ZooKeeper mode: the oldest release afkak supports
    (idempotence, transactions and zstd are there; no IncrementalAlterConfigs, no
    feature levels, no ListOffsets by MAX_TIMESTAMP).  See docs/broker-versions.rst."""

    name = "kafka-2.1"
    quirks = Quirks(broker="kafka-2.1")

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        super().__init__(**{"version": "2.1.1", **options})


class KafkaTv1Broker(KafkaBroker):
    """One Apache Kafka node formatted with ``transaction.version=1``: Kafka 4's broker
    running the transaction protocol before KIP-890's part 2 (a new 4.x cluster runs v2)."""

    name = "kafka-tv1"
    quirks = Quirks(broker="kafka-tv1")

    def __init__(self, **options: Unpack[NodeOptions]) -> None:
        formats = ["--feature", "transaction.version=1", *options.pop("format_args", ())]
        super().__init__(format_args=formats, **options)


class KafkaCluster(_KafkaNodes):
    """Three Apache Kafka nodes, each broker and controller, in one KRaft quorum.

    Topics get 3 replicas and ``min.insync.replicas=2``, internal topics too.
    ``nodes[i]`` (node id ``i + 1``) offers ``shutdown()`` (a clean stop keeping its
    data), ``kill()`` (kill -9), ``pause()`` / ``resume()`` (SIGSTOP / SIGCONT) and
    ``start()`` (a restart with its data).
    """

    name = "kafka-cluster"
    quirks = Quirks(broker="kafka-cluster", broker_count=3)

    def _make_nodes(self, options: NodeOptions) -> list[ApacheKafka]:
        controller_ports: list[int] = []
        for _ in range(3):
            controller_ports.append(free_port(controller_ports))
        quorum = {node_id: port for node_id, port in enumerate(controller_ports, 1)}
        cluster_id = random_cluster_id()
        config = {**CLUSTER_CONFIG, **(options.pop("config", None) or {})}
        return [
            ApacheKafka(
                node_id=node_id, quorum=quorum, cluster_id=cluster_id, config=config, **options
            )
            for node_id in quorum
        ]

    def start(self) -> Self:
        """Launch the three nodes together (the quorum needs two), then wait until
        Metadata lists all three; skip (fail on CI) if Kafka cannot run here."""
        _require_java()
        began = time.monotonic()
        try:
            for node in self.nodes:
                node.launch()
            for node in self.nodes:
                failure = node.wait_ready(self.start_timeout)
                if failure:
                    raise ApacheKafkaUnavailable(f"node {node.node_id}: {failure}")
            self.wait_for_brokers(3, self.start_timeout - (time.monotonic() - began))
        except ApacheKafkaUnavailable as exc:
            self.stop()
            unavailable(f"kafka-cluster: {exc}")
        self.start_seconds = time.monotonic() - began
        self._started()
        return self

    def wait_for_brokers(self, count: int, timeout: float = 60.0) -> None:
        """Wait until a running node's Metadata lists ``count`` live brokers."""
        deadline = time.monotonic() + timeout
        seen: object = None
        while time.monotonic() < deadline:
            for node in self.nodes:
                if not node.running:
                    continue
                try:
                    seen = metadata_brokers(node.bootstrap)
                except (OSError, ValueError) as exc:
                    seen = exc
                    continue
                if len(seen) >= count:
                    return
            time.sleep(0.2)
        raise ApacheKafkaUnavailable(f"Metadata did not list {count} brokers: {seen!r}")

    def crash_and_restart(self) -> float:
        """kill -9 every node and start them again together with their data."""
        began = time.monotonic()
        for node in self.nodes:
            node.kill()
        for node in self.nodes:
            node.launch()
        for node in self.nodes:
            failure = node.wait_ready(self.start_timeout)
            if failure:
                raise RuntimeError(f"kafka-cluster node {node.node_id}: {failure}")
        self.wait_for_brokers(3, self.start_timeout)
        return time.monotonic() - began


def keep_running_logs(label: str) -> list[str]:
    """Copy the logs of every running Kafka node (``keep_logs``); their paths."""
    return [path for nodes in list(_live) for path in nodes.keep_logs(label)]
