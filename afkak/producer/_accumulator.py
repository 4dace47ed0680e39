"""The producer's record accumulator: every send accepted and not yet settled.

As Kafka's Java ``RecordAccumulator`` (and aiokafka's ``drain_by_nodes``):
records are appended to their partition's open batch (:meth:`append`);
:meth:`ready` says which partitions may send now (linger, batch triggers,
back-off, in-flight room); :meth:`drain` takes the next batch of each for
the brokers leading them, giving it its producer id, epoch and sequence;
:meth:`expired` hands over the batches whose delivery timeout passed;
:meth:`release` frees a settled batch's buffer space.  The buffer bound
lives here too: sends beyond ``buffer_memory`` wait (for ``max_block_ms`` at
most), as do sends for a topic whose metadata is being loaded.

The :class:`~._producer.Producer` checks arguments, routes records (metadata
and partitioners) and is the transaction facade; the :class:`~._sender.Sender`
turns drained batches into Produce requests and their answers into results.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import MessageSizeTooLargeError
from afkak._errors import BufferExhaustedError, ClientError, DeliveryTimeoutError
from afkak.client import ProducerClient
from afkak.metrics import ProducerSensors, registry_of
from afkak.records import BATCH_HEADER_SIZE

from ._batch import RECORD_OVERHEAD, Buffer, ProducerBatch
from ._deferred import SendDeferred
from ._identity import ProducerIdentity
from ._options import Options
from ._partition import PartitionState, TopicState
from ._record_runs import Run, headers_size, record_runs, record_sizes
from ._split import joined, pieces, split_batch, values_size
from ._transaction import TransactionManager
from ._waiters import track_all as _track_all, untrack as _untrack

log = Logger()
NEVER = float("inf")


class Drainer(Protocol):
    """What drains the accumulator (the Sender)."""

    def wake(self, delay: float = 0.0) -> None: ...

    def appended(self) -> None: ...

    def stop(self) -> None: ...


#: What a waiting send carries: one ``send()`` record, one key's values
#: (``send_messages``), or records with a key, headers and timestamp each
#: (``send_records``: *key*, *headers*, *timestamp* and *partition* are then
#: per-record sequences or None).
ONE, VALUES, RECORDS = 0, 1, 2


class Placer(Protocol):
    """What routes a send that got buffer space (the producer's topic routes)."""

    def place(self, pending: Pending, now: float) -> None: ...


class Pending:
    """A send waiting for buffer space or for its topic's metadata."""

    __slots__ = (
        "topic",
        "key",
        "values",
        "headers",
        "timestamp",
        "partition",
        "d",
        "size",
        "kind",
        "since",
    )

    def __init__(
        self,
        topic: str,
        key: Any,
        values: Sequence[Buffer | None],
        headers: Any,
        timestamp: Any,
        partition: Any,
        size: int,
        kind: int,
    ) -> None:
        self.topic = topic
        self.key = key
        self.values = values
        self.headers = headers
        self.timestamp = timestamp
        self.partition = partition
        #: What the caller got: fires once the send is acknowledged or refused.
        self.d: Deferred[Any] = SendDeferred()
        self.size = size
        self.kind = kind
        #: Reactor time of the call: waits for buffer space and metadata count
        #: toward the delivery timeout.
        self.since = 0.0


class RecordAccumulator:
    """Batches per partition, the buffer bound, and what may be sent when.

    The only owner of batch and buffer state: sends come in through
    :meth:`append_one`, :meth:`append_values` and :meth:`append_records`,
    which wait (in order) for buffer space when there is none; the
    :attr:`placer` routes those once they get it.
    """

    __slots__ = (
        "_active",
        "_batch_mode",
        "_batch_size",
        "_block_timer",
        "_blocked",
        "_buffer_memory",
        "_buffered",
        "_client",
        "_expire_all",
        "_fast_limit",
        "_flush_waiters",
        "_flushing",
        "_limit",
        "_linger",
        "_max_request_size",
        "_outstanding",
        "_reactor",
        "_seconds",
        "_sendable",
        "_split_above",
        "_stopped",
        "_unrouted",
        "_unsent_bytes",
        "_unsent_count",
        "identity",
        "options",
        "placer",
        "sender",
        "sensors",
        "transaction",
    )

    def __init__(self, client: ProducerClient, options: Options) -> None:
        self._client = client
        self._reactor = client.reactor
        self._seconds = client.reactor.seconds
        self.options = options
        #: Routes the sends that waited for buffer space (the producer's topic routes).
        self.placer: Placer | None = None
        #: Drains this accumulator: the producer's Sender.
        self.sender: Drainer | None = None
        #: The producer id, epoch and sequences' source (None: not idempotent).
        self.identity: ProducerIdentity | TransactionManager | None = None
        self.transaction: TransactionManager | None = None
        max_request_size = self._max_request_size = (
            client.max_request_size
            if options.max_request_size is None
            else options.max_request_size
        )
        # Batches of small records are cut well below the limit (the size is an
        # estimate); larger sends are measured exactly against it (see _split).
        self._batch_size = min(options.batch_size, max_request_size // 4)
        self._split_above = max_request_size // 2
        self._linger = options.linger
        self._limit = options.max_in_flight
        self._buffer_memory = options.buffer_memory
        self._batch_mode = options.batch_send
        # Sends append to the open batch inline below this size (never in batch mode).
        self._fast_limit = 0 if self._batch_mode else self._batch_size
        # Bytes of records accepted and not settled (estimated, uncompressed).
        self._buffered = 0
        #: Recorded per request and per batch (``producer-metrics``), the Sender's too.
        self.sensors = registry_of(client).shared(ProducerSensors)
        self.sensors.buffer(self._buffer_memory, lambda: self._buffered)
        # Sends accepted and not settled.
        self._outstanding = 0
        # Sends waiting for buffer space, in call order, and the DelayedCall failing
        # those that waited too long.
        self._blocked: deque[Pending] = deque()
        self._block_timer: Any = None
        # Topic -> sends waiting for its metadata (counted in the buffer).
        self._unrouted: dict[str, list[Pending]] = {}
        # Partitions with an open or ready batch.
        self._active: set[PartitionState] = set()
        # While a flush waits, every drain sends every open batch.
        self._flushing = False
        self._expire_all = False
        self._unsent_count = 0
        self._unsent_bytes = 0
        self._flush_waiters: list[Deferred[None]] = []
        self._sendable: list[PartitionState] = []
        self._stopped = False

    @property
    def buffered(self) -> int:
        """Bytes of records accepted and not settled (estimated, uncompressed)."""
        return self._buffered

    @property
    def outstanding(self) -> int:
        """Sends accepted and not settled."""
        return self._outstanding

    @property
    def blocked(self) -> int:
        """Sends waiting for buffer space."""
        return len(self._blocked)

    def wake(self, delay: float = 0.0) -> None:
        """Have the sender drain in *delay* seconds (or sooner)."""
        if self.sender is not None:
            self.sender.wake(delay)

    # -- taking sends in ---------------------------------------------------------

    def append_one(
        self,
        topic: str,
        route: TopicState | None,
        partition: int | None,
        key: Buffer | None,
        value: Buffer | None,
        headers: Any,
        timestamp: int | None,
    ) -> Deferred[Any]:
        """Take one ``send()`` record (checked) for *partition* (None: the sticky one).

        Appended at once if the buffer has room and its topic's *route* is
        known, else it waits (in order) for them.  Returns the Deferred of its
        :class:`RecordMetadata`.
        """
        size = RECORD_OVERHEAD + (len(value) if value is not None else 0)
        if key is not None:
            size += len(key)
        if headers:
            size += headers_size(headers)
        buffered = self._buffered
        if route is None or self._blocked or (buffered and buffered + size > self._buffer_memory):
            pending = Pending(topic, key, (value,), headers, timestamp, partition, size, ONE)
            return self.accept(pending)
        d: Deferred[Any] = SendDeferred()
        now = self._seconds()
        self._outstanding += 1
        self._buffered = buffered + size
        if timestamp is None:
            timestamp = int(now * 1000)
        part = route.parts.get(route.sticky if partition is None else partition)
        batch = None if part is None else part.open
        if (
            batch is None
            or batch.size + size >= self._fast_limit
            or headers
            or batch.headers is not None
            or (batch.keys is None and key is not None)
        ):
            if partition is None:
                partition = self._stick(route, size)
            self._append(route, partition, key, (value,), headers, timestamp, now, d, size, True)
            self._appended()
            return d
        # The hottest path (ProducerBatch.append's work for one record, inlined).
        values = batch.values
        batch.plain = False
        batch.record_waiters.append(d)
        batch.record_indexes.append(len(values))
        values.append(value)
        if batch.keys is not None:
            batch.keys.append(key)
        batch.timestamps.append(timestamp)
        batch.size += size
        if _untrack is not None:
            _untrack(d)  # until its batch settles: see ._waiters
        return d

    def _stick(self, route: TopicState, size: int) -> int:
        """An unkeyed record's partition: the last one's while its open batch has room,
        as in Java's producer (KIP-480), else the partitioner's next."""
        sticky = route.parts.get(route.sticky)
        if sticky is not None and sticky.open is not None:
            if sticky.open.size + size < self._fast_limit:
                return route.sticky
        partition = route.sticky = route.choose(None, route.partitions)
        return partition  # type: ignore[no-any-return]

    def append_values(
        self,
        topic: str,
        route: TopicState | None,
        partition: int | None,
        key: Buffer | None,
        values: Sequence[Buffer | None],
        size: int,
    ) -> Deferred[Any]:
        """Take a ``send_messages`` call's *values* (checked, *size* bytes with their
        keys, see :func:`~._split.values_size`), each with *key*, for *partition*.

        Appended at once if the buffer has room, else it waits (in order).
        """
        buffered = self._buffered
        if route is None or self._blocked or (buffered and buffered + size > self._buffer_memory):
            return self.accept(Pending(topic, key, values, (), None, partition, size, VALUES))
        assert partition is not None  # the route's choice
        d: Deferred[Any] = SendDeferred()
        now = self._seconds()
        self._outstanding += 1
        self._buffered = buffered + size
        part = route.parts.get(partition)
        batch = None if part is None else part.open
        if batch is None or batch.size + size >= self._fast_limit or batch.headers is not None:
            self._append(route, partition, key, values, (), int(now * 1000), now, d, size, False)
            self._appended()
        elif batch.plain and key is None and len(values) == 1 and batch.waiters:
            # The hottest path (ProducerBatch.add_messages' work, inlined).
            batch.values.append(values[0])
            batch.timestamps.append(int(now * 1000))
            batch.waiters.append(d)
            batch.size += size
            if _untrack is not None:
                _untrack(d)  # until its batch settles: see ._waiters
        else:
            batch.add_messages(key, values, int(now * 1000), size, d)
        return d

    def append_records(
        self,
        topic: str,
        route: TopicState | None,
        partitions: Sequence[int | None] | None,
        keys: Sequence[Buffer | None] | None,
        values: Sequence[Buffer | None],
        headers: Sequence[Any] | None,
        timestamps: Sequence[int | None] | None,
    ) -> Deferred[None]:
        """Take records (checked) each with its partition, key, headers and timestamp
        (``send_records``), batched per partition whatever their keys.

        Appended at once if the buffer has room, else they wait (in order).
        Returns one Deferred, firing with None once every record is written
        or failing with the first failure.
        """
        if route is None or self._blocked:
            size = sum(record_sizes(keys, values, headers))
            return self.accept(
                Pending(topic, keys, values, headers, timestamps, partitions, size, RECORDS)
            )
        now = self._seconds()
        size, largest, runs = record_runs(
            partitions, keys, values, headers, timestamps, int(now * 1000), self._batch_size
        )
        pending = Pending(topic, keys, values, headers, timestamps, partitions, size, RECORDS)
        buffered = self._buffered
        if buffered and buffered + size > self._buffer_memory:
            return self.accept(pending)
        self._outstanding += 1
        self._buffered = buffered + size
        self._append_runs(route, pending, largest, runs, now)
        self._appended()
        return pending.d

    def _appended(self) -> None:
        """A call appended outside the open batches' fast path (a new batch, maybe): the
        sender may write at once (an idle producer, in the turn of its ``send()``).
        Sends placed later (after metadata or buffer space) do not ask: their batch
        waits for the next drain, so it is dated by its opening."""
        if self.sender is not None:
            self.sender.appended()

    def accept(self, pending: Pending) -> Deferred[Any]:
        """Take a send to place later: it waits (in order) for buffer space, then the
        :attr:`placer` routes it.  Returns what the caller gets (``pending.d``)."""
        if self._stopped:
            return fail(ClientError("the producer has been stopped"))
        if pending.kind != RECORDS and _untrack is not None:
            # Waiting (for metadata, or space) untracked, as in its batch later:
            # a producer's first sends, before its topics' metadata, can number
            # thousands, and would feed the full collections.  refuse() shows
            # it again; a placed one goes on into its batch.
            _untrack(pending.d)
            _untrack(pending)
        now = pending.since = self._seconds()
        if pending.kind == ONE and pending.timestamp is None:
            pending.timestamp = int(now * 1000)
        self._outstanding += 1
        if self._blocked or (
            self._buffered and self._buffered + pending.size > self._buffer_memory
        ):
            self._blocked.append(pending)
            if self._block_timer is None:
                self._arm_block_timer()
        else:
            self._buffered += pending.size
            self._admit(pending, now)
        return pending.d

    def _admit(self, pending: Pending, now: float) -> None:
        assert self.placer is not None  # set by the producer
        self.placer.place(pending, now)

    def wait_for_route(self, pending: Pending) -> bool:
        """Keep *pending* until its topic's metadata arrives; whether it is the first."""
        waiting = self._unrouted.get(pending.topic)
        if waiting is None:
            self._unrouted[pending.topic] = [pending]
            return True
        waiting.append(pending)
        return False

    def take_unrouted(self, topic: str) -> list[Pending]:
        """The sends that waited for *topic*'s metadata (now loaded), in order."""
        return self._unrouted.pop(topic, [])

    def place(self, route: TopicState, pending: Pending, partition: Any, now: float) -> None:
        """Append *pending* (holding buffer space) at *partition* (None: the sticky one;
        for records, each one's), the delivery timeout counting from its call."""
        if pending.kind == RECORDS:
            _, largest, runs = record_runs(
                partition,
                pending.key,
                pending.values,
                pending.headers,
                pending.timestamp,
                int(now * 1000),
                self._batch_size,
            )
            self._append_runs(route, pending, largest, runs, now)
            return
        if partition is None:
            partition = self._stick(route, pending.size)
        timestamp = pending.timestamp
        if timestamp is None:
            timestamp = int(pending.since * 1000)
        self._append(
            route,
            partition,
            pending.key,
            pending.values,
            pending.headers,
            timestamp,
            now,
            pending.d,
            pending.size,
            pending.kind == ONE,
        )
        part = route.parts.get(partition)
        if part is not None:
            batch = part.open or (part.ready[-1] if part.ready else None)
            if batch is not None and batch.opened > pending.since:
                batch.opened = pending.since

    def _append_runs(
        self, route: TopicState, pending: Pending, largest: int, runs: list[Run], now: float
    ) -> None:
        """Append a ``send_records`` call's *runs* (:func:`~._record_runs.record_runs`;
        *largest*: its largest record's size); *pending.d* fires once each run's batch
        is written."""
        if largest > self._max_request_size - BATCH_HEADER_SIZE:
            error = MessageSizeTooLargeError(
                f"a record to {route.name} is larger than max_request_size"
                f" ({self._max_request_size} bytes)"
            )
            self.refuse(pending.d, pending.size, Failure(error))
            return
        settled: list[Deferred[Any]] = []
        for partition, keys, values, headers, timestamps, size in runs:
            run_d: Deferred[Any] = Deferred()
            settled.append(run_d)
            self._append_run(route, partition, keys, values, headers, timestamps, size, now, run_d)
        self._outstanding += len(settled) - 1  # each run settles as one send
        joined(pending.d, settled)
        pending.d.addCallback(_nothing)

    def _append_run(
        self,
        route: TopicState,
        partition: int,
        keys: list[Buffer | None] | None,
        values: list[Buffer | None],
        headers: list[Any] | None,
        timestamps: list[int],
        size: int,
        now: float,
        d: Deferred[Any],
    ) -> None:
        """Append records that fit one batch to *partition*'s open batch (or a new one)."""
        part, batch = self._batch_for(route, partition, size, now)
        batch.add_records(keys, values, headers, timestamps, size, d)
        if batch.size >= self._batch_size:
            part.seal()
            self.wake()
        if self._batch_mode:
            self._count_unsent(len(values), size)

    def _append(
        self,
        route: TopicState,
        partition: int,
        key: Buffer | None,
        values: Sequence[Buffer | None],
        headers: Any,
        timestamp: int,
        now: float,
        d: Deferred[Any],
        size: int,
        record: bool,
    ) -> None:
        """Append values (already counted in the buffer) to the partition's open batch."""
        if size > self._split_above:
            # A header adds its name and value, and their lengths (two varints).
            headers_size = sum(10 + len(n.encode()) + (len(v) if v else 0) for n, v in headers)
            runs = pieces(values, key, headers_size, self._max_request_size)
            if runs is None:
                error = MessageSizeTooLargeError(
                    f"a record to {route.name} is larger than max_request_size"
                    f" ({self._max_request_size} bytes)"
                )
                self.refuse(d, size, Failure(error))
                return
            if len(runs) > 1:
                self._append_pieces(route, partition, key, runs, timestamp, now, d)
                return
        part, batch = self._batch_for(route, partition, size, now)
        batch.append(key, values, headers, timestamp, size, d, record)
        if batch.size >= self._batch_size:
            part.seal()
            self.wake()
        if self._batch_mode:
            # afkak 21's byte trigger counts the messages' bytes (values and headers).
            n = len(values)
            overhead = n * (RECORD_OVERHEAD + (len(key) if key is not None else 0))
            self._count_unsent(n, size - overhead)

    def _append_pieces(
        self,
        route: TopicState,
        partition: int,
        key: Buffer | None,
        runs: list[Sequence[Buffer | None]],
        timestamp: int,
        now: float,
        d: Deferred[Any],
    ) -> None:
        """Append a ``send_messages`` call too large for one batch as several, in order."""
        parts: list[Deferred[Any]] = []
        self._outstanding += len(runs) - 1  # each piece settles as one send
        for run in runs:
            part_d: Deferred[Any] = Deferred()
            parts.append(part_d)
            size = values_size(route.name, run)
            if key is not None:
                size += len(run) * len(key)
            self._append(route, partition, key, run, (), timestamp, now, part_d, size, False)
        joined(d, parts)

    def _batch_for(
        self, route: TopicState, partition: int, size: int, now: float
    ) -> tuple[PartitionState, ProducerBatch]:
        """*partition*'s open batch if *size* more bytes fit it, else a new one."""
        part = route.parts.get(partition)
        if part is None:
            part = route.part(partition)
        batch = part.open
        if batch is None or (batch.size + size > self._batch_size and batch.values):
            batch = self._new_batch(route, part, now)
        return part, batch

    def _new_batch(self, route: TopicState, part: PartitionState, now: float) -> ProducerBatch:
        sealed = part.open is not None
        if sealed:
            part.seal()
        batch = part.new_batch(now)
        if sealed:
            self.wake()
        else:
            self._active.add(part)
            identity = self.identity
            if identity is not None and not identity.ready:
                self.wake()  # the drain asks for it (not now: this is inside an append)
            if self._linger is not None:
                self.wake(self._linger)
        # A new batch is a good moment to notice a change in the partition count.
        partitions = self._client.topic_partitions.get(route.name)
        if partitions and partitions is not route.partitions:
            route.repartition(partitions)
        return batch

    def _count_unsent(self, n: int, size: int) -> None:
        """Batch mode: count appended records; send everything once a trigger is reached."""
        self._unsent_count += n
        self._unsent_bytes += size
        options = self.options
        if (options.batch_every_n and self._unsent_count >= options.batch_every_n) or (
            options.batch_every_b and self._unsent_bytes >= options.batch_every_b
        ):
            self.expire_lingers()

    def expire_lingers(self) -> None:
        """Let every open batch go at the next drain (flush, batch triggers)."""
        self._expire_all = True
        self.wake()

    # -- what may go, and taking it ------------------------------------------------

    def ready(self, now: float) -> float:
        """Find the partitions that may send now (for :meth:`drain`); when to look again.

        Seals the open batches whose linger passed (or all, when flushing or
        a batch trigger fired).
        """
        linger = self._linger
        expire_all = self._expire_all or self._flushing
        self._expire_all = False
        batch_mode = self._batch_mode
        if batch_mode:
            expire_all = self._batch_triggered(now, expire_all)
        wake_at = NEVER
        sendable = self._sendable = []
        for part in list(self._active):
            if part.open is not None:
                wake_at = min(wake_at, self._seal_if_due(part, expire_all, now))
            if not part.ready:
                if part.open is None:
                    self._active.discard(part)
                continue
            if part.retry_at > now:
                wake_at = min(wake_at, part.retry_at)
                continue
            if batch_mode and _held(part):
                if linger is not None:
                    wake_at = min(wake_at, _first_created(part) + linger)
                continue
            sendable.append(part)
        return wake_at

    def _batch_triggered(self, now: float, expire_all: bool) -> bool:
        """afkak's batch mode sends nothing until a trigger fires (count, bytes, or its
        timer), then everything: full batches sealed meanwhile wait too."""
        linger = self._linger
        if not expire_all and linger is not None:
            expire_all = any(_first_created(p) + linger <= now for p in self._active if _held(p))
        if expire_all:
            self._unsent_count = self._unsent_bytes = 0
            for part in self._active:
                for waiting in part.ready:
                    waiting.created = -NEVER
        return expire_all

    def _seal_if_due(self, part: PartitionState, expire_all: bool, now: float) -> float:
        """Seal *part*'s open batch if its linger passed and it may go; when to look again."""
        batch = part.open
        assert batch is not None
        if expire_all:
            batch.created = -NEVER
        if part.retry_at > now:
            return part.retry_at
        if part.ready or part.in_flight >= self._limit:
            return NEVER
        if batch.created == -NEVER:
            part.seal()
        elif self._linger is not None:
            due = batch.created + self._linger
            if due > now:
                return due
            part.seal()
        return NEVER

    def drain(self, leaders: Any) -> tuple[dict[Any, list[ProducerBatch]], list[PartitionState]]:
        """One request's worth per broker: the next batch of each ready partition.

        *leaders* maps a partition's key to its leader.  Returns the batches
        by broker and the ready partitions without a known leader; call again
        (after sending) while it returns batches.
        """
        requests: dict[Any, list[ProducerBatch]] = {}
        leaderless: list[PartitionState] = []
        still = []
        for part in self._sendable:
            broker = leaders.get(part.key)
            if broker is None:
                leaderless.append(part)
                continue
            batch = self._take(part)
            if batch is not None:
                requests.setdefault(broker, []).append(batch)
                if part.ready:
                    still.append(part)
        self._sendable = still
        return requests, leaderless

    def _take(self, part: PartitionState) -> ProducerBatch | None:
        """The partition's next batch to send now, if any may go."""
        if not part.ready or part.in_flight >= self._limit:
            return None
        head = part.ready[0]
        if not self._may_send(part, head):
            return None
        part.ready.popleft()
        if head.data is None:
            self._encode(part, head)
        part.in_flight += 1
        head.attempts += 1
        return head

    def _may_send(self, part: PartitionState, head: ProducerBatch) -> bool:
        """Whether *part*'s *head* batch may go now (its sequences restarted where due)."""
        if head.attempts and part.in_flight:
            return False  # a retry goes alone, after what is in flight settled
        identity = self.identity
        txn = self.transaction
        if part.in_flight and not part.acked_next and (identity is not None or txn is not None):
            # Nothing acknowledged at this epoch yet: a broker that does not know the
            # producer takes any sequence, so a later batch would be written before a
            # first one refused retriably (whose retry then gets OUT_OF_ORDER_SEQUENCE).
            return False
        if txn is not None and not _in_transaction(part, txn):
            return False
        return identity is None or _sequences_current(part, identity)

    def _encode(self, part: PartitionState, head: ProducerBatch) -> None:
        options = self.options
        if self.identity is None:
            head.encode(options.codec, -1, -1, -1, False, options.compression_level)
            return
        head.encode(
            options.codec,
            part.producer_id,
            part.producer_epoch,
            part.take_sequence(len(head.values)),
            self.transaction is not None,
            options.compression_level,
        )

    def requeue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a batch to retry back in its place; its partition waits until *retry_at*."""
        part = batch.part
        part.requeue(batch)
        self._active.add(part)
        part.retry_at = max(part.retry_at, retry_at)

    def split(self, batch: ProducerBatch) -> None:
        """A batch the broker refused as too large goes again as two, in its place, at once."""
        halves, more = split_batch(
            batch, self.options.codec, self.options.compression_level, self.transaction is not None
        )
        self._outstanding += more
        part = batch.part
        for half in reversed(halves):  # each goes before what has its order
            part.requeue(half)
        self._active.add(part)

    def expired(self, now: float) -> tuple[list[ProducerBatch], float]:
        """Remove the batches (not in flight) whose delivery timeout passed; when the next one
        expires."""
        timeout = self.options.delivery_timeout
        next_expiry = NEVER
        expired: list[ProducerBatch] = []
        for part in list(self._active):
            oldest = part.oldest()
            if oldest is None:
                continue
            if oldest + timeout <= now:
                for batch in part.expire(now - timeout):
                    if batch.data is not None and self.identity is not None:
                        part.bump = True  # later sequences must not wait for this batch's
                    expired.append(batch)
                oldest = part.oldest()
                if oldest is None:
                    if not part.in_flight:
                        self._active.discard(part)
                    continue
            next_expiry = min(next_expiry, oldest + timeout)
        return expired, next_expiry

    # -- settling ------------------------------------------------------------------

    def release(self, batch: ProducerBatch) -> None:
        """A batch was settled (its sends fired): free its buffer space, let waiting sends in."""
        self._buffered -= batch.size - BATCH_HEADER_SIZE
        self._outstanding -= len(batch.waiters) + len(batch.record_waiters)
        if self._blocked:  # (checked here: a call saved per awaited send)
            self._unblock()
        if self._flush_waiters:
            self._check_flushed()

    def fail(self, batch: ProducerBatch, failure: Failure) -> None:
        """Fail a batch's sends and release it (a transaction cannot commit after it)."""
        self.sensors.failed(batch.topic, batch.count or len(batch.values or ()))
        batch.fail(failure)
        self.release(batch)
        if self.transaction is not None:
            self.transaction.send_failed(failure)

    def fail_partition(self, part: PartitionState, failure: Failure) -> None:
        """Fail every batch of *part* not in flight."""
        for batch in part.drop_all():
            self.fail(batch, failure)
        self._active.discard(part)

    def identity_failed(self, failure: Failure) -> None:
        """No producer id: every batch waiting for one fails."""
        log.error(
            "No producer id for the idempotent producer: {error}", error=failure.getErrorMessage()
        )
        for part in list(self._active):
            self.fail_partition(part, failure)

    def refuse(self, d: Deferred[Any], size: int, failure: Failure) -> None:
        """Fail a send that was counted in the buffer but never appended."""
        self._buffered -= size
        self._outstanding -= 1
        if _track_all is not None:
            _track_all([d])  # (untracked while it waited: see accept)
        d.errback(failure)
        self._unblock()
        self._check_flushed()

    def refuse_unrouted(self, topic: str, failure: Failure) -> None:
        """The sends waiting for *topic*'s metadata fail (it could not be loaded)."""
        for pending in self._unrouted.pop(topic, []):
            self.refuse(pending.d, pending.size, failure)

    def _unblock(self) -> None:
        blocked = self._blocked
        if not blocked or self._stopped:
            return
        now = self._seconds()
        self._expire_waits(now)  # space that comes as a wait ends comes too late for it
        while blocked and (
            not self._buffered or self._buffered + blocked[0].size <= self._buffer_memory
        ):
            pending = blocked.popleft()
            self._buffered += pending.size
            self._admit(pending, now)

    def _check_flushed(self) -> None:
        if self._outstanding or not self._flush_waiters:
            return
        waiters, self._flush_waiters = self._flush_waiters, []
        self._flushing = False
        for d in waiters:
            d.callback(None)

    def flush(self) -> Deferred[None]:
        """Send everything now; fires once no send is outstanding."""
        if not self._outstanding:
            return succeed(None)
        d: Deferred[None] = Deferred()
        self._flush_waiters.append(d)
        self._flushing = True
        self.expire_lingers()
        return d

    def drop_unsent(self, failure: Failure) -> None:
        """Fail every send not in flight (an aborted or failed transaction's).

        Those waiting for buffer space go first: space freed by the others
        must not let them into a batch of the next transaction.
        """
        blocked, self._blocked = self._blocked, deque()
        self._disarm_block_timer()
        for part in list(self._active):
            self.fail_partition(part, failure)
        self._refuse_waiting(blocked, failure)

    def stop(self, failure: Failure) -> None:
        """Stop the sender (what is in flight fails as cancelled), then fail everything
        else with *failure*; freed space admits nothing any more."""
        self._stopped = True
        if self.sender is not None:
            self.sender.stop()
        batches: list[ProducerBatch] = []
        for part in self._active:
            batches.extend(part.drop_all())
        self._active.clear()
        for batch in batches:
            batch.fail(failure)
            self.release(batch)
        blocked, self._blocked = self._blocked, deque()
        self._disarm_block_timer()
        self._refuse_waiting(blocked, failure)
        self._check_flushed()

    def _refuse_waiting(self, blocked: deque[Pending], failure: Failure) -> None:
        unrouted, self._unrouted = self._unrouted, {}
        for waiting in unrouted.values():
            for pending in waiting:
                self.refuse(pending.d, pending.size, failure)
        for pending in blocked:  # not counted in the buffer yet
            self.refuse(pending.d, 0, failure)

    # -- bounding the wait for buffer space --------------------------------------

    def _block_limit(self) -> tuple[float, bool]:
        """Seconds a send may wait for buffer space; whether *max_block_ms* is the bound."""
        max_block, delivery = self.options.max_block, self.options.delivery_timeout
        return (max_block, True) if max_block <= delivery else (delivery, False)

    def _arm_block_timer(self) -> None:
        """Time out the oldest waiting send (they wait in call order)."""
        limit, _ = self._block_limit()
        delay = max(0.0, self._blocked[0].since + limit - self._seconds())
        self._block_timer = self._reactor.callLater(delay, self._block_expired)

    def _disarm_block_timer(self) -> None:
        if self._block_timer is not None:
            if self._block_timer.active():
                self._block_timer.cancel()
            self._block_timer = None

    def _block_expired(self) -> None:
        self._block_timer = None
        self._expire_waits(self._seconds())
        if self._blocked and self._block_timer is None:
            self._arm_block_timer()

    def _expire_waits(self, now: float) -> None:
        """Fail the waiting sends whose wait for buffer space has ended (the oldest
        first: they wait in call order, each as long)."""
        blocked = self._blocked
        limit, by_max_block = self._block_limit()
        while blocked and blocked[0].since + limit <= now:
            pending = blocked.popleft()
            # (not counted in the buffer yet)
            self.refuse(pending.d, 0, self._wait_failure(pending, limit, by_max_block))

    def _wait_failure(self, pending: Pending, limit: float, by_max_block: bool) -> Failure:
        """Why *pending* fails after waiting *limit* seconds for buffer space."""
        if by_max_block:
            return Failure(
                BufferExhaustedError(
                    f"no buffer space for a send to {pending.topic} within max_block_ms"
                    f" ({limit:g} s; buffer_memory {self._buffer_memory} bytes in use)"
                )
            )
        return Failure(
            DeliveryTimeoutError(
                f"a send to {pending.topic} waited for buffer space longer than the"
                f" delivery timeout ({limit:g} s)"
            )
        )


def _in_transaction(part: PartitionState, txn: TransactionManager) -> bool:
    """Whether *part* may send in the transaction: added to it, and at its epoch."""
    if not txn.partition_added(part.key):
        return False  # wakes the sender once the partition joined
    if (part.producer_id, part.producer_epoch) != (txn.producer_id, txn.epoch):
        if part.in_flight:
            return False
        # A new epoch (KIP-360, after an abort): sequences restart.
        part.restart_sequences(txn.producer_id, txn.epoch, txn.generation)
    return True


def _sequences_current(
    part: PartitionState, identity: ProducerIdentity | TransactionManager
) -> bool:
    """Whether *part*'s sequences are at the identity's id and epoch, restarting them
    there (as Java's producer, once nothing of the partition is in flight), or at
    an epoch bumped for this partition's lost sequence (KIP-360)."""
    current = part.generation == identity.generation and part.producer_epoch == identity.epoch
    if part.bump or not current:
        if part.in_flight:
            return False
        if part.bump and current and identity.bump() is None:
            return False
        part.restart_sequences(identity.producer_id, identity.epoch, identity.generation)
    return True


def _nothing(result: object) -> None:
    return None


def _held(part: PartitionState) -> bool:
    """Batch mode: the partition's next batch waits for a trigger (never sent, not released)."""
    if part.ready:
        head = part.ready[0]
        return head.attempts == 0 and head.created != -NEVER
    return part.open is not None and part.open.created != -NEVER


def _first_created(part: PartitionState) -> float:
    """When the partition's oldest unsent batch started."""
    return part.ready[0].created if part.ready else part.open.created  # type: ignore[union-attr]
