"""The admin client's value types: what it is asked to do and what it answers.

Every result that covers several items (topics, partitions, groups, config
resources) carries an ``error`` per item: ``None``, or the
:class:`~afkak.common.BrokerResponseError` the broker answered for that item,
so one bad topic does not hide what happened to the others.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import attrs

from afkak.common import BrokerMetadata, BrokerResponseError, ErrorCode, TopicAndPartition


def _error_or_none(error_code: int, message: str | None = None) -> BrokerResponseError | None:
    """The error a code (and the broker's message, if any) stands for; None for 0."""
    if not error_code:
        return None
    return BrokerResponseError.from_errno(error_code, *((message,) if message else ()))


def _str_dict(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


def assigned_partitions(assignment: Any) -> tuple[TopicAndPartition, ...]:
    """The partitions of a KIP-848 or KIP-932 describe answer's ``Assignment``."""
    return tuple(
        TopicAndPartition(t.topic_name, p)
        for t in assignment.topic_partitions
        for p in t.partitions
    )


def left_out(item: object) -> BrokerResponseError:
    """The error of an item the broker's response did not mention."""
    return BrokerResponseError.from_errno(
        ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker's response left out {item}"
    )


# -- topics ------------------------------------------------------------------


@attrs.frozen
class NewTopic:
    """A topic to create: a partition count and replication factor (-1: the
    broker's defaults), or an explicit ``replica_assignment`` (one list of
    broker ids per partition, the first of each its preferred leader)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: tuple[tuple[int, ...], ...] | None = attrs.field(
        default=None,
        kw_only=True,
        converter=lambda v: None if v is None else tuple(tuple(r) for r in v),
    )
    configs: Mapping[str, str] = attrs.field(factory=dict, converter=_str_dict, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.replica_assignment is not None and (
            self.num_partitions != -1 or self.replication_factor != -1
        ):
            raise ValueError("give either replica_assignment or num_partitions/replication_factor")


@attrs.frozen
class CreatedTopic:
    """What CreateTopics answered for one topic (``-1`` where the broker did not say)."""

    name: str
    error: BrokerResponseError | None
    topic_id: UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@attrs.frozen
class DeletedTopic:
    """What DeleteTopics answered for one topic, named or given by id."""

    name: str | None
    topic_id: UUID | None
    error: BrokerResponseError | None


@attrs.frozen
class NewPartitions:
    """Grow a topic to ``total_count`` partitions; ``assignments`` places the new ones."""

    total_count: int
    assignments: tuple[tuple[int, ...], ...] | None = attrs.field(
        default=None,
        converter=lambda v: None if v is None else tuple(tuple(r) for r in v),
    )


@attrs.frozen
class TopicListing:
    name: str
    topic_id: UUID | None
    internal: bool


@attrs.frozen
class PartitionDescription:
    partition: int
    #: The leader's node id; -1 when the partition has none.
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: BrokerResponseError | None = None
    #: The leader's epoch; -1 when the broker did not say.
    leader_epoch: int = -1
    #: KIP-966's eligible leader replicas (replicas out of the ISR that may still be
    #: elected without data loss) and the last known ELR; None where the broker has no
    #: DescribeTopicPartitions (before Kafka 3.8) or ELR is off.
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@attrs.frozen
class TopicDescription:
    name: str
    topic_id: UUID | None
    internal: bool
    partitions: tuple[PartitionDescription, ...]
    error: BrokerResponseError | None = None


@attrs.frozen
class ClusterDescription:
    cluster_id: str | None
    #: Node id of the controller, -1 when the cluster did not name one.
    controller_id: int
    brokers: tuple[BrokerMetadata, ...]

    @property
    def controller(self) -> BrokerMetadata | None:
        return next((b for b in self.brokers if b.node_id == self.controller_id), None)


# -- configs -----------------------------------------------------------------


class ResourceType(enum.IntEnum):
    """Kafka's ACL resource types (configs number theirs apart: :class:`ConfigResourceType`)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    CLUSTER = 4  # ACLs call resource type 4 CLUSTER, configs call it BROKER
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7
    BROKER_LOGGER = 8


class ConfigResourceType(enum.IntEnum):
    """Kafka's config resource types (``ConfigResource.Type``), numbered apart from ACLs'."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@attrs.frozen
class ConfigResource:
    """A topic (by name), a broker (by node id as a string, "" for the cluster default),
    a broker logger, a client metrics subscription or a group (Kafka 4's group configs).

    *type* takes :class:`ConfigResourceType` numbers; ``ResourceType.TOPIC`` and
    ``ResourceType.BROKER`` share theirs, ACLs' ``ResourceType.GROUP`` (3) is refused.
    """

    type: ConfigResourceType = attrs.field(converter=ConfigResourceType)
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, node_id: int | str) -> ConfigResource:
        return cls(ConfigResourceType.BROKER, str(node_id))

    @classmethod
    def group(cls, group_id: str) -> ConfigResource:
        return cls(ConfigResourceType.GROUP, group_id)

    @classmethod
    def client_metrics(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.CLIENT_METRICS, name)


@attrs.frozen
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@attrs.frozen
class ConfigEntry:
    name: str
    #: ``None`` for sensitive values and unset ones.
    value: str | None
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@attrs.frozen
class ResourceConfig:
    """A resource's described configs, by name."""

    resource: ConfigResource
    entries: Mapping[str, ConfigEntry]
    error: BrokerResponseError | None = None


@attrs.frozen
class ConfigChange:
    """One incremental change: set (or append, subtract) ``value``, or delete the key."""

    name: str
    value: str | None = None
    op: AlterOp = attrs.field(default=AlterOp.SET, converter=AlterOp)


@attrs.frozen
class ItemResult:
    """The outcome of an operation on one item that answers nothing but success or an error."""

    error: BrokerResponseError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# -- offsets and records -----------------------------------------------------


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class OffsetSpec(enum.IntEnum):
    """Special times of ListOffsets; any other value >= 0 is a timestamp in ms."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3


@attrs.frozen
class ListedOffset:
    """An offset ListOffsets found, with its record's timestamp (-1 if none) and leader epoch."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1
    error: BrokerResponseError | None = None


@attrs.frozen
class DeletedRecords:
    """The partition's new log start offset (-1 on error)."""

    low_watermark: int
    error: BrokerResponseError | None = None


@attrs.frozen
class OffsetReset:
    """A planned reset of a group's position in one partition (committed -1: none)."""

    current: int
    target: int


# -- ACLs and SCRAM ------------------------------------------------------------


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@attrs.frozen
class AclBinding:
    """One ACL; as a filter (describe/delete), ``None`` strings and ANY values match all."""

    resource_type: ResourceType = attrs.field(converter=ResourceType)
    resource_name: str | None
    principal: str | None
    host: str | None
    operation: AclOperation = attrs.field(converter=AclOperation)
    permission: AclPermission = attrs.field(converter=AclPermission)
    pattern_type: PatternType = attrs.field(default=PatternType.LITERAL, converter=PatternType)


@attrs.frozen
class AclDeletion:
    """What one DeleteAcls filter matched (and deleted), or its error."""

    deleted: tuple[AclBinding, ...]
    error: BrokerResponseError | None = None


class ScramMechanism(enum.IntEnum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2


@attrs.frozen
class ScramCredentialInfo:
    mechanism: ScramMechanism = attrs.field(converter=ScramMechanism)
    iterations: int


@attrs.frozen
class UserScramCredentials:
    user: str
    credentials: tuple[ScramCredentialInfo, ...]
    error: BrokerResponseError | None = None


@attrs.frozen
class ScramUpsertion:
    """Set ``user``'s password for ``mechanism``; the salted password is computed here
    (the password never leaves the client)."""

    user: str
    mechanism: ScramMechanism = attrs.field(converter=ScramMechanism)
    password: str = attrs.field(repr=False)
    iterations: int = 4096
    salt: bytes | None = attrs.field(default=None, repr=False)


@attrs.frozen
class ScramDeletion:
    user: str
    mechanism: ScramMechanism = attrs.field(converter=ScramMechanism)
