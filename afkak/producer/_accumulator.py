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
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import MessageSizeTooLargeError
from afkak._errors import BufferExhaustedError, DeliveryTimeoutError
from afkak.client import ProducerClient
from afkak.metrics import ProducerSensors, registry_of
from afkak.records import BATCH_HEADER_SIZE

from ._batch import RECORD_OVERHEAD, Buffer, ProducerBatch
from ._deferred import SendDeferred
from ._identity import ProducerIdentity
from ._options import Options
from ._partition import PartitionState, TopicState
from ._split import joined, pieces, split_batch, values_size
from ._transaction import TransactionManager

log = Logger()
NEVER = float("inf")


class Drainer(Protocol):
    """What drains the accumulator (the Sender)."""

    def wake(self, delay: float = 0.0) -> None: ...

    def stop(self) -> None: ...


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
        "record",
        "since",
    )

    def __init__(
        self,
        topic: str,
        key: Buffer | None,
        values: Sequence[Buffer | None],
        headers: Any,
        timestamp: int | None,
        partition: int | None,
        size: int,
        record: bool,
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
        self.record = record
        #: Reactor time of the call: waits for buffer space and metadata count
        #: toward the delivery timeout.
        self.since = 0.0


class RecordAccumulator:
    """Batches per partition, the buffer bound, and what may be sent when.

    :param admit: routes a send that got buffer space (the Producer's).
    """

    __slots__ = (
        "_admit",
        "_batch_mode",
        "_client",
        "_expire_all",
        "_flush_waiters",
        "_limit",
        "_linger",
        "_reactor",
        "_seconds",
        "_sendable",
        "_split_above",
        "_stopped",
        "_unsent_bytes",
        "_unsent_count",
        "active",
        "batch_size",
        "block_timer",
        "blocked",
        "buffer_memory",
        "buffered",
        "fast_limit",
        "flushing",
        "identity",
        "max_request_size",
        "options",
        "outstanding",
        "sender",
        "sensors",
        "transaction",
        "unrouted",
    )

    def __init__(
        self,
        client: ProducerClient,
        options: Options,
        admit: Callable[[Pending, float], None],
    ) -> None:
        self._client = client
        self._reactor = client.reactor
        self._seconds = client.reactor.seconds
        self.options = options
        self._admit = admit
        #: Drains this accumulator: the producer's Sender.
        self.sender: Drainer | None = None
        #: The producer id, epoch and sequences' source (None: not idempotent).
        self.identity: ProducerIdentity | TransactionManager | None = None
        self.transaction: TransactionManager | None = None
        max_request_size = self.max_request_size = (
            client.max_request_size
            if options.max_request_size is None
            else options.max_request_size
        )
        # Batches of small records are cut well below the limit (the size is an
        # estimate); larger sends are measured exactly against it (see _split).
        self.batch_size = min(options.batch_size, max_request_size // 4)
        self._split_above = max_request_size // 2
        self._linger = options.linger
        self._limit = options.max_in_flight
        self.buffer_memory = options.buffer_memory
        self._batch_mode = options.batch_send
        #: send_messages appends inline below this batch size (never in batch mode).
        self.fast_limit = 0 if self._batch_mode else self.batch_size
        #: Bytes of records accepted and not settled (estimated, uncompressed).
        self.buffered = 0
        #: Recorded per request and per batch (``producer-metrics``), the Sender's too.
        self.sensors = registry_of(client).shared(ProducerSensors)
        self.sensors.buffer(self.buffer_memory, lambda: self.buffered)
        #: Sends accepted and not settled.
        self.outstanding = 0
        #: Sends waiting for buffer space, in call order.
        self.blocked: deque[Pending] = deque()
        #: Fails the sends that waited for buffer space too long (a DelayedCall).
        self.block_timer: Any = None
        #: Topic -> sends waiting for its metadata (counted in the buffer).
        self.unrouted: dict[str, list[Pending]] = {}
        #: Partitions with an open or ready batch.
        self.active: set[PartitionState] = set()
        #: While a flush waits, every drain sends every open batch.
        self.flushing = False
        self._expire_all = False
        self._unsent_count = 0
        self._unsent_bytes = 0
        self._flush_waiters: list[Deferred[None]] = []
        self._sendable: list[PartitionState] = []
        self._stopped = False

    def wake(self, delay: float = 0.0) -> None:
        """Have the sender drain in *delay* seconds (or sooner)."""
        if self.sender is not None:
            self.sender.wake(delay)

    # -- taking sends in ---------------------------------------------------------

    def accept(self, pending: Pending) -> None:
        """Take a send off the fast path: it waits (in order) for buffer space."""
        now = pending.since = self._seconds()
        if pending.timestamp is None:
            pending.timestamp = int(now * 1000)
        self.outstanding += 1
        if self.blocked or (self.buffered and self.buffered + pending.size > self.buffer_memory):
            self.blocked.append(pending)
            if self.block_timer is None:
                self._arm_block_timer()
        else:
            self.buffered += pending.size
            self._admit(pending, now)

    def wait_for_route(self, pending: Pending) -> bool:
        """Keep *pending* until its topic's metadata arrives; whether it is the first."""
        waiting = self.unrouted.get(pending.topic)
        if waiting is None:
            self.unrouted[pending.topic] = [pending]
            return True
        waiting.append(pending)
        return False

    def append(
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
            runs = pieces(values, key, headers_size, self.max_request_size)
            if runs is None:
                error = MessageSizeTooLargeError(
                    f"a record to {route.name} is larger than max_request_size"
                    f" ({self.max_request_size} bytes)"
                )
                self.refuse(d, size, Failure(error))
                return
            if len(runs) > 1:
                self._append_pieces(route, partition, key, runs, timestamp, now, d)
                return
        part = route.parts.get(partition)
        if part is None:
            part = route.part(partition)
        batch = part.open
        if batch is None or (batch.size + size > self.batch_size and batch.values):
            batch = self._new_batch(route, part, now)
        batch.append(key, values, headers, timestamp, size, d, record)
        if batch.size >= self.batch_size:
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
        self.outstanding += len(runs) - 1  # each piece settles as one send
        for run in runs:
            part_d: Deferred[Any] = Deferred()
            parts.append(part_d)
            size = values_size(route.name, run)
            if key is not None:
                size += len(run) * len(key)
            self.append(route, partition, key, run, (), timestamp, now, part_d, size, False)
        joined(d, parts)

    def _new_batch(self, route: TopicState, part: PartitionState, now: float) -> ProducerBatch:
        sealed = part.open is not None
        if sealed:
            part.seal()
        batch = part.new_batch(now)
        if sealed:
            self.wake()
        else:
            self.active.add(part)
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

    def opened_since(self, part: PartitionState | None, since: float) -> None:
        """The delivery timeout of what was just appended counts from *since* (its call)."""
        if part is not None:
            batch = part.open or (part.ready[-1] if part.ready else None)
            if batch is not None and batch.opened > since:
                batch.opened = since

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
        expire_all = self._expire_all or self.flushing
        self._expire_all = False
        batch_mode = self._batch_mode
        if batch_mode:
            # afkak's batch mode sends nothing until a trigger fires (count, bytes,
            # or its timer), then everything: full batches sealed meanwhile wait too.
            if not expire_all and linger is not None:
                expire_all = any(_first_created(p) + linger <= now for p in self.active if _held(p))
            if expire_all:
                self._unsent_count = self._unsent_bytes = 0
                for part in self.active:
                    for waiting in part.ready:
                        waiting.created = -NEVER
        wake_at = NEVER
        sendable = self._sendable = []
        for part in list(self.active):
            batch = part.open
            if batch is not None:
                if expire_all:
                    batch.created = -NEVER
                if part.retry_at > now:
                    wake_at = min(wake_at, part.retry_at)
                elif not part.ready and part.in_flight < self._limit:
                    if batch.created == -NEVER:
                        part.seal()
                    elif linger is not None:
                        due = batch.created + linger
                        if due <= now:
                            part.seal()
                        else:
                            wake_at = min(wake_at, due)
            if not part.ready:
                if part.open is None:
                    self.active.discard(part)
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
        if head.attempts and part.in_flight:
            return None  # a retry goes alone, after what is in flight settled
        identity = self.identity
        txn = self.transaction
        if part.in_flight and not part.acked_next and (identity is not None or txn is not None):
            # Nothing acknowledged at this epoch yet: a broker that does not know the
            # producer takes any sequence, so a later batch would be written before a
            # first one refused retriably (whose retry then gets OUT_OF_ORDER_SEQUENCE).
            return None
        if txn is not None:
            if not txn.partition_added(part.key):
                return None  # wakes the sender once the partition joined
            if (part.producer_id, part.producer_epoch) != (txn.producer_id, txn.epoch):
                if part.in_flight:
                    return None
                # A new epoch (KIP-360, after an abort): sequences restart.
                part.restart_sequences(txn.producer_id, txn.epoch, txn.generation)
        if identity is not None:
            current = (
                part.generation == identity.generation and part.producer_epoch == identity.epoch
            )
            if part.bump or not current:
                # Sequences restart at the identity's new id or epoch (as Java's
                # producer, once nothing of the partition is in flight), or at
                # an epoch bumped for this partition's lost sequence (KIP-360).
                if part.in_flight:
                    return None
                if part.bump and current:
                    fresh = identity.bump()
                    if fresh is None:
                        return None
                part.restart_sequences(identity.producer_id, identity.epoch, identity.generation)
            part.ready.popleft()
            if head.data is None:
                head.encode(
                    self.options.codec,
                    part.producer_id,
                    part.producer_epoch,
                    part.take_sequence(len(head.values)),
                    txn is not None,
                    self.options.compression_level,
                )
        else:
            part.ready.popleft()
            if head.data is None:
                head.encode(self.options.codec, -1, -1, -1, False, self.options.compression_level)
        part.in_flight += 1
        head.attempts += 1
        return head

    def requeue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a batch to retry back in its place; its partition waits until *retry_at*."""
        part = batch.part
        part.requeue(batch)
        self.active.add(part)
        part.retry_at = max(part.retry_at, retry_at)

    def split(self, batch: ProducerBatch) -> None:
        """A batch the broker refused as too large goes again as two, in its place, at once."""
        halves, more = split_batch(
            batch, self.options.codec, self.options.compression_level, self.transaction is not None
        )
        self.outstanding += more
        part = batch.part
        for half in reversed(halves):  # each goes before what has its order
            part.requeue(half)
        self.active.add(part)

    def expired(self, now: float) -> tuple[list[ProducerBatch], float]:
        """Remove the batches (not in flight) whose delivery timeout passed; when the next one
        expires."""
        timeout = self.options.delivery_timeout
        next_expiry = NEVER
        expired: list[ProducerBatch] = []
        for part in list(self.active):
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
                        self.active.discard(part)
                    continue
            next_expiry = min(next_expiry, oldest + timeout)
        return expired, next_expiry

    # -- settling ------------------------------------------------------------------

    def release(self, batch: ProducerBatch) -> None:
        """A batch was settled (its sends fired): free its buffer space, let waiting sends in."""
        self.buffered -= batch.size - BATCH_HEADER_SIZE
        self.outstanding -= len(batch.waiters) + len(batch.record_waiters)
        self._unblock()
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
        self.active.discard(part)

    def identity_failed(self, failure: Failure) -> None:
        """No producer id: every batch waiting for one fails."""
        log.error(
            "No producer id for the idempotent producer: {error}", error=failure.getErrorMessage()
        )
        for part in list(self.active):
            self.fail_partition(part, failure)

    def refuse(self, d: Deferred[Any], size: int, failure: Failure) -> None:
        """Fail a send that was counted in the buffer but never appended."""
        self.buffered -= size
        self.outstanding -= 1
        d.errback(failure)
        self._unblock()
        self._check_flushed()

    def refuse_unrouted(self, topic: str, failure: Failure) -> None:
        """The sends waiting for *topic*'s metadata fail (it could not be loaded)."""
        for pending in self.unrouted.pop(topic, []):
            self.refuse(pending.d, pending.size, failure)

    def _unblock(self) -> None:
        blocked = self.blocked
        if not blocked or self._stopped:
            return
        now = self._seconds()
        while blocked and (
            not self.buffered or self.buffered + blocked[0].size <= self.buffer_memory
        ):
            pending = blocked.popleft()
            self.buffered += pending.size
            self._admit(pending, now)

    def _check_flushed(self) -> None:
        if self.outstanding or not self._flush_waiters:
            return
        waiters, self._flush_waiters = self._flush_waiters, []
        self.flushing = False
        for d in waiters:
            d.callback(None)

    def flush(self) -> Deferred[None]:
        """Send everything now; fires once no send is outstanding."""
        if not self.outstanding:
            return succeed(None)
        d: Deferred[None] = Deferred()
        self._flush_waiters.append(d)
        self.flushing = True
        self.expire_lingers()
        return d

    def drop_unsent(self, failure: Failure) -> None:
        """Fail every send not in flight (an aborted or failed transaction's).

        Those waiting for buffer space go first: space freed by the others
        must not let them into a batch of the next transaction.
        """
        blocked, self.blocked = self.blocked, deque()
        self._disarm_block_timer()
        for part in list(self.active):
            self.fail_partition(part, failure)
        self._refuse_waiting(blocked, failure)

    def stop(self, failure: Failure) -> None:
        """Stop the sender (what is in flight fails as cancelled), then fail everything
        else with *failure*; freed space admits nothing any more."""
        self._stopped = True
        if self.sender is not None:
            self.sender.stop()
        batches: list[ProducerBatch] = []
        for part in self.active:
            batches.extend(part.drop_all())
        self.active.clear()
        for batch in batches:
            batch.fail(failure)
            self.release(batch)
        blocked, self.blocked = self.blocked, deque()
        self._disarm_block_timer()
        self._refuse_waiting(blocked, failure)
        self._check_flushed()

    def _refuse_waiting(self, blocked: deque[Pending], failure: Failure) -> None:
        unrouted, self.unrouted = self.unrouted, {}
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
        delay = max(0.0, self.blocked[0].since + limit - self._seconds())
        self.block_timer = self._reactor.callLater(delay, self._block_expired)

    def _disarm_block_timer(self) -> None:
        if self.block_timer is not None:
            if self.block_timer.active():
                self.block_timer.cancel()
            self.block_timer = None

    def _block_expired(self) -> None:
        self.block_timer = None
        blocked = self.blocked
        now = self._seconds()
        limit, by_max_block = self._block_limit()
        while blocked and blocked[0].since + limit <= now:
            pending = blocked.popleft()
            if by_max_block:
                error: Exception = BufferExhaustedError(
                    f"no buffer space for a send to {pending.topic} within max_block_ms"
                    f" ({limit:g} s; buffer_memory {self.buffer_memory} bytes in use)"
                )
            else:
                error = DeliveryTimeoutError(
                    f"a send to {pending.topic} waited for buffer space longer than the"
                    f" delivery timeout ({limit:g} s)"
                )
            self.refuse(pending.d, 0, Failure(error))  # not counted in the buffer yet
        if blocked and self.block_timer is None:
            self._arm_block_timer()


def _held(part: PartitionState) -> bool:
    """Batch mode: the partition's next batch waits for a trigger (never sent, not released)."""
    if part.ready:
        head = part.ready[0]
        return head.attempts == 0 and head.created != -NEVER
    return part.open is not None and part.open.created != -NEVER


def _first_created(part: PartitionState) -> float:
    """When the partition's oldest unsent batch started."""
    return part.ready[0].created if part.ready else part.open.created  # type: ignore[union-attr]
