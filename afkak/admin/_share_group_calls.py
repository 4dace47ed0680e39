"""Share groups (KIP-932) for operators: ShareGroupDescribe (77) and the share-group
offset APIs, DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92), all at the group's coordinator.

A share group has no committed offsets: each share-partition has a start
offset (records before it are done with) and the in-flight records after it.
Altering or deleting start offsets needs the group to be empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError, TopicAndPartition
from afkak.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)

from ._types import ItemResult, _error_or_none, assigned_partitions, left_out


@attrs.frozen
class ShareMemberDescription:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    topics: tuple[str, ...]
    #: The partitions assigned (other members may read them too).
    assignment: tuple[TopicAndPartition, ...]


@attrs.frozen
class ShareGroupDescription:
    group_id: str
    #: "Empty", "Stable", "Dead" (or "" with an error).
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]
    error: BrokerResponseError | None = None


@attrs.frozen
class SharePartitionOffset:
    """A share-partition's start offset (-1: never read), and how many records after it
    are still to be consumed (-1: unknown; Kafka 4.1+ counts it)."""

    start_offset: int
    leader_epoch: int
    lag: int = -1
    error: BrokerResponseError | None = None


class ShareGroupDescribeCall(VersionedCall):
    request_class = ShareGroupDescribeRequest

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def build(self, version: int) -> Any:
        return ShareGroupDescribeRequest(group_ids=[self.group_id])

    def parse(self, response: Any) -> list[ShareGroupDescription]:
        found = [g for g in response.groups if g.group_id == self.group_id]
        if not found:
            return [ShareGroupDescription(self.group_id, "", -1, -1, "", (), left_out("the group"))]
        g = found[0]
        members = tuple(
            ShareMemberDescription(
                member_id=m.member_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                rack_id=m.rack_id,
                topics=tuple(m.subscribed_topic_names),
                assignment=assigned_partitions(m.assignment),
            )
            for m in g.members
        )
        return [
            ShareGroupDescription(
                group_id=g.group_id,
                state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor=g.assignor_name,
                members=members,
                error=_error_or_none(g.error_code, g.error_message),
            )
        ]


class DescribeShareGroupOffsetsCall(VersionedCall):
    """Start offsets of *partitions* ({topic: partitions}), or of every partition the group
    read when None.  Parses to ``[{partition: SharePartitionOffset}]``; a group-level
    error raises."""

    request_class = DescribeShareGroupOffsetsRequest

    def __init__(self, group_id: str, partitions: Mapping[str, Sequence[int]] | None) -> None:
        self.group_id = group_id
        self.partitions = partitions

    def build(self, version: int) -> Any:
        R = DescribeShareGroupOffsetsRequest
        topics = None
        if self.partitions is not None:
            topics = [
                R.DescribeShareGroupOffsetsRequestTopic(t, list(ps))
                for t, ps in self.partitions.items()
            ]
        return R(groups=[R.DescribeShareGroupOffsetsRequestGroup(self.group_id, topics)])

    def parse(self, response: Any) -> list[dict[TopicAndPartition, SharePartitionOffset]]:
        found = [g for g in response.groups if g.group_id == self.group_id]
        if not found:
            raise left_out(f"group {self.group_id!r}")
        g = found[0]
        BrokerResponseError.raise_for_errno(g.error_code, f"share group {self.group_id!r}")
        offsets = {
            TopicAndPartition(t.topic_name, p.partition_index): SharePartitionOffset(
                p.start_offset,
                p.leader_epoch,
                p.lag if self.version >= 1 else -1,
                _error_or_none(p.error_code, p.error_message),
            )
            for t in g.topics
            for p in t.partitions
        }
        return [offsets]


class AlterShareGroupOffsetsCall(VersionedCall):
    """Set start offsets of an empty share group; ``[{partition: ItemResult}]``."""

    request_class = AlterShareGroupOffsetsRequest

    def __init__(self, group_id: str, offsets: Mapping[TopicAndPartition, int]) -> None:
        self.group_id = group_id
        self.offsets = offsets

    def build(self, version: int) -> Any:
        R = AlterShareGroupOffsetsRequest
        topics: dict[str, list[Any]] = {}
        for tp, offset in sorted(self.offsets.items()):
            topics.setdefault(tp.topic, []).append(
                R.AlterShareGroupOffsetsRequestPartition(tp.partition, offset)
            )
        return R(
            group_id=self.group_id,
            topics=[R.AlterShareGroupOffsetsRequestTopic(t, ps) for t, ps in topics.items()],
        )

    def parse(self, response: Any) -> list[dict[TopicAndPartition, ItemResult]]:
        BrokerResponseError.raise_for_errno(response.error_code, f"share group {self.group_id!r}")
        results = {tp: ItemResult(left_out("the partition")) for tp in self.offsets}
        for t in response.responses:
            for p in t.partitions:
                tp = TopicAndPartition(t.topic_name, p.partition_index)
                results[tp] = ItemResult(_error_or_none(p.error_code, p.error_message))
        return [results]


class DeleteShareGroupOffsetsCall(VersionedCall):
    """Forget an empty share group's state of *topics*; ``[{topic: ItemResult}]``."""

    request_class = DeleteShareGroupOffsetsRequest

    def __init__(self, group_id: str, topics: Sequence[str]) -> None:
        self.group_id = group_id
        self.topics = topics

    def build(self, version: int) -> Any:
        R = DeleteShareGroupOffsetsRequest
        return R(
            group_id=self.group_id,
            topics=[R.DeleteShareGroupOffsetsRequestTopic(t) for t in self.topics],
        )

    def parse(self, response: Any) -> list[dict[str, ItemResult]]:
        BrokerResponseError.raise_for_errno(response.error_code, f"share group {self.group_id!r}")
        results = {t: ItemResult(left_out("the topic")) for t in self.topics}
        for t in response.responses:
            results[t.topic_name] = ItemResult(_error_or_none(t.error_code, t.error_message))
        return [results]
