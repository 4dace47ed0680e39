"""The fake cluster's transaction coordinator: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit and EndTxn, as Kafka's coordinator answers them.

Transactions v2 (KIP-890) when the cluster's ``features.finalized`` has
``transaction.version`` 2: a transactional Produce v12+ adds its partition, a
TxnOffsetCommit v5 its group, and EndTxn v5 bumps the epoch every transaction.

Each transactional id has one :class:`FakeTransaction`: its producer id and
epoch, the partitions and groups of the ongoing transaction, and the offsets
TxnOffsetCommit staged.  EndTxn writes the COMMIT or ABORT markers and commits
or drops the staged offsets: at once, or after ``transactions.completion_delay``
seconds on the cluster's reactor, while the transaction is PrepareCommit /
PrepareAbort and its producer's requests that would change it are answered
CONCURRENT_TRANSACTIONS, as Kafka's coordinator answers them.  A new
InitProducerId, or the transaction timeout running out on the cluster's reactor,
aborts the ongoing transaction and bumps the epoch, which fences the previous
producer.  Tests may set ``cluster.transactions.denied``
(transactional ids refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    ConcurrentTransactions,
    GroupAuthorizationFailed,
    InvalidProducerEpoch,
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
from afkak.testing._lookup import UNKNOWN_TOPIC_OR_PARTITION, code, find_partition, find_topic
from afkak.testing._state import CommittedOffset
from afkak.testing._txn_state import FakeTransaction, TransactionState

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext

MAX_TRANSACTION_TIMEOUT_MS = 900_000  # Kafka's transaction.max.timeout.ms
#: AddPartitionsToTxn v4+ is broker-to-broker (KIP-890); clients use v3 at most.
_CLIENT_ADD_PARTITIONS_MAX = 3


def _coordinator_error(ctx: RequestContext, tid: str) -> int:
    return 0 if ctx.state.coordinator(tid) == ctx.node else code(NotCoordinator)


def _transaction(
    ctx: RequestContext, tid: str, pid: int, epoch: int
) -> tuple[FakeTransaction | None, int]:
    """The transaction a coordinator request names, or the error Kafka answers."""
    error = _coordinator_error(ctx, tid)
    if error:
        return None, error
    return ctx.state.transactions.current(tid, pid, epoch)


def handle_init_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest, version: int
) -> Any:
    cluster = ctx.state
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
    if not error and txn is not None and state.busy(txn):
        error = code(ConcurrentTransactions)
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
        if txn.state == TransactionState.ONGOING:
            state.end(txn, commit=False)
        txn.state = TransactionState.EMPTY
        txn.timeout_ms = request.transaction_timeout_ms
    return R(producer_id=txn.producer_id, producer_epoch=txn.epoch)


def handle_add_partitions_to_txn(
    ctx: RequestContext, request: AddPartitionsToTxnRequest, version: int
) -> Any:
    R = AddPartitionsToTxnResponse
    if version > _CLIENT_ADD_PARTITIONS_MAX:
        return R(error_code=code(OperationNotAttempted))
    cluster = ctx.state
    txn, error = _transaction(
        ctx,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
    )
    if not error and txn is not None and cluster.transactions.busy(txn):
        error = code(ConcurrentTransactions)
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
    ctx: RequestContext, request: AddOffsetsToTxnRequest, version: int
) -> Any:
    state = ctx.state.transactions
    txn, error = _transaction(
        ctx, request.transactional_id, request.producer_id, request.producer_epoch
    )
    if not error and txn is not None and state.busy(txn):
        error = code(ConcurrentTransactions)
    if not error and not request.group_id:
        error = code(GroupAuthorizationFailed)
    if not error and txn is not None:
        state._begin(txn)
        txn.groups.add(request.group_id)
    return AddOffsetsToTxnResponse(error_code=error)


def handle_txn_offset_commit(
    ctx: RequestContext, request: TxnOffsetCommitRequest, version: int
) -> Any:
    cluster = ctx.state
    error = 0 if cluster.coordinator(request.group_id) == ctx.node else code(NotCoordinator)
    txn = None
    if not error:
        txn, error = cluster.transactions.current(
            request.transactional_id, request.producer_id, request.producer_epoch
        )
    if not error and txn is not None and request.group_id not in txn.groups:
        if version >= 5 and cluster.transactions.busy(txn):
            error = code(ConcurrentTransactions)
        elif version >= 5:  # transactions v2 (KIP-890): the commit adds the group
            cluster.transactions._begin(txn)
            txn.groups.add(request.group_id)
        else:
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


def handle_end_txn(ctx: RequestContext, request: EndTxnRequest, version: int) -> Any:
    """End the transaction; from v5 (transactions v2, KIP-890) bump the epoch after it
    and answer the new one (a retry of that EndTxn, at the old epoch, gets it again)."""
    state = ctx.state.transactions
    tid, pid, epoch = request.transactional_id, request.producer_id, request.producer_epoch
    txn, error = _transaction(ctx, tid, pid, epoch)
    done = (
        TransactionState.COMPLETE_COMMIT if request.committed else TransactionState.COMPLETE_ABORT
    )
    ended = state.transactions.get(tid)
    if (
        version >= 5
        and error == code(ProducerFenced)
        and ended is not None
        and (ended.last_producer_id, ended.last_epoch, ended.state) == (pid, epoch, done)
    ):
        return EndTxnResponse(producer_id=ended.producer_id, producer_epoch=ended.epoch)
    if not error and txn is not None and state.busy(txn):
        error = code(ConcurrentTransactions)
    if not error and txn is not None:
        if txn.state == TransactionState.ONGOING:
            state.end(txn, request.committed, state.completion_delay)
        elif txn.state == TransactionState.EMPTY and not request.committed:
            txn.state = done  # aborting an empty transaction is allowed
        elif txn.state != done:
            error = code(InvalidTxnState)
        if not error and version >= 5:
            txn.last_producer_id, txn.last_epoch = txn.producer_id, txn.epoch
            state._bump(txn)
            return EndTxnResponse(producer_id=txn.producer_id, producer_epoch=txn.epoch)
    return EndTxnResponse(error_code=error)


TXN_APIS: dict[int, Callable[[RequestContext, Any, int], Any]] = {
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
TXN_ERROR_RESPONSES: dict[int, Callable[[Any, int, int], Any]] = {
    24: _add_partitions_error,
    28: _txn_offset_commit_error,
}
