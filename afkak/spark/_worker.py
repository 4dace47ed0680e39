"""The blocking side of the data source, run by Spark's Python processes.

Planner processes look up partitions and offsets; task workers fetch offset
ranges and produce rows.  Each process keeps one KafkaClient per client
configuration and one Producer per producer configuration (dropped after a
fork), driven through :mod:`._bridge`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from afkak._broker_errors import ErrorCode
from afkak.client import KafkaClient
from afkak.common import (
    OFFSET_EARLIEST,
    BrokerResponseError,
    TopicAndPartition,
)
from afkak.records.aborted import committed_batches

from . import _bridge, _kafka
from ._options import Bound, ClientConfig, ReadOptions, WriteOptions
from ._planning import DataLossError, Lookup, OffsetRange, plan, resolve_bound
from ._rows import arrow_to_outgoing, columns_to_arrow, records_to_arrow

if TYPE_CHECKING:
    from afkak.producer import Producer
    from afkak.records import Record, RecordBatch

OFFSET_OUT_OF_RANGE = ErrorCode.OFFSET_OUT_OF_RANGE
#: Smallest fetch a read asks for, and the bytes per record it assumes until it has seen some.
_MIN_FETCH_BYTES = 64 * 1024
_GUESS_RECORD_BYTES = 1024
#: Empty fetches in a row, below the high watermark, before a task gives up.
_MAX_EMPTY_FETCHES = 20

_clients: dict[ClientConfig, KafkaClient] = {}
_producers: dict[tuple[ClientConfig, tuple[tuple[str, Any], ...]], Producer] = {}
_clients_pid: int | None = None
#: Bytes and records of the last fetches this process made of each topic: the record
#: size a range's first fetch assumes.  Spark runs a micro-batch's tasks in Python
#: workers it reuses, so only a worker's first range of a topic guesses it.
_record_sizes: dict[str, tuple[int, int]] = {}


def call_timeout(config: ClientConfig) -> float:
    """Seconds a metadata, offsets or produce call may take, retries included:
    ``default.api.timeout.ms``, else four request timeouts."""
    if config.api_timeout_ms is not None:
        return config.api_timeout_ms / 1000.0
    return 4 * config.request_timeout_ms / 1000.0


def client_for(config: ClientConfig) -> KafkaClient:
    """This process's KafkaClient for *config*."""
    global _clients_pid
    if _clients_pid != os.getpid():
        _clients.clear()  # a fork's copies belong to the parent's reactor
        _producers.clear()
        _clients_pid = os.getpid()
    client = _clients.get(config)
    if client is None:
        client = _clients[config] = _bridge.call(call_timeout(config), _kafka.make_client, config)
    return client


def discover(opts: ReadOptions) -> list[TopicAndPartition]:
    """The partitions read: the assigned ones, or all of the subscribed topics' partitions."""
    if opts.assigned is not None:
        return list(opts.assigned)
    client = client_for(opts.client)
    if opts.pattern is not None:
        return _bridge.call(
            call_timeout(opts.client), _kafka.partitions_matching, client, opts.pattern
        )
    assert opts.topics is not None
    return _bridge.call(call_timeout(opts.client), _kafka.partitions_of, client, opts.topics)


def offsets_at(
    config: ClientConfig,
    partitions: Sequence[TopicAndPartition],
    when: int,
    isolation_level: int = 0,
) -> dict[TopicAndPartition, int]:
    """The earliest (-2) or latest (-1) offset of each partition, or its first at a time (ms).

    Latest is the last stable offset with *isolation_level* 1 (read_committed).
    """
    if not partitions:
        return {}
    client = client_for(config)
    return _bridge.call(
        call_timeout(config),
        _kafka.list_offsets,
        client,
        list(partitions),
        when,
        isolation_level,
        config.retry_policy(client.rng.uniform),
    )


def lookup(opts: ReadOptions) -> Lookup:
    """:func:`offsets_at` for *opts*' partitions (latest and times at its isolation level)."""

    def offsets(tps: Sequence[TopicAndPartition], when: int) -> dict[TopicAndPartition, int]:
        level = 0 if when == OFFSET_EARLIEST else opts.isolation_level
        return offsets_at(opts.client, tps, when, level)

    return offsets


def resolve_offsets(
    opts: ReadOptions, spec: Bound, partitions: Sequence[TopicAndPartition], name: str
) -> dict[TopicAndPartition, int]:
    """*spec* as concrete offsets of *partitions*, looking up only what it needs."""
    return resolve_bound(spec, partitions, name, lookup(opts))


def plan_batch(opts: ReadOptions) -> list[OffsetRange]:
    """The tasks of a batch read: from startingOffsets to endingOffsets."""
    partitions = discover(opts)
    start = resolve_offsets(opts, opts.starting, partitions, "startingOffsets")
    end = resolve_offsets(opts, opts.ending, partitions, "endingOffsets")
    return plan(opts, start, end, lambda new: offsets_at(opts.client, new, OFFSET_EARLIEST))


def _batches_between(batches: Iterable[RecordBatch], offset: int, end: int) -> list[RecordBatch]:
    """The data batches of *batches* holding offsets in [offset, end)."""
    found = []
    for batch in batches:
        if batch.is_control or batch.last_offset < offset:
            continue
        if batch.base_offset >= end:
            break
        found.append(batch)
    return found


def _records_between(batches: Iterable[RecordBatch], offset: int, end: int) -> list[Record]:
    records: list[Record] = []
    for batch in batches:
        found = batch.records(offset)
        if batch.last_offset >= end:
            found = [r for r in found if r[0] < end]
        records.extend(found)
    return records


def to_arrow(
    tp: TopicAndPartition,
    batches: Sequence[RecordBatch],
    offset: int,
    end: int,
    schema: pa.Schema,
    compiled: bool = True,
) -> pa.RecordBatch | None:
    """The records of *batches* in [offset, end) as one Arrow batch; None if there is none.

    The compiled record code decodes straight into the Arrow buffers when it
    is built (and *compiled*); otherwise, and for batches it leaves to the
    reference decoder, records go through :class:`Record` tuples.  Both give
    the same batch.
    """
    from afkak.records.batch import RecordColumns  # the record codecs are a task's imports

    if compiled and RecordColumns is not None:
        rows = sum(min(b.record_count, b.size_in_bytes // 7 + 1) for b in batches)
        size = sum(b.size_in_bytes for b in batches)
        columns = RecordColumns(rows, size, "headers" in schema.names)
        if all(b.add_to(columns, offset, end) for b in batches):
            return columns_to_arrow(tp, columns, schema) if columns.rows else None
    records = _records_between(batches, offset, end)
    return records_to_arrow(tp, records, schema) if records else None


def fetch_bytes(limit: int, records_left: int, seen_bytes: int = 0, seen_records: int = 0) -> int:
    """Bytes to fetch for the *records_left* of a range: about what they take, up to *limit*.

    The size of a record is what fetches held so far (*seen_bytes* over
    *seen_records*: this range's, after this process's earlier ones of the
    topic), else guessed at 1 KiB; never less
    than 64 KiB (brokers return a whole batch even when it is larger).  A
    short range (a small micro-batch, say) then does not fetch megabytes it
    will not read.
    """
    per_record = seen_bytes / seen_records if seen_records else _GUESS_RECORD_BYTES
    return min(limit, max(_MIN_FETCH_BYTES, int(records_left * per_record * 1.1)))


def read_range(opts: ReadOptions, r: OffsetRange, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The records of *r* as Arrow batches, one per fetch; stops at the range's end.

    The next fetch is sent before the current one is decoded.  Offsets that
    are gone (deleted, or past the log's end) are :exc:`DataLossError`, or
    skipped without ``failOnDataLoss``.
    """
    from afkak.records import gc_paused, read_batches  # a task's imports, not a planner's

    client = client_for(opts.client)
    tp = TopicAndPartition(r.topic, r.partition)
    seen_bytes, seen_records = _record_sizes.get(r.topic, (0, 0))

    limit = min(opts.max_partition_fetch_bytes, opts.fetch_max_bytes)
    backoff = opts.client.retry_policy(client.rng.uniform)

    def start_fetch(offset: int, full: bool = False) -> Future[_kafka.FetchedPartition]:
        return _bridge.submit(
            opts.poll_timeout,
            _kafka.fetch,
            client,
            tp,
            offset,
            limit if full else fetch_bytes(limit, r.end - offset, seen_bytes, seen_records),
            opts.fetch_max_wait_ms,
            opts.isolation_level,
            opts.fetch_min_bytes,
            backoff,
        )

    offset, empty = r.start, 0
    pending = start_fetch(offset)
    while offset < r.end:
        fetched = _bridge.result(pending, opts.poll_timeout)
        if fetched.error == OFFSET_OUT_OF_RANGE:
            offset = _skip_lost(opts, tp, offset, r.end)
            if offset < r.end:
                pending = start_fetch(offset)
            continue
        if fetched.error:
            raise BrokerResponseError.from_errno(fetched.error, f"fetch {tp} at {offset}")
        batches = list(read_batches(fetched.records))
        if not batches:
            # read_committed reads up to the last stable offset.
            log_end = fetched.high_watermark
            if opts.isolation_level and fetched.last_stable_offset >= 0:
                log_end = fetched.last_stable_offset
            if log_end <= offset:
                _lost(
                    opts,
                    f"{tp.topic}/{tp.partition}: offsets {offset}..{r.end} are past "
                    f"the log end {log_end}",
                )
                return
            empty += 1
            if empty > _MAX_EMPTY_FETCHES:
                raise DataLossError(
                    f"{tp.topic}/{tp.partition}: no complete record batch at {offset} below the"
                    f" high watermark {fetched.high_watermark} (kafka.max.partition.fetch.bytes"
                    " too small?)"
                )
            pending = start_fetch(offset, full=True)  # a batch larger than the estimate?
            continue
        empty = 0
        next_offset = batches[-1].next_offset
        seen_bytes += sum(b.size_in_bytes for b in batches)
        seen_records += next_offset - offset
        _record_sizes[r.topic] = seen_bytes, seen_records
        if next_offset < r.end:
            pending = start_fetch(next_offset)
        with gc_paused():
            kept = _batches_between(committed_batches(batches, fetched.aborted), offset, r.end)
            arrow = to_arrow(tp, kept, offset, r.end, schema)
        if arrow is not None:
            yield from polls(arrow, opts.max_poll_records)
        offset = next_offset


def polls(batch: pa.RecordBatch, max_records: int | None) -> Iterator[pa.RecordBatch]:
    """*batch* in slices of at most *max_records* rows (``max.poll.records``; zero-copy)."""
    if max_records is None or batch.num_rows <= max_records:
        yield batch
        return
    for start in range(0, batch.num_rows, max_records):
        yield batch.slice(start, max_records)


def _lost(opts: ReadOptions, message: str) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(message + " (set failOnDataLoss=false to skip)")


def _skip_lost(opts: ReadOptions, tp: TopicAndPartition, offset: int, end: int) -> int:
    """Where to go on after OFFSET_OUT_OF_RANGE at *offset*: the log start, or *end*."""
    _lost(opts, f"{tp.topic}/{tp.partition}: offset {offset} is out of range")
    earliest = offsets_at(opts.client, [tp], OFFSET_EARLIEST)[tp]
    return earliest if offset < earliest < end else end


def producer_for(opts: WriteOptions) -> Producer:
    """This process's Producer for *opts*' client and producer settings."""
    client = client_for(opts.client)
    settings = opts.producer_settings()
    key = (opts.client, tuple(sorted(settings.items())))
    producer = _producers.get(key)
    if producer is None:
        producer = _producers[key] = _bridge.call(
            call_timeout(opts.client), _kafka.make_producer, client, settings
        )
    return producer


def write(opts: WriteOptions, batches: Iterable[pa.RecordBatch]) -> int:
    """Produce the rows of *batches*; returns once every one is acknowledged.

    One bridge call per Arrow batch; the next batch is converted while the
    previous one is being sent.  Returns the number of rows written.
    """
    return send_rows(producer_for(opts), opts, batches)


def send_rows(producer: Producer, opts: WriteOptions, batches: Iterable[pa.RecordBatch]) -> int:
    """Produce the rows of *batches* with *producer*; see :func:`write`."""
    timeout = call_timeout(opts.client)
    pending: Future[None] | None = None
    rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        out = arrow_to_outgoing(batch, opts.topic)
        if pending is not None:
            _bridge.result(pending, timeout)
        pending = _bridge.submit(timeout, _kafka.send, producer, out, opts.chunk_bytes)
        rows += len(out)
    if pending is not None:
        _bridge.result(pending, timeout)
    return rows
