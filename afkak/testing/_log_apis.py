"""Produce, Fetch (with long-polling) and ListOffsets against the fake partition logs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred

from afkak._broker_errors import (
    BrokerResponseError,
    CorruptMessage,
    FencedLeaderEpoch,
    FetchSessionIdNotFound,
    InvalidRecord,
    InvalidRequiredAcks,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    UnknownProducerId,
)
from afkak._errors import DecodeError
from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST
from afkak.protocol.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ProduceRequest,
    ProduceResponse,
)
from afkak.records import RecordBatch, read_batches
from afkak.testing._fetch_sessions import open_session
from afkak.testing._log import PartitionLog
from afkak.testing._lookup import (
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_OR_PARTITION,
    code,
    find_partition,
    find_topic,
    leader_error,
)

if TYPE_CHECKING:
    from afkak.testing._cluster_state import ClusterState, RequestContext
    from afkak.testing._state import FakePartition

MAX_TIMESTAMP, EARLIEST_LOCAL = -3, -4  # ListOffsets special times (v7+, v8+)
READ_COMMITTED = 1


class DropConnection(Exception):
    """Kafka closes the connection instead of answering (an acks=0 produce that failed)."""


# Produce


def handle_produce(ctx: RequestContext, request: ProduceRequest, version: int) -> Any:
    cluster, node = ctx.state, ctx.node
    failed = False
    leaders: set[int] = set()
    topics = []
    # KIP-890: a transactional Produce v12+ adds its partition under transactions v2.
    implicit_txn = version >= 12 and cluster.features.finalized.get("transaction.version", 0) >= 2
    for topic_data in request.topic_data:
        topic, topic_error = find_topic(
            cluster, topic_data.name, topic_data.topic_id, version >= 13
        )
        answers = []
        for data in topic_data.partition_data:
            answer = ProduceResponse.PartitionProduceResponse(index=data.index, base_offset=-1)
            part = find_partition(topic, data.index)
            if request.acks not in (0, 1, -1):
                answer.error_code = code(InvalidRequiredAcks)
            elif part is None:
                answer.error_code = topic_error or UNKNOWN_TOPIC_OR_PARTITION
            elif leader_error(part, node):
                answer.error_code = NOT_LEADER_OR_FOLLOWER
                if version >= 10:  # KIP-951: point the client to the new leader
                    answer.current_leader = ProduceResponse.LeaderIdAndEpoch(
                        part.leader, part.leader_epoch
                    )
                    leaders.add(part.leader)
            else:
                _append(cluster, part, data.records, answer, implicit_txn)
            failed = failed or bool(answer.error_code)
            answers.append(answer)
        topics.append(
            ProduceResponse.TopicProduceResponse(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=answers
            )
        )
    if request.acks == 0:
        if failed:
            raise DropConnection()
        return None
    return ProduceResponse(
        responses=topics, node_endpoints=node_endpoints(cluster, leaders, ProduceResponse)
    )


def _append(
    cluster: ClusterState,
    part: FakePartition,
    records: bytes | None,
    answer: Any,
    implicit_txn: bool = False,
) -> None:
    batch, error, message = _validate(records, cluster.max_message_bytes)
    if batch is not None and 0 <= batch.producer_id < cluster.forgotten_producers_below:
        batch, error, message = None, code(UnknownProducerId), "the broker lost this producer"
    if batch is not None and batch.is_transactional:
        error, message = cluster.transactions.check_produce(batch, part, implicit_txn)
        if error:
            batch = None
    if batch is not None:
        try:
            answer.base_offset = part.log.append(batch, bytes(records or b""), part.leader_epoch)
        except BrokerResponseError as e:
            error, message = code(type(e)), str(e)
    answer.error_code = error
    answer.error_message = message
    answer.log_start_offset = part.log_start_offset
    if error == code(InvalidRecord):
        answer.record_errors = [ProduceResponse.BatchIndexAndErrorMessage(0, message)]
    if batch is not None and not error:
        cluster.wake_fetches()


def _validate(records: bytes | None, max_bytes: int) -> tuple[RecordBatch | None, int, str | None]:
    """The one v2 batch of a produced partition, or the error Kafka gives."""
    corrupt, invalid = code(CorruptMessage), code(InvalidRecord)
    if not records:
        return None, invalid, "no record batch"
    if len(records) > max_bytes:
        return None, code(MessageSizeTooLargeError), f"batch of {len(records)} bytes"
    try:
        batches = list(read_batches(records))
        if sum(b.size_in_bytes for b in batches) != len(records):
            return None, corrupt, "truncated record batch"
        if len(batches) != 1:
            return None, invalid, "a produce request needs exactly one record batch per partition"
        (batch,) = batches
        if batch.magic != 2 or batch.is_control:
            return None, invalid, "only v2 data batches can be produced"
        offsets = [r.offset for r in batch.records()]
    except DecodeError as e:
        return None, corrupt, str(e)
    if offsets != list(range(batch.base_offset, batch.base_offset + batch.record_count)) or (
        offsets and offsets[-1] != batch.last_offset
    ):
        return None, invalid, "record offsets are not consecutive"
    return batch, 0, None


def node_endpoints(cluster: ClusterState, nodes: set[int], response: Any) -> list[Any]:
    """The NodeEndpoints (tagged, v10+ Produce / v16+ Fetch) of the leaders a response points to."""
    return [
        response.NodeEndpoint(b.node_id, b.host, b.port, b.rack)
        for n in sorted(nodes)
        if (b := cluster.brokers.get(n)) is not None and b.up
    ]


# Fetch


def handle_fetch(ctx: RequestContext, request: FetchRequest, version: int) -> Any:
    shape: Callable[[Any], Any] = _unchanged
    if ctx.state.fetch_sessions:
        opened = open_session(ctx.state.sessions, ctx.node, request, version)
        if isinstance(opened, FetchResponse):
            return opened  # a session error
        request, shape = opened
    elif version >= 7 and request.session_epoch not in (0, -1):
        # Sessionless: the fake never creates fetch sessions (as a broker
        # whose session cache is full), so no incremental fetch can name one.
        return FetchResponse(error_code=code(FetchSessionIdNotFound), session_id=0)
    response, size, failed = read_fetch(ctx.state, ctx.node, request, version)
    if failed or size >= request.min_bytes or request.max_wait_ms <= 0:
        return shape(response)
    return FetchWaiter(ctx.state, ctx.node, request, version, shape).deferred


def _unchanged(response: Any) -> Any:
    return response


class FetchWaiter:
    """A Fetch held until ``min_bytes`` are available, a partition errs, or ``max_wait_ms``."""

    def __init__(
        self,
        cluster: ClusterState,
        node: int,
        request: FetchRequest,
        version: int,
        shape: Callable[[Any], Any] = _unchanged,
    ) -> None:
        self._shape = shape
        self._cluster = cluster
        self._node = node
        self._request = request
        self._version = version
        self.deferred: Deferred[Any] = Deferred(self._cancel)
        self._timer = cluster.reactor.callLater(request.max_wait_ms / 1000.0, self._expire)
        cluster.fetch_waiters.add(self)

    def poll(self) -> None:
        response, size, failed = read_fetch(self._cluster, self._node, self._request, self._version)
        if failed or size >= self._request.min_bytes:
            self._finish(response)

    def _expire(self) -> None:
        self._finish(read_fetch(self._cluster, self._node, self._request, self._version)[0])

    def _finish(self, response: Any) -> None:
        self._cluster.fetch_waiters.discard(self)
        if self._timer.active():
            self._timer.cancel()
        self.deferred.callback(self._shape(response))

    def _cancel(self, _: Deferred[Any]) -> None:
        self._cluster.fetch_waiters.discard(self)
        if self._timer.active():
            self._timer.cancel()


def read_fetch(
    cluster: ClusterState, node: int, request: FetchRequest, version: int
) -> tuple[Any, int, bool]:
    """The Fetch response as of now, its records' size, and whether a partition failed."""
    left = request.max_bytes
    size = 0
    failed = False
    leaders: set[int] = set()
    committed = request.isolation_level == READ_COMMITTED
    topics = []
    for fetch_topic in request.topics:
        topic, topic_error = find_topic(
            cluster, fetch_topic.topic, fetch_topic.topic_id, version >= 13
        )
        answers = []
        for fp in fetch_topic.partitions:
            answer = FetchResponse.PartitionData(
                partition_index=fp.partition, high_watermark=-1, aborted_transactions=None
            )
            part = find_partition(topic, fp.partition)
            error = topic_error or (0 if part is not None else UNKNOWN_TOPIC_OR_PARTITION)
            if part is not None:
                error = leader_error(part, node, fp.current_leader_epoch, followers=version >= 11)
                # KIP-951: both errors name the leader the client should go to.
                if error in (NOT_LEADER_OR_FOLLOWER, code(FencedLeaderEpoch)) and version >= 12:
                    answer.current_leader = FetchResponse.LeaderIdAndEpoch(
                        part.leader, part.leader_epoch
                    )
                    if version >= 16:
                        leaders.add(part.leader)
            if not error and part is not None:
                log = part.log
                answer.high_watermark = log.high_watermark
                answer.last_stable_offset = log.last_stable_offset
                answer.log_start_offset = log.log_start_offset
                upper = log.last_stable_offset if committed else log.high_watermark
                if committed:
                    answer.aborted_transactions = [
                        FetchResponse.AbortedTransaction(pid, first)
                        for pid, first in log.aborted_between(fp.fetch_offset, upper)
                    ]
                preferred = preferred_read_replica(cluster, part, node, request.rack_id, version)
                if preferred >= 0:
                    answer.preferred_read_replica = preferred
                    failed = True  # answered at once, without records (as Kafka)
                elif not log.log_start_offset <= fp.fetch_offset <= log.high_watermark:
                    error = code(OffsetOutOfRangeError)
                elif fp.fetch_offset < upper:
                    answer.records = log.read(
                        fp.fetch_offset,
                        min(fp.partition_max_bytes, left),
                        min_one_batch=size == 0 and cluster.fetch_whole_first_batch,
                        upper=upper,
                    )
                    size += len(answer.records)
                    left = max(0, left - len(answer.records))
            answer.error_code = error
            failed = failed or bool(error)
            answers.append(answer)
        topics.append(
            FetchResponse.FetchableTopicResponse(
                topic=fetch_topic.topic, topic_id=fetch_topic.topic_id, partitions=answers
            )
        )
    response = FetchResponse(
        session_id=0,
        responses=topics,
        node_endpoints=node_endpoints(cluster, leaders, FetchResponse),
    )
    return response, size, failed


def preferred_read_replica(
    cluster: ClusterState, part: FakePartition, node: int, rack_id: str, version: int
) -> int:
    """The replica the leader sends a consumer of rack *rack_id* to (-1: read here).

    As Kafka's ``RackAwareReplicaSelector`` (with ``cluster.rack_aware_replica_selector``):
    a live replica in the consumer's rack, unless the leader is in it.
    """
    if not cluster.rack_aware_replica_selector or version < 11 or not rack_id:
        return -1
    brokers = cluster.brokers
    if node != part.leader or brokers[node].rack == rack_id:
        return -1
    for replica in part.replicas:
        broker = brokers.get(replica)
        if broker is not None and broker.up and broker.rack == rack_id:
            return replica
    return -1


# ListOffsets


def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest, version: int) -> Any:
    cluster, node = ctx.state, ctx.node
    topics = []
    for lt in request.topics:
        topic, _ = find_topic(cluster, lt.name, None, False)
        answers = []
        for lp in lt.partitions:
            answer = ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=lp.partition_index
            )
            part = find_partition(topic, lp.partition_index)
            if part is None:
                answer.error_code = UNKNOWN_TOPIC_OR_PARTITION
            elif error := leader_error(part, node, lp.current_leader_epoch):
                answer.error_code = error
            else:
                if version >= 4:
                    answer.leader_epoch = part.leader_epoch
                found = _offset_for(
                    part.log, lp.timestamp, request.isolation_level == READ_COMMITTED
                )
                if found is not None:
                    answer.offset, answer.timestamp = found
            answers.append(answer)
        topics.append(
            ListOffsetsResponse.ListOffsetsTopicResponse(name=lt.name, partitions=answers)
        )
    return ListOffsetsResponse(topics=topics)


def _offset_for(log: PartitionLog, timestamp: int, committed: bool) -> tuple[int, int] | None:
    """(offset, timestamp) that ListOffsets answers for ``timestamp``; None: not found (-1, -1)."""
    if timestamp == OFFSET_LATEST:
        return (log.last_stable_offset if committed else log.high_watermark), -1
    if timestamp in (OFFSET_EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        return log.max_timestamp_offset()
    if timestamp < 0:
        return None
    return log.offset_for_timestamp(timestamp)
