"""The fake cluster's share groups (KIP-932): membership, share sessions, acquisition, offsets.

Enough of Kafka 4's share group coordinator and share-partition leaders for
users' trial tests.  ShareGroupHeartbeat: members join with epoch 0, the
group epoch moves when one joins, leaves or times out, and every member gets
its partitions at once (no revocation first: a share-partition may be read by
several members); fewer members than partitions split them, more members share
them.  ShareFetch and ShareAcknowledge: share sessions per (broker, group,
member) with Kafka's epoch rules, acknowledgements applied before records are
acquired, acquisition locks on the cluster's reactor
(:mod:`._share_partitions`).  A share group starts reading at the end of a
partition, as Kafka's ``share.auto.offset.reset=latest``, unless
``auto_offset_reset[group]`` says ``"earliest"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import attrs
from twisted.internet.defer import Deferred

from afkak._broker_errors import ErrorCode
from afkak.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from afkak.testing._group_state import CLIENT_HOST
from afkak.testing._member_sessions import MemberSessions
from afkak.testing._share_partitions import (
    DELIVERY_COUNT_LIMIT,
    LOCK_DURATION_MS,
    SharePartition,
    ranges,
)

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from afkak.testing._consumer_group_coordinator import ConsumerGroupCoordinator
    from afkak.testing._group_state import GroupCoordinatorState
    from afkak.testing._state import FakeBroker, FakePartition, FakeTopic


class Cluster(Protocol):
    """What the share coordinator reads of the fake cluster (its ``ClusterState``)."""

    reactor: IReactorTime
    brokers: dict[int, FakeBroker]
    topics: dict[str, FakeTopic]
    topics_by_id: dict[Any, FakeTopic]
    group_coordinator: GroupCoordinatorState
    consumer_groups: ConsumerGroupCoordinator
    fetch_waiters: set[Any]

    def coordinator(self, key: str) -> int: ...

    def partition(self, topic: str, partition: int) -> FakePartition: ...

    def wake_fetches(self) -> None: ...


class RequestContext(Protocol):
    """The broker asked, and who asks."""

    node: int
    client_id: str | None


TP = tuple[str, int]
#: Kafka's group.share.heartbeat.interval.ms and group.share.session.timeout.ms.
HEARTBEAT_INTERVAL_MS = 5000
SESSION_TIMEOUT_MS = 45000
FINAL_EPOCH = -1
ZERO_UUID = UUID(int=0)


@attrs.define(eq=False)
class ShareMember:
    member_id: str
    topics: list[str]
    client_id: str
    epoch: int = 0
    assigned: frozenset[TP] = frozenset()
    sent: frozenset[TP] | None = None
    session: Any = None


@attrs.define(eq=False)
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = attrs.field(factory=dict)


@attrs.define(eq=False)
class ShareSession:
    """A share session: the partitions a member fetches from one broker, and its epoch."""

    epoch: int
    partitions: set[TP] = attrs.field(factory=set)


class ShareGroupCoordinator(MemberSessions):
    """Every share group of the fake cluster, and their share-partitions."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}
        #: (node, group, member) -> share session.
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}
        #: Group id -> "earliest" or "latest" (the group config share.auto.offset.reset).
        self.auto_offset_reset: dict[str, str] = {}
        self.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS
        self.session_timeout_ms = SESSION_TIMEOUT_MS
        self.lock_duration_ms = LOCK_DURATION_MS
        self.delivery_count_limit = DELIVERY_COUNT_LIMIT

    # -- membership ------------------------------------------------------------------

    def heartbeat(self, ctx: RequestContext, request: ShareGroupHeartbeatRequest) -> Any:
        R = ShareGroupHeartbeatResponse
        error = self._group_error(request.group_id, ctx.node)
        if not error and not request.member_id:
            error = ErrorCode.INVALID_REQUEST
        if error:
            return R(error_code=error, member_epoch=-1)
        group = self.groups.setdefault(request.group_id, ShareGroup(request.group_id))
        member = group.members.get(request.member_id)
        if request.member_epoch == FINAL_EPOCH:
            if member is not None:
                self._remove(group, member)
            return R(member_id=request.member_id, member_epoch=FINAL_EPOCH)
        if request.member_epoch == 0:
            if member is None:
                member = ShareMember(request.member_id, [], ctx.client_id or "")
                group.members[member.member_id] = member
            member.sent = None
            self._subscribe(group, member, request.subscribed_topic_names or [])
        elif member is None:
            return R(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_epoch=-1)
        elif request.member_epoch != member.epoch:
            return R(error_code=ErrorCode.FENCED_MEMBER_EPOCH, member_epoch=-1)
        elif request.subscribed_topic_names is not None:
            self._subscribe(group, member, request.subscribed_topic_names)
        self._touch(group, member)
        member.epoch = group.epoch
        assignment = None
        if member.sent != member.assigned:
            member.sent = member.assigned
            assignment = R.Assignment(self._ids(member.assigned))
        return R(
            member_id=member.member_id,
            member_epoch=member.epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            assignment=assignment,
        )

    def _group_error(self, group_id: str, node: int) -> int:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if self.cluster.coordinator(group_id) != node:
            return ErrorCode.NOT_COORDINATOR
        if group_id in self.cluster.group_coordinator.groups or (
            self.cluster.consumer_groups.groups.get(group_id) is not None
        ):
            return ErrorCode.GROUP_ID_NOT_FOUND  # a consumer group of that name
        return ErrorCode.NONE

    def _subscribe(self, group: ShareGroup, member: ShareMember, topics: Iterable[str]) -> None:
        topics = sorted(set(topics))
        if topics != member.topics or member.epoch == 0:
            member.topics = topics
            self._bump(group)

    def _remove(self, group: ShareGroup, member: ShareMember) -> None:
        self._stop_session(member)
        del group.members[member.member_id]
        for key in [k for k in self.sessions if k[1:] == (group.group_id, member.member_id)]:
            del self.sessions[key]
        self._release(group.group_id, member.member_id)
        self._bump(group)

    def _release(self, group_id: str, member_id: str) -> None:
        for (g, _, _), partition in self.partitions.items():
            if g == group_id:
                partition.release_member(member_id)

    def _bump(self, group: ShareGroup) -> None:
        """A new group epoch and assignment: partitions split, shared by surplus members."""
        group.epoch += 1
        members = sorted(group.members.values(), key=lambda m: m.member_id)
        target: dict[str, set[TP]] = {m.member_id: set() for m in members}
        topics = sorted({t for m in members for t in m.topics if t in self.cluster.topics})
        for topic in topics:
            subscribers = [m for m in members if topic in m.topics]
            count = len(self.cluster.topics[topic].partitions)
            for i in range(max(count, len(subscribers))):
                target[subscribers[i % len(subscribers)].member_id].add((topic, i % count))
        for m in members:
            m.assigned = frozenset(target[m.member_id])

    def _ids(self, assigned: Iterable[TP]) -> list[Any]:
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(assigned):
            by_topic.setdefault(topic, []).append(p)
        return [
            ShareGroupHeartbeatResponse.TopicPartitions(self.cluster.topics[t].topic_id, ps)
            for t, ps in by_topic.items()
            if t in self.cluster.topics
        ]

    # -- share-partitions -------------------------------------------------------------

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition:
        """The group's state of one partition, initialised at first use (start offset reset)."""
        key = (group_id, topic, partition)
        found = self.partitions.get(key)
        if found is None:
            log = self.cluster.partition(topic, partition).log
            earliest = self.auto_offset_reset.get(group_id, "latest") == "earliest"
            start = log.log_start_offset if earliest else log.high_watermark
            found = self.partitions[key] = SharePartition(
                start,
                self.cluster.reactor,
                self.cluster.wake_fetches,
                self.lock_duration_ms,
                self.delivery_count_limit,
            )
        return found

    # -- ShareFetch and ShareAcknowledge ----------------------------------------------

    def _session(self, node: int, request: Any, fetching: bool) -> tuple[int, ShareSession | None]:
        """Kafka's share-session epoch rules: (error, the session)."""
        key = (node, request.group_id or "", request.member_id or "")
        epoch = request.share_session_epoch
        if epoch == 0:
            if not fetching:
                return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
            self._close_session(key)
            opened = self.sessions[key] = ShareSession(1)
            return ErrorCode.NONE, opened
        session = self.sessions.get(key)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            return ErrorCode.NONE, session
        if epoch != session.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        session.epoch = 1 if session.epoch == 2**31 - 1 else session.epoch + 1
        return ErrorCode.NONE, session

    def _close_session(self, key: tuple[int, str, str]) -> None:
        """Close a share session: the records it acquired are available again."""
        session = self.sessions.pop(key, None)
        if session is not None:
            for topic, p in session.partitions:
                found = self.partitions.get((key[1], topic, p))
                if found is not None:
                    found.release_member(key[2])

    def _acknowledge(self, request: Any, topics: Iterable[Any]) -> dict[TP, int]:
        """Apply every acknowledgement batch: the error code per partition."""
        results: dict[TP, int] = {}
        for t in topics:
            topic = self.cluster.topics_by_id.get(t.topic_id)
            for p in t.partitions:
                if not p.acknowledgement_batches:
                    continue
                if topic is None or p.partition_index >= len(topic.partitions):
                    results[str(t.topic_id), p.partition_index] = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                sp = self.share_partition(request.group_id, topic.name, p.partition_index)
                error = ErrorCode.NONE
                for b in p.acknowledgement_batches:
                    ok = sp.acknowledge(
                        request.member_id, b.first_offset, b.last_offset, list(b.acknowledge_types)
                    )
                    error = error or (ErrorCode.NONE if ok else ErrorCode.INVALID_RECORD_STATE)
                results[topic.name, p.partition_index] = error
        return results

    def fetch(self, ctx: RequestContext, request: ShareFetchRequest) -> Any:
        R = ShareFetchResponse
        if not request.group_id or not request.member_id:
            return R(error_code=ErrorCode.INVALID_REQUEST)
        has_acks = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
        if request.share_session_epoch == 0 and has_acks:
            return R(error_code=ErrorCode.INVALID_REQUEST)
        error, session = self._session(ctx.node, request, fetching=True)
        if error or session is None:
            return R(error_code=error)
        acks = self._acknowledge(request, request.topics)
        if request.share_session_epoch == FINAL_EPOCH:
            self._close_session((ctx.node, request.group_id or "", request.member_id or ""))
            return self._fetch_response(ctx.node, request, acks, {})
        for t in request.topics:
            topic = self.cluster.topics_by_id.get(t.topic_id)
            if topic is not None:
                session.partitions.update((topic.name, p.partition_index) for p in t.partitions)
        for f in request.forgotten_topics_data:
            topic = self.cluster.topics_by_id.get(f.topic_id)
            if topic is not None:
                session.partitions.difference_update((topic.name, p) for p in f.partitions)
        acquired = self._acquire(ctx.node, request, session)
        if acquired or request.max_wait_ms <= 0:
            return self._fetch_response(ctx.node, request, acks, acquired)
        return ShareFetchWaiter(self, ctx.node, request, session, acks).deferred

    def _acquire(
        self, node: int, request: ShareFetchRequest, session: ShareSession
    ) -> dict[TP, list[tuple[int, int]] | int]:
        """Acquired ``(offset, count)`` per partition, or an error code."""
        out: dict[TP, list[tuple[int, int]] | int] = {}
        left = request.max_records if request.max_records > 0 else 500
        for topic, p in sorted(session.partitions):
            if topic not in self.cluster.topics:
                continue
            part = self.cluster.partition(topic, p)
            if part.leader != node:
                out[topic, p] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            if left <= 0:
                continue
            sp = self.share_partition(request.group_id or "", topic, p)
            sp.start = max(sp.start, part.log.log_start_offset)
            got = sp.acquire(request.member_id or "", part.log.high_watermark, left)
            if got:
                out[topic, p] = got
                left -= len(got)
        return out

    def _fetch_response(
        self,
        node: int,
        request: ShareFetchRequest,
        acks: dict[TP, int],
        acquired: dict[TP, list[tuple[int, int]] | int],
    ) -> Any:
        R = ShareFetchResponse
        by_topic: dict[Any, list[Any]] = {}
        leaders: set[int] = set()
        for tp in sorted(set(acks) | set(acquired)):
            topic_name, index = tp
            topic = self.cluster.topics.get(topic_name)
            answer = R.PartitionData(partition_index=index, acknowledge_error_code=acks.get(tp, 0))
            got = acquired.get(tp)
            if isinstance(got, int):
                answer.error_code = got
                if topic is not None:
                    part = topic.partitions[index]
                    answer.current_leader = R.LeaderIdAndEpoch(part.leader, part.leader_epoch)
                    leaders.add(part.leader)
            elif got:
                runs = ranges(got)
                log = self.cluster.partition(topic_name, index).log
                answer.records = log.read(
                    runs[0][0], 2**31 - 1, min_one_batch=True, upper=runs[-1][1] + 1
                )
                answer.acquired_records = [R.AcquiredRecords(f, last, c) for f, last, c in runs]
            topic_id = topic.topic_id if topic is not None else ZERO_UUID
            by_topic.setdefault(topic_id, []).append(answer)
        endpoints = [
            R.NodeEndpoint(b.node_id, b.host, b.port, b.rack)
            for n in sorted(leaders)
            if (b := self.cluster.brokers.get(n)) is not None and b.up
        ]
        return R(
            acquisition_lock_timeout_ms=self.lock_duration_ms,
            responses=[
                R.ShareFetchableTopicResponse(tid, parts)
                for tid, parts in by_topic.items()
                if tid is not None
            ],
            node_endpoints=endpoints,
        )

    def acknowledge(self, ctx: RequestContext, request: ShareAcknowledgeRequest) -> Any:
        R = ShareAcknowledgeResponse
        error, session = self._session(ctx.node, request, fetching=False)
        if error or session is None:
            return R(error_code=error)
        acks = self._acknowledge(request, request.topics)
        if request.share_session_epoch == FINAL_EPOCH:
            self._close_session((ctx.node, request.group_id or "", request.member_id or ""))
        by_topic: dict[Any, list[Any]] = {}
        for (name, index), code in sorted(acks.items()):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                by_topic.setdefault(topic.topic_id, []).append(
                    R.PartitionData(partition_index=index, error_code=code)
                )
        return R(
            acquisition_lock_timeout_ms=self.lock_duration_ms,
            responses=[R.ShareAcknowledgeTopicResponse(t, ps) for t, ps in by_topic.items()],
        )

    # -- admin -------------------------------------------------------------------------

    def describe(self, ctx: RequestContext, request: ShareGroupDescribeRequest) -> Any:
        R = ShareGroupDescribeResponse
        described = []
        for group_id in request.group_ids:
            error = self._group_error(group_id, ctx.node)
            group = self.groups.get(group_id)
            if error or group is None:
                described.append(
                    R.DescribedGroup(
                        error_code=error or ErrorCode.GROUP_ID_NOT_FOUND, group_id=group_id
                    )
                )
                continue
            members = []
            for m in group.members.values():
                by_topic: dict[str, list[int]] = {}
                for topic, p in sorted(m.assigned):
                    by_topic.setdefault(topic, []).append(p)
                assignment = R.Assignment(
                    [
                        R.TopicPartitions(self.cluster.topics[t].topic_id, t, ps)
                        for t, ps in by_topic.items()
                        if t in self.cluster.topics
                    ]
                )
                members.append(
                    R.Member(
                        member_id=m.member_id,
                        member_epoch=m.epoch,
                        client_id=m.client_id,
                        client_host=CLIENT_HOST,
                        subscribed_topic_names=list(m.topics),
                        assignment=assignment,
                    )
                )
            described.append(
                R.DescribedGroup(
                    group_id=group_id,
                    group_state=self.state_of(group),
                    group_epoch=group.epoch,
                    assignment_epoch=group.epoch,
                    assignor_name="simple",
                    members=members,
                )
            )
        return R(groups=described)

    @staticmethod
    def state_of(group: ShareGroup) -> str:
        return "Stable" if group.members else "Empty"

    def describe_offsets(
        self, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
    ) -> Any:
        R = DescribeShareGroupOffsetsResponse
        groups = []
        for g in request.groups:
            error = self._group_error(g.group_id, ctx.node)
            if error:
                groups.append(R.DescribeShareGroupOffsetsResponseGroup(g.group_id, [], error))
                continue
            if g.topics is None:
                asked: dict[str, list[int]] = {}
                for group_id, tname, p in sorted(self.partitions):
                    if group_id == g.group_id and tname in self.cluster.topics:
                        asked.setdefault(tname, []).append(p)
            else:
                asked = {t.topic_name: list(t.partitions) for t in g.topics}
            topics = []
            for name, indexes in asked.items():
                topic = self.cluster.topics.get(name)
                answers = []
                for index in indexes:
                    sp = self.partitions.get((g.group_id, name, index))
                    answer = R.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1
                    )
                    if topic is None or index >= len(topic.partitions):
                        answer.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    elif sp is not None:
                        part = topic.partitions[index]
                        answer.start_offset = sp.start
                        answer.leader_epoch = part.leader_epoch
                        answer.lag = max(
                            0, part.log.high_watermark - sp.start - sp.done_beyond_start()
                        )
                    answers.append(answer)
                topics.append(
                    R.DescribeShareGroupOffsetsResponseTopic(
                        name, topic.topic_id if topic is not None else ZERO_UUID, answers
                    )
                )
            groups.append(R.DescribeShareGroupOffsetsResponseGroup(g.group_id, topics))
        return R(groups=groups)

    def _offsets_group_error(self, group_id: str, node: int) -> int:
        error = self._group_error(group_id, node)
        group = self.groups.get(group_id)
        if not error and group is not None and group.members:
            error = ErrorCode.NON_EMPTY_GROUP
        return error

    def alter_offsets(self, ctx: RequestContext, request: AlterShareGroupOffsetsRequest) -> Any:
        R = AlterShareGroupOffsetsResponse
        error = self._offsets_group_error(request.group_id, ctx.node)
        if error:
            return R(error_code=error)
        self.groups.setdefault(request.group_id, ShareGroup(request.group_id))
        topics = []
        for t in request.topics:
            topic = self.cluster.topics.get(t.topic_name)
            answers = []
            for p in t.partitions:
                code = ErrorCode.NONE
                if topic is None or p.partition_index >= len(topic.partitions):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    sp = self.share_partition(request.group_id, t.topic_name, p.partition_index)
                    log = topic.partitions[p.partition_index].log
                    sp.reset(min(max(p.start_offset, log.log_start_offset), log.high_watermark))
                answers.append(R.AlterShareGroupOffsetsResponsePartition(p.partition_index, code))
            topics.append(
                R.AlterShareGroupOffsetsResponseTopic(
                    t.topic_name, topic.topic_id if topic is not None else ZERO_UUID, answers
                )
            )
        return R(responses=topics)

    def delete_offsets(self, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest) -> Any:
        R = DeleteShareGroupOffsetsResponse
        error = self._offsets_group_error(request.group_id, ctx.node)
        if error:
            return R(error_code=error)
        topics = []
        for t in request.topics:
            topic = self.cluster.topics.get(t.topic_name)
            code = ErrorCode.NONE if topic is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for key in [k for k in self.partitions if k[:2] == (request.group_id, t.topic_name)]:
                self.partitions.pop(key).stop()
            topics.append(
                R.DeleteShareGroupOffsetsResponseTopic(
                    t.topic_name, topic.topic_id if topic is not None else ZERO_UUID, code
                )
            )
        return R(responses=topics)


class ShareFetchWaiter:
    """A ShareFetch that acquired nothing, held until records are available or ``max_wait_ms``."""

    def __init__(
        self,
        coordinator: ShareGroupCoordinator,
        node: int,
        request: ShareFetchRequest,
        session: ShareSession,
        acks: dict[TP, int],
    ) -> None:
        self._coordinator = coordinator
        self._node = node
        self._request = request
        self._session = session
        self._acks = acks
        cluster = coordinator.cluster
        self.deferred: Deferred[Any] = Deferred(self._cancel)
        self._timer = cluster.reactor.callLater(request.max_wait_ms / 1000.0, self.poll, True)
        cluster.fetch_waiters.add(self)

    def poll(self, expired: bool = False) -> None:
        key = (self._node, self._request.group_id or "", self._request.member_id or "")
        if self._coordinator.sessions.get(key) is not self._session:
            acquired: dict[TP, Any] = {}  # the session closed meanwhile
        else:
            acquired = self._coordinator._acquire(self._node, self._request, self._session)
        if acquired or expired:
            self._cancel(self.deferred)
            self.deferred.callback(
                self._coordinator._fetch_response(self._node, self._request, self._acks, acquired)
            )

    def _cancel(self, _: Deferred[Any]) -> None:
        self._coordinator.cluster.fetch_waiters.discard(self)
        if self._timer.active():
            self._timer.cancel()


def share_apis() -> dict[int, Any]:
    """The share group APIs' handlers by api key, answered by the cluster's coordinator."""

    def of(method: str) -> Any:
        def handle(ctx: Any, request: Any, version: int) -> Any:
            return getattr(ctx.state.share_groups, method)(ctx, request)

        return handle

    return {
        ShareGroupHeartbeatRequest.API_KEY: of("heartbeat"),
        ShareGroupDescribeRequest.API_KEY: of("describe"),
        ShareFetchRequest.API_KEY: of("fetch"),
        ShareAcknowledgeRequest.API_KEY: of("acknowledge"),
        DescribeShareGroupOffsetsRequest.API_KEY: of("describe_offsets"),
        AlterShareGroupOffsetsRequest.API_KEY: of("alter_offsets"),
        DeleteShareGroupOffsetsRequest.API_KEY: of("delete_offsets"),
    }


def _offsets_failed(request: Any, version: int, code: int) -> Any:
    """DescribeShareGroupOffsets' error response: the code in every group named."""
    R = DescribeShareGroupOffsetsResponse
    return R(
        groups=[
            R.DescribeShareGroupOffsetsResponseGroup(g.group_id, [], code) for g in request.groups
        ]
    )


#: The error responses of the share APIs without a top-level error code (ShareGroupDescribe's
#: is with ConsumerGroupDescribe's, in afkak.testing._error_responses).
SHARE_ERROR_RESPONSES = {
    DescribeShareGroupOffsetsRequest.API_KEY: _offsets_failed,
}
