"""One fake partition's log: record batches at assigned offsets, and producer state.

Produced v2 batches are stored as the bytes the client sent, with the
broker-owned header fields rewritten: the base offset and the partition leader
epoch (neither is covered by the CRC, which starts at the attributes).  There
is no replication lag, so the high watermark is the log end offset.  The last
stable offset is the first offset of the oldest open transaction (the high
watermark when none is open); aborted transactions are indexed for
``read_committed`` fetches, as Kafka's ``.txnindex``.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections import deque

import attrs

from afkak._broker_errors import InvalidProducerEpoch, OutOfOrderSequenceNumber
from afkak.records import ControlType, Record, RecordBatch, build_control_batch, read_batches

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LEADER_EPOCH = struct.Struct(">i")
_MAX_SEQUENCE = 2**31 - 1
_PRODUCER_BATCHES_KEPT = 5  # as Kafka: the last five batches of a producer are deduplicated


@attrs.frozen
class StoredBatch:
    """A batch in the log: its offsets and its bytes (offset already assigned)."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@attrs.frozen
class _ProducerBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int


@attrs.define
class _ProducerState:
    epoch: int
    batches: deque[_ProducerBatch] = attrs.field(
        factory=lambda: deque(maxlen=_PRODUCER_BATCHES_KEPT)
    )
    last_timestamp: int = -1
    coordinator_epoch: int = -1


@attrs.frozen
class ActiveProducer:
    """A producer as DescribeProducers reports it for this partition."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int


class PartitionLog:
    """The batches of one partition, from its log start offset to its end."""

    def __init__(self) -> None:
        self.batches: list[StoredBatch] = []
        self._base_offsets: list[int] = []
        self.log_start_offset = 0
        self.high_watermark = 0
        self._producers: dict[int, _ProducerState] = {}
        #: Producer id -> first offset of its open transaction in this partition.
        self.open_transactions: dict[int, int] = {}
        #: (producer id, first offset, marker offset) of each aborted transaction.
        self.aborted_transactions: list[tuple[int, int, int]] = []

    @property
    def last_stable_offset(self) -> int:
        return min(self.open_transactions.values(), default=self.high_watermark)

    def write_marker(
        self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0
    ) -> int:
        """Write a COMMIT or ABORT marker of *producer_id*'s transaction; its offset.

        The producer's epoch becomes *epoch* (a marker of a bumped epoch
        fences older batches); an aborted transaction enters the index.
        """
        data = build_control_batch(
            ControlType.COMMIT if commit else ControlType.ABORT,
            producer_id=producer_id,
            producer_epoch=epoch,
            coordinator_epoch=coordinator_epoch,
        )
        (batch,) = read_batches(data)
        state = self._producers.get(producer_id)
        if state is None or state.epoch < epoch:
            state = self._producers[producer_id] = _ProducerState(epoch)
        state.coordinator_epoch = coordinator_epoch
        base = self.high_watermark
        stored = _OFFSET_AND_LENGTH.pack(base, len(data) - 12) + _LEADER_EPOCH.pack(-1)
        self.batches.append(StoredBatch(base, base, batch.max_timestamp, stored + data[16:]))
        self._base_offsets.append(base)
        self.high_watermark = base + 1
        first = self.open_transactions.pop(producer_id, None)
        if first is not None and not commit:
            self.aborted_transactions.append((producer_id, first, base))
        return base

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping [start, end)."""
        return [
            (pid, first)
            for pid, first, last in self.aborted_transactions
            if last >= start and first < end
        ]

    def append(self, batch: RecordBatch, data: bytes, leader_epoch: int) -> int:
        """Append one validated v2 batch; return its base offset.

        An idempotent producer's duplicate of one of its last five batches is
        not appended again: the original's base offset is returned.  Raises
        :class:`OutOfOrderSequenceNumber` or :class:`InvalidProducerEpoch` as
        Kafka does.
        """
        if batch.producer_id >= 0:
            duplicate = self._check_sequence(batch)
            if duplicate is not None:
                return duplicate
        base = self.high_watermark
        last = base + batch.last_offset - batch.base_offset
        stored = _OFFSET_AND_LENGTH.pack(base, len(data) - 12) + _LEADER_EPOCH.pack(leader_epoch)
        self.batches.append(StoredBatch(base, last, batch.max_timestamp, stored + data[16:]))
        self._base_offsets.append(base)
        self.high_watermark = last + 1
        if batch.is_transactional:
            self.open_transactions.setdefault(batch.producer_id, base)
        if batch.producer_id >= 0:
            state = self._producers[batch.producer_id]
            state.batches.append(_ProducerBatch(batch.base_sequence, _last_sequence(batch), base))
            state.last_timestamp = batch.max_timestamp
        return base

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer this partition keeps state for (DescribeProducers)."""
        return [
            ActiveProducer(
                pid,
                state.epoch,
                state.batches[-1].last_sequence if state.batches else -1,
                state.last_timestamp,
                state.coordinator_epoch,
                self.open_transactions.get(pid, -1),
            )
            for pid, state in sorted(self._producers.items())
        ]

    def _check_sequence(self, batch: RecordBatch) -> int | None:
        """Validate an idempotent batch's epoch and sequence; the duplicate's offset if any."""
        state = self._producers.get(batch.producer_id)
        first = batch.base_sequence
        if state is None or batch.producer_epoch > state.epoch:
            # A new producer, or a new epoch, starts anywhere (Kafka accepts
            # an unknown producer's first sequence); its state starts here.
            if state is not None and first != 0:
                raise OutOfOrderSequenceNumber(
                    f"new epoch {batch.producer_epoch} must start at sequence 0, not {first}"
                )
            self._producers[batch.producer_id] = _ProducerState(batch.producer_epoch)
            return None
        if batch.producer_epoch < state.epoch:
            raise InvalidProducerEpoch(
                f"epoch {batch.producer_epoch} is older than the current {state.epoch}"
            )
        last = _last_sequence(batch)
        for seen in state.batches:
            if seen.first_sequence == first and seen.last_sequence == last:
                return seen.base_offset
        if state.batches:
            expected = (state.batches[-1].last_sequence + 1) % (_MAX_SEQUENCE + 1)
            if first != expected:
                raise OutOfOrderSequenceNumber(f"expected sequence {expected}, got {first}")
        return None

    def batch_index(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the first one after it)."""
        index = bisect_right(self._base_offsets, offset) - 1
        if index < 0:
            return 0
        if self.batches[index].last_offset < offset:
            return index + 1
        return index

    def read(
        self, offset: int, max_bytes: int, min_one_batch: bool, upper: int | None = None
    ) -> bytes:
        """Log bytes from the batch holding ``offset``, cut at ``max_bytes``.

        With *upper* (``read_committed``: the last stable offset), batches
        from that offset on are left out.

        As Kafka's log reads, the cut may fall inside a batch (the client drops
        the partial batch), and with ``min_one_batch`` the first batch is
        returned whole even when it is larger than ``max_bytes``.
        """
        out: list[bytes] = []
        left = max_bytes
        for stored in self.batches[self.batch_index(offset) :]:
            if upper is not None and stored.base_offset >= upper:
                break
            size = len(stored.data)
            if size > left:
                if min_one_batch and not out:
                    out.append(stored.data)
                elif left > 0:
                    out.append(stored.data[:left])
                break
            out.append(stored.data)
            left -= size
        return b"".join(out)

    def records(self) -> list[Record]:
        """Every record in the log, decoded."""
        return [
            record
            for stored in self.batches
            for batch in read_batches(stored.data)
            for record in batch.records()
            if record.offset >= self.log_start_offset
        ]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``timestamp``."""
        for stored in self.batches[self.batch_index(self.log_start_offset) :]:
            if stored.max_timestamp < timestamp:
                continue
            for batch in read_batches(stored.data):
                for record in batch.records(self.log_start_offset):
                    if record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the log's largest timestamp."""
        best: tuple[int, int] | None = None
        for record in self.records():
            if best is None or record.timestamp > best[1]:
                best = (record.offset, record.timestamp)
        return best

    def truncate(self, offset: int) -> None:
        """Drop the batches from the one holding *offset* on (a replica lacking them led).

        The log end moves back to that batch's base offset (the records from
        there on are lost, as in an unclean leader election).
        """
        index = self.batch_index(offset)
        if index < len(self.batches):
            self.high_watermark = max(self.batches[index].base_offset, self.log_start_offset)
        del self.batches[index:]
        del self._base_offsets[index:]
        self.open_transactions = {
            pid: first for pid, first in self.open_transactions.items() if first < offset
        }

    def epoch_starts(self) -> list[tuple[int, int]]:
        """(leader epoch, first offset) of each epoch with records, as Kafka's epoch cache."""
        starts: list[tuple[int, int]] = []
        for stored in self.batches:
            (epoch,) = _LEADER_EPOCH.unpack_from(stored.data, 12)
            if epoch >= 0 and (not starts or epoch > starts[-1][0]):
                starts.append((epoch, stored.base_offset))
        return starts

    def delete_before(self, offset: int) -> None:
        """Advance the log start offset (as DeleteRecords does) and drop whole batches below it."""
        self.log_start_offset = max(self.log_start_offset, min(offset, self.high_watermark))
        keep = self.batch_index(self.log_start_offset)
        del self.batches[:keep]
        del self._base_offsets[:keep]


def _last_sequence(batch: RecordBatch) -> int:
    return (batch.base_sequence + batch.last_offset - batch.base_offset) % (_MAX_SEQUENCE + 1)
