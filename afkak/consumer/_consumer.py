"""Consumer: afkak's documented single-partition consumer, on the modern protocol.

The consumer is a small state machine (:mod:`._states`) whose pump
(:class:`._pump.Pump`) keeps at most one fetch in flight and at most one
fetched response waiting while the processor works, hands the response
taken to the processor in blocks, and calls the processor again only once
the Deferred it returned has fired (backpressure).  Its settings are
checked in :mod:`._options` (and read and set as attributes through
:class:`._options.Setting`), and its commits are a
:class:`._committer.Committer`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, overload

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.client._interlayer import INT32_MAX, integer, kafka_client, topic_name
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    CancelledError,
    InvalidConsumerGroupError,
    RestartError,
    RestopError,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.metrics import CLIENT, FETCH, NODE, ConsumerSensors, MetricName, registry_of
from afkak.records.aborted import READ_COMMITTED

from ._committer import Committer
from ._delivery import Delivery
from ._fetch_ahead import FetchAhead
from ._fetcher import PartitionFetcher
from ._messages import FetchedRecords
from ._options import (
    FETCH_MAX_WAIT_TIME,
    FETCH_MIN_BYTES,
    REQUEST_RETRY_MAX_DELAY,
    REQUEST_RETRY_MIN_DELAY,
    Setting,
    resolve,
    seconds_as_ms,
)
from ._pump import CallState, GateState, Pump
from ._states import TABLE, TRANSITIONS, ConsumerEvent, ConsumerState
from ._turns import client_turns
from .deserialize import checked, deserializing
from .positions import (
    OffsetAndMetadata,
    StartOffsets,
    commit_offsets,
    committed_offsets,
    offset_value,
    offsets_for_times,
    partition_of,
    partitions_of,
    timestamps_of,
)

log = Logger()

Processor = Callable[["Consumer", list[SourcedMessage]], Any]


class Consumer:
    """A simple Kafka consumer of one partition of one topic.

    Create it with a connected :class:`~afkak.client.KafkaClient`, call
    :meth:`start` with the offset to start from, process the messages in
    *processor* (returning a Deferred for backpressure), and :meth:`shutdown`
    (process, commit, stop) or :meth:`stop` it.  A stopped consumer may be
    started again.

    While the processor works, the next response is fetched (at most one
    waits).  A response is decoded and delivered a reactor turn after it is
    taken, once the request for the following one is on the wire; with a
    :class:`~twisted.internet.task.Clock`, ``clock.advance(0)`` delivers.

    :param client: the :class:`~afkak.client.KafkaClient` to use; its
        ``reactor`` runs the retry and auto-commit timers.
    :param str topic: the topic to consume.
    :param int partition: the partition to consume.
    :param processor: ``processor(consumer, messages)`` is called with a list
        of :class:`~afkak.common.SourcedMessage` (each ``message`` a
        :class:`~afkak.common.Message` with ``timestamp`` and ``headers``):
        the messages of one fetch response, or of ``auto_commit_every_n`` of
        them.
        It may return a Deferred; it is not called again until that fires.
        A Deferred firing with an offset (an ``int``) below the last
        message's says the processor finished only up to that message: the
        rest is not counted as processed and is fetched again.
        An exception (or a failed Deferred) stops the consumer and fails the
        Deferred that :meth:`start` returned.
    :param str consumer_group: the group to commit offsets for (none: no
        commits).
    :param commit_metadata: ``str`` or UTF-8 ``bytes`` stored with each commit.
    :param int auto_commit_every_n: commit once this many messages have been
        processed since the last commit; 0 disables.  With a group, defaults
        to ``AUTO_COMMIT_MSG_COUNT``, and the processor gets at most this
        many messages per call.  Without a group it must be unset or 0.
    :param int auto_commit_every_ms: commit every this many milliseconds (the
        period restarts at each commit); 0 disables.  With a group, defaults
        to ``AUTO_COMMIT_INTERVAL``.  Without a group it must be unset or 0.
    :param int fetch_size_bytes: the broker holds a fetch until this many
        bytes are available...
    :param int fetch_max_wait_time: ...or this many milliseconds passed.
    :param int buffer_size: the number of bytes to fetch at most at a time,
        to begin with (default: 1 MiB, the Java client's
        ``max.partition.fetch.bytes``, or ``max_buffer_size`` if smaller).
        When the next record batch does not fit (only brokers that do not
        return an oversized first batch whole, as Kafka does since 0.10.1,
        cut it), it grows x16 while below 1 MiB (to 1 MiB at most),
        then doubles, up to *max_buffer_size*.
    :param int max_buffer_size: the largest fetch size (None: no limit).  A
        batch that still does not fit stops the consumer with
        :class:`~afkak.common.ConsumerFetchSizeTooSmall`.
    :param float request_retry_init_delay: seconds to wait before retrying a
        failed request (fetch, offset lookup, commit).
    :param float request_retry_max_delay: the longest wait between retries;
        the wait grows by ``afkak.consumer.REQUEST_RETRY_FACTOR`` after
        each failure and starts again at the initial delay after a success.
        A fetch's and an offset lookup's retries, each looking the leader up
        again, wait 1 s at most (or the initial delay, if longer).
    :param int request_retry_max_attempts: attempts per request before
        failing; 0 (the default) retries forever.  Only retriable errors are
        retried.
    :param auto_offset_reset: what to do when the offset to fetch is out of
        range: ``OFFSET_EARLIEST`` or ``OFFSET_LATEST`` start there; ``None``
        (the default) stops the consumer with
        :class:`~afkak.common.OffsetOutOfRangeError`.  Starting from
        :data:`~afkak.common.OFFSET_COMMITTED` when the group has no committed
        offset starts at the earliest offset unless it is ``OFFSET_LATEST``
        (afkak 21's rule).
    :param str commit_consumer_id: member id sent with commits.
    :param int commit_generation_id: group generation sent with commits.
    :param str isolation_level: ``"read_uncommitted"`` (the default): every
        record, those of open and aborted transactions included;
        ``"read_committed"``: records up to the last stable offset, without
        aborted transactions' records (``OFFSET_LATEST`` is then the last
        stable offset too, and ``OFFSET_COMMITTED`` waits for offsets that an
        open transaction staged).  Transaction markers are never delivered.
    :param key_deserializer: called with each record's key (bytes) to make
        the message's ``key`` (a missing key stays None); an exception stops
        the consumer as a processor's does.  One with a ``prepare(data)``
        method (a Schema Registry deserializer) is given each fetched batch's
        keys first, and the batch waits for the Deferred it may return.
    :param value_deserializer: the same for each value (a tombstone stays None).
    :param client_rack: the consumer's rack, as the brokers' ``broker.rack``
        (Java's ``client.rack``, KIP-392): where the brokers run a replica
        selector, records are read from a replica in that rack instead of the
        leader (see :doc:`/controlling-consumption`).
    """

    def __init__(
        self,
        client: ConsumerClient,
        topic: str,
        partition: int,
        processor: Processor,
        consumer_group: str | None = None,
        commit_metadata: str | bytes | None = None,
        auto_commit_every_n: int | None = None,
        auto_commit_every_ms: int | None = None,
        fetch_size_bytes: int = FETCH_MIN_BYTES,
        fetch_max_wait_time: int = FETCH_MAX_WAIT_TIME,
        buffer_size: int | None = None,
        max_buffer_size: int | None = None,
        request_retry_init_delay: float = REQUEST_RETRY_MIN_DELAY,
        request_retry_max_delay: float = REQUEST_RETRY_MAX_DELAY,
        request_retry_max_attempts: int = 0,
        auto_offset_reset: int | None = None,
        commit_consumer_id: str = "",
        commit_generation_id: int = -1,
        isolation_level: str = "read_uncommitted",
        key_deserializer: Callable[[bytes], Any] | None = None,
        value_deserializer: Callable[[bytes], Any] | None = None,
        client_rack: str | None = None,
    ) -> None:
        kafka_client(client)
        topic_name(topic)
        integer("partition", partition, 0, INT32_MAX)
        if not callable(processor):
            raise TypeError(f"processor must be callable, not {processor!r}")
        self._options = options = resolve(
            consumer_group=consumer_group,
            commit_metadata=commit_metadata,
            auto_commit_every_n=auto_commit_every_n,
            auto_commit_every_ms=auto_commit_every_ms,
            fetch_size_bytes=fetch_size_bytes,
            fetch_max_wait_time=fetch_max_wait_time,
            buffer_size=buffer_size,
            max_buffer_size=max_buffer_size,
            request_retry_init_delay=request_retry_init_delay,
            request_retry_max_delay=request_retry_max_delay,
            request_retry_max_attempts=request_retry_max_attempts,
            auto_offset_reset=auto_offset_reset,
            commit_consumer_id=commit_consumer_id,
            commit_generation_id=commit_generation_id,
            isolation_level=isolation_level,
            client_rack=client_rack,
        )
        deserialize = deserializing(
            checked("key_deserializer", key_deserializer),
            checked("value_deserializer", value_deserializer),
        )
        self.client = client
        self.topic = topic
        self.partition = partition
        self.processor = processor
        fail = self._fail  # one bound method for the three rooms that stop the consumer
        self._committer = Committer(client, topic, partition, options, fail)
        self._fetcher = PartitionFetcher(client, topic, partition, options)
        self._high_watermark = -1
        self._last_stable_offset = -1
        self._sensors = registry_of(client).shared(ConsumerSensors)
        self._state = ConsumerState.STOPPED
        # The Deferred start() returned while it has not fired.
        self._start_d: Deferred[int | None] | None = None
        self._shutdown_d: Deferred[int | None] | None = None
        # The offset of the next fetch (a special value until looked up).
        self._fetch_offset = 0
        # The fetch under way, or the response (or error) it gave, not taken yet.
        self._ahead = FetchAhead()
        # The response taken for the processor, decoded after a reactor turn.
        self._delivery = Delivery(
            client.shared(client_turns),
            topic,
            partition,
            deserialize,
            lambda: self._pump.run(),
            fail,
        )
        self._pump = Pump(
            client.reactor,
            self._ahead,
            self._delivery,
            self._committer,
            options.auto_commit_every_n,
            running=lambda: self._state is ConsumerState.RUNNING,
            fetch=self._fetch,
            fetched=self._fetched,
            process=self._process,
            finished=self._processor_done,
            fail=fail,
        )

    def metrics(self) -> dict[MetricName, float]:
        """The consumers' fetch metrics and the client's connection metrics.

        ``{MetricName: value}``, as Java's ``KafkaConsumer.metrics()``; every
        Consumer on one client shares them (per-partition ones are tagged).
        See :doc:`/monitoring`.
        """
        return self._sensors.registry.metrics(FETCH, CLIENT, NODE)

    def __repr__(self) -> str:
        if self._state is ConsumerState.RUNNING:
            state = f"fetching at {self._fetch_offset}"
        else:
            state = self._state.value
        group = f" group={self.consumer_group}" if self.consumer_group else ""
        return f"<Consumer {self.topic}/{self.partition}{group} {state}>"

    # -- documented attributes -------------------------------------------------

    @property
    def last_processed_offset(self) -> int | None:
        """Offset of the last message the processor finished with (None: none yet)."""
        return self._committer.last_processed

    @property
    def last_committed_offset(self) -> int | None:
        """Offset of the last processed message whose commit succeeded (None: none yet).

        The committed value on the wire is one more: the next offset to
        consume, as in every Kafka client.  After :meth:`start` with
        ``OFFSET_COMMITTED`` it is the group's committed offset minus one.
        """
        return self._committer.last_committed

    @property
    def processing_since(self) -> float | None:
        """When (``reactor.seconds()``) the processor call under way began (None: none is).

        A :class:`~afkak.group.ConsumerGroup` compares it with its
        ``max_poll_interval_ms``.
        """
        return self._pump.processing_since()

    @property
    def high_watermark(self) -> int:
        """The partition's high watermark in the last fetch response (-1: none yet)."""
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The partition's last stable offset in the last fetch response (-1: none yet).

        Below the first open transaction; a ``read_committed`` consumer reads
        up to it.  Equal to the high watermark when no transaction is open.
        """
        return self._last_stable_offset

    # The settings are attributes an application may set, as in afkak 21: a
    # new value is checked as the constructor checks it (TypeError /
    # ValueError), and used from the next fetch or commit on (the
    # auto-commit interval from the next start()).  consumer_group and
    # isolation_level are fixed at construction.

    @property
    def buffer_size(self) -> int:
        """The current fetch size, in bytes (grows for oversized batches)."""
        return self._fetcher.buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        if value is None:
            raise TypeError("buffer_size must be an int, not None")
        self._reconfigure(buffer_size=value)

    max_buffer_size = Setting[int | None]("max_buffer_size")
    fetch_min_bytes = Setting[int]("fetch_min_bytes")
    fetch_max_wait_time = Setting[int]("fetch_max_wait_ms")
    consumer_group = Setting[str | None]("consumer_group", fixed=True)
    commit_metadata = Setting[str | bytes | None]("commit_metadata")
    auto_offset_reset = Setting[int | None]("auto_offset_reset")
    isolation_level = Setting[str]("isolation_name", fixed=True)
    auto_commit_every_n = Setting[int]("auto_commit_every_n")
    auto_commit_every_ms = Setting[int]("auto_commit_every_ms")
    auto_commit_every_s = Setting[float](
        "auto_commit_every_s",
        "auto_commit_every_ms",
        seconds_as_ms,
        doc="afkak 21's name: ``auto_commit_every_ms`` in seconds.",
    )
    retry_init_delay = Setting[float]("retry.init_delay")
    retry_max_delay = Setting[float]("retry.max_delay")
    request_retry_max_attempts = Setting[int]("retry.max_attempts")
    commit_consumer_id = Setting[str]("commit_consumer_id", doc="The member id sent with commits.")
    commit_generation_id = Setting[int](
        "commit_generation_id", doc="The group generation sent with commits."
    )

    def _reconfigure(self, **changes: Any) -> None:
        """Check the settings with *changes* as the constructor does, then use them."""
        options = self._options
        if options.buffer_size_given:  # the fetch size, grown for oversized batches
            changes = {"buffer_size": self._fetcher.buffer_size, **changes}
        self._options = options = resolve(**{**options.arguments(), **changes})
        self._committer.reconfigure(options)
        self._fetcher.reconfigure(options)
        self._pump.block_size = options.auto_commit_every_n

    def set_generation(self, generation_id: int, member_id: str) -> None:
        """Commit as *member_id* of group generation *generation_id* from now on.

        A :class:`~afkak.group.ConsumerGroup` calls it when a rebalance keeps
        this partition with the member: its offsets are then committed with
        the new generation.
        """
        self._reconfigure(commit_generation_id=generation_id, commit_consumer_id=member_id)

    # -- starting and stopping ---------------------------------------------------

    def start(self, start_offset: int) -> Deferred[int | None]:
        """Start fetching from *start_offset* and calling the processor.

        :param start_offset: an offset, or ``OFFSET_EARLIEST`` /
            ``OFFSET_LATEST`` (looked up with ListOffsets), or
            ``OFFSET_COMMITTED``: the group's committed offset, where the
            last processed message committed to the group was the one before.
            Without a committed offset: the earliest offset, or the latest
            if ``auto_offset_reset`` is ``OFFSET_LATEST``.
        :returns: a Deferred that fires with :attr:`last_processed_offset`
            when the consumer is stopped, or fails with the error that stopped
            it (the processor's, or a request's that cannot be retried).
        :raises RestartError: if the consumer is running.
        """
        if not self._allows(ConsumerEvent.START):
            raise RestartError(f"{self!r} is already running")
        if start_offset not in (OFFSET_EARLIEST, OFFSET_LATEST, OFFSET_COMMITTED):
            integer("start_offset", start_offset, 0, 2**63 - 1)
        elif start_offset == OFFSET_COMMITTED and not self.consumer_group:
            raise ValueError("OFFSET_COMMITTED needs a consumer_group")
        start_d: Deferred[int | None] = Deferred()
        self._transition(ConsumerEvent.START)
        self._start_d = start_d
        self._fetch_offset = start_offset
        self._committer.start()
        self._pump.run()
        return start_d

    def stop(self) -> int | None:
        """Stop now: cancel fetching, processing and commits; return :attr:`last_processed_offset`.

        The Deferred from :meth:`start` fires with the same value (a
        :meth:`shutdown` in progress fails with
        :class:`~afkak.common.CancelledError`).

        After an error stopped the consumer (``start()``'s Deferred failed),
        it is still called once, as in afkak 21.5: nothing is left to cancel,
        and it returns the offset.

        :raises RestopError: if the consumer is stopped (or was never started).
        """
        if not self._allows(ConsumerEvent.STOP):
            raise RestopError(f"{self!r} is not running")
        start_d, shutdown_d = self._start_d, self._shutdown_d
        self._halt()
        self._transition(ConsumerEvent.STOP)
        offset = self.last_processed_offset
        if shutdown_d is not None:
            shutdown_d.errback(CancelledError(message="the consumer was stopped"))
        if start_d is not None:
            start_d.callback(offset)
        return offset

    def abandon(self) -> Deferred[None]:
        """Stop now as :meth:`stop` does, but leave a processor call under way alone.

        For a processor that outlived ``max_poll_interval_ms``: its result no
        longer counts, and the returned Deferred fires when it comes (at once
        when no call is under way).  Cancelling that Deferred does not cancel
        the call.
        """
        ended = self._pump.abandon()  # _halt() then leaves the call alone
        self.stop()
        return ended

    def shutdown(self) -> Deferred[int | None]:
        """Stop gracefully: let the processor finish, commit (with a group), then stop.

        Messages fetched but not yet given to the processor are dropped.
        Returns a Deferred firing with :attr:`last_processed_offset`; it fails
        if the final commit fails (the consumer stops nonetheless), or with
        :class:`~afkak.common.RestopError` if the consumer is stopped or
        already shutting down.  After an error stopped it, it is :meth:`stop`.
        """
        if self._state is ConsumerState.FAILED:
            return succeed(self.stop())
        if not self._allows(ConsumerEvent.SHUTDOWN):
            return fail(RestopError(f"{self!r} is not running"))
        shutdown_d: Deferred[int | None] = Deferred()
        self._transition(ConsumerEvent.SHUTDOWN)
        self._shutdown_d = shutdown_d
        self._committer.pause()
        self._pump.drop()
        if self._pump.call is CallState.IDLE:
            self._finish_shutdown()
        return shutdown_d

    def _finish_shutdown(self) -> None:
        """The processor is done: commit (with a group), then stop."""
        Deferred.fromCoroutine(self._committer.commit_last()).addBoth(self._shut_down)

    def _shut_down(self, result: Any) -> None:
        shutdown_d, self._shutdown_d = self._shutdown_d, None
        if shutdown_d is None or self._state is not ConsumerState.SHUTTING_DOWN:
            return  # stopped meanwhile: stop() answered the shutdown
        offset = self.stop()
        if isinstance(result, Failure):
            shutdown_d.errback(result)
        else:
            shutdown_d.callback(offset)

    def _allows(self, event: ConsumerEvent) -> bool:
        return (self._state, event) in TRANSITIONS

    def _transition(self, event: ConsumerEvent) -> None:
        new = TABLE.next(self._state, event)
        if new is not None:
            self._state = new

    def _active(self) -> bool:
        """Running or shutting down."""
        return self._state in (ConsumerState.RUNNING, ConsumerState.SHUTTING_DOWN)

    def _halt(self) -> None:
        """Cancel everything under way; start()'s and shutdown()'s Deferreds are the caller's."""
        self._sensors.forget(self.topic, self.partition)
        self._start_d = None
        self._shutdown_d = None
        self._pump.halt()
        self._committer.halt()

    def _fail(self, failure: Failure) -> None:
        """Stop because of an error that cannot be retried; start()'s Deferred fails.

        The consumer is left FAILED: the application's stop() is still due.
        """
        if not self._allows(ConsumerEvent.FAIL):
            return
        log.warn(
            "{consumer} stopped by an error: {error}",
            consumer=repr(self),
            error=failure.getErrorMessage(),
        )
        start_d, shutdown_d = self._start_d, self._shutdown_d
        self._halt()
        self._transition(ConsumerEvent.FAIL)
        if shutdown_d is not None:
            shutdown_d.errback(failure)
        if start_d is not None:
            start_d.errback(failure)

    # -- fetching and processing -------------------------------------------------

    def _fetch(self) -> Deferred[FetchedRecords]:
        """The next response from the fetch position (a special one looked up first)."""
        offset = self._fetch_offset
        if offset < 0:
            resolved = Deferred.fromCoroutine(self._resolve(offset))
            return resolved.addCallback(self._fetcher.next_records)
        return self._fetcher.next_records(offset)

    async def _resolve(self, offset: int) -> int:
        """*offset*, or the offset a special value (committed, earliest, latest) stands for."""
        if offset == OFFSET_COMMITTED:
            offset = await self._committer.committed_offset()
        if offset < 0:
            offset = await self._fetcher.offset_at(offset)
        return offset

    def _fetched(self, fetched: FetchedRecords) -> None:
        self._fetch_offset = fetched.next_offset
        self._high_watermark = fetched.high_watermark
        self._last_stable_offset = fetched.last_stable_offset
        self._sensors.position(
            self.topic,
            self.partition,
            fetched.next_offset,
            fetched.high_watermark,
            fetched.last_stable_offset,
        )

    def _process(self, messages: list[SourcedMessage]) -> Any:
        self._sensors.consumed(len(messages))
        return self.processor(self, messages)

    def _processor_done(self, refetch_from: int | None) -> None:
        if self._shutdown_d is not None:
            self._finish_shutdown()
        elif refetch_from is not None:
            self._reposition(refetch_from)  # the rest is fetched again
        else:
            self._pump.run()

    # -- position control (the Java client's and aiokafka's names) -----------------------

    @property
    def topic_partition(self) -> TopicAndPartition:
        """The partition this consumer reads."""
        return TopicAndPartition(self.topic, self.partition)

    def assignment(self) -> frozenset[TopicAndPartition]:
        """The partitions this consumer reads: its own one."""
        return frozenset({self.topic_partition})

    def _own(self, tp: Any) -> TopicAndPartition:
        key = partition_of(tp)
        if key != self.topic_partition:
            raise ValueError(f"{key} is not assigned to {self!r}")
        return key

    def _own_all(self, tps: tuple[Any, ...]) -> list[TopicAndPartition]:
        return [self._own(tp) for tp in partitions_of(tps)]

    def seek(self, tp: Any, offset: int) -> None:
        """Fetch *tp* from *offset* on.

        Records fetched from before it and not yet given to the processor are
        dropped; a processor call under way finishes, and the next call gets
        records from *offset* on.  Commits follow the processed records (or
        :meth:`commit` with explicit offsets).

        :raises ValueError: *tp* is not this consumer's partition, *offset* is
            negative, or the consumer is not running (pass the offset to
            :meth:`start` instead).
        """
        self._own(tp)
        self._reposition(offset_value(offset))

    def seek_to_beginning(self, *tps: Any) -> None:
        """Fetch from the earliest offset (looked up when fetching); no *tps*: every partition."""
        self._own_all(tps)
        self._reposition(OFFSET_EARLIEST)

    def seek_to_end(self, *tps: Any) -> None:
        """Fetch from the log end (looked up when fetching); no *tps*: every partition."""
        self._own_all(tps)
        self._reposition(OFFSET_LATEST)

    def _reposition(self, offset: int) -> None:
        if not self._active():
            raise ValueError(f"{self!r} is not running: pass the offset to start()")
        self._pump.seek(offset)
        self._fetch_offset = offset
        self._pump.run()

    def pause(self, *tps: Any) -> None:
        """Stop fetching and delivering (a processor call under way finishes); keeps what
        was fetched.  Holds across :meth:`stop` and :meth:`start` until :meth:`resume`."""
        if self._own_all(tps):
            self._pump.pause()

    def resume(self, *tps: Any) -> None:
        """Undo :meth:`pause`: fetch and deliver again."""
        if self._own_all(tps):
            self._pump.resume()

    def paused(self) -> frozenset[TopicAndPartition]:
        """The partitions paused: this consumer's, or none."""
        return self.assignment() if self._pump.gate is GateState.PAUSED else frozenset()

    def position(self, tp: Any) -> Deferred[int]:
        """The offset of the next record the processor will be given.

        Records fetched ahead and not yet delivered do not count.  Fires at
        once unless the position is a special value (committed, earliest,
        latest) still to be looked up.
        """
        self._own(tp)
        if not self._active():
            raise ValueError(f"{self!r} is not running")
        offset = self._pump.position(self._fetch_offset)
        if offset >= 0:
            return succeed(offset)
        return Deferred.fromCoroutine(self._resolve(offset))

    def _start_with(self, lookup: StartOffsets) -> None:
        """Take the committed (or reset) offset from *lookup*, shared with the
        group's other new partitions, at the next ``start(OFFSET_COMMITTED)``."""
        self._committer.start_offsets = lookup

    def committed(self, tp: Any) -> Deferred[OffsetAndMetadata | None]:
        """The group's committed offset of *tp* and its metadata (None: none committed)."""
        key = self._own(tp)
        group = self.consumer_group
        if not group:
            return fail(InvalidConsumerGroupError(f"{self!r} has no consumer_group"))
        d = Deferred.fromCoroutine(
            committed_offsets(self.client, group, [key], self._options.isolation == READ_COMMITTED)
        )
        return d.addCallback(lambda found: found[key])

    def offsets_for_times(
        self, timestamps: Mapping[Any, int]
    ) -> Deferred[dict[TopicAndPartition, int | None]]:
        """For each partition, the first offset whose record timestamp is at or after the
        given milliseconds (None: no such record); then :meth:`seek` there."""
        checked = timestamps_of(timestamps)
        for tp in checked:
            self._own(tp)
        return Deferred.fromCoroutine(
            offsets_for_times(self.client, checked, self._options.isolation)
        )

    # -- commits ---------------------------------------------------------------------

    @overload
    def commit(self) -> Deferred[int | None]: ...

    @overload
    def commit(
        self, offsets: Mapping[Any, int | OffsetAndMetadata]
    ) -> Deferred[dict[TopicAndPartition, OffsetAndMetadata]]: ...

    def commit(self, offsets: Any = None) -> Deferred[Any]:
        """Commit :attr:`last_processed_offset` if it differs from :attr:`last_committed_offset`.

        With *offsets* (``{tp: offset or OffsetAndMetadata}``, the offset
        being the next one to consume, as in the Java client), commit those
        instead, with their metadata; the Deferred fires with them.  With
        auto-commit on, the next auto-commit stores the processed position
        again, as the Java client's does.

        The group stores the next offset to consume (the last processed one
        plus one).  A smaller offset than the group has may be committed, by
        design.  Retriable errors are retried per the ``request_retry_*``
        settings.

        :returns: a Deferred firing with the committed (last processed)
            offset; at once when there is nothing new to commit.  While a
            commit is in flight, it fails with
            :class:`~afkak.common.OperationInProgress` if messages were
            processed since that commit was sent (its ``deferred`` fires when
            the commit in flight completes); otherwise it fires with the
            outcome of the commit in flight.
        """
        explicit = None if offsets is None else commit_offsets(offsets)
        if explicit is not None:
            for tp in explicit:
                self._own(tp)
        if not self.consumer_group:
            return fail(InvalidConsumerGroupError(f"{self!r} has no consumer_group to commit to"))
        if explicit is None:
            return self._committer.commit()
        return self._committer.commit_chosen(explicit)
