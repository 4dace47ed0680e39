"""librdkafka's mock cluster (PyPI confluent-kafka): several brokers and fault injection.

The cluster runs in a child process (rdkafka_mock_server); the methods here send it one
JSON-line command each and block for the answer, which takes well under a millisecond
of the child's time, so calling them from a reactor thread between steps is fine.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from typing import Any, Self

import attrs

from afkak.test.brokers.broker import Broker
from afkak.test.brokers.probe import api_versions
from afkak.test.brokers.process import ManagedProcess
from afkak.test.brokers.quirks import Quirks

#: Metadata's api key, and the last version the mock encodes without a stray byte.
_METADATA = 3
_METADATA_MAX_EXACT = 8

_SERVER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rdkafka_mock_server.py")

#: librdkafka's code that makes a mock broker drop the connection instead of answering.
TRANSPORT_ERROR = -195


class MockCommandError(RuntimeError):
    """The mock cluster refused a command (unknown broker id, bad arguments...)."""


@attrs.frozen
class TrackedRequest:
    """A request the mock cluster received while request tracking was on."""

    broker_id: int
    api_key: int
    timestamp_us: int


class RdkafkaMockCluster(Broker):
    """A librdkafka mock cluster of ``broker_count`` brokers with ids 1..broker_count.

    Its brokers bind random loopback ports (librdkafka picks them), so ``bootstrap``
    lists every broker, comma-separated. Unlike Kafka's default of 3 s, the initial
    rebalance delay of new groups is ``initial_rebalance_delay_ms`` (0 by default).
    """

    name = "rdkafka_mock"
    quirks = Quirks(
        broker="rdkafka_mock",
        no_fetch_sessions=True,
        broker_count=3,
        auto_create_partitions=4,
        supports_create_topics=False,
        supports_describe_groups=False,
        supports_fault_injection=True,
        persistent_storage=False,
        fetch_long_poll_ignores_new_data=True,
        one_batch_per_fetch=True,
        read_committed_returns_aborted=True,
        produce_ignores_producer_fencing=True,
        no_idempotence_checks=True,
        sync_group_follower_may_fail=True,
        leave_group_v3_misread=True,
        retains_only_last_5mib=True,
        api_versions_above_v2_nonstandard_error=True,
        answers_acks0_produce=True,
        flexible_metadata_trailing_byte=True,
        find_coordinator_null_host=True,
        reasons={
            "no_fetch_sessions": "never grants a KIP-227 fetch session: every Fetch is full",
            "auto_create_partitions": "Metadata auto-creates topics with 4 partitions",
            "supports_create_topics": "no CreateTopics: use create_topic() (mock API)",
            "supports_describe_groups": "no DescribeGroups or ListGroups",
            "persistent_storage": "the cluster lives in its process's memory",
            "fetch_long_poll_ignores_new_data": (
                "an empty Fetch is held for the full max_wait_ms, not woken by new data"
            ),
            "one_batch_per_fetch": "one record batch per partition in each Fetch response",
            "read_committed_returns_aborted": "read_committed returns aborted records",
            "produce_ignores_producer_fencing": (
                "a producer fenced by a newer one with its transactional id can still send"
            ),
            "no_idempotence_checks": "idempotent producer sequences are not checked",
            "sync_group_follower_may_fail": (
                "a follower's SyncGroup can fail with INVALID_REQUEST if the leader synced first"
            ),
            "leave_group_v3_misread": "LeaveGroup v3+ is misread",
            "retains_only_last_5mib": "only the last 5 MiB per partition is kept",
            "api_versions_above_v2_nonstandard_error": (
                "ApiVersions > v2 gets UNSUPPORTED_VERSION in a non-standard body"
            ),
            "answers_acks0_produce": "answers Produce with acks=0",
            "flexible_metadata_trailing_byte": (
                "Metadata v9+ responses end with a stray byte: Metadata is capped at v8"
            ),
            "find_coordinator_null_host": "FindCoordinator errors carry a null host",
        },
    )
    start_timeout = 15.0

    def __init__(self, broker_count: int = 3, initial_rebalance_delay_ms: int = 0) -> None:
        super().__init__()
        self.broker_count = broker_count
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        #: librdkafka's version string, known once started.
        self.librdkafka_version = ""
        if broker_count != self.quirks.broker_count:
            self.quirks = attrs.evolve(self.quirks, broker_count=broker_count)

    @property
    def addresses(self) -> dict[int, str]:
        """``{broker_id: "127.0.0.1:PORT"}``."""
        return dict(enumerate(self.bootstrap.split(","), start=1))

    def _spawn(self, port: int, workdir: str | None = None) -> tuple[ManagedProcess, str]:
        # ``port`` is unused: the mock cluster binds ports of its own choosing. The
        # helper script needs only the standard library, so it runs isolated (-I).
        argv = [
            sys.executable,
            "-I",
            _SERVER_SCRIPT,
            str(self.broker_count),
            str(self.initial_rebalance_delay_ms),
        ]
        process = ManagedProcess(
            self.name, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, workdir=workdir
        )
        try:
            hello = self._read_reply(process, self.start_timeout)
        except (OSError, ValueError, TypeError) as exc:
            hello = {"error": f"{exc}; log:\n{process.log_tail()}"}
        if "bootstrap" not in hello:
            process.stop()
            raise OSError(f"mock cluster helper failed: {hello.get('error')}")
        self.librdkafka_version = hello["librdkafka"]
        return process, hello["bootstrap"]

    def start(self) -> Self:
        """Start the cluster, then cap Metadata below its flexible versions.

        The mock ends flexible (v9+) Metadata responses with a stray byte, which a
        strict decoder rejects; advertising at most v8 keeps clients on a version it
        encodes correctly (the ``flexible_metadata_trailing_byte`` quirk).
        """
        super().start()
        low, _ = self.api_versions.get(_METADATA, (0, 8))
        self.set_apiversion(_METADATA, low, _METADATA_MAX_EXACT)
        self.api_versions[_METADATA] = (low, _METADATA_MAX_EXACT)
        return self

    def stop(self) -> None:
        """Ask the helper to destroy the cluster, then stop it like any process."""
        process = self._process
        if process is not None and process.exit_code() is None and process.stdin is not None:
            try:
                process.stdin.write(b'{"op": "shutdown"}\n')
                process.stdin.flush()
                process.wait(self.stop_timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        super().stop()

    def _wait_ready(self, process: ManagedProcess, bootstrap: str) -> str:
        """Every broker of the cluster must answer, not only the first."""
        for address in bootstrap.split(","):
            try:
                self.api_versions = api_versions(address, timeout=self.start_timeout)
            except (OSError, ValueError) as exc:
                return f"{address} did not answer ApiVersions v0: {exc}"
        return ""

    # Topics and partitions

    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int = 1) -> None:
        self._command("topic_create", topic, partitions, replication_factor)

    def topic_set_error(self, topic: str, error_code: int) -> None:
        """Metadata (and AddPartitionsToTxn) answer ``error_code`` for ``topic``."""
        self._command("topic_set_error", topic, error_code)

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move leadership (-1: no leader); creates the topic if needed."""
        self._command("partition_set_leader", topic, partition, broker_id)

    def partition_set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        self._command("partition_set_follower", topic, partition, broker_id)

    def partition_set_follower_wmarks(
        self, topic: str, partition: int, low: int, high: int
    ) -> None:
        self._command("partition_set_follower_wmarks", topic, partition, low, high)

    def partition_delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Advance the log start offset to ``before_offset``."""
        self._command("partition_delete_records", topic, partition, before_offset)

    # Brokers

    def broker_set_down(self, broker_id: int = -1) -> None:
        """Drop the broker's connections and refuse new ones (-1: every broker).

        Leadership does not move."""
        self._command("broker_set_down", broker_id)

    def broker_set_up(self, broker_id: int = -1) -> None:
        """Accept connections again, on the same port."""
        self._command("broker_set_up", broker_id)

    def broker_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of the broker (-1: every broker) by ``rtt_ms``."""
        self._command("broker_set_rtt", broker_id, rtt_ms)

    def coordinator_set(self, key_type: str, key: str, broker_id: int) -> None:
        """Make ``broker_id`` the coordinator of a "group" or "transaction" id."""
        self._command("coordinator_set", key_type, key, broker_id)

    def set_apiversion(self, api_key: int, min_version: int, max_version: int) -> None:
        """Restrict the advertised versions of ``api_key`` (-1, -1: disable it)."""
        self._command("set_apiversion", api_key, min_version, max_version)

    def group_initial_rebalance_delay_ms(self, delay_ms: int) -> None:
        self._command("group_initial_rebalance_delay_ms", delay_ms)

    # Injected errors

    def push_request_errors(self, api_key: int, *error_codes: int) -> None:
        """The next requests of ``api_key`` to any broker fail with these codes, in order
        (TRANSPORT_ERROR: the broker disconnects instead)."""
        self._command("push_request_errors", api_key, list(error_codes))

    def broker_push_request_error_rtts(
        self, broker_id: int, api_key: int, *errors_and_rtts: tuple[int, int]
    ) -> None:
        """Like push_request_errors for one broker, each ``(error_code, rtt_ms)`` also
        delaying its response; broker errors take precedence over cluster errors."""
        pairs = [list(pair) for pair in errors_and_rtts]
        self._command("broker_push_request_error_rtts", broker_id, api_key, pairs)

    def clear_request_errors(self, api_key: int) -> None:
        self._command("clear_request_errors", api_key)

    # Request tracking

    def start_request_tracking(self) -> None:
        self._command("start_request_tracking")

    def stop_request_tracking(self) -> None:
        self._command("stop_request_tracking")

    def clear_requests(self) -> None:
        self._command("clear_requests")

    def tracked_requests(self) -> list[TrackedRequest]:
        """Requests received since tracking started (or was last cleared), oldest first."""
        return [TrackedRequest(*row) for row in self._command("get_requests")]

    def _command(self, op: str, *args: Any) -> Any:
        process = self._process
        if process is None or process.stdin is None:
            raise RuntimeError("the mock cluster is not running")
        process.stdin.write(json.dumps({"op": op, "args": list(args)}).encode() + b"\n")
        process.stdin.flush()
        reply = self._read_reply(process, 10.0)
        if "error" in reply:
            raise MockCommandError(f"{op}{tuple(args)}: {reply['error']}")
        return reply["result"]

    @staticmethod
    def _read_reply(process: ManagedProcess, timeout: float) -> dict[str, Any]:
        """Read one JSON line from the helper within ``timeout`` s."""
        stdout = process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([stdout], [], [], remaining)[0]:
                raise TimeoutError(f"no answer from the mock cluster helper in {timeout} s")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise ConnectionError(f"mock cluster helper exited ({process.exit_code()})")
            line += chunk
        reply = json.loads(line)
        if not isinstance(reply, dict):
            raise TypeError(f"unexpected answer from the mock cluster helper: {line!r}")
        return reply
