"""OffsetForLeaderEpoch request (api key 23): where a leader epoch ends (KIP-320).

A consumer whose partition changed leader asks the new leader where the
epoch of its last consumed record ends; an end below its position means the
log was truncated under it (an unclean leader election).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from afkak.common import TopicAndPartition
from afkak.protocol.messages import OffsetForLeaderEpochRequest

from ._call import VersionedCall, group_by_topic

CONSUMER_REPLICA_ID = -1


@attrs.frozen
class EpochQuery:
    """Ask where *epoch* ends in *key*, fenced by the client's *current_leader_epoch*."""

    key: TopicAndPartition
    epoch: int
    current_leader_epoch: int = -1


@attrs.frozen
class EpochEnd:
    """The answer: the largest epoch at most the asked one, and its end offset (-1: unknown)."""

    key: TopicAndPartition
    error: int
    leader_epoch: int
    end_offset: int


class OffsetForLeaderEpochCall(VersionedCall):
    """Each query's epoch end, as a consumer (``replica_id`` -1) asks the leader."""

    request_class = OffsetForLeaderEpochRequest

    def __init__(self, queries: Sequence[EpochQuery]) -> None:
        self.queries = queries

    def build(self, version: int) -> Any:
        msg = OffsetForLeaderEpochRequest
        return msg(
            replica_id=CONSUMER_REPLICA_ID,
            topics=[
                msg.OffsetForLeaderTopic(
                    topic=name,
                    partitions=[
                        msg.OffsetForLeaderPartition(
                            partition=q.key.partition,
                            current_leader_epoch=q.current_leader_epoch,
                            leader_epoch=q.epoch,
                        )
                        for q in group
                    ],
                )
                for name, group in group_by_topic(self.queries, _topic_of).items()
            ],
        )

    def parse(self, response: Any) -> list[EpochEnd]:
        return [
            EpochEnd(
                TopicAndPartition(t.topic, p.partition), p.error_code, p.leader_epoch, p.end_offset
            )
            for t in response.topics
            for p in t.partitions
        ]


def _topic_of(query: EpochQuery) -> str:
    return str(query.key.topic)
