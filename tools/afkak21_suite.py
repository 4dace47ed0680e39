"""Run afkak 21.5's own integration tests with this tree's afkak against a real broker.

The tests come from 21.5's PyPI sdist (``afkak==21.5.0.post0``), downloaded once with
pip into a cache; they run unchanged with trial, 21.5's runner.  Only their harness
(``afkak.test.int.fixtures``, which started ZooKeeper and Kafka 0.9-2.x) is replaced,
by ``afkak.test.brokers.afkak21``: it serves the broker started here.

Usage (from the tree root):

    python tools/afkak21_suite.py --broker kafka|tansu|noida
    python tools/afkak21_suite.py --bootstrap 127.0.0.1:9092     # a broker you started
    python tools/afkak21_suite.py --bootstrap 127.0.0.1:9092 --quirks noida
    python tools/afkak21_suite.py --broker tansu -k test_producer_integration

``--broker kafka`` starts one Apache Kafka node (``afkak.testing.apache_kafka``, through
``afkak.test.brokers.kafka``; Java 17 and Maven needed).  Prints each test's outcome
and a summary.  A failure a documented change from 21.5 or a quirk of the broker
explains (``afkak.test.brokers.afkak21.CHANGED_SINCE_21``,
``afkak.test.brokers.quirks.AFKAK21_TESTS``) is listed as expected with its reason;
the exit status is 1 if any other failed, 2 if the sdist cannot be downloaded.
docs/changes-from-afkak-21.rst has the results.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import time
import unittest
from collections.abc import Iterator, Mapping
from typing import Any

_TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_TOOLS)]

import attrs  # noqa: E402
from twisted.trial import reporter, runner  # noqa: E402

from afkak.test.brokers import BROKERS, Broker, admin_create_topic  # noqa: E402
from afkak.test.brokers.afkak21 import (  # noqa: E402
    CHANGED_SINCE_21,
    Expected,
    expected_failures,
    install,
)
from afkak.test.brokers.interop import end_offsets  # noqa: E402
from afkak.test.brokers.quirks import Quirks  # noqa: E402

#: The release whose tests run.
REQUIREMENT = "afkak==21.5.0.post0"
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


#: Apache Kafka, the reference: no quirks.
KAFKA = Quirks(broker="kafka")


class SdistUnavailable(Exception):
    """pip could not download 21.5's sdist (no network, no index)."""


def fetch_tests(cache: str) -> str:
    """21.5's ``afkak/test`` directory, downloaded and extracted into ``cache`` once."""
    tests = os.path.join(cache, SDIST_ROOT, "afkak", "test")
    if os.path.isdir(os.path.join(tests, "int")):
        return tests
    os.makedirs(cache, exist_ok=True)
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        + ["--no-binary", ":all:", "-d", cache, REQUIREMENT],
        capture_output=True,
        text=True,
    )
    sdist = os.path.join(cache, SDIST_ROOT + ".tar.gz")
    if download.returncode != 0 or not os.path.exists(sdist):
        raise SdistUnavailable(download.stderr.strip() or download.stdout.strip())
    prefix = SDIST_ROOT + "/afkak/test/"
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        archive.extractall(cache, members=members, filter="data")
    return tests


@attrs.define
class StartedBroker:
    """A broker this run started (``--broker``): restartable for test_broker_restart."""

    broker: Broker

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def create_topic(self, topic: str, partitions: int, max_message_bytes: int) -> None:
        create_topic(self.bootstrap, topic, partitions, max_message_bytes)

    def stop_keeping_data(self) -> None:
        self.broker.kill()

    def restart(self) -> None:
        self.broker.restart()


@attrs.define
class ExternalBroker:
    """A broker started outside the run (``--bootstrap``): never stopped from here."""

    bootstrap: str
    stop_keeping_data = None
    restart = None

    def create_topic(self, topic: str, partitions: int, max_message_bytes: int) -> None:
        create_topic(self.bootstrap, topic, partitions, max_message_bytes)


def create_topic(bootstrap: str, topic: str, partitions: int, max_message_bytes: int) -> None:
    """Create the topic as 21.5's fresh cluster had it: led and answering on every partition.

    Kafka's Metadata names a new partition's leader a moment before that broker leads
    it (ListOffsets then answers NOT_LEADER_OR_FOLLOWER); 21.5's tests ask at once.
    """
    config: Mapping[str, str] = {}
    if max_message_bytes > _KAFKA_MAX_MESSAGE_BYTES:
        config = {"max.message.bytes": str(max_message_bytes)}
    admin_create_topic(bootstrap, topic, partitions, timeout=30.0, config=config)
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


def run_suite(
    tests_dir: str, target: StartedBroker | ExternalBroker, quirks: Quirks, selection: list[str]
) -> int:
    """Run the selected 21.5 tests with trial and print the summary; the exit status is
    0 when every failure is an expected one (a documented change or a broker quirk)."""
    install(tests_dir, target)
    os.environ["KAFKA_VERSION"] = "afkak21-suite"  # 21.5 skips every test without it
    loaded = runner.TestLoader().loadByNames([f"afkak.test.int.{m}" for m in MODULES])
    selected = [t for t in _tests(loaded) if not selection or any(k in t.id() for k in selection)]
    work = os.path.join(os.path.dirname(os.path.dirname(tests_dir)), "_trial_temp")
    trial = runner.TrialRunner(reporter.VerboseTextReporter, workingDirectory=work)
    result = trial.run(unittest.TestSuite(selected))
    expected = expected_failures(quirks)
    failures: dict[str, list[str]] = {}
    for test, failure in result.failures + result.errors:
        failures.setdefault(test.id(), []).append(_text(failure))
    explained = {
        name: expected[_method(name)].reason
        for name, texts in failures.items()
        if _method(name) in expected and _explained(expected[_method(name)], texts)
    }
    unexplained = sorted(set(failures) - set(explained))
    skips = {t.id(): reason for t, reason in result.skips}
    # A broker quirk may break a test only now and then; a change from 21.5 always.
    passing = sorted(
        t.id()
        for t in selected
        if _method(t.id()) in CHANGED_SINCE_21 and t.id() not in failures and t.id() not in skips
    )
    skipped = sorted(f"{name}: {reason}" for name, reason in skips.items())
    print(
        f"\nafkak 21.5 integration suite on {target.bootstrap} ({quirks.broker}): "
        f"{len(selected)} tests, {result.successes} passed, {len(failures)} failed "
        f"({len(explained)} expected), {len(result.skips)} skipped"
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
        return run_suite(tests_dir, ExternalBroker(args.bootstrap), quirks, args.k)
    with BROKERS[args.broker]() as broker:
        return run_suite(tests_dir, StartedBroker(broker), broker.quirks, args.k)


if __name__ == "__main__":
    sys.exit(main())
