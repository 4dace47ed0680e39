"""pytest's view of the suite: the ``brokers`` marker on every test that needs more than a Clock.

Real brokers (Tansu, noida-db, librdkafka's mock cluster, Apache Kafka), Spark,
subprocesses and builds are slow and need the machine's tools; the rest runs
on ``twisted.internet.task.Clock`` and the in-memory fake cluster.  The
marker goes on by module, so a test added to one of these modules is marked
too: ``pytest -m "not brokers"`` runs the Clock suite, ``pytest -m brokers``
the rest.  The real-broker hooks (kept Kafka logs of a failed test; under
CI=true a skipped Apache Kafka test fails the run) come from
``afkak/test/brokers/pytest_plugin.py``; an Apache Kafka test (its naming rule) is
marked ``brokers`` wherever it lives.
"""

from __future__ import annotations

import functools
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _pytest.unittest
import pytest
from hypothesis import settings

from afkak.test.brokers.pytest_plugin import (
    is_kafka_test,
    pytest_configure,
    pytest_runtest_makereport,
)
from afkak.test.helpers import HYPOTHESIS_PROFILE

__all__ = [
    "BROKER_MODULES",
    "RANDOM_SEED",
    "is_broker_module",
    "pytest_collection_modifyitems",
    "pytest_report_header",
    "pytest_configure",  # the real-broker hooks: kept Kafka logs of a failed test,
    "pytest_runtest_makereport",  # and under CI=true a skipped Apache Kafka test fails the run
]

#: Modules that start brokers or subprocesses, beside every ``test_*_brokers`` module.
BROKER_MODULES = frozenset(
    {
        "test_acls_kafka",  # ACL proofs on the secured Apache Kafka node
        "test_admin_kafka4",  # operator admin calls against Apache Kafka and its Java tools
        "test_apache_kafka",  # starts an Apache Kafka node
        "test_brokers_harness",  # starts each broker
        "test_chaos",  # tools/chaos.py in subprocesses, against brokers
        "test_cli_broker_command",  # `afkak broker` and README's first program against it
        "test_client_interop",  # confluent-kafka against real brokers
        "test_client_sasl",
        "test_client_tls",
        "test_compat_app",  # an afkak 21.5 application against noida-db
        "test_consumer_peers",  # kafka-python and aiokafka against real brokers
        "test_consumer_replicas_kafka",  # KIP-320/KIP-392 on a 3-node Apache Kafka with racks
        "test_docs_examples",  # the docs' scripts against noida-db
        "test_enterprise_kafka",  # Kerberos (a KDC) and JKS/PKCS12 stores on Apache Kafka
        "test_faults_kafka",  # a hung broker and evicted fetch sessions, on Apache Kafka
        "test_java_interop",  # Kafka's Java clients against afkak, on Apache Kafka
        "test_main_job",  # tools/main_job.py, embedded and against a cluster
        "test_metrics_kafka",  # quota throttling and lag against Apache Kafka
        "test_oauth_kafka",  # OIDC (mock-oauth2-server) and MSK IAM tokens on Apache Kafka
        "test_packaging",  # builds the wheel
        "test_schema_registry_http",  # the in-memory registry served by a child process
        "test_security_kafka",  # SASL and TLS proofs on the secured Apache Kafka node
        "test_spark_cluster",  # a Spark standalone master and two workers, on Apache Kafka
        "test_spark_exactly_once",  # the exactly-once sink through a driver crash, on Apache Kafka
        "test_spark_kafka_parity",  # Spark's Kafka connector against afkak's, on Apache Kafka
        "test_spark_schema_registry",  # from_confluent_avro against from_avro, on Apache Kafka
        "test_spark_source",  # a local Spark session against Tansu
        "test_testing_embedded",  # EmbeddedBroker
    }
)


# Derandomized: each property test draws the same examples on every run (seeded by
# the test), so a failure is the code's, reproducible, never a flake of the draw.
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True)
settings.register_profile("quick", max_examples=20, deadline=None, derandomize=True)
settings.load_profile(HYPOTHESIS_PROFILE)


def _twisted_version_once() -> None:
    """pytest (9.2 here) asks ``importlib.metadata`` for Twisted's version before every
    test, reading installed packages' metadata each time: seconds of the Clock suite.
    The answer cannot change once ``twisted.trial.unittest`` is imported (conftest
    imports it through the helpers), so it is asked once."""
    lookup = getattr(_pytest.unittest, "_get_twisted_version", None)
    if lookup is not None and "twisted.trial.unittest" in sys.modules:
        _pytest.unittest._get_twisted_version = functools.cache(lookup)


_twisted_version_once()

#: Each test's random seed: AFKAK_RANDOM_SEED (0 by default) and the test's name.
RANDOM_SEED = int(os.environ.get("AFKAK_RANDOM_SEED", "0"))


def pytest_report_header() -> str:
    return f"AFKAK_RANDOM_SEED={RANDOM_SEED}, hypothesis profile {HYPOTHESIS_PROFILE}"


@pytest.fixture(autouse=True)
def _seeded_random(request: Any) -> Iterator[None]:
    """The :mod:`random` module seeded for each test: a client made without ``rng``
    (and the jitter of its layers) draws from a source seeded from it, as does
    ``ClockTestCase.rng``.  Another AFKAK_RANDOM_SEED runs the suite on other draws."""
    state = random.getstate()
    random.seed(f"{RANDOM_SEED}:{request.node.nodeid}")
    yield
    random.setstate(state)


def is_broker_module(name: str) -> bool:
    """Whether the test module *name* (``afkak.test.test_x``'s last part) needs brokers."""
    return name.endswith("_brokers") or name in BROKER_MODULES


def pytest_ignore_collect(collection_path: Path, config: Any) -> bool | None:
    """Under ``-m "not brokers"`` (the Clock suite) a broker module is not imported at
    all: every test in it would be deselected, and importing them was a tenth of the
    suite's time."""
    if config.getoption("markexpr", "").split() != ["not", "brokers"]:
        return None
    name = collection_path.name
    if name.startswith("test_") and name.endswith(".py") and is_broker_module(name[:-3]):
        return True
    return None


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        in_broker_module = module is not None and is_broker_module(
            module.__name__.rpartition(".")[2]
        )
        if in_broker_module or is_kafka_test(item.nodeid):
            item.add_marker(pytest.mark.brokers)
