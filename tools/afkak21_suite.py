"""Run afkak 21.5's own integration tests with this tree's afkak against a real broker.

The tests come from 21.5's PyPI sdist (``afkak==21.5.0.post0``, its sha256 pinned),
downloaded once with pip into a cache; they run unchanged with trial, 21.5's runner.
Only their harness (``afkak.test.int.fixtures``, which started ZooKeeper and Kafka
0.9-2.x) is replaced, by ``afkak.test.brokers.afkak21``: it serves the broker started
here.

Usage (from the tree root):

    python tools/afkak21_suite.py --broker kafka|tansu|noida
    python tools/afkak21_suite.py --bootstrap 127.0.0.1:9092     # a broker you started
    python tools/afkak21_suite.py --bootstrap 127.0.0.1:9092 --quirks noida
    python tools/afkak21_suite.py --broker tansu -k test_producer_integration

``--broker kafka`` starts one Apache Kafka node (``afkak.testing.apache_kafka``, through
``afkak.test.brokers.kafka``; Java 17 and Maven needed), runs the tests on it, stops
it, then starts the 3-node cluster (``kafka-cluster``) for the test that kills
partition leaders (``test_switch_leader``): one broker runs at a time.  Elsewhere that
test skips, as do the broker restarts with ``--bootstrap``.  Prints each test's outcome
and a summary.  A failure a documented change from 21.5 or a quirk of the broker
explains (``afkak.test.brokers.afkak21.CHANGED_SINCE_21``,
``afkak.test.brokers.quirks.AFKAK21_TESTS``) is listed as expected with its reason;
the exit status is 1 if any other failed (or, with ``--all-pass``, if any test did not
pass), 2 if the sdist cannot be downloaded.  docs/changes-from-afkak-21.rst has the
results.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_TOOLS)]

import attrs  # noqa: E402
from twisted.trial import reporter, runner  # noqa: E402

from afkak.test.brokers import BROKERS, Broker, admin_create_topic  # noqa: E402
from afkak.test.brokers.afkak21 import (  # noqa: E402
    CHANGED_SINCE_21,
    NEEDS_A_CLUSTER,
    Expected,
    KafkaHarness,
    Node,
    expected_failures,
    install,
)
from afkak.test.brokers.interop import end_offsets  # noqa: E402
from afkak.test.brokers.quirks import Quirks  # noqa: E402

#: The release whose tests run, and its sdist's sha256 (as PyPI publishes it).
REQUIREMENT = "afkak==21.5.0.post0"
SDIST_SHA256 = "bd30fcf8ebbbd9d4eca59e34e0af7567e57bdae02e4b67095dd2f216116c63c4"
SDIST_ROOT = "afkak-21.5.0.post0"
#: 21.5's integration test modules, in its own order.
MODULES = (
    "test_client_integration",
    "test_consumer_integration",
    "test_failover_integration",
    "test_group_integration",
    "test_performance_integration",
    "test_producer_integration",
)
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "afkak", "afkak21")
#: Below this, 21.5's ``message_max_bytes`` is Kafka's default (1 MiB): no topic config.
_KAFKA_MAX_MESSAGE_BYTES = 1048588
#: The 3-node cluster that serves NEEDS_A_CLUSTER after a ``--broker`` of this kind.
CLUSTERS = {"kafka": "kafka-cluster"}


#: Apache Kafka, the reference: no quirks.
KAFKA = Quirks(broker="kafka")


class SdistUnavailable(Exception):
    """pip could not download 21.5's sdist (no network, no index), or it is not 21.5's."""


def fetch_tests(cache: str) -> str:
    """21.5's ``afkak/test`` directory, from the sdist downloaded and extracted once.

    The sdist is checked against its pinned sha256 (pip checks it too); it is
    extracted into a temporary directory renamed into place, so that an interrupted
    or concurrent run never leaves a half-extracted tree.
    """
    tests = os.path.join(cache, SDIST_ROOT, "afkak", "test")
    if os.path.isfile(os.path.join(tests, "int", "fixtures.py")):
        return tests
    os.makedirs(cache, exist_ok=True)
    sdist = os.path.join(cache, SDIST_ROOT + ".tar.gz")
    if not os.path.exists(sdist) or _sha256(sdist) != SDIST_SHA256:
        _download(cache)
    staging = tempfile.mkdtemp(prefix="extract-", dir=cache)
    try:
        prefix = SDIST_ROOT + "/afkak/test/"
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
            archive.extractall(staging, members=members, filter="data")
        try:
            os.rename(os.path.join(staging, SDIST_ROOT), os.path.join(cache, SDIST_ROOT))
        except OSError:  # another run put it there first (or a stale partial tree)
            if not os.path.isfile(os.path.join(tests, "int", "fixtures.py")):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return tests


def _download(cache: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", dir=cache, delete=False) as pinned:
        pinned.write(f"{REQUIREMENT} --hash=sha256:{SDIST_SHA256}\n")
    try:
        download = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes"]
            + ["--no-binary", ":all:", "-d", cache, "-r", pinned.name],
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(pinned.name)
    sdist = os.path.join(cache, SDIST_ROOT + ".tar.gz")
    if download.returncode != 0 or not os.path.exists(sdist):
        raise SdistUnavailable(download.stderr.strip() or download.stdout.strip())
    if _sha256(sdist) != SDIST_SHA256:
        raise SdistUnavailable(f"{sdist} is not {REQUIREMENT}'s sdist (sha256 differs)")


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@attrs.define
class StartedBroker:
    """A broker this run started (``--broker``): restartable for test_broker_restart."""

    broker: Broker

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    @property
    def nodes(self) -> Mapping[int, Node]:
        restartable = hasattr(self.broker, "kill") and hasattr(self.broker, "restart")
        return {0: Node(self.broker.kill, self.broker.restart)} if restartable else {}

    def create_topic(
        self, topic: str, partitions: int, max_message_bytes: int, exist_ok: bool = False
    ) -> None:
        create_topic(self.bootstrap, topic, partitions, max_message_bytes, exist_ok=exist_ok)


@attrs.define
class StartedCluster:
    """The 3-node cluster this run started: its nodes by node id, kill -9 and restart."""

    cluster: Any  # afkak.test.brokers.kafka.KafkaCluster

    @property
    def bootstrap(self) -> str:
        return str(self.cluster.bootstrap)

    @property
    def nodes(self) -> Mapping[int, Node]:
        timeout = self.cluster.start_timeout
        return {
            node.node_id: Node(node.kill, _starter(node, timeout)) for node in self.cluster.nodes
        }

    def create_topic(
        self, topic: str, partitions: int, max_message_bytes: int, exist_ok: bool = False
    ) -> None:
        create_topic(
            self.bootstrap, topic, partitions, max_message_bytes, replicas=-1, exist_ok=exist_ok
        )


def _starter(node: Any, timeout: float) -> Callable[[], None]:
    return lambda: node.start(timeout)


@attrs.define
class ExternalBroker:
    """A broker started outside the run (``--bootstrap``): never stopped from here."""

    bootstrap: str
    nodes: Mapping[int, Node] = attrs.field(factory=dict)

    def create_topic(
        self, topic: str, partitions: int, max_message_bytes: int, exist_ok: bool = False
    ) -> None:
        create_topic(self.bootstrap, topic, partitions, max_message_bytes, exist_ok=exist_ok)


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    max_message_bytes: int,
    replicas: int = 1,
    exist_ok: bool = False,
) -> None:
    """Create the topic as 21.5's fresh cluster had it: led and answering on every partition.

    Kafka's Metadata names a new partition's leader a moment before that broker leads
    it (ListOffsets then answers NOT_LEADER_OR_FOLLOWER); 21.5's tests ask at once.
    *replicas* -1: the broker's default replication factor.
    """
    config: Mapping[str, str] = {}
    if max_message_bytes > _KAFKA_MAX_MESSAGE_BYTES:
        config = {"max.message.bytes": str(max_message_bytes)}
    try:
        admin_create_topic(
            bootstrap, topic, partitions, timeout=30.0, replication_factor=replicas, config=config
        )
    except Exception as exc:  # confluent_kafka.KafkaException
        if not (exist_ok and "TOPIC_ALREADY_EXISTS" in repr(exc)):
            raise
    deadline = time.monotonic() + 30.0
    while True:
        try:
            end_offsets(bootstrap, topic)
            return
        except Exception:  # confluent_kafka.KafkaException: NOT_LEADER_OR_FOLLOWER
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _tests(suite: Any) -> Iterator[Any]:
    """Every test in ``suite``, and trial's ErrorHolder for a module that did not import."""
    if isinstance(suite, unittest.TestSuite):
        for test in suite:
            yield from _tests(test)
    else:
        yield suite


@attrs.define
class Outcome:
    """What trial reported over one or more runs."""

    successes: int = 0
    failures: list[tuple[Any, Any]] = attrs.field(factory=list)
    skips: list[tuple[Any, str]] = attrs.field(factory=list)

    def add(self, result: Any) -> None:
        self.successes += result.successes
        self.failures += result.failures + result.errors
        self.skips += result.skips


def load_tests(tests_dir: str, selection: list[str]) -> tuple[type[KafkaHarness], list[Any]]:
    """21.5's harness class and the selected tests (``-k``: an id containing the text)."""
    harness = install(tests_dir)
    os.environ["KAFKA_VERSION"] = "afkak21-suite"  # 21.5 skips every test without it
    loaded = runner.TestLoader().loadByNames([f"afkak.test.int.{m}" for m in MODULES])
    selected = [t for t in _tests(loaded) if not selection or any(k in t.id() for k in selection)]
    return harness, selected


def needs_cluster(test: Any) -> bool:
    return _method(test.id()) in NEEDS_A_CLUSTER


def run_tests(tests: list[Any], work: str, outcome: Outcome) -> None:
    if tests:
        trial = runner.TrialRunner(reporter.VerboseTextReporter, workingDirectory=work)
        outcome.add(trial.run(unittest.TestSuite(tests)))


def report(
    bootstrap: str, selected: list[Any], outcome: Outcome, quirks: Quirks, all_pass: bool
) -> int:
    """Print the summary; 0 when every failure is an expected one (a documented change
    or a broker quirk) or, with *all_pass*, when every test passed."""
    expected = expected_failures(quirks)
    failures: dict[str, list[str]] = {}
    for test, failure in outcome.failures:
        failures.setdefault(test.id(), []).append(_text(failure))
    explained = {
        name: expected[_method(name)].reason
        for name, texts in failures.items()
        if _method(name) in expected and _explained(expected[_method(name)], texts)
    }
    unexplained = sorted(set(failures) - set(explained))
    skips = {t.id(): reason for t, reason in outcome.skips}
    # A broker quirk may break a test only now and then; a change from 21.5 always.
    passing = sorted(
        t.id()
        for t in selected
        if _method(t.id()) in CHANGED_SINCE_21 and t.id() not in failures and t.id() not in skips
    )
    skipped = sorted(f"{name}: {reason}" for name, reason in skips.items())
    print(
        f"\nafkak 21.5 integration suite on {bootstrap} ({quirks.broker}): "
        f"{len(selected)} tests, {outcome.successes} passed, {len(failures)} failed "
        f"({len(explained)} expected), {len(outcome.skips)} skipped"
    )
    lines = [
        f"FAIL {name}: {' / '.join(t.splitlines()[0] for t in failures[name])}"
        for name in unexplained
    ]
    lines += [f"EXPECTED {name}: {reason}" for name, reason in sorted(explained.items())]
    lines += [f"PASSES, though listed as failing: {name}" for name in passing]
    lines += [f"SKIP {line}" for line in skipped]
    for line in lines:
        print("  " + line)
    if all_pass:
        return 0 if outcome.successes == len(selected) else 1
    return 1 if unexplained else 0


def _text(failure: Any) -> str:
    """``ExceptionType: message`` of a trial failure (or of its exception)."""
    if isinstance(failure, tuple):  # (type, value, traceback)
        failure = failure[1]
    value = getattr(failure, "value", failure)
    return f"{type(value).__name__}: {value}"


def _explained(expected: Expected, texts: list[str]) -> bool:
    """Every failure matches, but for the unclean reactor a failed 21.5 test leaves."""
    causes = [t for t in texts if not t.startswith("DirtyReactorAggregateError")]
    return bool(causes) and all(expected.explains(t) for t in causes)


def _method(test_id: str) -> str:
    return test_id.rsplit(".", 1)[-1]


def run_on(
    tests_dir: str, selection: list[str], broker: str | None, bootstrap: str | None
) -> tuple[str, list[Any], Outcome]:
    """Run the selection on a broker started here (then on its cluster) or on *bootstrap*."""
    harness, selected = load_tests(tests_dir, selection)
    work = os.path.join(os.path.dirname(os.path.dirname(tests_dir)), "_trial_temp")
    outcome = Outcome()
    single = [t for t in selected if not needs_cluster(t)]
    clustered = [t for t in selected if needs_cluster(t)]
    if broker is None:
        assert bootstrap is not None
        harness.target = ExternalBroker(bootstrap)
        run_tests(selected, work, outcome)
        return bootstrap, selected, outcome
    if single or broker not in CLUSTERS:
        with BROKERS[broker]() as started:
            harness.target = StartedBroker(started)
            bootstrap = started.bootstrap
            run_tests(single if broker in CLUSTERS else selected, work, outcome)
    if clustered and broker in CLUSTERS:
        with BROKERS[CLUSTERS[broker]]() as cluster:
            harness.target = harness.cluster = StartedCluster(cluster)
            bootstrap = bootstrap or cluster.bootstrap
            run_tests(clustered, work, outcome)
    assert bootstrap is not None
    return bootstrap, selected, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--broker", choices=sorted(BROKERS), help="start this broker")
    where.add_argument("--bootstrap", metavar="HOST:PORT", help="a broker already running")
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="where the sdist is kept")
    parser.add_argument(
        "--quirks",
        choices=sorted(BROKERS),
        help="with --bootstrap: the broker's kind, whose quirks explain failures (default: "
        "Apache Kafka, none)",
    )
    parser.add_argument(
        "--all-pass",
        action="store_true",
        help="fail unless every test passes (no expected failure, no skip)",
    )
    parser.add_argument(
        "-k", action="append", default=[], metavar="TEXT", help="only tests whose id has TEXT"
    )
    args = parser.parse_args(argv)
    try:
        tests_dir = fetch_tests(args.cache)
    except SdistUnavailable as exc:
        print(f"cannot download {REQUIREMENT}: {exc}", file=sys.stderr)
        return 2
    if args.bootstrap:
        kind = args.quirks and BROKERS[args.quirks]
        quirks = kind.quirks if kind else KAFKA
    else:
        quirks = BROKERS[args.broker].quirks
    bootstrap, selected, outcome = run_on(tests_dir, args.k, args.broker, args.bootstrap)
    return report(bootstrap, selected, outcome, quirks, args.all_pass)


if __name__ == "__main__":
    sys.exit(main())
