"""Looking at consumer groups from outside: the names afkak.group has always had.

They are now part of :class:`afkak.admin.KafkaAdminClient`; these functions
delegate to it (and raise a group's error instead of reporting it).
"""

from __future__ import annotations

from collections.abc import Sequence

from twisted.internet.defer import Deferred

from afkak.admin import GroupDescription, GroupListing, KafkaAdminClient, PartitionLag
from afkak.client import ConsumerClient
from afkak.common import TopicAndPartition


def describe_group(client: ConsumerClient, group_id: str) -> Deferred[GroupDescription]:
    """Describe *group_id* (DescribeGroups at its coordinator)."""

    def only(results: dict[str, GroupDescription]) -> GroupDescription:
        description = results[group_id]
        if description.error is not None:
            raise description.error
        return description

    return KafkaAdminClient(client).describe_consumer_groups([group_id]).addCallback(only)


def list_groups(client: ConsumerClient) -> Deferred[list[GroupListing]]:
    """Every group of the cluster (ListGroups at every broker), sorted by id."""
    return KafkaAdminClient(client).list_consumer_groups()


def committed_offsets(
    client: ConsumerClient, group_id: str, topics: Sequence[str] | None = None
) -> Deferred[dict[TopicAndPartition, int]]:
    """The group's committed offsets: of every partition of *topics* (-1 where none),
    or of every partition it committed when *topics* is None."""
    return KafkaAdminClient(client).list_consumer_group_offsets(group_id, topics)


def group_lag(
    client: ConsumerClient,
    group_id: str,
    topics: Sequence[str] | None = None,
    *,
    isolation_level: str = "read_uncommitted",
) -> Deferred[dict[TopicAndPartition, PartitionLag]]:
    """Committed offset, log end (ListOffsets latest) and lag of each partition.

    For a group of ``read_committed`` consumers pass that *isolation_level*:
    the end is then the last stable offset.
    """
    return KafkaAdminClient(client).group_lag(group_id, topics, isolation_level=isolation_level)
