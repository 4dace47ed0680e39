"""Rows in and out: fetched records to Arrow batches, Arrow batches to records to send.

Both directions work column by column on Arrow data, which Spark exchanges
with its Python workers anyway: no per-row Python objects beyond the
records' own bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from afkak.common import TopicAndPartition

if TYPE_CHECKING:
    from afkak.records import Record

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
_COLUMNS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]
_TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")
#: Bytes a record adds to a batch beyond its value, about (varints, attributes...).
_RECORD_OVERHEAD = 10
_WRITE_COLUMNS = frozenset({"key", "value", "topic", "partition", "headers"})


class RowError(ValueError):
    """Rows to write do not fit Kafka records (no value column, no topic...)."""


def read_schema(include_headers: bool) -> StructType:
    """The rows of a read, as Spark's Kafka source has them."""
    fields = list(_COLUMNS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects of a reader's batches for *schema*."""
    return to_arrow_schema(schema, timezone="UTC")


def records_to_arrow(
    tp: TopicAndPartition, records: Sequence[Record], schema: pa.Schema
) -> pa.RecordBatch:
    """One Arrow batch of *records* (all of *tp*) with the columns of *schema*."""
    n = len(records)
    offsets, stamps, stamp_types, keys, values, headers = (
        zip(*records, strict=True) if n else ((),) * 6
    )
    columns = {
        "key": pa.array(keys, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.repeat(pa.scalar(tp.topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(tp.partition, pa.int32()), n),
        "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array(stamps, _TIMESTAMP_MS).cast(schema.field("timestamp").type),
        "timestampType": pa.array(stamp_types, pa.int32()),
    }
    if "headers" in schema.names:
        # A record without headers has null headers, as in Spark's Kafka source.
        columns["headers"] = pa.array([h or None for h in headers], schema.field("headers").type)
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)


def columns_to_arrow(tp: TopicAndPartition, columns: Any, schema: pa.Schema) -> pa.RecordBatch:
    """The records in compiled *columns* (a ``RecordColumns``, all of *tp*) as an Arrow batch.

    The same batch as :func:`records_to_arrow` gives for the same records,
    built on the columns' buffers without copying them (*columns* must hold
    headers if *schema* has them).
    """
    n = columns.rows

    def fixed(kind: pa.DataType, width: int, data: bytearray, count: int = n) -> pa.Array:
        buffers = [None, pa.py_buffer(data)[: width * count]]
        return pa.Array.from_buffers(kind, count, buffers, null_count=0)

    def blobs(
        kind: pa.DataType,
        count: int,
        valid: bytearray,
        nulls: int,
        offsets: bytearray,
        data: bytearray,
        size: int,
    ) -> pa.Array:
        buffers = [
            pa.py_buffer(valid)[: (count + 7) // 8] if nulls else None,
            pa.py_buffer(offsets)[: 4 * (count + 1)],
            pa.py_buffer(data)[:size],
        ]
        return pa.Array.from_buffers(kind, count, buffers, null_count=nulls)

    c = columns
    arrays = {
        "key": blobs(
            pa.binary(), n, c.key_valid, c.key_nulls, c.key_offsets, c.key_data, c.key_size
        ),
        "value": blobs(
            pa.binary(), n, c.value_valid, c.value_nulls, c.value_offsets, c.value_data,
            c.value_size,
        ),
        "topic": pa.repeat(pa.scalar(tp.topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(tp.partition, pa.int32()), n),
        "offset": fixed(pa.int64(), 8, c.offsets),
        "timestamp": fixed(_TIMESTAMP_MS, 8, c.timestamps).cast(schema.field("timestamp").type),
        "timestampType": fixed(pa.int32(), 4, c.types),
    }  # fmt: skip
    if "headers" in schema.names:
        kind = schema.field("headers").type
        h = c.header_count
        entries = pa.StructArray.from_arrays(
            [
                blobs(
                    pa.string(), h, c.header_key_offsets, 0, c.header_key_offsets,
                    c.header_key_data, c.header_key_size,
                ),
                blobs(
                    pa.binary(), h, c.header_value_valid, c.header_value_nulls,
                    c.header_value_offsets, c.header_value_data, c.header_value_size,
                ),
            ],
            fields=list(kind.value_type),
        )  # fmt: skip
        starts = fixed(pa.int32(), 4, c.header_offsets, n + 1)
        pc = _compute()
        arrays["headers"] = pa.ListArray.from_arrays(
            starts, entries, type=kind, mask=pc.equal(starts[1:], starts[:-1])
        )
    return pa.RecordBatch.from_arrays([arrays[name] for name in schema.names], schema=schema)


def _compute() -> ModuleType:
    """``pyarrow.compute``, imported by the first batch with headers: a tenth of the
    source's imports in Spark's planners and the streaming runner, which never use it."""
    import pyarrow.compute

    return pyarrow.compute


def check_write_schema(schema: StructType, default_topic: str | None) -> None:
    """Refuse a DataFrame that cannot be written (before any task runs)."""
    types = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise RowError("a DataFrame written to Kafka needs a value column")
    unknown = set(types) - _WRITE_COLUMNS
    if unknown:
        allowed = ", ".join(sorted(_WRITE_COLUMNS))
        raise RowError(f"columns {sorted(unknown)} cannot be written; allowed: {allowed}")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], (BinaryType, StringType)):
            raise RowError(f"column {name} must be binary or string, not {types[name]}")
    if "topic" not in types and default_topic is None:
        raise RowError("rows have no topic column: set the topic option")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise RowError(f"column topic must be a string, not {types['topic']}")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise RowError(f"column partition must be an int, not {types['partition']}")
    if "headers" in types and not _headers_type(types["headers"]):
        raise RowError(
            f"column headers must be {HEADERS_TYPE.simpleString()}, "
            f"not {types['headers'].simpleString()}"
        )


def _headers_type(kind: DataType) -> bool:
    """Whether *kind* is an array of (key string, value binary) structs, whatever may be
    null (``array(named_struct(...))`` of literals is not nullable), as Spark's Kafka
    sink checks it."""
    if not isinstance(kind, ArrayType) or not isinstance(kind.elementType, StructType):
        return False
    fields = kind.elementType.fields
    return [(f.name, type(f.dataType)) for f in fields] == [
        ("key", StringType),
        ("value", BinaryType),
    ]


#: A string column read as the binary column of the same layout (no copy).
_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}


def _bytes_column(batch: pa.RecordBatch, name: str) -> list[bytes | None] | None:
    if name not in batch.schema.names:
        return None
    column = batch.column(name)
    binary = _AS_BINARY.get(column.type)
    if binary is not None:
        column = column.view(binary)
    return column.to_pylist()


def _headers_column(column: pa.ListArray) -> list[tuple[tuple[str, bytes | None], ...]]:
    """Each row's headers as ``(key, value)`` pairs (a null list: none), from the
    struct's columns rather than a dict per header."""
    pc = _compute()
    lengths = pc.list_value_length(column)
    headers = column.flatten()
    fields = dict(zip((f.name for f in headers.type), headers.flatten(), strict=True))
    pairs = list(zip(fields["key"].to_pylist(), fields["value"].to_pylist(), strict=True))
    if len(column) and not column.null_count:
        low, high = (m.as_py() for m in pc.min_max(lengths).values())
        if low == high:  # as many headers each (one, most often): the tuples at C speed
            return list(zip(*[iter(pairs)] * low, strict=True)) if low else [()] * len(column)
    counts = lengths.to_pylist()
    rows: list[tuple[tuple[str, bytes | None], ...]] = []
    start = 0
    for count in counts:
        if count:
            rows.append(tuple(pairs[start : start + count]))
            start += count
        else:
            rows.append(())
    return rows


@attrs.frozen
class Outgoing:
    """The records of one Arrow batch to write, column by column (None: column absent)."""

    topics: list[str]
    values: list[bytes | None]
    keys: list[bytes | None] | None
    headers: list[tuple[tuple[str, bytes | None], ...]] | None
    partitions: list[int | None] | None

    def __len__(self) -> int:
        return len(self.values)


def chunks_by_key(
    out: Outgoing, max_bytes: int
) -> list[tuple[str, bytes | None, list[bytes | None]]]:
    """The values of *out* by topic and key, in order, in chunks of about *max_bytes*."""
    keys = out.keys if out.keys is not None else repeat(None)
    chunks: dict[tuple[str, bytes | None], list[list[bytes | None]]] = {}
    room: dict[tuple[str, bytes | None], int] = {}
    for topic, key, value in zip(out.topics, keys, out.values, strict=False):
        size = _RECORD_OVERHEAD + (len(value) if value is not None else 0)
        group = (topic, key)
        if room.get(group, 0) < size:
            chunks.setdefault(group, []).append([])
            room[group] = max_bytes
        chunks[group][-1].append(value)
        room[group] -= size
    return [(t, k, values) for (t, k), lists in chunks.items() for values in lists]


def by_topic(out: Outgoing) -> list[tuple[str, Outgoing]]:
    """The records of *out* by topic, in order (*out* itself if they share one)."""
    first = out.topics[0]
    if out.topics.count(first) == len(out.topics):
        return [(first, out)]
    rows: dict[str, list[int]] = {}
    for i, topic in enumerate(out.topics):
        rows.setdefault(topic, []).append(i)

    def pick(column: list[Any] | None, indexes: list[int]) -> list[Any] | None:
        return None if column is None else [column[i] for i in indexes]

    return [
        (
            topic,
            Outgoing(
                [topic] * len(indexes),
                [out.values[i] for i in indexes],
                pick(out.keys, indexes),
                pick(out.headers, indexes),
                pick(out.partitions, indexes),
            ),
        )
        for topic, indexes in rows.items()
    ]


def arrow_to_outgoing(batch: pa.RecordBatch, default_topic: str | None) -> Outgoing:
    """The records of *batch*; a row's topic is its ``topic`` column, else *default_topic*."""
    n = batch.num_rows
    names = batch.schema.names
    if "topic" in names:
        topics = batch.column("topic").to_pylist()
        if default_topic is not None:
            topics = [t or default_topic for t in topics]
        elif None in topics:
            raise RowError("a row has a null topic and the topic option is not set")
    else:
        assert default_topic is not None  # check_write_schema saw to it
        topics = [default_topic] * n
    headers = _headers_column(batch.column("headers")) if "headers" in names else None
    values = _bytes_column(batch, "value")
    assert values is not None
    return Outgoing(
        topics,
        values,
        _bytes_column(batch, "key"),
        headers,
        batch.column("partition").to_pylist() if "partition" in names else None,
    )
