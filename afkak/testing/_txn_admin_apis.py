"""The operator's transaction APIs the fake cluster serves: DescribeProducers,
ListTransactions, DescribeTransactions, and WriteTxnMarkers as the admin client's
``abort_transaction`` sends it (one ABORT marker into a partition, at its leader).

A test makes a hanging transaction by producing in a transaction and then making the
coordinator forget it (``cluster.state.transactions.forget(tid)``): the partition
keeps the open transaction, as after Kafka's lost or late marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    InvalidProducerEpoch,
    InvalidRequest,
    NotCoordinator,
    TransactionalIdNotFound,
)
from afkak.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from afkak.testing._lookup import (
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_OR_PARTITION,
    code,
    find_partition,
)

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext


def handle_describe_producers(
    ctx: RequestContext, request: DescribeProducersRequest, version: int
) -> Any:
    """Any replica answers (Kafka reads its local log's producer state)."""
    R = DescribeProducersResponse
    topics = []
    for t in request.topics:
        answers = []
        for index in t.partition_indexes:
            part = find_partition(ctx.state.topics.get(t.name), index)
            answer = R.PartitionResponse(partition_index=index)
            if part is None:
                answer.error_code = UNKNOWN_TOPIC_OR_PARTITION
            elif ctx.node not in part.replicas:
                answer.error_code = NOT_LEADER_OR_FOLLOWER
            else:
                answer.active_producers = [
                    R.ProducerState(
                        p.producer_id,
                        p.epoch,
                        p.last_sequence,
                        p.last_timestamp,
                        p.coordinator_epoch,
                        p.txn_start_offset,
                    )
                    for p in part.log.active_producers()
                ]
            answers.append(answer)
        topics.append(R.TopicResponse(t.name, answers))
    return R(topics=topics)


def handle_list_transactions(
    ctx: RequestContext, request: ListTransactionsRequest, version: int
) -> Any:
    """The ids this broker coordinates, through the request's filters."""
    R = ListTransactionsResponse
    cluster = ctx.state
    try:
        pattern = re.compile(request.transactional_id_pattern or "")
    except re.error:
        return R(error_code=code(InvalidRequest))
    now_ms = int(cluster.reactor.seconds() * 1000)
    found = []
    for tid, txn in sorted(cluster.transactions.transactions.items()):
        if cluster.coordinator(tid) != ctx.node:
            continue
        if request.state_filters and txn.state not in request.state_filters:
            continue
        if request.producer_id_filters and txn.producer_id not in request.producer_id_filters:
            continue
        if request.duration_filter >= 0 and (
            txn.started_ms < 0 or now_ms - txn.started_ms < request.duration_filter
        ):
            continue
        if request.transactional_id_pattern and not pattern.search(tid):
            continue
        found.append(R.TransactionState(tid, txn.producer_id, str(txn.state)))
    unknown = [s for s in request.state_filters if s not in KAFKA_STATES]
    return R(unknown_state_filters=unknown, transaction_states=found)


def handle_describe_transactions(
    ctx: RequestContext, request: DescribeTransactionsRequest, version: int
) -> Any:
    R = DescribeTransactionsResponse
    cluster = ctx.state
    states = []
    for tid in request.transactional_ids:
        txn = cluster.transactions.transactions.get(tid)
        if cluster.coordinator(tid) != ctx.node:
            states.append(R.TransactionState(code(NotCoordinator), tid))
        elif txn is None:
            states.append(R.TransactionState(code(TransactionalIdNotFound), tid))
        else:
            topics: dict[str, list[int]] = {}
            for topic, index in sorted(txn.partitions):
                topics.setdefault(topic, []).append(index)
            states.append(
                R.TransactionState(
                    0,
                    tid,
                    str(txn.state),
                    txn.timeout_ms,
                    txn.started_ms,
                    txn.producer_id,
                    txn.epoch,
                    [R.TopicData(name, parts) for name, parts in topics.items()],
                )
            )
    return R(transaction_states=states)


def handle_write_txn_markers(
    ctx: RequestContext, request: WriteTxnMarkersRequest, version: int
) -> Any:
    """Each marker into each named partition this broker leads; an older producer epoch
    than the partition knows is refused, as Kafka does."""
    R = WriteTxnMarkersResponse
    cluster = ctx.state
    results = []
    for m in request.markers:
        topics = []
        for t in m.topics:
            answers = []
            for index in t.partition_indexes:
                part = find_partition(cluster.topics.get(t.name), index)
                error = 0
                if part is None:
                    error = UNKNOWN_TOPIC_OR_PARTITION
                elif part.leader != ctx.node:
                    error = NOT_LEADER_OR_FOLLOWER
                else:
                    known = {p.producer_id: p.epoch for p in part.log.active_producers()}
                    if m.producer_epoch < known.get(m.producer_id, -1):
                        error = code(InvalidProducerEpoch)
                    else:
                        part.log.write_marker(
                            m.producer_id,
                            m.producer_epoch,
                            m.transaction_result,
                            m.coordinator_epoch,
                        )
                answers.append(R.WritableTxnMarkerPartitionResult(index, error))
            topics.append(R.WritableTxnMarkerTopicResult(t.name, answers))
        results.append(R.WritableTxnMarkerResult(m.producer_id, topics))
    if any(m.topics for m in request.markers):
        cluster.wake_fetches()
    return R(markers=results)


#: Kafka's transaction states (ListTransactions reports other state filters as unknown).
KAFKA_STATES = frozenset(
    {
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    }
)

TXN_ADMIN_APIS: dict[int, Callable[[RequestContext, Any, int], Any]] = {
    27: handle_write_txn_markers,
    61: handle_describe_producers,
    65: handle_describe_transactions,
    66: handle_list_transactions,
}


def _write_txn_markers_error(request: Any, version: int, code: int) -> Any:
    R = WriteTxnMarkersResponse
    return R(
        markers=[
            R.WritableTxnMarkerResult(
                m.producer_id,
                [
                    R.WritableTxnMarkerTopicResult(
                        t.name,
                        [R.WritableTxnMarkerPartitionResult(i, code) for i in t.partition_indexes],
                    )
                    for t in m.topics
                ],
            )
            for m in request.markers
        ]
    )


def _describe_producers_error(request: Any, version: int, code: int) -> Any:
    R = DescribeProducersResponse
    return R(
        topics=[
            R.TopicResponse(
                t.name, [R.PartitionResponse(i, code, None) for i in t.partition_indexes]
            )
            for t in request.topics
        ]
    )


def _describe_transactions_error(request: Any, version: int, code: int) -> Any:
    R = DescribeTransactionsResponse
    return R(transaction_states=[R.TransactionState(code, t) for t in request.transactional_ids])


#: Error responses (``fail_next``) of the APIs whose errors are not top-level.
TXN_ADMIN_ERROR_RESPONSES: dict[int, Callable[[Any, int, int], Any]] = {
    27: _write_txn_markers_error,
    61: _describe_producers_error,
    65: _describe_transactions_error,
}
