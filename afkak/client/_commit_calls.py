"""OffsetCommit (api key 8) and OffsetFetch (api key 9) for afkak's payload tuples.

The committed offset is stored exactly as given: choosing "next offset to
read" is the consumer's job.  Commit metadata may be given as ``str`` or UTF-8
``bytes`` and is returned by OffsetFetch as ``bytes`` (``None`` when unset),
as afkak always has.  From OffsetCommit v10 and OffsetFetch v10 topics are
named by id, and OffsetFetch v8+ wraps everything in a list of groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from afkak.common import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import OffsetCommitRequest as CommitMsg, OffsetFetchRequest as FetchMsg

from ._call import TopicIds, VersionedCall, group_by_topic

TOPIC_ID_VERSION = 10
GROUPS_VERSION = 8
NO_OFFSET = -1


def metadata_text(metadata: object) -> str:
    """Commit metadata as the ``str`` the protocol carries (``bytes`` must be UTF-8)."""
    if metadata is None or isinstance(metadata, str):
        return metadata  # type: ignore[return-value]
    if isinstance(metadata, (bytes, bytearray)):
        return bytes(metadata).decode("utf-8")
    raise TypeError(f"commit metadata must be str, bytes or None, not {metadata!r}")


def _metadata_bytes(metadata: str | None) -> bytes | None:
    return None if metadata is None else metadata.encode("utf-8")


class OffsetCommitCall(VersionedCall):
    """Commit offsets for a group (as a simple, non-member consumer by default)."""

    request_class = CommitMsg

    def __init__(
        self,
        group: str,
        payloads: Sequence[OffsetCommitRequest],
        generation_id: int,
        member_id: str,
        topic_ids: Mapping[str, UUID],
    ) -> None:
        self.group = group
        self.entries = [(p, metadata_text(p.metadata)) for p in payloads]
        self.generation_id = generation_id
        self.member_id = member_id
        self.ids = TopicIds({p.topic for p in payloads}, topic_ids, TOPIC_ID_VERSION - 1)
        self.max_version = self.ids.cap

    def build(self, version: int) -> Any:
        by_id = version >= TOPIC_ID_VERSION
        topic = CommitMsg.OffsetCommitRequestTopic
        part = CommitMsg.OffsetCommitRequestPartition
        return CommitMsg(
            group_id=self.group,
            generation_id_or_member_epoch=self.generation_id,
            member_id=self.member_id,
            topics=[
                topic(
                    name="" if by_id else name,
                    topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                    partitions=[
                        part(
                            partition_index=p.partition,
                            committed_offset=p.offset,
                            committed_metadata=m,
                        )
                        for p, m in group
                    ],
                )
                for name, group in group_by_topic(self.entries, lambda e: e[0].topic).items()
            ],
        )

    def parse(self, response: Any) -> list[OffsetCommitResponse]:
        by_id = self.version >= TOPIC_ID_VERSION
        return [
            OffsetCommitResponse(
                self.ids.name_of(t.topic_id if by_id else t.name), p.partition_index, p.error_code
            )
            for t in response.topics
            for p in t.partitions
        ]


class OffsetFetchCall(VersionedCall):
    """Fetch a group's committed offsets (-1 where none is committed)."""

    request_class = FetchMsg

    def __init__(
        self, group: str, payloads: Sequence[OffsetFetchRequest], topic_ids: Mapping[str, UUID]
    ) -> None:
        self.group = group
        self.payloads = payloads
        self.ids = TopicIds({p.topic for p in payloads}, topic_ids, TOPIC_ID_VERSION - 1)
        self.max_version = self.ids.cap

    def build(self, version: int) -> Any:
        grouped = group_by_topic(self.payloads)
        if version < GROUPS_VERSION:
            topic = FetchMsg.OffsetFetchRequestTopic
            return FetchMsg(
                group_id=self.group,
                topics=[
                    topic(name=name, partition_indexes=[p.partition for p in group])
                    for name, group in grouped.items()
                ],
            )
        by_id = version >= TOPIC_ID_VERSION
        topics = FetchMsg.OffsetFetchRequestTopics
        return FetchMsg(
            groups=[
                FetchMsg.OffsetFetchRequestGroup(
                    group_id=self.group,
                    topics=[
                        topics(
                            name="" if by_id else name,
                            topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                            partition_indexes=[p.partition for p in group],
                        )
                        for name, group in grouped.items()
                    ],
                )
            ]
        )

    def parse(self, response: Any) -> list[OffsetFetchResponse]:
        if self.version < GROUPS_VERSION:
            group_error, topics, by_id = response.error_code, response.topics, False
        else:
            group = next((g for g in response.groups if g.group_id == self.group), None)
            if group is None:
                return []
            group_error, topics = group.error_code, group.topics
            by_id = self.version >= TOPIC_ID_VERSION
        if group_error:
            return [
                OffsetFetchResponse(p.topic, p.partition, NO_OFFSET, None, group_error)
                for p in self.payloads
            ]
        return [
            OffsetFetchResponse(
                self.ids.name_of(t.topic_id if by_id else t.name),
                p.partition_index,
                p.committed_offset,
                _metadata_bytes(p.metadata),
                p.error_code,
            )
            for t in topics
            for p in t.partitions
        ]
