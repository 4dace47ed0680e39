"""ConsumerGroup: consume topics as one member of a Kafka consumer group.

The group's membership (:class:`._member.GroupMember`) decides which
partitions this process owns; for each one a :class:`afkak.consumer.Consumer`
runs, started from the group's committed offset and committing (next-offset
semantics) with the member id and generation, so that the coordinator refuses
commits from members it has moved on from.  A revoked partition's Consumer is
shut down (finishing its processing and committing) before the partition is
given up; a lost partition's (after fencing) is stopped without committing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, maybeDeferred, succeed
from twisted.internet.task import deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_LATEST,
    IllegalGeneration,
    RebalanceInProgress,
    RestartError,
    RestopError,
    TopicAndPartition,
    UnknownMemberId,
)
from afkak.producer import ConsumerGroupMetadata

from ._assignor import PartitionAssignor
from ._member import Generation, GroupMember
from ._range import RangeAssignor
from ._roundrobin import RoundRobinAssignor
from ._states import MemberState
from ._sticky import CooperativeStickyAssignor

log = Logger()

#: The built-in assignors by protocol name.
ASSIGNORS: dict[str, Callable[[], PartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
#: Kafka 4's Java consumer default: range, upgradable to cooperative-sticky.
DEFAULT_ASSIGNORS = ("range", "cooperative-sticky")
#: Commit errors that mean the member's generation is over: rebalance, not give up.
_FENCED_ERRORS = (IllegalGeneration, UnknownMemberId)
_RESERVED_OPTIONS = {"consumer_group", "commit_consumer_id", "commit_generation_id"}

Callback = Callable[[list[TopicAndPartition]], Any]
Offsets = dict[TopicAndPartition, Any]


def resolve_assignors(assignors: Iterable[str | PartitionAssignor]) -> list[PartitionAssignor]:
    """Assignor objects for names of built-in ones (or user objects, kept as they are)."""
    resolved = []
    for a in assignors:
        if isinstance(a, str):
            try:
                resolved.append(ASSIGNORS[a]())
            except KeyError:
                raise ValueError(f"unknown assignor {a!r}; known: {sorted(ASSIGNORS)}") from None
        elif isinstance(a, PartitionAssignor):
            resolved.append(a)
        else:
            raise TypeError(f"not an assignor: {a!r}")
    return resolved


class ConsumerGroup:
    """Consume *topics* as a member of consumer group *group_id*.

    :param client: a :class:`~afkak.client.KafkaClient`.
    :param processor: as :class:`~afkak.consumer.Consumer`'s: called as
        ``processor(consumer, messages)``; a returned Deferred holds back the
        next batch of that partition.
    :param assignors: names of built-in assignors ("range", "roundrobin",
        "cooperative-sticky") or assignor objects, in order of preference.
        The member rebalances cooperatively only if all of them support it.
    :param session_timeout_ms: the coordinator drops a member silent for this long.
    :param rebalance_timeout_ms: how long the member may take to give up its
        partitions in a rebalance; longer and it leaves the group, then joins
        again as a new member once done.
    :param heartbeat_interval_ms: time between heartbeats, sent whatever the
        processors are doing.
    :param group_instance_id: makes this a static member (KIP-345): it keeps
        its partitions across restarts within the session timeout and does
        not send LeaveGroup when it stops.
    :param on_assigned: called with the partitions added by a rebalance,
        before their Consumers start; may return a Deferred.
    :param on_revoked: called with partitions given up, after their
        Consumers committed and stopped; may return a Deferred.
    :param on_lost: called with partitions lost (this member was fenced;
        nothing could be committed); by default *on_revoked*.
    :param consumer_options: passed to each :class:`~afkak.consumer.Consumer`
        (``auto_commit_every_n``, ...).  ``auto_offset_reset`` defaults to
        ``OFFSET_LATEST`` (where a partition without a committed offset
        starts), as Kafka's ``auto.offset.reset``.
    """

    def __init__(
        self,
        client: Any,
        group_id: str,
        topics: Sequence[str],
        processor: Callable[..., Any],
        *,
        assignors: Sequence[str | PartitionAssignor] = DEFAULT_ASSIGNORS,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
        group_instance_id: str | None = None,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_lost: Callback | None = None,
        **consumer_options: Any,
    ) -> None:
        if isinstance(topics, str):
            topics = [topics]
        if not callable(processor):
            raise TypeError(f"processor must be callable, not {processor!r}")
        reserved = _RESERVED_OPTIONS & set(consumer_options)
        if reserved:
            raise TypeError(f"the group sets these Consumer options itself: {sorted(reserved)}")
        self.client = client
        self.group_id = group_id
        self.processor = processor
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.on_lost = on_lost if on_lost is not None else on_revoked
        self.consumer_options = {"auto_offset_reset": OFFSET_LATEST, **consumer_options}
        self.consumers: dict[TopicAndPartition, Any] = {}
        self._offsets: Offsets = {}
        self._start_d: Deferred[Offsets] | None = None
        self._stopping: Deferred[Offsets] | None = None
        self.member = GroupMember(
            client,
            group_id,
            topics,
            self,
            resolve_assignors(assignors),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            group_instance_id=group_instance_id,
        )

    def __repr__(self) -> str:
        return (
            f"<ConsumerGroup {self.group_id!r} {self.member!r} partitions={sorted(self.consumers)}>"
        )

    @property
    def state(self) -> Any:
        """The membership state (:class:`~afkak.group.MemberState`)."""
        return self.member.state

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id now, for
        :meth:`~afkak.producer.Producer.send_offsets_to_transaction`: the
        coordinator refuses a transaction's offsets from a generation that
        a rebalance ended."""
        m = self.member
        return ConsumerGroupMetadata(
            self.group_id, m.generation_id, m.member_id, m.group_instance_id
        )

    @property
    def assignment(self) -> list[TopicAndPartition]:
        """The partitions this member owns now."""
        return sorted(self.member.owned)

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> Deferred[Offsets]:
        """Join the group and consume the partitions it assigns.

        Fires when the group stops (after :meth:`shutdown` or :meth:`stop`)
        with ``{TopicAndPartition: last processed offset}`` of the partitions
        held at the end; fails on a fatal error (a processor's exception, a
        fenced static member, an inconsistent group protocol, ...).
        """
        if self._start_d is not None:
            raise RestartError("the consumer group is already running")
        self._offsets = {}
        self._stopping = None
        self._start_d = Deferred()
        self.member.start().addBoth(self._member_stopped)
        return self._start_d

    def shutdown(self) -> Deferred[Offsets]:
        """Finish processing, commit, leave the group; fires with the last processed offsets."""
        return self._stop(commit=True)

    def stop(self) -> Deferred[Offsets]:
        """Stop processing at once (no commit), then leave the group."""
        return self._stop(commit=False)

    def _stop(self, commit: bool) -> Deferred[Offsets]:
        if self._start_d is None:
            raise RestopError("the consumer group is not running")
        stopping = self._stopping
        if stopping is None:
            stopping = self._stopping = Deferred()
            self.member.stop(commit=commit)
        waiter: Deferred[Offsets] = Deferred()
        stopping.addBoth(_relay, waiter)
        return waiter

    def _member_stopped(self, result: Any) -> None:
        start_d, self._start_d = self._start_d, None
        stopping, self._stopping = self._stopping, None
        offsets, self._offsets = self._offsets, {}
        outcome = result if isinstance(result, Failure) else offsets
        if stopping is not None:
            stopping.callback(offsets)
        if start_d is not None:
            if isinstance(outcome, Failure):
                start_d.errback(outcome)
            else:
                start_d.callback(outcome)

    # -- the membership's listener --------------------------------------------

    def assign(self, partitions: list[TopicAndPartition], generation: Generation) -> Deferred[Any]:
        self._rebind(self.consumers.values(), generation)
        added = [tp for tp in partitions if tp not in self.consumers]
        d = maybeDeferred(self.on_assigned, added) if self.on_assigned and added else succeed(None)
        return d.addCallback(lambda _: self._start_consumers(added, generation))

    @staticmethod
    def _rebind(consumers: Iterable[Any], generation: Generation) -> None:
        """Make Consumers kept across a rebalance commit as the new generation."""
        for consumer in consumers:
            consumer.commit_consumer_id = generation.member_id
            consumer.commit_generation_id = generation.generation_id

    def _start_consumers(self, partitions: list[TopicAndPartition], generation: Generation) -> None:
        from afkak.consumer import Consumer  # the consumer layer sits beside this one

        for tp in partitions:
            consumer = Consumer(
                self.client,
                tp.topic,
                tp.partition,
                self.processor,
                consumer_group=self.group_id,
                commit_consumer_id=generation.member_id,
                commit_generation_id=generation.generation_id,
                **self.consumer_options,
            )
            self.consumers[tp] = consumer
            consumer.start(OFFSET_COMMITTED).addBoth(self._consumer_ended, tp, consumer)

    def _consumer_ended(self, result: Any, tp: TopicAndPartition, consumer: Any) -> None:
        """A Consumer's ``start()`` fired: expected when we stopped it, else a problem.

        A commit refused because a rebalance is under way (REBALANCE_IN_PROGRESS,
        or ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID for a generation the member
        has already left, as Kafka's Java consumer tells them apart) restarts
        the Consumer where it was: its offsets are committed with the next
        generation.  Refused for the member's current generation, the member
        was fenced: it rejoins (the next assignment restarts the Consumer from
        the committed offset).  Anything else is fatal, as an exception from
        the Java consumer's ``poll``.
        """
        if self.consumers.get(tp) is not consumer:
            if isinstance(result, Failure):
                log.info("{tp}: consumer ended with {error}", tp=tp, error=result.getErrorMessage())
            return
        del self.consumers[tp]
        if not isinstance(result, Failure):
            result = Failure(RuntimeError(f"the consumer of {tp} stopped by itself"))
        member = self.member
        stale = (
            member.state is not MemberState.STABLE
            or consumer.commit_generation_id != member.generation_id
        )
        if result.check(RebalanceInProgress) or (result.check(*_FENCED_ERRORS) and stale):
            last = consumer.last_processed_offset
            self.consumers[tp] = consumer
            consumer.start(OFFSET_COMMITTED if last is None else last + 1).addBoth(
                self._consumer_ended, tp, consumer
            )
        elif result.check(*_FENCED_ERRORS):
            self.member.request_rejoin(f"{tp}: commit refused: {result.getErrorMessage()}")
        else:
            self.member.fail(result)

    def revoke(self, partitions: list[TopicAndPartition]) -> Deferred[Any]:
        return self._give_up(partitions, commit=True, then=self.on_revoked)

    def lose(self, partitions: list[TopicAndPartition]) -> Deferred[Any]:
        return self._give_up(partitions, commit=False, then=self.on_lost)

    def _give_up(
        self, partitions: list[TopicAndPartition], commit: bool, then: Callback | None
    ) -> Deferred[Any]:
        ending = [(tp, self.consumers.pop(tp)) for tp in partitions if tp in self.consumers]
        if commit and self.member.generation_id >= 0:
            # Revoked after a cooperative sync: the final commits carry the new generation.
            self._rebind((c for _, c in ending), self.member.generation)
        stopping = [self._end_consumer(tp, c, commit) for tp, c in ending]
        d = DeferredList(stopping, consumeErrors=True)
        if then is not None:
            d.addCallback(lambda _: then(partitions))
        return d

    def _end_consumer(self, tp: TopicAndPartition, consumer: Any, commit: bool) -> Deferred[Any]:
        """Stop *consumer*; with *commit*, shut it down and make sure its progress is committed."""
        if not commit:
            return maybeDeferred(consumer.stop).addCallback(self._ended, tp)
        return Deferred.fromCoroutine(self._shut_down(tp, consumer))

    async def _shut_down(self, tp: TopicAndPartition, consumer: Any) -> None:
        """Shut *consumer* down, retrying a final commit refused while the group rebalances.

        A coordinator may refuse commits until every member has synced
        (REBALANCE_IN_PROGRESS); the partition is only given up once its
        progress is committed, or the rebalance timeout has passed.
        """
        reactor = self.client.reactor
        deadline = reactor.seconds() + self.member.rebalance_timeout_ms / 1000.0
        delay = 0.05
        attempt: Any = consumer.shutdown
        while True:
            try:
                offset = await maybeDeferred(attempt)
                break
            except RebalanceInProgress as e:
                if reactor.seconds() + delay > deadline:
                    return self._give_up_failed(tp, consumer, e)
                await deferLater(reactor, delay, lambda: None)
                delay = min(delay * 2, 1.0)
                attempt = consumer.commit
            except Exception as e:
                return self._give_up_failed(tp, consumer, e)
        self._ended(consumer.last_processed_offset if offset is None else offset, tp)
        return None

    def _ended(self, offset: Any, tp: TopicAndPartition) -> None:
        if self._stopping is not None:
            self._offsets[tp] = offset

    def _give_up_failed(self, tp: TopicAndPartition, consumer: Any, error: Exception) -> None:
        self._ended(consumer.last_processed_offset, tp)
        log.warn("{tp}: given up uncommitted: {error}", tp=tp, error=error)


def _relay(result: Any, waiter: Deferred[Any]) -> Any:
    waiter.callback(result)
    return result
