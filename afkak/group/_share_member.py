"""One member of a share group (KIP-932): ShareGroupHeartbeat, as Java's share consumer sends it.

A share group's coordinator hands out partitions with no revocation step: a
share-partition may be read by several members at once, and records, not
partitions, are what a member owns (each acquired for a lock period).  So
membership is a heartbeat every ``heartbeat_interval_ms`` (the broker's), a
member epoch, and the assignment the last heartbeat brought.  The member id is
made here (a random UUID, as the Java client); a fenced member joins again with
epoch 0 and the same id.  Its lifecycle is the table ``TABLE`` below.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from afkak._retry import backoff_policy
from afkak._transitions import TransitionTable
from afkak.client import ConsumerClient
from afkak.common import BrokerResponseError, KafkaError, TopicAndPartition
from afkak.protocol.messages import ShareGroupHeartbeatRequest

from ._kip848_member import new_member_id
from ._membership_loop import MembershipLoop, resolve_topic_ids
from ._reactions import SHARE_GROUP_HEARTBEAT, Reaction, react
from ._requests import JOIN_EPOCH, LEAVE_EPOCH

log = Logger()


class ShareMemberState(enum.Enum):
    STOPPED = "stopped"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"


class ShareMemberEvent(enum.Enum):
    START = "start"
    ASSIGNED = "a heartbeat brought the member epoch (and maybe an assignment)"
    FENCED = "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID"
    STOP = "stop"
    LEFT = "left"
    FAIL = "fail"


S, E = ShareMemberState, ShareMemberEvent

#: ::
#:
#:     STOPPED ─start─▶ JOINING ─assigned─▶ STABLE ─assigned─▶ STABLE
#:     JOINING, STABLE ─fenced─▶ JOINING (epoch 0, same member id)
#:     JOINING, STABLE ─stop─▶ LEAVING ─left─▶ STOPPED;  JOINING, STABLE ─fail─▶ STOPPED
TABLE = TransitionTable(
    {
        (S.STOPPED, E.START): S.JOINING,
        (S.JOINING, E.ASSIGNED): S.STABLE,
        (S.STABLE, E.ASSIGNED): S.STABLE,
        (S.JOINING, E.FENCED): S.JOINING,
        (S.STABLE, E.FENCED): S.JOINING,
        (S.JOINING, E.STOP): S.LEAVING,
        (S.STABLE, E.STOP): S.LEAVING,
        (S.LEAVING, E.LEFT): S.STOPPED,
        (S.JOINING, E.FAIL): S.STOPPED,
        (S.STABLE, E.FAIL): S.STOPPED,
    }
)


class ShareMember(MembershipLoop):
    """Membership of one share consumer in *group_id*; ``assigned`` is what it may fetch.

    *on_assigned* is called with the new assignment whenever it changes.
    *heartbeat_interval_ms* is only used until the coordinator gives its own.
    """

    table = TABLE

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        on_assigned: Callable[[frozenset[TopicAndPartition]], None],
        *,
        heartbeat_interval_ms: int = 5000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        member_id: str | None = None,
    ) -> None:
        self.client = client
        self.reactor = client.reactor
        self.group_id = group_id
        self.topics = tuple(sorted(set(topics)))
        self._on_assigned = on_assigned
        self.heartbeat_interval = heartbeat_interval_ms / 1000.0
        self._backoff = backoff_policy(
            retry_backoff_ms / 1000.0, retry_backoff_max_ms / 1000.0, uniform=client.rng.uniform
        )
        self.member_id = member_id or new_member_id()
        self.generation_id = -1
        self.state = S.STOPPED
        self._init_loop()
        self.assigned: frozenset[TopicAndPartition] = frozenset()
        #: The subscription to send at the next heartbeat (None: unchanged since the last).
        self._subscription: tuple[str, ...] | None = self.topics

    def __repr__(self) -> str:
        return (
            f"<ShareMember group={self.group_id!r} member={self.member_id!r} "
            f"epoch={self.generation_id} state={self.state.name}>"
        )

    def start(self) -> Deferred[None]:
        """Join and stay in the group; fires when stopped, fails on a fatal error."""
        self._transition(E.START)
        self._subscription = self.topics
        return self._start_run()

    def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to *topics*; the next heartbeat (sent now) tells the coordinator."""
        self.topics = self._subscription = tuple(sorted(set(topics)))
        self._wake_up()

    async def _step(self) -> bool:
        await self._beat()
        return False

    async def _beat(self) -> None:
        epoch = max(self.generation_id, JOIN_EPOCH)
        subscription = self.topics if epoch == JOIN_EPOCH else self._subscription
        request = ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            subscribed_topic_names=None if subscription is None else list(subscription),
        )
        response = await self._wait(self.client.send_request_to_coordinator(self.group_id, request))
        reaction = react(SHARE_GROUP_HEARTBEAT, response.error_code)
        if reaction is Reaction.FENCED:
            log.warn("{member}: fenced; joining again", member=repr(self))
            self._transition(E.FENCED)
            self.generation_id = -1
            return
        if reaction is Reaction.BACKOFF:
            raise BrokerResponseError.from_errno(response.error_code, "ShareGroupHeartbeat")
        if reaction is not Reaction.DONE:
            raise BrokerResponseError.from_errno(
                response.error_code,
                f"ShareGroupHeartbeat of group {self.group_id!r}: {response.error_message}",
            )
        if subscription is self._subscription:
            self._subscription = None
        if response.heartbeat_interval_ms > 0:
            self.heartbeat_interval = response.heartbeat_interval_ms / 1000.0
        self.generation_id = response.member_epoch
        self._transition(E.ASSIGNED)
        if response.assignment is not None:
            names = await self._wait(
                Deferred.fromCoroutine(
                    resolve_topic_ids(self.client, response.assignment.topic_partitions)
                )
            )
            if names != self.assigned:
                self.assigned = names
                log.info("{member}: assigned {tps}", member=repr(self), tps=sorted(names))
                self._on_assigned(names)

    async def _until_next_beat(self) -> None:
        if self._stop_reason is not None or self.generation_id < 0:
            return
        await self._nap(self.heartbeat_interval)

    async def _leave(self) -> None:
        coordinator_refused = self._failure is not None and self._failure.check(BrokerResponseError)
        self._transition(E.FAIL if coordinator_refused else E.STOP)
        self.assigned = frozenset()
        if self.state is S.LEAVING:
            if self.generation_id >= 0:
                await self._send_leave()
            self._transition(E.LEFT)
        self.generation_id = -1
        self._finish()

    async def _send_leave(self) -> None:
        request = ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=LEAVE_EPOCH
        )
        try:
            response: Any = await self.client.send_request_to_coordinator(self.group_id, request)
        except KafkaError as e:
            log.info("{member}: leaving failed: {error}", member=repr(self), error=str(e))
            return
        if response.error_code:
            log.info("{member}: leaving answered {e}", member=repr(self), e=response.error_code)
