"""Coalesce concurrent metadata loads into as few Metadata requests as possible.

At most one load is in flight.  A request for topics that the in-flight load
already covers waits for it; any other request joins the *next* load, which
starts when the current one finishes and asks for the union of everything
requested meanwhile.  So a burst of lookups for many partitions costs one or
two Metadata requests, not one each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

ALL = None
"""Topic selector meaning "every topic in the cluster"."""

TopicSet = frozenset[str] | None


class SharedResult:
    """One outcome awaited by many: each waiter gets its own cancellable Deferred.

    Cancelling a waiter only stops that waiter from waiting.
    """

    def __init__(self) -> None:
        self.waiters: list[Deferred[Any]] = []

    def wait(self) -> Deferred[Any]:
        def cancel(d: Deferred[Any]) -> None:
            self.waiters.remove(d)

        d: Deferred[Any] = Deferred(cancel)
        self.waiters.append(d)
        return d

    def settle(self, result: Any) -> None:
        """Fire every waiter with *result* (a value or a Failure)."""
        waiters, self.waiters = self.waiters, []
        for d in waiters:
            if isinstance(result, Failure):
                d.errback(result)
            else:
                d.callback(result)


class _Load(SharedResult):
    def __init__(self) -> None:
        super().__init__()
        self.topics: set[str] | None = set()

    def add(self, topics: TopicSet) -> None:
        if topics is None or self.topics is None:
            self.topics = None
        else:
            self.topics |= topics

    def covers(self, topics: TopicSet) -> bool:
        return self.topics is None or (topics is not None and topics <= self.topics)


class MetadataCoalescer:
    """Run ``fetch(topics)`` (``topics`` a tuple, or ``None`` for all) one at a time."""

    def __init__(self, fetch: Callable[[tuple[str, ...] | None], Deferred[Any]]) -> None:
        self._fetch = fetch
        self._current: _Load | None = None
        self._next: _Load | None = None

    @property
    def loading(self) -> bool:
        """Whether a load is under way."""
        return self._current is not None

    def load(self, topics: Iterable[str] | None) -> Deferred[None]:
        """A Deferred that fires once a load covering *topics* has completed."""
        wanted: TopicSet = None if topics is None else frozenset(topics)
        if self._current is not None and self._current.covers(wanted):
            return self._current.wait()
        if self._next is None:
            self._next = _Load()
        self._next.add(wanted)
        d = self._next.wait()
        if self._current is None:
            self._start()
        return d

    def _start(self) -> None:
        load, self._next = self._next, None
        if load is None:
            return
        self._current = load
        selector = None if load.topics is None else tuple(sorted(load.topics))
        self._fetch(selector).addBoth(self._finished, load)

    def _finished(self, result: Any, load: _Load) -> None:
        self._current = None
        load.settle(result if isinstance(result, Failure) else None)
        self._start()
