"""DeleteRecords (21) and ListOffsets (2, extending the client's call): sent to leaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afkak.client._interlayer import ListOffsetsCall, VersionedCall
from afkak.common import TopicAndPartition
from afkak.protocol.messages import DeleteRecordsRequest

from ._types import DeletedRecords, ListedOffset, _error_or_none, left_out


class ListedOffsetsCall(ListOffsetsCall):
    """ListOffsets answering ``{partition: ListedOffset}`` (offset, timestamp, leader epoch)."""

    def failed(self, error: Any) -> dict[TopicAndPartition, ListedOffset]:
        return {
            TopicAndPartition(p.topic, p.partition): ListedOffset(-1, error=error)
            for p in self.payloads
        }

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the partition")),
                **{
                    TopicAndPartition(t.name, p.partition_index): ListedOffset(
                        offset=p.offset,
                        timestamp=p.timestamp,
                        leader_epoch=p.leader_epoch,
                        error=_error_or_none(p.error_code),
                    )
                    for t in response.topics
                    for p in t.partitions
                },
            }
        ]


class DeleteRecordsCall(VersionedCall):
    """Move each partition's log start offset up to the given offset (-1: the high watermark)."""

    request_class = DeleteRecordsRequest

    def __init__(self, before: Mapping[TopicAndPartition, int], timeout_ms: int) -> None:
        self.before = before
        self.timeout_ms = timeout_ms

    def build(self, version: int) -> Any:
        R = DeleteRecordsRequest
        topics: dict[str, list[Any]] = {}
        for tp, offset in self.before.items():
            topics.setdefault(tp.topic, []).append(R.DeleteRecordsPartition(tp.partition, offset))
        return R(
            topics=[R.DeleteRecordsTopic(name, parts) for name, parts in topics.items()],
            timeout_ms=self.timeout_ms,
        )

    def failed(self, error: Any) -> dict[TopicAndPartition, DeletedRecords]:
        return {tp: DeletedRecords(-1, error) for tp in self.before}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the partition")),
                **{
                    TopicAndPartition(t.name, p.partition_index): DeletedRecords(
                        p.low_watermark, _error_or_none(p.error_code)
                    )
                    for t in response.topics
                    for p in t.partitions
                },
            }
        ]
