"""afkak 21.5's own integration tests, run with this tree's afkak against a test broker.

21.5's tests (``afkak/test/int/`` in its sdist) start ZooKeeper and a 2015-era Kafka
per test through ``afkak.test.int.fixtures.KafkaHarness``.  ``install`` puts 21.5's test
files beside ours (``afkak.test.int``, ``afkak.test.testutil``) and replaces that one
module with a harness serving a broker started once: 21.5's tests then import ``afkak``,
this tree's library, unchanged.  ``tools/afkak21_suite.py`` is the command.

Each test still gets what 21.5's fresh cluster gave it: a topic of its own, empty,
created with the partition count and ``message_max_bytes`` its class asked for (a
class-level topic name such as ``produce_topic`` gets a unique suffix).
"""

from __future__ import annotations

import re
import sys
import types
import unittest
import uuid
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import attrs

import afkak.test
from afkak.test.brokers.quirks import Quirks

#: The module 21.5's tests import the harness from; replaced by ``install``.
FIXTURES_MODULE = "afkak.test.int.fixtures"

#: 21.5 tests that need what a single broker cannot give, with the reason.
NEEDS_A_CLUSTER = {
    "test_switch_leader": "kills partition leaders of a 3-broker cluster (replicas=3)",
}

_OWN_OFFSET = (
    "a batched send_messages fires with its own first message's offset, 21.5 with the "
    "request's (docs/changes-from-afkak-21.rst, The producer)"
)
_CONSUMERS = (
    "ConsumerGroup.consumers maps TopicAndPartition to a Consumer, 21.5's topic to a "
    "list (docs/changes-from-afkak-21.rst, afkak 21's public names)"
)
_NOT_IN_CONSUMERS = r"FailTest: '[^']+' not in \{TopicAndPartition"


@attrs.frozen
class Expected:
    """Why a 21.5 test fails here, and a regular expression each of its failures
    (``ExceptionType: message``) matches: a failure of another kind is not expected."""

    reason: str
    failure: str

    def explains(self, failure: str) -> bool:
        return re.search(self.failure, failure) is not None


#: 21.5 tests that expect what afkak changed on purpose; a
#: broker's deviations add ``Quirks.afkak21_failures()``.
CHANGED_SINCE_21 = {
    "test_producer_batched_by_messages": Expected(_OWN_OFFSET, r"FailTest: [1-9]\d* != 0$"),
    "test_producer_batched_by_bytes": Expected(_OWN_OFFSET, r"FailTest: [1-9]\d* != 0$"),
    "test_single_consumergroup_join": Expected(_CONSUMERS, _NOT_IN_CONSUMERS),
    "test_broker_restart": Expected(_CONSUMERS, _NOT_IN_CONSUMERS),
    "test_two_consumergroup_join": Expected(_CONSUMERS, _NOT_IN_CONSUMERS),
    # 21.5's wait_for_assignments reads consumers; its Deadline then fails on a typo.
    "test_consumer_rejoin": Expected(
        _CONSUMERS + "; it also stops 21.5's private _heartbeat_looper",
        r"'Deadline' object has no attribute 'elapsed'|_heartbeat_looper",
    ),
}


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


class _Coordinator:
    """21.5's private ``afkak._group.Coordinator``: its two tests skip, its module imports."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise unittest.SkipTest(
            "afkak 21.5's private afkak._group.Coordinator is not kept "
            "(docs/changes-from-afkak-21.rst)"
        )


class Target(Protocol):
    """The broker 21.5's tests run against."""

    @property
    def bootstrap(self) -> str: ...

    def create_topic(self, topic: str, partitions: int, max_message_bytes: int) -> None: ...

    #: Stops the broker keeping its data (None: this broker cannot be restarted).
    stop_keeping_data: Callable[[], None] | None
    restart: Callable[[], None] | None


@attrs.define
class _Node:
    """One of ``KafkaHarness.brokers``: 21.5's ``_KafkaFixture`` stop()/restart()."""

    target: Target

    def stop(self) -> None:
        if self.target.stop_keeping_data is None:
            raise RuntimeError("this broker cannot be restarted")
        self.target.stop_keeping_data()

    def restart(self) -> None:
        if self.target.restart is None:
            raise RuntimeError("this broker cannot be restarted")
        self.target.restart()


class KafkaHarness:
    """21.5's ``KafkaHarness`` API (``start``, ``brokers``, ``bootstrap_hosts``, ``halt``)."""

    target: ClassVar[Target]

    @classmethod
    def start(
        cls,
        replicas: int,
        partitions: int = 8,
        message_max_bytes: int = 1000000,
        **_ignored: Any,
    ) -> KafkaHarness:
        """Prepare the calling test's topic on the shared broker (21.5: start a cluster).

        21.5's ``IntegrationMixin.setUp`` calls this, then names its topic unless the
        class did: the harness names it first, so that it can create it.
        """
        test = sys._getframe(1).f_locals["self"]
        method = test.id().rsplit(".", 1)[-1]
        if method in NEEDS_A_CLUSTER:
            test.skipTest(NEEDS_A_CLUSTER[method])
        if method == "test_broker_restart" and cls.target.restart is None:
            test.skipTest("restarts the broker: this broker was started outside the run")
        test.topic = f"{test.topic or method}-{uuid.uuid4().hex[:10]}"
        cls.target.create_topic(test.topic, partitions, message_max_bytes)
        return cls([_Node(cls.target)])

    def __init__(self, brokers: list[_Node]) -> None:
        self.brokers = brokers

    @property
    def bootstrap_hosts(self) -> list[str]:
        return self.target.bootstrap.split(",")

    def halt(self) -> None:
        """21.5's harness stopped its cluster after each test: the broker outlives them."""


def install(tests_dir: str, target: Target) -> None:
    """Make 21.5's tests in ``tests_dir`` (its ``afkak/test``) importable, served by target.

    ``afkak.test.int`` and ``afkak.test.testutil`` are then 21.5's; the harness module
    is this one's ``KafkaHarness``, bound to ``target``; 21.5's private ``afkak._group``
    (which its group tests import) is a stand-in whose ``Coordinator`` skips its test.
    """
    if tests_dir not in afkak.test.__path__:
        afkak.test.__path__.append(tests_dir)
    harness = type("KafkaHarness", (KafkaHarness,), {"target": target})
    fixtures = types.ModuleType(FIXTURES_MODULE, __doc__)
    fixtures.__dict__["KafkaHarness"] = harness
    sys.modules[FIXTURES_MODULE] = fixtures
    private = types.ModuleType("afkak._group", _Coordinator.__doc__)
    private.__dict__["Coordinator"] = _Coordinator
    sys.modules.setdefault("afkak._group", private)
