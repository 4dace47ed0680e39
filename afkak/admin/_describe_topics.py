"""Topic descriptions from DescribeTopicPartitions (75, KIP-966) or from Metadata (3).

Kafka 3.8+ answers DescribeTopicPartitions with eligible leader replicas and a
cursor for paging through topics with many partitions; older brokers describe
topics through Metadata.  Both answers become the same
:class:`~afkak.admin.TopicDescription`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from afkak.client._interlayer import VersionedCall
from afkak.common import ErrorCode
from afkak.protocol.messages import DescribeTopicPartitionsRequest

from ._types import PartitionDescription, TopicDescription, _error_or_none

#: Kafka's default (and cap) of partitions in one DescribeTopicPartitions answer.
PARTITION_LIMIT = 2000


def _topic_id(value: UUID | None) -> UUID | None:
    return None if value is None or value.int == 0 else value


def _elr(nodes: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if nodes is None else tuple(nodes)


def partitions_of(topic: Any) -> tuple[PartitionDescription, ...]:
    """A Metadata or DescribeTopicPartitions topic's partitions, in order."""
    return tuple(
        PartitionDescription(
            p.partition_index,
            p.leader_id,
            tuple(p.replica_nodes),
            tuple(p.isr_nodes),
            tuple(p.offline_replicas or ()),
            _error_or_none(p.error_code),
            p.leader_epoch,
            _elr(getattr(p, "eligible_leader_replicas", None)),
            _elr(getattr(p, "last_known_elr", None)),
        )
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    )


def unknown_topic(name: str) -> TopicDescription:
    return TopicDescription(
        name, None, False, (), _error_or_none(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    )


def described(
    name: str, topic: Any, partitions: tuple[PartitionDescription, ...]
) -> TopicDescription:
    return TopicDescription(
        name=name,
        topic_id=_topic_id(topic.topic_id),
        internal=bool(topic.is_internal),
        partitions=partitions,
        error=_error_or_none(topic.error_code),
    )


class DescribeTopicPartitionsCall(VersionedCall):
    """One page: the topics from *cursor* on, at most *limit* partitions.

    ``parse`` gives ``[{name: (topic, partitions)}, next_cursor or None]``.
    """

    request_class = DescribeTopicPartitionsRequest

    def __init__(self, names: Sequence[str], limit: int, cursor: tuple[str, int] | None) -> None:
        self.names = names
        self.limit = limit
        self.cursor = cursor

    def build(self, version: int) -> Any:
        R = DescribeTopicPartitionsRequest
        return R(
            topics=[R.TopicRequest(n) for n in self.names],
            response_partition_limit=self.limit,
            cursor=None if self.cursor is None else R.Cursor(*self.cursor),
        )

    def parse(self, response: Any) -> list[Any]:
        page = {t.name: (t, partitions_of(t)) for t in response.topics if t.name is not None}
        c = response.next_cursor
        return [page, None if c is None else (c.topic_name, c.partition_index)]
