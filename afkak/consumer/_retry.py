"""Retrying the consumer's requests with the documented backoff.

Each request (fetch, offset lookup, commit) is attempted until it succeeds, a
non-retriable error occurs, or ``request_retry_max_attempts`` attempts have
failed.  The wait before the first retry is ``request_retry_init_delay``; each
further failure multiplies it by :data:`REQUEST_RETRY_FACTOR`, up to
``request_retry_max_delay``.  A success starts the next request afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.logger import Logger

from afkak.common import FailedPayloadsError, KafkaUnavailableError

log = Logger()

T = TypeVar("T")

#: Factor by which the delay between retries grows after each failure.
REQUEST_RETRY_FACTOR = 1.20205


def is_retriable(error: BaseException) -> bool:
    """Whether repeating the request that raised *error* may succeed.

    Kafka's own classification (the ``retriable`` attribute) decides, with two
    additions: no broker answering a metadata lookup (the cluster may come
    back) and a fan-out whose failed payloads all failed retriably.
    """
    if isinstance(error, FailedPayloadsError):
        failed = error.failed_payloads
        return bool(failed) and all(is_retriable(f.value) for _, f in failed)
    return isinstance(error, KafkaUnavailableError) or bool(getattr(error, "retriable", False))


@attrs.frozen
class RetryPolicy:
    """How often, and how patiently, a failed request is attempted again."""

    init_delay: float
    max_delay: float
    #: 0: retry forever.
    max_attempts: int

    def next_delay(self, delay: float) -> float:
        return min(delay * REQUEST_RETRY_FACTOR, self.max_delay)

    async def run(
        self,
        reactor: Any,
        attempt: Callable[[], Deferred[T]],
        on_retry: Callable[[BaseException], None] | None = None,
        what: str = "request",
    ) -> T:
        """The result of the first successful ``attempt()``, retrying retriable errors.

        *on_retry* is told of each error that will be retried (e.g. to forget
        stale metadata).  The last error is raised once attempts run out.
        """
        delay = self.init_delay
        attempts = 0
        while True:
            attempts += 1
            try:
                return await attempt()
            except Exception as e:
                if not is_retriable(e) or attempts == self.max_attempts:
                    raise
                if on_retry is not None:
                    on_retry(e)
                log.info(
                    "{what} failed (attempt {n}), retrying in {delay:.3f} s: {error!r}",
                    what=what,
                    n=attempts,
                    delay=delay,
                    error=e,
                )
            await deferLater(reactor, delay)
            delay = self.next_delay(delay)
