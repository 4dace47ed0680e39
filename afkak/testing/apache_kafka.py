"""Apache Kafka itself, from Maven Central, as a child process: the reference broker.

:class:`ApacheKafka` runs one KRaft node (broker and controller in one JVM) on
127.0.0.1, for integration tests, demos and ``afkak broker``::

    with ApacheKafka() as kafka:          # blocks until Metadata answers
        client = KafkaClient(kafka.bootstrap)

It needs ``java`` (17 or later) and, the first time a Kafka version is used, ``mvn``:
:func:`resolve_classpath` copies the broker's and Java tools' jars from Maven Central
into ``$XDG_CACHE_HOME/afkak/kafka/<version>`` (``~/.cache`` by default), once; later
runs start from the cache without Maven.  ``AFKAK_KAFKA_VERSION`` picks the version;
by default the newest of :data:`KAFKA_VERSIONS` that resolves.

Facts checked on the project's machines (Maven 3.8.7, OpenJDK 17, 2 shared cores):

- Maven Central serves ``org.apache.kafka:kafka_2.13`` 4.0.0, 4.1.1, 4.2.0, 4.3.0 and
  4.4.0 (no 4.5.0) and 3.9.1.  Kafka's published POMs carry no logging binding, so
  ``kafka/pom.xml`` adds log4j2 (2.24.3 for Kafka 4.0/4.1, 2.25.3 from 4.2: read from
  Kafka's build for 4.0-4.2; 4.3 and 4.4 run with 2.25.3) and its SLF4J 1.7 binding.
  Resolving 4.4.0 copies 47 jars, 44 MB; from a warm ``~/.m2`` it takes about 7 s.
- ``AFKAK_KAFKA_VERSION=3.9.1`` works too: Kafka 3.x logs through reload4j,
  configured by ``kafka/log4j.properties``; its classpath then also holds log4j2's
  unused SLF4J binding (SLF4J warns, picks reload4j).
- Older releases, down to 2.1.1, the oldest afkak supports, run on Java 17 with
  ``kafka/pom-legacy.xml``'s classpath (broker and ZooKeeper, no Java tools): from 3.3
  as KRaft nodes like 4.x, before 3.3 in ZooKeeper mode, the node starting its own
  ZooKeeper server first (:attr:`ApacheKafka.zookeeper`).  Before 2.4 that takes
  Scala 2.12 and ZooKeeper 3.5.9 instead of 3.4, whose client fails on Java 14+.
  Kafka 2.1.1 started in 13.6 s under load (ZooKeeper's start included).
- A single combined node with a static quorum (``controller.quorum.voters``) needs
  ``kafka.tools.StorageTool format`` with no ``--standalone`` flag.  The log line
  ``Kafka Server started`` comes with the broker unfenced; this module waits until
  the node's Metadata lists it (see :meth:`ApacheKafka.start`).
- Ports: the kernel's ephemeral range here is 32768-60999, so ``port=0`` picks free
  ports below it (10000-32767), where no client socket can take them between the
  check and the JVM's bind; a port lost to another test process anyway makes the
  node exit, and :meth:`ApacheKafka.start` retries on new ports.
- Start-up time and memory, Kafka 4.4.0, one node, :data:`JVM_OPTIONS`: 2.5-3.7 s from
  ``start()`` to ready on a quiet machine (``kafka-storage format`` included, about
  0.8 s), 12-14 s under heavy load; RSS 153 MB idle (Kafka's G1/C2 defaults with the
  same heap: 4.6-5.7 s, 200-227 MB).  Three nodes started together: 18 s under load,
  144-154 MB each.  Details: ``docs/testing-brokers.rst``.
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Self

__all__ = [
    "JVM_OPTIONS",
    "KAFKA_VERSIONS",
    "ApacheKafka",
    "ApacheKafkaUnavailable",
    "cache_root",
    "java_available",
    "log4j2_version",
    "resolve_classpath",
]

#: Kafka versions tried, newest first, when neither the caller nor AFKAK_KAFKA_VERSION
#: names one.
KAFKA_VERSIONS = ("4.4.0", "4.3.0", "4.2.0", "4.1.1", "4.0.0")

#: Kafka releases before this one run in ZooKeeper mode (KRaft came with 3.3): the
#: launcher then starts a ZooKeeper server from the same classpath first.
KRAFT_SINCE = (3, 3)
#: Kafka releases before this one get ``kafka/pom-legacy.xml``'s classpath: the
#: broker with its ZooKeeper, logging through reload4j, without the Java tools.
LEGACY_CLASSPATH_BEFORE = (3, 9)
#: Kafka before 2.4 has no Scala 2.13 build, and depends on ZooKeeper 3.4, whose
#: client cannot connect on Java 14+ (ZOOKEEPER-3779): 3.5.9 (Kafka 2.8's) replaces it.
SCALA_213_SINCE = (2, 4)
OLD_BROKER_ZOOKEEPER = "3.5.9"

#: JVM options for a quick, small test node: a 512 MiB heap at most, the C1 compiler only
#: (the broker's start is mostly class loading and interpretation), the serial collector
#: (fewer threads on shared cores) and the JDK's class-data sharing archive.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx512m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
)

_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafka")
_MAVEN_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
_COMPLETE = ".complete"

#: The lowest port ``port=0`` picks, and one past the highest (the ephemeral range starts).
_PORT_RANGE = (10000, 32768)
_START_ATTEMPTS = 3

_running: weakref.WeakSet[ApacheKafka] = weakref.WeakSet()


class ApacheKafkaUnavailable(Exception):
    """Apache Kafka cannot run here: no java or mvn, Maven resolution failed, or the
    node did not start (the message carries the end of its log)."""


def java_available() -> bool:
    """Whether a ``java`` executable is on PATH."""
    return shutil.which("java") is not None


def log4j2_version(kafka_version: str) -> str:
    """The log4j2 release that the Kafka release ships with."""
    return "2.24.3" if release(kafka_version) < (4, 2) else "2.25.3"


def release(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a Kafka version string such as ``"2.1.1"``."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return major, minor


def uses_zookeeper(version: str | None) -> bool:
    """Whether Kafka ``version`` (None: the default, a 4.x) runs in ZooKeeper mode."""
    version = version or os.environ.get("AFKAK_KAFKA_VERSION")
    return version is not None and release(version) < KRAFT_SINCE


def cache_root() -> str:
    """``$XDG_CACHE_HOME/afkak/kafka`` (``~/.cache/afkak/kafka`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "afkak", "kafka")


def jars_cached() -> bool:
    """Whether a Kafka version's jars are in the cache already (no Maven run to start)."""
    wanted = os.environ.get("AFKAK_KAFKA_VERSION")
    versions = (wanted,) if wanted else KAFKA_VERSIONS
    return any(os.path.exists(os.path.join(cache_root(), v, _COMPLETE)) for v in versions)


def resolve_classpath(version: str | None = None) -> str:
    """The directory holding Kafka ``version``'s broker and tools jars, resolved once.

    ``version`` defaults to ``AFKAK_KAFKA_VERSION``, else the newest of
    :data:`KAFKA_VERSIONS` that resolves.  Concurrent callers (test processes) wait on
    a lock file for one Maven run.  Raises :exc:`ApacheKafkaUnavailable`.
    """
    version = version or os.environ.get("AFKAK_KAFKA_VERSION")
    if version:
        return _resolve(version)
    failures = []
    for candidate in KAFKA_VERSIONS:
        try:
            return _resolve(candidate)
        except ApacheKafkaUnavailable as exc:
            failures.append(f"{candidate}: {exc}")
            if not shutil.which("mvn"):
                break
    raise ApacheKafkaUnavailable("no Kafka version resolved:\n" + "\n".join(failures))


def _resolve(version: str) -> str:
    directory = os.path.join(cache_root(), version)
    if os.path.exists(os.path.join(directory, _COMPLETE)):
        return directory
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ApacheKafkaUnavailable(
            f"Kafka {version} is not in {directory} and mvn is not installed to resolve it"
        )
    os.makedirs(cache_root(), exist_ok=True)
    with open(os.path.join(cache_root(), f".{version}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(directory, _COMPLETE)):
            return directory
        staging = tempfile.mkdtemp(prefix=f".{version}-", dir=cache_root())
        argv = [
            mvn, "-B", "-q", _MAVEN_PLUGIN, "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}", f"-Dkafka.version={version}",
            *_pom_arguments(version),
        ]  # fmt: skip
        result = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL)
        if result.returncode or not os.listdir(staging):
            shutil.rmtree(staging, ignore_errors=True)
            output = (result.stdout + result.stderr).decode("utf-8", "replace")
            raise ApacheKafkaUnavailable(
                f"mvn could not resolve Kafka {version} (status {result.returncode}):\n"
                f"{output[-2000:]}"
            )
        open(os.path.join(staging, _COMPLETE), "w").close()
        shutil.rmtree(directory, ignore_errors=True)
        os.rename(staging, directory)
    return directory


def _pom_arguments(version: str) -> list[str]:
    """The POM for Kafka ``version`` and its properties (see the POMs' headers)."""
    if release(version) >= LEGACY_CLASSPATH_BEFORE:
        pom = os.path.join(_FILES, "pom.xml")
        return ["-f", pom, f"-Dlog4j2.version={log4j2_version(version)}"]
    arguments = ["-f", os.path.join(_FILES, "pom-legacy.xml")]
    if release(version) < SCALA_213_SINCE:
        arguments += ["-Dscala.binary=2.12", f"-Dzookeeper.version={OLD_BROKER_ZOOKEEPER}"]
    return arguments


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, base64url without padding, not starting '-'."""
    while True:
        cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def free_port(taken: Collection[int] = ()) -> int:
    """A port of 127.0.0.1 below the ephemeral range that nothing listens on now."""
    taken = frozenset(taken)
    while True:
        port = random.randrange(*_PORT_RANGE)
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


def metadata_brokers(address: str, timeout: float = 2.0) -> set[int]:
    """Node ids a Metadata v4 request (no topics) at ``address`` answers; raises OSError
    or ValueError.  Hand-encoded: the launcher does not depend on afkak's protocol code."""
    host, _, port = address.rpartition(":")
    client_id = b"afkak-apache-kafka"
    # api_key 3 v4, correlation 1, client id; topics: empty array; no auto-creation.
    request = struct.pack(">hhih", 3, 4, 1, len(client_id)) + client_id + b"\0\0\0\0\0"
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        response = _read_exactly(sock, size)
    try:
        correlation_id, _throttle, count = struct.unpack_from(">iii", response, 0)
        if correlation_id != 1:
            raise ValueError(f"Metadata answered correlation id {correlation_id}")
        nodes, offset = set(), 12
        for _ in range(count):
            node_id, host_length = struct.unpack_from(">ih", response, offset)
            offset += 6 + host_length + 4
            (rack_length,) = struct.unpack_from(">h", response, offset)
            offset += 2 + max(rack_length, 0)
            nodes.add(node_id)
    except struct.error as exc:
        raise ValueError(f"malformed Metadata v4 response: {exc}") from exc
    return nodes


def file_tail(path: str, size: int) -> str:
    """The last ``size`` bytes of a log file, decoded; '' if it cannot be read."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, os.path.getsize(path) - size))
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        data += chunk
    return data


class ApacheKafka:
    """One Apache Kafka KRaft node (broker and controller) on 127.0.0.1.

    :param port: the PLAINTEXT listener's port; 0 picks a free one (and the
        controller's and extra listeners' ports given as 0 too).
    :param version: the Kafka version (see :func:`resolve_classpath`).
    :param workdir: where the node keeps its data (``data/``), its configuration and
        its log (``kafka.log``); kept after :meth:`stop`.  By default a temporary
        directory, removed by :meth:`stop`.
    :param node_id: the node's id; with ``quorum`` it must be one of its voters.
    :param controller_port: the CONTROLLER listener's port (0: a free one).
    :param quorum: for a cluster, every voter ``{node_id: controller_port}`` (this
        node's included); by default this node alone.
    :param cluster_id: the KRaft cluster id the storage is formatted with; nodes of one
        cluster share it (default: a random one).
    :param listeners: extra listeners ``{name: port}`` (``SASL_PLAINTEXT``, ``SSL``,
        ``SASL_SSL``, or any name mapped in ``config``'s
        ``listener.security.protocol.map``); port 0 picks a free one.
    :param config: server properties added to (or overriding) the defaults of
        :meth:`properties`: SASL mechanisms and JAAS, TLS keystores, an authorizer.
    :param format_args: extra ``kafka-storage format`` arguments (``--add-scram``,
        ``--feature``).
    :param jvm_options: the JVM's options (default :data:`JVM_OPTIONS`).
    :param classpath: entries put on the broker's classpath after Kafka's jars
        (a plugin's compiled classes: a ``metric.reporters`` class).
    """

    def __init__(
        self,
        port: int = 0,
        *,
        version: str | None = None,
        workdir: str | None = None,
        node_id: int = 1,
        controller_port: int = 0,
        quorum: Mapping[int, int] | None = None,
        cluster_id: str | None = None,
        listeners: Mapping[str, int] | None = None,
        config: Mapping[str, str] | None = None,
        format_args: Sequence[str] = (),
        jvm_options: Sequence[str] = JVM_OPTIONS,
        classpath: Sequence[str] = (),
    ) -> None:
        if quorum is not None and node_id not in quorum:
            raise ValueError(f"node {node_id} is not a voter of the quorum {dict(quorum)}")
        #: Whether the node runs in ZooKeeper mode (Kafka before 3.3), beside a
        #: ZooKeeper server of its own (listener ``ZOOKEEPER``, ``zookeeper.log``).
        self.zookeeper = uses_zookeeper(version)
        if self.zookeeper and (quorum is not None or format_args):
            raise ValueError("a ZooKeeper-mode node (Kafka before 3.3) has no quorum or format")
        self.version = version
        self.node_id = node_id
        self.cluster_id = cluster_id or random_cluster_id()
        self.config = dict(config or {})
        self.format_args = list(format_args)
        self.jvm_options = list(jvm_options)
        self.classpath = list(classpath)
        self._control = "ZOOKEEPER" if self.zookeeper else "CONTROLLER"
        self._requested_ports = {"PLAINTEXT": port, self._control: controller_port}
        self._requested_ports.update(listeners or {})
        self._quorum = dict(quorum) if quorum is not None else None
        self.ports: dict[str, int] = {}
        self._keep_workdir = workdir is not None
        self.workdir = os.path.abspath(workdir) if workdir else ""
        self._process: subprocess.Popen[bytes] | None = None
        self._zookeeper_process: subprocess.Popen[bytes] | None = None
        self._launched = 0.0
        #: Seconds the last :meth:`start` took, from spawning the JVM to ready.
        self.start_seconds = 0.0

    # -- configuration ---------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"`` of the PLAINTEXT listener."""
        if not self.ports:
            raise RuntimeError("the Kafka node has no ports yet: start() it")
        return f"127.0.0.1:{self.ports['PLAINTEXT']}"

    def address(self, listener: str) -> str:
        """``"127.0.0.1:PORT"`` of the named listener."""
        return f"127.0.0.1:{self.ports[listener]}"

    @property
    def log_path(self) -> str:
        return os.path.join(self.workdir, "kafka.log")

    @property
    def data_dir(self) -> str:
        return os.path.join(self.workdir, "data")

    def properties(self) -> dict[str, str]:
        """The node's server properties: a single-node-friendly base, then ``config``.

        In ZooKeeper mode the node is ``broker.id`` at its own ZooKeeper; the
        KRaft-only keys left in (share groups') are only warned about by Kafka 2.x/3.x.
        """
        ports = self.ports
        quorum = self._quorum or {self.node_id: ports[self._control]}
        listeners = ",".join(
            f"{name}://127.0.0.1:{port}" for name, port in ports.items() if name != "ZOOKEEPER"
        )
        advertised = ",".join(
            f"{name}://127.0.0.1:{port}" for name, port in ports.items() if name != self._control
        )
        replicas = str(min(len(quorum), 3))
        min_isr = str(min(len(quorum), 2))
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": ",".join(
                f"{node}@127.0.0.1:{port}" for node, port in sorted(quorum.items())
            ),
            "listeners": listeners,
            "advertised.listeners": advertised,
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
                "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
            ),
            "log.dirs": self.data_dir,
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.cleaner.dedupe.buffer.size": "2097152",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "num.replica.fetchers": "1",
        }
        if self.zookeeper:
            for key in ("process.roles", "node.id", "controller.quorum.voters"):
                del properties[key]
            del properties["controller.listener.names"]
            properties["broker.id"] = str(self.node_id)
            properties["zookeeper.connect"] = f"127.0.0.1:{ports['ZOOKEEPER']}"
        properties.update(self.config)
        return properties

    def zookeeper_properties(self) -> dict[str, str]:
        """The ZooKeeper server's properties (ZooKeeper mode): on 127.0.0.1, no admin
        server (it would take port 8080)."""
        return {
            "dataDir": os.path.join(self.workdir, "zookeeper"),
            "clientPort": str(self.ports["ZOOKEEPER"]),
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": "0",
            "admin.enableServer": "false",
        }

    # -- life cycle ------------------------------------------------------------------

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the Kafka node is not running")
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 120.0) -> Self:
        """Start the node and block until its Metadata lists it as a live broker.

        Formats the storage the first time; a restart (after :meth:`kill` or
        :meth:`shutdown`) keeps the data and the ports.  A first start that exits at
        once on ports picked here is retried on new ports.  Raises
        :exc:`ApacheKafkaUnavailable` (a first start that failed also stops the node).
        """
        first = not self.ports
        failure = ""
        for _ in range(_START_ATTEMPTS):
            self.launch()
            failure = self.wait_ready(timeout)
            if not failure:
                return self
            exited = self._process is not None and self._process.poll() is not None
            self._terminate(15.0)
            if not (first and exited and 0 in self._requested_ports.values()):
                break
            self.ports = {}  # perhaps a port race: pick new ones
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if first:
            self.stop()
        raise ApacheKafkaUnavailable(f"Kafka node {self.node_id} did not start: {failure}")

    def launch(self) -> None:
        """Spawn the JVM (formatting the storage first if needed) and return at once;
        :meth:`wait_ready` then waits.  A cluster launches all its nodes, then waits."""
        if self.running:
            raise RuntimeError("the Kafka node is already running")
        classpath = os.pathsep.join(
            [os.path.join(resolve_classpath(self.version), "*"), *self.classpath]
        )
        java = shutil.which("java")
        if java is None:
            raise ApacheKafkaUnavailable("java is not installed")
        if not self.workdir:
            self.workdir = tempfile.mkdtemp(prefix="afkak-kafka-")
        os.makedirs(self.workdir, exist_ok=True)
        if not self.ports:
            self._pick_ports()
        config_path = os.path.join(self.workdir, "server.properties")
        with open(config_path, "w") as config:
            config.writelines(f"{key}={value}\n" for key, value in self.properties().items())
        base = [java, *self.jvm_options, "-cp", classpath]
        if self.zookeeper:
            self._launch_zookeeper(base)
        elif not os.path.exists(os.path.join(self.data_dir, "meta.properties")):
            fmt = [
                *base, "kafka.tools.StorageTool", "format", "--ignore-formatted",
                "--cluster-id", self.cluster_id, "--config", config_path, *self.format_args,
            ]  # fmt: skip
            result = subprocess.run(fmt, capture_output=True, stdin=subprocess.DEVNULL)
            if result.returncode:
                output = (result.stdout + result.stderr).decode("utf-8", "replace")
                raise ApacheKafkaUnavailable(f"kafka-storage format failed:\n{output[-2000:]}")
        self._process = self._spawn(base, ["kafka.Kafka", config_path], self.log_path)
        self._launched = time.monotonic()
        _running.add(self)

    def _spawn(self, base: list[str], main: list[str], log_path: str) -> subprocess.Popen[bytes]:
        """A JVM running ``main`` with the logging configurations, logging to ``log_path``."""
        argv = [
            *base[:1],
            f"-Dlog4j2.configurationFile={os.path.join(_FILES, 'log4j2.properties')}",
            f"-Dlog4j.configuration=file:{os.path.join(_FILES, 'log4j.properties')}",
            f"-Djava.io.tmpdir={self.workdir}",
            *base[1:], *main,
        ]  # fmt: skip
        # With util-linux's setpriv the JVM also gets SIGTERM if this process dies unawares.
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            argv = [setpriv, "--pdeathsig", "TERM", "--", *argv]
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                cwd=self.workdir, close_fds=True,
            )  # fmt: skip

    def _launch_zookeeper(self, base: list[str], timeout: float = 60.0) -> None:
        """Start the node's ZooKeeper server (unless it runs) and wait until it accepts
        connections: a Kafka 2.x broker that cannot reach it at start exits."""
        process = self._zookeeper_process
        if process is None or process.poll() is not None:
            config_path = os.path.join(self.workdir, "zookeeper.properties")
            with open(config_path, "w") as config:
                config.writelines(
                    f"{key}={value}\n" for key, value in self.zookeeper_properties().items()
                )
            log_path = os.path.join(self.workdir, "zookeeper.log")
            main = ["org.apache.zookeeper.server.ZooKeeperServerMain", config_path]
            process = self._zookeeper_process = self._spawn(base, main, log_path)
            _running.add(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ApacheKafkaUnavailable(
                    f"ZooKeeper exited with status {process.returncode}:\n"
                    f"{file_tail(os.path.join(self.workdir, 'zookeeper.log'), 2000)}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.ports["ZOOKEEPER"]), 1.0).close()
                return
            except OSError:
                time.sleep(0.1)
        raise ApacheKafkaUnavailable(f"ZooKeeper did not listen within {timeout} s")

    def wait_ready(self, timeout: float = 120.0) -> str:
        """Wait until the node's Metadata lists it (a live, unfenced broker); '' or why
        not (the node may still run)."""
        process = self._process
        if process is None:
            return "not launched"
        deadline = time.monotonic() + timeout
        seen: set[int] | Exception = set()
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return f"exited with status {process.returncode}; log:\n{self.log_tail()}"
            try:
                seen = metadata_brokers(self.bootstrap)
                if self.node_id in seen:
                    self.start_seconds = time.monotonic() - self._launched
                    return ""
            except (OSError, ValueError) as exc:
                seen = exc
            time.sleep(0.1)
        return f"not ready in {timeout} s (Metadata: {seen!r}); log:\n{self.log_tail()}"

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after ``timeout`` s; removes the
        temporary working directory (a ``workdir`` given is kept).  Idempotent."""
        self._terminate(timeout)
        if self.workdir and not self._keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = ""
            self.ports = {}

    def terminate(self) -> None:
        """SIGTERM without waiting, to stop several nodes at once (then :meth:`stop`)."""
        self._send(signal.SIGCONT)
        self._send(signal.SIGTERM)

    def shutdown(self, timeout: float = 15.0) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL) but keep its data, for a later start()."""
        self._terminate(timeout)

    def kill(self) -> None:
        """SIGKILL the JVM (a crash); its data stays for a later :meth:`start`."""
        process = self._process
        if process is not None:
            self._send(signal.SIGCONT)  # a paused JVM must be able to die
            process.kill()
            process.wait(30)
        self._process = None
        if self._zookeeper_process is None:  # else it stays for stop(), atexit's too
            _running.discard(self)

    def pause(self) -> None:
        """SIGSTOP: the node hangs with its sockets open (a hung, not crashed, broker)."""
        self._send(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        self._send(signal.SIGCONT)

    def log_tail(self, size: int = 3000) -> str:
        """The end of the node's log, for error messages."""
        return file_tail(self.log_path, size)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _pick_ports(self) -> None:
        ports: dict[str, int] = {}
        for name, port in self._requested_ports.items():
            ports[name] = port or free_port(list(ports.values()))
        if self._quorum is not None:
            ports["CONTROLLER"] = self._quorum[self.node_id]
        self.ports = ports

    def _send(self, signum: int) -> None:
        if self._process is not None and self._process.poll() is None:
            os.kill(self._process.pid, signum)

    def _terminate(self, timeout: float) -> None:
        process, self._process = self._process, None
        _running.discard(self)
        _stop_process(process, timeout)
        zookeeper, self._zookeeper_process = self._zookeeper_process, None
        _stop_process(zookeeper, timeout)


def _stop_process(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM, SIGKILL after ``timeout`` s."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGCONT)  # a paused JVM cannot shut down
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


@atexit.register
def _stop_all() -> None:
    for node in list(_running):
        node.stop(timeout=5.0)
