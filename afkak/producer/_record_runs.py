"""A ``send_records`` call's records cut into per-partition runs that each fit a batch.

Each record's partition is known (its own, or its key's); the records of a
partition go, in order, in runs of at most the batch size, one run per
:meth:`~._batch.ProducerBatch.add_records`.  This is per-record work on
every keyed write (the Spark writer's), so it runs compiled when the record
code is (``_crecords.record_runs``, in one pass over the columns);
:func:`_record_runs` is its reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from afkak.records.batch import compiled_records

from ._batch import RECORD_OVERHEAD, Buffer

#: ``(partition, keys or None, values, headers or None, timestamps, estimated size)``.
Run: TypeAlias = tuple[int, list[Any] | None, list[Any], list[Any] | None, list[int], int]


def headers_size(headers: Any) -> int:
    """The buffer size of a record's *headers*: their names, values and lengths."""
    size = 0
    for name, value in headers:
        size += len(name) + (len(value) if value is not None else 0) + 3
    return size


def record_sizes(
    keys: Sequence[Buffer | None] | None,
    values: Sequence[Buffer | None],
    headers: Sequence[Any] | None,
) -> list[int]:
    """The buffer size of each record of a ``send_records`` call."""
    sizes = [RECORD_OVERHEAD + (len(v) if v is not None else 0) for v in values]
    if keys is not None:
        sizes = [s + (len(k) if k is not None else 0) for s, k in zip(sizes, keys, strict=True)]
    if headers is not None:
        sizes = [s + headers_size(h) for s, h in zip(sizes, headers, strict=True)]
    return sizes


def _record_runs(
    partitions: Sequence[int],
    keys: Sequence[Buffer | None] | None,
    values: Sequence[Buffer | None],
    headers: Sequence[Any] | None,
    timestamps: Sequence[int | None] | None,
    default_timestamp: int,
    limit: int,
) -> tuple[int, int, list[Run]]:
    """The records' total and largest sizes, and their runs: per partition (in the
    order partitions first appear), the partition's records in order, cut before a
    record that would take a run past *limit* bytes (a larger record alone); a
    record's timestamp is *default_timestamp* where it has none."""
    sizes = record_sizes(keys, values, headers)
    rows: dict[int, list[int]] = {}
    for i, partition in enumerate(partitions):
        rows.setdefault(partition, []).append(i)

    def run_of(partition: int, run: list[int], size: int) -> Run:
        if timestamps is None:
            stamps = [default_timestamp] * len(run)
        else:
            stamps = [
                default_timestamp if t is None else t for t in map(timestamps.__getitem__, run)
            ]
        return (
            partition,
            None if keys is None else [keys[i] for i in run],
            [values[i] for i in run],
            None if headers is None else [headers[i] for i in run],
            stamps,
            size,
        )

    runs: list[Run] = []
    for partition, indexes in rows.items():
        run: list[int] = []
        room = limit
        for i in indexes:
            if sizes[i] > room and run:
                runs.append(run_of(partition, run, limit - room))
                run, room = [], limit
            run.append(i)
            room -= sizes[i]
        runs.append(run_of(partition, run, limit - room))
    return sum(sizes), max(sizes), runs


#: :func:`_record_runs`, compiled when the record code is.
record_runs: Callable[..., tuple[int, int, list[Run]]] = getattr(
    compiled_records(), "record_runs", _record_runs
)
