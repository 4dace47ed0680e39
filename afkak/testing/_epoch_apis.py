"""OffsetForLeaderEpoch (KIP-320) against the fake partition logs.

The leader answers where a leader epoch ends in its log, as Kafka's
``LeaderEpochFileCache.endOffsetFor``: the epochs are those of the stored
batches plus the partition's current epoch, which starts at the log end when
no record carries it yet (a new leader's epoch, e.g. after an unclean
election truncated the log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from afkak.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from afkak.testing._lookup import (
    UNKNOWN_TOPIC_OR_PARTITION,
    find_partition,
    find_topic,
    leader_error,
)

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext
    from afkak.testing._state import FakePartition

UNDEFINED = -1


def epoch_end(part: FakePartition, epoch: int) -> tuple[int, int]:
    """(epoch, end offset) for the asked *epoch*: the largest epoch up to it, and where it ends."""
    starts = part.log.epoch_starts()
    if not starts or starts[-1][0] < part.leader_epoch:
        starts.append((part.leader_epoch, part.log.high_watermark))
    if epoch < 0 or epoch > starts[-1][0]:
        return UNDEFINED, UNDEFINED
    if epoch == starts[-1][0]:
        return epoch, part.log.high_watermark
    higher = next(start for start in starts if start[0] > epoch)
    floor = [e for e, _ in starts if e <= epoch]
    return (floor[-1] if floor else epoch), higher[1]


def offset_for_leader_epoch_error(request: Any, version: int, code: int) -> Any:
    """Every partition of *request* failed with *code* (an injected fault)."""
    R = OffsetForLeaderEpochResponse
    return R(
        topics=[
            R.OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[
                    R.EpochEndOffset(error_code=code, partition=p.partition) for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def handle_offset_for_leader_epoch(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest, version: int
) -> Any:
    R = OffsetForLeaderEpochResponse
    topics = []
    for t in request.topics:
        topic, topic_error = find_topic(ctx.state, t.topic, None, False)
        answers = []
        for p in t.partitions:
            answer = R.EpochEndOffset(partition=p.partition)
            part = find_partition(topic, p.partition)
            if part is None:
                answer.error_code = topic_error or UNKNOWN_TOPIC_OR_PARTITION
            elif error := leader_error(part, ctx.node, p.current_leader_epoch):
                answer.error_code = error
            else:
                answer.leader_epoch, answer.end_offset = epoch_end(part, p.leader_epoch)
            answers.append(answer)
        topics.append(R.OffsetForLeaderTopicResult(topic=t.topic, partitions=answers))
    return R(topics=topics)
