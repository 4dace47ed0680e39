"""The operator's cluster calls and their results: DescribeLogDirs (35, at each broker),
feature levels (ApiVersions v3+, 18, at any broker; UpdateFeatures, 57, forwarded to the
controller) and the KRaft metadata quorum (DescribeQuorum, 55, forwarded to it)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from afkak._version import __version__
from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError, TopicAndPartition
from afkak.protocol.messages import (
    ApiVersionsRequest,
    DescribeLogDirsRequest,
    DescribeQuorumRequest,
    UpdateFeaturesRequest,
)

from ._types import ItemResult, _error_or_none, left_out

#: The KRaft metadata log: DescribeQuorum asks about its only partition.
METADATA_TOPIC = "__cluster_metadata"


# -- log directories -----------------------------------------------------------


@attrs.frozen
class ReplicaInfo:
    """One replica in a log directory: its size in bytes, how far it is behind its log
    end (``offset_lag``), and whether it is the future replica of a move between dirs."""

    size: int
    offset_lag: int
    is_future: bool = False


@attrs.frozen
class LogDirDescription:
    """One log directory of a broker: its replicas and space (-1: not reported, before
    Kafka 3.3), or its error (KAFKA_STORAGE_ERROR for an offline dir)."""

    replicas: Mapping[TopicAndPartition, ReplicaInfo] = attrs.field(factory=dict)
    total_bytes: int = -1
    usable_bytes: int = -1
    error: BrokerResponseError | None = None


class DescribeLogDirsCall(VersionedCall):
    """The log dirs of one broker, with the replicas of *partitions* (all when None)."""

    request_class = DescribeLogDirsRequest

    def __init__(self, partitions: Sequence[TopicAndPartition] | None) -> None:
        self.partitions = partitions

    def build(self, version: int) -> Any:
        R = DescribeLogDirsRequest
        if self.partitions is None:
            return R(topics=None)
        topics: dict[str, list[int]] = {}
        for tp in self.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        return R(topics=[R.DescribableLogDirTopic(t, parts) for t, parts in topics.items()])

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(response.error_code, "DescribeLogDirs")
        return [
            {
                d.log_dir: LogDirDescription(
                    {
                        TopicAndPartition(t.name, p.partition_index): ReplicaInfo(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in d.topics
                        for p in t.partitions
                    },
                    d.total_bytes,
                    d.usable_bytes,
                    _error_or_none(d.error_code),
                )
                for d in response.results
            }
        ]


# -- features ------------------------------------------------------------------


@attrs.frozen
class VersionRange:
    """A feature's version range: what a broker supports, or the finalized level(s)."""

    min_version: int
    max_version: int


@attrs.frozen
class FeatureMetadata:
    """The cluster's finalized feature levels (``finalized[name].max_version`` is the
    level in force), their epoch, and the range the answering broker supports."""

    finalized: Mapping[str, VersionRange]
    finalized_epoch: int
    supported: Mapping[str, VersionRange]


class FeatureUpgradeType(enum.IntEnum):
    """How UpdateFeatures may move a level (KIP-778): up, down keeping metadata, or
    down losing it."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@attrs.frozen
class FeatureUpdate:
    """The new level of one feature (0 removes the feature, a downgrade)."""

    max_version_level: int
    upgrade_type: FeatureUpgradeType = FeatureUpgradeType.UPGRADE


class ApiVersionsFeaturesCall(VersionedCall):
    """ApiVersions v3+ for its feature fields (the connection negotiated versions already)."""

    request_class = ApiVersionsRequest
    min_version = 3
    min_version_reason = "feature levels need v3: KIP-584, Kafka 2.7"

    def build(self, version: int) -> Any:
        return ApiVersionsRequest(client_software_name="afkak", client_software_version=__version__)

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(response.error_code, "ApiVersions")
        return [
            FeatureMetadata(
                {
                    f.name: VersionRange(f.min_version_level, f.max_version_level)
                    for f in response.finalized_features
                },
                response.finalized_features_epoch,
                {
                    f.name: VersionRange(f.min_version, f.max_version)
                    for f in response.supported_features
                },
            )
        ]


class UpdateFeaturesCall(VersionedCall):
    """Set feature levels; the answer per feature (a top-level error is every one's)."""

    request_class = UpdateFeaturesRequest

    def __init__(
        self, updates: Mapping[str, FeatureUpdate], timeout_ms: int, validate_only: bool
    ) -> None:
        self.updates = updates
        self.timeout_ms = timeout_ms
        self.validate_only = validate_only
        if validate_only:
            self.min_version = 1  # v0 would apply what was only to be checked

    def build(self, version: int) -> Any:
        R = UpdateFeaturesRequest
        return R(
            timeout_ms=self.timeout_ms,
            feature_updates=[
                R.FeatureUpdateKey(
                    name,
                    u.max_version_level,
                    # v0 has only the flag, v1+ only the type.
                    allow_downgrade=version == 0 and u.upgrade_type != FeatureUpgradeType.UPGRADE,
                    upgrade_type=int(u.upgrade_type) if version >= 1 else 1,
                )
                for name, u in self.updates.items()
            ],
            validate_only=self.validate_only,
        )

    def parse(self, response: Any) -> list[Any]:
        top = _error_or_none(response.error_code, response.error_message)
        if top is not None or self.version >= 2:
            return [{name: ItemResult(top) for name in self.updates}]
        answered = {
            r.feature: ItemResult(_error_or_none(r.error_code, r.error_message))
            for r in response.results
        }
        return [{name: answered.get(name, ItemResult(left_out(name))) for name in self.updates}]


# -- the metadata quorum -----------------------------------------------------------


@attrs.frozen
class QuorumReplica:
    """A voter or observer of the metadata log: its log end offset and when it last
    fetched and last caught up with the leader (ms; -1 when unknown)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@attrs.frozen
class QuorumInfo:
    """The KRaft metadata quorum: leader, epoch, high watermark, voters and observers."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]


class DescribeQuorumCall(VersionedCall):
    request_class = DescribeQuorumRequest

    def build(self, version: int) -> Any:
        R = DescribeQuorumRequest
        return R(topics=[R.TopicData(METADATA_TOPIC, [R.PartitionData(0)])])

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(
            response.error_code, *([response.error_message] if response.error_message else [])
        )
        for t in response.topics:
            for p in t.partitions:
                BrokerResponseError.raise_for_errno(p.error_code, f"{METADATA_TOPIC} partition")
                return [
                    QuorumInfo(
                        p.leader_id,
                        p.leader_epoch,
                        p.high_watermark,
                        tuple(_replicas(p.current_voters)),
                        tuple(_replicas(p.observers)),
                    )
                ]
        raise left_out(f"the {METADATA_TOPIC} partition")


def _replicas(states: Any) -> list[QuorumReplica]:
    return [
        QuorumReplica(
            r.replica_id, r.log_end_offset, r.last_fetch_timestamp, r.last_caught_up_timestamp
        )
        for r in states
    ]
