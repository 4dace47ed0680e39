"""What every test broker offers: start on free loopback ports, wait until it answers
Kafka's ApiVersions, stop only what it started."""

from __future__ import annotations

import abc
import time
from typing import ClassVar, Self

from afkak.test.brokers.probe import api_versions, free_port
from afkak.test.brokers.process import ManagedProcess, unavailable
from afkak.test.brokers.quirks import Quirks

#: How often start() retries on a fresh port when the broker exits early (port races).
_START_ATTEMPTS = 3


class Broker(abc.ABC):
    """A Kafka-protocol broker (or cluster) run as a child process of the tests."""

    #: Short name used by shared_broker() and in skip reasons.
    name: ClassVar[str]
    #: Deviations from Kafka; a class attribute that an instance may refine.
    quirks: Quirks
    #: Seconds start() waits for ApiVersions to be answered.
    start_timeout: ClassVar[float] = 15.0
    #: Seconds stop() waits after SIGTERM before SIGKILL.
    stop_timeout: float = 5.0

    def __init__(self) -> None:
        self._process: ManagedProcess | None = None
        self._bootstrap: str | None = None
        #: ApiVersions v0 answer at start: {api_key: (min_version, max_version)}.
        self.api_versions: dict[int, tuple[int, int]] = {}
        #: Seconds from spawning the process to its first ApiVersions answer.
        self.start_seconds: float = 0.0

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"`` (several, comma-separated, for a cluster)."""
        if self._bootstrap is None:
            raise RuntimeError(f"{self.name} broker is not running")
        return self._bootstrap

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError(f"{self.name} broker is not running")
        return self._process.pid

    @property
    def workdir(self) -> str:
        """The process's temporary working directory (logs, data); removed by stop()."""
        if self._process is None:
            raise RuntimeError(f"{self.name} broker is not running")
        return self._process.workdir

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.exit_code() is None

    def start(self) -> Self:
        """Start the broker and wait until it answers; returns self.

        Raises unittest.SkipTest (BrokerUnavailable when CI is "true") if it cannot run.
        """
        if self._process is not None:
            raise RuntimeError(f"{self.name} broker is already started")
        failure = ""
        for _ in range(_START_ATTEMPTS):
            began = time.monotonic()
            try:
                process, bootstrap = self._spawn(free_port())
            except OSError as exc:
                unavailable(f"{self.name} broker cannot be executed: {exc}")
            failure = self._wait_ready(process, bootstrap)
            if not failure:
                self._process, self._bootstrap = process, bootstrap
                self.start_seconds = time.monotonic() - began
                return self
            process.stop(self.stop_timeout)
        unavailable(f"{self.name} broker did not start: {failure}")

    def stop(self) -> None:
        """Stop the process this object started (SIGTERM, then SIGKILL); idempotent."""
        process, self._process, self._bootstrap = self._process, None, None
        if process is not None:
            process.stop(self.stop_timeout)

    def crash_and_restart(self) -> float:
        """kill -9 the broker, start it again on the same port with its data; seconds down.

        Only for brokers that keep their data in their working directory
        (``_spawn`` takes ``workdir``).
        """
        process, bootstrap = self._process, self._bootstrap
        if process is None or bootstrap is None:
            raise RuntimeError(f"{self.name} broker is not running")
        began = time.monotonic()
        process.kill()
        port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
        for _ in range(_START_ATTEMPTS):
            restarted, _ = self._spawn(port, workdir=process.workdir)
            failure = self._wait_ready(restarted, bootstrap)
            if not failure:
                self._process = restarted
                return time.monotonic() - began
            restarted.kill()
            time.sleep(0.5)  # the port may still be held by the dead process's sockets
        raise RuntimeError(f"{self.name} broker did not restart: {failure}")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @abc.abstractmethod
    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create ``topic`` with ``partitions`` partitions and wait until it is visible."""

    def _spawn(self, port: int, workdir: str | None = None) -> tuple[ManagedProcess, str]:
        """Start the process for a broker on ``port``; return it and its bootstrap.

        Every broker run as one ManagedProcess defines it; Apache Kafka's harness
        (``kafka.py``) overrides start() and stop() instead, its JVMs being run by
        afkak.testing.apache_kafka.
        """
        raise NotImplementedError(f"{self.name} broker does not spawn one process")

    def _wait_ready(self, process: ManagedProcess, bootstrap: str) -> str:
        """Poll ApiVersions on the first bootstrap address; return '' or what went wrong."""
        address = bootstrap.split(",")[0]
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            code = process.exit_code()
            if code is not None:
                return f"exited with status {code}; log:\n{process.log_tail()}"
            try:
                self.api_versions = api_versions(address, timeout=1.0)
                return ""
            except (OSError, ValueError) as exc:
                last_error = exc
            time.sleep(0.01)
        return (
            f"no ApiVersions answer in {self.start_timeout} s ({last_error}); "
            f"log:\n{process.log_tail()}"
        )
