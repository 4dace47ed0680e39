"""Finding what a request names (topic by name or id, partition, leader), with Kafka's errors."""

from __future__ import annotations

import re
from typing import Protocol
from uuid import UUID

from afkak._broker_errors import (
    BrokerResponseError,
    FencedLeaderEpoch,
    NotLeaderForPartitionError,
    UnknownLeaderEpoch,
    UnknownTopicId,
    UnknownTopicOrPartitionError,
)
from afkak.testing._state import FakePartition, FakeTopic


class Topics(Protocol):
    """The cluster's topics, by name and by id."""

    topics: dict[str, FakeTopic]
    topics_by_id: dict[UUID, FakeTopic]


def code(error: type[BrokerResponseError]) -> int:
    """The error code of a broker error class (each concrete class has one)."""
    assert error.errno is not None
    return error.errno


UNKNOWN_TOPIC_OR_PARTITION = code(UnknownTopicOrPartitionError)
UNKNOWN_TOPIC_ID = code(UnknownTopicId)
NOT_LEADER_OR_FOLLOWER = code(NotLeaderForPartitionError)
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def topic_name_problem(name: str | None) -> str | None:
    """Why ``name`` is not a legal Kafka topic name (None if it is)."""
    if not name or name in (".", ".."):
        return f"topic name {name!r} is illegal"
    if not _LEGAL_TOPIC.match(name):
        return f"topic name {name!r} is illegal: it must be 1-249 of [a-zA-Z0-9._-]"
    return None


def find_topic(
    cluster: Topics, name: str | None, topic_id: UUID | None, by_id: bool
) -> tuple[FakeTopic | None, int]:
    """The topic a request names, or None and the error code for an unknown one."""
    if by_id:
        topic = cluster.topics_by_id.get(topic_id) if topic_id is not None else None
        return topic, 0 if topic is not None else UNKNOWN_TOPIC_ID
    topic = cluster.topics.get(name or "")
    return topic, 0 if topic is not None else UNKNOWN_TOPIC_OR_PARTITION


def find_partition(topic: FakeTopic | None, index: int) -> FakePartition | None:
    if topic is None or not 0 <= index < len(topic.partitions):
        return None
    return topic.partitions[index]


def leader_error(
    part: FakePartition, node: int, current_leader_epoch: int = -1, followers: bool = False
) -> int:
    """Kafka's error for a leader-only request to ``node`` (0 when it leads ``part``).

    With *followers* (a consumer's Fetch v11+, KIP-392) any replica answers.
    A client's ``current_leader_epoch`` (-1: unknown) older than the leader's
    is fenced; a newer one is unknown to this broker.
    """
    if part.leader != node and not (followers and part.leader >= 0 and node in part.replicas):
        return NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch >= 0:
        if current_leader_epoch < part.leader_epoch:
            return code(FencedLeaderEpoch)
        if current_leader_epoch > part.leader_epoch:
            return code(UnknownLeaderEpoch)
    return 0
