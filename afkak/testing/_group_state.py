"""The fake cluster's classic group coordinator: groups, members, generations, timers.

As Kafka's classic ``GroupCoordinator``: a group goes Empty ->
PreparingRebalance (members (re)join; the join completes when every known
member has rejoined or the rebalance timeout expires, members that did not
are dropped; the very first join waits ``initial_rebalance_delay_ms``) ->
CompletingRebalance (new generation; waiting for the leader's SyncGroup) ->
Stable.  Members that send nothing for their session timeout are dropped;
dynamic members joining without an id get MEMBER_ID_REQUIRED first (v4+);
static members (group.instance.id) keep their place across restarts and
fence the previous holder of their instance id.  Timers run on the
cluster's reactor.  The wire handlers are in :mod:`._group_coordinator`.
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from typing import Any

import attrs
from twisted.internet.defer import Deferred

from afkak._broker_errors import ErrorCode
from afkak._transitions import TransitionTable

#: The host Kafka reports for every member of the fake's groups.
CLIENT_HOST = "/127.0.0.1"


class GroupState(enum.StrEnum):
    """A classic group's state; the values are Kafka's state names, as DescribeGroups answers."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupInput(enum.Enum):
    PREPARE = "a member joins, leaves or changes: rebalance"
    COMPLETE = "every member joined, or the join timed out"
    SYNCED = "the leader's SyncGroup brought the assignment"
    EMPTIED = "the last member left"


G, In = GroupState, GroupInput
#: Kafka's classic group states (``GroupMetadata.validPreviousStates``), as a table.
GROUP_TABLE = TransitionTable(
    {
        (G.EMPTY, In.PREPARE): G.PREPARING_REBALANCE,
        (G.STABLE, In.PREPARE): G.PREPARING_REBALANCE,
        (G.COMPLETING_REBALANCE, In.PREPARE): G.PREPARING_REBALANCE,
        (G.PREPARING_REBALANCE, In.COMPLETE): G.COMPLETING_REBALANCE,
        (G.COMPLETING_REBALANCE, In.SYNCED): G.STABLE,
        (G.PREPARING_REBALANCE, In.EMPTIED): G.EMPTY,
        (G.COMPLETING_REBALANCE, In.EMPTIED): G.EMPTY,
        (G.STABLE, In.EMPTIED): G.EMPTY,
    },
    ignored=[
        (G.PREPARING_REBALANCE, In.PREPARE),  # the rebalance under way takes it in
        *((state, In.COMPLETE) for state in G if state is not G.PREPARING_REBALANCE),
    ],
)


@attrs.define(eq=False)
class JoinResult:
    """What one member's JoinGroup answers (error, or the new generation)."""

    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = attrs.field(factory=list)


@attrs.define(eq=False)
class GroupMemberState:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Deferred[JoinResult] | None = None
    sync_waiter: Deferred[tuple[int, bytes]] | None = None
    session_timer: Any = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")


@attrs.define(eq=False)
class FakeGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, GroupMemberState] = attrs.field(factory=dict)
    pending: dict[str, Any] = attrs.field(factory=dict)
    static: dict[str, str] = attrs.field(factory=dict)
    join_timer: Any = None
    #: The first rebalance of an empty group waits initial_rebalance_delay_ms for more members.
    delaying: bool = False


class GroupCoordinatorState:
    """Every group of one fake cluster (the coordinator node is checked by the handlers)."""

    def __init__(self, reactor: Any, initial_rebalance_delay_ms: int = 3000) -> None:
        self.reactor = reactor
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.groups: dict[str, FakeGroup] = {}
        self._ids = itertools.count(1)

    def group(self, group_id: str) -> FakeGroup:
        if group_id not in self.groups:
            self.groups[group_id] = FakeGroup(group_id)
        return self.groups[group_id]

    def new_member_id(self, client_id: str) -> str:
        return f"{client_id or 'member'}-{next(self._ids):08d}"

    # -- JoinGroup ------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult | Deferred[JoinResult]:
        group = self.group(group_id)
        if not self._compatible(group, protocol_type, protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if member_id in group.pending:
            timer = group.pending.pop(member_id)
            if timer.active():
                timer.cancel()
        elif not member_id:
            if instance_id is not None:
                return self._join_static(
                    group,
                    instance_id,
                    client_id,
                    client_host,
                    session_timeout_ms,
                    rebalance_timeout_ms,
                    protocols,
                )
            member_id = self.new_member_id(client_id)
            if require_known_member_id:
                group.pending[member_id] = self.reactor.callLater(
                    session_timeout_ms / 1000.0, group.pending.pop, member_id, None
                )
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        elif member_id not in group.members:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        else:
            member = group.members[member_id]
            if instance_id is not None and group.static.get(instance_id) != member_id:
                return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
            return self._rejoin(group, member, protocols)
        member = GroupMemberState(
            member_id,
            instance_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocols,
        )
        group.members[member_id] = member
        if instance_id is not None:
            group.static[instance_id] = member_id
        if group.protocol_type is None:
            group.protocol_type = protocol_type
        return self._await_join(group, member)

    def _compatible(
        self, group: FakeGroup, protocol_type: str, protocols: list[tuple[str, bytes]]
    ) -> bool:
        if not protocol_type or not protocols:
            return False
        if not group.members:
            return True
        if protocol_type != group.protocol_type:
            return False
        names = {n for n, _ in protocols}
        return all(names & {n for n, _ in m.protocols} for m in group.members.values())

    def _join_static(
        self,
        group: FakeGroup,
        instance_id: str,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult | Deferred[JoinResult]:
        """A static member (re)joins: it replaces, and fences, its instance's previous member."""
        old_id = group.static.get(instance_id)
        new_id = self.new_member_id(client_id)
        member = GroupMemberState(
            new_id,
            instance_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocols,
        )
        group.static[instance_id] = new_id
        old = group.members.pop(old_id, None) if old_id else None
        group.members[new_id] = member
        if old is None:
            if group.protocol_type is None:
                group.protocol_type = "consumer"
            return self._await_join(group, member)
        self._fence(old)
        member.assignment = old.assignment
        if group.leader_id == old_id:
            group.leader_id = new_id
        unchanged = [n for n, _ in old.protocols] == [n for n, _ in protocols]
        if group.state == GroupState.STABLE and unchanged:
            self._touch(group, member)
            return self._result(group, member, skip_assignment=group.leader_id == new_id)
        return self._await_join(group, member)

    def _fence(self, old: GroupMemberState) -> None:
        if old.join_waiter is not None:
            waiter, old.join_waiter = old.join_waiter, None
            waiter.callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old.member_id))
        if old.sync_waiter is not None:
            waiter2, old.sync_waiter = old.sync_waiter, None
            waiter2.callback((ErrorCode.FENCED_INSTANCE_ID, b""))
        self._stop_session(old)

    def _rejoin(
        self, group: FakeGroup, member: GroupMemberState, protocols: list[tuple[str, bytes]]
    ) -> JoinResult | Deferred[JoinResult]:
        changed = member.protocols != protocols
        member.protocols = protocols
        if group.state == GroupState.COMPLETING_REBALANCE and not changed:
            return self._result(group, member)
        if group.state == GroupState.STABLE and not changed and member.member_id != group.leader_id:
            return self._result(group, member)
        return self._await_join(group, member)

    def _await_join(self, group: FakeGroup, member: GroupMemberState) -> Deferred[JoinResult]:
        def cancelled(d: Deferred[JoinResult]) -> None:
            if member.join_waiter is d:
                member.join_waiter = None

        if member.join_waiter is not None:
            member.join_waiter.callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        waiter: Deferred[JoinResult] = Deferred(cancelled)
        member.join_waiter = waiter
        self._stop_session(member)
        self._prepare_rebalance(group)
        return waiter

    def _prepare_rebalance(self, group: FakeGroup) -> None:
        """Start a rebalance; during one, see whether it can complete."""
        old = group.state
        if not _move(group, In.PREPARE):
            self._maybe_complete_join(group)
            return
        if old == GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                if m.sync_waiter is not None:
                    waiter, m.sync_waiter = m.sync_waiter, None
                    waiter.callback((ErrorCode.REBALANCE_IN_PROGRESS, b""))
        initial = old == GroupState.EMPTY
        group.delaying = initial
        if initial:
            delay = self.initial_rebalance_delay_ms
        else:
            delay = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self._cancel_join_timer(group)
        group.join_timer = self.reactor.callLater(delay / 1000.0, self._complete_join, group)
        if not initial:
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: FakeGroup) -> None:
        if group.state != GroupState.PREPARING_REBALANCE or group.pending:
            return
        if group.delaying:
            return
        if all(m.join_waiter is not None for m in group.members.values()):
            self._complete_join(group)

    def _cancel_join_timer(self, group: FakeGroup) -> None:
        if group.join_timer is not None and group.join_timer.active():
            group.join_timer.cancel()
        group.join_timer = None

    def _complete_join(self, group: FakeGroup) -> None:
        self._cancel_join_timer(group)
        group.delaying = False
        if GROUP_TABLE.next(group.state, In.COMPLETE) is None:  # no rebalance under way
            return
        for m in [m for m in group.members.values() if m.join_waiter is None]:
            self._remove(group, m)
        group.generation_id += 1
        if not group.members:
            _move(group, In.EMPTIED)
            group.protocol_name, group.leader_id, group.protocol_type = None, None, None
            return
        group.protocol_name = self._vote(group)
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        _move(group, In.COMPLETE)
        for m in group.members.values():
            m.assignment = b""
        for m in list(group.members.values()):
            waiter, m.join_waiter = m.join_waiter, None
            self._touch(group, m)
            assert waiter is not None
            waiter.callback(self._result(group, m))

    def _vote(self, group: FakeGroup) -> str:
        members = list(group.members.values())
        candidates = set.intersection(*({n for n, _ in m.protocols} for m in members))
        votes = Counter(next(n for n, _ in m.protocols if n in candidates) for m in members)
        leader = group.members.get(group.leader_id or "", members[0])
        order = [n for n, _ in leader.protocols if n in candidates]
        return max(order, key=lambda n: (votes[n], -order.index(n)))

    def _result(
        self, group: FakeGroup, member: GroupMemberState, skip_assignment: bool = False
    ) -> JoinResult:
        leader = member.member_id == group.leader_id
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            skip_assignment,
            [
                (m.member_id, m.instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()
            ]
            if leader
            else [],
        )

    # -- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------

    def check_member(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> tuple[int, FakeGroup | None, GroupMemberState | None]:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            if group is not None and instance_id is not None and instance_id in group.static:
                return ErrorCode.FENCED_INSTANCE_ID, None, None
            return ErrorCode.UNKNOWN_MEMBER_ID, None, None
        if instance_id is not None and group.static.get(instance_id) != member_id:
            return ErrorCode.FENCED_INSTANCE_ID, None, None
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION, group, member
        return ErrorCode.NONE, group, member

    def sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        assignments: dict[str, bytes],
    ) -> tuple[int, bytes] | Deferred[tuple[int, bytes]]:
        error, group, member = self.check_member(group_id, member_id, instance_id, generation_id)
        if error:
            return error, b""
        assert group is not None and member is not None
        self._touch(group, member)
        if group.state == GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS, b""
        if group.state == GroupState.STABLE:
            return ErrorCode.NONE, member.assignment
        if member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            _move(group, In.SYNCED)
            for m in group.members.values():
                if m.sync_waiter is not None:
                    waiter, m.sync_waiter = m.sync_waiter, None
                    waiter.callback((ErrorCode.NONE, m.assignment))
            return ErrorCode.NONE, member.assignment

        def cancelled(d: Deferred[Any]) -> None:
            if member.sync_waiter is d:
                member.sync_waiter = None

        member.sync_waiter = Deferred(cancelled)
        return member.sync_waiter

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        error, group, member = self.check_member(group_id, member_id, instance_id, generation_id)
        if error:
            return error
        assert group is not None and member is not None
        self._touch(group, member)
        return (
            ErrorCode.REBALANCE_IN_PROGRESS
            if group.state == GroupState.PREPARING_REBALANCE
            else ErrorCode.NONE
        )

    def leave(self, group_id: str, member_id: str, instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if instance_id is not None:
            current = group.static.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = current
        if member_id in group.pending:
            timer = group.pending.pop(member_id)
            if timer.active():
                timer.cancel()
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove(group, member)
        self._member_gone(group)
        return ErrorCode.NONE

    # -- sessions ---------------------------------------------------------------

    def _touch(self, group: FakeGroup, member: GroupMemberState) -> None:
        """Restart the member's session timer."""
        self._stop_session(member)
        member.session_timer = self.reactor.callLater(
            member.session_timeout_ms / 1000.0, self._expire, group, member
        )

    def _stop_session(self, member: GroupMemberState) -> None:
        if member.session_timer is not None and member.session_timer.active():
            member.session_timer.cancel()
        member.session_timer = None

    def _expire(self, group: FakeGroup, member: GroupMemberState) -> None:
        if group.members.get(member.member_id) is member and member.join_waiter is None:
            self._remove(group, member)
            self._member_gone(group)

    def _remove(self, group: FakeGroup, member: GroupMemberState) -> None:
        self._stop_session(member)
        group.members.pop(member.member_id, None)
        if (
            member.instance_id is not None
            and group.static.get(member.instance_id) == member.member_id
        ):
            del group.static[member.instance_id]
        for attr, answer in (
            ("join_waiter", JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id)),
            ("sync_waiter", (ErrorCode.UNKNOWN_MEMBER_ID, b"")),
        ):
            waiter = getattr(member, attr)
            if waiter is not None:
                setattr(member, attr, None)
                waiter.callback(answer)
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)

    def _member_gone(self, group: FakeGroup) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            if group.members:
                self._prepare_rebalance(group)
            else:
                _move(group, In.EMPTIED)
                group.protocol_type, group.protocol_name = None, None
                group.generation_id += 1
        elif group.state == GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)

    # -- commits ------------------------------------------------------------------

    def commit_error(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> int | None:
        """Kafka's checks of a member's OffsetCommit; None if the group has no membership."""
        group = self.groups.get(group_id)
        if group is None or (group.state == GroupState.EMPTY and not group.members):
            return None
        if generation_id < 0 and not member_id and instance_id is None:
            return ErrorCode.UNKNOWN_MEMBER_ID if group.members else None
        error, group, member = self.check_member(group_id, member_id, instance_id, generation_id)
        if error:
            return error
        assert group is not None and member is not None
        if group.state == GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        self._touch(group, member)
        return ErrorCode.NONE


def _move(group: FakeGroup, event: GroupInput) -> bool:
    """Apply *event* to *group*'s state; False if its state ignores it."""
    new = GROUP_TABLE.next(group.state, event)
    if new is None:
        return False
    group.state = new
    return True
