"""Looking at consumer groups from outside: describe, list, committed offsets and lag.

For operations tooling; none of this joins a group.  Member metadata and
assignments of "consumer" groups are decoded (whatever client the members
run); other protocol types are left as bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred, gatherResults

from afkak._errors import DecodeError
from afkak.client import ConsumerClient
from afkak.common import (
    OFFSET_LATEST,
    BrokerMetadata,
    BrokerResponseError,
    OffsetRequest,
    TopicAndPartition,
)
from afkak.connection import VersionedRequest
from afkak.protocol.messages import (
    DescribeGroupsRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetFetchRequest,
)

from ._payloads import decode_assignment, decode_subscription
from ._requests import PROTOCOL_TYPE

#: OffsetFetch for "every committed partition" (null topics) in the single-group layout.
_FETCH_ALL_VERSIONS = (2, 7)


@attrs.frozen
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    #: Subscribed topics (consumer groups), else None.
    topics: tuple[str, ...] | None
    #: Assigned partitions (consumer groups), else None.
    assignment: tuple[TopicAndPartition, ...] | None
    metadata: bytes = attrs.field(repr=False)
    raw_assignment: bytes = attrs.field(repr=False)


@attrs.frozen
class GroupDescription:
    group_id: str
    #: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable" or "Dead".
    state: str
    protocol_type: str
    #: The chosen protocol (for consumer groups, the assignor's name).
    protocol: str
    members: tuple[MemberDescription, ...]


@attrs.frozen
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


@attrs.frozen
class PartitionLag:
    """A group's position in a partition: committed offset (-1: none), log end, lag."""

    committed: int
    log_end: int

    @property
    def lag(self) -> int:
        """Records not yet consumed; the whole log end when nothing is committed."""
        return self.log_end - max(self.committed, 0)


def describe_group(client: ConsumerClient, group_id: str) -> Deferred[GroupDescription]:
    """Describe *group_id* (DescribeGroups at its coordinator)."""
    return Deferred.fromCoroutine(_describe(client, group_id))


async def _describe(client: ConsumerClient, group_id: str) -> GroupDescription:
    response = await client.send_request_to_coordinator(
        group_id, DescribeGroupsRequest(groups=[group_id])
    )
    (g,) = [g for g in response.groups if g.group_id == group_id] or response.groups
    if g.error_code:
        BrokerResponseError.raise_for_errno(g.error_code, f"describing group {group_id!r}")
    consumer = g.protocol_type == PROTOCOL_TYPE
    return GroupDescription(
        group_id=g.group_id,
        state=g.group_state,
        protocol_type=g.protocol_type,
        protocol=g.protocol_data,
        members=tuple(_member(m, consumer) for m in g.members),
    )


def _member(m: Any, consumer: bool) -> MemberDescription:
    topics = assignment = None
    if consumer:
        try:
            topics = decode_subscription(m.member_metadata).topics if m.member_metadata else ()
            assignment = decode_assignment(m.member_assignment)
        except DecodeError:
            topics = assignment = None
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topics=topics,
        assignment=assignment,
        metadata=m.member_metadata,
        raw_assignment=m.member_assignment,
    )


def list_groups(client: ConsumerClient) -> Deferred[list[GroupListing]]:
    """Every group of the cluster (ListGroups at every broker), sorted by id."""
    return Deferred.fromCoroutine(_list(client))


async def _list(client: ConsumerClient) -> list[GroupListing]:
    metadata = await client.send_request_to_any_broker(MetadataRequest(topics=[]))
    brokers = [BrokerMetadata(b.node_id, b.host, b.port) for b in metadata.brokers]
    responses = await gatherResults(
        [client.send_request_to_broker(b, ListGroupsRequest()) for b in brokers],
        consumeErrors=True,
    )
    listings = {}
    for response in responses:
        BrokerResponseError.raise_for_errno(response.error_code, "listing groups")
        for g in response.groups:
            listings[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state)
    return [listings[k] for k in sorted(listings)]


def committed_offsets(
    client: ConsumerClient, group_id: str, topics: Sequence[str] | None = None
) -> Deferred[dict[TopicAndPartition, int]]:
    """The group's committed offsets: of every partition of *topics* (-1 where none),
    or of every partition it committed when *topics* is None."""
    return Deferred.fromCoroutine(_committed(client, group_id, topics))


async def _committed(
    client: ConsumerClient, group_id: str, topics: Sequence[str] | None
) -> dict[TopicAndPartition, int]:
    def build(version: int) -> Any:
        wanted = None
        if topics is not None:
            wanted = [
                OffsetFetchRequest.OffsetFetchRequestTopic(
                    name=t, partition_indexes=list(client.topic_partitions.get(t, ()))
                )
                for t in topics
            ]
        return OffsetFetchRequest(group_id=group_id, topics=wanted)

    if topics:
        await client.load_metadata_for_topics(*topics)
    response = await client.send_request_to_coordinator(
        group_id,
        VersionedRequest(OffsetFetchRequest, build),
        min_version=_FETCH_ALL_VERSIONS[0],
        max_version=_FETCH_ALL_VERSIONS[1],
    )
    BrokerResponseError.raise_for_errno(response.error_code, f"offsets of group {group_id!r}")
    offsets = {}
    for t in response.topics:
        for p in t.partitions:
            BrokerResponseError.raise_for_errno(
                p.error_code, f"offset of {t.name}/{p.partition_index}"
            )
            offsets[TopicAndPartition(t.name, p.partition_index)] = p.committed_offset
    return offsets


def group_lag(
    client: ConsumerClient, group_id: str, topics: Sequence[str] | None = None
) -> Deferred[dict[TopicAndPartition, PartitionLag]]:
    """Committed offset, log end (ListOffsets latest) and lag of each partition."""
    return Deferred.fromCoroutine(_lag(client, group_id, topics))


async def _lag(
    client: ConsumerClient, group_id: str, topics: Sequence[str] | None
) -> dict[TopicAndPartition, PartitionLag]:
    committed = await _committed(client, group_id, topics)
    if not committed:
        return {}
    ends = await client.send_offset_request(
        [OffsetRequest(tp.topic, tp.partition, OFFSET_LATEST, 1) for tp in sorted(committed)]
    )
    return {
        TopicAndPartition(r.topic, r.partition): PartitionLag(
            committed[TopicAndPartition(r.topic, r.partition)], r.offsets[0]
        )
        for r in ends
    }
