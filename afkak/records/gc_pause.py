"""Keeping the cyclic garbage collector off objects that pile up by the thousand.

Decoding creates several GC-tracked objects per record and no reference
cycle, so the collector's passes over them (dozens per megabyte fetched, then
full collections as they pile up) would find nothing to free, yet cost as
much as the decoding itself: :func:`gc_paused`.

A producer holds one Deferred per send until the send is acknowledged (tens
of thousands when sends outrun the broker); each, with its callback list, is
scanned by every collection it survives, and the full collections they
trigger scan the whole heap.  :data:`untrack` hides such an object (and the
lists only it holds) from the collector while it waits, and
:data:`track_all` shows it again before it fires, so that whatever cycles
its callbacks and result form afterwards are collected as usual.  A cycle
made meanwhile through its callback list (a callback holding the Deferred)
is broken when it fires, so nothing leaks as long as the holder fires every
untracked object.  Both need the compiled record module; without it they are
None and everything stays tracked.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from afkak.records.batch import compiled_records

__all__ = [
    "gc_paused",
    "reachable",
    "track_all",
    "untrack",
]

_compiled = compiled_records()
#: ``untrack(obj)``: hide *obj* and the lists only it holds from the cyclic GC.
untrack: Callable[[Any], None] | None = getattr(_compiled, "untrack", None)
#: ``track_all(objs)``: show every object of the list *objs* (and its lists) again.
track_all: Callable[[list[Any]], None] | None = getattr(_compiled, "track_all", None)
#: ``reachable(objs, cls, attr)``: the indexes of the objects of the list *objs*
#: that other code may still see, tracked again; the others are of exactly type
#: *cls*, referred to by *objs* alone (no weak references either), with an empty
#: list in their attribute *attr*.
reachable: Callable[[list[Any], type, str], list[int]] | None = getattr(
    _compiled, "reachable", None
)


class gc_paused:  # noqa: N801 (used as a function: ``with gc_paused():``)
    """Disable the cyclic GC for the block, unless the application already had.

    Keep the block synchronous and bounded (no yield to a caller): a
    collection due meanwhile runs at the first allocation after it.  The
    producer fires an acknowledged batch's Deferreds in one, so the
    application's callbacks may run in it (and find the collector off).
    (A class rather than a generator: entered once per acknowledged batch,
    a lone record's included.)
    """

    __slots__ = ("_paused",)

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._paused:
            gc.enable()
