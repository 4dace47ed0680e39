"""One member of a consumer group on Kafka's classic group protocol.

:class:`GroupMember` runs the membership state machine of :mod:`._states`:
it finds the coordinator (through the client), joins (JoinGroup, with the
MEMBER_ID_REQUIRED second round), computes the assignment when it leads,
syncs (SyncGroup), heartbeats, and rejoins or leaves.  It reacts to the
coordinator's errors as Kafka's Java consumer does.  What a partition means
to the application is the *listener*'s business:

- ``revoke(partitions)``: give them up, committing their progress;
- ``lose(partitions)``: give them up without committing (the member was
  fenced: its commits would be refused);
- ``assign(partitions, generation)``: the whole assignment after a sync,
  kept partitions included (so that work kept across a cooperative
  rebalance commits with the new generation); start on those not yet run.

Each may return a Deferred that the member waits for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._errors import DecodeError
from afkak._retry import retrying
from afkak.client import ConsumerClient
from afkak.common import (
    BrokerResponseError,
    ErrorCode,
    KafkaError,
    NoCommonVersionError,
    TopicAndPartition,
)
from afkak.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from . import _requests as req
from ._assignor import Member, PartitionAssignor, RebalanceProtocol, common_protocol
from ._heartbeat import HeartbeatTimer
from ._listener import Generation, Liveness, RebalanceListener
from ._membership_loop import CancelledByStop, MembershipLoop, retriable
from ._reactions import (
    HEARTBEAT,
    JOIN_GROUP,
    SYNC_GROUP,
    Reaction,
    react,
)
from ._states import TABLE, MemberEvent as E, MemberState as S

log = Logger()

#: Extra time a JoinGroup or SyncGroup may take beyond the rebalance timeout (Java: 5 s).
JOIN_GRACE_SECONDS = 5.0


class _Rejoin(Exception):
    """Join again, keeping the member id (REBALANCE_IN_PROGRESS, a coordinator change)."""


class _Backoff(Exception):
    """The coordinator asked the member to wait before joining again."""


class _Fenced(Exception):
    """The coordinator no longer knows this member or generation: partitions are lost."""

    def __init__(self, error: int) -> None:
        super().__init__(error)
        self.error = error


@attrs.frozen
class _Fencing:
    """Why the member's partitions are lost, and whether its member id went with them."""

    reason: str
    forget_member_id: bool

    @classmethod
    def by_coordinator(cls, error: int) -> _Fencing:
        message = BrokerResponseError.from_errno(error).message
        return cls(
            f"fenced by the coordinator ({message})",
            error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID),
        )


class GroupMember(MembershipLoop):
    """Membership of one consumer in *group_id*, on behalf of *listener*.

    Timeouts are in milliseconds, as Kafka's configuration names them;
    *retry_backoff_ms* doubles on each consecutive failure up to
    *retry_backoff_max_ms*, jittered by ±20 % (Kafka's ``retry.backoff.ms`` and
    ``retry.backoff.max.ms``).
    """

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        listener: RebalanceListener,
        assignors: Sequence[PartitionAssignor],
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        group_instance_id: str | None = None,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        initial_backoff_ms: int | None = None,
        liveness: Liveness | None = None,
    ) -> None:
        if not assignors:
            raise ValueError("at least one assignor is needed")
        if len({a.name for a in assignors}) != len(assignors):
            raise ValueError("assignor names must be unique")
        if not 0 < heartbeat_interval_ms < session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be positive and below session_timeout_ms")
        self._init_member(
            client, group_id, topics, listener, rebalance_timeout_ms, group_instance_id, liveness
        )
        self.retime(retry_backoff_ms, retry_backoff_max_ms)
        self.assignors = list(assignors)
        self.protocol = common_protocol(self.assignors)
        self.session_timeout_ms = session_timeout_ms
        # A heartbeat stuck on a dead coordinator must fail (and make the client
        # look the coordinator up again) well within the session timeout.
        self._heartbeat_timeout = min(client.timeout, session_timeout_ms / 3000.0)
        #: Milliseconds between failed attempts before the member first joined (afkak 21).
        self.initial_backoff_ms = initial_backoff_ms
        self.member_id = ""
        self.state = S.STOPPED
        self.protocol_name: str | None = None
        self._assigned_counts: dict[str, int] = {}
        self._rejoin_reason: str | None = None
        self._fenced: _Fencing | None = None
        # Fires when a STABLE member's coordinator has answered nothing for the session
        # timeout (moved on by each heartbeat answered): see _session_lost.
        self._session_watch: Any = None
        self.heartbeats = HeartbeatTimer(self.reactor, heartbeat_interval_ms / 1000.0, self._beat)

    def __repr__(self) -> str:
        return (
            f"<GroupMember group={self.group_id!r} member={self.member_id!r} "
            f"generation={self.generation_id} state={self.state.name}>"
        )

    @property
    def stable(self) -> bool:
        return self.state is S.STABLE

    @property
    def heartbeat_interval(self) -> float:
        """Seconds between heartbeats."""
        return self.heartbeats.interval

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    # -- control ------------------------------------------------------------

    def start(self) -> Deferred[None]:
        """Join and stay in the group; fires when stopped, fails on a fatal error."""
        self._transition(E.START)
        self._rejoin_reason = None
        self._fenced = None
        return self._start_run()

    def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to *topics* from now on; a running member rebalances if they changed."""
        new = tuple(sorted(set(topics)))
        if new != self.topics:
            self.topics = new
            if self.state is not S.STOPPED:
                self.request_rejoin(f"the subscription changed to {list(new)}")

    def request_rejoin(self, reason: str) -> None:
        """Rebalance soon (e.g. a commit was refused because a rebalance is in progress)."""
        if self._rejoin_reason is None:
            self._rejoin_reason = reason
        self._wake_up()

    def _transition(self, event: E) -> None:
        new = TABLE.next(self.state, event)
        assert new is not None  # the member's table declares no no-ops
        log.debug(
            "{member}: {event} -> {state}", member=repr(self), event=event.value, state=new.name
        )
        self.state = new
        if new in (S.STABLE, S.PREPARING):
            self.heartbeats.run()
        else:
            self.heartbeats.stop()
        if new is S.STABLE:
            self._watch_session()
        elif self._session_watch is not None and self._session_watch.active():
            self._session_watch.cancel()

    # -- the loop -------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while self._stop_reason is None:
                await self._rebalance()
                if self._stop_reason is None and self.state is S.STABLE:
                    await self._until_woken()
                if self._fenced is not None and self.state is S.STABLE:
                    await self._lose_all()
                elif self._stuck is not None and self.state is S.STABLE:
                    await self._leave_stuck()
        except CancelledByStop:
            pass
        except Exception:
            self._failure = self._failure or Failure()
        await self._leave()

    async def _rebalance(self) -> None:
        """One rebalance round: PREPARING -> JOINING -> SYNCING -> STABLE (or back to the start)."""
        started = self.reactor.seconds()
        self._transition(E.JOIN if self.state is S.UNJOINED else E.REJOIN)
        reason, self._rejoin_reason = self._rejoin_reason, None
        if not await self._prepare():
            return
        if self._fenced is not None:
            await self._lose_all()
            return
        self._transition(E.PREPARED)
        await maybeDeferred(self.listener.prepare_join)
        try:
            joined = await self._join(reason)
            self._transition(E.JOINED)
            assignment = await self._sync(joined)
        except _Rejoin:
            self._rejoin_reason = self._rejoin_reason or "rejoining"
            return
        except _Fenced as e:
            self._fenced = _Fencing.by_coordinator(e.error)
            await self._lose_all()
            return
        self._transition(E.SYNCED)
        self.rebalances += 1
        self.sensors.rebalanced(started)
        await self._settle(assignment)
        log.info(
            "{member}: rebalanced in {seconds:.3f} s; owns {owned}",
            member=repr(self),
            seconds=self.reactor.seconds() - started,
            owned=sorted(self.owned),
        )

    async def _prepare(self) -> bool:
        """Give up what must go before joining; False if it outlasted the rebalance timeout."""
        if self.protocol is RebalanceProtocol.EAGER or self.generation_id < 0:
            revoked = sorted(self.owned)
        else:
            revoked = sorted(tp for tp in self.owned if tp.topic not in self.topics)
        if not revoked:
            return True
        self.owned = self.owned - set(revoked)
        done = maybeDeferred(self.listener.revoke, revoked)
        finished = await self._within(done, self.rebalance_timeout_ms / 1000.0)
        if not finished:
            log.warn(
                "{member}: revoking {revoked} outlasted the rebalance timeout; leaving",
                member=repr(self),
                revoked=revoked,
            )
            await self._send_leave("revoking partitions outlasted the rebalance timeout")
            self._reset(member_id=True)
            self._fenced = None
            self._transition(E.TOO_SLOW)
        await done
        return finished

    async def _lose_all(self) -> None:
        """Lose every partition and forget the generation (and member id if unknown)."""
        fencing, self._fenced = self._fenced, None
        assert fencing is not None
        log.warn("{member}: {reason}; partitions lost", member=repr(self), reason=fencing.reason)
        self._transition(E.FENCED)
        self._reset(member_id=fencing.forget_member_id)
        lost, self.owned = sorted(self.owned), frozenset()
        if lost:
            await maybeDeferred(self.listener.lose, lost)

    def _reset(self, member_id: bool) -> None:
        self.generation_id = -1
        self.leader_id = ""
        if member_id:
            self.member_id = ""

    async def _leave_stuck(self) -> None:
        """The application did not poll in time (Java's ``max.poll.interval.ms``): leave the
        group so that its partitions go to the others, lose them, and join again anew."""
        reason, self._stuck = self._stuck, None
        log.warn("{member}: leaving the group: {reason}", member=repr(self), reason=str(reason))
        self._transition(E.POLL_TIMEOUT)
        await self._send_leave(reason or "max_poll_interval_ms exceeded")
        self._reset(member_id=True)
        lost, self.owned = sorted(self.owned), frozenset()
        if lost:
            await maybeDeferred(self.listener.lose, lost)
        if self._liveness is not None:
            # As Java's consumer, which joins again at its next poll.
            await self._wait(self._liveness.until_live())

    async def _until_woken(self) -> None:
        if self._rejoin_reason is not None or self._fenced is not None or self._stuck is not None:
            return
        self._wake = Deferred()
        await self._wake

    # -- JoinGroup --------------------------------------------------------------

    def _subscription(self) -> bytes:
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            sub = Subscription(self.topics, tuple(sorted(self.owned)), self.generation_id)
        else:
            sub = Subscription(self.topics)
        return encode_subscription(sub)

    async def _join(self, reason: str | None) -> Any:
        """JoinGroup until it succeeds; failures and BACKOFF answers back off alike."""
        return await self._wait(
            Deferred.fromCoroutine(
                retrying(
                    self.reactor,
                    lambda: self._join_once(reason),
                    self._delay,
                    retriable=lambda e: isinstance(e, _Backoff) or self._retriable(e),
                    what=f"{self!r}: JoinGroup",
                )
            )
        )

    async def _join_once(self, reason: str | None) -> Any:
        """One JoinGroup, sent again at once after MEMBER_ID_REQUIRED or a fenced reset."""
        while True:
            metadata = self._subscription()
            request = req.join_group(
                self.group_id,
                self.member_id,
                self.group_instance_id,
                self.session_timeout_ms,
                self.rebalance_timeout_ms,
                [(a.name, metadata) for a in self.assignors],
                reason,
            )
            response = await self._send_join(request)
            reaction = react(JOIN_GROUP, response.error_code)
            if reaction is Reaction.DONE:
                self.member_id = response.member_id
                self.generation_id = response.generation_id
                self.protocol_name = response.protocol_name
                self.leader_id = response.leader
                return response
            if reaction is Reaction.RETRY:  # MEMBER_ID_REQUIRED
                self.member_id = response.member_id
            elif reaction is Reaction.FENCED:
                if self.owned:
                    raise _Fenced(response.error_code)
                self._reset(member_id=response.error_code == ErrorCode.UNKNOWN_MEMBER_ID)
            elif reaction is Reaction.BACKOFF:
                raise _Backoff(response.error_code)
            else:
                raise BrokerResponseError.from_errno(
                    response.error_code, f"JoinGroup of group {self.group_id!r}"
                )

    async def _send_join(self, request: Any) -> Any:
        """JoinGroup; a static member needs v5 (KIP-345), whose absence is said plainly."""
        if self.group_instance_id is None:
            return await self._send(request, self._rebalance_request_timeout)
        try:
            return await self._send(
                request, self._rebalance_request_timeout, min_version=req.STATIC_JOIN_VERSION
            )
        except NoCommonVersionError as e:
            raise NoCommonVersionError(
                "group_instance_id (static membership) needs Kafka 2.3 or later"
                f" (JoinGroup v{req.STATIC_JOIN_VERSION}+): {e}"
            ) from e

    # -- SyncGroup ----------------------------------------------------------------

    async def _sync(self, joined: Any) -> tuple[TopicAndPartition, ...]:
        assignments: dict[str, bytes] = {}
        if self.is_leader and not joined.skip_assignment:
            assignments = await self._assign(joined)
        request = req.sync_group(
            self.group_id,
            self.generation_id,
            self.member_id,
            self.group_instance_id,
            self.protocol_name,
            assignments,
        )
        try:
            response = await self._wait(self._send(request, self._rebalance_request_timeout))
        except Exception as e:
            if not self._retriable(e):
                raise
            log.info("{member}: SyncGroup failed: {error}", member=repr(self), error=str(e))
            await self._sleep(self._delay(1))
            raise _Rejoin() from None
        reaction = react(SYNC_GROUP, response.error_code)
        if reaction is Reaction.DONE:
            return decode_assignment(response.assignment)
        if reaction is Reaction.FENCED:
            raise _Fenced(response.error_code)
        if reaction is Reaction.BACKOFF:
            await self._sleep(self._delay(1))
        if reaction in (Reaction.BACKOFF, Reaction.REJOIN):
            raise _Rejoin()
        raise BrokerResponseError.from_errno(
            response.error_code, f"SyncGroup of group {self.group_id!r}"
        )

    async def _assign(self, joined: Any) -> dict[str, bytes]:
        """The leader's work: run the chosen assignor over every member's subscription."""
        assignor = next(a for a in self.assignors if a.name == joined.protocol_name)
        members = {}
        for m in joined.members:
            try:
                sub = decode_subscription(m.metadata)
            except DecodeError as e:
                raise DecodeError(f"member {m.member_id!r} sent bad metadata: {e.reason}") from e
            members[m.member_id] = Member(m.member_id, sub, m.group_instance_id)
        topics = sorted({t for m in members.values() for t in m.subscription.topics})
        await self._wait(self.client.load_metadata_for_topics(*topics))
        counts = {t: len(self.client.topic_partitions.get(t, ())) for t in topics}
        self._assigned_counts = counts
        result = assignor.assign(counts, members)
        log.debug("{member}: leader assigned {result}", member=repr(self), result=result)
        return {m: encode_assignment(result.get(m, ())) for m in members}

    async def _settle(self, assignment: Sequence[TopicAndPartition]) -> None:
        """Revoke what was taken away (cooperative), then start on what was added."""
        assigned = frozenset(assignment)
        revoked = sorted(self.owned - assigned)
        added = sorted(assigned - self.owned)
        if revoked:
            self.owned = self.owned - set(revoked)
            await maybeDeferred(self.listener.revoke, revoked)
            self.request_rejoin("partitions were revoked for a cooperative rebalance")
        self.owned = assigned
        log.debug("{member}: added {added}", member=repr(self), added=added)
        await maybeDeferred(self.listener.assign, sorted(assigned), self.generation)

    # -- Heartbeat --------------------------------------------------------------

    def _beat(self) -> Deferred[Any]:
        """Send one heartbeat and act on its answer (unless the application is stuck)."""
        if self._liveness is not None and self.state is S.STABLE:
            stuck = self._liveness.stuck()
            if stuck is not None:
                self._stuck = stuck
                self._wake_up()
                return succeed(None)
        self._check_metadata()
        request = req.heartbeat(
            self.group_id, self.generation_id, self.member_id, self.group_instance_id
        )
        d = self.client.send_request_to_coordinator(
            self.group_id, request, timeout=self._heartbeat_timeout
        )
        sent_at = self.sensors.now()
        return d.addCallbacks(
            self._beat_answered,
            self._beat_failed,
            callbackArgs=(self.generation, sent_at),
            errbackArgs=(self.generation,),
        )

    def _beat_answered(self, response: Any, sent_as: Generation, sent_at: float) -> None:
        self.sensors.heartbeat(sent_at)
        if self.state is S.STABLE:
            self._watch_session()
        reaction = react(HEARTBEAT, response.error_code)
        if reaction in (Reaction.DONE, Reaction.IGNORE) or sent_as != self.generation:
            return
        if reaction is Reaction.REJOIN:
            if self.state is S.STABLE:
                self.request_rejoin("the group is rebalancing")
        elif reaction is Reaction.FENCED:
            self._fenced = _Fencing.by_coordinator(response.error_code)
            self._wake_up()
        else:
            self.fail(Failure(BrokerResponseError.from_errno(response.error_code, "Heartbeat")))

    def _beat_failed(self, failure: Failure, sent_as: Generation) -> None:
        log.info(
            "{member}: heartbeat failed: {error}",
            member=repr(self),
            error=failure.getErrorMessage(),
        )

    def _watch_session(self) -> None:
        seconds = self.session_timeout_ms / 1000.0
        watch = self._session_watch
        if watch is not None and watch.active():
            watch.reset(seconds)
        else:
            self._session_watch = self.reactor.callLater(seconds, self._session_lost)

    def _session_lost(self) -> None:
        """No heartbeat answered for the session timeout: the coordinator (if up) has
        dropped the member and given its partitions to others, so they are lost, as
        librdkafka does ("session timed out ...: revoking assignment and rejoining
        group").  The member id is kept: a coordinator restarted meanwhile may still
        know it."""
        if self.state is S.STABLE and self._fenced is None:
            self._fenced = _Fencing(
                f"no heartbeat answered for session_timeout_ms={self.session_timeout_ms}",
                forget_member_id=False,
            )
            self._wake_up()

    def _check_metadata(self) -> None:
        """As Kafka's leader: rebalance when a subscribed topic's partition count changes."""
        if not self.is_leader or self.state is not S.STABLE:
            return
        known = self.client.topic_partitions
        for topic, count in self._assigned_counts.items():
            if topic in known and len(known[topic]) != count:
                self.request_rejoin(f"topic {topic!r} now has {len(known[topic])} partitions")
                return

    # -- leaving ------------------------------------------------------------------

    async def _leave(self) -> None:
        coordinator_refused = self._failure is not None and self._failure.check(BrokerResponseError)
        self._transition(E.FAIL if coordinator_refused else E.STOP)
        await self._give_up_owned()
        if self.state is S.LEAVING:
            await self._send_leave(self._stop_reason or "stopping")
            self._transition(E.LEFT)
        self._reset(member_id=True)
        self._finish()

    async def _send_leave(self, reason: str) -> None:
        """LeaveGroup, for a dynamic member that has joined; errors are only logged."""
        if not self.member_id or self.group_instance_id is not None:
            return
        request = req.leave_group(self.group_id, self.member_id, self.group_instance_id, reason)
        try:
            response = await self.client.send_request_to_coordinator(
                self.group_id, request, timeout=self.client.timeout
            )
        except KafkaError as e:
            log.info("{member}: LeaveGroup failed: {error}", member=repr(self), error=str(e))
            return
        errors = [response.error_code] + [m.error_code for m in response.members]
        if any(errors):
            log.info("{member}: LeaveGroup answered {errors}", member=repr(self), errors=errors)

    # -- plumbing -----------------------------------------------------------------

    @property
    def _rebalance_request_timeout(self) -> float:
        """Seconds JoinGroup and SyncGroup may take: the coordinator legitimately holds
        them up to the rebalance timeout (waiting for the other members to join, for
        the leader's assignment), so Java's margin above it, or the client's request
        timeout if longer.  A shorter one times out a rebalance that is going well,
        and the member's rejoin restarts it."""
        return max(self.client.timeout, self.rebalance_timeout_ms / 1000.0 + JOIN_GRACE_SECONDS)

    def _send(self, request: Any, timeout: float, min_version: int | None = None) -> Deferred[Any]:
        return self.client.send_request_to_coordinator(
            self.group_id, request, timeout=timeout, min_version=min_version
        )

    _retriable = staticmethod(retriable)

    def _delay(self, failures: int) -> float:
        if self.initial_backoff_ms is not None and not self.member_id and not self.rebalances:
            return self.initial_backoff_ms / 1000.0
        return self._backoff(failures)

    async def _within(self, d: Deferred[Any], seconds: float) -> bool:
        """Whether *d* fires within *seconds* (it keeps running either way; stop waits too)."""
        settled: Deferred[bool] = Deferred()

        def settle(in_time: bool) -> None:
            if not settled.called:
                settled.callback(in_time)

        def fired(result: Any) -> Any:
            settle(True)
            return result

        d.addBoth(fired)
        timer = self.reactor.callLater(seconds, settle, False)
        try:
            return await settled
        finally:
            if timer.active():
                timer.cancel()
