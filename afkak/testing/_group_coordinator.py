"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups and ListGroups of the fake cluster.

The wire side of :mod:`._group_state`: requests checked as Kafka checks them
(coordinator node, group id, session timeout bounds), answered from the
group state, JoinGroup and follower SyncGroups held as Deferreds until the
rebalance gets there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from afkak._broker_errors import (
    ErrorCode,
    InvalidGroupId,
    InvalidSessionTimeout,
    NotCoordinator,
)
from afkak.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from afkak.testing._group_state import (
    CLIENT_HOST,
    GroupState,
    JoinResult,
)
from afkak.testing._lookup import code

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext

#: Kafka's group.min.session.timeout.ms and group.max.session.timeout.ms.
MIN_SESSION_TIMEOUT_MS = 6000
MAX_SESSION_TIMEOUT_MS = 1800000
#: JoinGroup v4+: a new dynamic member must rejoin with the id it is given (KIP-394).
MEMBER_ID_REQUIRED_VERSION = 4


def _group_error(ctx: RequestContext, group_id: str) -> int:
    if not group_id:
        return code(InvalidGroupId)
    if ctx.state.coordinator(group_id) != ctx.node:
        return code(NotCoordinator)
    return 0


def handle_join_group(ctx: RequestContext, request: JoinGroupRequest, version: int) -> Any:
    R = JoinGroupResponse
    error = _group_error(ctx, request.group_id)
    timeout = request.session_timeout_ms
    coordinator = ctx.state.group_coordinator
    if not error and not MIN_SESSION_TIMEOUT_MS <= timeout <= MAX_SESSION_TIMEOUT_MS:
        error = code(InvalidSessionTimeout)
    if error:
        return R(
            error_code=error,
            member_id=request.member_id,
            protocol_name=None if version >= 7 else "",
        )
    outcome = coordinator.join(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        ctx.client_id or "",  # a null client id is "", as Kafka has it
        CLIENT_HOST,
        timeout,
        request.rebalance_timeout_ms if version >= 1 else timeout,
        request.protocol_type,
        [(p.name, p.metadata) for p in request.protocols],
        version >= MEMBER_ID_REQUIRED_VERSION,
    )
    if isinstance(outcome, JoinResult):
        return _join_response(outcome, version)
    return outcome.addCallback(_join_response, version)


def _join_response(result: JoinResult, version: int) -> Any:
    R = JoinGroupResponse
    if result.error:
        return R(
            error_code=result.error,
            member_id=result.member_id,
            protocol_name=None if version >= 7 else "",
        )
    return R(
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            R.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
            for m, i, md in result.members
        ],
    )


def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest, version: int) -> Any:
    R = SyncGroupResponse
    error = _group_error(ctx, request.group_id)
    group = ctx.state.group_coordinator.groups.get(request.group_id)
    if (
        not error
        and version >= 5
        and group is not None
        and (
            request.protocol_type not in (None, group.protocol_type)
            or request.protocol_name not in (None, group.protocol_name)
        )
    ):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if error:
        return R(error_code=error)
    outcome = ctx.state.group_coordinator.sync(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        request.generation_id,
        {a.member_id: a.assignment for a in request.assignments},
    )

    def answer(result: tuple[int, bytes]) -> Any:
        g = ctx.state.group_coordinator.groups.get(request.group_id)
        return R(
            error_code=result[0],
            protocol_type=g.protocol_type if g and not result[0] else None,
            protocol_name=g.protocol_name if g and not result[0] else None,
            assignment=result[1],
        )

    if isinstance(outcome, tuple):
        return answer(outcome)
    return outcome.addCallback(answer)


def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest, version: int) -> Any:
    error = _group_error(ctx, request.group_id)
    if not error:
        error = ctx.state.group_coordinator.heartbeat(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
    return HeartbeatResponse(error_code=error)


def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest, version: int) -> Any:
    R = LeaveGroupResponse
    error = _group_error(ctx, request.group_id)
    if error:
        return R(error_code=error)
    coordinator = ctx.state.group_coordinator
    if version < 3:
        return R(error_code=coordinator.leave(request.group_id, request.member_id, None))
    return R(
        members=[
            R.MemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=coordinator.leave(request.group_id, m.member_id, m.group_instance_id),
            )
            for m in request.members
        ]
    )


def handle_describe_groups(
    ctx: RequestContext, request: DescribeGroupsRequest, version: int
) -> Any:
    R = DescribeGroupsResponse
    described = []
    for group_id in request.groups:
        error = _group_error(ctx, group_id)
        group = ctx.state.group_coordinator.groups.get(group_id)
        if error or group is None:
            state = GroupState.DEAD if group_id not in ctx.state.groups else GroupState.EMPTY
            described.append(
                R.DescribedGroup(error_code=error, group_id=group_id, group_state=state.value)
            )
            continue
        described.append(
            R.DescribedGroup(
                group_id=group_id,
                group_state=group.state.value,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "")
                if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
                else "",
                members=[
                    R.DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata(group.protocol_name),
                        member_assignment=m.assignment if group.state == GroupState.STABLE else b"",
                    )
                    for m in group.members.values()
                ],
            )
        )
    return R(groups=described)


def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest, version: int) -> Any:
    R = ListGroupsResponse
    cluster = ctx.state
    rows = {g: ("", GroupState.EMPTY.value, "classic") for g in cluster.groups}
    for g, group in cluster.group_coordinator.groups.items():
        if group.members or g not in rows:
            rows[g] = (group.protocol_type or "", group.state.value, "classic")
    consumer = cluster.consumer_groups
    for g, cgroup in consumer.groups.items():
        rows[g] = ("consumer", consumer.state_of(cgroup), "consumer")
    for g, share in cluster.share_groups.groups.items():
        rows[g] = ("share", cluster.share_groups.state_of(share), "share")
    listed = [
        R.ListedGroup(group_id=g, protocol_type=ptype, group_state=state, group_type=gtype)
        for g, (ptype, state, gtype) in sorted(rows.items())
        if cluster.coordinator(g) == ctx.node
        and (version < 4 or not request.states_filter or state in request.states_filter)
        and (version < 5 or not request.types_filter or gtype in request.types_filter)
    ]
    return R(groups=listed)


#: The classic group protocol's handlers by api key.


def handle_consumer_group_heartbeat(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest, version: int
) -> Any:
    """KIP-848's heartbeat: the cluster's consumer-protocol coordinator answers it."""
    return ctx.state.consumer_groups.heartbeat(request, ctx.node, ctx.client_id or "")


def handle_consumer_group_describe(
    ctx: RequestContext, request: ConsumerGroupDescribeRequest, version: int
) -> Any:
    """KIP-848's describe: the consumer-protocol coordinator answers it."""
    return ctx.state.consumer_groups.describe(request, ctx.node)


GROUP_APIS: dict[int, Callable[..., Any]] = {
    11: handle_join_group,
    12: handle_heartbeat,
    13: handle_leave_group,
    14: handle_sync_group,
    15: handle_describe_groups,
    16: handle_list_groups,
    68: handle_consumer_group_heartbeat,
    69: handle_consumer_group_describe,
}
