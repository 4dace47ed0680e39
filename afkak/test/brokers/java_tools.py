"""Apache Kafka's Java client as the interop peer: its own tools, from the broker's classpath.

``ConsoleConsumer`` reads what afkak wrote, ``VerifiableProducer`` and ``ConsoleProducer``
write what afkak reads.  Each call runs one short-lived JVM (about 1-5 s) with
the tools' log4j2 configuration (warnings to stderr), so stdout carries only the
tool's output.  Values, keys and headers given to or read from these tools are text:
the console tools are line-based (tab-separated columns here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

import afkak
from afkak.test.brokers.process import unavailable
from afkak.testing.apache_kafka import (
    JVM_OPTIONS,
    ApacheKafkaUnavailable,
    java_available,
    resolve_classpath,
)

_TOOLS_LOG4J2 = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "testing",
    "kafka",
    "log4j2-tools.properties",
)


@attrs.frozen
class JavaRecord:
    """One record as Kafka's ConsoleConsumer printed it (``None`` for "null")."""

    partition: int
    offset: int
    timestamp_ms: int
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str | None], ...]


def _java_argv(
    main_class: str,
    args: Sequence[str],
    version: str | None = None,
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """The command line running *main_class* of Kafka's tools; skips (fails on CI) when
    Kafka's tools cannot run."""
    if not java_available():
        unavailable("kafka tools: java is not installed")
    try:
        classpath = os.path.join(resolve_classpath(version), "*")
    except ApacheKafkaUnavailable as exc:
        unavailable(f"kafka tools: {exc}")
    return [
        "java", *JVM_OPTIONS, *jvm_options, f"-Dlog4j2.configurationFile={_TOOLS_LOG4J2}",
        "-cp", classpath, main_class, *args,
    ]  # fmt: skip


def run_tool(
    main_class: str,
    *args: str,
    input: str | None = None,
    timeout: float = 120.0,
    version: str | None = None,
    env: Mapping[str, str] | None = None,
    jvm_options: Sequence[str] = (),
) -> str:
    """Run one of Kafka's Java tools to its end; its stdout.  Raises RuntimeError with
    its stderr when it fails; skips (fails on CI) when Kafka's tools cannot run.
    *env*: the tool's environment (``JAVA_TOOL_OPTIONS`` for system properties)."""
    done = subprocess.run(
        _java_argv(main_class, args, version, jvm_options),
        input=input,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{main_class} exited with status {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout


def _config_file(config: Mapping[str, str]) -> str:
    with tempfile.NamedTemporaryFile(
        "w", prefix="afkak-kafka-tool-", suffix=".properties", delete=False
    ) as handle:
        handle.writelines(f"{key}={value}\n" for key, value in config.items())
        return handle.name


def console_consume(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    timeout: float = 60.0,
    isolation_level: str = "read_uncommitted",
) -> list[JavaRecord]:
    """Read ``count`` records of ``topic`` from the beginning with ConsoleConsumer
    (at *isolation_level*; fewer if ``timeout`` seconds pass without one), sorted by
    partition and offset."""
    out = run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
        "--isolation-level", isolation_level,
        "--max-messages", str(count), "--timeout-ms", str(int(timeout * 1000)),
        "--formatter-property", "print.timestamp=true",
        "--formatter-property", "print.partition=true",
        "--formatter-property", "print.offset=true",
        "--formatter-property", "print.headers=true",
        "--formatter-property", "print.key=true",
        "--formatter-property", "key.separator=\t",
        timeout=timeout + 60,
    )  # fmt: skip
    records = [_parse_console_line(line) for line in out.splitlines() if line]
    return sorted(records, key=lambda r: (r.partition, r.offset))


def _parse_console_line(line: str) -> JavaRecord:
    created, partition, offset, headers, key, value = line.split("\t", 5)
    parsed: list[tuple[str, str | None]] = []
    if headers != "NO_HEADERS":
        for header in headers.split(","):
            name, _, header_value = header.partition(":")
            parsed.append((name, None if header_value == "null" else header_value))
    return JavaRecord(
        partition=int(partition.removeprefix("Partition:")),
        offset=int(offset.removeprefix("Offset:")),
        timestamp_ms=int(created.split(":", 1)[1]),
        key=None if key == "null" else key,
        value=None if value == "null" else value,
        headers=tuple(parsed),
    )


def console_produce(
    bootstrap: str,
    topic: str,
    records: Sequence[tuple[Sequence[tuple[str, str]], str, str]],
    *,
    compression: str = "none",
) -> None:
    """Write ``(headers, key, value)`` records, in order, with ConsoleProducer (acks=all)."""
    lines = "".join(
        "{}\t{}\t{}\n".format(",".join(f"{n}:{v}" for n, v in headers), key, value)
        for headers, key, value in records
    )
    run_tool(
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server", bootstrap, "--topic", topic,
        "--compression-codec", compression, "--request-required-acks", "all",
        "--reader-property", "parse.key=true",
        "--reader-property", "parse.headers=true",
        "--reader-property", "key.separator=\t",
        "--reader-property", "headers.delimiter=\t",
        "--reader-property", "headers.separator=,",
        "--reader-property", "headers.key.separator=:",
        input=lines,
    )  # fmt: skip


def verifiable_produce(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    value_prefix: int,
    create_time_ms: int,
    config: Mapping[str, str] | None = None,
) -> list[dict[str, object]]:
    """Write ``count`` records with VerifiableProducer (acks=all; values
    ``"<prefix>.<i>"``, keys cycling over 3); its ``producer_send_success`` events."""
    path = _config_file({"retries": "2147483647", **(config or {})})
    try:
        out = run_tool(
            "org.apache.kafka.tools.VerifiableProducer",
            "--bootstrap-server", bootstrap, "--topic", topic,
            "--max-messages", str(count), "--acks", "-1",
            "--value-prefix", str(value_prefix), "--repeating-keys", "3",
            "--message-create-time", str(create_time_ms), "--command-config", path,
        )  # fmt: skip
    finally:
        os.remove(path)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("name") == "producer_send_success"]


def transactional_copy(
    bootstrap: str,
    input_topic: str,
    partition: int,
    output_topic: str,
    *,
    transactional_id: str,
    group: str,
    random_aborts: bool = True,
    transaction_size: int = 10,
) -> list[dict[str, Any]]:
    """Copy one partition to *output_topic* with Java's transactional producer
    (TransactionalMessageCopier: each batch and its input offsets in one transaction,
    a third of them aborted and redone when *random_aborts*); its status events."""
    args = [
        "--broker-list", bootstrap, "--input-topic", input_topic,
        "--input-partition", str(partition), "--output-topic", output_topic,
        "--transactional-id", transactional_id, "--consumer-group", group,
        "--transaction-size", str(transaction_size), "--transaction-timeout", "60000",
    ]  # fmt: skip
    if random_aborts:
        args.append("--enable-random-aborts")
    out = run_tool("org.apache.kafka.tools.TransactionalMessageCopier", *args)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


#: Java's classic-protocol assignor class for each assignor name afkak also has.
JAVA_ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


class _JsonEventTool:
    """A long-running Java tool that prints newline JSON events (Kafka's verifiable clients).

    A thread reads the events into :attr:`events` and hands each to :meth:`_event`;
    :meth:`stop` sends SIGTERM (the client closes cleanly), :meth:`kill` SIGKILL.
    """

    _config: str | None = None

    def _start(self, main_class: str, args: Sequence[str]) -> None:
        self._spawn(_java_argv(main_class, args))

    def _spawn(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            with self._lock:
                self.events.append(event)
                self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        """One event, read under the lock."""

    def named(self, name: str) -> list[dict[str, Any]]:
        """Its events called *name* so far."""
        with self._lock:
            return [e for e in self.events if e.get("name") == name]

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM: it closes its consumer (commits, leaves the group) and exits."""
        if self.process.poll() is None:
            self.process.terminate()
        self._finish(timeout)

    def kill(self) -> None:
        """SIGKILL: no commit, no leaving; the group waits out its session."""
        if self.process.poll() is None:
            self.process.kill()
        self._finish(10.0)

    def _finish(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        if self._config is not None and os.path.exists(self._config):
            os.remove(self._config)


class VerifiableConsumer(_JsonEventTool):
    """A Java ``VerifiableConsumer`` group member (*protocol* ``classic`` or KIP-848's
    ``consumer``), running until
    :meth:`stop` (SIGTERM: it leaves the group) or :meth:`kill` (SIGKILL: it does not).

    It commits synchronously after each poll.  A thread reads its JSON events:
    :attr:`assigned` follows ``partitions_assigned`` / ``partitions_revoked`` (incremental
    under cooperative-sticky), and each ``records_consumed`` range of a partition goes to
    *on_records(partition, offsets)*.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group_id: str,
        on_records: Callable[[int, list[int]], None],
        *,
        protocol: str = "classic",
        strategy: str = "range",
        session_timeout_ms: int = 6000,
        group_instance_id: str | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        # KIP-848's protocol takes its session and heartbeat from the broker, its
        # assignor from group.remote.assignor: the classic settings are refused there.
        classic = protocol == "classic"
        timing = {"heartbeat.interval.ms": str(session_timeout_ms // 4)} if classic else {}
        self._config = _config_file({**timing, **(config or {})})
        self.on_records = on_records
        self.assigned: set[int] = set()
        args = [
            "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group_id,
            "--group-protocol", protocol, "--reset-policy", "earliest",
            "--consumer.config", self._config,
        ]  # fmt: skip
        if classic:
            args += [
                "--assignment-strategy", JAVA_ASSIGNORS[strategy],
                "--session-timeout", str(session_timeout_ms),
            ]  # fmt: skip
        if group_instance_id is not None:
            args += ["--group-instance-id", group_instance_id]
        self._start("org.apache.kafka.tools.VerifiableConsumer", args)

    def _event(self, event: dict[str, Any]) -> None:
        name = event.get("name")
        if name == "partitions_assigned":
            self.assigned |= {p["partition"] for p in event["partitions"]}
        elif name == "partitions_revoked":
            self.assigned -= {p["partition"] for p in event["partitions"]}
        elif name == "records_consumed":
            for p in event["partitions"]:
                offsets = list(range(p["minOffset"], p["maxOffset"] + 1))
                assert len(offsets) == p["count"], event  # a plain topic has no gaps
                self.on_records(p["partition"], offsets)


class AfkakVerifiableConsumer(VerifiableConsumer):
    """An afkak ConsumerGroup member in a child process (``afkak_member.py``) printing
    VerifiableConsumer's events, so that it can be killed -9 as the Java one."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group_id: str,
        on_records: Callable[[int, list[int]], None],
        *,
        protocol: str = "consumer",
    ) -> None:
        self.on_records = on_records
        self.assigned = set()
        module = "afkak.test.brokers.afkak_member"
        # The child imports this afkak, wherever the test imported it from.
        root = os.path.dirname(os.path.dirname(os.path.dirname(afkak.__file__)))
        path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", module, bootstrap, topic, group_id, protocol]
        self._spawn(argv, {**os.environ, "PYTHONPATH": path})


class VerifiableShareConsumer(_JsonEventTool):
    """A Java ``VerifiableShareConsumer`` (Kafka 4.1+) in share group *group_id*, which
    reads from the earliest offset and, in its default ``auto`` mode, accepts each batch
    at its next poll.  :attr:`received` and :attr:`acknowledged` hold ``(partition,
    offset)`` pairs from its ``records_consumed`` and successful ``offsets_acknowledged``
    events, in order."""

    def __init__(self, bootstrap: str, topic: str, group_id: str) -> None:
        self.received: list[tuple[int, int]] = []
        self.acknowledged: list[tuple[int, int]] = []
        self._start(
            "org.apache.kafka.tools.VerifiableShareConsumer",
            [
                "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group_id,
                "--offset-reset-strategy", "earliest",
            ],
        )  # fmt: skip

    def _event(self, event: dict[str, Any]) -> None:
        name = event.get("name")
        if name == "records_consumed":
            into = self.received
        elif name == "offsets_acknowledged" and event.get("success"):
            into = self.acknowledged
        else:
            return
        for p in event["partitions"]:
            into.extend((p["partition"], o) for o in p["offsets"])


def table(output: str) -> list[dict[str, str]]:
    """The rows of a Kafka tool's whitespace-aligned table, keyed by its header."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    if not lines:
        return []
    header, *rows = lines
    return [dict(zip(header, row, strict=False)) for row in rows]


def transactions_tool(bootstrap: str, *args: str) -> str:
    """``kafka-transactions`` (TransactionsCommand) with *args* (``list``, ``describe
    --transactional-id ID``, ``describe-producers``, ``find-hanging``, ``abort``); its
    output (:func:`table` parses the listing ones)."""
    return run_tool(
        "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bootstrap, *args
    )


def transactions(bootstrap: str, *args: str) -> list[dict[str, str]]:
    """The rows ``kafka-transactions`` prints for *args*: ``list`` gives TransactionalId,
    Coordinator, ProducerId, TransactionState; ``describe --transactional-id ID``
    CoordinatorId, TransactionalId, ProducerId, ProducerEpoch, TransactionState,
    TransactionTimeoutMs, CurrentTransactionStartTimeMs, TransactionDurationMs,
    TopicPartitions."""
    return table(transactions_tool(bootstrap, *args))


def describe_group(bootstrap: str, group_id: str) -> dict[tuple[str, int], dict[str, str]]:
    """``kafka-consumer-groups --describe``: per (topic, partition), its row by column
    (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, ...; "-" where it has none)."""
    out = run_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server", bootstrap, "--describe", "--group", group_id,
    )  # fmt: skip
    return {(row["TOPIC"], int(row["PARTITION"])): row for row in _group_table(out)}


def describe_members(bootstrap: str, group_id: str) -> list[dict[str, str]]:
    """``kafka-consumer-groups --describe --members --verbose``: one row per member by
    column (CONSUMER-ID, CLIENT-ID, #PARTITIONS, and for a consumer-protocol group
    CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT; "-" where none)."""
    out = run_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server", bootstrap, "--describe", "--group", group_id,
        "--members", "--verbose",
    )  # fmt: skip
    return _group_table(out)


def _group_table(out: str) -> list[dict[str, str]]:
    """The rows of ``kafka-consumer-groups``' table (after its GROUP header) by column."""
    header: list[str] = []
    rows = []
    for line in out.splitlines():
        cells = line.split()
        if cells[:1] == ["GROUP"]:
            header = cells
        elif header and len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows
