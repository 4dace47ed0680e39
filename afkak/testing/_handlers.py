"""Request dispatch for one fake broker connection, and the cluster-level APIs.

:class:`ConnectionHandler` is the ``handle(header, request)`` of one
:class:`~afkak.testing._server.KafkaServerProtocol`: it records the request,
applies injected faults and version checks, then calls the API's handler.
Produce/Fetch/ListOffsets live in :mod:`._log_apis`, OffsetCommit/OffsetFetch
in :mod:`._group_apis`, the admin APIs in :mod:`._admin_apis`, the transaction
APIs (InitProducerId included) in :mod:`._txn_coordinator`, the operator's
transaction APIs in :mod:`._txn_admin_apis`, log dirs, features and the quorum in
:mod:`._operator_apis`; ApiVersions,
Metadata, FindCoordinator and CreateTopics are here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    CoordinatorNotAvailable,
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    LeaderNotAvailableError,
    TopicAlreadyExists,
    UnsupportedVersion,
)
from afkak.protocol.header import encode_response
from afkak.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from afkak.testing._admin_apis import ADMIN_APIS
from afkak.testing._epoch_apis import handle_offset_for_leader_epoch
from afkak.testing._error_responses import error_response
from afkak.testing._group_apis import handle_offset_commit, handle_offset_fetch
from afkak.testing._group_coordinator import GROUP_APIS
from afkak.testing._log_apis import (
    DropConnection,
    handle_fetch,
    handle_list_offsets,
    handle_produce,
)
from afkak.testing._lookup import (
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    code,
    topic_name_problem,
)
from afkak.testing._operator_apis import OPERATOR_APIS
from afkak.testing._share_groups import share_apis
from afkak.testing._state import SeenRequest
from afkak.testing._telemetry_apis import TELEMETRY_APIS
from afkak.testing._txn_admin_apis import TXN_ADMIN_APIS
from afkak.testing._txn_coordinator import TXN_APIS

if TYPE_CHECKING:
    from afkak.testing._cluster_state import ClusterState
    from afkak.testing._server import KafkaServerProtocol

PRODUCE, API_VERSIONS = 0, 18
_SOFTWARE_NAME = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


class ConnectionHandler:
    """Answers the requests of one client connection to broker ``node``."""

    def __init__(self, state: ClusterState, node: int) -> None:
        self.state = state
        self.node = node
        self.protocol: KafkaServerProtocol | None = None
        self.client_id: str | None = None

    def __call__(self, header: Any, request: Any) -> Any:
        state, node = self.state, self.node
        api_key, version = header.request_api_key, header.request_api_version
        self.client_id = header.client_id
        state.requests_seen.append(
            SeenRequest(node, api_key, version, header.correlation_id, header.client_id, request)
        )
        if state.faults.take_drop(api_key, node):
            return self._drop()
        advertised = state.api_versions.get(api_key)
        if advertised is None or not advertised[0] <= version <= advertised[1]:
            return self._unsupported(header, request)
        injected = state.faults.take_error(api_key, node)
        try:
            if injected is None:
                response = SERVED_APIS[api_key](self, request, version)
                if state.faults.take_answer_drop(api_key, node):
                    raise DropConnection()  # handled (it took effect), never answered
                return response
            if api_key == PRODUCE and request.acks == 0:
                raise DropConnection()
            response = error_response(api_key, request, version, injected)
        except DropConnection:
            return self._drop()
        return response if response is not None else self._drop()

    def _drop(self) -> None:
        assert self.protocol is not None
        self.protocol.drop()

    def _unsupported(self, header: Any, request: Any) -> Any:
        """UNSUPPORTED_VERSION; for ApiVersions, the v0 layout with our ranges (KIP-511)."""
        error = code(UnsupportedVersion)
        if header.request_api_key == API_VERSIONS:
            versions = ApiVersionsResponse(error_code=error, api_keys=self.advertised_ranges())
            return encode_response(versions, 0, header.correlation_id)
        response = error_response(
            header.request_api_key, request, header.request_api_version, error
        )
        return response if response is not None else self._drop()

    def advertised_ranges(self) -> list[Any]:
        return [
            ApiVersionsResponse.ApiVersion(key, lo, hi)
            for key, (lo, hi) in sorted(self.state.api_versions.items())
        ]


def handle_api_versions(ctx: ConnectionHandler, request: ApiVersionsRequest, version: int) -> Any:
    if version >= 3 and not (
        _SOFTWARE_NAME.match(request.client_software_name)
        and _SOFTWARE_NAME.match(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=code(InvalidRequest))
    R = ApiVersionsResponse
    features = ctx.state.features
    return R(
        api_keys=ctx.advertised_ranges(),
        supported_features=[
            R.SupportedFeatureKey(name, low, high)
            for name, (low, high) in sorted(features.supported.items())
        ],
        finalized_features_epoch=features.metadata_offset,
        finalized_features=[
            R.FinalizedFeatureKey(name, level, level)
            for name, level in sorted(features.finalized.items())
        ],
    )


def handle_metadata(ctx: ConnectionHandler, request: MetadataRequest, version: int) -> Any:
    cluster = ctx.state
    R = MetadataResponse
    live = [b for _, b in sorted(cluster.brokers.items()) if b.up]
    if request.topics is None or (version == 0 and not request.topics):
        topics = [_describe_topic(cluster, name) for name in sorted(cluster.topics)]
    else:
        allow_create = bool(
            cluster.auto_create_topics
            and (version < 4 or request.allow_auto_topic_creation)
            and live
        )
        topics = [
            _topic_by_id(cluster, asked.topic_id, version)
            if version >= 10 and asked.name is None
            else _topic_by_name(cluster, asked.name, allow_create, len(live))
            for asked in request.topics
        ]
    return R(
        brokers=[R.MetadataResponseBroker(b.node_id, b.host, b.port, b.rack) for b in live],
        cluster_id=cluster.cluster_id,
        controller_id=live[0].node_id if live else -1,
        topics=topics,
    )


def _topic_by_id(cluster: ClusterState, topic_id: Any, version: int) -> Any:
    """The metadata of the topic asked for by its id (v10+), or UNKNOWN_TOPIC_ID."""
    topic = cluster.topics_by_id.get(topic_id)
    if topic is not None:
        return _describe_topic(cluster, topic.name)
    return MetadataResponse.MetadataResponseTopic(
        error_code=UNKNOWN_TOPIC_ID,
        name=None if version >= 12 else "",
        topic_id=topic_id,
    )


def _topic_by_name(cluster: ClusterState, name: str | None, allow_create: bool, live: int) -> Any:
    """The metadata of the topic asked for by *name*, created first when the cluster
    creates topics on demand (and *live* brokers can hold it)."""
    problem = topic_name_problem(name)
    if name is not None and name not in cluster.topics and allow_create and not problem:
        cluster.create_topic(
            name, cluster.default_partitions, min(cluster.default_replication, live)
        )
    if name in cluster.topics:
        return _describe_topic(cluster, name)
    error = code(InvalidTopic) if problem else UNKNOWN_TOPIC_OR_PARTITION
    return MetadataResponse.MetadataResponseTopic(error_code=error, name=name)


def _describe_topic(cluster: ClusterState, name: str) -> Any:
    R = MetadataResponse
    topic = cluster.topics[name]
    partitions = []
    for part in topic.partitions:
        up = [n for n in part.replicas if cluster.brokers[n].up]
        partitions.append(
            R.MetadataResponsePartition(
                error_code=0 if part.leader >= 0 else code(LeaderNotAvailableError),
                partition_index=part.index,
                leader_id=part.leader,
                leader_epoch=part.leader_epoch,
                replica_nodes=list(part.replicas),
                isr_nodes=up,
                offline_replicas=[n for n in part.replicas if n not in up],
            )
        )
    return R.MetadataResponseTopic(name=name, topic_id=topic.topic_id, partitions=partitions)


def handle_find_coordinator(
    ctx: ConnectionHandler, request: FindCoordinatorRequest, version: int
) -> Any:
    R = FindCoordinatorResponse
    keys = request.coordinator_keys if version >= 4 else [request.key]
    found = []
    for key in keys:
        if request.key_type not in (0, 1) or (request.key_type == 1 and not key):
            found.append(R.Coordinator(key, -1, "", -1, code(InvalidRequest)))
            continue
        node = ctx.state.coordinator(key)
        if node < 0:
            found.append(R.Coordinator(key, -1, "", -1, code(CoordinatorNotAvailable)))
            continue
        broker = ctx.state.brokers[node]
        found.append(R.Coordinator(key, node, broker.host, broker.port, 0))
    if version >= 4:
        return R(coordinators=found)
    (c,) = found
    return R(error_code=c.error_code, node_id=c.node_id, host=c.host, port=c.port)


def handle_create_topics(ctx: ConnectionHandler, request: CreateTopicsRequest, version: int) -> Any:
    cluster = ctx.state
    R = CreateTopicsResponse
    names = [t.name for t in request.topics]
    results = []
    for t in request.topics:
        result = R.CreatableTopicResult(name=t.name, configs=[])
        problem, error, replicas = _placement(cluster, t)
        if names.count(t.name) > 1:
            problem, error = f"topic {t.name!r} is listed more than once", code(InvalidRequest)
        if not problem and not request.validate_only:
            topic = cluster.create_topic(t.name, replicas=replicas)
            # (_placement refused null values, as Kafka does)
            topic.configs.update({c.name: c.value for c in t.configs if c.value is not None})
            result.topic_id = topic.topic_id
        if problem:
            result.error_code, result.error_message = error, problem
            result.num_partitions = result.replication_factor = -1
        else:
            result.num_partitions, result.replication_factor = len(replicas), len(replicas[0])
        results.append(result)
    return R(topics=results)


#: (problem, error code, replicas per partition): a topic's placement, or why it has none.
_Placement = tuple[str | None, int, list[list[int]]]


def _placement(cluster: ClusterState, t: Any) -> _Placement:
    """(problem, error code, replicas per partition) to create topic ``t``, as Kafka checks."""
    refused = _creation_problem(cluster, t)
    if refused is not None:
        return refused[0], refused[1], []
    if t.assignments:
        return _assigned_placement(cluster, t)
    return _spread_placement(cluster, t)


def _creation_problem(cluster: ClusterState, t: Any) -> tuple[str, int] | None:
    """Why topic ``t`` cannot be created wherever it goes: its name, its configs, or
    a topic of that name already there."""
    problem = topic_name_problem(t.name)
    if problem:
        return problem, code(InvalidTopic)
    if t.name in cluster.topics:
        return f"Topic '{t.name}' already exists.", code(TopicAlreadyExists)
    nulls = [c.name for c in t.configs if c.value is None]
    if nulls:
        return (
            f"Null value not supported for topic configs: {','.join(nulls)}",
            code(InvalidConfig),
        )
    return None


def _assigned_placement(cluster: ClusterState, t: Any) -> _Placement:
    """The replicas ``t`` assigns partition by partition, once checked."""
    if t.num_partitions != -1 or t.replication_factor != -1:
        return (
            "assignments need num_partitions and replication_factor -1",
            code(InvalidRequest),
            [],
        )
    by_index = {a.partition_index: list(a.broker_ids) for a in t.assignments}
    if sorted(by_index) != list(range(len(by_index))) or any(
        not ids or set(ids) - set(cluster.brokers) or len(set(ids)) != len(ids)
        for ids in by_index.values()
    ):
        return "bad replica assignment", code(InvalidReplicaAssignment), []
    return None, 0, [by_index[i] for i in range(len(by_index))]


def _spread_placement(cluster: ClusterState, t: Any) -> _Placement:
    """``t``'s partitions (or the cluster's default count) spread round the brokers up."""
    nodes = sorted(n for n, b in cluster.brokers.items() if b.up)
    partitions = cluster.default_partitions if t.num_partitions == -1 else t.num_partitions
    rf = cluster.default_replication if t.replication_factor == -1 else t.replication_factor
    if partitions <= 0:
        return (
            f"number of partitions must be larger than 0, not {partitions}",
            code(InvalidPartitions),
            [],
        )
    if rf <= 0 or rf > len(nodes):
        return (
            f"replication factor {rf} with {len(nodes)} brokers up",
            code(InvalidReplicationFactor),
            [],
        )
    return None, 0, [[nodes[(p + i) % len(nodes)] for i in range(rf)] for p in range(partitions)]


SERVED_APIS: dict[int, Callable[[ConnectionHandler, Any, int], Any]] = {
    0: handle_produce,
    1: handle_fetch,
    2: handle_list_offsets,
    3: handle_metadata,
    8: handle_offset_commit,
    9: handle_offset_fetch,
    10: handle_find_coordinator,
    18: handle_api_versions,
    19: handle_create_topics,
    23: handle_offset_for_leader_epoch,
    **GROUP_APIS,
    **ADMIN_APIS,
    **TXN_APIS,
    **TXN_ADMIN_APIS,
    **OPERATOR_APIS,
    **share_apis(),
    **TELEMETRY_APIS,
}
#: APIs served but advertised only once enabled (KIP-714's need a telemetry plugin in Kafka).
OPT_IN_APIS = frozenset(TELEMETRY_APIS)
