"""The operator's cluster APIs the fake cluster serves: DescribeLogDirs, the feature
levels (ApiVersions v3+ reports them, UpdateFeatures changes them) and DescribeQuorum.

Each broker has one log directory, ``/fake/broker-N/kafka-logs``, holding its replicas
(a replica's size is its partition's stored bytes, never behind its leader).  The
metadata quorum is the controller alone (the first live broker) as its only voter,
the other brokers its observers, all caught up; its high watermark is the metadata
offset, which a feature update moves on.  Feature levels start with
``metadata.version`` only (no ``transaction.version``, so producers keep the
transaction protocol they would use against the fake cluster otherwise); tests set
``cluster.state.features`` for more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from afkak._broker_errors import InvalidUpdateVersion, NotController
from afkak.protocol.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from afkak.testing._lookup import code

if TYPE_CHECKING:
    from afkak.testing._cluster_state import ClusterState, RequestContext

METADATA_TOPIC = "__cluster_metadata"
DISK_BYTES = 1 << 40
#: Kafka's UpdateFeatures upgrade types (KIP-778).
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


@attrs.define
class FeatureLevels:
    """What the brokers support of each feature, the finalized levels, and the metadata
    offset (the features' epoch and the quorum's high watermark)."""

    supported: dict[str, tuple[int, int]] = attrs.field(
        factory=lambda: {"metadata.version": (7, 27)}
    )
    finalized: dict[str, int] = attrs.field(factory=lambda: {"metadata.version": 27})
    metadata_offset: int = 1

    def update(self, name: str, level: int, how: int) -> int:
        """Apply one update; the error code (0: applied)."""
        low, high = self.supported.get(name, (0, 0))
        current = self.finalized.get(name, 0)
        downgrade = level < current
        if (downgrade and how == UPGRADE) or (level and not low <= level <= high):
            return code(InvalidUpdateVersion)
        if level:
            self.finalized[name] = level
        else:
            self.finalized.pop(name, None)
        self.metadata_offset += 1
        return 0


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
    trial = attrs.evolve(features, finalized=dict(features.finalized))
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


OPERATOR_APIS: dict[int, Callable[[RequestContext, Any, int], Any]] = {
    35: handle_describe_log_dirs,
    55: handle_describe_quorum,
    57: handle_update_features,
}
