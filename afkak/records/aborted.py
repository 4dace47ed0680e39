"""Dropping the records of aborted transactions, for ``read_committed`` consumers.

A ``read_committed`` Fetch returns records up to the last stable offset and,
per partition, the aborted transactions that overlap them: ``(producer_id,
first_offset)`` pairs.  Kafka's consumers (Java's, librdkafka) drop a
transactional batch when its producer has an aborted transaction that began
at or before the batch and whose ABORT marker has not been passed yet.  This
module is that algorithm, pure, so every reader (Consumer, client fetches,
Spark) filters the same way.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from afkak.records.record import ControlType

if TYPE_CHECKING:
    from afkak.records.batch import RecordBatch

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "AbortedTransactions",
    "committed_batches",
    "isolation_level",
]

#: Fetch / ListOffsets isolation levels, as on the wire.
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def isolation_level(value: Any) -> int:
    """The wire isolation level of ``'read_uncommitted'`` / ``'read_committed'`` (or 0 / 1).

    Raises :exc:`ValueError` for anything else (:exc:`TypeError` for non-str,
    non-int values).
    """
    if isinstance(value, str):
        level = _LEVELS.get(value.lower())
        if level is None:
            raise ValueError(
                f"isolation_level must be 'read_uncommitted' or 'read_committed', not {value!r}"
            )
        return level
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"isolation_level must be a str, not {value!r}")
    if value not in (READ_UNCOMMITTED, READ_COMMITTED):
        raise ValueError(f"isolation_level must be 0 or 1, not {value!r}")
    return value


class AbortedTransactions:
    """Tells, batch by batch in log order, whether a batch belongs to an aborted transaction.

    *aborted* holds a ``read_committed`` response's AbortedTransactions
    (objects with ``producer_id`` and ``first_offset``, or ``(producer_id,
    first_offset)`` pairs); None or empty means none was aborted.  Every
    batch of the partition's response must be shown to :meth:`drops`, in
    order, control batches included: an ABORT marker ends its producer's
    aborted transaction.
    """

    __slots__ = ("_pending", "_aborting")

    def __init__(self, aborted: Iterable[Any] | None) -> None:
        self._pending = [_pair(a) for a in aborted or ()]
        heapq.heapify(self._pending)
        self._aborting: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self._pending or self._aborting)

    def drops(self, batch: RecordBatch) -> bool:
        """Whether *batch* is a data batch of an aborted transaction."""
        pid = batch.producer_id
        if pid < 0:
            return False
        pending, aborting = self._pending, self._aborting
        while pending and pending[0][0] <= batch.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if pid not in aborting:
            return False
        if batch.is_control:
            if _is_abort(batch):
                aborting.discard(pid)
            return False
        return batch.is_transactional


def committed_batches(
    batches: Iterable[RecordBatch], aborted: Iterable[Any] | None
) -> Iterator[RecordBatch]:
    """The batches of *batches* a ``read_committed`` consumer sees.

    Control batches are kept (readers skip them, but they move the fetch
    position on).
    """
    skip = AbortedTransactions(aborted)
    if not skip:
        return iter(batches)
    return (b for b in batches if not skip.drops(b))


def _pair(entry: Any) -> tuple[int, int]:
    """(first_offset, producer_id): heap order is by first offset."""
    if isinstance(entry, tuple):
        producer_id, first_offset = entry
        return first_offset, producer_id
    return entry.first_offset, entry.producer_id


def _is_abort(batch: RecordBatch) -> bool:
    marker = batch.control_marker
    return marker is not None and marker.type == ControlType.ABORT
