"""Producer: afkak's documented producer API on record batches v2.

This module is the facade: argument checks, the topic routes (partition
lists and partitioners, loaded on first use), appending records to their
partition's open batch, and the buffer bound.  :mod:`._sender` sends the
batches and settles them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, MessageSizeTooLargeError
from afkak._errors import (
    CancelledError,
    ClientError,
    TransactionStateError,
)
from afkak._retry import DELIVERY_TIMEOUT_MS, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS, is_retriable
from afkak.client import ProducerClient, kafka_client, topic_name
from afkak.common import TopicAndPartition
from afkak.metrics import CLIENT, NODE, PRODUCER, PRODUCER_TOPIC, MetricName
from afkak.partitioner import RoundRobinPartitioner
from afkak.records import BATCH_HEADER_SIZE

from . import _options
from ._batch import RECORD_OVERHEAD, ProducerBatch
from ._options import UNSET
from ._partition import TopicState
from ._sender import Sender
from ._split import joined, pieces
from ._transaction import ConsumerGroupMetadata, State as TransactionState, TransactionManager
from ._waiters import untrack as _untrack

log = Logger()

#: afkak 21's defaults of the batch mode triggers (seconds, messages, bytes).
BATCH_SEND_SECS_COUNT = 30
BATCH_SEND_MSG_COUNT = 10
BATCH_SEND_MSG_BYTES = 32 * 1024

_DEFAULT_LINGER_MS = 0
_DEFAULT_BATCH_SIZE = 16384
_DEFAULT_BUFFER_MEMORY = 32 * 1024 * 1024
_DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
_BYTES = (bytes, bytearray, memoryview)
_MAX_TIMESTAMP = 2**63 - 1


class _Pending:
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
    )

    def __init__(
        self,
        topic: str,
        key: bytes | None,
        values: Sequence[bytes | None],
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
        self.d: Deferred[Any] = Deferred()
        self.size = size
        self.record = record


class Producer:
    """Write messages to Kafka with batching, retries and (by default) idempotence.

    :param client: the :class:`~afkak.client.KafkaClient` to use.
    :param partitioner_class: factory of topic partitioners, called as
        ``partitioner_class(topic, partitions)``; see :mod:`afkak.partitioner`.
    :param req_acks: acknowledgements the leader waits for: ``-1`` all in-sync
        replicas, ``1`` the leader only, ``0`` none (no response at all; sends
        fire once written to the connection).  By default ``-1`` with
        idempotence, ``1`` without.  Passing ``0`` or ``1`` without
        *enable_idempotence* turns idempotence off, as Kafka's producer does.
    :param ack_timeout: milliseconds the broker may wait for the acks.
    :param max_req_attempts: attempts per batch (and per metadata or producer
        id lookup) before its sends fail; by default no limit but
        *delivery_timeout_ms* (Kafka's ``retries``).
    :param retry_interval: seconds before the first retry (Kafka's
        ``retry.backoff.ms``, 0.1 s); doubled on each further attempt up to
        *retry_backoff_max_ms*, each wait jittered by ±20 %.
    :param codec: compression of each batch: ``None``/``CODEC_NONE``,
        ``CODEC_GZIP``, ``CODEC_SNAPPY``, ``CODEC_LZ4`` or ``CODEC_ZSTD``.
    :param batch_send: ``False`` (default): send as soon as possible, a
        partition's records accumulating only while it has
        *max_in_flight_per_partition* requests in flight (or for *linger_ms*).
        ``True``: afkak's batch mode, sending when *batch_every_n* messages or
        *batch_every_b* bytes are waiting, or *batch_every_t* seconds after a
        partition's batch started (0 disables a trigger).
    :param enable_idempotence: Kafka's idempotent producer (the default): the
        broker drops duplicates of retried batches, so retries never write a
        record twice or out of order.  Needs ``req_acks=-1``
        (``ValueError`` otherwise).
    :param linger_ms: without *batch_send*, milliseconds a batch may wait
        for more records before it is sent.
    :param batch_size: bytes (estimated, before compression) at which a
        partition's batch is closed and sent.  One ``send_messages`` call is
        never split: its messages form one batch if they exceed this.
    :param max_in_flight_per_partition: Produce requests in flight per
        partition (at most 5 with idempotence).  A batch to retry is resent
        alone, after the requests in flight settled; with idempotence the
        broker refuses batches out of sequence, so records are written in
        order.  Without idempotence a later batch may be written before an
        earlier one that is retried, as with Kafka's producer, unless this
        is 1.
    :param buffer_memory: bytes of records held (waiting or in flight) at
        most; sends beyond it wait, in order, until batches are settled.
    :param max_request_size: the largest record batch written, in bytes
        (estimated before compression); by default the client's
        ``max_request_size`` (Kafka's 1 MiB).  A ``send_messages`` call larger
        than this is written as several batches, in order, on one partition;
        a record that cannot fit alone fails its send with
        :exc:`~afkak.common.MessageSizeTooLargeError`.  Batches of small
        records are cut at *batch_size* or a quarter of this, whichever is less.
    :param retry_unknown_outcome: without idempotence, whether to retry a
        batch that may have been written (connection lost after sending,
        request timeouts): ``True`` may write records twice; ``False`` (the
        default) fails those sends instead.  With idempotence they are always
        retried (safely).
    :param retry_backoff_max_ms: the longest wait between retries (Kafka's
        ``retry.backoff.max.ms``).
    :param delivery_timeout_ms: milliseconds from a send until it fails with
        :class:`~afkak.common.KafkaTimeoutError` unless acknowledged (Kafka's
        ``delivery.timeout.ms``, 120 s): retriable errors are retried until
        then.  A batch in flight is given its request's answer first.
    :param transactional_id: makes the producer transactional (and
        idempotent): call :meth:`init_transactions` once, then send only
        between :meth:`begin_transaction` and :meth:`commit_transaction` /
        :meth:`abort_transaction`.  A later producer with the same id fences
        this one.  See :doc:`/transactions`.
    :param transaction_timeout_ms: how long the coordinator lets a
        transaction stay open before aborting it (and fencing this producer).

    Records are stamped with the reactor's time (CreateTime) when sent.

    afkak 21's attributes stay readable: ``client``, ``partitioner_class``,
    ``req_acks``, ``ack_timeout``, ``codec``, ``batch_every_n``,
    ``batch_every_b``, ``batch_every_t`` (1, 1 and ``None`` without
    *batch_send*), ``partitioners`` (topic -> its partitioner) and
    ``stopping``.
    """

    DEFAULT_ACK_TIMEOUT = 1000
    #: afkak 21's default attempt limit; now sends retry until *delivery_timeout_ms*
    #: unless *max_req_attempts* is given.
    DEFAULT_REQ_ATTEMPTS = 10
    #: Seconds before the first retry (Kafka's ``retry.backoff.ms``; afkak 21: 0.25).
    INIT_RETRY_INTERVAL = RETRY_BACKOFF_MS / 1000
    #: The factor the retry delay grows by per attempt (afkak 21: 1.20205).
    RETRY_INTERVAL_FACTOR = 2.0

    def __init__(
        self,
        client: ProducerClient,
        partitioner_class: Any = RoundRobinPartitioner,
        req_acks: int = UNSET,
        ack_timeout: int = DEFAULT_ACK_TIMEOUT,
        max_req_attempts: int = UNSET,
        retry_interval: float = INIT_RETRY_INTERVAL,
        codec: int | None = None,
        batch_send: bool = False,
        batch_every_n: int = BATCH_SEND_MSG_COUNT,
        batch_every_b: int = BATCH_SEND_MSG_BYTES,
        batch_every_t: float | None = BATCH_SEND_SECS_COUNT,
        *,
        enable_idempotence: bool = UNSET,
        linger_ms: int = _DEFAULT_LINGER_MS,
        batch_size: int = _DEFAULT_BATCH_SIZE,
        max_in_flight_per_partition: int = 5,
        buffer_memory: int = _DEFAULT_BUFFER_MEMORY,
        retry_unknown_outcome: bool = False,
        retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS,
        delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = _DEFAULT_TRANSACTION_TIMEOUT_MS,
        max_request_size: int | None = None,
    ) -> None:
        kafka_client(client)
        if not callable(partitioner_class):
            raise TypeError(f"partitioner_class must be callable, not {partitioner_class!r}")
        self.options = _options.resolve(
            req_acks=req_acks,
            ack_timeout=ack_timeout,
            max_req_attempts=max_req_attempts,
            retry_interval=retry_interval,
            codec=codec,
            batch_send=batch_send,
            batch_every_n=batch_every_n,
            batch_every_b=batch_every_b,
            batch_every_t=batch_every_t,
            enable_idempotence=enable_idempotence,
            linger_ms=linger_ms,
            batch_size=batch_size,
            max_in_flight_per_partition=max_in_flight_per_partition,
            buffer_memory=buffer_memory,
            retry_unknown_outcome=retry_unknown_outcome,
            retry_backoff_max_ms=retry_backoff_max_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
            max_request_size=max_request_size,
        )
        self.client = client
        self.partitioner_class = partitioner_class
        self._reactor = client.reactor
        self._seconds = client.reactor.seconds
        self._transaction: TransactionManager | None = None
        if transactional_id is not None:
            self._transaction = TransactionManager(
                client,
                transactional_id,
                transaction_timeout_ms,
                self.options.retry_policy(),
                self.options.max_attempts,
                self.options.delivery_timeout,
                self.flush,
                self._drop_unsent,
            )
        self._sender = Sender(client, self.options, self._release, self._transaction)
        self._max_request_size = (
            client.max_request_size
            if self.options.max_request_size is None
            else self.options.max_request_size
        )
        # Batches of small records are cut well below the limit (the size is an
        # estimate); larger sends are measured exactly against it (see _split).
        self._batch_size = min(self.options.batch_size, self._max_request_size // 4)
        self._split_above = self._max_request_size // 2
        self._linger = self.options.linger
        self._buffer_memory = self.options.buffer_memory
        self._batch_mode = self.options.batch_send
        #: send_messages appends inline below this batch size (never in batch mode).
        self._fast_limit = 0 if self._batch_mode else self._batch_size
        self._routes: dict[str, TopicState] = {}
        self._unrouted: dict[str, list[_Pending]] = {}
        self._topic_loads: dict[str, Any] = {}  # Deferred or DelayedCall
        #: Topic -> (failed metadata lookups, reactor time of the first).
        self._topic_attempts: dict[str, tuple[int, float]] = {}
        self._backoff = self.options.retry_policy()
        self._blocked: deque[_Pending] = deque()
        #: Bytes of records accepted and not settled (estimated, uncompressed).
        self._buffered = 0
        self._sender.sensors.buffer(self._buffer_memory, lambda: self._buffered)
        #: Sends accepted and not settled.
        self._outstanding = 0
        self._flush_waiters: list[Deferred[None]] = []
        self._stopped = False

    def __repr__(self) -> str:
        return (
            f"<Producer acks={self.options.acks} idempotent={self.options.idempotent}"
            f" buffered={self._buffered}>"
        )

    # -- afkak 21's attributes -----------------------------------------------------

    @property
    def req_acks(self) -> int:
        return self.options.acks

    @property
    def ack_timeout(self) -> int:
        return self.options.ack_timeout_ms

    @property
    def codec(self) -> int:
        return self.options.codec

    @property
    def batch_every_n(self) -> int:
        return self.options.batch_every_n if self._batch_mode else 1

    @property
    def batch_every_b(self) -> int:
        return self.options.batch_every_b if self._batch_mode else 1

    @property
    def batch_every_t(self) -> float | None:
        return self.options.linger if self._batch_mode else None

    @property
    def batchDesc(self) -> str:
        if not self._batch_mode:
            return "Unbatched"
        return f"{self.batch_every_n}cnt/{self.batch_every_b}bytes/{self.batch_every_t}secs"

    @property
    def partitioners(self) -> dict[str, Any]:
        """Topic -> the partitioner made for it."""
        return {topic: route.partitioner for topic, route in self._routes.items()}

    def metrics(self) -> dict[MetricName, float]:
        """The producer's metrics and its client's connection metrics: ``{MetricName: value}``.

        As Java's ``KafkaProducer.metrics()``; see :doc:`/monitoring`.
        """
        return self._sender.sensors.registry.metrics(PRODUCER, PRODUCER_TOPIC, CLIENT, NODE)

    @property
    def stopping(self) -> bool:
        return self._stopped

    # -- sending -------------------------------------------------------------

    def send_messages(
        self, topic: str, key: bytes | None = None, msgs: Sequence[bytes | None] = ()
    ) -> Deferred[Any]:
        """Send *msgs* (all to one partition, chosen by the partitioner from *key*).

        :param topic: the topic (``str``).
        :param key: ``bytes`` or ``None``; the key of every message and the
            partitioner's input.  Kafka refuses unkeyed messages on compacted
            topics, and :class:`~afkak.partitioner.HashedPartitioner` needs a key.
        :param msgs: a non-empty sequence of ``bytes`` values, ``None`` for a
            null value (a tombstone on a compacted topic).
        :returns: a Deferred that fires once the messages are acknowledged, with
            a :class:`~afkak.common.ProduceResponse` ``(topic, partition, 0,
            offset)``, *offset* being the first message's (``None`` with
            ``req_acks=0``).  It fails with :exc:`TypeError` if *topic* is not a
            ``str``, *key* not ``bytes`` or ``None`` or *msgs* not a sequence of
            them, with :exc:`ValueError` if *msgs* is empty, and with the
            broker's or the client's error if the messages could not be written.
            Cancelling it stops the waiting, not the sending.
        """
        if self._transaction is not None:
            try:
                self._transaction.check_send()
            except Exception as e:
                return fail(e)
        route = self._routes.get(topic)
        try:
            if route is None:
                topic_name(topic)
            if key is not None and type(key) is not bytes and not isinstance(key, _BYTES):
                raise TypeError(f"key={key!r} must be bytes or None")
            kind = type(msgs)
            if (
                kind is not list
                and kind is not tuple
                and (isinstance(msgs, (str, bytes)) or not isinstance(msgs, Sequence))
            ):
                raise TypeError(f"msgs must be a sequence of bytes or None, not {msgs!r:.100}")
            n = len(msgs)
            if n == 1 and type(msgs[0]) is bytes:
                size = RECORD_OVERHEAD + len(msgs[0])
            elif n:
                size = _values_size(topic, msgs)
            else:
                raise ValueError("msgs must be a non-empty sequence")
            if key is not None:
                size += n * len(key)
        except (TypeError, ValueError) as e:
            return fail(e)
        buffered = self._buffered
        if route is None or self._blocked or (buffered and buffered + size > self._buffer_memory):
            # (A stopped producer has no routes.)
            return self._send_later(_Pending(topic, key, msgs, (), None, None, size, False))
        d: Deferred[Any] = Deferred()
        now = self._seconds()
        self._outstanding += 1
        self._buffered = buffered + size
        partition = route.only
        if partition is None:
            try:
                partition = route.choose(key, route.partitions)
            except Exception:
                self._refuse(d, size, Failure())
                return d
        part = route.parts.get(partition)
        batch = None if part is None else part.open
        if batch is None or batch.size + size >= self._fast_limit:
            self._append(route, partition, key, msgs, (), int(now * 1000), now, d, size, False)
        elif batch.plain and n == 1 and key is None:
            # The hottest path (ProducerBatch.add_messages' work, inlined).
            batch.values.append(msgs[0])
            batch.timestamps.append(int(now * 1000))
            batch.waiters.append(d)
            batch.size += size
            if _untrack is not None:
                _untrack(d)  # until its batch settles: see ._waiters
        elif batch.headers is None:
            batch.add_messages(key, msgs, int(now * 1000), size, d)
        else:
            self._append(route, partition, key, msgs, (), int(now * 1000), now, d, size, False)
        return d

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        partition: int | None = None,
    ) -> Deferred[Any]:
        """Send one record, with what record batches v2 carry.

        :param headers: ``(str, bytes | None)`` pairs.
        :param timestamp: CreateTime in milliseconds since the epoch; by
            default the reactor's time.
        :param partition: the partition; by default the partitioner's choice.
        :returns: a Deferred firing with a :class:`RecordMetadata` once the
            record is acknowledged (offset -1 with ``req_acks=0``); failing
            with :exc:`TypeError` / :exc:`ValueError` for bad arguments, or
            with the error that kept the record from being written.
        """
        route = self._routes.get(topic)  # a routed topic's name was checked
        try:
            if route is None:
                topic_name(topic)
            if value is not None and type(value) is not bytes and not isinstance(value, _BYTES):
                raise TypeError(f"value must be bytes or None, not {value!r:.100}")
            if key is not None and type(key) is not bytes and not isinstance(key, _BYTES):
                raise TypeError(f"key must be bytes or None, not {key!r:.100}")
            if type(headers) is not tuple or headers:
                headers = _check_headers(headers)
            if timestamp is not None and (
                not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0
            ):
                raise TypeError(f"timestamp must be a non-negative int (ms), not {timestamp!r}")
            if timestamp is not None and timestamp > _MAX_TIMESTAMP:
                raise ValueError(f"timestamp {timestamp} does not fit Kafka's int64")
            if partition is not None and (
                not isinstance(partition, int) or isinstance(partition, bool) or partition < 0
            ):
                raise TypeError(f"partition must be a non-negative int, not {partition!r}")
            if self._transaction is not None:
                self._transaction.check_send()
        except Exception as e:
            return fail(e)
        size = RECORD_OVERHEAD + (len(value) if value is not None else 0)
        if key is not None:
            size += len(key)
        for name, hvalue in headers:
            size += len(name) + (len(hvalue) if hvalue is not None else 0) + 3
        buffered = self._buffered
        if route is None or self._blocked or (buffered and buffered + size > self._buffer_memory):
            return self._send_later(
                _Pending(topic, key, (value,), headers, timestamp, partition, size, True)
            )
        # The common case, as send_messages': routed, and room in the buffer.
        d: Deferred[Any] = Deferred()
        now = self._seconds()
        self._outstanding += 1
        self._buffered = buffered + size
        if timestamp is None:
            timestamp = int(now * 1000)
        chosen = self._partition_for(route, partition, key, d, size)
        if chosen is not None:
            self._append(route, chosen, key, (value,), headers, timestamp, now, d, size, True)
        return d

    # -- transactions -----------------------------------------------------------

    def init_transactions(self) -> Deferred[None]:
        """Register the ``transactional_id``: fence older producers, abort what they left open.

        Once, before the first transaction.  Fails with
        :class:`~afkak.common.TransactionStateError` if the producer is not
        transactional or it was called before, and with the fatal error
        (``ProducerFenced``, ``TransactionalIdAuthorizationFailed``...) that
        ends the producer.  A retriable failure (timeouts) may be retried.
        """
        return self._txn_call("init_transactions")

    def begin_transaction(self) -> Deferred[None]:
        """Start a transaction: sends are allowed until it is committed or aborted."""
        return self._txn_call("begin_transaction")

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicAndPartition, int], group_metadata: ConsumerGroupMetadata
    ) -> Deferred[None]:
        """Commit consumer offsets as part of the transaction (consume-transform-produce).

        :param offsets: ``{TopicAndPartition: next offset to consume}``.
        :param group_metadata: the consuming group, generation and member
            (:meth:`afkak.group.ConsumerGroup.group_metadata`); a stale
            generation makes the transaction abortable.
        """
        if self._transaction is not None:
            for tp, offset in offsets.items():
                if not isinstance(tp, TopicAndPartition):
                    return fail(TypeError(f"offsets keys must be TopicAndPartition, not {tp!r}"))
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                    return fail(TypeError(f"offset of {tp} must be an int >= 0, not {offset!r}"))
            if not isinstance(group_metadata, ConsumerGroupMetadata):
                return fail(
                    TypeError(
                        f"group_metadata must be a ConsumerGroupMetadata, not {group_metadata!r}"
                    )
                )
        return self._txn_call("send_offsets_to_transaction", offsets, group_metadata)

    def commit_transaction(self) -> Deferred[None]:
        """Send what is buffered, then commit the transaction.

        Fails with the abortable error if a send of the transaction failed
        (then call :meth:`abort_transaction`), or with a fatal error.
        """
        return self._txn_call("commit_transaction")

    def abort_transaction(self) -> Deferred[None]:
        """Abort the transaction: unsent records fail with
        :class:`~afkak.common.TransactionAbortedError`, written ones are never
        visible to ``read_committed`` consumers."""
        return self._txn_call("abort_transaction")

    @property
    def transaction_state(self) -> TransactionState | None:
        """Where the transaction is (:class:`~afkak.producer.TransactionState`);
        None for a producer without ``transactional_id``."""
        return None if self._transaction is None else self._transaction.state

    def _txn_call(self, name: str, *args: Any) -> Deferred[None]:
        if self._transaction is None:
            return fail(TransactionStateError(f"{self!r} has no transactional_id"))
        if self._stopped:
            return fail(ClientError(f"{self!r} has been stopped"))
        return getattr(self._transaction, name)(*args)

    def _drop_unsent(self, failure: Failure) -> None:
        """Fail every send not in flight (an aborted or failed transaction's).

        Those waiting for buffer space go first: space freed by the others
        must not let them into a batch of the next transaction.
        """
        blocked, self._blocked = self._blocked, deque()
        self._sender.fail_unsent(failure)
        unrouted, self._unrouted = self._unrouted, {}
        for waiting in unrouted.values():
            for pending in waiting:
                self._refuse(pending.d, pending.size, failure)
        for pending in blocked:  # not counted in the buffer yet
            self._refuse(pending.d, 0, failure)

    def flush(self) -> Deferred[None]:
        """Send everything now (ignoring linger and batch triggers).

        Fires once no send is outstanding: those made before, and any made
        until then, are acknowledged or failed.
        """
        if not self._outstanding:
            return succeed(None)
        d: Deferred[None] = Deferred()
        self._flush_waiters.append(d)
        self._sender.flushing = True
        self._sender.expire_lingers()
        return d

    def stop(self) -> Deferred[None]:
        """Stop the producer: outstanding sends fail with :exc:`~afkak.common.CancelledError`.

        Requests in flight are abandoned (their records may still be written).
        Returns a Deferred that fires when fully stopped; later sends fail with
        :exc:`~afkak.common.ClientError`.
        """
        if self._stopped:
            return succeed(None)
        self._stopped = True
        self._routes = {}
        failure = Failure(CancelledError(request_sent=False, message="the producer was stopped"))
        for batch in self._sender.stop(failure):
            batch.fail(failure)
            self._release(batch)
        loads, self._topic_loads = self._topic_loads, {}
        for load in loads.values():  # a cancelled load's callback runs at once
            load.cancel()
        unrouted, blocked = self._unrouted, self._blocked
        self._unrouted, self._blocked = {}, deque()
        for waiting in unrouted.values():
            for pending in waiting:
                self._refuse(pending.d, pending.size, failure)
        for pending in blocked:  # not counted in the buffer yet
            self._refuse(pending.d, 0, failure)
        self._check_flushed()
        return succeed(None)

    # -- accepting -------------------------------------------------------------

    def _send_later(self, pending: _Pending) -> Deferred[Any]:
        """Take a send that is not for :meth:`send_messages`' fast path.

        It waits (in order) for buffer space, then, if need be, for its
        topic's metadata.
        """
        if self._stopped:
            return fail(ClientError(f"{self!r} has been stopped"))
        d = pending.d
        now = self._seconds()
        if pending.timestamp is None:
            pending.timestamp = int(now * 1000)
        self._outstanding += 1
        if self._blocked or (
            self._buffered and self._buffered + pending.size > self._buffer_memory
        ):
            self._blocked.append(pending)
        else:
            self._accept(pending, now)
        return d

    def _accept(self, pending: _Pending, now: float) -> None:
        """Take a send into the buffer: append it, or wait for its topic's metadata."""
        self._buffered += pending.size
        route = self._routes.get(pending.topic)
        if route is None:
            waiting = self._unrouted.setdefault(pending.topic, [])
            waiting.append(pending)
            if pending.topic not in self._topic_loads:
                self._load_topic(pending.topic)
            return
        self._place(route, pending, now)

    def _place(self, route: TopicState, pending: _Pending, now: float) -> None:
        partition = self._partition_for(
            route, pending.partition, pending.key, pending.d, pending.size
        )
        if partition is None:
            return
        assert pending.timestamp is not None  # _send_later set it
        self._append(
            route,
            partition,
            pending.key,
            pending.values,
            pending.headers,
            pending.timestamp,
            now,
            pending.d,
            pending.size,
            pending.record,
        )

    def _partition_for(
        self,
        route: TopicState,
        partition: int | None,
        key: bytes | None,
        d: Deferred[Any],
        size: int,
    ) -> int | None:
        """The given partition (checked) or the partitioner's choice; None: *d* was refused."""
        try:
            if partition is None:
                partition = route.only
                if partition is None:
                    partition = route.choose(key, route.partitions)
            elif partition not in route.partitions:
                raise ValueError(
                    f"topic {route.name} has no partition {partition}"
                    f" (it has {len(route.partitions)})"
                )
        except Exception:
            self._refuse(d, size, Failure())
            return None
        return partition

    def _append(
        self,
        route: TopicState,
        partition: int,
        key: bytes | None,
        values: Sequence[bytes | None],
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
                self._refuse(d, size, Failure(error))
                return
            if len(runs) > 1:
                self._append_pieces(route, partition, key, runs, timestamp, now, d)
                return
        part = route.parts.get(partition)
        if part is None:
            part = route.part(partition)
        batch = part.open
        if batch is None or (batch.size + size > self._batch_size and batch.values):
            batch = self._new_batch(route, part, now)
        batch.append(key, values, headers, timestamp, size, d, record)
        if batch.size >= self._batch_size:
            part.seal()
            self._sender.wake()
        if self._batch_mode:
            # afkak 21's byte trigger counts the messages' bytes (values and headers).
            n = len(values)
            overhead = n * (RECORD_OVERHEAD + (len(key) if key is not None else 0))
            self._sender.count_unsent(n, size - overhead)

    def _append_pieces(
        self,
        route: TopicState,
        partition: int,
        key: bytes | None,
        runs: list[Sequence[bytes | None]],
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
            size = _values_size(route.name, run)
            if key is not None:
                size += len(run) * len(key)
            self._append(route, partition, key, run, (), timestamp, now, part_d, size, False)
        joined(d, parts)

    def _new_batch(self, route: TopicState, part: Any, now: float) -> ProducerBatch:
        sealed = part.open is not None
        if sealed:
            part.seal()
        batch = part.new_batch(now)
        if sealed:
            self._sender.wake()
        else:
            self._sender.activate(part)
            if self._linger is not None:
                self._sender.wake(self._linger)
        # A new batch is a good moment to notice a change in the partition count.
        partitions = self.client.topic_partitions.get(route.name)
        if partitions and partitions is not route.partitions:
            route.repartition(partitions)
        return batch

    def _refuse(self, d: Deferred[Any], size: int, failure: Failure) -> None:
        """Fail a send that was counted in the buffer but never appended."""
        self._buffered -= size
        self._outstanding -= 1
        d.errback(failure)
        self._unblock()
        self._check_flushed()

    # -- settling --------------------------------------------------------------

    def _release(self, batch: ProducerBatch) -> None:
        """A batch was settled: free its buffer space and let waiting sends in."""
        self._buffered -= batch.size - BATCH_HEADER_SIZE
        self._outstanding -= len(batch.waiters) + len(batch.record_waiters)
        self._unblock()
        self._check_flushed()

    def _unblock(self) -> None:
        blocked = self._blocked
        if not blocked or self._stopped:
            return
        now = self._reactor.seconds()
        while blocked and (
            not self._buffered or self._buffered + blocked[0].size <= self._buffer_memory
        ):
            self._accept(blocked.popleft(), now)

    def _check_flushed(self) -> None:
        if self._outstanding or not self._flush_waiters:
            return
        waiters, self._flush_waiters = self._flush_waiters, []
        self._sender.flushing = False
        for d in waiters:
            d.callback(None)

    # -- topic metadata ----------------------------------------------------------

    def _load_topic(self, topic: str) -> None:
        d = self.client.load_metadata_for_topics(topic)
        self._topic_loads[topic] = d
        d.addBoth(self._topic_loaded, topic)

    def _topic_loaded(self, result: Any, topic: str) -> None:
        self._topic_loads.pop(topic, None)
        if self._stopped:
            return
        partitions = self.client.topic_partitions.get(topic)
        if partitions:
            self._topic_attempts.pop(topic, None)
            route = self._routes[topic] = TopicState(
                topic, partitions, self.partitioner_class(topic, partitions)
            )
            now = self._reactor.seconds()
            for pending in self._unrouted.pop(topic, []):
                self._place(route, pending, now)
            return
        if isinstance(result, Failure):
            failure = result
        else:
            failure = Failure(
                BrokerResponseError.from_errno(
                    self.client.metadata_error_for_topic(topic) or 3,
                    f"no partitions for topic {topic!r}",
                )
            )
        now = self._reactor.seconds()
        attempts, since = self._topic_attempts.get(topic, (0, now))
        attempts += 1
        self._topic_attempts[topic] = (attempts, since)
        delay = self._backoff(attempts)
        if (
            attempts < self.options.max_attempts
            and is_retriable(failure.value)
            and now + delay < since + self.options.delivery_timeout
        ):
            self._topic_loads[topic] = self._reactor.callLater(delay, self._reload_topic, topic)
            return
        self._topic_attempts.pop(topic, None)
        log.warn(
            "Cannot send to topic {topic}: {error}", topic=topic, error=failure.getErrorMessage()
        )
        for pending in self._unrouted.pop(topic, []):
            self._refuse(pending.d, pending.size, failure)

    def _reload_topic(self, topic: str) -> None:
        del self._topic_loads[topic]
        self._load_topic(topic)


def _values_size(topic: str, values: Sequence[Any]) -> int:
    """The buffer size of message *values*: TypeError unless each is bytes or None."""
    size = len(values) * RECORD_OVERHEAD
    for m in values:
        if type(m) is bytes:
            size += len(m)
        elif m is not None:
            if not isinstance(m, _BYTES):
                raise TypeError(
                    f"message to topic {topic} ({m!r:.100}) has type"
                    f" {type(m).__name__}, but must be bytes or None"
                )
            size += len(m)
    return size


def _check_headers(headers: Any) -> tuple[tuple[str, bytes | None], ...]:
    if isinstance(headers, (str, bytes)) or not isinstance(headers, (tuple, list, Sequence)):
        raise TypeError(f"headers must be a sequence of (str, bytes) pairs, not {headers!r:.100}")
    checked = tuple(headers)
    for pair in checked:
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or (pair[1] is not None and not isinstance(pair[1], _BYTES))
        ):
            raise TypeError(f"each header must be a (str, bytes | None) pair, not {pair!r:.100}")
        try:
            pair[0].encode()
        except UnicodeEncodeError as e:
            raise ValueError(f"header name {pair[0]!r:.100} is not encodable as UTF-8") from e
    return checked
