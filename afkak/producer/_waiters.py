"""Firing the Deferreds of sends, without work nobody can see.

A send's Deferred waits in its batch untracked by the cyclic GC (see
:mod:`afkak.records.gc_pause`): a producer may hold tens of thousands, and
the collections they would trigger, each scanning them all, cost as much as
sending.  When the batch is acknowledged, only the Deferreds that something
besides the batch refers to, or that have callbacks, are fired (and tracked
again); one the application dropped without adding a callback can never be
seen again, so firing it would be work for nobody (half the cost of a
fire-and-forget send).  Failures are delivered to every Deferred: an
unhandled one is logged when it is collected.

Twisted keeps a Deferred's callbacks in a list attribute, ``_callbacks``
(``callbacks`` in older releases); :data:`CALLBACK_LIST` is the one this
Twisted fills when callbacks are added in each of its ways, or None, and
then every Deferred is fired.  Without the compiled record module
everything is fired and tracked as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet.defer import Deferred

from afkak.records.gc_pause import reachable, track_all, untrack

__all__ = ["CALLBACK_LIST", "fail_all", "to_fire", "untrack"]


def _callback_list() -> str | None:
    """The attribute holding a Deferred's callbacks, checked for each way of adding one."""
    ways: list[Callable[[Deferred[Any]], Any]] = [
        lambda d: d.addCallback(_same),
        lambda d: d.addErrback(_same),
        lambda d: d.addBoth(_same),
        lambda d: d.addCallbacks(_same, _same),
        lambda d: d.chainDeferred(Deferred()),
    ]
    for name in ("_callbacks", "callbacks"):
        found = True
        for add in ways:
            d: Deferred[Any] = Deferred()
            if getattr(d, name, None) != []:
                found = False
                break
            add(d)
            if not getattr(d, name):
                found = False
                break
        if found:
            return name
    return None


def _same(result: Any) -> Any:
    return result


CALLBACK_LIST = _callback_list()


def to_fire(waiters: list[Deferred[Any]]) -> Sequence[int]:
    """The indexes of the *waiters* to fire with a success (every one, tracked again, if
    they cannot be told apart)."""
    if reachable is None or CALLBACK_LIST is None or Deferred.debug:
        if track_all is not None:
            track_all(waiters)
        return range(len(waiters))
    return reachable(waiters, Deferred, CALLBACK_LIST)


def fail_all(waiters: list[Deferred[Any]], failure: Any) -> None:
    """Fail every one of *waiters* (tracked again first)."""
    if track_all is not None:
        track_all(waiters)
    for d in waiters:
        d.errback(failure)
