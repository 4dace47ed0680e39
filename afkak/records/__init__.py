"""Kafka record batches: building v2 batches, reading v2 and legacy ones.

Pure functions and value types, no I/O.  See :func:`read_batches` for the
consumer side and :func:`build_batch` / :class:`RecordBatchBuilder` for the
producer side.
"""

from typing import TYPE_CHECKING

from afkak._lazy import lazy_names

if TYPE_CHECKING:
    from afkak.records.batch import RecordBatch
    from afkak.records.builder import (
        BATCH_HEADER_SIZE,
        RECORD_SIZE_BOUND,
        RecordBatchBuilder,
        build_batch,
        build_batches,
        build_control_batch,
        split_points,
    )
    from afkak.records.gc_pause import gc_paused
    from afkak.records.reader import read_batches
    from afkak.records.record import ControlMarker, ControlType, Header, Record, TimestampType

#: Where each public name lives, imported on first use (PEP 562): a process that
#: only looks up offsets (a Spark planner, the streaming source's runner) imports
#: the client, which needs the isolation levels of :mod:`afkak.records.aborted`,
#: not the batch reader and builder.
_LAZY = {
    "BATCH_HEADER_SIZE": "afkak.records.builder",
    "RECORD_SIZE_BOUND": "afkak.records.builder",
    "RecordBatchBuilder": "afkak.records.builder",
    "build_batch": "afkak.records.builder",
    "build_batches": "afkak.records.builder",
    "build_control_batch": "afkak.records.builder",
    "split_points": "afkak.records.builder",
    "RecordBatch": "afkak.records.batch",
    "gc_paused": "afkak.records.gc_pause",
    "read_batches": "afkak.records.reader",
    "ControlMarker": "afkak.records.record",
    "ControlType": "afkak.records.record",
    "Header": "afkak.records.record",
    "Record": "afkak.records.record",
    "TimestampType": "afkak.records.record",
}

__all__ = [
    "BATCH_HEADER_SIZE",
    "RECORD_SIZE_BOUND",
    "ControlMarker",
    "ControlType",
    "Header",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "build_batch",
    "build_batches",
    "build_control_batch",
    "gc_paused",
    "read_batches",
    "split_points",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
