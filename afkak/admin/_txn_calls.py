"""The operator's transaction calls and their results: DescribeProducers (61, at each
partition's leader), ListTransactions (66, at every broker), DescribeTransactions (65, at
each transactional id's coordinator) and WriteTxnMarkers (27, an ABORT marker written at
a partition's leader, as ``kafka-transactions abort`` does)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError, TopicAndPartition
from afkak.protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)

from ._types import ItemResult, _error_or_none, left_out

#: The coordinator states in which a transaction still holds its partitions open.
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


@attrs.frozen
class ProducerState:
    """One producer a partition's leader keeps state for (DescribeProducers).

    ``current_txn_start_offset`` is the first offset of its open transaction in
    that partition, -1 when it has none; ``last_timestamp`` is the largest
    timestamp of its last batch (ms).
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int = -1
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_start_offset: int = -1


@attrs.frozen
class PartitionProducers:
    """The producers of one partition, or the error its leader answered."""

    active_producers: tuple[ProducerState, ...] = ()
    error: BrokerResponseError | None = None


@attrs.frozen
class TransactionListing:
    """One transactional id a coordinator knows (ListTransactions)."""

    transactional_id: str
    producer_id: int
    state: str


@attrs.frozen
class TransactionDescription:
    """A transactional id's coordinator state (DescribeTransactions): its producer,
    the transaction's state (Kafka's names: ``Empty``, ``Ongoing``, ``CompleteCommit``...),
    its start time (ms, -1 when none is open) and the partitions it holds."""

    transactional_id: str
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = -1
    start_time_ms: int = -1
    partitions: tuple[TopicAndPartition, ...] = ()
    coordinator_id: int = -1
    error: BrokerResponseError | None = None


@attrs.frozen
class AbortTransactionSpec:
    """What ``abort_transaction`` needs to write an ABORT marker into one partition:
    the open transaction's producer id and epoch, and the coordinator epoch
    (from :class:`ProducerState`)."""

    partition: TopicAndPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    @classmethod
    def of(cls, partition: TopicAndPartition, producer: ProducerState) -> AbortTransactionSpec:
        return cls(
            partition, producer.producer_id, producer.producer_epoch, producer.coordinator_epoch
        )


@attrs.frozen
class HangingTransaction:
    """An open transaction in a partition that its coordinator no longer holds there
    (what ``kafka-transactions find-hanging`` reports); abort it with
    :meth:`~afkak.admin.KafkaAdminClient.abort_transaction`."""

    partition: TopicAndPartition
    producer: ProducerState
    transactional_id: str | None

    @property
    def abort_spec(self) -> AbortTransactionSpec:
        return AbortTransactionSpec.of(self.partition, self.producer)


class DescribeProducersCall(VersionedCall):
    """The active producers of each partition (at its leader, or at one named broker)."""

    request_class = DescribeProducersRequest

    def __init__(self, partitions: Iterable[TopicAndPartition]) -> None:
        self.partitions = list(partitions)

    def build(self, version: int) -> Any:
        R = DescribeProducersRequest
        topics: dict[str, list[int]] = {}
        for tp in self.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        return R(topics=[R.TopicRequest(name, parts) for name, parts in topics.items()])

    def failed(self, error: Any) -> dict[TopicAndPartition, PartitionProducers]:
        return {tp: PartitionProducers(error=error) for tp in self.partitions}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the partition")),
                **{
                    TopicAndPartition(t.name, p.partition_index): PartitionProducers(
                        tuple(
                            ProducerState(
                                s.producer_id,
                                s.producer_epoch,
                                s.last_sequence,
                                s.last_timestamp,
                                s.coordinator_epoch,
                                s.current_txn_start_offset,
                            )
                            for s in p.active_producers
                        ),
                        _error_or_none(p.error_code, p.error_message),
                    )
                    for t in response.topics
                    for p in t.partitions
                },
            }
        ]


class ListTransactionsCall(VersionedCall):
    """The transactional ids one broker coordinates, filtered by state, producer id,
    age (v1+) and id pattern (v2+)."""

    request_class = ListTransactionsRequest

    def __init__(
        self,
        states: Sequence[str],
        producer_ids: Sequence[int],
        duration_ms: int,
        pattern: str | None,
    ) -> None:
        self.states = list(states)
        self.producer_ids = list(producer_ids)
        self.duration_ms = duration_ms
        self.pattern = pattern
        # Filters an older broker would silently ignore need the version that has them.
        if pattern is not None:
            self.min_version = 2
        elif duration_ms >= 0:
            self.min_version = 1

    def build(self, version: int) -> Any:
        return ListTransactionsRequest(
            state_filters=self.states,
            producer_id_filters=self.producer_ids,
            duration_filter=self.duration_ms,
            transactional_id_pattern=self.pattern,
        )

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(response.error_code, "ListTransactions")
        return [
            TransactionListing(s.transactional_id, s.producer_id, s.transaction_state)
            for s in response.transaction_states
        ]


class DescribeTransactionsCall(VersionedCall):
    """The state of one transactional id, at its coordinator."""

    request_class = DescribeTransactionsRequest

    def __init__(self, transactional_id: str, coordinator_id: int) -> None:
        self.transactional_id = transactional_id
        self.coordinator_id = coordinator_id

    def build(self, version: int) -> Any:
        return DescribeTransactionsRequest(transactional_ids=[self.transactional_id])

    def parse(self, response: Any) -> list[Any]:
        for s in response.transaction_states:
            if s.transactional_id != self.transactional_id:
                continue
            partitions = tuple(
                TopicAndPartition(t.topic, p) for t in s.topics for p in sorted(t.partitions)
            )
            return [
                TransactionDescription(
                    s.transactional_id,
                    s.transaction_state,
                    s.producer_id,
                    s.producer_epoch,
                    s.transaction_timeout_ms,
                    s.transaction_start_time_ms,
                    tuple(sorted(partitions)),
                    self.coordinator_id,
                    _error_or_none(s.error_code),
                )
            ]
        return [TransactionDescription(self.transactional_id, error=left_out("the id"))]


class AbortMarkerCall(VersionedCall):
    """WriteTxnMarkers with one ABORT marker per partition, at the partition's leader."""

    request_class = WriteTxnMarkersRequest

    def __init__(self, specs: dict[TopicAndPartition, AbortTransactionSpec]) -> None:
        self.specs = specs

    def build(self, version: int) -> Any:
        R = WriteTxnMarkersRequest
        return R(
            markers=[
                R.WritableTxnMarker(
                    producer_id=s.producer_id,
                    producer_epoch=s.producer_epoch,
                    transaction_result=False,
                    topics=[R.WritableTxnMarkerTopic(tp.topic, [tp.partition])],
                    coordinator_epoch=s.coordinator_epoch,
                )
                for tp, s in self.specs.items()
            ]
        )

    def failed(self, error: Any) -> dict[TopicAndPartition, ItemResult]:
        return {tp: ItemResult(error) for tp in self.specs}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the partition")),
                **{
                    TopicAndPartition(t.name, p.partition_index): ItemResult(
                        _error_or_none(p.error_code)
                    )
                    for m in response.markers
                    for t in m.topics
                    for p in t.partitions
                },
            }
        ]


def hanging(
    candidates: Sequence[tuple[TopicAndPartition, ProducerState]],
    transactional_ids: dict[int, str],
    descriptions: dict[str, TransactionDescription],
) -> list[HangingTransaction]:
    """The candidates (old open transactions in partitions) their coordinator does not
    hold open in that partition under that producer id: hanging, as Kafka's
    ``find-hanging`` decides."""
    found = []
    for tp, producer in candidates:
        tid = transactional_ids.get(producer.producer_id)
        d = descriptions.get(tid) if tid is not None else None
        held = (
            d is not None
            and d.error is None
            and d.producer_id == producer.producer_id
            and d.state in OPEN_STATES
            and tp in d.partitions
        )
        if not held:
            found.append(HangingTransaction(tp, producer, tid))
    return found
