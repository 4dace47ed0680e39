"""OffsetCommit and OffsetFetch, answered by a group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from afkak._broker_errors import (
    GroupIdNotFound,
    IllegalGeneration,
    InvalidGroupId,
    NotCoordinator,
    OffsetMetadataTooLargeError,
    UnknownMemberId,
    UnstableOffsetCommit,
)
from afkak.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from afkak.testing._error_responses import error_response
from afkak.testing._lookup import UNKNOWN_TOPIC_OR_PARTITION, code, find_partition, find_topic
from afkak.testing._state import CommittedOffset

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext

ZERO_UUID = UUID(int=0)
MAX_METADATA_BYTES = 4096  # Kafka's offset.metadata.max.bytes


def handle_offset_commit(ctx: RequestContext, request: OffsetCommitRequest, version: int) -> Any:
    cluster = ctx.state
    group_error = _commit_group_error(ctx, request, version)
    topics = []
    for rt in request.topics:
        topic, topic_error = find_topic(cluster, rt.name, rt.topic_id, version >= 10)
        answers = []
        for rp in rt.partitions:
            error = group_error or topic_error
            if not error and find_partition(topic, rp.partition_index) is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
            metadata = rp.committed_metadata or ""
            if not error and len(metadata.encode()) > MAX_METADATA_BYTES:
                error = code(OffsetMetadataTooLargeError)
            if not error and topic is not None:
                cluster.commit(
                    request.group_id,
                    topic.name,
                    rp.partition_index,
                    CommittedOffset(rp.committed_offset, metadata, rp.committed_leader_epoch),
                )
            answers.append(
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=rp.partition_index, error_code=error
                )
            )
        topics.append(
            OffsetCommitResponse.OffsetCommitResponseTopic(
                name=rt.name, topic_id=rt.topic_id, partitions=answers
            )
        )
    return OffsetCommitResponse(topics=topics)


def _commit_group_error(ctx: RequestContext, request: OffsetCommitRequest, version: int) -> int:
    """Kafka 4's checks of a commit's group, member and generation.

    A group with members is checked by the group coordinator; otherwise it is
    a "simple" group that commits with generation -1.  As Kafka, such a
    commit to an unknown group creates it; a commit claiming a generation is
    refused.
    """
    if not request.group_id:
        return code(InvalidGroupId)
    if ctx.state.coordinator(request.group_id) != ctx.node:
        return code(NotCoordinator)
    claims_membership = (
        request.generation_id_or_member_epoch >= 0
        or bool(request.member_id)
        or request.group_instance_id is not None
    )
    consumer_group = ctx.state.consumer_groups.commit_error(
        request.group_id, request.member_id, request.generation_id_or_member_epoch
    )
    if consumer_group is not None:
        return consumer_group
    membership = ctx.state.group_coordinator.commit_error(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        request.generation_id_or_member_epoch,
    )
    if membership is not None:
        return membership
    if not claims_membership:
        return 0
    if request.group_id in ctx.state.groups:
        return code(UnknownMemberId)
    if version >= 9:
        return code(GroupIdNotFound)
    return code(IllegalGeneration)


def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest, version: int) -> Any:
    R = OffsetFetchResponse
    if version >= 8:
        return R(
            groups=[
                _fetch_group(ctx, g.group_id, g.topics, version, request.require_stable)
                for g in request.groups
            ]
        )
    if ctx.state.coordinator(request.group_id) != ctx.node:
        return error_response(OffsetFetchRequest.API_KEY, request, version, code(NotCoordinator))
    found = _committed(
        ctx, request.group_id, request.topics, by_id=False, stable=request.require_stable
    )
    return R(
        topics=[
            R.OffsetFetchResponseTopic(
                name=name,
                partitions=[
                    R.OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=offset,
                        committed_leader_epoch=epoch,
                        metadata=metadata,
                        error_code=error,
                    )
                    for p, offset, epoch, metadata, error in partitions
                ],
            )
            for name, _, partitions in found
        ]
    )


def _fetch_group(
    ctx: RequestContext, group_id: str, topics: Any, version: int, stable: bool
) -> Any:
    R = OffsetFetchResponse
    if ctx.state.coordinator(group_id) != ctx.node:
        return R.OffsetFetchResponseGroup(group_id=group_id, error_code=code(NotCoordinator))
    found = _committed(ctx, group_id, topics, by_id=version >= 10, stable=stable)
    return R.OffsetFetchResponseGroup(
        group_id=group_id,
        topics=[
            R.OffsetFetchResponseTopics(
                name=name,
                topic_id=topic_id,
                partitions=[
                    R.OffsetFetchResponsePartitions(
                        partition_index=p,
                        committed_offset=offset,
                        committed_leader_epoch=epoch,
                        metadata=metadata,
                        error_code=error,
                    )
                    for p, offset, epoch, metadata, error in partitions
                ],
            )
            for name, topic_id, partitions in found
        ],
    )


def _committed(
    ctx: RequestContext, group_id: str, topics: Any, by_id: bool, stable: bool = False
) -> Iterable[tuple[str, Any, list[tuple[int, int, int, str, int]]]]:
    """(name, topic id, [(partition, offset, epoch, metadata, error)]) per topic asked.

    ``topics`` None asks for every partition the group committed.  As Kafka,
    a partition without a commit answers offset -1 without error; a topic id
    the cluster does not know answers UNKNOWN_TOPIC_ID; with *stable*
    (``require_stable``), offsets an open transaction staged answer
    UNSTABLE_OFFSET_COMMIT.
    """
    cluster = ctx.state
    wanted: list[tuple[str, UUID, list[int], int]] = []
    if topics is None:
        by_topic: dict[str, list[int]] = {}
        for (name, p), _ in cluster.committed(group_id):
            by_topic.setdefault(name, []).append(p)
        for name, ps in sorted(by_topic.items()):
            topic = cluster.topics.get(name)
            wanted.append((name, topic.topic_id if topic else ZERO_UUID, sorted(ps), 0))
    elif by_id:
        for t in topics:
            topic, error = find_topic(cluster, None, t.topic_id, True)
            wanted.append((topic.name if topic else "", t.topic_id, t.partition_indexes, error))
    else:
        for t in topics:
            topic = cluster.topics.get(t.name)
            wanted.append((t.name, topic.topic_id if topic else ZERO_UUID, t.partition_indexes, 0))
    commits = cluster.committed_offsets
    result = []
    for name, topic_id, partitions, error in wanted:
        rows = []
        for p in partitions:
            c = commits.get((group_id, name, p))
            if stable and cluster.transactions.staged(group_id, name, p):
                rows.append((p, -1, -1, "", code(UnstableOffsetCommit)))
            elif c is None or error:
                rows.append((p, -1, -1, "", error))
            else:
                rows.append((p, c.offset, c.leader_epoch, c.metadata, 0))
        result.append((name, topic_id, rows))
    return result
