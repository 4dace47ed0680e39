"""Records too large for one record batch: refused, or cut into pieces sent in order.

The broker checks each record batch against ``message.max.bytes`` (a topic's
``max.message.bytes``).  A ``send_messages`` call is one batch when it fits
``max_request_size``; a larger one is cut into pieces that each fit (in order,
on the call's partition), and its Deferred fires once every piece is written,
with the first piece's result.  A record that cannot fit in a batch alone
fails its send with :exc:`~afkak.common.MessageSizeTooLargeError` before
anything is sent.

A batch the broker still refuses as too large (a topic's limit below
``max_request_size``) is halved (:func:`split_batch`, the client's
:func:`~afkak.client._produce_split.halve`) and the halves sent again in its
place, down to one record, as Kafka's Java producer splits and re-enqueues
it; only a record too large alone fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, FirstError
from twisted.python.failure import Failure

from afkak.client._interlayer import halve
from afkak.records import BATCH_HEADER_SIZE, RECORD_SIZE_BOUND, read_batches, split_points

from ._batch import RECORD_OVERHEAD, SEQUENCE_MODULUS, Buffer, ProducerBatch

#: The types a key or value may have.
BYTES = (bytes, bytearray, memoryview)


def pieces(
    values: Sequence[Buffer | None], key: Buffer | None, headers_size: int, limit: int
) -> list[Sequence[Buffer | None]] | None:
    """*values* cut into runs whose batches stay within *limit* bytes; None if one cannot fit."""
    each = RECORD_SIZE_BOUND + (len(key) if key is not None else 0) + headers_size
    starts = split_points((each + (len(v) if v is not None else 0) for v in values), limit)
    if starts is None:
        return None
    return [values[i:j] for i, j in zip(starts, [*starts[1:], len(values)], strict=True)]


def joined(d: Deferred[Any], parts: list[Deferred[Any]]) -> None:
    """Fire *d* with the first part's result once all succeeded, or with the first failure."""

    def settle(results: list[tuple[bool, Any]]) -> None:
        d.callback(results[0][1])

    def failed(failure: Failure) -> None:
        first = failure.value
        d.errback(first.subFailure if isinstance(first, FirstError) else failure)

    DeferredList(parts, fireOnOneErrback=True, consumeErrors=True).addCallbacks(settle, failed)


def values_size(topic: str, values: Sequence[Any]) -> int:
    """The buffer size of message *values*: TypeError unless each is bytes or None."""
    size = len(values) * RECORD_OVERHEAD
    for m in values:
        if type(m) is bytes:
            size += len(m)
        elif m is not None:
            if not isinstance(m, BYTES):
                raise TypeError(
                    f"message to topic {topic} ({m!r:.100}) has type"
                    f" {type(m).__name__}, but must be bytes or None"
                )
            size += len(m)
    return size


def split_batch(
    batch: ProducerBatch, codec: int, compression_level: int | None, transactional: bool
) -> tuple[list[ProducerBatch], int]:
    """*batch* (sent, refused as too large) as two batches in its place, encoded; and how
    many more sends are outstanding (a ``send_messages`` call cut in two settles as two).

    Each half takes its records' sends, its share of the buffer estimate, and
    the batch's attempts (so it is sent alone, keeping the partition's order).
    With idempotence the halves take the batch's sequences, consecutively, as
    Java's ``ProducerBatch.split``: the broker refused the batch, so nothing
    of them was written, and the later batches keep theirs.
    """
    assert batch.data is not None  # only a sent batch is refused
    records = next(read_batches(batch.data)).records()
    n = len(records)
    ranges = _send_ranges(batch, n)
    pieces: dict[int, list[Deferred[Any]]] = {}
    halves: list[ProducerBatch] = []
    low = 0
    sequence = batch.base_sequence
    estimate = batch.size - BATCH_HEADER_SIZE  # shared by record count
    for run in halve(records):
        high = low + len(run)
        half = ProducerBatch(batch.part, batch.created, batch.order)
        half.opened, half.attempts, half.last_error = batch.opened, batch.attempts, batch.last_error
        half.plain = False
        half.values = [r[4] for r in run]
        if any(r[3] is not None for r in run):
            half.keys = [r[3] for r in run]
        if any(r[5] for r in run):
            half.headers = [r[5] for r in run]
        half.timestamps = [r[1] for r in run]
        half.size = BATCH_HEADER_SIZE + estimate * high // n - estimate * low // n
        for start, end, d, record in ranges:
            if end <= low or start >= high:
                continue
            if record:
                half.record_waiters.append(d)
                half.record_indexes.append(start - low)
            elif low <= start and end <= high:
                half.add_waiter(d, start - low)
            else:  # the call's records are in both halves: each settles a piece
                piece: Deferred[Any] = Deferred()
                pieces.setdefault(id(d), [d]).append(piece)
                half.add_waiter(piece, max(start, low) - low)
        half.encode(
            codec,
            batch.producer_id,
            batch.producer_epoch,
            sequence,
            transactional,
            compression_level,
        )
        if sequence >= 0:
            sequence = (sequence + len(run)) % SEQUENCE_MODULUS
        halves.append(half)
        low = high
    for d, *parts in pieces.values():
        joined(d, parts)
    return halves, sum(len(parts) - 2 for parts in pieces.values())


def _send_ranges(batch: ProducerBatch, n: int) -> list[tuple[int, int, Deferred[Any], bool]]:
    """Each waiting send's records, ``(start, end, its Deferred, whether a send() record)``."""
    waiters = batch.waiters
    starts = range(len(waiters)) if batch.firsts is None else batch.firsts
    bounds = sorted({*starts, *batch.record_indexes, n})
    following = {b: bounds[i + 1] for i, b in enumerate(bounds[:-1])}
    ranges = [(s, following[s], d, False) for s, d in zip(starts, waiters, strict=True)]
    ranges.extend(
        (i, i + 1, d, True) for i, d in zip(batch.record_indexes, batch.record_waiters, strict=True)
    )
    return ranges
