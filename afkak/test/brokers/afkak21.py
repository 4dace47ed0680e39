"""afkak 21.5's own integration tests, run with this tree's afkak against a test broker.

21.5's tests (``afkak/test/int/`` in its sdist) start ZooKeeper and a 2015-era Kafka
per test through ``afkak.test.int.fixtures.KafkaHarness``.  ``install`` puts 21.5's test
files beside ours (``afkak.test.int``, ``afkak.test.testutil``) and replaces that one
module with a harness serving a broker started once (and a 3-broker cluster for the
test that kills leaders): 21.5's tests then import ``afkak``, this tree's library,
unchanged.  ``tools/afkak21_suite.py`` is the command.

Each test still gets what 21.5's fresh cluster gave it: a topic of its own, empty,
created with the partition count and ``message_max_bytes`` its class asked for (a
class-level topic name such as ``produce_topic`` gets a unique suffix), the topic it
names itself (21.5's brokers created it on first use), and its brokers to stop and
restart (``KafkaHarness.brokers``, by node id).
"""

from __future__ import annotations

import re
import sys
import types
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import attrs

import afkak.test
from afkak.test.brokers.quirks import Quirks

#: The module 21.5's tests import the harness from; replaced by ``install``.
FIXTURES_MODULE = "afkak.test.int.fixtures"

#: 21.5 tests that kill brokers of a 3-broker cluster: served by the tool's cluster.
#: (21.5's client, consumer and performance classes ask for replicas=3 too, and
#: run on one broker: replication changes nothing they check.)
NEEDS_A_CLUSTER = frozenset({"test_switch_leader"})
#: 21.5 tests that stop and restart their broker (``KafkaHarness.brokers``).
RESTART_BROKERS = frozenset({"test_broker_restart", "test_switch_leader"})
#: Topics 21.5 tests name themselves, which 21.5's brokers auto-created with the
#: cluster's partition count: created (if missing) before such a test.
OWN_TOPICS = {
    "test_single_coordinator_join": "test-topic",
    "test_three_coordinator_join": "test-topic",
}


@attrs.frozen
class Expected:
    """Why a 21.5 test fails here, and a regular expression each of its failures
    (``ExceptionType: message``) matches: a failure of another kind is not expected."""

    reason: str
    failure: str

    def explains(self, failure: str) -> bool:
        return re.search(self.failure, failure) is not None


#: 21.5 tests that expect what afkak changed on purpose (and fail on Apache Kafka
#: for it), with the failure; a broker's deviations add ``Quirks.afkak21_failures()``.
#: Empty: every 21.5 integration test passes on Apache Kafka.
CHANGED_SINCE_21: dict[str, Expected] = {}


def expected_failures(quirks: Quirks) -> dict[str, Expected]:
    """{21.5 test method: why it fails} on a broker with ``quirks``."""
    failures = dict(CHANGED_SINCE_21)
    for test, (reason, failure) in quirks.afkak21_failures().items():
        changed = failures.get(test)
        failures[test] = (
            Expected(reason, failure)
            if changed is None
            else Expected(f"{changed.reason}; {reason}", f"{changed.failure}|{failure}")
        )
    return failures


@attrs.frozen
class Node:
    """One of 21.5's ``KafkaHarness.brokers``: ``stop()`` (keeping its data), ``restart()``."""

    stop: Callable[[], None]
    restart: Callable[[], None]


class Target(Protocol):
    """A broker (or cluster) 21.5's tests run against."""

    @property
    def bootstrap(self) -> str: ...

    #: Its brokers by node id (0 for a lone broker, as 21.5 numbered them); empty
    #: when they cannot be restarted from here.
    @property
    def nodes(self) -> Mapping[int, Node]: ...

    def create_topic(
        self, topic: str, partitions: int, max_message_bytes: int, exist_ok: bool = False
    ) -> None: ...


class KafkaHarness:
    """21.5's ``KafkaHarness`` API (``start``, ``brokers``, ``bootstrap_hosts``, ``halt``)."""

    #: The broker the tests run on, and the cluster for NEEDS_A_CLUSTER (None: they skip).
    target: ClassVar[Target]
    cluster: ClassVar[Target | None] = None

    @classmethod
    def start(
        cls,
        replicas: int,
        partitions: int = 8,
        message_max_bytes: int = 1000000,
        **_ignored: Any,
    ) -> KafkaHarness:
        """Prepare the calling test's topic on the broker (21.5: start a cluster).

        21.5's ``IntegrationMixin.setUp`` calls this, then names its topic unless the
        class did: the harness names it first, so that it can create it.
        """
        test = sys._getframe(1).f_locals["self"]
        method = test.id().rsplit(".", 1)[-1]
        target: Target | None = cls.target
        if method in NEEDS_A_CLUSTER:
            target = cls.cluster
            if target is None:
                test.skipTest("kills brokers of a 3-broker cluster: none was started")
        assert target is not None
        if method in RESTART_BROKERS and not target.nodes:
            test.skipTest("restarts its broker: this one was started outside the run")
        test.topic = f"{test.topic or method}-{uuid.uuid4().hex[:10]}"
        target.create_topic(test.topic, partitions, message_max_bytes)
        if method in OWN_TOPICS:
            target.create_topic(OWN_TOPICS[method], partitions, message_max_bytes, exist_ok=True)
        return cls(target)

    def __init__(self, served: Target) -> None:
        self.served = served
        self.brokers = served.nodes

    @property
    def bootstrap_hosts(self) -> list[str]:
        return self.served.bootstrap.split(",")

    def halt(self) -> None:
        """21.5's harness stopped its cluster after each test: the broker outlives them."""


def install(tests_dir: str) -> type[KafkaHarness]:
    """Make 21.5's tests in ``tests_dir`` (its ``afkak/test``) importable; the harness
    class they will use (set its ``target``, and ``cluster``, before running them).

    ``afkak.test.int`` and ``afkak.test.testutil`` are then 21.5's; the harness module
    is this one's ``KafkaHarness``.
    """
    if tests_dir not in afkak.test.__path__:
        afkak.test.__path__.append(tests_dir)
    harness = type("KafkaHarness", (KafkaHarness,), {})
    fixtures = types.ModuleType(FIXTURES_MODULE, __doc__)
    fixtures.__dict__["KafkaHarness"] = harness
    sys.modules[FIXTURES_MODULE] = fixtures
    return harness
