"""The admin APIs the fake cluster models: DeleteTopics, CreatePartitions, DeleteRecords,
DescribeConfigs, IncrementalAlterConfigs, AlterConfigs, ListConfigResources,
DescribeTopicPartitions, DeleteGroups and OffsetDelete.

Topic configs are a dict per topic over Kafka's defaults for a few common keys;
broker configs are read-only and static; it holds no group configs and no client
metrics subscriptions, so ListConfigResources lists topics, brokers and broker
loggers, as Kafka 4.1+ does for those types.  Any broker takes the controller's
requests (CreateTopics, DeleteTopics, CreatePartitions), as a Kafka 4.x
(KRaft) broker forwards them; tests of NOT_CONTROLLER handling inject it with
``fail_next``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    GroupIdNotFound,
    GroupSubscribedToTopic,
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidRequest,
    NonEmptyGroup,
    OffsetOutOfRangeError,
    UnknownTopicId,
)
from afkak._errors import DecodeError
from afkak.group import decode_subscription
from afkak.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
)
from afkak.testing._group_coordinator import _group_error
from afkak.testing._lookup import (
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_OR_PARTITION,
    code,
    find_partition,
)
from afkak.testing._state import FakePartition

if TYPE_CHECKING:
    from afkak.testing._cluster_state import ClusterState, RequestContext

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG = 5, 1, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
#: Kafka's defaults of the topic configs the fake knows (other keys are refused).
TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "max.message.bytes": "1048588",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
}
LIST_CONFIGS = {"cleanup.policy"}


def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest, version: int) -> Any:
    cluster = ctx.state
    R = DeleteTopicsResponse
    asked = (
        [(s.name, s.topic_id if s.name is None else None) for s in request.topics]
        if version >= 6
        else [(n, None) for n in request.topic_names]
    )
    results = []
    for name, topic_id in asked:
        topic = cluster.topics_by_id.get(topic_id) if topic_id else cluster.topics.get(name or "")
        result = R.DeletableTopicResult(name=topic.name if topic else name)
        if version >= 6:
            result.topic_id = topic.topic_id if topic else topic_id or result.topic_id
        if topic is None:
            result.error_code = code(UnknownTopicId) if topic_id else UNKNOWN_TOPIC_OR_PARTITION
        else:
            cluster.delete_topic(topic.name)
        results.append(result)
    return R(responses=results)


def handle_create_partitions(
    ctx: RequestContext, request: CreatePartitionsRequest, version: int
) -> Any:
    R = CreatePartitionsResponse
    results = []
    for t in request.topics:
        result = R.CreatePartitionsTopicResult(name=t.name)
        error, message = _grow(ctx, t, request.validate_only)
        result.error_code, result.error_message = error, message
        results.append(result)
    return R(results=results)


def _grow(ctx: RequestContext, t: Any, validate_only: bool) -> tuple[int, str | None]:
    cluster = ctx.state
    topic = cluster.topics.get(t.name)
    if topic is None:
        return UNKNOWN_TOPIC_OR_PARTITION, None
    have = len(topic.partitions)
    if t.count <= have:
        return code(InvalidPartitions), f"Topic currently has {have} partitions, {t.count} asked"
    nodes = sorted(n for n, b in cluster.brokers.items() if b.up)
    rf = len(topic.partitions[0].replicas)
    if t.assignments is not None:
        placed = [list(a.broker_ids) for a in t.assignments]
        if len(placed) != t.count - have or any(
            not ids or set(ids) - set(cluster.brokers) or len(set(ids)) != len(ids)
            for ids in placed
        ):
            return code(InvalidReplicaAssignment), "bad replica assignment"
    else:
        placed = [[nodes[(p + i) % len(nodes)] for i in range(rf)] for p in range(have, t.count)]
    if not validate_only:
        for index, replicas in enumerate(placed, start=have):
            live = [n for n in replicas if cluster.brokers[n].up]
            topic.partitions.append(
                FakePartition(topic.name, index, replicas, live[0] if live else -1)
            )
    return 0, None


def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest, version: int) -> Any:
    cluster = ctx.state
    R = DeleteRecordsResponse
    topics = []
    for t in request.topics:
        answers = []
        for p in t.partitions:
            answer = R.DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=-1
            )
            part = find_partition(cluster.topics.get(t.name), p.partition_index)
            if part is None:
                answer.error_code = UNKNOWN_TOPIC_OR_PARTITION
            elif part.leader != ctx.node:
                answer.error_code = NOT_LEADER_OR_FOLLOWER
            else:
                offset = part.high_watermark if p.offset == -1 else p.offset
                if not 0 <= offset <= part.high_watermark:
                    answer.error_code = code(OffsetOutOfRangeError)
                else:
                    cluster.delete_records(t.name, p.partition_index, offset)
                    answer.low_watermark = part.log_start_offset
            answers.append(answer)
        topics.append(R.DeleteRecordsTopicResult(name=t.name, partitions=answers))
    return R(topics=topics)


def _broker_configs(cluster: ClusterState) -> dict[str, str]:
    return {
        "auto.create.topics.enable": str(cluster.auto_create_topics).lower(),
        "default.replication.factor": str(cluster.default_replication),
        "message.max.bytes": str(cluster.max_message_bytes),
        "num.partitions": str(cluster.default_partitions),
    }


def handle_describe_configs(
    ctx: RequestContext, request: DescribeConfigsRequest, version: int
) -> Any:
    cluster = ctx.state
    R = DescribeConfigsResponse
    results = []
    for r in request.resources:
        result = R.DescribeConfigsResult(
            resource_type=r.resource_type, resource_name=r.resource_name, configs=[]
        )
        entries: list[tuple[str, str, int]] = []
        if r.resource_type == TOPIC:
            topic = cluster.topics.get(r.resource_name)
            if topic is None:
                result.error_code = UNKNOWN_TOPIC_OR_PARTITION
            else:
                entries = [
                    (
                        k,
                        topic.configs.get(k, v),
                        DYNAMIC_TOPIC_CONFIG if k in topic.configs else DEFAULT_CONFIG,
                    )
                    for k, v in TOPIC_DEFAULTS.items()
                ]
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.node)):
                result.error_code = code(InvalidRequest)
                result.error_message = f"broker {r.resource_name} asked of broker {ctx.node}"
            else:
                entries = [
                    (k, v, STATIC_BROKER_CONFIG) for k, v in _broker_configs(cluster).items()
                ]
        else:
            result.error_code = code(InvalidRequest)
        for name, value, source in entries:
            if r.configuration_keys is not None and name not in r.configuration_keys:
                continue
            synonyms = []
            if request.include_synonyms:
                synonyms.append(R.DescribeConfigsSynonym(name, value, source))
                if source == DYNAMIC_TOPIC_CONFIG:
                    synonyms.append(
                        R.DescribeConfigsSynonym(name, TOPIC_DEFAULTS[name], DEFAULT_CONFIG)
                    )
            result.configs.append(
                R.DescribeConfigsResourceResult(
                    name=name,
                    value=value,
                    read_only=r.resource_type == BROKER,
                    config_source=source,
                    is_sensitive=False,
                    synonyms=synonyms,
                )
            )
        results.append(result)
    return R(results=results)


def handle_incremental_alter_configs(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest, version: int
) -> Any:
    return _alter_configs(ctx, request, IncrementalAlterConfigsResponse, _altered)


def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest, version: int) -> Any:
    """Kafka before 2.3's AlterConfigs: a topic's dynamic configs become the set given."""
    return _alter_configs(ctx, request, AlterConfigsResponse, _replaced)


def _alter_configs(
    ctx: RequestContext,
    request: Any,
    R: Any,
    altered: Callable[[dict[str, str], Any], tuple[dict[str, str], str | None]],
) -> Any:
    """Both alterations, of topics only (broker configs are static): ``altered(current,
    entries)`` gives a topic's new configs and the problem, if any, that refuses them."""
    responses = []
    for r in request.resources:
        result = R.AlterConfigsResourceResponse(
            resource_type=r.resource_type, resource_name=r.resource_name
        )
        topic = ctx.state.topics.get(r.resource_name) if r.resource_type == TOPIC else None
        if r.resource_type != TOPIC:
            result.error_code, result.error_message = (
                code(InvalidRequest),
                "broker configs are static",
            )
        elif topic is None:
            result.error_code = UNKNOWN_TOPIC_OR_PARTITION
        else:
            updated, problem = altered(topic.configs, r.configs)
            if problem:
                result.error_code, result.error_message = code(InvalidConfig), problem
            elif not request.validate_only:
                topic.configs.clear()
                topic.configs.update(updated)
        responses.append(result)
    return R(responses=responses)


def _replaced(current: dict[str, str], entries: Any) -> tuple[dict[str, str], str | None]:
    unknown = sorted(c.name for c in entries if c.name not in TOPIC_DEFAULTS)
    if unknown:
        return current, f"Unknown topic config names: {unknown}"
    return {c.name: c.value for c in entries if c.value is not None}, None


def handle_list_config_resources(
    ctx: RequestContext, request: ListConfigResourcesRequest, version: int
) -> Any:
    """v0 (ListClientMetricsResources) lists client metrics only; v1 the types asked, all
    when none."""
    cluster = ctx.state
    R = ListConfigResourcesResponse
    nodes = [str(n) for n in sorted(cluster.brokers)]
    held = {TOPIC: sorted(cluster.topics), BROKER: nodes, BROKER_LOGGER: nodes}
    if version == 0:
        return R(config_resources=[])
    types = request.resource_types or list(held)
    return R(
        config_resources=[
            R.ConfigResource(resource_name=name, resource_type=t)
            for t in types
            for name in held.get(t, ())
        ]
    )


def handle_describe_topic_partitions(
    ctx: RequestContext, request: DescribeTopicPartitionsRequest, version: int
) -> Any:
    """Topics in name order from the cursor, at most the limit's partitions, as Kafka
    pages them; no eligible leader replicas (the fake's ISR is every live replica)."""
    cluster = ctx.state
    R = DescribeTopicPartitionsResponse
    names = sorted({t.name for t in request.topics})
    start, first = (
        (request.cursor.topic_name, request.cursor.partition_index)
        if (request.cursor is not None)
        else ("", 0)
    )
    left = request.response_partition_limit
    topics, next_cursor = [], None
    for name in (n for n in names if n >= start):
        topic = cluster.topics.get(name)
        if topic is None:
            topics.append(R.DescribeTopicPartitionsResponseTopic(UNKNOWN_TOPIC_OR_PARTITION, name))
            continue
        parts = [p for p in topic.partitions if name != start or p.index >= first]
        if left <= 0 or len(parts) > left:
            next_cursor = R.Cursor(name, parts[max(left, 0)].index)
            parts = parts[: max(left, 0)]
        left -= len(parts)
        if parts:
            topics.append(
                R.DescribeTopicPartitionsResponseTopic(
                    name=name,
                    topic_id=topic.topic_id,
                    partitions=[
                        R.DescribeTopicPartitionsResponsePartition(
                            partition_index=p.index,
                            leader_id=p.leader,
                            leader_epoch=p.leader_epoch,
                            replica_nodes=list(p.replicas),
                            isr_nodes=[n for n in p.replicas if cluster.brokers[n].up],
                            eligible_leader_replicas=[],
                            last_known_elr=[],
                            offline_replicas=[n for n in p.replicas if not cluster.brokers[n].up],
                        )
                        for p in parts
                    ],
                )
            )
        if next_cursor is not None:
            break
    return R(topics=topics, next_cursor=next_cursor)


def _altered(current: dict[str, str], changes: Any) -> tuple[dict[str, str], str | None]:
    configs = dict(current)
    for c in changes:
        if c.name not in TOPIC_DEFAULTS:
            return configs, f"Unknown topic config name: {c.name}"
        if c.config_operation == SET:
            configs[c.name] = c.value
        elif c.config_operation == DELETE:
            configs.pop(c.name, None)
        elif c.name not in LIST_CONFIGS:
            return configs, f"{c.name} is not a list config"
        else:
            items = [v for v in configs.get(c.name, TOPIC_DEFAULTS[c.name]).split(",") if v]
            values = [v for v in (c.value or "").split(",") if v]
            if c.config_operation == APPEND:
                items += [v for v in values if v not in items]
            elif c.config_operation == SUBTRACT:
                items = [v for v in items if v not in values]
            else:
                return configs, f"unknown operation {c.config_operation}"
            configs[c.name] = ",".join(items)
    return configs, None


def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest, version: int) -> Any:
    cluster = ctx.state
    R = DeleteGroupsResponse
    results = []
    for group_id in request.groups_names:
        error = _group_error(ctx, group_id)
        group = cluster.group_coordinator.groups.get(group_id)
        if not error and group_id not in cluster.groups and group is None:
            error = code(GroupIdNotFound)
        elif not error and group is not None and group.members:
            error = code(NonEmptyGroup)
        if not error:
            cluster.groups.discard(group_id)
            cluster.group_coordinator.groups.pop(group_id, None)
            for key in [k for k in cluster.committed_offsets if k[0] == group_id]:
                del cluster.committed_offsets[key]
        results.append(R.DeletableGroupResult(group_id=group_id, error_code=error))
    return R(results=results)


def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest, version: int) -> Any:
    cluster = ctx.state
    R = OffsetDeleteResponse
    group_id = request.group_id
    error = _group_error(ctx, group_id)
    group = cluster.group_coordinator.groups.get(group_id)
    if not error and group_id not in cluster.groups and group is None:
        error = code(GroupIdNotFound)
    if error:
        return R(error_code=error)
    subscribed: set[str] = set()
    if group is not None:
        for m in group.members.values():
            subscribed.update(_subscribed_topics(m, group.protocol_name))
    topics = []
    for t in request.topics:
        answers = []
        for p in t.partitions:
            answer = R.OffsetDeleteResponsePartition(partition_index=p.partition_index)
            if find_partition(cluster.topics.get(t.name), p.partition_index) is None:
                answer.error_code = UNKNOWN_TOPIC_OR_PARTITION
            elif t.name in subscribed:
                answer.error_code = code(GroupSubscribedToTopic)
            else:
                cluster.committed_offsets.pop((group_id, t.name, p.partition_index), None)
            answers.append(answer)
        topics.append(R.OffsetDeleteResponseTopic(name=t.name, partitions=answers))
    return R(topics=topics)


def _subscribed_topics(member: Any, protocol: str | None) -> list[str]:
    try:
        return list(decode_subscription(member.metadata(protocol)).topics)
    except DecodeError:
        return []


ADMIN_APIS: dict[int, Callable[..., Any]] = {
    20: handle_delete_topics,
    21: handle_delete_records,
    32: handle_describe_configs,
    33: handle_alter_configs,
    37: handle_create_partitions,
    42: handle_delete_groups,
    44: handle_incremental_alter_configs,
    74: handle_list_config_resources,
    75: handle_describe_topic_partitions,
    47: handle_offset_delete,
}


def _delete_topics_error(request: Any, version: int, code: int) -> Any:
    R = DeleteTopicsResponse
    if version >= 6:
        return R(
            responses=[
                R.DeletableTopicResult(name=s.name, topic_id=s.topic_id, error_code=code)
                for s in request.topics
            ]
        )
    return R(
        responses=[R.DeletableTopicResult(name=n, error_code=code) for n in request.topic_names]
    )


def _create_partitions_error(request: Any, version: int, code: int) -> Any:
    R = CreatePartitionsResponse
    return R(
        results=[
            R.CreatePartitionsTopicResult(name=t.name, error_code=code) for t in request.topics
        ]
    )


def _delete_records_error(request: Any, version: int, code: int) -> Any:
    R = DeleteRecordsResponse
    return R(
        topics=[
            R.DeleteRecordsTopicResult(
                name=t.name,
                partitions=[
                    R.DeleteRecordsPartitionResult(p.partition_index, -1, code)
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _config_resources_error(response: Any, field: str, item: Any) -> Any:
    """The error builder of a config API: *code* for each resource the request named."""

    def build(request: Any, version: int, code: int) -> Any:
        return response(
            **{
                field: [
                    item(
                        error_code=code,
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                    )
                    for r in request.resources
                ]
            }
        )

    return build


def _delete_groups_error(request: Any, version: int, code: int) -> Any:
    R = DeleteGroupsResponse
    return R(
        results=[R.DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names]
    )


def _describe_topic_partitions_error(request: Any, version: int, code: int) -> Any:
    R = DescribeTopicPartitionsResponse
    return R(
        topics=[
            R.DescribeTopicPartitionsResponseTopic(error_code=code, name=t.name)
            for t in request.topics
        ]
    )


#: Error responses (as Kafka's getErrorResponse) for fault injection.
ADMIN_ERROR_RESPONSES = {
    20: _delete_topics_error,
    21: _delete_records_error,
    32: _config_resources_error(
        DescribeConfigsResponse, "results", DescribeConfigsResponse.DescribeConfigsResult
    ),
    33: _config_resources_error(
        AlterConfigsResponse, "responses", AlterConfigsResponse.AlterConfigsResourceResponse
    ),
    37: _create_partitions_error,
    42: _delete_groups_error,
    75: _describe_topic_partitions_error,
    44: _config_resources_error(
        IncrementalAlterConfigsResponse,
        "responses",
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse,
    ),
}
