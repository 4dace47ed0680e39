"""Which errors prove cached metadata stale, and what exactly to forget.

A broker's answer names the partition or group it is about, so the client
forgets just that: a partition's leader, a whole topic, or one group's
coordinator.  The next request that needs it loads it again.
"""

from __future__ import annotations

from typing import Any

from twisted.python.failure import Failure

from afkak.common import BrokerConnectionError, ErrorCode, RequestTimedOutError, TopicAndPartition

from ._metadata import MetadataCache

#: The topic is gone or was recreated.
TOPIC_GONE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)
#: The partition's leadership moved.
LEADER_MOVED = frozenset(
    {
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
)
#: The group's coordinator moved.
COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def forget_for_error(
    cache: MetadataCache, error: int, key: TopicAndPartition | None, group: str | None
) -> None:
    """Forget what broker error *error*, about partition *key* or *group*, proved stale."""
    if key is not None:
        if error in TOPIC_GONE:
            cache.reset_topics(key.topic)
        elif error in LEADER_MOVED:
            cache.reset_leader(key)
    if group is not None and error in COORDINATOR_MOVED:
        cache.reset_groups(group)


def forget_for_responses(
    cache: MetadataCache, responses: list[Any], group: str | None = None
) -> None:
    """Apply :func:`forget_for_error` to each response tuple with an ``error``."""
    for r in responses:
        if r.error:
            forget_for_error(cache, r.error, TopicAndPartition(r.topic, r.partition), group)


def lost_broker(failure: Failure) -> bool:
    """Whether a request failed because its broker may be gone (lost or silent)."""
    return failure.check(BrokerConnectionError, RequestTimedOutError) is not None
