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
from functools import partial
from typing import Any

from twisted.internet.defer import Deferred

from afkak.records.batch import compiled_records
from afkak.records.gc_pause import reachable, track_all, untrack

from ._deferred import COMPILED, SendDeferred
from ._result import RecordMetadata

__all__ = [
    "CALLBACK_LIST",
    "compiled_fire_records",
    "fail_all",
    "fire",
    "to_fire",
    "track_all",
    "untrack",
]


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
            d: Deferred[Any] = SendDeferred()
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


def _record_result(d: Deferred[Any], result: Any) -> None:
    """What ``d.callback(result)`` leaves on a Deferred without callbacks (nor debugging)."""
    d.called = True
    d._canceller = None
    d.result = result
    d._chainedTo = None


def _records_like_callback() -> bool:
    """Whether :func:`_record_result` leaves exactly what this Twisted's callback() does."""
    if CALLBACK_LIST != "_callbacks" or Deferred.debug:
        return False
    fired: Deferred[Any] = Deferred()
    recorded: Deferred[Any] = Deferred()
    fired.callback(_same)
    _record_result(recorded, _same)
    return vars(fired) == vars(recorded)


_QUIET = _records_like_callback()


def fire(d: Deferred[Any], result: Any) -> None:
    """``d.callback(result)``; for a Deferred nothing has added a callback to yet (a
    gathered send acknowledged before the gathering), only the result recorded.

    Three attribute stores instead of Twisted's callback chain (a third of the
    cost), when this Twisted is seen to leave the same state (checked at import),
    outside debug mode.
    """
    if _QUIET and not d._callbacks and not d.called and not d.paused and not d.debug:
        _record_result(d, result)
    else:
        d.callback(result)


def to_fire(waiters: list[Deferred[Any]]) -> Sequence[int]:
    """The indexes of the *waiters* to fire with a success (every one, tracked again, if
    they cannot be told apart)."""
    if reachable is None or CALLBACK_LIST is None or Deferred.debug:
        if track_all is not None:
            track_all(waiters)
        return range(len(waiters))
    return reachable(waiters, SendDeferred, CALLBACK_LIST)


def _compiled_fire_records() -> Callable[..., None] | None:
    """The compiled loop firing an acknowledged batch's ``send()`` Deferreds, given
    what it builds and checks (see ``_crecords.fire_records``); None without it."""
    fire_records = getattr(compiled_records(), "fire_records", None)
    if fire_records is None or not COMPILED or CALLBACK_LIST is None or reachable is None:
        return None
    fields = ("topic", "partition", "offset", "timestamp")
    return partial(
        fire_records,
        send_type=SendDeferred,
        attr=CALLBACK_LIST,
        metadata_type=RecordMetadata,
        slots=tuple(RecordMetadata.__dict__[name] for name in fields),
    )


#: ``compiled_fire_records(waiters, indexes, stamps, topic, partition, base_offset,
#: log_append_time)``: what ``ProducerBatch._fire_records`` does, in one compiled
#: loop (outside debug mode); None without the compiled record module.
compiled_fire_records = _compiled_fire_records()


def fail_all(waiters: list[Deferred[Any]], failure: Any) -> None:
    """Fail every one of *waiters* (tracked again first)."""
    if track_all is not None:
        track_all(waiters)
    for d in waiters:
        d.errback(failure)
