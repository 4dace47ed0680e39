"""KafkaConsumer: the pull-style API (``getmany``, ``getone``, ``async for``) by the processor's.

It is built on the processor API, not beside it: each partition's
:class:`~afkak.consumer.Consumer` (fetching, fetch-ahead, offsets, commits)
hands its records to a processor that parks them here and returns a Deferred
that fires once the application has taken them all.  That Deferred is the
backpressure (a partition whose records wait is not fetched further, apart
from the one response fetched ahead) and the commit point (records count as
processed once handed out).  A subscription runs a
:class:`~afkak.group.ConsumerGroup` (membership, rebalances, liveness);
``assign()`` runs Consumers of chosen partitions without a group; they
start at the end of the reactor turn (or at the first call that needs
them), so that a ``seek()`` right after ``assign()`` only sets where they
start, as in the Java client: no offset lookup is sent, none is cancelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, overload

from twisted.internet.defer import Deferred, DeferredList, succeed
from twisted.logger import Logger

from afkak.client import ConsumerClient
from afkak.client._interlayer import INT32_MAX, group_name, integer, kafka_client, topic_list
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    RestartError,
    RestopError,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.consumer import Consumer, OffsetAndMetadata
from afkak.consumer.positions import offset_value, partition_of, partitions_of

from ._consumer_group import (
    Committed,
    ConsumerGroup,
    ExplicitlyCommitted,
    ExplicitOffsets,
    first_error as _first_error,
)

log = Logger()

#: The Java client's ``max.poll.records`` default.
MAX_POLL_RECORDS = 500

Records = dict[TopicAndPartition, list[SourcedMessage]]


class _Parked:
    """One processor call's records waiting for the application, and how many it took.

    Cancelling *done* forgets them (a bound method as the canceller, not a
    closure: one object less per fetch response and partition for the GC).
    """

    __slots__ = ("messages", "taken", "done", "_parked", "_tp")

    def __init__(
        self,
        messages: list[SourcedMessage],
        parked: dict[TopicAndPartition, _Parked],
        tp: TopicAndPartition,
    ) -> None:
        self.messages = messages
        self.taken = 0
        self._parked = parked
        self._tp = tp
        self.done: Deferred[Any] = Deferred(self._cancelled)

    def _cancelled(self, _: Deferred[Any]) -> None:
        if self._parked.get(self._tp) is self:
            del self._parked[self._tp]

    def last_taken(self) -> int:
        """The offset of the last record handed out (one before the first if none)."""
        if self.taken:
            return int(self.messages[self.taken - 1].offset)
        return int(self.messages[0].offset) - 1


class _Poll:
    """A ``getmany`` waiting for records until its timer: its Deferred's canceller,
    the timer's call and the chain's last callback are its bound methods (a poll
    made closures and cells, a dozen objects for the GC, thousands a second).

    Its timer is the consumer's own when no other poll holds that one: settled
    early, it leaves it running for the next poll to reset.  A cancelled timer
    stays in the reactor's queue until its time, so a timer per poll kept
    hundreds a second alive (fifty consumers polling), for the GC to scan.
    """

    __slots__ = ("pull", "d", "timer")

    def __init__(self, pull: KafkaConsumer) -> None:
        self.pull = pull
        self.d: Deferred[Records] = Deferred(self.cancel)
        self.timer: Any = None

    def cancel(self, d: Deferred[Records]) -> None:
        self.pull._forget_waiter(d)
        self._stop_timer()

    def timed_out(self) -> None:
        if not self.d.called:
            self.pull._forget_waiter(self.d)
            self.d.callback({})

    def settled(self, result: Any) -> Any:
        self._stop_timer()
        return result

    def _stop_timer(self) -> None:
        timer, self.timer = self.timer, None
        if self.pull._timed_poll is self:
            self.pull._timed_poll = None  # the consumer's timer: left for the next poll
        elif timer is not None and timer.active():
            timer.cancel()


class _PullGroup(ConsumerGroup):
    """A ConsumerGroup whose processor is a :class:`KafkaConsumer`'s buffer.

    Liveness is the time since the application last polled (Java's
    ``max.poll.interval.ms``), not the age of a processor call: records of a
    paused partition may wait for ever.  Partitions given up release their
    waiting records first, so that only records handed out are committed.
    """

    def __init__(self, pull: KafkaConsumer, *args: Any, **kwargs: Any) -> None:
        self._pull = pull
        super().__init__(*args, **kwargs)

    def _overdue(self, consumer: Consumer) -> float | None:
        idle = self.client.reactor.seconds() - self._pull._last_poll
        return None if self._stuck() is None else idle

    def _stuck(self) -> str | None:
        idle = self.client.reactor.seconds() - self._pull._last_poll
        if self._pull._waiters or idle <= self.max_poll_interval_ms / 1000.0:
            return None  # a poll waiting for records is a live application
        return (
            f"the application has not polled (getmany/getone) for {idle:.1f} s, "
            f"longer than max_poll_interval_ms={self.max_poll_interval_ms}"
        )

    def _revoke(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        self._pull._release(partitions)
        return super()._revoke(partitions)

    def _lose(self, partitions: list[TopicAndPartition]) -> Deferred[None]:
        # As Java's consumer: a member that did not poll joins again at its next poll.
        self._pull._release(partitions, at_next_poll=self._stuck() is not None)
        return super()._lose(partitions)


class KafkaConsumer:
    """Pull records as the Java client, aiokafka and confluent-kafka do.

    ::

        consumer = KafkaConsumer(client, group_id="billing")
        consumer.subscribe(["orders"])
        while True:
            batches = await consumer.getmany(timeout_ms=1000)
            for tp, records in batches.items():
                ...
            # or: async for record in consumer: ...
        await consumer.close()

    Records are :class:`~afkak.common.SourcedMessage` tuples (``topic``,
    ``partition``, ``offset``, ``message`` with ``key``, ``value``,
    ``timestamp``, ``headers``).  A record counts as processed (and is
    committed, every ``auto_commit_every_ms`` or by :meth:`commit`) once a
    poll has returned it.

    :param client: a :class:`~afkak.client.KafkaClient`.
    :param group_id: the consumer group: needed by :meth:`subscribe`, and for
        commits; without it, :meth:`assign` starts at the earliest offset
        unless ``auto_offset_reset`` is ``OFFSET_LATEST``.
    :param max_poll_records: the most records one poll returns.
    :param max_poll_interval_ms: a subscribed consumer that does not poll
        within it leaves the group (see
        :class:`~afkak.group.ConsumerGroup`); it joins again at its next poll.
    :param options: :class:`~afkak.group.ConsumerGroup` options (assignors,
        timeouts) and :class:`~afkak.consumer.Consumer` options
        (``auto_offset_reset``, ``key_deserializer``, ``value_deserializer``,
        ``auto_commit_every_ms``, fetch sizes, ...).
    """

    def __init__(
        self,
        client: ConsumerClient,
        *,
        group_id: str | None = None,
        max_poll_records: int = MAX_POLL_RECORDS,
        max_poll_interval_ms: int = 300000,
        **options: Any,
    ) -> None:
        kafka_client(client)
        if group_id is not None:
            group_name(group_id)
        integer("max_poll_records", max_poll_records, 1, INT32_MAX)
        integer("max_poll_interval_ms", max_poll_interval_ms, 1, INT32_MAX)
        self.client = client
        self.group_id = group_id
        self.max_poll_records = max_poll_records
        self.max_poll_interval_ms = max_poll_interval_ms
        # Whole fetch responses per processor call unless asked otherwise.
        self._options = {"auto_commit_every_n": 0, **options} if group_id else options
        self._group: ConsumerGroup | None = None
        self._consumers: dict[TopicAndPartition, Consumer] = {}
        # Assigned Consumers not started yet, with where they start; and when they do.
        self._unstarted: dict[TopicAndPartition, int] = {}
        self._starting: Any = None
        self._parked: dict[TopicAndPartition, _Parked] = {}
        self._release_at_poll: list[_Parked] = []
        self._waiters: list[tuple[Deferred[Records], int]] = []
        # The consumer's poll timer (reset for each poll) and the poll it times.
        self._poll_timer: Any = None
        self._timed_poll: _Poll | None = None
        self._last_poll = client.reactor.seconds()
        self._closed = False

    def __repr__(self) -> str:
        mode = "subscribed" if self._group else "assigned" if self._consumers else "idle"
        return f"<KafkaConsumer group={self.group_id!r} {mode}>"

    # -- subscribing and assigning ------------------------------------------------

    def subscribe(
        self, topics: Iterable[str] = (), *, pattern: re.Pattern[str] | None = None
    ) -> None:
        """Join the group and consume *topics* (or the topics *pattern* matches).

        :raises ValueError: no *group_id*, or already subscribed or assigned.
        """
        self._idle("subscribe")
        if self.group_id is None:
            raise ValueError("subscribe() needs a group_id")
        names = [] if pattern is not None else topic_list(list(topics))
        group = _PullGroup(
            self,
            self.client,
            self.group_id,
            names,
            self._park,
            pattern=pattern,
            max_poll_interval_ms=self.max_poll_interval_ms,
            **self._options,
        )
        self._group = group
        self._last_poll = self.client.reactor.seconds()
        group.start().addErrback(self._group_failed)

    def assign(self, partitions: Iterable[Any]) -> None:
        """Consume exactly *partitions*, without group membership.

        They start at the group's committed offset (with a *group_id*), else
        at the earliest offset unless ``auto_offset_reset`` is ``OFFSET_LATEST``;
        a seek before the end of the reactor turn sets where they start instead.
        """
        self._idle("assign")
        tps = sorted(set(partitions_of(partitions)))
        if not tps:
            raise ValueError("assign() needs at least one partition")
        if self.group_id is not None:
            start = OFFSET_COMMITTED
        else:
            latest = self._options.get("auto_offset_reset") == OFFSET_LATEST
            start = OFFSET_LATEST if latest else OFFSET_EARLIEST
        for tp in tps:
            self._consumers[tp] = Consumer(
                self.client,
                tp.topic,
                tp.partition,
                self._park,
                consumer_group=self.group_id,
                **self._options,
            )
            self._unstarted[tp] = start
        self._starting = self.client.reactor.callLater(0, self._start_assigned)

    def _start_assigned(self) -> None:
        """Start the assigned Consumers not started yet, where (last) seeked."""
        for tp, offset in self._take_unstarted().items():
            self._consumers[tp].start(offset).addErrback(self._consumer_failed, tp)

    def _take_unstarted(self) -> dict[TopicAndPartition, int]:
        """The Consumers not started yet (and their offsets): no longer to be started."""
        starting, self._starting = self._starting, None
        if starting is not None and starting.active():
            starting.cancel()
        unstarted, self._unstarted = self._unstarted, {}
        return unstarted

    def _idle(self, call: str) -> None:
        if self._closed:
            raise RestopError(f"{self!r} is closed")
        if self._group is not None or self._consumers:
            raise RestartError(f"{call}(): {self!r} already consumes")

    def _group_failed(self, failure: Any) -> None:
        failure.cleanFailure()  # a logged event keeps no frames
        log.failure("{consumer}: the group stopped", failure, consumer=repr(self))
        self._fail_waiters(failure)

    def _consumer_failed(self, failure: Any, tp: TopicAndPartition) -> None:
        failure.cleanFailure()
        log.failure("{consumer}: {tp} stopped", failure, consumer=repr(self), tp=tp)
        self._fail_waiters(failure)

    def _fail_waiters(self, failure: Any) -> None:
        waiters, self._waiters = self._waiters, []
        for d, _ in waiters:
            d.errback(failure)

    # -- the processor side ----------------------------------------------------------

    def _park(self, consumer: Consumer, messages: list[SourcedMessage]) -> Deferred[Any]:
        """The processor of every partition: keep *messages* until polled."""
        tp = consumer.topic_partition
        parked = _Parked(messages, self._parked, tp)
        self._parked[tp] = parked
        if self._waiters:
            self._serve_waiters()
        return parked.done

    def _release(self, partitions: Iterable[TopicAndPartition], at_next_poll: bool = False) -> None:
        """Give back the waiting records of *partitions*: those not taken are not processed."""
        for tp in partitions:
            parked = self._parked.pop(tp, None)
            if parked is None:
                continue
            if at_next_poll:
                self._release_at_poll.append(parked)
            else:
                parked.done.callback(parked.last_taken())

    # -- polling -------------------------------------------------------------------

    def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> Deferred[Records]:
        """Records of every partition that has some, ``{tp: [record, ...]}``.

        Waits up to *timeout_ms* for the first records (0: answers at once,
        possibly with ``{}``); returns at most *max_records* (default
        ``max_poll_records``).  Cancelling the Deferred gives nothing up.
        """
        integer("timeout_ms", timeout_ms, 0, INT32_MAX)
        limit = self.max_poll_records if max_records is None else max_records
        integer("max_records", limit, 1, INT32_MAX)
        self._polled()
        taken = self._take(limit)
        if taken or timeout_ms == 0:
            return succeed(taken)
        poll = _Poll(self)
        self._waiters.append((poll.d, limit))
        poll.timer = self._timer_for(poll, timeout_ms / 1000.0)
        return poll.d.addBoth(poll.settled)

    def _timer_for(self, poll: _Poll, seconds: float) -> Any:
        """A timer for *poll* in *seconds*: the consumer's unless another poll has it."""
        if self._timed_poll is not None:
            return self.client.reactor.callLater(seconds, poll.timed_out)
        timer = self._poll_timer
        if timer is not None and timer.active():
            timer.reset(seconds)
        else:
            timer = self._poll_timer = self.client.reactor.callLater(seconds, self._poll_timed_out)
        self._timed_poll = poll
        return timer

    def _poll_timed_out(self) -> None:
        poll = self._timed_poll
        if poll is not None:
            self._timed_poll = poll.timer = None
            poll.timed_out()

    def getone(self) -> Deferred[SourcedMessage]:
        """The next record, whenever it comes."""
        d: Deferred[Records] = Deferred(self._forget_waiter)
        self._polled()
        taken = self._take(1)
        if taken:
            d.callback(taken)
        else:
            self._waiters.append((d, 1))
        return d.addCallback(_only_record)

    def __aiter__(self) -> KafkaConsumer:
        return self

    async def __anext__(self) -> SourcedMessage:
        if self._closed:
            raise StopAsyncIteration
        return await self.getone()

    def _polled(self) -> None:
        if self._closed:
            raise RestopError(f"{self!r} is closed")
        if self._unstarted:
            self._start_assigned()
        self._last_poll = self.client.reactor.seconds()
        released, self._release_at_poll = self._release_at_poll, []
        for parked in released:
            parked.done.callback(parked.last_taken())

    def _forget_waiter(self, d: Deferred[Records]) -> None:
        self._waiters = [(w, n) for w, n in self._waiters if w is not d]

    def _serve_waiters(self) -> None:
        while self._waiters:
            d, limit = self._waiters[0]
            taken = self._take(limit)
            if not taken:
                return
            del self._waiters[0]
            self._last_poll = self.client.reactor.seconds()
            d.callback(taken)

    def _take(self, limit: int) -> Records:
        """Up to *limit* waiting records, partitions served in turn; finished calls complete.

        Only the partitions visited are asked whether they are paused.
        """
        taken: Records = {}
        finished = []
        group_paused = self._group.paused() if self._group is not None else None
        consumers = self._consumers
        for tp in list(self._parked):
            if limit <= 0:
                break
            if tp in group_paused if group_paused is not None else consumers[tp].paused():
                continue
            parked = self._parked.pop(tp)
            start, messages = parked.taken, parked.messages
            end = min(len(messages), start + limit)
            taken[tp] = messages if start == 0 and end == len(messages) else messages[start:end]
            parked.taken = end
            limit -= end - start
            if end == len(messages):
                finished.append(parked)
            else:
                self._parked[tp] = parked  # to the back of the line
        for parked in finished:
            parked.done.callback(None)
        return taken

    # -- position control, as ConsumerGroup / Consumer -----------------------------------

    def _assigned(self, tp: Any) -> Consumer:
        key = partition_of(tp)
        consumer = self._consumers.get(key)
        if consumer is None:
            raise ValueError(f"{key} is not assigned to {self!r}")
        return consumer

    def _consumer_of(self, tp: Any) -> Consumer:
        """*tp*'s Consumer, started (a seek no longer sets only where it starts)."""
        consumer = self._assigned(tp)
        if self._unstarted:
            self._start_assigned()
        return consumer

    def assignment(self) -> frozenset[TopicAndPartition]:
        """The partitions consumed now."""
        if self._group is not None:
            return self._group.assignment()
        return frozenset(self._consumers)

    def seek(self, tp: Any, offset: int) -> None:
        """Consume *tp* from *offset* on: records polled afterwards start there."""
        key = partition_of(tp)
        if self._group is not None:
            self._group._owned(key)
            self._release([key])
            self._group.seek(key, offset)
        elif key in self._unstarted:
            self._unstarted[key] = offset_value(offset)
        else:
            consumer = self._consumer_of(key)
            self._release([key])
            consumer.seek(key, offset)

    def seek_to_beginning(self, *tps: Any) -> None:
        """Consume from the earliest offset; no *tps*: every assigned partition."""
        self._seek_to(tps, OFFSET_EARLIEST)

    def seek_to_end(self, *tps: Any) -> None:
        """Consume from the log end; no *tps*: every assigned partition."""
        self._seek_to(tps, OFFSET_LATEST)

    def _seek_to(self, tps: tuple[Any, ...], where: int) -> None:
        keys = partitions_of(tps) or sorted(self.assignment())
        for key in keys:
            if key not in self.assignment():
                raise ValueError(f"{key} is not assigned to {self!r}")
        self._release(keys)
        for key in keys:
            if key in self._unstarted:
                self._unstarted[key] = where
                continue
            target: Any = self._group if self._group is not None else self._consumers[key]
            if where == OFFSET_EARLIEST:
                target.seek_to_beginning(key)
            else:
                target.seek_to_end(key)

    def pause(self, *tps: Any) -> None:
        """Stop fetching *tps*; polls return none of their records until :meth:`resume`."""
        if self._group is not None:
            self._group.pause(*tps)
        else:
            for tp in tps:
                self._assigned(tp).pause(tp)

    def resume(self, *tps: Any) -> None:
        if self._group is not None:
            self._group.resume(*tps)
        else:
            for tp in tps:
                self._assigned(tp).resume(tp)
        if self._waiters:
            self._serve_waiters()

    def paused(self) -> frozenset[TopicAndPartition]:
        if self._group is not None:
            return self._group.paused()
        return frozenset(tp for tp, c in self._consumers.items() if c.paused())

    def position(self, tp: Any) -> Deferred[int]:
        """The offset of the next record a poll returns for *tp*."""
        key = partition_of(tp)
        parked = self._parked.get(key)
        if parked is not None:
            return succeed(int(parked.messages[parked.taken].offset))
        if self._group is not None:
            return self._group.position(key)
        return self._consumer_of(key).position(key)

    def committed(self, tp: Any) -> Deferred[OffsetAndMetadata | None]:
        if self._group is not None:
            return self._group.committed(tp)
        return self._consumer_of(tp).committed(tp)

    def offsets_for_times(
        self, timestamps: Mapping[Any, int]
    ) -> Deferred[dict[TopicAndPartition, int | None]]:
        if self._group is not None:
            return self._group.offsets_for_times(timestamps)
        consumers = {self._consumer_of(tp) for tp in timestamps}
        if len(consumers) == 1:
            return consumers.pop().offsets_for_times(timestamps)
        gathered = DeferredList(
            [self._consumer_of(tp).offsets_for_times({tp: ms}) for tp, ms in timestamps.items()],
            fireOnOneErrback=True,
            consumeErrors=True,
        )
        return gathered.addCallback(lambda rs: {k: v for _, r in rs for k, v in r.items()})

    @overload
    def commit(self) -> Deferred[Committed]: ...
    @overload
    def commit(self, offsets: ExplicitOffsets) -> Deferred[ExplicitlyCommitted]: ...
    def commit(self, offsets: ExplicitOffsets | None = None) -> Deferred[Any]:
        """Commit what polls returned (whole processor calls), or the explicit *offsets*.

        Fires as :meth:`ConsumerGroup.commit` does, subscribed or assigned:
        with ``{tp: last committed offset}``, or with the *offsets* committed.
        """
        if self._group is not None:
            return self._group.commit() if offsets is None else self._group.commit(offsets)
        if self.group_id is None:
            raise ValueError(f"{self!r} has no group_id to commit to")
        if offsets is None:
            self._start_assigned()
            tps = list(self._consumers)
            each = DeferredList(
                [self._consumers[tp].commit() for tp in tps],
                fireOnOneErrback=True,
                consumeErrors=True,
            )
            return each.addCallback(
                lambda rs: {tp: r for tp, (_, r) in zip(tps, rs, strict=True)}
            ).addErrback(_first_error)
        explicit = DeferredList(
            [self._consumer_of(tp).commit({tp: o}) for tp, o in offsets.items()],
            fireOnOneErrback=True,
            consumeErrors=True,
        )
        return explicit.addCallback(
            lambda rs: {k: v for _, r in rs for k, v in r.items()}
        ).addErrback(_first_error)

    # -- closing ------------------------------------------------------------------------

    def close(self) -> Deferred[None]:
        """Commit what polls returned, leave the group, stop; waiting polls get ``{}``."""
        if self._closed:
            return succeed(None)
        self._closed = True
        waiters, self._waiters = self._waiters, []
        for waiter, _ in waiters:
            waiter.callback({})
        if self._poll_timer is not None and self._poll_timer.active():
            self._poll_timer.cancel()
        self._release(list(self._parked))
        for parked in self._release_at_poll:
            parked.done.callback(parked.last_taken())
        self._release_at_poll = []
        stopped: Deferred[Any]
        if self._group is not None:
            stopped = self._group.shutdown()
        else:
            unstarted = self._take_unstarted()
            stopped = DeferredList(
                [c.shutdown() for tp, c in self._consumers.items() if tp not in unstarted],
                consumeErrors=True,
            )
        return stopped.addCallback(lambda _: None)


def _only_record(records: Records) -> SourcedMessage:
    [(_, [record])] = records.items()
    return record
