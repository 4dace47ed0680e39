"""The fake cluster's KIP-848 consumer groups: ConsumerGroupHeartbeat, as Kafka 4 answers it.

Enough of Kafka's ``GroupMetadataManager`` for users' trial tests: the
group epoch moves when a member joins, leaves, times out or changes its
subscription; the coordinator computes a target assignment (``uniform``,
the default, or ``range``) over the subscribed topics (names, or a regular
expression matched with ``re.fullmatch``, as RE2J's ``matches``); each
member then gets its share incrementally: partitions taken away first (the
member keeps its epoch until a heartbeat no longer reports them), then the
new epoch and the partitions no other member still owns.  Sessions expire
on the cluster's reactor after ``session_timeout_ms`` without a heartbeat.
Static members (instance id) leaving with epoch -2 keep their assignment
for the one that comes back with the same instance id.  ConsumerGroupDescribe
answers each group's state (Empty, Reconciling while a member's assignment
differs from its target, Stable), epochs, assignor and members; a classic
group or an unknown one is GROUP_ID_NOT_FOUND, as Kafka answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from afkak._broker_errors import ErrorCode
from afkak.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from afkak.testing._group_state import CLIENT_HOST
from afkak.testing._member_sessions import MemberSessions

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from afkak.testing._group_state import GroupCoordinatorState
    from afkak.testing._state import FakeTopic


class Cluster(Protocol):
    """What the coordinator reads of the fake cluster (its ``ClusterState``)."""

    reactor: IReactorTime
    topics: dict[str, FakeTopic]
    topics_by_id: dict[Any, FakeTopic]
    group_coordinator: GroupCoordinatorState

    def coordinator(self, key: str) -> int: ...


TP = tuple[str, int]
#: Kafka's group.consumer.heartbeat.interval.ms and group.consumer.session.timeout.ms.
HEARTBEAT_INTERVAL_MS = 5000
SESSION_TIMEOUT_MS = 45000
ASSIGNORS = ("uniform", "range")
#: ConsumerGroupDescribe's MemberType of a consumer-protocol member (KIP-1099).
CONSUMER_MEMBER = 1


@attrs.define(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    topics: list[str]
    regex: str | None
    assignor: str | None
    client_id: str = ""
    epoch: int = 0
    #: What the member may own now (sent in its assignment).
    assigned: set[TP] = attrs.field(factory=set)
    #: Taken away, until a heartbeat no longer reports them.
    revoking: set[TP] = attrs.field(factory=set)
    #: The assignment last sent (None: send it at the next heartbeat).
    sent: frozenset[TP] | None = None
    session: Any = None


@attrs.define(eq=False)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ConsumerMember] = attrs.field(factory=dict)
    target: dict[str, set[TP]] = attrs.field(factory=dict)
    #: The subscribed topics (and their partition counts) the target was computed for.
    matched: dict[str, int] = attrs.field(factory=dict)
    #: Static members that left with epoch -2: instance id -> their member.
    parked: dict[str, ConsumerMember] = attrs.field(factory=dict)


class ConsumerGroupCoordinator(MemberSessions):
    """Every consumer-protocol group of the fake cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.groups: dict[str, ConsumerGroup] = {}
        self.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS
        self.session_timeout_ms = SESSION_TIMEOUT_MS

    # -- heartbeats ---------------------------------------------------------------

    def heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, node: int, client_id: str = ""
    ) -> Any:
        """The answer of broker *node* to *request* from client *client_id*."""
        R = ConsumerGroupHeartbeatResponse
        error = self._check(request, node)
        if error:
            return R(error_code=error, member_epoch=-1)
        group = self.groups.setdefault(request.group_id, ConsumerGroup(request.group_id))
        if request.member_epoch < 0:
            self._leave(group, request)
            return R(member_id=request.member_id, member_epoch=request.member_epoch)
        member = group.members.get(request.member_id)
        if request.member_epoch == 0:
            member = self._join(group, request, client_id)
        elif member is None:
            return R(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_epoch=-1)
        elif request.member_epoch != member.epoch:
            return R(error_code=ErrorCode.FENCED_MEMBER_EPOCH, member_epoch=-1)
        else:
            self._update(group, member, request)
        self._touch(group, member)
        if self._matched(group) != group.matched:
            self._bump(group)  # a subscribed topic was created or deleted
        if request.topic_partitions is not None:
            owned = self._names(request.topic_partitions)
            member.revoking &= owned
        self._reconcile(group, member)
        assignment = None
        if member.sent != frozenset(member.assigned):
            member.sent = frozenset(member.assigned)
            assignment = R.Assignment(self._ids(member.assigned))
        return R(
            member_id=member.member_id,
            member_epoch=member.epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            assignment=assignment,
        )

    def _check(self, request: ConsumerGroupHeartbeatRequest, node: int) -> int:
        if not request.group_id or not request.member_id:
            return ErrorCode.INVALID_REQUEST
        if self.cluster.coordinator(request.group_id) != node:
            return ErrorCode.NOT_COORDINATOR
        if request.group_id in self.cluster.group_coordinator.groups:
            return ErrorCode.GROUP_ID_NOT_FOUND  # a classic group of that name
        if request.server_assignor not in (None, *ASSIGNORS):
            return ErrorCode.UNSUPPORTED_ASSIGNOR
        if request.member_epoch == 0 and request.rebalance_timeout_ms <= 0:
            return ErrorCode.INVALID_REQUEST
        regex = getattr(request, "subscribed_topic_regex", None)
        if regex is not None:
            try:
                re.compile(regex)
            except re.error:
                return ErrorCode.INVALID_REGULAR_EXPRESSION
        return ErrorCode.NONE

    def _join(
        self, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest, client_id: str
    ) -> ConsumerMember:
        regex = getattr(request, "subscribed_topic_regex", None)
        member = ConsumerMember(
            request.member_id,
            request.instance_id,
            list(request.subscribed_topic_names or ()),
            regex,
            request.server_assignor,
            client_id,
        )
        old = group.members.pop(request.member_id, None)
        if old is not None:
            self._stop_session(old)
        parked = group.parked.pop(request.instance_id, None) if request.instance_id else None
        if parked is not None:
            # The static member is back: it takes its place, assignment and all.
            member.epoch = parked.epoch
            group.target[member.member_id] = group.target.pop(parked.member_id, set())
            member.assigned = set(parked.assigned)
            group.members[member.member_id] = member
            return member
        if request.instance_id is not None:
            for other in list(group.members.values()):
                if other.instance_id == request.instance_id:
                    self._remove(group, other)
        group.members[member.member_id] = member
        self._bump(group)
        return member

    def _update(
        self, group: ConsumerGroup, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest
    ) -> None:
        changed = False
        if request.subscribed_topic_names is not None:
            topics = list(request.subscribed_topic_names)
            changed |= topics != member.topics
            member.topics = topics
        regex = getattr(request, "subscribed_topic_regex", None)
        if regex is not None:
            changed |= regex != member.regex
            member.regex = regex
        if request.server_assignor is not None:
            changed |= request.server_assignor != member.assignor
            member.assignor = request.server_assignor
        if changed:
            self._bump(group)

    def _leave(self, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest) -> None:
        member = group.members.get(request.member_id)
        if member is None:
            return
        if request.member_epoch == -2 and member.instance_id is not None:
            self._stop_session(member)
            del group.members[member.member_id]
            group.parked[member.instance_id] = member
            return
        self._remove(group, member)

    def _remove(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._stop_session(member)
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        self._bump(group)

    # -- assignment ------------------------------------------------------------------

    def _bump(self, group: ConsumerGroup) -> None:
        """A new group epoch: compute the target assignment again."""
        group.epoch += 1
        group.target = self._assign(group)
        group.matched = self._matched(group)

    def _matched(self, group: ConsumerGroup) -> dict[str, int]:
        members = [*group.members.values(), *group.parked.values()]
        topics = {t for m in members for t in self._subscribed(m)}
        return {t: len(self.cluster.topics[t].partitions) for t in sorted(topics)}

    def _subscribed(self, member: ConsumerMember) -> list[str]:
        topics = self.cluster.topics
        if member.regex is not None:
            pattern = re.compile(member.regex)
            return sorted(t for t in topics if not t.startswith("__") and pattern.fullmatch(t))
        return sorted(t for t in member.topics if t in topics)

    def _assign(self, group: ConsumerGroup) -> dict[str, set[TP]]:
        members = sorted(group.members.values(), key=lambda m: (m.instance_id or "", m.member_id))
        parked = list(group.parked.values())
        everyone = members + parked
        target: dict[str, set[TP]] = {m.member_id: set() for m in everyone}
        assignor = self._assignor(group)
        by_topic: dict[str, list[ConsumerMember]] = {}
        for m in everyone:
            for t in self._subscribed(m):
                by_topic.setdefault(t, []).append(m)
        if assignor == "range":
            for topic, subscribers in sorted(by_topic.items()):
                count = len(self.cluster.topics[topic].partitions)
                per, extra = divmod(count, len(subscribers))
                start = 0
                for i, m in enumerate(subscribers):
                    n = per + (1 if i < extra else 0)
                    target[m.member_id].update((topic, p) for p in range(start, start + n))
                    start += n
        else:
            turn = 0
            for topic, subscribers in sorted(by_topic.items()):
                ids = {m.member_id for m in subscribers}
                for p in range(len(self.cluster.topics[topic].partitions)):
                    while everyone[turn % len(everyone)].member_id not in ids:
                        turn += 1
                    target[everyone[turn % len(everyone)].member_id].add((topic, p))
                    turn += 1
        return target

    @staticmethod
    def _assignor(group: ConsumerGroup) -> str:
        """The server assignor the group's members ask for (the first that names one)."""
        everyone = [*group.members.values(), *group.parked.values()]
        return next((m.assignor for m in everyone if m.assignor), ASSIGNORS[0])

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Revocation first (the epoch waits for it), then the new epoch and free partitions."""
        target = group.target.get(member.member_id, set())
        taken = member.assigned - target
        if taken:
            member.assigned -= taken
            member.revoking |= taken
        if member.revoking:
            return
        member.epoch = group.epoch
        held = {
            tp
            for other in group.members.values()
            if other is not member
            for tp in other.assigned | other.revoking
        }
        member.assigned |= target - held

    def commit_error(self, group_id: str, member_id: str, epoch: int) -> int | None:
        """OffsetCommit's check in a consumer group (None: not a consumer group)."""
        group = self.groups.get(group_id)
        if group is None or not group.members:
            return None
        if epoch < 0 and not member_id:
            return None  # an admin's commit: Kafka refuses it only while members are there
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # -- describe --------------------------------------------------------------------------

    def describe(self, request: ConsumerGroupDescribeRequest, node: int) -> Any:
        """ConsumerGroupDescribe at broker *node*."""
        R = ConsumerGroupDescribeResponse
        described = []
        for group_id in request.group_ids:
            group = self.groups.get(group_id)
            if not group_id:
                error = ErrorCode.INVALID_GROUP_ID
            elif self.cluster.coordinator(group_id) != node:
                error = ErrorCode.NOT_COORDINATOR
            elif group is None or group_id in self.cluster.group_coordinator.groups:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            else:
                described.append(self._described(group))
                continue
            described.append(R.DescribedGroup(error_code=error, group_id=group_id))
        return R(groups=described)

    def state_of(self, group: ConsumerGroup) -> str:
        """Kafka's name of the group's state (the target is computed at once here, so
        never "Assigning")."""
        if not group.members:
            return "Empty"
        settled = all(
            m.epoch == group.epoch and not m.revoking and m.assigned == group.target[m.member_id]
            for m in group.members.values()
        )
        return "Stable" if settled else "Reconciling"

    def _described(self, group: ConsumerGroup) -> Any:
        R = ConsumerGroupDescribeResponse
        members = [
            R.Member(
                member_id=m.member_id,
                instance_id=m.instance_id,
                member_epoch=m.epoch,
                client_id=m.client_id,
                client_host=CLIENT_HOST,
                subscribed_topic_names=list(m.topics),
                subscribed_topic_regex=m.regex,
                assignment=self._named(m.assigned),
                target_assignment=self._named(group.target[m.member_id]),
                member_type=CONSUMER_MEMBER,
            )
            for m in group.members.values()
        ]
        return R.DescribedGroup(
            group_id=group.group_id,
            group_state=self.state_of(group),
            group_epoch=group.epoch,
            assignment_epoch=group.epoch,
            assignor_name=self._assignor(group),
            members=members,
        )

    # -- topic ids -------------------------------------------------------------------------

    def _names(self, topic_partitions: Iterable[Any]) -> set[TP]:
        by_id = self.cluster.topics_by_id
        return {
            (by_id[t.topic_id].name, p)
            for t in topic_partitions
            if t.topic_id in by_id
            for p in t.partitions
        }

    def _ids(self, assigned: Iterable[TP]) -> list[Any]:
        R = ConsumerGroupHeartbeatResponse
        topics = self.cluster.topics
        return [R.TopicPartitions(topics[t].topic_id, ps) for t, ps in self._by_topic(assigned)]

    def _named(self, assigned: Iterable[TP]) -> Any:
        """ConsumerGroupDescribe's Assignment of *assigned* (ids and names)."""
        R = ConsumerGroupDescribeResponse
        topics = self.cluster.topics
        return R.Assignment(
            [R.TopicPartitions(topics[t].topic_id, t, ps) for t, ps in self._by_topic(assigned)]
        )

    def _by_topic(self, assigned: Iterable[TP]) -> list[tuple[str, list[int]]]:
        """*assigned*'s partitions by topic (sorted), of the topics that still exist."""
        partitions: dict[str, list[int]] = {}
        for topic, p in sorted(assigned):
            partitions.setdefault(topic, []).append(p)
        return [(t, ps) for t, ps in partitions.items() if t in self.cluster.topics]
