"""pytest configuration of the suite: the real-broker hooks (kept Kafka logs of a failed
test; under CI=true a skipped Apache Kafka test fails the run)."""

from afkak.test.brokers.pytest_plugin import pytest_configure, pytest_runtest_makereport

__all__ = ["pytest_configure", "pytest_runtest_makereport"]
