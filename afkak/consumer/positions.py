"""Positions an application steers: partitions named in calls, offsets to commit, lookups.

Shared by :class:`~afkak.consumer.Consumer` and
:class:`~afkak.group.ConsumerGroup` (and the pull-style
:class:`~afkak.KafkaConsumer`): the checks that make a bad argument raise at
the call, the value type of an explicit commit, and the two lookups that are
not a partition fetcher's business (offsets by timestamp, committed offsets
with their metadata), and the start offsets of a group's new partitions,
looked up together (``StartOffsets``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.client._interlayer import INT32_MAX, integer
from afkak.common import (
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    OffsetFetchRequest,
    OffsetRequest,
    TopicAndPartition,
)
from afkak.records.aborted import READ_COMMITTED

log = Logger()

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


# -- where a group member's new partitions start ---------------------------------------
#
# A ConsumerGroup assigned many partitions starts a Consumer for each at the
# committed offset.  Alone, each Consumer asks OffsetFetch for its partition
# and, with nothing committed, ListOffsets: at 1,000 partitions, 2,000
# requests before the first Fetch.  Java's consumer asks once for all.
# StartOffsets does the same (one OffsetFetch for the group, then one
# ListOffsets per leader for the partitions without a commit); a Consumer
# given one asks it first, and falls back to its own lookup (with its
# retries) if the shared one failed.

#: A partition's start: the offset, and whether it is the group's commit
#: (else where ``auto_offset_reset`` puts a partition without one).
Start = tuple[int, bool]


class StartOffsets:
    """One lookup of many partitions' start offsets, shared by their Consumers."""

    def __init__(
        self,
        client: ConsumerClient,
        group: str,
        partitions: Sequence[TopicAndPartition],
        *,
        isolation: int,
        latest: bool,
    ) -> None:
        self._found: dict[TopicAndPartition, Start] | None = None
        self._waiters: dict[TopicAndPartition, list[Deferred[Start | None]]] = {}
        lookup = Deferred.fromCoroutine(
            self._look_up(
                client, group, partitions, isolation, OFFSET_LATEST if latest else OFFSET_EARLIEST
            )
        )
        lookup.addBoth(self._settle)

    @staticmethod
    async def _look_up(
        client: ConsumerClient,
        group: str,
        partitions: Sequence[TopicAndPartition],
        isolation: int,
        reset: int,
    ) -> dict[TopicAndPartition, Start]:
        committed = await committed_offsets(client, group, partitions, isolation == READ_COMMITTED)
        found = {tp: (o.offset, True) for tp, o in committed.items() if o is not None}
        missing = [tp for tp in partitions if tp not in found]
        if missing:
            answers = await client.send_offset_request(
                [OffsetRequest(tp.topic, tp.partition, reset, 1) for tp in missing],
                isolation_level=isolation,
            )
            for a in answers:
                offset = int(a.offsets[0])
                if offset >= 0:
                    found[TopicAndPartition(a.topic, a.partition)] = (offset, False)
        return found

    def _settle(self, result: dict[TopicAndPartition, Start] | Failure) -> None:
        if isinstance(result, Failure):
            log.info(
                "start offsets: one lookup failed ({error}); each partition looks up its own",
                error=result.getErrorMessage(),
            )
            result = {}
        self._found = result
        waiters, self._waiters = self._waiters, {}
        for tp, ds in waiters.items():
            for d in ds:
                if not d.called:  # (cancelled by its Consumer's stop or seek)
                    d.callback(result.get(tp))

    def start_of(self, tp: TopicAndPartition) -> Deferred[Start | None]:
        """*tp*'s start, once looked up; None: not found (the Consumer looks it up alone)."""
        if self._found is not None:
            return succeed(self._found.get(tp))
        d: Deferred[Start | None] = Deferred()
        self._waiters.setdefault(tp, []).append(d)
        return d
