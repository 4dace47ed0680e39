"""Per-partition producer state: the batch being filled, batches waiting to be sent,
requests in flight, back-off, and (with idempotence) the sequence numbers.

Batches leave ``ready`` in order.  A batch being retried is put back in its
place (by ``order``) and is sent alone, once nothing else of the partition is
in flight, so retries cannot reorder records.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from afkak._structs import TopicAndPartition
from afkak.partitioner import (
    DefaultPartitioner,
    HashedPartitioner,
    RoundRobinPartitioner,
    key_partitions,
)

from ._batch import SEQUENCE_MODULUS, ProducerBatch


class PartitionState:
    __slots__ = (
        "topic",
        "partition",
        "key",
        "open",
        "ready",
        "in_flight",
        "retry_at",
        "route_failures",
        "orders",
        "producer_id",
        "producer_epoch",
        "generation",
        "next_sequence",
        "acked_next",
        "bump",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.key = TopicAndPartition(topic, partition)
        #: The batch records are appended to.
        self.open: ProducerBatch | None = None
        #: Sealed batches waiting to be sent (or resent), in order.
        self.ready: deque[ProducerBatch] = deque()
        #: Produce requests in flight carrying a batch of this partition.
        self.in_flight = 0
        #: Reactor time before which nothing is sent (back-off after a failure).
        self.retry_at = 0.0
        #: Consecutive failures to find the partition's leader.
        self.route_failures = 0
        self.orders = 0
        # Idempotence: the (producer id, epoch) of this partition's batches, the
        # sequence of the next new batch, and the one after the last acknowledged.
        self.producer_id = -1
        self.producer_epoch = -1
        #: The producer identity's generation (a count of the ids it was given).
        self.generation = -1
        self.next_sequence = 0
        self.acked_next = 0
        #: The sequences must restart at a new epoch before anything more is sent.
        self.bump = False

    def __repr__(self) -> str:
        return f"<PartitionState {self.topic}/{self.partition} in_flight={self.in_flight}>"

    def new_batch(self, now: float) -> ProducerBatch:
        batch = self.open = ProducerBatch(self, now, self.orders)
        self.orders += 1
        return batch

    def seal(self) -> None:
        """Close the open batch: it waits in ``ready`` for its turn."""
        assert self.open is not None
        self.ready.append(self.open)
        self.open = None

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a batch to retry back in its place among the waiting ones."""
        ready = self.ready
        index = 0
        while index < len(ready) and ready[index].order < batch.order:
            index += 1
        ready.insert(index, batch)

    def restart_sequences(self, producer_id: int, epoch: int, generation: int) -> None:
        """Adopt a new epoch: waiting batches that were sent get sequences from 0 again."""
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.generation = generation
        sequence = 0
        for batch in self.ready:
            if batch.data is None:
                break
            batch.resequence(producer_id, epoch, sequence)
            sequence = (sequence + batch.count) % SEQUENCE_MODULUS
        self.next_sequence = sequence
        self.acked_next = 0
        self.bump = False

    def take_sequence(self, count: int) -> int:
        """The base sequence for a new batch of *count* records."""
        sequence = self.next_sequence
        self.next_sequence = (sequence + count) % SEQUENCE_MODULUS
        return sequence

    def expire(self, before: float) -> list[ProducerBatch]:
        """Remove and return the batches not in flight that were opened before *before*."""
        expired = []
        ready = self.ready
        while ready and ready[0].opened < before:
            expired.append(ready.popleft())
        if self.open is not None and self.open.opened < before and not ready:
            expired.append(self.open)
            self.open = None
        return expired

    def oldest(self) -> float | None:
        """When its oldest batch not in flight was opened (None: it has none)."""
        if self.ready:
            return self.ready[0].opened
        return None if self.open is None else self.open.opened

    def drop_all(self) -> list[ProducerBatch]:
        """Remove and return every batch not in flight."""
        batches = list(self.ready)
        self.ready.clear()
        if self.open is not None:
            batches.append(self.open)
            self.open = None
        return batches


_ONE_PARTITION_IS_THE_ANSWER = (DefaultPartitioner, RoundRobinPartitioner)
#: The ``partition`` methods that place a keyed record by its key's hash alone.
_HASHES_KEYS = (DefaultPartitioner.partition, HashedPartitioner.partition)


class TopicState:
    """A topic the producer writes to: its partitions, partitioner and partition states."""

    __slots__ = (
        "name",
        "partitions",
        "partitioner",
        "choose",
        "hashes",
        "only",
        "parts",
        "sticks",
        "sticky",
    )

    def __init__(self, name: str, partitions: list[int], partitioner: Any) -> None:
        self.name = name
        self.partitioner = partitioner
        #: ``partitioner.partition``, bound once.
        self.choose = partitioner.partition
        self.parts: dict[int, PartitionState] = {}
        #: Whether ``send()`` keeps unkeyed records on :attr:`sticky` while its
        #: batch is open (the default partitioner: Java's KIP-480 placement).
        self.sticks = type(partitioner) is DefaultPartitioner
        #: Whether keyed records can be placed a column at a time (:func:`key_partitions`).
        self.hashes = getattr(type(partitioner), "partition", None) in _HASHES_KEYS
        #: The partition of the last unkeyed ``send()`` the partitioner chose (-1: none).
        self.sticky = -1
        self.repartition(partitions)

    def repartition(self, partitions: list[int]) -> None:
        """Take the topic's partition numbers, as the client's metadata last listed them."""
        self.partitions = partitions
        #: The partition of every send when the partitioner need not be
        #: asked: the default or a round robin over one partition.
        self.only: int | None = (
            partitions[0]
            if len(partitions) == 1 and type(self.partitioner) in _ONE_PARTITION_IS_THE_ANSWER
            else None
        )

    def partition_for(self, key: Any, partition: int | None) -> int | None:
        """Where ``send()`` puts a record: *partition* (checked), the partitioner's
        choice, or None for the accumulator's sticky placement (an unkeyed record
        with the default partitioner).  Raises what the partitioner raises."""
        if partition is not None:
            if partition not in self.partitions:
                raise ValueError(
                    f"topic {self.name} has no partition {partition}"
                    f" (it has {len(self.partitions)})"
                )
            return partition
        if self.only is not None:
            return self.only
        if key is None and self.sticks:
            return None
        return self.choose(key, self.partitions)  # type: ignore[no-any-return]

    def pick(self, key: Any) -> int:
        """The partitioner's choice for a ``send_messages`` call (one per call)."""
        if self.only is not None:
            return self.only
        return self.choose(key, self.partitions)  # type: ignore[no-any-return]

    def partition_all(self, keys: Any, partitions: Any, n: int) -> list[int]:
        """Each of *n* records' partition (``send_records``): its given partition
        (checked), else by its key as ``send()`` places it; unkeyed records go
        together to one partition, the partitioner's choice for the call."""
        if partitions is None and keys is not None and self.hashes:
            return key_partitions(keys, self.partitions, lambda: self.pick(None))
        unkeyed: int | None = None
        placed: list[int] = []
        for i in range(n):
            partition = None if partitions is None else partitions[i]
            key = None if keys is None else keys[i]
            if partition is None and key is None:
                if unkeyed is None:
                    unkeyed = self.pick(None)
                partition = unkeyed
            elif partition is None:
                partition = self.choose(key, self.partitions)
            elif partition not in self.partitions:
                self.partition_for(key, partition)  # raises
            placed.append(partition)
        return placed

    def part(self, partition: int) -> PartitionState:
        state = self.parts.get(partition)
        if state is None:
            state = self.parts[partition] = PartitionState(self.name, partition)
        return state
