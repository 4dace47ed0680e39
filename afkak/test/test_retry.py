"""Tests for afkak._retry: the one retry policy (retriable errors, backoff, the loop)."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak._retry import (
    backoff_policy,
    is_retriable,
    reconnect_backoff,
    retry_backoff,
    retrying,
)
from afkak.common import (
    BrokerConnectionError,
    FailedPayloadsError,
    KafkaUnavailableError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailed,
    UnknownTopicOrPartitionError,
)


def _left(left: list[str]) -> str | None:
    return f"{len(left)} left" if left else None


class RetriableTests(SynchronousTestCase):
    def test_the_error_class_decides(self) -> None:
        self.assertTrue(is_retriable(NotLeaderForPartitionError()))
        self.assertTrue(is_retriable(BrokerConnectionError("lost")))
        self.assertTrue(is_retriable(KafkaUnavailableError()))
        self.assertFalse(is_retriable(TopicAuthorizationFailed()))
        self.assertFalse(is_retriable(ValueError()))

    def test_fan_out_is_retriable_when_every_payload_is(self) -> None:
        from twisted.python.failure import Failure

        retriable = Failure(NotLeaderForPartitionError())
        fatal = Failure(TopicAuthorizationFailed())
        self.assertTrue(is_retriable(FailedPayloadsError([], [(None, retriable)])))
        self.assertFalse(is_retriable(FailedPayloadsError([], [(None, retriable), (None, fatal)])))
        self.assertFalse(is_retriable(FailedPayloadsError([], [])))
        self.assertTrue(is_retriable(UnknownTopicOrPartitionError()))


class BackoffTests(SynchronousTestCase):
    def test_doubles_to_the_cap_without_jitter(self) -> None:
        policy = backoff_policy(0.1, 1.0, jitter=0.0)
        self.assertEqual([round(policy(n), 6) for n in range(1, 7)], [0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
        self.assertEqual(policy(10**6), 1.0)

    def test_jitter_is_twenty_percent_either_way(self) -> None:
        seen: list[tuple[float, float]] = []

        def uniform(low: float, high: float) -> float:
            seen.append((low, high))
            return high

        policy = backoff_policy(0.1, 1.0, uniform=uniform)
        self.assertAlmostEqual(policy(1), 0.12)
        self.assertAlmostEqual(policy(9), 1.2)
        self.assertEqual(seen, [(0.8, 1.2)] * 2)

    def test_kafka_defaults(self) -> None:
        for policy, first, cap in ((retry_backoff(), 0.1, 1.0), (reconnect_backoff(), 0.05, 1.0)):
            for _ in range(50):
                self.assertTrue(0.8 * first <= policy(1) <= 1.2 * first)
                self.assertTrue(0.8 * cap <= policy(30) <= 1.2 * cap)

    def test_bad_arguments(self) -> None:
        for args in ((1.0, 0.5), (-1.0, 1.0)):
            self.assertRaises(ValueError, backoff_policy, *args)
        self.assertRaises(ValueError, backoff_policy, 0.1, 1.0, factor=0.5)
        self.assertRaises(ValueError, backoff_policy, 0.1, 1.0, jitter=1.0)


class RetryingTests(SynchronousTestCase):
    def run_loop(
        self, outcomes: list[Any], **kwargs: Any
    ) -> tuple[Deferred[Any], Clock, list[float]]:
        clock = Clock()
        calls: list[float] = []

        def attempt() -> Deferred[Any]:
            calls.append(clock.seconds())
            outcome = outcomes.pop(0)
            return fail(outcome) if isinstance(outcome, Exception) else succeed(outcome)

        kwargs.setdefault("policy", backoff_policy(1.0, 4.0, jitter=0.0))
        d = Deferred.fromCoroutine(retrying(clock, attempt, **kwargs))
        for _ in range(100):
            clock.advance(0.5)
        return d, clock, calls

    def test_retries_retriable_errors_with_the_policy(self) -> None:
        d, _, calls = self.run_loop(
            [NotLeaderForPartitionError(), BrokerConnectionError("x"), "ok"]
        )
        self.assertEqual(self.successResultOf(d), "ok")
        self.assertEqual(calls, [0.0, 1.0, 3.0])

    def test_other_errors_end_it(self) -> None:
        d, _, calls = self.run_loop([TopicAuthorizationFailed(), "ok"])
        self.failureResultOf(d, TopicAuthorizationFailed)
        self.assertEqual(calls, [0.0])

    def test_max_attempts_and_deadline(self) -> None:
        d, _, calls = self.run_loop([NotLeaderForPartitionError()] * 5, max_attempts=3)
        self.failureResultOf(d, NotLeaderForPartitionError)
        self.assertEqual(len(calls), 3)
        d, _, calls = self.run_loop([NotLeaderForPartitionError()] * 5, deadline=5.0)
        self.failureResultOf(d, NotLeaderForPartitionError)
        self.assertEqual(calls, [0.0, 1.0, 3.0])  # waiting 4 s more would pass the deadline

    def test_on_retry_and_cancel(self) -> None:
        told: list[BaseException] = []
        clock = Clock()
        d = Deferred.fromCoroutine(
            retrying(
                clock,
                lambda: fail(NotLeaderForPartitionError()),
                backoff_policy(1.0, 1.0, jitter=0.0),
                on_retry=told.append,
            )
        )
        self.assertEqual(len(told), 1)
        d.cancel()
        self.failureResultOf(d)
        self.assertEqual(clock.getDelayedCalls(), [])

    def test_a_result_may_ask_for_another_attempt(self) -> None:
        """*again* turns a partial result into a retry; the last one is returned."""
        told: list[Any] = []
        d, _, calls = self.run_loop([["a", "b"], ["b"], []], again=_left, on_retry=told.append)
        self.assertEqual(self.successResultOf(d), [])
        self.assertEqual(calls, [0.0, 1.0, 3.0])
        self.assertEqual(told, [["a", "b"], ["b"]])
        d, _, calls = self.run_loop([["a"]] * 5, again=_left, max_attempts=2)
        self.assertEqual(self.successResultOf(d), ["a"])
        self.assertEqual(calls, [0.0, 1.0])
        d, _, calls = self.run_loop([["a"]] * 5, again=_left, deadline=2.0)
        self.assertEqual(self.successResultOf(d), ["a"])
        self.assertEqual(calls, [0.0, 1.0])

    def test_errors_and_results_share_the_count(self) -> None:
        outcomes = [["a"], NotLeaderForPartitionError(), ["a"], []]
        d, _, calls = self.run_loop(outcomes, again=_left)
        self.assertEqual(self.successResultOf(d), [])
        self.assertEqual(calls, [0.0, 1.0, 3.0, 7.0])

    def test_a_first_attempt_under_way_counts_as_the_first(self) -> None:
        """*first* (a caller's own first attempt) is waited for instead of calling
        ``attempt()``, and its error counts: the backoff goes on from there."""
        d, _, calls = self.run_loop(
            [BrokerConnectionError("x"), "ok"], first=fail(NotLeaderForPartitionError())
        )
        self.assertEqual(self.successResultOf(d), "ok")
        self.assertEqual(calls, [1.0, 3.0])
        d, _, calls = self.run_loop(["ok"], first=succeed("first"))
        self.assertEqual(self.successResultOf(d), "first")
        self.assertEqual(calls, [])
        d, _, calls = self.run_loop(
            [NotLeaderForPartitionError()], first=fail(NotLeaderForPartitionError()), max_attempts=2
        )
        self.failureResultOf(d, NotLeaderForPartitionError)
        self.assertEqual(calls, [1.0])
