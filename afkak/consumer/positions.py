"""Positions an application steers: partitions named in calls, offsets to commit, lookups.

Shared by :class:`~afkak.consumer.Consumer` and
:class:`~afkak.group.ConsumerGroup` (and the pull-style
:class:`~afkak.KafkaConsumer`): the checks that make a bad argument raise at
the call, the value type of an explicit commit, and the two lookups that are
not a partition fetcher's business (offsets by timestamp, committed offsets
with their metadata).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from afkak.client import ConsumerClient
from afkak.client._interlayer import INT32_MAX, integer
from afkak.common import OffsetFetchRequest, OffsetRequest, TopicAndPartition

__all__ = [
    "OffsetAndMetadata",
    "commit_offsets",
    "committed_offsets",
    "offsets_for_times",
    "offset_value",
    "partition_of",
    "partitions_of",
    "timestamps_of",
]

#: The largest offset or timestamp (int64).
INT64_MAX = 2**63 - 1


@attrs.frozen
class OffsetAndMetadata:
    """An offset to commit (the next one to consume, as in every Kafka client) and its metadata."""

    offset: int = attrs.field()
    metadata: str = attrs.field(default="")

    @offset.validator
    def _check_offset(self, _: Any, value: Any) -> None:
        integer("offset", value, 0, INT64_MAX)

    @metadata.validator
    def _check_metadata(self, _: Any, value: Any) -> None:
        if not isinstance(value, str):
            raise TypeError(f"metadata must be a str, not {value!r}")


def partition_of(tp: Any) -> TopicAndPartition:
    """*tp* as a :class:`~afkak.common.TopicAndPartition`: any ``(topic, partition)`` pair."""
    if not isinstance(tp, tuple) or len(tp) != 2:
        raise TypeError(f"not a (topic, partition) pair: {tp!r}")
    topic, partition = tp
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"not a topic name: {topic!r}")
    integer("partition", partition, 0, INT32_MAX)
    return TopicAndPartition(topic, partition)


def partitions_of(tps: Iterable[Any]) -> list[TopicAndPartition]:
    return [partition_of(tp) for tp in tps]


def offset_value(offset: Any) -> int:
    """A concrete offset to seek to (0 ... 2**63-1)."""
    return integer("offset", offset, 0, INT64_MAX)


def commit_offsets(offsets: Any) -> dict[TopicAndPartition, OffsetAndMetadata]:
    """Check explicit offsets to commit: ``{tp: offset or OffsetAndMetadata}``."""
    if not isinstance(offsets, Mapping):
        raise TypeError(f"offsets must be a mapping of partitions to offsets, not {offsets!r}")
    checked = {}
    for tp, value in offsets.items():
        if not isinstance(value, OffsetAndMetadata):
            value = OffsetAndMetadata(offset_value(value))
        checked[partition_of(tp)] = value
    return checked


def timestamps_of(timestamps: Any) -> dict[TopicAndPartition, int]:
    if not isinstance(timestamps, Mapping):
        raise TypeError(f"timestamps must be a mapping of partitions to ms, not {timestamps!r}")
    return {
        partition_of(tp): integer("timestamp", ms, 0, INT64_MAX) for tp, ms in timestamps.items()
    }


async def offsets_for_times(
    client: ConsumerClient, timestamps: Mapping[TopicAndPartition, int], isolation: int
) -> dict[TopicAndPartition, int | None]:
    """The earliest offset of each partition whose record timestamp is at or after the
    given milliseconds (ListOffsets); None where no record is that recent."""
    if not timestamps:
        return {}
    answers = await client.send_offset_request(
        [OffsetRequest(tp.topic, tp.partition, ms, 1) for tp, ms in timestamps.items()],
        isolation_level=isolation,
    )
    found: dict[TopicAndPartition, int | None] = {}
    for answer in answers:
        offset = int(answer.offsets[0])
        found[TopicAndPartition(answer.topic, answer.partition)] = None if offset < 0 else offset
    return found


async def committed_offsets(
    client: ConsumerClient,
    group: str,
    partitions: Iterable[TopicAndPartition],
    require_stable: bool = False,
) -> dict[TopicAndPartition, OffsetAndMetadata | None]:
    """The group's committed offsets (OffsetFetch); None where it has committed none."""
    answers = await client.send_offset_fetch_request(
        group,
        [OffsetFetchRequest(tp.topic, tp.partition) for tp in partitions],
        require_stable=require_stable,
    )
    return {
        TopicAndPartition(a.topic, a.partition): (
            None if a.offset < 0 else OffsetAndMetadata(int(a.offset), _text(a.metadata))
        )
        for a in answers
    }


def _text(metadata: str | bytes | None) -> str:
    """OffsetFetch's metadata (afkak 21's responses carry it as bytes) as a str."""
    if isinstance(metadata, bytes):
        return metadata.decode("utf-8", "replace")
    return metadata or ""
