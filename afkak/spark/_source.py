"""The Spark data source ``afkak``: batch and streaming reads and writes of Kafka topics.

These objects are pickled between Spark's processes, so they hold only parsed
options and offsets; the Kafka connections live in each process (see
:mod:`._worker`).  This module imports neither :mod:`._worker` nor afkak's
client: most of the Python processes Spark starts for a query (to check its
options at ``load()``, to plan a micro-batch's read function or its writer, to
commit it) only unpickle these objects, and afkak's client and producer cost
them a third of their start-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST, TopicAndPartition

from ._options import (
    OptionError,
    ReadOptions,
    WriteOptions,
    parse_read_options,
    parse_write_options,
)
from ._planning import (
    Lookups,
    OffsetRange,
    from_json,
    pack_ranges,
    plan,
    rate_limit,
    to_json,
    too_few,
)
from ._rows import arrow_schema, check_write_schema, read_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["AfkakDataSource"]

#: Records a micro-batch's task reads at most when it reads several partitions:
#: a few milliseconds of work, against tens for each task Spark runs in Python.
TASK_RECORDS = 10_000


class AfkakDataSource(DataSource):
    """Kafka topics as DataFrames and streams, through afkak: ``format("afkak")``.

    Options and the row schema follow Spark's Kafka connector; see
    ``docs/spark.rst``.
    """

    @classmethod
    def name(cls) -> str:
        return "afkak"

    def schema(self) -> StructType:
        """The rows' fixed schema, once the options are checked: a bad one fails
        ``load()`` (on the driver), not the query's first action."""
        return read_schema(parse_read_options(self.options, streaming=None).include_headers)

    def _read_options(self, schema: StructType, streaming: bool) -> ReadOptions:
        opts = parse_read_options(self.options, streaming=streaming)
        if schema != read_schema(opts.include_headers):
            raise OptionError("the afkak source has a fixed schema; do not set a custom one")
        return opts

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self._read_options(schema, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(self._read_options(schema, streaming=True), schema)

    def _write_options(self, schema: StructType) -> WriteOptions:
        opts = parse_write_options(self.options)
        check_write_schema(schema, opts.topic)
        return opts

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:
            raise OptionError("Kafka topics can only be appended to: use mode('append')")
        opts = self._write_options(schema)
        if opts.exactly_once:
            raise OptionError("exactlyOnce is for streaming writes (writeStream) only")
        return BatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        """Append mode, or complete mode (*overwrite*): each micro-batch's whole result
        is appended, as with Spark's Kafka sink; Kafka cannot truncate a topic."""
        return StreamWriter(self._write_options(schema))


def _tasks() -> ModuleType:
    """:mod:`._worker`, imported by the first call that talks to Kafka."""
    from . import _worker

    return _worker


def _input_partitions(ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    return [InputPartition(r) for r in ranges]


def _read(opts: ReadOptions, schema: StructType, partition: InputPartition) -> Iterator[Any]:
    """The records of the partition's offset range, or of its ranges one after another."""
    work = partition.value
    if work is None:  # Spark's stand-in when there is nothing to read
        return iter(())
    arrow = arrow_schema(schema)
    if isinstance(work, OffsetRange):
        return _tasks().read_range(opts, work, arrow)
    return (batch for r in work for batch in _tasks().read_range(opts, r, arrow))


class BatchReader(DataSourceReader):
    """One task per partition's offset range, split further for ``minPartitions``."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return _input_partitions(_tasks().plan_batch(self.opts))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, self.schema, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offsets ``{"topic": {"partition": offset}}``, checkpointed by Spark.

    Each micro-batch reads from the previous end to the latest offsets (at
    most about ``maxOffsetsPerTrigger`` records); partitions added to a
    subscribed topic are read from their earliest offset.  With
    ``minOffsetsPerTrigger`` a micro-batch waits for that many new records,
    or for ``maxTriggerDelay`` after the previous one, as Spark's source does
    (the first micro-batch never waits).  A micro-batch's ranges are read by as
    few tasks as hold :data:`TASK_RECORDS` each (one task per piece with
    ``minPartitions`` or ``maxRecordsPerPartition``).
    """

    #: Milliseconds for ``maxTriggerDelay``: Spark's own trigger clock is the wall clock.
    clock_ms: Callable[[], float] = staticmethod(lambda: time.monotonic() * 1000)
    #: Where partitions and offsets come from: None for :mod:`._worker`, a fake log
    #: in tests (a class attribute: never pickled).
    lookups: Lookups | None = None

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        #: When the last micro-batch was let through (None: none yet).
        self._last_trigger_ms: float | None = None
        #: Offsets that Trigger.AvailableNow stops at.
        self._target: dict[TopicAndPartition, int] | None = None
        self._latest: dict[TopicAndPartition, int] | None = None
        self._initial: dict[str, Any] | None = None
        #: The runner's lookups over plain sockets (made on first use; never pickled).
        self._plain: Lookups | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_plain": None}

    @property
    def kafka(self) -> Lookups:
        """The lookups in plaintext without Twisted's reactor (see :mod:`._plain_lookups`),
        falling back to the client's."""
        if self.lookups is not None:
            return self.lookups
        if self._plain is None:
            from ._plain_lookups import PlainLookups

            self._plain = PlainLookups(_tasks)
        return self._plain

    def initialOffset(self) -> dict[str, Any]:
        """startingOffsets as offsets, looked up once: Spark asks again for the first
        micro-batch's plan, and records written meanwhile must not move its start
        past the end it already chose (as Spark's source, which keeps it in the
        checkpoint)."""
        if self._initial is None:
            partitions = self.kafka.discover(self.opts)
            self._initial = to_json(
                self.kafka.resolve_offsets(
                    self.opts, self.opts.starting, partitions, "startingOffsets"
                )
            )
        return self._initial

    def _available(self) -> dict[TopicAndPartition, int]:
        latest = self.kafka.offsets_at(
            self.opts.client,
            self.kafka.discover(self.opts),
            OFFSET_LATEST,
            self.opts.isolation_level,
        )
        self._latest = latest
        if self._target is not None:
            latest = {
                tp: min(o, self._target[tp]) for tp, o in latest.items() if tp in self._target
            }
        return latest

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        latest = self._available()
        begin = from_json(start)
        if self._delayed(begin, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in begin]
            begin.update(self.kafka.offsets_at(self.opts.client, new, OFFSET_EARLIEST))
            latest = rate_limit(begin, latest, limit.max_rows)
        return to_json(latest)

    def _delayed(
        self, begin: dict[TopicAndPartition, int], latest: dict[TopicAndPartition, int]
    ) -> bool:
        """``minOffsetsPerTrigger``: hold the micro-batch back while too few records
        arrived and ``maxTriggerDelay`` has not passed (never under AvailableNow)."""
        minimum = self.opts.min_offsets_per_trigger
        if minimum is None or self._target is not None:
            return False
        now = self.clock_ms()
        last = self._last_trigger_ms
        if last is not None and now - last < self.opts.max_trigger_delay_ms:
            if too_few(begin, latest, minimum):
                return True
        self._last_trigger_ms = now
        return False

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is None:
            return super().getDefaultReadLimit()
        return ReadMaxRows(self.opts.max_offsets_per_trigger)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else to_json(self._latest)

    def prepareForTriggerAvailableNow(self) -> None:
        partitions = self.kafka.discover(self.opts)
        self._target = self.kafka.offsets_at(
            self.opts.client, partitions, OFFSET_LATEST, self.opts.isolation_level
        )

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        def earliest(new: list[TopicAndPartition]) -> dict[TopicAndPartition, int]:
            return self.kafka.offsets_at(self.opts.client, new, OFFSET_EARLIEST)

        ranges = plan(self.opts, from_json(start), from_json(end), earliest)
        if self.opts.min_partitions is not None or self.opts.max_records_per_partition is not None:
            return _input_partitions(ranges)
        return [InputPartition(group) for group in pack_ranges(ranges, TASK_RECORDS)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, self.schema, partition)


class _Written(WriterCommitMessage):
    """What a write task reports: how many rows it produced."""

    def __init__(self, rows: int) -> None:
        self.rows = rows


class BatchWriter(DataSourceArrowWriter):
    """Each task produces its rows and returns once all are acknowledged.

    Kafka has no transactions across tasks here: rows of tasks that succeeded
    stay written when the job fails.
    """

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _Written(_tasks().write(self.opts, iterator))


class StreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch's rows produced, at least once (as Spark's Kafka sink); with
    ``exactlyOnce``, once, in a transaction per task (see :mod:`._exactly_once`)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.opts.exactly_once:
            from . import _exactly_once

            return _Written(_exactly_once.write(self.opts, iterator))
        return _Written(_tasks().write(self.opts, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every row was acknowledged (or committed) before its task ended."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing can be undone: acknowledged rows stay in their topics."""
