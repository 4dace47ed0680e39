"""What many test modules share: driving the global reactor, and a Clock that ends empty.

The real-broker tests run Twisted's global reactor a step at a time
(``reactor.iterate()``) until a Deferred fires or a condition holds: trial's
synchronous test cases and pytest both allow that, and a hung broker ends
the test at its timeout instead of hanging the run.  The Clock tests use
:class:`ClockTestCase`, which fails a test that leaves a timer behind.
"""

from __future__ import annotations

import importlib
import os
import random
import sys
import time
import unittest
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType, ModuleType
from typing import Any

from hypothesis import strategies as st
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient


def pump(until: Callable[[], bool], timeout: float, what: str, step: float = 0.01) -> float:
    """Run the global reactor until ``until()``; the seconds it took.

    :raises AssertionError: when *timeout* seconds pass first, or when the global
        reactor already runs in a thread (``afkak.spark._bridge`` starts one): two
        threads would iterate it at once and corrupt its file descriptors (run such
        code in a child process).
    """
    from twisted.internet import reactor

    if reactor.running:  # type: ignore[attr-defined]
        raise AssertionError(f"{what}: not waited for, the global reactor already runs in a thread")
    start = time.monotonic()
    while not until():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        reactor.iterate(step)  # type: ignore[attr-defined]
    return time.monotonic() - start


def run_for(seconds: float) -> None:
    """Run the global reactor for *seconds* (to see that nothing happens meanwhile)."""
    deadline = time.monotonic() + seconds
    pump(lambda: time.monotonic() >= deadline, seconds + 1.0, "run_for", step=0.05)


def wait(d: Deferred[Any], timeout: float = 15.0) -> Any:
    """Run the global reactor until *d* fires; its result, or raise its failure.

    *d* is cancelled if it does not fire within *timeout* seconds.
    """
    results: list[Any] = []
    d.addBoth(results.append)
    try:
        pump(lambda: bool(results), timeout, f"{d!r} did not fire")
    except AssertionError:
        d.cancel()
        raise
    result = results[0]
    if isinstance(result, Failure):
        result.raiseException()
    return result


def _fake_brokers(call: Any) -> bool:
    """Whether a DelayedCall is the fake cluster's (a broker outlives its clients)."""
    owner = getattr(call.func, "__self__", None)
    module = type(owner).__module__ if owner is not None else call.func.__module__
    return str(module).startswith("afkak.testing")


class ClockTestCase(SynchronousTestCase):
    """A test on ``self.clock`` that must leave no DelayedCall once its cleanups ran.

    A timer left behind is work a closed object would still do: a retry, a
    reconnect, a heartbeat.  The check runs after every other cleanup (it is
    registered first), so closing what the test made is the test's cleanup.
    The fake cluster's own timers (a transaction's expiry, say) may stay.
    """

    def setUp(self) -> None:
        super().setUp()
        self.clock = Clock()
        #: The clients' random source (their jitter), seeded as ``self.clock`` is a Clock.
        self.rng = self.random_source()
        self.addCleanup(self.assertNoDelayedCalls)

    def random_source(self) -> random.Random:
        """The clients' random source: seeded from the :mod:`random` module, which
        conftest seeds for each test (a test may pick its draws)."""
        return random.Random(random.getrandbits(64))

    def assertNoDelayedCalls(self) -> None:  # noqa: N802 -- unittest's naming
        left = [c for c in self.clock.getDelayedCalls() if c.active() and not _fake_brokers(c)]
        self.assertEqual(left, [], "DelayedCalls left after the test's cleanups")

    def client_of(self, cluster: Any, client_id: str, **options: Any) -> KafkaClient:
        """A KafkaClient of the fake *cluster* on ``self.clock``, closed at the end."""
        client = KafkaClient(
            cluster.bootstrap_hosts,
            clientId=client_id,
            reactor=self.clock,
            endpoint_factory=cluster.endpoint_factory,
            rng=self.rng,
            **options,
        )
        self.addCleanup(client.close)
        return client


#: Hypothesis's profile (conftest loads it): "ci" (under CI=true, or HYPOTHESIS_PROFILE=ci)
#: gives each property test its full number of examples; "quick", the default, a tenth, so
#: the Clock suite stays quick on a developer's machine.
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") == "true" else "quick"
)
FULL_PROPERTY_RUNS = HYPOTHESIS_PROFILE == "ci"


#: The characters UTF-8 encodes (every code point but the surrogates), as hypothesis's
#: ``text()`` and ``from_regex()`` draw by default; named by category, not by codec:
#: hypothesis builds a codec's table on a fresh checkout, seconds of the Clock suite.
UTF8_CHARACTERS = st.characters(exclude_categories=("Cs",))


def property_examples(full: int) -> int:
    """*full* examples under the "ci" profile; a tenth of them under "quick" (at least 5,
    never more than *full*)."""
    return full if FULL_PROPERTY_RUNS else max(min(full, 5), full // 10)


def optional_module(name: str) -> ModuleType | None:
    """*name* imported, or None where it is not installed (an optional extra).

    ``pytest.importorskip`` for trial too: decorate what needs it with
    ``unittest.skipUnless(module, ...)``, which both runners honour.
    """
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def needs_codecs(*codecs: int) -> Callable[[Any], Any]:
    """Skip a test (or class) unless afkak can compress with every one of *codecs*."""
    from afkak import codec

    has = {
        codec.CODEC_SNAPPY: codec.has_snappy(),
        codec.CODEC_LZ4: codec.has_lz4(),
        codec.CODEC_ZSTD: codec.has_zstd(),
    }
    missing = [c for c in codecs if not has.get(c, True)]
    return unittest.skipIf(missing, f"optional codecs {missing} are not installed")


def run_reactor_threads(case: Any) -> None:
    """Start a thread pool for the global reactor until *case* ends.

    ``reactor.run()`` starts the reactor's pool; these tests iterate the reactor
    instead (:func:`pump`), so code that runs blocking calls in
    ``reactor.getThreadPool()`` (GSSAPI's) would wait forever without this.
    """
    from twisted.internet import reactor
    from twisted.python.threadpool import ThreadPool

    pool = ThreadPool(1, 4, "afkak-test")
    pool.start()
    reactor.threadpool = pool  # type: ignore[attr-defined]

    def stop() -> None:
        reactor.threadpool = None  # type: ignore[attr-defined]
        pool.stop()

    case.addCleanup(stop)


@contextmanager
def calls_to(code: CodeType) -> Iterator[list[None]]:
    """Counts the calls of the Python function whose code is *code* meanwhile."""
    calls: list[None] = []
    previous = sys.getprofile()

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls.append(None)

    sys.setprofile(count)
    try:
        yield calls
    finally:
        sys.setprofile(previous)
