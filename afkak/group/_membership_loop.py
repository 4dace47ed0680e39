"""What both group members share: a membership loop that ``stop()`` and ``fail()`` interrupt.

The classic :class:`~._classic_member.GroupMember` and KIP-848's
:class:`~._kip848_member.ConsumerProtocolMember` each run one
coroutine from ``start()`` until they have left the group; this holds the
interruption (a stop cancels the await under way), the fatal failure, and
the Deferred ``start()`` returned.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._errors import DecodeError
from afkak._retry import backoff_policy, is_retriable, retrying
from afkak.client import ConsumerClient
from afkak.common import KafkaError, TopicAndPartition
from afkak.metrics import GroupSensors, registry_of

from ._listener import Generation, Liveness, RebalanceListener

log = Logger()


class CancelledByStop(Exception):
    """Internal: an await interrupted by ``stop()``."""


def retriable(error: BaseException) -> bool:
    """What a member sends again: broker errors marked so, no broker reachable, a lost
    connection, and a response that does not decode (the connection drops it as it
    drops a broken connection)."""
    return isinstance(error, KafkaError) and (is_retriable(error) or isinstance(error, DecodeError))


class MembershipLoop:
    """The stop/fail/wake plumbing of a member; ``state`` is STOPPED when not running."""

    state: Any
    member_id: str
    #: The member's states and the events that move it (a TransitionTable).
    table: Any
    #: Seconds to wait after the n-th failure in a row.
    _backoff: Callable[[int], float]
    # A heartbeat and what its answer says (True: the next one at once), the wait for
    # the next, and leaving: each member's own.
    _step: Callable[[], Coroutine[Any, Any, bool]]
    _until_next_beat: Callable[[], Coroutine[Any, Any, None]]
    _leave: Callable[[], Coroutine[Any, Any, None]]

    def _init_member(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        listener: RebalanceListener,
        rebalance_timeout_ms: int,
        group_instance_id: str | None,
        liveness: Liveness | None,
    ) -> None:
        """What both protocols' members hold (each sets its own STOPPED ``state``)."""
        if rebalance_timeout_ms <= 0:
            raise ValueError("rebalance_timeout_ms must be positive")
        self.client = client
        self.reactor = client.reactor
        self.group_id = group_id
        #: The subscription (may be empty: a pattern that matches nothing yet).
        self.topics = tuple(sorted(set(topics)))
        self.listener = listener
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.group_instance_id = group_instance_id
        #: Asked at each heartbeat while STABLE: why the application is stuck (None: it is not).
        self._liveness = liveness
        self._stuck: str | None = None
        self.generation_id = -1
        self.leader_id = ""
        self.owned: frozenset[TopicAndPartition] = frozenset()
        self.rebalances = 0
        #: ``consumer-coordinator-metrics`` of this group.
        self.sensors = registry_of(client).shared(GroupSensors, group_id)
        self.sensors.member(lambda: len(self.owned))
        self._init_loop()

    @property
    def generation(self) -> Generation:
        return Generation(self.generation_id, self.member_id)

    def retime(self, retry_backoff_ms: int, retry_backoff_max_ms: int) -> None:
        """Wait *retry_backoff_ms* before retrying a failed coordinator request, doubling
        on each consecutive failure up to *retry_backoff_max_ms*, jittered by ±20 %."""
        self._backoff = backoff_policy(
            retry_backoff_ms / 1000.0,
            retry_backoff_max_ms / 1000.0,
            uniform=self.client.rng.uniform,
        )

    def _start_run(self) -> Deferred[None]:
        """Run the membership coroutine afresh: the Deferred that ``start()`` returns."""
        done = self._begin()
        self._stuck = None
        Deferred.fromCoroutine(self._run())
        return done

    async def _run(self) -> None:
        """The member's loop: heartbeats (the classic member runs its own join loop)."""
        await self._heartbeats()

    def _init_loop(self) -> None:
        self._stop_reason: str | None = None
        self._stop_commits = True
        self._failure: Failure | None = None
        self._pending: Deferred[Any] | None = None
        self._wake: Deferred[None] | None = None
        self._done: Deferred[None] | None = None

    def _stopped(self) -> bool:
        return bool(self.state.value == "stopped")

    def _begin(self) -> Deferred[None]:
        """A new run: the Deferred that ``start()`` returns."""
        self._stop_reason = None
        self._failure = None
        self._stop_commits = True
        done = self._done = Deferred()
        return done

    def _finish(self) -> None:
        """Fire ``start()``'s Deferred: failed with the fatal error, if any."""
        done, self._done = self._done, None
        if done is not None:
            if self._failure is not None:
                done.errback(self._failure)
            else:
                done.callback(None)

    def stop(self, commit: bool = True) -> None:
        """Leave the group: give partitions up (committing if *commit*), then leave."""
        if self._stop_reason is not None or self._stopped():
            return
        self._stop_reason = "the consumer is shutting down"
        self._stop_commits = commit
        self._interrupt()

    def fail(self, failure: Failure) -> None:
        """Stop because of a fatal error (from the application side); ``start()`` fails."""
        if self._failure is None and not self._stopped():
            self._failure = failure
            self._stop_reason = f"fatal error: {failure.getErrorMessage()}"
            self._stop_commits = False
            self._interrupt()

    def _interrupt(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()
        self._wake_up()

    def _wake_up(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.callback(None)

    async def _give_up_owned(self) -> None:
        """Leaving: the listener gives the partitions up, committed unless the stop says not."""
        owned, self.owned = sorted(self.owned), frozenset()
        if owned:
            give_up = self.listener.revoke if self._stop_commits else self.listener.lose
            try:
                await maybeDeferred(give_up, owned)
            except Exception:
                self._failure = self._failure or Failure()

    async def _sleep(self, seconds: float) -> None:
        await self._wait(deferLater(self.reactor, seconds, lambda: None))

    async def _wait(self, d: Deferred[Any]) -> Any:
        """Await *d*; :meth:`stop` cancels it (the innermost of nested waits: a request
        inside a retry loop, then the loop's wait between attempts)."""
        if self._stop_reason is not None:
            d.cancel()
            raise CancelledByStop()
        outer, self._pending = self._pending, d
        try:
            return await d
        except Exception:
            if self._stop_reason is not None:
                raise CancelledByStop() from None
            raise
        finally:
            if self._pending is d:
                self._pending = outer

    async def _heartbeats(self) -> None:
        """:meth:`_step` until stopped, retriable failures backed off; then :meth:`_leave`."""
        try:
            while self._stop_reason is None:
                at_once = await self._wait(
                    Deferred.fromCoroutine(
                        retrying(
                            self.reactor,
                            self._step,
                            self._backoff,
                            retriable=retriable,
                            what=f"{self!r}: heartbeat",
                        )
                    )
                )
                if not at_once:
                    await self._until_next_beat()
        except CancelledByStop:
            pass
        except Exception:
            self._failure = self._failure or Failure()
        await self._leave()

    def _transition(self, event: Any) -> None:
        """Take *event* in the current state; the transition is logged (``transition``)."""
        new = self.table.next(self.state, event)
        if new is None:
            return
        log.debug(
            "{member}: {event}: {old} -> {state}",
            member=repr(self),
            event=event.value,
            old=self.state.name,
            state=new.name,
            transition=(self.state, event),
        )
        self.state = new

    async def _nap(self, seconds: float) -> None:
        """Until *seconds* pass or :meth:`_wake_up` (a heartbeat wanted now)."""
        wake: Deferred[None] = Deferred()
        self._wake = wake
        timer = self.reactor.callLater(seconds, self._wake_up)
        try:
            await wake
        finally:
            if timer.active():
                timer.cancel()


async def resolve_topic_ids(
    client: ConsumerClient, topic_partitions: Iterable[Any]
) -> frozenset[TopicAndPartition]:
    """An assignment by topic id (``topic_id``, ``partitions``) by name, through Metadata
    when an id is new to the client; an id still unknown after it is left out."""
    topic_partitions = list(topic_partitions)
    if any(t.topic_id not in client.topic_ids.values() for t in topic_partitions):
        await client.load_metadata_for_topics()
    names = {tid: name for name, tid in client.topic_ids.items()}
    assigned: set[TopicAndPartition] = set()
    for t in topic_partitions:
        name = names.get(t.topic_id)
        if name is None:
            log.warn("unknown topic id {id} assigned", id=t.topic_id)
            continue
        assigned.update(TopicAndPartition(name, p) for p in t.partitions)
    return frozenset(assigned)
