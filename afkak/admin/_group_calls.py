"""ListGroups (16), DescribeGroups (15), ConsumerGroupDescribe (69), DeleteGroups (42)
and OffsetDelete (47).

ListGroups goes to every broker (each lists the groups it coordinates); the
others to the group's coordinator.  Member metadata and assignments of classic
"consumer" groups are decoded (whatever client the members run); other
protocol types are left as bytes.  ConsumerGroupDescribe describes the groups
of KIP-848's consumer protocol (and, during an online upgrade, their classic
members too); Kafka answers it GROUP_ID_NOT_FOUND for a classic group, which
DescribeGroups describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from afkak._errors import DecodeError
from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError, TopicAndPartition
from afkak.protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment, decode_subscription
from afkak.protocol.messages import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)

from ._types import ItemResult, _error_or_none, assigned_partitions, left_out

#: ListGroups filters by state from this version on, and by group type from the next.
STATES_FILTER_VERSION, TYPES_FILTER_VERSION = 4, 5
#: ConsumerGroupDescribe's MemberType (v1+, KIP-1099) of a consumer-protocol member.
CONSUMER_MEMBER = 1


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
    #: The consumer protocol's: the partitions the broker means the member to own
    #: (its assignment once reconciled), its epoch, its topic regex.
    target_assignment: tuple[TopicAndPartition, ...] | None = None
    member_epoch: int | None = None
    topic_regex: str | None = None
    #: In a consumer-protocol group: True for a consumer-protocol member, False for a
    #: classic member not yet upgraded (Java's ``upgraded``); None when unknown.
    upgraded: bool | None = None


@attrs.frozen
class GroupDescription:
    group_id: str
    #: Classic groups: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable" or
    #: "Dead"; consumer-protocol groups: "Empty", "Assigning", "Reconciling", "Stable" or
    #: "Dead".
    state: str
    protocol_type: str
    #: The chosen protocol (for consumer groups, the assignor's name).
    protocol: str
    members: tuple[MemberDescription, ...]
    error: BrokerResponseError | None = None
    #: "classic" or "consumer" (KIP-848's protocol: described by ConsumerGroupDescribe).
    group_type: str = "classic"
    #: The consumer protocol's group epoch and the epoch of its target assignment.
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@attrs.frozen
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


class ListGroupsCall(VersionedCall):
    """The groups one broker coordinates; *states* filters (at the broker from v4);
    *types* ("classic", "consumer", "share") too, from v5 (before: by protocol type)."""

    request_class = ListGroupsRequest

    def __init__(self, states: Sequence[str] | None, types: Sequence[str] = ()) -> None:
        self.states = None if states is None else list(states)
        self.types = list(types)

    def build(self, version: int) -> Any:
        states = self.states if self.states and version >= STATES_FILTER_VERSION else []
        types = self.types if version >= TYPES_FILTER_VERSION else []
        return ListGroupsRequest(states_filter=states, types_filter=types)

    def parse(self, response: Any) -> list[GroupListing]:
        BrokerResponseError.raise_for_errno(response.error_code, "listing groups")
        listings = [
            GroupListing(g.group_id, g.protocol_type, g.group_state or "") for g in response.groups
        ]
        if self.states and self.version < STATES_FILTER_VERSION:
            wanted = {s.lower() for s in self.states}
            listings = [g for g in listings if g.state.lower() in wanted]
        if self.types and self.version < TYPES_FILTER_VERSION:
            listings = [g for g in listings if g.protocol_type in self.types]
        return listings


class DescribeGroupsCall(VersionedCall):
    request_class = DescribeGroupsRequest

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, version: int) -> Any:
        return DescribeGroupsRequest(groups=[self.group_id])

    def parse(self, response: Any) -> list[GroupDescription]:
        found = [g for g in response.groups if g.group_id == self.group_id]
        if not found:
            return [GroupDescription(self.group_id, "", "", "", (), left_out("the group"))]
        g = found[0]
        consumer = g.protocol_type == PROTOCOL_TYPE
        return [
            GroupDescription(
                group_id=g.group_id,
                state=g.group_state,
                protocol_type=g.protocol_type,
                protocol=g.protocol_data,
                members=tuple(_member(m, consumer) for m in g.members),
                error=_error_or_none(g.error_code, g.error_message),
            )
        ]


class ConsumerGroupDescribeCall(VersionedCall):
    """KIP-848's describe: a classic group (or none) answers GROUP_ID_NOT_FOUND."""

    request_class = ConsumerGroupDescribeRequest

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, version: int) -> Any:
        return ConsumerGroupDescribeRequest(group_ids=[self.group_id])

    def parse(self, response: Any) -> list[GroupDescription]:
        found = [g for g in response.groups if g.group_id == self.group_id]
        if not found:
            return [GroupDescription(self.group_id, "", "", "", (), left_out("the group"))]
        g = found[0]
        return [
            GroupDescription(
                group_id=g.group_id,
                state=g.group_state,
                protocol_type=PROTOCOL_TYPE,
                protocol=g.assignor_name,
                members=tuple(_consumer_member(m) for m in g.members),
                error=_error_or_none(g.error_code, g.error_message),
                group_type="consumer",
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
            )
        ]


def _consumer_member(m: Any) -> MemberDescription:
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topics=tuple(m.subscribed_topic_names),
        assignment=assigned_partitions(m.assignment),
        metadata=b"",
        raw_assignment=b"",
        target_assignment=assigned_partitions(m.target_assignment),
        member_epoch=m.member_epoch,
        topic_regex=m.subscribed_topic_regex or None,  # Kafka 4.4 answers "" for none
        upgraded=None if m.member_type < 0 else m.member_type == CONSUMER_MEMBER,
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


class DeleteGroupsCall(VersionedCall):
    request_class = DeleteGroupsRequest

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, version: int) -> Any:
        return DeleteGroupsRequest(groups_names=[self.group_id])

    def parse(self, response: Any) -> list[ItemResult]:
        found = [r for r in response.results if r.group_id == self.group_id]
        if not found:
            return [ItemResult(left_out("the group"))]
        return [ItemResult(_error_or_none(found[0].error_code))]


class OffsetDeleteCall(VersionedCall):
    """Forget a group's committed offsets of some partitions (the group must not use them)."""

    request_class = OffsetDeleteRequest

    def __init__(self, group_id: str, partitions: Sequence[TopicAndPartition]) -> None:
        self.group_id = group_id
        self.partitions = partitions

    def build(self, version: int) -> Any:
        R = OffsetDeleteRequest
        topics: dict[str, list[int]] = {}
        for tp in self.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        return R(
            group_id=self.group_id,
            topics=[
                R.OffsetDeleteRequestTopic(name, [R.OffsetDeleteRequestPartition(p) for p in ps])
                for name, ps in topics.items()
            ],
        )

    def parse(self, response: Any) -> list[Any]:
        group_error = _error_or_none(response.error_code)
        results = {
            tp: ItemResult(group_error or left_out("the partition")) for tp in self.partitions
        }
        if group_error is None:
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicAndPartition(t.name, p.partition_index)
                    results[tp] = ItemResult(_error_or_none(p.error_code))
        return [results]


class CommittedOffsetsCall(VersionedCall):
    """OffsetFetch of a group's offsets in *topics* ({name: partitions}), in the
    single-group layout.

    Parses to ``[ItemResult (the group's error), {partition: committed offset}]``.
    """

    request_class = OffsetFetchRequest
    min_version, max_version = 2, 7

    def __init__(self, group_id: str, topics: dict[str, list[int]]) -> None:
        self.group_id = group_id
        self.topics = topics

    def build(self, version: int) -> Any:
        R = OffsetFetchRequest
        wanted = [
            R.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in self.topics.items()
        ]
        return R(group_id=self.group_id, topics=wanted)

    def parse(self, response: Any) -> list[Any]:
        offsets = {}
        for t in response.topics:
            for p in t.partitions:
                BrokerResponseError.raise_for_errno(
                    p.error_code, f"offset of {t.name}/{p.partition_index}"
                )
                offsets[TopicAndPartition(t.name, p.partition_index)] = p.committed_offset
        return [ItemResult(_error_or_none(response.error_code)), offsets]
