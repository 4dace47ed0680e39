"""ConsumerGroup: consume topics as one member of a Kafka consumer group.

The group's membership (:class:`._classic_member.GroupMember`) decides which
partitions this process owns; for each one a :class:`afkak.consumer.Consumer`
runs, started from the group's committed offset and committing (next-offset
semantics) with the member id and generation, so that the coordinator refuses
commits from members it has moved on from.  A revoked partition's Consumer is
shut down (finishing its processing and committing) before the partition is
given up; a lost partition's (after fencing) is stopped without committing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from twisted.internet.defer import Deferred, DeferredList, maybeDeferred, succeed
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._retry import backoff_policy, retrying
from afkak.client import ConsumerClient
from afkak.client._interlayer import INT32_MAX, group_name, integer, kafka_client, topic_list
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    IllegalGeneration,
    RebalanceInProgress,
    RestartError,
    RestopError,
    StaleMemberEpoch,
    TopicAndPartition,
    UnknownMemberId,
)
from afkak.consumer import Consumer, OffsetAndMetadata, positions
from afkak.metrics import CLIENT, COORDINATOR, FETCH, NODE, MetricName
from afkak.producer import ConsumerGroupMetadata

from ._afkak21 import Afkak21Identity
from ._assignor import PartitionAssignor
from ._classic_member import GroupMember
from ._heartbeat import HeartbeatTimer
from ._kip848_member import ConsumerProtocolMember
from ._listener import Generation
from ._range import RangeAssignor
from ._roundrobin import RoundRobinAssignor
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
#: Kafka's ``group.protocol`` values: the classic protocol (the default, as in
#: Java's client) and KIP-848's consumer protocol.
GROUP_PROTOCOLS = ("classic", "consumer")
_RESERVED_OPTIONS = {"consumer_group", "commit_consumer_id", "commit_generation_id"}
#: Waits between final commits refused while the group rebalances (50 ms doubling to 1 s).

Callback = Callable[[list[TopicAndPartition]], Any]
#: What commit() fires with: each partition's last committed offset.
Committed = dict[TopicAndPartition, int | None]
#: commit(offsets)'s argument, ``{tp: next offset or OffsetAndMetadata}``, and what it fires with.
ExplicitOffsets = Mapping[Any, int | OffsetAndMetadata]
ExplicitlyCommitted = dict[TopicAndPartition, OffsetAndMetadata]
#: What start(), stop() and shutdown() fire with: each partition's last processed offset.
Offsets = dict[TopicAndPartition, int | None]


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


T = TypeVar("T")


class _Backoff(Generic[T]):
    """A ConsumerGroup backoff setting (milliseconds): setting it re-times the member."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, group: None, owner: type) -> _Backoff[T]: ...
    @overload
    def __get__(self, group: ConsumerGroup, owner: type | None = None) -> T: ...
    def __get__(self, group: ConsumerGroup | None, owner: type | None = None) -> T | _Backoff[T]:
        if group is None:
            return self
        value: T = group._backoffs[self._name]
        return value

    def __set__(self, group: ConsumerGroup, value: T) -> None:
        group._backoffs[self._name] = value
        group._retime()


class ConsumerGroup(Afkak21Identity):
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
    :param consumer_kwargs: afkak 21's way to pass options to each
        :class:`~afkak.consumer.Consumer` (a dict); merged with *consumer_options*.
    :param initial_backoff_ms: afkak 21: milliseconds between failed attempts
        to reach the coordinator until the member first joined (by default
        the growing *retry_backoff_ms* delay).
    :param retry_backoff_ms: milliseconds before the first retry of a failed
        coordinator request; doubled on each consecutive failure.
    :param fatal_backoff_ms: the longest such delay (default 1000); afkak 21
        waited this long after unexpected errors.
    :param max_poll_interval_ms: liveness, as the Java client's
        ``max.poll.interval.ms``: a processor call that has not returned
        within it makes the member leave the group (LeaveGroup, and a warning
        saying why), so that its partitions go to the other members; its
        Consumers stop without committing (the stuck call's Deferred is
        cancelled) and the member joins again as a new member.  Checked at
        each heartbeat.  A static member (*group_instance_id*) does not send
        LeaveGroup: its partitions move after the session timeout.
    :param pattern: instead of *topics* (pass ``[]``), subscribe to every
        topic whose name matches this compiled regular expression
        (``fullmatch``; internal ``__`` topics excluded), as the Java client's
        ``subscribe(Pattern)``: the topics are looked up before joining and
        every *metadata_max_age_ms* (Java's ``metadata.max.age.ms``, 5
        minutes by default); a matching topic created or deleted meanwhile
        rebalances the group.
    :param group_protocol: ``"classic"`` (the default, as in Java's client:
        JoinGroup/SyncGroup, client-side *assignors*) or ``"consumer"``
        (KIP-848, Kafka 4.0+: the broker assigns partitions through
        ConsumerGroupHeartbeat, incrementally, with no group-wide pause; the
        commits carry the member epoch).  With ``"consumer"``, *assignors*,
        *session_timeout_ms* and *initial_backoff_ms* do not apply (the
        broker's ``group.consumer.*`` settings rule), the heartbeat interval
        is the broker's, and a *pattern* is matched on the broker (its text
        as an RE2J regular expression).  See :doc:`/group-protocols`.
    :param group_remote_assignor: with ``group_protocol="consumer"``, the
        broker's assignor: ``"uniform"`` or ``"range"`` (default: the
        broker's first, ``uniform``).
    :param consumer_options: passed to each :class:`~afkak.consumer.Consumer`
        (``auto_commit_every_n``, ``key_deserializer``, ``value_deserializer``,
        ...).  A partition without a committed offset starts at the earliest
        offset unless ``auto_offset_reset`` is ``OFFSET_LATEST`` (afkak 21's
        rule; Java's ``auto.offset.reset`` defaults to latest: pass
        ``auto_offset_reset=OFFSET_LATEST`` for its behaviour).

    afkak 21's attributes and subclass hooks stay: ``member_id``,
    ``generation_id``, ``leader_id``, ``coordinator_broker``, ``topics``,
    ``consumer_kwargs``, ``session_timeout_ms``, ``heartbeat_interval_ms``;
    :meth:`on_join_prepare`, :meth:`on_join_complete`,
    :meth:`on_group_leave`, :meth:`on_consumer_error`,
    :meth:`stop_consumers` and :meth:`shutdown_consumers`; :attr:`consumers`
    lists each topic's running Consumers, as in afkak 21.
    """

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        processor: Callable[..., Any],
        consumer_kwargs: dict[str, Any] | None = None,
        *,
        assignors: Sequence[str | PartitionAssignor] = DEFAULT_ASSIGNORS,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
        group_instance_id: str | None = None,
        on_assigned: Callback | None = None,
        on_revoked: Callback | None = None,
        on_lost: Callback | None = None,
        initial_backoff_ms: int | None = None,
        retry_backoff_ms: int = 100,
        fatal_backoff_ms: int = 1000,
        max_poll_interval_ms: int = 300000,
        pattern: re.Pattern[str] | None = None,
        metadata_max_age_ms: int = 300000,
        group_protocol: str = "classic",
        group_remote_assignor: str | None = None,
        **consumer_options: Any,
    ) -> None:
        kafka_client(client)
        group_name(group_id)
        if pattern is None:
            topics = topic_list(topics)
        elif not isinstance(pattern, re.Pattern):
            raise TypeError(f"pattern must be a compiled regular expression, not {pattern!r}")
        elif topics:
            raise ValueError("give topics or a pattern, not both")
        else:
            topics = []
        integer("max_poll_interval_ms", max_poll_interval_ms, 1, INT32_MAX)
        if group_protocol not in GROUP_PROTOCOLS:
            raise ValueError(f"group_protocol must be one of {GROUP_PROTOCOLS}: {group_protocol!r}")
        if group_remote_assignor is not None and group_protocol != "consumer":
            raise ValueError("group_remote_assignor needs group_protocol='consumer'")
        integer("metadata_max_age_ms", metadata_max_age_ms, 1, INT32_MAX)
        if not callable(processor):
            raise TypeError(f"processor must be callable, not {processor!r}")
        if consumer_kwargs is not None and not isinstance(consumer_kwargs, dict):
            raise TypeError(f"consumer_kwargs must be a dict, not {consumer_kwargs!r}")
        consumer_options = {**(consumer_kwargs or {}), **consumer_options}
        if group_instance_id is not None:
            group_name(group_instance_id)
        for name, callback in (
            ("on_assigned", on_assigned),
            ("on_revoked", on_revoked),
            ("on_lost", on_lost),
        ):
            if callback is not None and not callable(callback):
                raise TypeError(f"{name} must be callable or None, not {callback!r}")
        reserved = _RESERVED_OPTIONS & set(consumer_options)
        if reserved:
            raise TypeError(f"the group sets these Consumer options itself: {sorted(reserved)}")
        # Each partition's Consumer checks these; check them once now, not after joining.
        Consumer(
            client,
            topics[0] if topics else "pattern",
            0,
            processor,
            consumer_group=group_id,
            **consumer_options,
        )
        self.client = client
        self.group_id = group_id
        self.processor = processor
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.on_lost = on_lost if on_lost is not None else on_revoked
        #: The options each Consumer gets (the group adds its own); afkak 21's
        #: name for it is ``consumer_kwargs``.
        self.consumer_options = consumer_options
        self._backoffs: dict[str, Any] = {
            "initial_backoff_ms": initial_backoff_ms,
            "retry_backoff_ms": retry_backoff_ms,
            "fatal_backoff_ms": fatal_backoff_ms,
        }
        #: The running Consumer of each partition owned.
        self.partition_consumers: dict[TopicAndPartition, Consumer] = {}
        # Position control for owned partitions whose Consumer is not running
        # (yet): where to start (a seek in on_assigned), and what is paused.
        self._start_at: dict[TopicAndPartition, int] = {}
        self._paused: set[TopicAndPartition] = set()
        # Overdue processor calls of partitions lost meanwhile (see _until_live).
        self._stuck_calls: list[Deferred[None]] = []
        self._offsets: Offsets = {}
        self._start_d: Deferred[Offsets] | None = None
        self._stopping: Deferred[Offsets] | None = None
        # on_group_leave was called since the member last joined (or started).
        self._left = False
        self.group_protocol = group_protocol
        self.member: GroupMember | ConsumerProtocolMember
        hooks = _MemberHooks(self)
        if group_protocol == "consumer":
            self.member = ConsumerProtocolMember(
                client,
                group_id,
                topics,
                hooks,
                regex=None if pattern is None else pattern.pattern,
                assignor=group_remote_assignor,
                rebalance_timeout_ms=rebalance_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                session_timeout_ms=session_timeout_ms,
                group_instance_id=group_instance_id,
                retry_backoff_ms=retry_backoff_ms,
                retry_backoff_max_ms=max(fatal_backoff_ms, retry_backoff_ms),
                liveness=hooks,
            )
        else:
            self.member = GroupMember(
                client,
                group_id,
                topics,
                hooks,
                resolve_assignors(assignors),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                group_instance_id=group_instance_id,
                retry_backoff_ms=retry_backoff_ms,
                retry_backoff_max_ms=max(fatal_backoff_ms, retry_backoff_ms),
                initial_backoff_ms=initial_backoff_ms,
                liveness=hooks,
            )
        self.max_poll_interval_ms = max_poll_interval_ms
        #: Subscribe to the topics this matches (``re.fullmatch``, internal ``__``
        #: topics left out), refreshed every *metadata_max_age_ms*.
        self.pattern = pattern
        self.metadata_max_age_ms = metadata_max_age_ms
        self._refresher: LoopingCall | None = None

    @property
    def consumer_kwargs(self) -> dict[str, Any]:
        """afkak 21's name of :attr:`consumer_options`: setting it sets them."""
        return self.consumer_options

    @consumer_kwargs.setter
    def consumer_kwargs(self, options: dict[str, Any]) -> None:
        self.consumer_options = options

    # afkak 21 read these when retrying, so setting one re-times the member's retries.
    initial_backoff_ms: _Backoff[int | None] = _Backoff()
    retry_backoff_ms: _Backoff[int] = _Backoff()
    fatal_backoff_ms: _Backoff[int] = _Backoff()

    def _retime(self) -> None:
        retry_ms = self.retry_backoff_ms
        self.member.retime(retry_ms, max(self.fatal_backoff_ms, retry_ms))
        if isinstance(self.member, GroupMember):
            self.member.initial_backoff_ms = self.initial_backoff_ms

    # -- liveness (max_poll_interval_ms), asked by the member at each heartbeat --

    def _overdue(self, consumer: Consumer) -> float | None:
        """How long *consumer*'s processor call has run, if longer than allowed."""
        since = consumer.processing_since
        if since is None:
            return None
        running = self.client.reactor.seconds() - since
        return running if running > self.max_poll_interval_ms / 1000.0 else None

    def _stuck(self) -> str | None:
        """Why the member must leave the group: a processor call older than
        ``max_poll_interval_ms`` (None: every processor is live)."""
        for tp, consumer in sorted(self.partition_consumers.items()):
            running = self._overdue(consumer)
            if running is not None:
                return (
                    f"the processor of {tp.topic}/{tp.partition} has not returned for "
                    f"{running:.1f} s, longer than max_poll_interval_ms="
                    f"{self.max_poll_interval_ms}"
                )
        return None

    def _until_live(self) -> Deferred[None]:
        """Fires once every overdue processor call of a lost partition has returned."""
        stuck, self._stuck_calls = self._stuck_calls, []
        waiter: Deferred[None] = Deferred()

        def live(_: Any) -> None:
            if not waiter.called:
                waiter.callback(None)

        DeferredList(stuck, consumeErrors=True).addBoth(live)
        return waiter

    def metrics(self) -> dict[MetricName, float]:
        """The group's coordinator metrics, its consumers' fetch metrics, the client's.

        ``{MetricName: value}``, as Java's ``KafkaConsumer.metrics()``; see :doc:`/monitoring`.
        """
        return self.member.sensors.registry.metrics(COORDINATOR, FETCH, CLIENT, NODE)

    def __repr__(self) -> str:
        partitions = sorted(self.partition_consumers)
        return f"<ConsumerGroup {self.group_id!r} {self.member!r} partitions={partitions}>"

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

    # -- position control (the Java client's and aiokafka's names) ------------

    def assignment(self) -> frozenset[TopicAndPartition]:
        """The partitions this member owns now."""
        return self.member.owned

    def _owned(self, tp: Any) -> TopicAndPartition:
        key = positions.partition_of(tp)
        if key not in self.member.owned:
            raise ValueError(f"{key} is not assigned to this member of {self.group_id!r}")
        return key

    def _owned_all(self, tps: tuple[Any, ...]) -> list[TopicAndPartition]:
        if not tps:
            return sorted(self.member.owned)
        return [self._owned(tp) for tp in positions.partitions_of(tps)]

    def seek(self, tp: Any, offset: int) -> None:
        """Consume *tp* from *offset* on (see :meth:`Consumer.seek
        <afkak.consumer.Consumer.seek>`); in *on_assigned*, where its Consumer starts.

        :raises ValueError: *tp* is not assigned to this member, or *offset*
            is negative.
        """
        self._seek(self._owned(tp), positions.offset_value(offset))

    def seek_to_beginning(self, *tps: Any) -> None:
        """Consume from the earliest offset; no *tps*: every assigned partition."""
        for tp in self._owned_all(tps):
            self._seek(tp, OFFSET_EARLIEST)

    def seek_to_end(self, *tps: Any) -> None:
        """Consume from the log end; no *tps*: every assigned partition."""
        for tp in self._owned_all(tps):
            self._seek(tp, OFFSET_LATEST)

    def _seek(self, tp: TopicAndPartition, offset: int) -> None:
        consumer = self.partition_consumers.get(tp)
        if consumer is None:
            self._start_at[tp] = offset
        elif offset == OFFSET_EARLIEST:
            consumer.seek_to_beginning(tp)
        elif offset == OFFSET_LATEST:
            consumer.seek_to_end(tp)
        else:
            consumer.seek(tp, offset)

    def pause(self, *tps: Any) -> None:
        """Stop fetching *tps* (assigned partitions); the membership and the other
        partitions go on.  A partition stays paused until :meth:`resume` or until
        it is revoked."""
        for tp in [self._owned(tp) for tp in positions.partitions_of(tps)]:
            self._paused.add(tp)
            if tp in self.partition_consumers:
                self.partition_consumers[tp].pause(tp)

    def resume(self, *tps: Any) -> None:
        """Fetch paused *tps* again."""
        for tp in [self._owned(tp) for tp in positions.partitions_of(tps)]:
            self._paused.discard(tp)
            if tp in self.partition_consumers:
                self.partition_consumers[tp].resume(tp)

    def paused(self) -> frozenset[TopicAndPartition]:
        """The assigned partitions paused."""
        return frozenset(self._paused)

    def position(self, tp: Any) -> Deferred[int]:
        """The offset of the next record the processor will be given for *tp*.

        :raises ValueError: *tp* is not assigned, or its Consumer has not
            started yet (a rebalance is under way).
        """
        key = self._owned(tp)
        consumer = self.partition_consumers.get(key)
        if consumer is None:
            raise ValueError(f"{key} has no running consumer yet")
        return consumer.position(key)

    def committed(self, tp: Any) -> Deferred[OffsetAndMetadata | None]:
        """The group's committed offset of any *tp* and its metadata (None: none)."""
        key = positions.partition_of(tp)
        d = Deferred.fromCoroutine(positions.committed_offsets(self.client, self.group_id, [key]))
        return d.addCallback(lambda found: found[key])

    def offsets_for_times(
        self, timestamps: Mapping[Any, int]
    ) -> Deferred[dict[TopicAndPartition, int | None]]:
        """For each partition, the first offset whose record timestamp is at or after
        the given milliseconds (None: no such record); then :meth:`seek` there."""
        checked = positions.timestamps_of(timestamps)
        return Deferred.fromCoroutine(positions.offsets_for_times(self.client, checked, 0))

    @overload
    def commit(self) -> Deferred[Committed]: ...
    @overload
    def commit(self, offsets: ExplicitOffsets) -> Deferred[ExplicitlyCommitted]: ...
    def commit(self, offsets: ExplicitOffsets | None = None) -> Deferred[Any]:
        """Commit what the processors finished, or the explicit *offsets*.

        *offsets*: ``{tp: offset or OffsetAndMetadata}``, each the next offset
        to consume (as in the Java client), committed with the member's
        generation.  Fires with ``{tp: last committed offset}`` (without
        *offsets*) or with the offsets committed.

        :raises ValueError: a partition of *offsets* is not assigned to this
            member (e.g. revoked by a rebalance meanwhile: committing it
            would overwrite its new owner's progress).
        """
        if offsets is None:
            tps = sorted(self.partition_consumers)
            done: list[Deferred[Any]] = [self.partition_consumers[tp].commit() for tp in tps]
        else:
            explicit = positions.commit_offsets(offsets)
            tps = [self._owned(tp) for tp in explicit]
            missing = [tp for tp in tps if tp not in self.partition_consumers]
            if missing:
                raise ValueError(f"{missing} have no running consumer yet")
            done = [self.partition_consumers[tp].commit({tp: explicit[tp]}) for tp in tps]
        d = DeferredList(done, fireOnOneErrback=True, consumeErrors=True)

        def gathered(results: list[tuple[bool, Any]]) -> dict[TopicAndPartition, Any]:
            if offsets is None:
                return {tp: r for tp, (_, r) in zip(tps, results, strict=True)}
            return {tp: explicit[tp] for tp in tps}

        return d.addCallbacks(gathered, first_error)

    # -- afkak 21's attributes --------------------------------------------------

    @property
    def consumers(self) -> dict[str, list[Consumer]]:
        """``{topic: [Consumer, ...]}``: the running Consumers, by partition (afkak 21's
        view; :attr:`partition_consumers` has them by partition)."""
        by_topic: dict[str, list[Consumer]] = {}
        for tp, consumer in sorted(self.partition_consumers.items()):
            by_topic.setdefault(tp.topic, []).append(consumer)
        return by_topic

    @property
    def _heartbeat_looper(self) -> HeartbeatTimer:
        """afkak 21's private heartbeat timer (``running``, ``stop()``), which 21.5's
        own tests stop to make a member miss a rebalance; the classic protocol's."""
        if not isinstance(self.member, GroupMember):
            raise AttributeError("the consumer protocol has no heartbeat timer of its own")
        return self.member.heartbeats

    @property
    def topics(self) -> list[str]:
        return list(self.member.topics)

    @property
    def coordinator_broker(self) -> Any:
        """The coordinator's :class:`~afkak.common.BrokerMetadata`, once known."""
        return self.client.consumer_group_to_brokers().get(self.group_id)

    @property
    def session_timeout_ms(self) -> int:
        return self.member.session_timeout_ms

    @property
    def heartbeat_interval_ms(self) -> int:
        return int(self.member.heartbeat_interval * 1000)

    # -- afkak 21's subclass hooks ---------------------------------------------------

    def on_join_prepare(self) -> Any:
        """Called before each JoinGroup, once partitions that must go were given up.

        Consumers of partitions revoked before joining (all of them unless
        the group rebalances cooperatively) are already shut down and
        committed.  May return a Deferred.
        """
        return None

    def on_join_complete(self, assignments: dict[str, list[int]]) -> Any:
        """Called after each rebalance with ``{topic: [partition, ...]}`` owned now.

        Their Consumers are running.  May return a Deferred.
        """
        return None

    def on_group_leave(self) -> None:
        """Called once the member is out of the group: stopped, failed, or its partitions
        lost (fenced, its session lost while the coordinator was unreachable, or too
        slow a processor); as in afkak 21 it stops any Consumer left.  It joins again
        (:meth:`on_join_prepare`) unless it stopped."""
        self.stop_consumers()

    def on_consumer_error(self, failure: Failure) -> None:
        """A Consumer failed with an error the group cannot handle: the group stops with it."""
        self.member.fail(failure)

    def stop_consumers(self) -> None:
        """Stop every Consumer now, without committing."""
        consumers, self.partition_consumers = self.partition_consumers, {}
        for consumer in consumers.values():
            try:
                consumer.stop()
            except RestopError:
                pass

    def shutdown_consumers(self) -> Deferred[list[tuple[bool, Failure | None]]]:
        """Shut every Consumer down (finish processing, commit); fires when all are done.

        With a DeferredList's ``[(success, failure or None), ...]``, as afkak 21's did.
        """
        consumers, self.partition_consumers = self.partition_consumers, {}
        ending: list[Deferred[Any]] = [
            self._end_consumer(tp, c, commit=True) for tp, c in consumers.items()
        ]
        return DeferredList(ending, consumeErrors=True)

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
        self._left = False
        started = self._start_d = Deferred()
        if self.pattern is None or self.group_protocol == "consumer":
            # The consumer protocol matches the pattern on the broker.
            self.member.start().addBoth(self._member_stopped)
        else:
            self._refresh_subscription().addCallback(self._start_matching)
        return started  # (the member may have stopped already: a coordinator's refusal)

    def _matching(self) -> list[str]:
        pattern = self.pattern
        assert pattern is not None
        return [
            t
            for t in self.client.topic_partitions
            if not t.startswith("__") and pattern.fullmatch(t)
        ]

    def _start_matching(self, _: Any) -> None:
        """Join with the topics the pattern matched; look again every metadata_max_age_ms."""
        if self._stopping is not None:
            self._member_stopped(None)  # stopped before joining
            return
        self.member.start().addBoth(self._member_stopped)
        refresher = self._refresher = LoopingCall(self._refresh_subscription)
        refresher.clock = self.client.reactor
        refresher.start(self.metadata_max_age_ms / 1000.0, now=False)

    def _refresh_subscription(self) -> Deferred[None]:
        """Load every topic's metadata and subscribe to those the pattern matches now."""
        # The client keeps topics a full listing no longer names: forget the
        # matching ones first, so that a deleted topic drops out.
        self.client.reset_topic_metadata(*self._matching())
        d = self.client.load_metadata_for_topics()

        def matched(_: Any) -> None:
            self.member.subscribe(self._matching())

        def failed(failure: Failure) -> None:
            log.warn(
                "{group!r}: topic metadata refresh failed: {error}",
                group=self.group_id,
                error=failure.getErrorMessage(),
            )

        return d.addCallbacks(matched, failed)

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
            self.member.stop(commit=commit)  # before it started (pattern lookup): no effect
        waiter: Deferred[Offsets] = Deferred()
        stopping.addBoth(_relay, waiter)
        return waiter

    def _member_stopped(self, result: Any) -> None:
        refresher, self._refresher = self._refresher, None
        if refresher is not None and refresher.running:
            refresher.stop()
        start_d, self._start_d = self._start_d, None
        stopping, self._stopping = self._stopping, None
        offsets, self._offsets = self._offsets, {}
        outcome = result if isinstance(result, Failure) else offsets
        self._left_group(None)
        if stopping is not None:
            stopping.callback(offsets)
        if start_d is not None:
            if isinstance(outcome, Failure):
                start_d.errback(outcome)
            else:
                start_d.callback(outcome)

    # -- the membership's listener (through _MemberHooks) ----------------------

    def _prepare_join(self) -> Any:
        return self.on_join_prepare()

    def _assign(
        self, partitions: list[TopicAndPartition], generation: Generation
    ) -> Deferred[None]:
        self._left = False
        self._rebind(self.partition_consumers.values(), generation)
        added = [tp for tp in partitions if tp not in self.partition_consumers]
        d = maybeDeferred(self.on_assigned, added) if self.on_assigned and added else succeed(None)
        d.addCallback(lambda _: self._start_consumers(added, generation))
        d.addCallback(lambda _: self.on_join_complete(_by_topic(partitions)))
        return d.addCallback(_discard)

    @staticmethod
    def _rebind(consumers: Iterable[Consumer], generation: Generation) -> None:
        """Make Consumers kept across a rebalance commit as the new generation."""
        for consumer in consumers:
            consumer.set_generation(generation.generation_id, generation.member_id)

    def _start_consumers(self, partitions: list[TopicAndPartition], generation: Generation) -> None:
        owned = self.member.owned
        self._paused &= owned
        self._start_at = {tp: o for tp, o in self._start_at.items() if tp in owned}
        together = [tp for tp in partitions if tp not in self._start_at]
        lookup = None
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
            self.partition_consumers[tp] = consumer
            if tp in self._paused:
                consumer.pause(tp)
            start = self._start_at.pop(tp, OFFSET_COMMITTED)
            if start == OFFSET_COMMITTED and len(together) > 1:
                if lookup is None:  # one OffsetFetch (and ListOffsets) for all of them
                    lookup = positions.StartOffsets(
                        self.client,
                        self.group_id,
                        together,
                        isolation=consumer._options.isolation,
                        latest=consumer.auto_offset_reset == OFFSET_LATEST,
                    )
                consumer._start_with(lookup)
            consumer.start(start).addBoth(self._consumer_ended, tp, consumer)

    def _consumer_ended(self, result: Any, tp: TopicAndPartition, consumer: Consumer) -> None:
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
        if self.partition_consumers.get(tp) is not consumer:
            if isinstance(result, Failure):
                log.info("{tp}: consumer ended with {error}", tp=tp, error=result.getErrorMessage())
            return
        del self.partition_consumers[tp]
        if not isinstance(result, Failure):
            result = Failure(RuntimeError(f"the consumer of {tp} stopped by itself"))
        member = self.member
        stale = not member.stable or consumer.commit_generation_id != member.generation_id
        if result.check(RebalanceInProgress, StaleMemberEpoch) or (
            result.check(*_FENCED_ERRORS) and stale
        ):
            last = consumer.last_processed_offset
            self.partition_consumers[tp] = consumer
            consumer.start(OFFSET_COMMITTED if last is None else last + 1).addBoth(
                self._consumer_ended, tp, consumer
            )
        elif result.check(*_FENCED_ERRORS):
            self.member.request_rejoin(f"{tp}: commit refused: {result.getErrorMessage()}")
        else:
            self.on_consumer_error(result)

    def _revoke(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        return self._give_up(partitions, commit=True, then=self.on_revoked)

    def _lose(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        """The member lost every partition: it is out of the group (afkak 21's on_group_leave)."""
        return self._give_up(partitions, commit=False, then=self.on_lost).addCallback(
            self._left_group
        )

    def _left_group(self, _: Any) -> None:
        if not self._left:
            self._left = True
            self.on_group_leave()

    def _give_up(
        self, partitions: list[TopicAndPartition], commit: bool, then: Callback | None
    ) -> Deferred[None]:
        for tp in partitions:
            self._paused.discard(tp)
            self._start_at.pop(tp, None)
        running = self.partition_consumers
        ending = [(tp, running.pop(tp)) for tp in partitions if tp in running]
        if commit and self.member.generation_id >= 0:
            # Revoked after a cooperative sync: the final commits carry the new generation.
            self._rebind((c for _, c in ending), self.member.generation)
        stopping = [self._end_consumer(tp, c, commit) for tp, c in ending]
        d: Deferred[Any] = DeferredList(stopping, consumeErrors=True)
        if then is not None:
            d.addCallback(lambda _: then(partitions))
        return d.addCallback(_discard)

    def _end_consumer(
        self, tp: TopicAndPartition, consumer: Consumer, commit: bool
    ) -> Deferred[None]:
        """Stop *consumer*; with *commit*, shut it down and make sure its progress is committed."""
        if not commit:
            if self._overdue(consumer) is not None:
                self._stuck_calls.append(consumer.abandon())
                self._ended(consumer.last_processed_offset, tp)
                return succeed(None)
            return maybeDeferred(consumer.stop).addCallback(self._ended, tp)
        return Deferred.fromCoroutine(self._shut_down(tp, consumer))

    async def _shut_down(self, tp: TopicAndPartition, consumer: Consumer) -> None:
        """Shut *consumer* down, retrying a final commit refused while the group rebalances.

        A coordinator may refuse commits until every member has synced
        (REBALANCE_IN_PROGRESS); the partition is only given up once its
        progress is committed, or the rebalance timeout has passed.
        """
        reactor = self.client.reactor
        calls = [consumer.shutdown]

        def attempt() -> Deferred[Any]:
            call = calls.pop() if calls else consumer.commit  # then only the commit again
            return maybeDeferred(call)

        try:
            offset = await retrying(
                reactor,
                attempt,
                backoff_policy(0.05, 1.0, uniform=self.client.rng.uniform),
                retriable=lambda e: isinstance(e, (RebalanceInProgress, StaleMemberEpoch)),
                deadline=reactor.seconds() + self.member.rebalance_timeout_ms / 1000.0,
                what=f"final commit of {tp.topic}/{tp.partition}",
            )
        except Exception as e:
            return self._give_up_failed(tp, consumer, e)
        self._ended(consumer.last_processed_offset if offset is None else offset, tp)
        return None

    def _ended(self, offset: int | None, tp: TopicAndPartition) -> None:
        if self._stopping is not None:
            self._offsets[tp] = offset

    def _give_up_failed(self, tp: TopicAndPartition, consumer: Consumer, error: Exception) -> None:
        self._ended(consumer.last_processed_offset, tp)
        log.warn("{tp}: given up uncommitted: {error}", tp=tp, error=str(error))


def _by_topic(partitions: Iterable[TopicAndPartition]) -> dict[str, list[int]]:
    assignments: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        assignments.setdefault(tp.topic, []).append(tp.partition)
    return assignments


def _discard(_: object) -> None:
    """The hooks' results (a rebalance listener's Deferred fires with nothing)."""


def first_error(failure: Failure) -> Failure:
    """The error of the first of a DeferredList's Deferreds that failed."""
    first: Failure = failure.value.subFailure
    return first


def _relay(result: Any, waiter: Deferred[Any]) -> Any:
    waiter.callback(result)
    return result


class _MemberHooks:
    """The member's :class:`~afkak.group.RebalanceListener` and
    :class:`~afkak.group.Liveness`: the group's own calls, kept off its public API."""

    def __init__(self, group: ConsumerGroup) -> None:
        self.group = group

    def stuck(self) -> str | None:
        return self.group._stuck()

    def until_live(self) -> Deferred[None]:
        return self.group._until_live()

    def prepare_join(self) -> Any:
        return self.group._prepare_join()

    def assign(self, partitions: list[TopicAndPartition], generation: Generation) -> Deferred[None]:
        return self.group._assign(partitions, generation)

    def revoke(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        return self.group._revoke(partitions)

    def lose(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        return self.group._lose(partitions)
