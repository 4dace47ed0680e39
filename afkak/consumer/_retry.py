"""Retrying the consumer's requests with the documented backoff.

Each request (fetch, offset lookup, commit) is attempted until it succeeds, a
non-retriable error occurs, or ``request_retry_max_attempts`` attempts have
failed.  The wait before the first retry is ``request_retry_init_delay``; each
further failure multiplies it by :data:`REQUEST_RETRY_FACTOR`, up to
``request_retry_max_delay``.  A success starts the next request afresh.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import attrs

from afkak._retry import RETRY_BACKOFF_MAX_MS, RetryPolicy, backoff_policy, retrying

T = TypeVar("T")

#: Factor by which the delay between retries grows after each failure.
REQUEST_RETRY_FACTOR = 1.20205


@attrs.frozen
class RequestRetries:
    """How often, and how patiently, a failed request is attempted again."""

    init_delay: float
    max_delay: float
    #: 0: retry forever.
    max_attempts: int

    def for_leader(self) -> RequestRetries:
        """These retries for a request to a partition's leader, at most Java's
        ``retry.backoff.max.ms`` (1 s) apart (or ``init_delay``, if longer).

        Each retry looks the leader up again (a failure made the client forget it),
        so the wait is how soon a new leader is found: grown without this bound
        through a dead leader's outage (0.1 s, 1.2-fold per failure), it kept a
        consumer waiting 38 s after a 2-minute outage ended.  Java's consumer
        retries a failed fetch once its metadata is refreshed, the refresh paced
        by ``retry.backoff.ms`` to ``retry.backoff.max.ms``.
        """
        bound = max(self.init_delay, RETRY_BACKOFF_MAX_MS / 1000)
        return attrs.evolve(self, max_delay=min(self.max_delay, bound))

    def run(
        self,
        reactor: Any,
        attempt: Callable[[], Awaitable[T]],
        on_retry: Callable[[BaseException], None] | None = None,
        what: str = "request",
        first: Awaitable[T] | None = None,
    ) -> Coroutine[Any, Any, T]:
        """The result of the first successful ``attempt()``, retrying retriable errors.

        *on_retry* is told of each error that will be retried (e.g. to forget
        stale metadata).  The last error is raised once attempts run out.
        The delays are afkak's documented ones, without jitter.  *first* is
        the outcome of a first attempt already under way.
        """
        return retrying(
            reactor,
            attempt,
            _policy(self.init_delay, self.max_delay),
            max_attempts=self.max_attempts,
            on_retry=on_retry,
            what=what,
            first=first,
        )


@functools.lru_cache(maxsize=16)
def _policy(init_delay: float, max_delay: float) -> RetryPolicy:
    """The backoff between *init_delay* and *max_delay*: one function for all the
    requests retried with them (each partition's every fetch goes through it; built
    per fetch, it was seven more objects a fetch for the cyclic GC)."""
    return backoff_policy(init_delay, max_delay, factor=REQUEST_RETRY_FACTOR, jitter=0.0)
