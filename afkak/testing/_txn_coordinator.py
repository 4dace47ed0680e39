"""The fake cluster's transaction coordinator: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit and EndTxn, as Kafka's coordinator answers them.

Each transactional id has one :class:`FakeTransaction`: its producer id and
epoch, the partitions and groups of the ongoing transaction, and the offsets
TxnOffsetCommit staged.  EndTxn writes the COMMIT or ABORT markers at once
(there is no PrepareCommit phase to observe) and commits or drops the staged
offsets.  A new InitProducerId, or the transaction timeout running out on the
cluster's reactor, aborts the ongoing transaction and bumps the epoch, which
fences the previous producer.  Tests may set ``cluster.transactions.denied``
(transactional ids refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from afkak._broker_errors import (
    GroupAuthorizationFailed,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    NotCoordinator,
    OperationNotAttempted,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
)
from afkak.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from afkak.records import RecordBatch
from afkak.testing._lookup import UNKNOWN_TOPIC_OR_PARTITION, code, find_partition, find_topic
from afkak.testing._state import CommittedOffset

if TYPE_CHECKING:
    from afkak.testing._cluster import FakeKafkaCluster
    from afkak.testing._handlers import ConnectionHandler
    from afkak.testing._state import FakePartition

MAX_TRANSACTION_TIMEOUT_MS = 900_000  # Kafka's transaction.max.timeout.ms
MAX_EPOCH = 2**15 - 1
#: Transaction states (Kafka's TransactionState names).
EMPTY, ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT = (
    "Empty",
    "Ongoing",
    "CompleteCommit",
    "CompleteAbort",
)
#: AddPartitionsToTxn v4+ is broker-to-broker (KIP-890); clients use v3 at most.
_CLIENT_ADD_PARTITIONS_MAX = 3


@attrs.define(eq=False)
class FakeTransaction:
    """One transactional id's producer and its ongoing transaction."""

    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: set[tuple[str, int]] = attrs.field(factory=set)
    groups: set[str] = attrs.field(factory=set)
    #: group -> {(topic, partition): offset} staged by TxnOffsetCommit.
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = attrs.field(factory=dict)
    timer: Any = attrs.field(default=None, repr=False)


class TransactionCoordinatorState:
    """Every transactional id of a fake cluster, and the transaction timeouts."""

    def __init__(self, cluster: FakeKafkaCluster) -> None:
        self._cluster = cluster
        self.transactions: dict[str, FakeTransaction] = {}
        #: Transactional ids refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
        self.denied: set[str] = set()
        #: How many transactions were committed / aborted (for tests).
        self.committed = 0
        self.aborted = 0

    def check_produce(self, batch: RecordBatch, part: FakePartition) -> tuple[int, str | None]:
        """The error for a transactional batch: its producer must have added the partition."""
        for txn in self.transactions.values():
            if txn.producer_id != batch.producer_id:
                continue
            if batch.producer_epoch < txn.epoch:
                return code(ProducerFenced), "a newer producer epoch exists"
            if txn.state == ONGOING and (part.topic, part.index) in txn.partitions:
                return 0, None
        return code(InvalidTxnState), "the partition is not in an ongoing transaction"

    def staged(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction staged an offset of *group* for the partition."""
        return any(
            (topic, partition) in txn.offsets.get(group, ())
            for txn in self.transactions.values()
            if txn.state == ONGOING
        )

    def end(self, txn: FakeTransaction, commit: bool) -> None:
        """Complete *txn*: markers in its partitions, its staged offsets committed or dropped."""
        if txn.timer is not None and txn.timer.active():
            txn.timer.cancel()
        txn.timer = None
        cluster = self._cluster
        for topic, index in sorted(txn.partitions):
            cluster.partition(topic, index).log.write_marker(txn.producer_id, txn.epoch, commit)
        if commit:
            for group, offsets in txn.offsets.items():
                for (topic, index), committed in offsets.items():
                    cluster.commit(
                        group,
                        topic,
                        index,
                        committed.offset,
                        committed.metadata,
                        committed.leader_epoch,
                    )
            self.committed += 1
        else:
            self.aborted += 1
        txn.partitions.clear()
        txn.groups.clear()
        txn.offsets.clear()
        txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        cluster.wake_fetches()

    def _begin(self, txn: FakeTransaction) -> None:
        if txn.state != ONGOING:
            txn.state = ONGOING
            txn.timer = self._cluster.reactor.callLater(
                txn.timeout_ms / 1000.0, self._expire, txn, txn.epoch
            )

    def _expire(self, txn: FakeTransaction, epoch: int) -> None:
        """The transaction timed out: abort it under a bumped epoch, fencing its producer."""
        txn.timer = None
        if txn.state == ONGOING and txn.epoch == epoch:
            self._bump(txn)
            self.end(txn, commit=False)

    def _bump(self, txn: FakeTransaction) -> None:
        if txn.epoch + 1 >= MAX_EPOCH:
            txn.producer_id, txn.epoch = self._cluster.new_producer_id(), 0
        else:
            txn.epoch += 1

    def current(self, tid: str, pid: int, epoch: int) -> tuple[FakeTransaction | None, int]:
        """The transaction of a request from (*pid*, *epoch*), or the error Kafka answers."""
        if tid in self.denied:
            return None, code(TransactionalIdAuthorizationFailed)
        txn = self.transactions.get(tid)
        if txn is None or txn.producer_id != pid:
            return None, code(InvalidProducerIdMapping)
        if epoch < txn.epoch:
            return None, code(ProducerFenced)
        if epoch > txn.epoch:
            return None, code(InvalidProducerEpoch)
        return txn, 0


def _coordinator_error(ctx: ConnectionHandler, tid: str) -> int:
    return 0 if ctx.cluster.coordinator(tid) == ctx.node else code(NotCoordinator)


def _transaction(
    ctx: ConnectionHandler, tid: str, pid: int, epoch: int
) -> tuple[FakeTransaction | None, int]:
    """The transaction a coordinator request names, or the error Kafka answers."""
    error = _coordinator_error(ctx, tid)
    if error:
        return None, error
    return ctx.cluster.transactions.current(tid, pid, epoch)


def handle_init_producer_id(
    ctx: ConnectionHandler, request: InitProducerIdRequest, version: int
) -> Any:
    cluster = ctx.cluster
    state = cluster.transactions
    R = InitProducerIdResponse
    tid = request.transactional_id
    if tid is None:
        # Kafka gives an idempotent (non-transactional) producer a new id every time.
        return R(producer_id=cluster.new_producer_id(), producer_epoch=0)
    error = _coordinator_error(ctx, tid)
    if not error and tid in state.denied:
        error = code(TransactionalIdAuthorizationFailed)
    if not error and not 0 < request.transaction_timeout_ms <= MAX_TRANSACTION_TIMEOUT_MS:
        error = code(InvalidTransactionTimeout)
    txn = state.transactions.get(tid)
    if not error and txn is not None and request.producer_id >= 0:
        if (request.producer_id, request.producer_epoch) != (txn.producer_id, txn.epoch):
            error = code(ProducerFenced if version >= 4 else InvalidProducerEpoch)
    if error:
        return R(error_code=error, producer_id=-1, producer_epoch=-1)
    if txn is None:
        txn = state.transactions[tid] = FakeTransaction(
            tid, cluster.new_producer_id(), 0, request.transaction_timeout_ms
        )
    else:
        # A new session of this id: abort what the old one left open, fence it.
        state._bump(txn)
        if txn.state == ONGOING:
            state.end(txn, commit=False)
        txn.state = EMPTY
        txn.timeout_ms = request.transaction_timeout_ms
    return R(producer_id=txn.producer_id, producer_epoch=txn.epoch)


def handle_add_partitions_to_txn(
    ctx: ConnectionHandler, request: AddPartitionsToTxnRequest, version: int
) -> Any:
    R = AddPartitionsToTxnResponse
    if version > _CLIENT_ADD_PARTITIONS_MAX:
        return R(error_code=code(OperationNotAttempted))
    cluster = ctx.cluster
    txn, error = _transaction(
        ctx,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
    )
    missing = set()
    for t in request.v3_and_below_topics:
        topic, _ = find_topic(cluster, t.name, None, False)
        for index in t.partitions:
            if find_partition(topic, index) is None:
                missing.add((t.name, index))
    if not error and txn is not None and not missing:
        cluster.transactions._begin(txn)
        for t in request.v3_and_below_topics:
            txn.partitions.update((t.name, index) for index in t.partitions)
    results = []
    for t in request.v3_and_below_topics:
        answers = []
        for index in t.partitions:
            if error:
                err = error
            elif missing:
                err = (
                    UNKNOWN_TOPIC_OR_PARTITION
                    if (t.name, index) in missing
                    else code(OperationNotAttempted)
                )
            else:
                err = 0
            answers.append(R.AddPartitionsToTxnPartitionResult(index, err))
        results.append(R.AddPartitionsToTxnTopicResult(t.name, answers))
    return R(results_by_topic_v3_and_below=results)


def handle_add_offsets_to_txn(
    ctx: ConnectionHandler, request: AddOffsetsToTxnRequest, version: int
) -> Any:
    state = ctx.cluster.transactions
    txn, error = _transaction(
        ctx, request.transactional_id, request.producer_id, request.producer_epoch
    )
    if not error and not request.group_id:
        error = code(GroupAuthorizationFailed)
    if not error and txn is not None:
        state._begin(txn)
        txn.groups.add(request.group_id)
    return AddOffsetsToTxnResponse(error_code=error)


def handle_txn_offset_commit(
    ctx: ConnectionHandler, request: TxnOffsetCommitRequest, version: int
) -> Any:
    cluster = ctx.cluster
    error = 0 if cluster.coordinator(request.group_id) == ctx.node else code(NotCoordinator)
    txn = None
    if not error:
        txn, error = cluster.transactions.current(
            request.transactional_id, request.producer_id, request.producer_epoch
        )
    if not error and txn is not None and request.group_id not in txn.groups:
        error = code(InvalidTxnState)
    if not error and version >= 3 and request.member_id:
        # KIP-447: the member and generation are checked as an OffsetCommit's.
        error = (
            cluster.group_coordinator.commit_error(
                request.group_id,
                request.member_id,
                request.group_instance_id,
                request.generation_id,
            )
            or 0
        )
    R = TxnOffsetCommitResponse
    topics = []
    for t in request.topics:
        topic, _ = find_topic(cluster, t.name, None, False)
        answers = []
        for p in t.partitions:
            err = error
            if not err and find_partition(topic, p.partition_index) is None:
                err = UNKNOWN_TOPIC_OR_PARTITION
            if not err and txn is not None:
                txn.offsets.setdefault(request.group_id, {})[t.name, p.partition_index] = (
                    CommittedOffset(
                        p.committed_offset, p.committed_metadata or "", p.committed_leader_epoch
                    )
                )
            answers.append(R.TxnOffsetCommitResponsePartition(p.partition_index, err))
        topics.append(R.TxnOffsetCommitResponseTopic(t.name, answers))
    return R(topics=topics)


def handle_end_txn(ctx: ConnectionHandler, request: EndTxnRequest, version: int) -> Any:
    state = ctx.cluster.transactions
    txn, error = _transaction(
        ctx, request.transactional_id, request.producer_id, request.producer_epoch
    )
    if not error and txn is not None:
        done = COMPLETE_COMMIT if request.committed else COMPLETE_ABORT
        if txn.state == ONGOING:
            state.end(txn, request.committed)
        elif txn.state == EMPTY and not request.committed:
            txn.state = done  # aborting an empty transaction is allowed
        elif txn.state != done:
            error = code(InvalidTxnState)
    return EndTxnResponse(error_code=error)


TXN_APIS: dict[int, Callable[..., Any]] = {
    22: handle_init_producer_id,
    24: handle_add_partitions_to_txn,
    25: handle_add_offsets_to_txn,
    26: handle_end_txn,
    28: handle_txn_offset_commit,
}


def _add_partitions_error(request: Any, version: int, code: int) -> Any:
    R = AddPartitionsToTxnResponse
    if version > _CLIENT_ADD_PARTITIONS_MAX:
        return R(error_code=code)
    return R(
        results_by_topic_v3_and_below=[
            R.AddPartitionsToTxnTopicResult(
                t.name, [R.AddPartitionsToTxnPartitionResult(i, code) for i in t.partitions]
            )
            for t in request.v3_and_below_topics
        ]
    )


def _txn_offset_commit_error(request: Any, version: int, code: int) -> Any:
    R = TxnOffsetCommitResponse
    return R(
        topics=[
            R.TxnOffsetCommitResponseTopic(
                t.name,
                [R.TxnOffsetCommitResponsePartition(p.partition_index, code) for p in t.partitions],
            )
            for t in request.topics
        ]
    )


#: Error responses (``fail_next``) of the APIs whose errors are not top-level.
TXN_ERROR_RESPONSES = {24: _add_partitions_error, 28: _txn_offset_commit_error}
