"""Builders of the group membership requests, at whatever version the coordinator speaks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from afkak.connection import VersionedRequest
from afkak.protocol.consumer_protocol import PROTOCOL_TYPE
from afkak.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

#: LeaveGroup from v3 on names the leaving members in a list (KIP-345).
LEAVE_BATCH_VERSION = 3
#: group.instance.id (static membership) exists from these versions on.
STATIC_JOIN_VERSION = 5
STATIC_SYNC_VERSION = 3
STATIC_HEARTBEAT_VERSION = 3


def join_group(
    group_id: str,
    member_id: str,
    instance_id: str | None,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    protocols: list[tuple[str, bytes]],
    reason: str | None,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=PROTOCOL_TYPE,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(n, m) for n, m in protocols],
        reason=reason,
    )


def sync_group(
    group_id: str,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
    protocol_name: str | None,
    assignments: Mapping[str, bytes],
) -> SyncGroupRequest:
    entry = SyncGroupRequest.SyncGroupRequestAssignment
    return SyncGroupRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=PROTOCOL_TYPE,
        protocol_name=protocol_name,
        assignments=[entry(m, a) for m, a in assignments.items()],
    )


def heartbeat(
    group_id: str, generation_id: int, member_id: str, instance_id: str | None
) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
    )


def leave_group(
    group_id: str, member_id: str, instance_id: str | None, reason: str
) -> VersionedRequest:
    def build(version: int) -> Any:
        if version < LEAVE_BATCH_VERSION:
            return LeaveGroupRequest(group_id=group_id, member_id=member_id)
        return LeaveGroupRequest(
            group_id=group_id,
            members=[LeaveGroupRequest.MemberIdentity(member_id, instance_id, reason)],
        )

    return VersionedRequest(LeaveGroupRequest, build)


#: ConsumerGroupHeartbeat v1+: the client makes up the member id (KIP-1082), and a
#: subscription may be a broker-side regular expression.
CLIENT_MEMBER_ID_VERSION = 1
#: The member epoch that joins, leaves (dynamic member) and leaves for now (static member).
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2


def consumer_group_heartbeat(
    group_id: str,
    member_id: str,
    member_epoch: int,
    instance_id: str | None,
    rebalance_timeout_ms: int,
    topics: Sequence[str],
    regex: str | None,
    assignor: str | None,
    owned: Mapping[UUID, Sequence[int]],
) -> VersionedRequest:
    """A full heartbeat: every field sent (the coordinator takes an unchanged one as such).

    Sent at v1+ only (``CLIENT_MEMBER_ID_VERSION``): the member id is the client's."""
    R = ConsumerGroupHeartbeatRequest

    def build(version: int) -> Any:
        leaving = member_epoch < 0
        return R(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            instance_id=instance_id,
            rebalance_timeout_ms=-1 if leaving else rebalance_timeout_ms,
            subscribed_topic_names=None if leaving or regex is not None else list(topics),
            subscribed_topic_regex=None if leaving else regex,
            server_assignor=None if leaving else assignor,
            topic_partitions=None
            if leaving
            else [R.TopicPartitions(tid, sorted(ps)) for tid, ps in sorted(owned.items())],
        )

    return VersionedRequest(R, build)
