"""Kafka record batches: building v2 batches, reading v2 and legacy ones.

Pure functions and value types, no I/O.  See :func:`read_batches` for the
consumer side and :func:`build_batch` / :class:`RecordBatchBuilder` for the
producer side.
"""

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
