"""Producer: afkak's documented producer API on record batches v2.

This module is the facade: argument checks, the partition of each record,
and the transaction calls.  :mod:`._accumulator` holds what was accepted
(batches, the buffer bound), :mod:`._routes` the topic routes (partition
lists and partitioners, loaded on first use) and the placement of sends that
waited, :mod:`._sender` sends the batches and settles them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._errors import CancelledError, ClientError, TransactionStateError
from afkak._retry import DELIVERY_TIMEOUT_MS, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS
from afkak.client import ProducerClient
from afkak.client._interlayer import kafka_client, topic_name
from afkak.common import ProduceResponse, TopicAndPartition
from afkak.metrics import CLIENT, NODE, PRODUCER, PRODUCER_TOPIC, MetricName
from afkak.partitioner import DefaultPartitioner
from afkak.records.batch import compiled_records

from . import _options
from ._accumulator import RecordAccumulator
from ._batch import RECORD_OVERHEAD
from ._identity import ProducerIdentity
from ._options import UNSET
from ._result import RecordMetadata
from ._routes import TopicRoutes
from ._sender import Sender
from ._split import BYTES as _BYTES, values_size
from ._transaction import ConsumerGroupMetadata, State as TransactionState, TransactionManager

log = Logger()

#: afkak 21's defaults of the batch mode triggers (seconds, messages, bytes).
BATCH_SEND_SECS_COUNT = 30
BATCH_SEND_MSG_COUNT = 10
BATCH_SEND_MSG_BYTES = 32 * 1024

_DEFAULT_LINGER_MS = 0
#: librdkafka's batch.size (Java's is 16 KiB): bigger batches cost nothing while a
#: partition has few records waiting (lingering 0 ms, a batch goes at the next
#: reactor turn however small), and spare per-batch work when sends come in
#: bursts.  Cut at a quarter of max_request_size (256 KiB) at most.
_DEFAULT_BATCH_SIZE = 1_000_000
_DEFAULT_BUFFER_MEMORY = 32 * 1024 * 1024
_DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
#: Java's ``max.block.ms``.
_DEFAULT_MAX_BLOCK_MS = 60_000
_MAX_TIMESTAMP = 2**63 - 1


class Producer:
    """Write messages to Kafka with batching, retries and (by default) idempotence.

    :param client: the :class:`~afkak.client.KafkaClient` to use.
    :param partitioner_class: factory of topic partitioners, called as
        ``partitioner_class(topic, partitions)``; see :mod:`afkak.partitioner`.
        By default :class:`~afkak.partitioner.DefaultPartitioner`: a keyed
        record goes where Kafka's Java client puts it (murmur2 of the key),
        others round robin (afkak 21 sent every record round robin).
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
        ``retry.backoff.ms``, 0.1 s); multiplied by
        :attr:`RETRY_INTERVAL_FACTOR` (2) on each further attempt up to
        *retry_backoff_max_ms*, each wait jittered by ±20 %.
    :param codec: compression of each batch: ``None``/``CODEC_NONE``,
        ``CODEC_GZIP``, ``CODEC_SNAPPY``, ``CODEC_LZ4`` or ``CODEC_ZSTD``.
    :param compression_level: the codec's level (KIP-390): gzip 1 to 9
        (default 6), lz4 1 to 17 (default: its fast mode), zstd -131072 to 22
        (default 3); ``ValueError`` out of range or for a codec without levels.
    :param batch_send: ``False`` (default): send as soon as possible, a
        partition's records accumulating only while it has
        *max_in_flight_per_partition* requests in flight (or for *linger_ms*).
        ``True``: afkak's batch mode, sending when *batch_every_n* messages or
        *batch_every_b* bytes are waiting, or *batch_every_t* seconds after a
        partition's batch started (0 disables a trigger).
    :param enable_idempotence: Kafka's idempotent producer (the default): the
        broker drops duplicates of retried batches, so retries never write a
        record twice or out of order.  Needs ``req_acks=-1``
        (``ValueError`` otherwise), Kafka 0.11 or later and, on Kafka before
        2.8, IDEMPOTENT_WRITE on the cluster for the producer's principal
        (later brokers accept WRITE on the topic): without them sends fail at
        once, saying so; ``enable_idempotence=False`` turns it off.
    :param linger_ms: without *batch_send*, milliseconds a batch may wait
        for more records before it is sent.  At 0 (the default) a batch goes
        at the next reactor turn, or in the turn of the send itself when
        nothing is in flight.
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
        most; sends beyond it wait, in order, until batches are settled, for
        *max_block_ms* at most.
    :param max_block_ms: how long a send may wait for buffer space (Kafka's
        ``max.block.ms``, 60 s) before it fails with
        :class:`~afkak.common.BufferExhaustedError` (a
        :class:`~afkak.common.KafkaTimeoutError`; the record is not written).
    :param max_request_size: the largest record batch written, in bytes
        (estimated before compression); by default the client's
        ``max_request_size`` (Kafka's 1 MiB).  A ``send_messages`` call larger
        than this is written as several batches, in order, on one partition;
        a record that cannot fit alone fails its send with
        :exc:`~afkak.common.MessageSizeTooLargeError`.  Batches of small
        records are cut at *batch_size* or a quarter of this, whichever is less.
        A batch the broker refuses as too large (a topic's
        ``max.message.bytes`` below this) is halved and sent again, down to
        one record, as Kafka's Java producer splits it; only a record too
        large alone fails.
    :param retry_unknown_outcome: without idempotence, whether to retry a
        batch that may have been written (connection lost after sending,
        request timeouts): ``True`` may write records twice; ``False`` (the
        default) fails those sends instead.  With idempotence they are always
        retried (safely).
    :param retry_backoff_max_ms: the longest wait between retries (Kafka's
        ``retry.backoff.max.ms``).
    :param delivery_timeout_ms: milliseconds from a send until it fails with
        :class:`~afkak.common.DeliveryTimeoutError` (a
        :class:`~afkak.common.KafkaTimeoutError`) unless acknowledged (Kafka's
        ``delivery.timeout.ms``, 120 s): retriable errors are retried until
        then.  A batch in flight is given its request's answer first.
    :param transactional_id: makes the producer transactional (and
        idempotent): call :meth:`init_transactions` once, then send only
        between :meth:`begin_transaction` and :meth:`commit_transaction` /
        :meth:`abort_transaction`.  A later producer with the same id fences
        this one.  See :doc:`/transactions`.
    :param transaction_timeout_ms: how long the coordinator lets a
        transaction stay open before aborting it (and fencing this producer).
    :param key_serializer: a callable turning each key given to :meth:`send`
        and :meth:`send_messages` into ``bytes`` (as aiokafka's and Java's
        serializers); a ``None`` key stays ``None`` (no key).  What it raises,
        and :exc:`TypeError` if it returns anything but ``bytes`` or ``None``,
        is raised at the call.
    :param value_serializer: the same for each value (message); a ``None``
        value stays ``None`` (a tombstone).

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
    #: The factor the retry delay grows by per attempt, up to
    #: *retry_backoff_max_ms* (afkak 21: 1.20205; Kafka's: 2).  Read when a
    #: producer is made: set it on a subclass (or the class) to change it.
    RETRY_INTERVAL_FACTOR = 2.0

    def __init__(
        self,
        client: ProducerClient,
        partitioner_class: Any = DefaultPartitioner,
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
        max_block_ms: int = _DEFAULT_MAX_BLOCK_MS,
        compression_level: int | None = None,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
    ) -> None:
        kafka_client(client)
        if not callable(partitioner_class):
            raise TypeError(f"partitioner_class must be callable, not {partitioner_class!r}")
        for name, serializer in (
            ("key_serializer", key_serializer),
            ("value_serializer", value_serializer),
        ):
            if serializer is not None and not callable(serializer):
                raise TypeError(f"{name} must be callable or None, not {serializer!r:.100}")
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        if key_serializer is not None or value_serializer is not None:
            # Only a serializing producer's calls pay for serializing.
            self.send = self._serialize_send  # type: ignore[method-assign]
            self.send_messages = self._serialize_send_messages  # type: ignore[method-assign]
        self.options = _options.resolve(
            req_acks=req_acks,
            ack_timeout=ack_timeout,
            max_req_attempts=max_req_attempts,
            retry_interval=retry_interval,
            retry_factor=self.RETRY_INTERVAL_FACTOR,
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
            max_block_ms=max_block_ms,
            compression_level=compression_level,
        )
        self.client = client
        self.partitioner_class = partitioner_class
        self._reactor = client.reactor
        self._seconds = client.reactor.seconds
        self._backoff = self.options.retry_policy(client.rng.uniform)
        self._stopped = False
        acc = self._accumulator = RecordAccumulator(client, self.options)
        routing = self._routing = TopicRoutes(
            client, partitioner_class, self.options, self._backoff, acc
        )
        acc.placer = routing
        #: Topic -> its route (the routes' own dict, read by every send).
        self._routes = routing.routes
        self._batch_mode = self.options.batch_send
        self._transaction: TransactionManager | None = None
        if transactional_id is not None:
            acc.identity = acc.transaction = self._transaction = TransactionManager(
                client,
                transactional_id,
                transaction_timeout_ms,
                self.options.retry_policy(client.rng.uniform),
                self.options.max_attempts,
                self.options.delivery_timeout,
                acc,
            )
        elif self.options.idempotent:
            acc.identity = ProducerIdentity(
                client,
                client.reactor,
                self._backoff,
                self.options.max_attempts,
                acc.wake,
                acc.identity_failed,
            )
        acc.sender = self._sender = Sender(client, self.options, acc)

    def __repr__(self) -> str:
        return (
            f"<Producer acks={self.options.acks} idempotent={self.options.idempotent}"
            f" buffered={self._accumulator.buffered}>"
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
        return self._accumulator.sensors.registry.metrics(PRODUCER, PRODUCER_TOPIC, CLIENT, NODE)

    @property
    def stopping(self) -> bool:
        return self._stopped

    # -- sending -------------------------------------------------------------

    def send_messages(
        self, topic: str, key: Any = None, msgs: Sequence[Any] = ()
    ) -> Deferred[ProduceResponse | None]:
        """Send *msgs* (all to one partition, chosen by the partitioner from *key*).

        :param topic: the topic (``str``).
        :param key: ``bytes`` or ``None`` (or what *key_serializer* takes);
            the key of every message and the partitioner's input.  Kafka
            refuses unkeyed messages on compacted topics, and
            :class:`~afkak.partitioner.HashedPartitioner` needs a key.
        :param msgs: a non-empty sequence of ``bytes`` values (or what
            *value_serializer* takes), ``None`` for a null value (a tombstone
            on a compacted topic).
        :returns: a Deferred that fires once the messages are acknowledged, with
            a :class:`~afkak.common.ProduceResponse` ``(topic, partition, 0,
            offset)``, *offset* being the first message's or, in batch mode
            (*batch_send*), the first of the batch that carried it, as in
            afkak 21 (``None`` with ``req_acks=0``).  It fails with the
            broker's or the client's error if the messages could not be
            written, or with the partitioner's error
            (:class:`~afkak.partitioner.HashedPartitioner` without a key).
            Cancelling it stops the waiting, not the sending.
        :raises TypeError: at the call, if *topic* is not a ``str``, *key*
            not ``bytes`` or ``None`` or *msgs* not a sequence of them.
        :raises ValueError: at the call, if *msgs* is empty or *topic* not a
            valid name.
        """
        if self._transaction is not None:
            try:
                self._transaction.check_send()
            except Exception as e:
                return fail(e)
        route = self._routes.get(topic)
        if route is None:
            topic_name(topic)
        if type(key) not in _PLAIN:
            _check_buffer(f"key={key!r:.100}", key)
        if type(msgs) is list and len(msgs) == 1 and type(msgs[0]) is bytes:
            size = RECORD_OVERHEAD + len(msgs[0])
        else:
            size = _messages_size(topic, msgs)
        if key is not None:
            size += len(msgs) * len(key)
        partition = None
        if route is not None:  # (a stopped producer has no routes)
            try:
                partition = route.only
                if partition is None:
                    partition = route.choose(key, route.partitions)
            except Exception:
                return fail()
        return self._accumulator.append_values(topic, route, partition, key, msgs, size)

    def send(
        self,
        topic: str,
        value: Any,
        key: Any = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        partition: int | None = None,
    ) -> Deferred[RecordMetadata]:
        """Send one record, with what record batches v2 carry.

        :param headers: ``(str, bytes | None)`` pairs.
        :param timestamp: CreateTime in milliseconds since the epoch; by
            default the reactor's time.
        :param partition: the partition; by default the partitioner's choice.
        :returns: a Deferred firing with a :class:`RecordMetadata` once the
            record is acknowledged (offset -1 with ``req_acks=0``); failing
            with the error that kept the record from being written (a
            *partition* the topic does not have: :exc:`ValueError`, once its
            metadata is known).
        :raises TypeError: at the call, for an argument of the wrong type.
        :raises ValueError: at the call, for a value out of range (a
            *timestamp* beyond int64, a header name not encodable as UTF-8,
            an invalid topic name).
        """
        route = self._routes.get(topic)  # a routed topic's name was checked
        if route is None:
            topic_name(topic)
        if type(value) not in _PLAIN:
            _check_buffer("value", value)
        if type(key) not in _PLAIN:
            _check_buffer("key", key)
        if headers != ():
            headers = _check_headers(headers)
        if timestamp is not None:
            _check_timestamp(timestamp)
        if partition is not None:
            _check_partition(partition)
        if self._transaction is not None:
            try:
                self._transaction.check_send()
            except Exception as e:
                return fail(e)
        if route is not None and (key is not None or partition is not None or not route.sticks):
            try:  # (unkeyed records stick, placed by the accumulator)
                partition = route.partition_for(key, partition)
            except Exception:
                return fail()
        return self._accumulator.append_one(topic, route, partition, key, value, headers, timestamp)

    def send_records(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None = None,
        *,
        headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
        timestamps: Sequence[int | None] | None = None,
        partitions: Sequence[int | None] | None = None,
    ) -> Deferred[None]:
        """Send many records at once, each with its own key, headers, timestamp and partition.

        Each record goes where :meth:`send` would put it (its *partitions*
        entry, else by its key; the unkeyed ones of a call together, on the
        partitioner's choice for the call) and the records are batched per
        partition whatever their keys, in order: the bulk twin of :meth:`send`
        for writers of many keyed records (one Deferred instead of one per
        record).

        :param values: ``bytes`` or ``None`` (or what *value_serializer* takes).
        :param keys: one per value, ``bytes`` or ``None``; None: no keys.
        :param headers: one sequence of ``(str, bytes | None)`` pairs per value.
        :param timestamps: one CreateTime (ms) or ``None`` (the reactor's
            time) per value.
        :param partitions: one partition or ``None`` (placed by key) per value.
        :returns: a Deferred firing with None once every record is
            acknowledged, or failing with the first error (records of other
            partitions may have been written).
        :raises TypeError: at the call, for an argument of the wrong type.
        :raises ValueError: at the call, for no values, or sequences of
            other lengths than *values*.
        """
        route = self._routes.get(topic)
        if route is None:
            topic_name(topic)
        values, keys = self._serialized(values, keys)
        headers, timestamps, partitions = _check_records(
            values, keys, headers, timestamps, partitions
        )
        if self._transaction is not None:
            try:
                self._transaction.check_send()
            except Exception as e:
                return fail(e)
        if route is not None:
            try:
                partitions = route.partition_all(keys, partitions, len(values))
            except Exception:
                return fail()
        return self._accumulator.append_records(
            topic, route, partitions, keys, values, headers, timestamps
        )

    def _serialized(self, values: Any, keys: Any) -> tuple[list[Any], list[Any] | None]:
        """*values* and *keys* as lists, serialized and checked."""
        values = _as_list("values", values)
        if not values:
            raise ValueError("values must be a non-empty sequence")
        if self._value_serializer is not None:
            serialize = self._value_serializer
            values = [None if v is None else serialize(v) for v in values]
        if not _PLAIN.issuperset(map(type, values)):  # a column's types at C speed
            for value in values:
                _check_buffer("value", value)
        if keys is None:
            return values, None
        keys = _as_list("keys", keys, len(values))
        if self._key_serializer is not None:
            serialize = self._key_serializer
            keys = [None if k is None else serialize(k) for k in keys]
        if not _PLAIN.issuperset(map(type, keys)):
            for key in keys:
                _check_buffer("key", key)
        return values, keys

    def _serialize_send(self, topic: str, value: Any, key: Any = None, **options: Any) -> Any:
        """:meth:`send` of a producer with serializers: the key and value serialized."""
        if value is not None and self._value_serializer is not None:
            value = self._value_serializer(value)
        if key is not None and self._key_serializer is not None:
            key = self._key_serializer(key)
        return Producer.send(self, topic, value, key, **options)

    def _serialize_send_messages(self, topic: str, key: Any = None, msgs: Any = ()) -> Any:
        """:meth:`send_messages` of a producer with serializers: the key and messages
        serialized (what is not a sequence is left for its check)."""
        if key is not None and self._key_serializer is not None:
            key = self._key_serializer(key)
        serialize = self._value_serializer
        if serialize is not None and (
            isinstance(msgs, (list, tuple))
            or (isinstance(msgs, Sequence) and not isinstance(msgs, (str, bytes)))
        ):
            msgs = [None if m is None else serialize(m) for m in msgs]
        return Producer.send_messages(self, topic, key, msgs)

    # -- transactions -----------------------------------------------------------

    def init_transactions(self) -> Deferred[None]:
        """Register the ``transactional_id``: fence older producers, abort what they left open.

        Once, before the first transaction.  Fails with
        :class:`~afkak.common.TransactionStateError` if the producer is not
        transactional or it was called before, and with the fatal error
        (``ProducerFenced``, ``TransactionalIdAuthorizationFailed``...) that
        ends the producer.  A retriable failure (timeouts) may be retried.
        """
        return self._txn_call(lambda txn: txn.init_transactions())

    def begin_transaction(self) -> Deferred[None]:
        """Start a transaction: sends are allowed until it is committed or aborted."""
        return self._txn_call(lambda txn: txn.begin_transaction())

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
        return self._txn_call(lambda txn: txn.send_offsets_to_transaction(offsets, group_metadata))

    def commit_transaction(self) -> Deferred[None]:
        """Send what is buffered, then commit the transaction.

        Fails with the abortable error if a send of the transaction failed
        (then call :meth:`abort_transaction`), or with a fatal error.
        """
        return self._txn_call(lambda txn: txn.commit_transaction())

    def abort_transaction(self) -> Deferred[None]:
        """Abort the transaction: unsent records fail with
        :class:`~afkak.common.TransactionAbortedError`, written ones are never
        visible to ``read_committed`` consumers."""
        return self._txn_call(lambda txn: txn.abort_transaction())

    @property
    def transaction_state(self) -> TransactionState | None:
        """Where the transaction is (:class:`~afkak.producer.TransactionState`);
        None for a producer without ``transactional_id``."""
        return None if self._transaction is None else self._transaction.state

    def _txn_call(self, call: Callable[[TransactionManager], Deferred[None]]) -> Deferred[None]:
        if self._transaction is None:
            return fail(TransactionStateError(f"{self!r} has no transactional_id"))
        if self._stopped:
            return fail(ClientError(f"{self!r} has been stopped"))
        return call(self._transaction)

    def flush(self) -> Deferred[None]:
        """Send everything now (ignoring linger and batch triggers).

        Fires once no send is outstanding: those made before, and any made
        until then, are acknowledged or failed.
        """
        return self._accumulator.flush()

    def stop(self) -> Deferred[None]:
        """Stop the producer: outstanding sends fail with :exc:`~afkak.common.CancelledError`.

        Requests in flight are abandoned (their records may still be written).
        Returns a Deferred that fires when fully stopped; later sends fail with
        :exc:`~afkak.common.ClientError`.
        """
        if self._stopped:
            return succeed(None)
        self._stopped = True
        failure = Failure(CancelledError(request_sent=False, message="the producer was stopped"))
        self._routing.stop()
        self._accumulator.stop(failure)  # and the sender
        return succeed(None)


#: The types of a key or value that need no further check.
_PLAIN = frozenset({bytes, type(None)})


def _check_buffer(what: str, value: Any) -> None:
    """TypeError unless *value* (a key or value) is bytes-like or None."""
    if value is not None and not isinstance(value, _BYTES):
        raise TypeError(f"{what} must be bytes or None, not {value!r:.100}")


def _check_timestamp(timestamp: Any) -> None:
    if not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0:
        raise TypeError(f"timestamp must be a non-negative int (ms), not {timestamp!r}")
    if timestamp > _MAX_TIMESTAMP:
        raise ValueError(f"timestamp {timestamp} does not fit Kafka's int64")


def _check_partition(partition: Any) -> None:
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise TypeError(f"partition must be a non-negative int, not {partition!r}")


def _messages_size(topic: str, msgs: Any) -> int:
    """The buffer size of a ``send_messages`` call's *msgs* (without their keys), checked."""
    kind = type(msgs)
    if (
        kind is not list
        and kind is not tuple
        and (isinstance(msgs, (str, bytes)) or not isinstance(msgs, Sequence))
    ):
        raise TypeError(f"msgs must be a sequence of bytes or None, not {msgs!r:.100}")
    if not msgs:
        raise ValueError("msgs must be a non-empty sequence")
    return values_size(topic, msgs)


def _as_list(name: str, items: Any, n: int | None = None) -> list[Any]:
    """*items* (a sequence, of *n* items if given) as a list."""
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple, Sequence)):
        raise TypeError(f"{name} must be a sequence, not {items!r:.100}")
    if n is not None and len(items) != n:
        raise ValueError(f"{name} has {len(items)} items for {n} values")
    return items if type(items) is list else list(items)


def _check_records(
    values: list[Any], keys: list[Any] | None, headers: Any, timestamps: Any, partitions: Any
) -> tuple[Any, Any, Any]:
    """``send_records``' per-record *headers*, *timestamps* and *partitions*, checked."""
    n = len(values)
    if headers is not None:
        headers = _as_list("headers", headers, n)
        if _plain_headers is None or not _plain_headers(headers):
            headers = [h if h == () else _check_headers(h) for h in headers]
        if not any(headers):
            headers = None
    if timestamps is not None:
        timestamps = _as_list("timestamps", timestamps, n)
        for timestamp in timestamps:
            if timestamp is not None:
                _check_timestamp(timestamp)
    if partitions is not None:
        partitions = _as_list("partitions", partitions, n)
        for partition in partitions:
            if partition is not None:
                _check_partition(partition)
    return headers, timestamps, partitions


#: Whether a column of records' headers is what :func:`_check_headers` accepts
#: unchanged (compiled; None without the compiled record code).
_plain_headers: Callable[[list[Any]], bool] | None = getattr(
    compiled_records(), "plain_headers", None
)


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
