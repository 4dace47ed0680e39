"""One retry policy for every layer: what is retriable, how long to wait, and the loop.

Kafka's Java client is the model.  An error is retriable when its class says
so (``retriable``, from Kafka's error table for broker errors); waits grow
exponentially from an initial delay to a cap, each one jittered by ±20 %, so
that clients failing together do not retry together.  Kafka's defaults are
here under their Java names; each layer states its own policy with them.
:func:`backoff_policy` has the shape of Twisted's
:func:`~twisted.application.internet.backoffPolicy`, a function of the
number of consecutive failures, and is accepted wherever afkak takes a
``retry_policy``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from twisted.logger import Logger

from afkak._errors import FailedPayloadsError

log = Logger()

T = TypeVar("T")

#: ``retry.backoff.ms``: the wait before the first retry of a failed request.
RETRY_BACKOFF_MS = 100
#: ``retry.backoff.max.ms``: the longest wait between retries.
RETRY_BACKOFF_MAX_MS = 1000
#: ``reconnect.backoff.ms``: the wait before reconnecting to a broker.
RECONNECT_BACKOFF_MS = 50
#: ``reconnect.backoff.max.ms``: the longest wait before reconnecting.
RECONNECT_BACKOFF_MAX_MS = 1000
#: ``delivery.timeout.ms``: how long the producer tries to deliver a record.
DELIVERY_TIMEOUT_MS = 120_000
#: Kafka's backoff jitter: each wait is multiplied by a factor within 1 ± this.
JITTER = 0.2

RetryPolicy = Callable[[int], float]
"""Seconds to wait after ``failures`` (1, 2, ...) consecutive failures."""


def is_retriable(error: BaseException) -> bool:
    """Whether repeating the operation that raised *error* may succeed.

    The error class's ``retriable`` flag decides; a fan-out
    (:class:`~afkak.common.FailedPayloadsError`) is retriable when every
    payload failed retriably.
    """
    if isinstance(error, FailedPayloadsError):
        failed = error.failed_payloads
        return bool(failed) and all(is_retriable(f.value) for _, f in failed)
    return bool(getattr(error, "retriable", False))


def backoff_policy(
    initial: float,
    maximum: float,
    factor: float = 2.0,
    jitter: float = JITTER,
    uniform: Callable[[float, float], float] = random.uniform,
) -> RetryPolicy:
    """Exponential backoff from *initial* to *maximum* seconds, jittered by ``1 ± jitter``.

    :param uniform: ``(low, high) -> float``, injectable for tests.
    """
    if not 0 <= initial <= maximum:
        raise ValueError(f"backoff needs 0 <= initial <= maximum, not {initial}, {maximum}")
    if factor < 1 or not 0 <= jitter < 1:
        raise ValueError(f"backoff needs factor >= 1 and 0 <= jitter < 1, not {factor}, {jitter}")

    def policy(failures: int) -> float:
        delay = initial
        for _ in range(min(failures - 1, 64)):
            delay *= factor
            if delay >= maximum:
                break
        delay = min(delay, maximum)
        return delay * uniform(1 - jitter, 1 + jitter) if jitter else delay

    return policy


def retry_backoff(uniform: Callable[[float, float], float] = random.uniform) -> RetryPolicy:
    """Kafka's request retry backoff (``retry.backoff.ms`` / ``retry.backoff.max.ms``)."""
    return backoff_policy(RETRY_BACKOFF_MS / 1000, RETRY_BACKOFF_MAX_MS / 1000, uniform=uniform)


def reconnect_backoff(uniform: Callable[[float, float], float] = random.uniform) -> RetryPolicy:
    """Kafka's reconnect backoff (``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``)."""
    return backoff_policy(
        RECONNECT_BACKOFF_MS / 1000, RECONNECT_BACKOFF_MAX_MS / 1000, uniform=uniform
    )


async def retrying(
    reactor: Any,
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    retriable: Callable[[BaseException], bool] = is_retriable,
    again: Callable[[T], str | None] | None = None,
    max_attempts: int = 0,
    deadline: float | None = None,
    on_retry: Callable[[Any], None] | None = None,
    what: str = "request",
    first: Awaitable[T] | None = None,
) -> T:
    """The result of the first ``attempt()`` that succeeds.

    A retriable error is retried after ``policy(failures)`` seconds of
    *reactor* time, unless *max_attempts* (0: no limit) attempts failed or
    the wait would end after *deadline* (reactor seconds); then, as for an
    error that is not retriable, the error is raised.  *again* makes a result
    count as a failure too (part of a request was refused, say): it says why
    the result needs another attempt, or None when it is final; once
    attempts or time run out, the last result is returned.  *on_retry* is
    told of each error or result that will be retried (to forget stale
    metadata, say).  *first* is the outcome of a first attempt already under
    way (a caller tried without this loop, and goes on here with its error).
    Cancelling the Deferred running this cancels the attempt or the wait.
    """
    failures = 0
    while True:
        error: Exception | None = None
        try:
            result = await (attempt() if first is None else first)
        except Exception as e:
            if not retriable(e):
                raise
            error, why = e, repr(e)
        else:
            why_again = None if again is None else again(result)
            if why_again is None:
                return result
            why = why_again
        failures += 1
        first = None
        delay = None if failures == max_attempts else policy(failures)
        if delay is None or (deadline is not None and reactor.seconds() + delay > deadline):
            if error is not None:
                raise error
            return result
        if on_retry is not None:
            on_retry(result if error is None else error)
        log.info(
            "{what} failed (attempt {n}), retrying in {delay:.3f} s: {why}",
            what=what,
            n=failures,
            delay=delay,
            why=why,
        )
        # Imported here: the reactor's modules are a third of what importing this costs,
        # and a process that only parses options (a Spark planner) never waits.
        from twisted.internet.task import deferLater

        await deferLater(reactor, delay)
