"""One producer batch: the records of one partition sent (and retried) together.

Records are collected in plain lists (the per-send cost is a few list
appends); :meth:`ProducerBatch.encode` turns them into a v2 record batch once,
when the batch is first sent, and the same bytes are resent on retries.  A
re-sequenced batch (after an epoch bump) gets its producer fields and CRC
patched in place.

Each send waiting on the batch is one entry of ``waiters``
(``send_messages``: its Deferred; ``firsts`` holds the index of its first
message, unless it is None because every send so far had one message, so the
indexes match; an empty tuple until the first) or of ``record_waiters``
(``send``: its Deferred, and in ``record_indexes`` its record's index).  Few
objects per message matter: a producer holds many thousands of sends, and the
garbage collector scans every one it tracks; a ``send_messages`` Deferred waits
untracked and is fired only if anything can see it (:mod:`._waiters`).  While
``plain`` (one-value sends without key or headers so far), ``send_messages``
appends to the lists itself.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, TypeAlias

from crc32c import crc32c
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak._structs import ProduceResponse
from afkak.records import BATCH_HEADER_SIZE, build_batch

from ._result import record_metadata
from ._waiters import compiled_fire_records, fail_all, fire, to_fire, untrack

#: What a key or value may be (checked by the Producer's calls).
Buffer: TypeAlias = bytes | bytearray | memoryview

_PRODUCER_FIELDS = struct.Struct(">qhi")  # producer id, epoch, base sequence
_PRODUCER_OFFSET = 43
_CRC = struct.Struct(">I")
_CRC_OFFSET = 17
_CRC_START = 21
#: Estimated bytes a record adds to a batch beyond its key, value and headers
#: (the same estimate as :class:`afkak.records.RecordBatchBuilder`'s).
RECORD_OVERHEAD = 10
SEQUENCE_MODULUS = 2**31


_new_tuple = tuple.__new__
#: ``waiters`` of a batch without ``send_messages`` calls (``send()`` ones only):
#: a list fewer per batch for the cyclic GC.
_NO_WAITERS: Any = ()


class ProducerBatch:
    """Records for one partition, their senders' Deferreds, and the batch's send state."""

    __slots__ = (
        "part",
        "topic",
        "partition",
        "values",
        "keys",
        "headers",
        "timestamps",
        "waiters",
        "firsts",
        "plain",
        "record_waiters",
        "record_indexes",
        "size",
        "created",
        "opened",
        "order",
        "count",
        "data",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "attempts",
        "last_error",
    )

    def __init__(self, part: Any, created: float, order: int) -> None:
        #: The :class:`~afkak.producer._partition.PartitionState` it belongs to.
        self.part = part
        self.topic: str = part.topic
        self.partition: int = part.partition
        self.values: list[Buffer | None] = []
        self.keys: list[Buffer | None] | None = None  # None while every key is None
        self.headers: list[Any] | None = None  # None while no record has headers
        self.timestamps: list[int] = []
        self.waiters: list[Any] = _NO_WAITERS
        self.firsts: list[int] | None = None
        #: True while every send appended was one value without key or headers by
        #: ``send_messages``: values, timestamps and waiters go in step, and
        #: ``send_messages`` appends to them itself (its hottest path).
        self.plain = True
        self.record_waiters: list[Any] = []
        #: The index of each ``record_waiters`` Deferred's record.
        self.record_indexes: list[int] = []
        #: Estimated encoded size (before compression), for cutting batches.
        self.size = BATCH_HEADER_SIZE
        self.created = created
        #: When it was opened (``created`` is moved to send it early); the delivery
        #: timeout runs from here.
        self.opened = created
        #: Position among the partition's batches, to keep retries in order.
        self.order = order
        self.count = 0
        self.data: bytes | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        #: Produce requests this batch was sent in so far.
        self.attempts = 0
        #: Why its latest attempt failed, for the delivery timeout's error.
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch {self.topic}/{self.partition} #{self.order} "
            f"records={self.count or len(self.values)} seq={self.base_sequence}>"
        )

    def append(
        self,
        key: Buffer | None,
        values: Sequence[Buffer | None],
        headers: Any,
        timestamp: int,
        size: int,
        d: Any,
        record: bool,
    ) -> None:
        """Append one send's *values*, each with *key*, *headers* and *timestamp*.

        *size* is their estimated share of the batch; *d* waits for them, as a
        ``send`` (*record*: one record) or a ``send_messages`` (any number).
        """
        if headers or self.headers is not None:
            if len(values) == 1:
                self.add_headers(headers)
            else:
                self.headers.extend([()] * len(values))  # type: ignore[union-attr]
        if record:
            self.plain = False
            self.record_waiters.append(d)
            self.record_indexes.append(len(self.values))
            self.add_messages(key, values, timestamp, size, None)
            if untrack is not None:
                untrack(d)  # until the batch settles: see ._waiters
        else:
            self.add_messages(key, values, timestamp, size, d)

    def add_records(
        self,
        keys: Sequence[Buffer | None] | None,
        values: Sequence[Buffer | None],
        headers: Sequence[Any] | None,
        timestamps: Sequence[int],
        size: int,
        d: Any,
    ) -> None:
        """Append records each with its own key and headers (``send_records``); *d*
        waits for them all, as a ``send_messages`` call's."""
        n = len(values)
        first = len(self.values)
        if keys is not None:
            if self.keys is None:
                self.keys = [None] * first
            self.keys.extend(keys)
        elif self.keys is not None:
            self.keys.extend([None] * n)
        if headers is not None:
            if self.headers is None:
                self.headers = [()] * first
            self.headers.extend(headers)
        elif self.headers is not None:
            self.headers.extend([()] * n)
        self.plain = False
        self.values.extend(values)
        self.timestamps.extend(timestamps)
        self.size += size
        self.add_waiter(d, first)
        if untrack is not None:
            untrack(d)  # until the batch settles: see ._waiters

    def add_messages(
        self, key: Buffer | None, values: Sequence[Buffer | None], timestamp: int, size: int, d: Any
    ) -> None:
        """Append a ``send_messages`` call's values (no headers): the hot path, kept lean.

        *d* (None: a ``send`` record, whose waiter is kept apart) waits for them.
        """
        n = len(values)
        if key is not None or self.keys is not None:
            self.add_keys(key, n)
        mine = self.values
        first = len(mine)
        if n == 1:
            mine.append(values[0])
            self.timestamps.append(timestamp)
        else:
            self.plain = False
            mine.extend(values)
            self.timestamps.extend([timestamp] * n)
        self.size += size
        if d is None:
            return
        waiters = self.waiters
        if self.firsts is None and first == len(waiters) and waiters:
            waiters.append(d)  # add_waiter()'s common case, inlined
        else:
            self.add_waiter(d, first)
        if untrack is not None:
            untrack(d)  # until the batch settles: see ._waiters

    def add_keys(self, key: Buffer | None, n: int) -> None:
        """Record *n* more keys (all *key*) for the values being appended."""
        keys = self.keys
        if keys is None:
            if key is None:
                return
            keys = self.keys = [None] * len(self.values)
            self.plain = False
        keys.extend([key] * n)

    def add_waiter(self, d: Any, first: int) -> None:
        """Add a ``send_messages`` Deferred whose first message is at index *first*."""
        if not self.waiters:
            self.waiters = []
        firsts = self.firsts
        if firsts is None:
            if first == len(self.waiters):
                self.waiters.append(d)
                return
            firsts = self.firsts = list(range(len(self.waiters)))
            self.plain = False
        firsts.append(first)
        self.waiters.append(d)

    def add_headers(self, headers: Any) -> None:
        """Record the headers of the one value being appended."""
        if self.headers is None:
            if not headers:
                return
            self.headers = [()] * len(self.values)
            self.plain = False
        self.headers.append(headers)

    def encode(
        self,
        codec: int,
        producer_id: int,
        producer_epoch: int,
        sequence: int,
        transactional: bool = False,
        compression_level: int | None = None,
    ) -> None:
        """Build the record batch (done once; the record lists are then released)."""
        self.count = len(self.values)
        self.producer_id, self.producer_epoch, self.base_sequence = (
            producer_id,
            producer_epoch,
            sequence,
        )
        self.data = build_batch(
            self.values,
            self.keys,
            headers=self.headers,
            timestamps=self.timestamps,
            codec=codec,
            compression_level=compression_level,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=sequence,
            is_transactional=transactional,
        )
        self.values = self.keys = self.headers = None  # type: ignore[assignment]
        if not self.record_waiters:
            self.timestamps = None  # type: ignore[assignment]

    def resequence(self, producer_id: int, producer_epoch: int, sequence: int) -> None:
        """Give the encoded batch new producer fields (an epoch bump restarts sequences)."""
        assert self.data is not None
        buf = bytearray(self.data)
        _PRODUCER_FIELDS.pack_into(buf, _PRODUCER_OFFSET, producer_id, producer_epoch, sequence)
        _CRC.pack_into(buf, _CRC_OFFSET, crc32c(memoryview(buf)[_CRC_START:]))
        self.data = bytes(buf)
        self.producer_id, self.producer_epoch, self.base_sequence = (
            producer_id,
            producer_epoch,
            sequence,
        )

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.count - 1) % SEQUENCE_MODULUS

    def succeed(self, base_offset: int, log_append_time: int, shared: bool = False) -> None:
        """Fire every waiting send: *base_offset* -1 (unknown) gives offsets -1.

        A ``send_messages`` call gets its first message's offset or, *shared*
        (afkak 21's batch mode), the batch's: afkak 21 sent a batch as one
        request and fired each of its calls with the partition's response.
        """
        topic, partition = self.topic, self.partition
        waiters = self.waiters
        if waiters and (shared or base_offset < 0):
            response = _new_tuple(ProduceResponse, (topic, partition, 0, max(base_offset, -1)))
            for i in to_fire(waiters):
                fire(waiters[i], response)
        elif waiters:
            starts = range(len(waiters)) if self.firsts is None else self.firsts
            # tuple.__new__ skips the named tuple's Python-level constructor.
            for i in to_fire(waiters):
                o = base_offset + starts[i]
                fire(waiters[i], _new_tuple(ProduceResponse, (topic, partition, 0, o)))
        if self.record_waiters:
            self._fire_records(base_offset, log_append_time)

    def _fire_records(self, base_offset: int, log_append_time: int) -> None:
        """Fire the waiting ``send`` calls: offset -1 if *base_offset* is, the record's
        timestamp unless *log_append_time* (the broker's) is given."""
        topic, partition, stamps = self.topic, self.partition, self.timestamps
        waiters, indexes = self.record_waiters, self.record_indexes
        if compiled_fire_records is not None and not Deferred.debug:
            compiled_fire_records(
                waiters, indexes, stamps, topic, partition, base_offset, log_append_time
            )
            return
        for i in to_fire(waiters):
            index = indexes[i]
            metadata = record_metadata(
                topic,
                partition,
                base_offset + index if base_offset >= 0 else -1,
                stamps[index] if log_append_time < 0 else log_append_time,
            )
            if untrack is not None:
                # Immutable, of a str and ints: never part of a cycle.  Kept by the
                # application by the thousand (gathered), it would only feed the
                # cyclic GC's full collections, which then scan the whole heap.
                untrack(metadata)
            fire(waiters[i], metadata)

    def succeed_unacknowledged(self) -> None:
        """Fire every waiting send of an ``acks=0`` batch: ``None``, or offsets -1."""
        waiters = self.waiters
        if waiters:
            for i in to_fire(waiters):
                waiters[i].callback(None)
        if self.record_waiters:
            self._fire_records(-1, -1)

    def fail(self, failure: Failure) -> None:
        if self.waiters:
            fail_all(self.waiters, failure)
        fail_all(self.record_waiters, failure)
