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
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

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


def _java_argv(main_class: str, args: Sequence[str], version: str | None = None) -> list[str]:
    """The command line running *main_class* of Kafka's tools; skips (fails on CI) when
    Kafka's tools cannot run."""
    if not java_available():
        unavailable("kafka tools: java is not installed")
    try:
        classpath = os.path.join(resolve_classpath(version), "*")
    except ApacheKafkaUnavailable as exc:
        unavailable(f"kafka tools: {exc}")
    return [
        "java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={_TOOLS_LOG4J2}",
        "-cp", classpath, main_class, *args,
    ]  # fmt: skip


def run_tool(
    main_class: str,
    *args: str,
    input: str | None = None,
    timeout: float = 120.0,
    version: str | None = None,
) -> str:
    """Run one of Kafka's Java tools to its end; its stdout.  Raises RuntimeError with
    its stderr when it fails; skips (fails on CI) when Kafka's tools cannot run."""
    done = subprocess.run(
        _java_argv(main_class, args, version),
        input=input,
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
    (fewer if ``timeout`` seconds pass without one), sorted by partition and offset."""
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


#: Java's classic-protocol assignor class for each assignor name afkak also has.
JAVA_ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


class VerifiableConsumer:
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
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
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
        self.process = subprocess.Popen(
            _java_argv("org.apache.kafka.tools.VerifiableConsumer", args),
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
            name = event.get("name")
            with self._lock:
                self.events.append(event)
                if name == "partitions_assigned":
                    self.assigned |= {p["partition"] for p in event["partitions"]}
                elif name == "partitions_revoked":
                    self.assigned -= {p["partition"] for p in event["partitions"]}
            if name == "records_consumed":
                for p in event["partitions"]:
                    offsets = list(range(p["minOffset"], p["maxOffset"] + 1))
                    assert len(offsets) == p["count"], event  # a plain topic has no gaps
                    self.on_records(p["partition"], offsets)

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
        """SIGKILL: no commit, no LeaveGroup; the group waits out its session."""
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
        if os.path.exists(self._config):
            os.remove(self._config)


def describe_group(bootstrap: str, group_id: str) -> dict[tuple[str, int], dict[str, str]]:
    """``kafka-consumer-groups --describe``: per (topic, partition), its row by column
    (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, ...; "-" where it has none)."""
    out = run_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server", bootstrap, "--describe", "--group", group_id,
    )  # fmt: skip
    rows: dict[tuple[str, int], dict[str, str]] = {}
    header: list[str] = []
    for line in out.splitlines():
        cells = line.split()
        if cells[:1] == ["GROUP"]:
            header = cells
        elif header and len(cells) == len(header):
            row = dict(zip(header, cells, strict=True))
            rows[row["TOPIC"], int(row["PARTITION"])] = row
    return rows
