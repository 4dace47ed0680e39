"""One member of a consumer group on Kafka 4's consumer group protocol (KIP-848).

The broker computes the assignment (its ``uniform`` or ``range`` assignor)
and hands it out incrementally through ConsumerGroupHeartbeat: a member
gives up what was taken away first (commit, then the revocation callback),
says so in its next heartbeat, and only then gets the partitions another
member held.  No group-wide barrier: the other members keep processing.

:class:`ConsumerProtocolMember` speaks to the same
:class:`~._listener.RebalanceListener` as the classic
:class:`~._classic_member.GroupMember` (the :class:`~._consumer_group.ConsumerGroup` runs the
Consumers, commits and callbacks for both); its ``generation_id`` is the
member epoch, which OffsetCommit v9+ carries.  Its lifecycle is the table
``TABLE`` below.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._transitions import TransitionTable
from afkak.client import ConsumerClient
from afkak.common import BrokerResponseError, KafkaError, TopicAndPartition

from . import _requests as req
from ._listener import Liveness, RebalanceListener
from ._membership_loop import MembershipLoop, resolve_topic_ids
from ._reactions import CONSUMER_GROUP_HEARTBEAT, Reaction, react

log = Logger()

#: Kafka's server-side assignors (``group.consumer.assignors``).
REMOTE_ASSIGNORS = ("uniform", "range")


class ConsumerMemberState(enum.Enum):
    STOPPED = "stopped"
    UNJOINED = "unjoined"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    LEAVING = "leaving"


class ConsumerMemberEvent(enum.Enum):
    START = "start"
    JOIN = "join"
    ASSIGNED = "a heartbeat brought a new assignment or epoch"
    RECONCILED = "revoked, then took the new partitions"
    ACKNOWLEDGED = "the coordinator saw the reconciled partitions"
    FENCED = "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID"
    POLL_TIMEOUT = "poll timeout"
    STOP = "stop"
    LEFT = "left"
    FAIL = "fail"


S, E = ConsumerMemberState, ConsumerMemberEvent
_IN_GROUP = (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE)

#: ::
#:
#:     STOPPED ─start─▶ JOINING ─assigned─▶ RECONCILING ─reconciled─▶ ACKNOWLEDGING
#:     ACKNOWLEDGING ─acknowledged─▶ STABLE;  ACKNOWLEDGING, STABLE ─assigned─▶ RECONCILING
#:     JOINING, RECONCILING, ACKNOWLEDGING, STABLE ─fenced─▶ UNJOINED
#:     STABLE ─poll timeout─▶ UNJOINED (liveness is checked at a STABLE member's heartbeat)
#:     UNJOINED ─join─▶ JOINING
#:     every state but STOPPED, LEAVING ─stop─▶ LEAVING ─left─▶ STOPPED;  ─fail─▶ STOPPED
#:
#: RECONCILING ignores ``assigned``: the reconciliation under way takes the newest
#: assignment when it is done with the one it has.
TABLE = TransitionTable(
    {
        (S.STOPPED, E.START): S.JOINING,
        (S.UNJOINED, E.JOIN): S.JOINING,
        (S.JOINING, E.ASSIGNED): S.RECONCILING,
        (S.ACKNOWLEDGING, E.ASSIGNED): S.RECONCILING,
        (S.STABLE, E.ASSIGNED): S.RECONCILING,
        (S.RECONCILING, E.RECONCILED): S.ACKNOWLEDGING,
        (S.ACKNOWLEDGING, E.ACKNOWLEDGED): S.STABLE,
        **{(state, E.FENCED): S.UNJOINED for state in _IN_GROUP},
        (S.STABLE, E.POLL_TIMEOUT): S.UNJOINED,
        **{(state, E.STOP): S.LEAVING for state in S if state not in (S.STOPPED, S.LEAVING)},
        (S.LEAVING, E.LEFT): S.STOPPED,
        **{(state, E.FAIL): S.STOPPED for state in S if state not in (S.STOPPED, S.LEAVING)},
    },
    ignored=[(S.RECONCILING, E.ASSIGNED)],
)


def new_member_id() -> str:
    """A member id as Java's client makes one (KIP-1082): a random UUID, base64url."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class _Fenced(Exception):
    """The coordinator fenced this member: its partitions are lost."""


class ConsumerProtocolMember(MembershipLoop):
    """Membership of one consumer in *group_id* through ConsumerGroupHeartbeat.

    *topics* or *regex* (a broker-side regular expression, RE2J syntax) is
    the subscription; *assignor* the broker's assignor (``None``: the
    broker's default).  *heartbeat_interval_ms* is only used until the
    coordinator gives its own (``group.consumer.heartbeat.interval.ms``); the
    session timeout is the broker's too.
    """

    table = TABLE

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        listener: RebalanceListener,
        *,
        regex: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        session_timeout_ms: int,
        group_instance_id: str | None = None,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        liveness: Liveness | None = None,
        member_id: str | None = None,
    ) -> None:
        if assignor is not None and assignor not in REMOTE_ASSIGNORS:
            raise ValueError(f"group_remote_assignor must be one of {REMOTE_ASSIGNORS}")
        self._init_member(
            client, group_id, topics, listener, rebalance_timeout_ms, group_instance_id, liveness
        )
        self.retime(retry_backoff_ms, retry_backoff_max_ms)
        self.regex = regex
        self.assignor = assignor
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000.0
        self._heartbeat_timeout = client.timeout
        self.member_id = member_id or new_member_id()
        self.state = S.STOPPED
        # generation_id is the member epoch (-1: not in the group): commits carry it;
        # leader_id stays "" (no leader in this protocol; afkak 21's attribute).
        #: Partitions being revoked: still reported as owned until committed.
        self._revoking: frozenset[TopicAndPartition] = frozenset()
        self._target: frozenset[TopicAndPartition] | None = None
        self._reconciling: Deferred[None] | None = None
        self._acknowledged_epoch = -1
        self._rebalance_started: float | None = None
        self._fenced: str | None = None

    def __repr__(self) -> str:
        return (
            f"<ConsumerProtocolMember group={self.group_id!r} member={self.member_id!r} "
            f"epoch={self.generation_id} state={self.state.name}>"
        )

    @property
    def stable(self) -> bool:
        return self.state is S.STABLE

    # -- control (as GroupMember) -------------------------------------------

    def start(self) -> Deferred[None]:
        """Join and stay in the group; fires when stopped, fails on a fatal error."""
        self._transition(E.START)
        self._fenced = None
        return self._start_run()

    def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to *topics*; the next heartbeat tells the coordinator."""
        self.topics = tuple(sorted(set(topics)))
        self._wake_up()

    def request_rejoin(self, reason: str) -> None:
        """A commit was refused for the current epoch: heartbeat now to learn why."""
        log.info("{member}: {reason}", member=repr(self), reason=str(reason))
        self._wake_up()

    # -- the heartbeat loop ----------------------------------------------------

    async def _step(self) -> bool:
        """Join again if fenced or stuck, else one heartbeat; True: the next one at once."""
        if self._fenced is not None or self._stuck is not None:
            await self._rejoin()
            return True
        try:
            await self._beat()
        except _Fenced:
            return True
        return False

    async def _beat(self) -> None:
        """One heartbeat, and what its answer says."""
        if self.state is S.STABLE and self._liveness is not None:
            self._stuck = self._liveness.stuck()
            if self._stuck is not None:
                return
        if self.state is S.JOINING:
            self._rebalance_started = self._rebalance_started or self.reactor.seconds()
        epoch = max(self.generation_id, req.JOIN_EPOCH)
        reported = self.owned | self._revoking
        ids = self.client.topic_ids
        owned: dict[Any, list[int]] = {}
        for tp in reported:
            owned.setdefault(ids[tp.topic], []).append(tp.partition)
        sent_at = self.sensors.now()
        response = await self._wait(self._send_heartbeat(epoch, owned, self._heartbeat_timeout))
        self.sensors.heartbeat(sent_at)
        reaction = react(CONSUMER_GROUP_HEARTBEAT, response.error_code)
        if reaction is Reaction.FENCED:
            self._fenced = BrokerResponseError.from_errno(response.error_code).message
            raise _Fenced()
        if reaction is Reaction.BACKOFF:
            raise BrokerResponseError.from_errno(response.error_code, "ConsumerGroupHeartbeat")
        if reaction is not Reaction.DONE:
            raise BrokerResponseError.from_errno(
                response.error_code,
                f"ConsumerGroupHeartbeat of group {self.group_id!r}: {response.error_message}",
            )
        if response.heartbeat_interval_ms > 0:
            self.heartbeat_interval = response.heartbeat_interval_ms / 1000.0
        if self.state is S.ACKNOWLEDGING and reported == self.owned:
            self._transition(E.ACKNOWLEDGED)
            self._settled()
        new_epoch = response.member_epoch != self.generation_id
        self.generation_id = response.member_epoch
        if response.assignment is not None:
            self._target = await self._wait(
                Deferred.fromCoroutine(
                    resolve_topic_ids(self.client, response.assignment.topic_partitions)
                )
            )
        elif new_epoch:
            self._target = self._target if self._target is not None else self.owned
        if self._target is not None and self._stop_reason is None:
            self._transition(E.ASSIGNED)
            if self._reconciling is None:
                reconciling = Deferred.fromCoroutine(self._reconcile())
                if not reconciling.called:  # else it is over already
                    self._reconciling = reconciling
                reconciling.addErrback(self.fail)

    async def _until_next_beat(self) -> None:
        if (
            self._stop_reason is not None
            or self._fenced is not None
            or self._stuck is not None
            or self.state is S.ACKNOWLEDGING  # reconciled: say so now
        ):
            return
        await self._nap(self.heartbeat_interval)

    def _send_heartbeat(
        self, epoch: int, owned: dict[Any, list[int]], timeout: float
    ) -> Deferred[Any]:
        request = req.consumer_group_heartbeat(
            self.group_id,
            self.member_id,
            epoch,
            self.group_instance_id,
            self.rebalance_timeout_ms,
            self.topics,
            self.regex,
            self.assignor,
            owned,
        )
        return self.client.send_request_to_coordinator(
            self.group_id, request, min_version=req.CLIENT_MEMBER_ID_VERSION, timeout=timeout
        )

    # -- reconciliation ----------------------------------------------------------

    async def _reconcile(self) -> None:
        """Revoke (commit, callback), then take the new partitions; heartbeat at once."""
        try:
            while self._target is not None and self.state is S.RECONCILING:
                target, self._target = self._target, None
                revoked = sorted(self.owned - target)
                if revoked:
                    self._revoking = frozenset(revoked)
                    self.owned = self.owned - self._revoking
                    await maybeDeferred(self.listener.revoke, revoked)
                    self._revoking = frozenset()
                if self.state is not S.RECONCILING:
                    return
                if self._target is not None:
                    continue  # a newer assignment came meanwhile
                self.owned = target
                await maybeDeferred(self.listener.assign, sorted(target), self.generation)
                if self.state is S.RECONCILING and self._target is None:
                    self._transition(E.RECONCILED)
                    self._wake_up()  # acknowledge in a heartbeat now
        finally:
            self._revoking = frozenset()
            self._reconciling = None

    def _settled(self) -> None:
        self.rebalances += 1
        started, self._rebalance_started = self._rebalance_started, None
        if started is not None:
            self.sensors.rebalanced(started)
        log.info("{member}: reconciled; owns {owned}", member=repr(self), owned=sorted(self.owned))

    async def _settle_reconciliation(self) -> None:
        reconciling = self._reconciling
        if reconciling is not None:
            await reconciling

    # -- fencing, liveness, leaving ---------------------------------------------------

    async def _rejoin(self) -> None:
        """Fenced or stuck: lose every partition (no commit), then join with epoch 0."""
        fenced, self._fenced = self._fenced, None
        stuck, self._stuck = self._stuck, None
        self._transition(E.FENCED if fenced is not None else E.POLL_TIMEOUT)
        await self._settle_reconciliation()
        if stuck is not None:
            log.warn("{member}: leaving the group: {reason}", member=repr(self), reason=str(stuck))
            await self._send_leave()
        else:
            log.warn(
                "{member}: fenced ({error}); partitions lost", member=repr(self), error=str(fenced)
            )
        self.generation_id = -1
        self._target = None
        lost, self.owned = sorted(self.owned), frozenset()
        if lost:
            await maybeDeferred(self.listener.lose, lost)
        if stuck is not None and self._liveness is not None:
            await self._wait(self._liveness.until_live())
        self._transition(E.JOIN)

    async def _leave(self) -> None:
        coordinator_refused = self._failure is not None and self._failure.check(BrokerResponseError)
        self._transition(E.FAIL if coordinator_refused else E.STOP)
        try:
            await self._settle_reconciliation()
        except Exception:
            self._failure = self._failure or Failure()
        await self._give_up_owned()
        if self.state is S.LEAVING:
            await self._send_leave()
            self._transition(E.LEFT)
        self.generation_id = -1
        self._finish()

    async def _send_leave(self) -> None:
        """A heartbeat with epoch -1 (-2 for a static member, which keeps its place)."""
        if self.generation_id < 0:
            return
        epoch = req.LEAVE_EPOCH if self.group_instance_id is None else req.STATIC_LEAVE_EPOCH
        try:
            response = await self._send_heartbeat(epoch, {}, self.client.timeout)
        except KafkaError as e:
            log.info("{member}: leaving failed: {error}", member=repr(self), error=str(e))
            return
        if response.error_code:
            log.info("{member}: leaving answered {e}", member=repr(self), e=response.error_code)
