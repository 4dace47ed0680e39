"""pytest hooks for the real-broker tests (``afkak/test/conftest.py`` loads them).

- A failed Apache Kafka test keeps the logs of every running Kafka node: they are copied to
  ``$TMPDIR/afkak-kafka-logs/`` and the paths shown in the test's report.
- With ``CI=true`` a skipped Apache Kafka test fails the run: Kafka is the reference
  broker, so CI must have run every one of its tests.  A Kafka test is (the suite's
  naming rule) one in a class whose name starts with ``Kafka``, a test whose name ends
  with ``_kafka``, or one in ``test_apache_kafka.py``.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from afkak.test.brokers.kafka import keep_running_logs


def is_kafka_test(nodeid: str) -> bool:
    """Whether the test ``nodeid`` runs against Apache Kafka (by the naming rule)."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    cls = parts[0] if len(parts) > 1 else ""
    return (
        cls.startswith("Kafka")
        or parts[-1].split("[")[0].endswith("_kafka")
        or path.endswith("test_apache_kafka.py")
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[Any]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and is_kafka_test(item.nodeid):
        kept = keep_running_logs(f"{item.nodeid}-{report.when}")
        if kept:
            report.sections.append(("Apache Kafka broker logs (kept)", "\n".join(kept)))


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") == "true":
        config.pluginmanager.register(KafkaSkipCheck(), "afkak-kafka-skip-check")


class KafkaSkipCheck:
    """Under CI: a skipped Apache Kafka test makes the run fail, and is listed."""

    def __init__(self) -> None:
        self.skipped: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and is_kafka_test(report.nodeid):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else longrepr
            self.skipped.append(f"{report.nodeid}: {reason}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.skipped:
            terminalreporter.section("Apache Kafka tests skipped under CI=true", red=True)
            for line in self.skipped:
                terminalreporter.line(line)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.skipped and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
