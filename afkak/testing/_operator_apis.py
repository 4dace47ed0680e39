"""The operator's cluster APIs the fake cluster serves: DescribeLogDirs, the feature
levels (ApiVersions v3+ reports them, UpdateFeatures changes them), DescribeQuorum,
client quotas (DescribeClientQuotas, AlterClientQuotas: Kafka's quota keys by entity,
in ``cluster.state.quotas``), reassignments (AlterPartitionReassignments completes a
move at once, so ListPartitionReassignments lists none) and ElectLeaders (preferred:
the first replica when up; unclean: any live replica of a partition without a leader).

Each broker has one log directory, ``/fake/broker-N/kafka-logs``, holding its replicas
(a replica's size is its partition's stored bytes, never behind its leader).  The
metadata quorum is the controller alone (the first live broker) as its only voter,
the other brokers its observers, all caught up; its high watermark is the metadata
offset, which a feature update moves on (the state is in :mod:`._operator_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    InvalidReplicaAssignment,
    InvalidRequest,
    NoReassignmentInProgress,
    NotController,
    PreferredLeaderNotAvailable,
)
from afkak.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from afkak.testing._lookup import UNKNOWN_TOPIC_OR_PARTITION, code, find_partition
from afkak.testing._operator_state import SAFE_DOWNGRADE, UPGRADE, Entity

if TYPE_CHECKING:
    from afkak.testing._cluster_state import ClusterState, RequestContext

METADATA_TOPIC = "__cluster_metadata"
DISK_BYTES = 1 << 40


def controller(cluster: ClusterState) -> int:
    live = sorted(n for n, b in cluster.brokers.items() if b.up)
    return live[0] if live else -1


def handle_describe_log_dirs(
    ctx: RequestContext, request: DescribeLogDirsRequest, version: int
) -> Any:
    R = DescribeLogDirsResponse
    wanted = (
        None
        if request.topics is None
        else {(t.topic, p) for t in request.topics for p in t.partitions}
    )
    topics: dict[str, list[Any]] = {}
    used = 0
    for topic in ctx.state.topics.values():
        for part in topic.partitions:
            if ctx.node not in part.replicas:
                continue
            size = sum(len(b.data) for b in part.log.batches)
            used += size
            if wanted is None or (topic.name, part.index) in wanted:
                topics.setdefault(topic.name, []).append(
                    R.DescribeLogDirsPartition(part.index, size, 0, False)
                )
    result = R.DescribeLogDirsResult(
        log_dir=f"/fake/broker-{ctx.node}/kafka-logs",
        topics=[R.DescribeLogDirsTopic(name, parts) for name, parts in topics.items()],
        total_bytes=DISK_BYTES,
        usable_bytes=DISK_BYTES - used,
    )
    return R(results=[result])


def handle_update_features(
    ctx: RequestContext, request: UpdateFeaturesRequest, version: int
) -> Any:
    """Applied at once (any broker forwards it, as in KRaft); all or nothing."""
    R = UpdateFeaturesResponse
    features = ctx.state.features
    if controller(ctx.state) < 0:
        return R(error_code=code(NotController))
    trial = features.copy()
    errors = {}
    for u in request.feature_updates:
        how = u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)
        errors[u.feature] = trial.update(u.feature, u.max_version_level, how)
    failed = next((e for e in errors.values() if e), 0)
    if not failed and not request.validate_only:
        features.finalized = trial.finalized
        features.metadata_offset = trial.metadata_offset
    if version >= 2:
        return R(error_code=failed)
    return R(results=[R.UpdatableFeatureResult(name, e) for name, e in errors.items()])


def handle_describe_quorum(
    ctx: RequestContext, request: DescribeQuorumRequest, version: int
) -> Any:
    R = DescribeQuorumResponse
    cluster = ctx.state
    leader = controller(cluster)
    now_ms = int(cluster.reactor.seconds() * 1000)
    end = cluster.features.metadata_offset

    def replica(node: int) -> Any:
        return R.ReplicaState(
            replica_id=node,
            log_end_offset=end,
            last_fetch_timestamp=now_ms,
            last_caught_up_timestamp=now_ms,
        )

    partition = R.PartitionData(
        partition_index=0,
        leader_id=leader,
        leader_epoch=1,
        high_watermark=end,
        current_voters=[replica(leader)],
        observers=[replica(n) for n in sorted(cluster.brokers) if n != leader],
    )
    return R(topics=[R.TopicData(METADATA_TOPIC, [partition])])


#: Kafka's quota keys, by the entity types they apply to.
QUOTA_KEYS = {
    "producer_byte_rate": {"user", "client-id"},
    "consumer_byte_rate": {"user", "client-id"},
    "request_percentage": {"user", "client-id"},
    "controller_mutation_rate": {"user", "client-id"},
    "connection_creation_rate": {"ip"},
}
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _entity(data: Any) -> Entity:
    return tuple(sorted((e.entity_type, e.entity_name) for e in data))


def _matches(entity: Entity, components: Any, strict: bool) -> bool:
    names = dict(entity)
    if strict and set(names) != {c.entity_type for c in components}:
        return False
    for c in components:
        if c.entity_type not in names:
            return False
        name = names[c.entity_type]
        if c.match_type == EXACT and name != c.match:
            return False
        if c.match_type == DEFAULT and name is not None:
            return False
        if c.match_type == SPECIFIED and name is None:
            return False
    return True


def handle_describe_client_quotas(
    ctx: RequestContext, request: DescribeClientQuotasRequest, version: int
) -> Any:
    R = DescribeClientQuotasResponse
    if any(c.match_type not in (EXACT, DEFAULT, SPECIFIED) for c in request.components):
        return R(error_code=code(InvalidRequest), error_message="unknown match type")
    entries = [
        R.EntryData(
            [R.EntityData(t, n) for t, n in entity],
            [R.ValueData(k, v) for k, v in sorted(values.items())],
        )
        for entity, values in sorted(ctx.state.quotas.items(), key=lambda kv: repr(kv[0]))
        if values and _matches(entity, request.components, request.strict)
    ]
    return R(entries=entries)


def _quota_error(entity: Entity, ops: Any) -> tuple[int, str | None]:
    types = {t for t, _ in entity}
    if not entity or not types <= {"user", "client-id", "ip"} or len(types) != len(entity):
        return code(InvalidRequest), "invalid quota entity"
    if "ip" in types and len(types) > 1:
        return code(InvalidRequest), "an ip quota stands alone"
    for op in ops:
        if op.key not in QUOTA_KEYS or not types <= QUOTA_KEYS[op.key]:
            return code(InvalidRequest), f"invalid quota key {op.key} for {sorted(types)}"
        if not op.remove and not op.value > 0:
            return code(InvalidRequest), f"quota {op.key} must be positive"
    return 0, None


def handle_alter_client_quotas(
    ctx: RequestContext, request: AlterClientQuotasRequest, version: int
) -> Any:
    R = AlterClientQuotasResponse
    quotas = ctx.state.quotas
    answers = []
    for entry in request.entries:
        entity = _entity(entry.entity)
        error, message = _quota_error(entity, entry.ops)
        if not error and not request.validate_only:
            values = quotas.setdefault(entity, {})
            for op in entry.ops:
                if op.remove:
                    values.pop(op.key, None)
                else:
                    values[op.key] = op.value
        answers.append(R.EntryData(error, message, [R.EntityData(t, n) for t, n in entity]))
    return R(entries=answers)


def handle_alter_partition_reassignments(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest, version: int
) -> Any:
    R = AlterPartitionReassignmentsResponse
    cluster = ctx.state
    topics = []
    for t in request.topics:
        answers = []
        for p in t.partitions:
            part = find_partition(cluster.topics.get(t.name), p.partition_index)
            error = 0
            if part is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
            elif p.replicas is None:
                error = code(NoReassignmentInProgress)  # every move completed at once
            elif (
                not p.replicas
                or len(set(p.replicas)) != len(p.replicas)
                or set(p.replicas) - set(cluster.brokers)
            ):
                error = code(InvalidReplicaAssignment)
            else:
                part.replicas = list(p.replicas)
                if part.leader not in part.replicas:
                    live = [n for n in part.replicas if cluster.brokers[n].up]
                    part.leader = live[0] if live else -1
                    part.leader_epoch += 1
                    cluster.wake_fetches()
            answers.append(R.ReassignablePartitionResponse(p.partition_index, error, None))
        topics.append(R.ReassignableTopicResponse(t.name, answers))
    return R(error_message=None, responses=topics)


def handle_list_partition_reassignments(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest, version: int
) -> Any:
    return ListPartitionReassignmentsResponse(error_message=None, topics=[])


def _elect(cluster: ClusterState, part: Any, election: int) -> int:
    """Elect *part*'s leader (0 = PREFERRED, 1 = UNCLEAN); the error code."""
    up = [n for n in part.replicas if cluster.brokers[n].up]
    if election == 0:
        preferred = part.replicas[0]
        if part.leader == preferred:
            return code(ElectionNotNeeded)
        if preferred not in up:
            return code(PreferredLeaderNotAvailable)
        new = preferred
    else:
        if part.leader >= 0:
            return code(ElectionNotNeeded)
        if not up:
            return code(EligibleLeadersNotAvailable)
        new = up[0]
    part.leader = new
    part.leader_epoch += 1
    cluster.wake_fetches()
    return 0


def handle_elect_leaders(ctx: RequestContext, request: ElectLeadersRequest, version: int) -> Any:
    """Every named partition; with none named, the partitions that needed an election."""
    R = ElectLeadersResponse
    cluster = ctx.state
    election = request.election_type if version >= 1 else 0
    results: dict[str, list[Any]] = {}
    if request.topic_partitions is None:
        for topic in cluster.topics.values():
            for part in topic.partitions:
                error = _elect(cluster, part, election)
                if error != code(ElectionNotNeeded):
                    results.setdefault(topic.name, []).append(R.PartitionResult(part.index, error))
    else:
        for t in request.topic_partitions:
            for index in t.partitions:
                named = find_partition(cluster.topics.get(t.topic), index)
                error = (
                    UNKNOWN_TOPIC_OR_PARTITION
                    if named is None
                    else _elect(cluster, named, election)
                )
                results.setdefault(t.topic, []).append(R.PartitionResult(index, error, None))
    return R(replica_election_results=[R.ReplicaElectionResult(t, r) for t, r in results.items()])


OPERATOR_APIS: dict[int, Callable[[RequestContext, Any, int], Any]] = {
    35: handle_describe_log_dirs,
    43: handle_elect_leaders,
    45: handle_alter_partition_reassignments,
    46: handle_list_partition_reassignments,
    48: handle_describe_client_quotas,
    49: handle_alter_client_quotas,
    55: handle_describe_quorum,
    57: handle_update_features,
}


def _describe_log_dirs_error(request: Any, version: int, code: int) -> Any:
    R = DescribeLogDirsResponse
    if version >= 3:
        return R(error_code=code)
    return R(results=[R.DescribeLogDirsResult(error_code=code, log_dir="")])


def _elect_leaders_error(request: Any, version: int, code: int) -> Any:
    R = ElectLeadersResponse
    if version >= 1:
        return R(error_code=code)
    return R(
        replica_election_results=[
            R.ReplicaElectionResult(t.topic, [R.PartitionResult(i, code) for i in t.partitions])
            for t in request.topic_partitions or ()
        ]
    )


def _alter_client_quotas_error(request: Any, version: int, code: int) -> Any:
    R = AlterClientQuotasResponse
    return R(
        entries=[
            R.EntryData(code, None, [R.EntityData(e.entity_type, e.entity_name) for e in x.entity])
            for x in request.entries
        ]
    )


#: Error responses (``fail_next``) of the APIs whose errors are not top-level.
OPERATOR_ERROR_RESPONSES: dict[int, Callable[[Any, int, int], Any]] = {
    35: _describe_log_dirs_error,
    43: _elect_leaders_error,
    49: _alter_client_quotas_error,
}
