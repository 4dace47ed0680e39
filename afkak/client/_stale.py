"""Which errors prove cached metadata stale, and what exactly to forget.

A broker's answer names the partition or group it is about, so the client
forgets just that: a partition's leader, a whole topic, or one group's
coordinator.  The next request that needs it loads it again.
"""

from __future__ import annotations

from typing import Any

from twisted.python.failure import Failure

from afkak.common import BrokerConnectionError, RequestTimedOutError, TopicAndPartition

from ._metadata import MetadataCache

#: The topic is gone or was recreated: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
#: INCONSISTENT_TOPIC_ID.
TOPIC_GONE = frozenset({3, 100, 103})
#: The partition's leadership moved: LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
#: KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH.
LEADER_MOVED = frozenset({5, 6, 56, 74, 75})
#: The group's coordinator moved: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
COORDINATOR_MOVED = frozenset({15, 16})


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
