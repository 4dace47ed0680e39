"""KafkaClient: afkak's documented cluster-aware client, on the modern protocol.

This module is the facade: argument checks, the documented attributes and
methods, and the bookkeeping that lets :meth:`KafkaClient.close` cancel every
pending operation.  Routing and metadata live in :mod:`._cluster`, the
per-API encoding in the ``_*_call`` modules.
"""

from __future__ import annotations

import random
import warnings
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from twisted.internet import defer
from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._retry import reconnect_backoff
from afkak.common import (
    BrokerMetadata,
    CancelledError,
    ClientError,
    FetchRequest,
    FetchResponse,
    KafkaUnavailableError,
    MessageSizeTooLargeError,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetRequest,
    OffsetResponse,
    ProduceRequest,
    ProduceResponse,
    TopicAndPartition,
)
from afkak.connection import BrokerConnection, default_endpoint_factory
from afkak.metrics import CLIENT, MetricName, Metrics
from afkak.records.aborted import isolation_level as isolation_level_of

from . import _validate as check
from ._cluster import RECOVERY_STRATEGIES, Cluster
from ._fanout import checked, fan_out, finish
from ._hosts import format_host_port, parse_hosts
from ._list_offsets_call import ListOffsetsCall
from ._pool import ConnectionPool
from ._roles import CommitResult, FetchResult, OffsetFetchResult, OffsetResult, ProduceResult
from ._routing import group_by_broker, payload_key

# What a client does only if asked is imported where it is asked for (produce, fetch,
# commits, statistics, telemetry, SASL, TLS): a process that only looks up offsets
# (a Spark planner, the streaming source's runner) imports the rest alone.
if TYPE_CHECKING:
    from afkak.connection import SaslMechanism

    from ._commit_calls import OffsetCommitCall, OffsetFetchCall
    from ._fetch_call import FetchCall
    from ._produce_call import ProduceCall

log = Logger()
T = TypeVar("T")

_ACKS = (-1, 0, 1)

#: Kafka's default ``max.request.size`` (and, give or take the log overhead,
#: the broker's default ``message.max.bytes``).
DEFAULT_MAX_REQUEST_SIZE = 1024 * 1024


class KafkaClient:
    """Cluster-aware Kafka client.

    Keeps a cache of cluster metadata (brokers, topic partitions, leaders,
    group coordinators) and routes each request to the right broker.  It is
    bootstrapped from the *hosts* given; use :meth:`close` to dispose of it.
    Do not set or mutate its attributes; it is not meant to be subclassed.

    :param hosts: ``"host[:port],..."``, or a list of ``"host[:port]"``
        strings or ``(host, port)`` tuples; IPv6 literals in brackets when a
        port follows; the default port is 9092.
    :param clientId: ``str`` sent to brokers to identify the client.
    :param timeout: client-side request timeout, in **milliseconds**
        (available as ``timeout`` in seconds).  Fetch and produce requests
        get the server-side wait on top.
    :param disconnect_on_timeout: drop a broker's connection when a request to
        it times out.
    :param correlation_id: afkak 21's; inert (checked, kept as
        ``correlation_id``, never sent; a value other than 0 warns with a
        ``DeprecationWarning``): correlation ids are now per connection.
    :param reactor: provides IReactorTime and what *endpoint_factory* needs;
        by default the global reactor.
    :param endpoint_factory: ``(reactor, host, port) -> IStreamClientEndpoint``.
    :param retry_policy: seconds to wait before reconnecting to a broker, given
        the number of consecutive failures; by default Kafka's reconnect
        backoff, 50 ms doubling to 1 s with ±20 % jitter
        (``reconnect.backoff.ms``, ``reconnect.backoff.max.ms``).
    :param metadata_max_age: seconds between periodic metadata refreshes of
        the known topics (``None``: never).
    :param tls: secure every broker connection with TLS: ``True`` (the
        platform's CAs), an :class:`afkak.TLS` (trust root, client certificate,
        hostname verification), an ``ssl.SSLContext``, or a Twisted
        ``CertificateOptions``.  It wraps
        the endpoints *endpoint_factory* makes.  See :doc:`/security`.
    :param sasl: authenticate every broker connection with this SASL
        mechanism: :class:`afkak.Plain`, :class:`afkak.Scram`
        (:func:`afkak.ScramSha256`, :func:`afkak.ScramSha512`),
        :class:`afkak.OAuthBearer`, or any
        :class:`~afkak.connection.SaslMechanism`.
    :param max_request_size: the largest record batch :meth:`send_produce_request`
        (and, by default, a :class:`~afkak.producer.Producer`) writes, in bytes
        estimated before compression: Kafka's ``max.request.size``, 1 MiB by
        default.  Set it to the broker's ``message.max.bytes`` if that is lower.
    :param statistics_interval_ms: call *stats_cb* this often (0, the default:
        never) with a JSON document shaped like librdkafka's statistics
        (brokers, topics and partitions, the group, totals).  See :doc:`/monitoring`.
    :param stats_cb: called with that document (a ``str``), as librdkafka's ``stats_cb``.
    :param enable_metrics_push: push this client's metrics to brokers that ask
        for them (KIP-714, Java's ``enable.metrics.push``, on by default).  A
        broker without a client-telemetry plugin is sent nothing.  See
        :doc:`/monitoring`.
    :param metadata_recovery_strategy: what to do when no known broker answers
        (Kafka's ``metadata.recovery.strategy``, KIP-899/KIP-1102):
        ``"rebootstrap"`` (the default, as Java's 4.x client) goes back to *hosts*,
        their names resolved again, and forgets the known brokers when a broker
        answers REBOOTSTRAP_REQUIRED or no Metadata came for
        *metadata_recovery_rebootstrap_trigger_ms*; ``"none"`` never uses *hosts*
        again once brokers are known.
    :param metadata_recovery_rebootstrap_trigger_ms: how long Metadata loads may
        fail before the client rebootstraps (Kafka's
        ``metadata.recovery.rebootstrap.trigger.ms``, 300,000 by default).
    :param rng: the random source of every jitter and shuffle on this client and
        the producers, consumers and groups built on it (backoffs, the first
        telemetry push, the order bootstrap hosts are tried in): injectable, as
        the reactor is, so tests can seed it.  By default one seeded from the
        :mod:`random` module.
    """

    clientId = "afkak-client"
    DEFAULT_REQUEST_TIMEOUT_MSECS = 10000
    DEFAULT_FETCH_SERVER_WAIT_MSECS = 5000
    DEFAULT_FETCH_MIN_BYTES = 4096
    DEFAULT_REPLICAS_ACK_MSECS = 1000
    DEFAULT_METADATA_MAX_AGE = 300.0

    def __init__(
        self,
        hosts: Any,
        clientId: str | None = None,
        timeout: float = DEFAULT_REQUEST_TIMEOUT_MSECS,
        disconnect_on_timeout: bool = False,
        correlation_id: int = 0,
        reactor: Any = None,
        endpoint_factory: Callable[[Any, str, int], Any] = default_endpoint_factory,
        retry_policy: Callable[[int], float] | None = None,
        metadata_max_age: float | None = DEFAULT_METADATA_MAX_AGE,
        *,
        tls: Any = None,
        sasl: SaslMechanism | None = None,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        statistics_interval_ms: int = 0,
        stats_cb: Callable[[str], object] | None = None,
        enable_metrics_push: bool = True,
        metadata_recovery_strategy: str = "rebootstrap",
        metadata_recovery_rebootstrap_trigger_ms: int = 300_000,
        rng: random.Random | None = None,
    ) -> None:
        bootstrap = parse_hosts(hosts)
        if not isinstance(enable_metrics_push, bool):
            raise TypeError(f"enable_metrics_push must be a bool, not {enable_metrics_push!r}")
        if clientId is not None:
            if not isinstance(clientId, str):
                raise TypeError(f"clientId must be a str, not {clientId!r}")
            self.clientId = clientId
        check.number("timeout", timeout)
        if metadata_max_age is not None:
            check.number("metadata_max_age", metadata_max_age)
        if rng is not None and not isinstance(rng, random.Random):
            raise TypeError(f"rng must be a random.Random, not {rng!r}")
        #: The random source of every jitter on this client and the layers above it.
        self.rng = random.Random(random.getrandbits(64)) if rng is None else rng
        if retry_policy is None:
            retry_policy = reconnect_backoff(self.rng.uniform)
        if not callable(endpoint_factory) or not callable(retry_policy):
            raise TypeError("endpoint_factory and retry_policy must be callable")
        if not isinstance(disconnect_on_timeout, int):  # bool, or 21.5's 0/1
            raise TypeError(f"disconnect_on_timeout must be a bool, not {disconnect_on_timeout!r}")
        self.correlation_id = check.integer("correlation_id", correlation_id, 0, check.INT32_MAX)
        if correlation_id:
            warnings.warn(
                "KafkaClient(correlation_id=) is inert: each connection numbers its own requests",
                DeprecationWarning,
                stacklevel=2,
            )
        #: Bytes a record batch may have at most (estimated before compression).
        self.max_request_size = check.integer(
            "max_request_size", max_request_size, 1024, check.INT32_MAX
        )
        if reactor is None:
            from twisted.internet import reactor
        self.reactor = check.reactor_time("reactor", reactor)
        self.timeout = timeout / 1000.0
        self._disconnect_on_timeout = bool(disconnect_on_timeout)
        endpoint_factory = _secured(endpoint_factory, tls, sasl)
        #: The :class:`~afkak.metrics.Metrics` every layer on this client records into.
        self.metrics_registry = Metrics(reactor, client_id=self.clientId)
        self.metrics_registry.add_gauge(
            MetricName(
                "connection-count", CLIENT, "Open connections", {"client-id": self.clientId}
            ),
            lambda now: pool.connection_count(),
        )
        pool = ConnectionPool(
            reactor,
            endpoint_factory,
            retry_policy,
            self.clientId,
            self.timeout,
            self._request_timed_out,
            sasl,
            self.metrics_registry,
            on_ready=self._connection_ready,
        )
        self._telemetry = None
        if enable_metrics_push:
            from ._telemetry import TelemetryPusher

            self._telemetry = TelemetryPusher(
                reactor,
                self.metrics_registry,
                # Fetch connections last: a long-polling Fetch holds what queues behind it.
                lambda: [c for lane in pool.lanes() for c in lane.values()],
                self.clientId,
                self.timeout,
                self.rng,
            )
        #: Seconds between periodic metadata refreshes (None: never).
        self.metadata_max_age = metadata_max_age
        self._cluster = Cluster(
            reactor,
            pool,
            bootstrap,
            metadata_max_age,
            coordinator_timeout=self.timeout,
            retry_policy=retry_policy,
            rng=self.rng,
            recovery=check.one_of(
                "metadata_recovery_strategy", metadata_recovery_strategy, RECOVERY_STRATEGIES
            ),
            rebootstrap_trigger=check.integer(
                "metadata_recovery_rebootstrap_trigger_ms",
                metadata_recovery_rebootstrap_trigger_ms,
                0,
                check.INT32_MAX,
            )
            / 1000.0,
        )
        self._statistics = None
        if check.integer("statistics_interval_ms", statistics_interval_ms, 0, check.INT32_MAX):
            from ._statistics import start_statistics

            self._statistics = start_statistics(
                reactor,
                self.clientId,
                self._cluster,
                self.metrics_registry,
                statistics_interval_ms,
                stats_cb,
            )
        self._pending: set[Deferred[Any]] = set()
        #: (One bound method for every request's Deferred to leave ``_pending`` by.)
        self._forget_pending = self._pending.discard
        self._closed: Deferred[None] | None = None
        self._shared: dict[Callable[[Any], Any], Any] = {}

    def shared(self, factory: Callable[[KafkaClient], T]) -> T:
        """The one ``factory(self)`` of this client, made on first use.

        What a layer above shares among all its users of this client (the
        consumers' fetch manager) is kept here, so it lives and goes with the
        client rather than in a registry of clients.
        """
        found = self._shared.get(factory)
        if found is None:
            found = self._shared[factory] = factory(self)
        return found

    def __repr__(self) -> str:
        hosts = ",".join(format_host_port(h, p) for h, p in self._cluster.bootstrap_hosts)
        return f"<KafkaClient clientId={self.clientId} hosts={hosts} timeout={self.timeout}>"

    # -- documented attributes ---------------------------------------------

    @property
    def topic_partitions(self) -> dict[str, list[int]]:
        """Topic name -> sorted partition numbers."""
        return self._cluster.cache.topic_partitions

    @property
    def topics_to_brokers(self) -> Mapping[TopicAndPartition, Any]:
        """TopicAndPartition -> leader's BrokerMetadata (``None``: no leader); read-only."""
        return self._cluster.cache.topics_to_brokers

    @property
    def partition_meta(self) -> Mapping[TopicAndPartition, Any]:
        """TopicAndPartition -> PartitionMetadata; read-only, built on access."""
        return self._cluster.cache.partition_meta

    @property
    def topic_errors(self) -> dict[str, int]:
        """Topic name -> error code of its last metadata."""
        return self._cluster.cache.topic_errors

    @property
    def clients(self) -> dict[int, BrokerConnection]:
        """Node id -> connection (private despite the name)."""
        return self._cluster.pool.clients

    @property
    def clock(self) -> Any:
        """The reactor (afkak 21's name for it)."""
        return self.reactor

    def consumer_group_to_brokers(self) -> dict[str, Any]:
        """A copy of the cached group name -> coordinator's BrokerMetadata."""
        return dict(self._cluster.cache.coordinators)

    @property
    def _brokers(self) -> dict[int, Any]:
        """Node id -> BrokerMetadata of every known broker."""
        return self._cluster.cache.brokers

    def metrics(self) -> dict[MetricName, float]:
        """Every metric of this client and the layers on it: ``{MetricName: value}``.

        As Java's (and kafka-python's) ``metrics()``; see :doc:`/monitoring`.
        """
        return self.metrics_registry.metrics()

    # -- metadata -----------------------------------------------------------

    def update_cluster_hosts(self, hosts: Any) -> None:
        """Advise the client of new bootstrap hosts, used when no known broker answers."""
        self._cluster.bootstrap_hosts = parse_hosts(hosts)

    def reset_topic_metadata(self, *topics: str) -> None:
        """Forget the cached metadata of these topics."""
        self._cluster.cache.reset_topics(*(check.topic_name(t) for t in topics))

    def reset_consumer_group_metadata(self, *groups: str) -> None:
        """Forget which brokers coordinate these groups."""
        self._cluster.cache.reset_groups(*(check.group_name(g) for g in groups))

    def reset_all_metadata(self) -> None:
        """Forget all cached topic and coordinator metadata."""
        self._cluster.cache.reset_all()

    def has_metadata_for_topic(self, topic: str) -> bool:
        return check.topic_name(topic) in self._cluster.cache.topic_partitions

    def metadata_error_for_topic(self, topic: str) -> int:
        """The topic's error code from its last metadata (3, unknown topic, if none)."""
        return self._cluster.cache.error_for_topic(check.topic_name(topic))

    def partition_fully_replicated(self, topic_and_part: TopicAndPartition) -> bool:
        """Whether all of the partition's replicas are in sync, as last known."""
        return self._cluster.cache.partition_fully_replicated(topic_and_part)

    def topic_fully_replicated(self, topic: str) -> bool:
        """Whether the topic has partitions and all their replicas are in sync, as last known."""
        return self._cluster.cache.topic_fully_replicated(check.topic_name(topic))

    def load_metadata_for_topics(self, *topics: str) -> Deferred[bool | None]:
        """Load metadata for *topics* (all topics when none is given).

        Naming topics may auto-create them (if the brokers allow it).  Fires
        ``True`` on success, ``None`` if cancelled; fails with
        :exc:`KafkaUnavailableError`.
        """
        names = tuple(check.topic_name(t) for t in topics)
        return self._operation(self._load_metadata(names or None))

    async def _load_metadata(self, topics: tuple[str, ...] | None) -> bool | None:
        try:
            await self._cluster.load_metadata(topics)
        except (CancelledError, defer.CancelledError):
            if self._closed is not None:
                raise
            return None
        except KafkaUnavailableError:
            raise
        except Exception as e:
            raise KafkaUnavailableError(
                f"Failed to load metadata for topics={topics!r}: {e}"
            ) from e
        return True

    def load_coordinator_for_group(self, group: str) -> Deferred[bool]:
        """Look up the group's coordinator.

        Fires ``True``, or fails with :exc:`CoordinatorNotAvailable`.
        """
        group = check.group_name(group)
        return self._operation(self._load_coordinator(group))

    async def _load_coordinator(self, group: str) -> bool:
        await self._cluster.load_coordinator(group)
        return True

    def load_consumer_metadata_for_group(self, group: str) -> Deferred[bool]:
        """Deprecated alias of :meth:`load_coordinator_for_group`."""
        warnings.warn(
            "load_consumer_metadata_for_group() has been renamed load_coordinator_for_group()",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.load_coordinator_for_group(group)

    # -- partition requests --------------------------------------------------

    def send_produce_request(
        self,
        payloads: Sequence[ProduceRequest] | None = None,
        acks: int = 1,
        timeout: int = DEFAULT_REPLICAS_ACK_MSECS,
        fail_on_error: bool = True,
        callback: Callable[[ProduceResponse], ProduceResult] | None = None,
    ) -> Deferred[list[ProduceResult]]:
        """Write each payload's messages to its partition's leader, one request per broker.

        Fires with a :class:`ProduceResponse` per payload, in payload order (an
        empty list with ``acks=0``, which gets no response).  A payload larger
        than :attr:`max_request_size` is written as several record batches,
        in order, one request after the other (a batch the broker refuses as
        too large is halved and sent again); its response carries the first
        batch's offset, or the error that stopped it.  A payload holding a
        record that cannot fit in a batch alone gets
        :exc:`MessageSizeTooLargeError` and nothing of it is written.
        """
        items = check.payload_list(payloads, ProduceRequest)
        if acks not in _ACKS or isinstance(acks, bool):
            raise ValueError(f"acks must be one of {_ACKS}, not {acks!r}")
        check.integer("timeout", timeout, 0, check.INT32_MAX)
        check.optional_callable("callback", callback)
        from ._produce_call import records_of

        prepared = [records_of(p.messages) for p in items]
        return self._operation(
            self._produce(items, prepared, acks, timeout, fail_on_error, callback)
        )

    async def _produce(
        self,
        items: Sequence[ProduceRequest],
        prepared: Sequence[tuple[list[Any], int]],
        acks: int,
        timeout: int,
        fail_on_error: bool,
        callback: Callable[[Any], Any] | None,
    ) -> list[Any]:
        """Send the payloads' batches in rounds: a payload's next batch goes once its last is in."""
        from ._produce_call import ProduceCall, encode_records
        from ._produce_split import halve

        now_ms = int(self.reactor.seconds() * 1000)
        waiting, results = _payload_batches(items, prepared, self.max_request_size)
        while True:
            chosen = _next_round(items, waiting, results)
            if not chosen:
                break
            sent = {key: waiting[i].popleft() for key, i in chosen.items()}
            encoded = {
                key: encode_records(sent[key], prepared[i][1], now_ms) for key, i in chosen.items()
            }

            def make_call(
                batch: Sequence[ProduceRequest], encoded: dict[Any, bytes] = encoded
            ) -> ProduceCall:
                return ProduceCall(batch, acks, timeout, encoded, self._cluster.cache.topic_ids)

            responses = await self._to_leaders(
                [items[i] for i in sorted(chosen.values())],
                make_call,
                False,
                None,
                timeout / 1000,
                expect_response=acks != 0,
            )
            for r in responses:
                key = (r.topic, r.partition)
                i = chosen[key]
                if r.error == MessageSizeTooLargeError.errno and len(sent[key]) > 1:
                    waiting[i].extendleft(reversed(halve(sent[key])))
                elif results[i] is None or r.error:
                    results[i] = r
        return [] if acks == 0 else checked(results, fail_on_error, callback)

    def send_fetch_request(
        self,
        payloads: Sequence[FetchRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[FetchResponse], FetchResult] | None = None,
        max_wait_time: int = DEFAULT_FETCH_SERVER_WAIT_MSECS,
        min_bytes: int = DEFAULT_FETCH_MIN_BYTES,
        *,
        isolation_level: str | int = "read_uncommitted",
    ) -> Deferred[list[FetchResult]]:
        """Fetch from each payload's partition leader, one request per broker.

        Fires with a :class:`FetchResponse` per payload, whose ``messages``
        decode lazily to :class:`OffsetAndMessage` tuples from the payload's
        offset on.  With *isolation_level* ``"read_committed"`` (or its wire
        value 1) the fetch stops at the last stable offset
        (``messages.last_stable_offset``) and aborted transactions' records
        are left out.
        """
        from ._fetch_call import FetchCall

        level = isolation_level_of(isolation_level)
        items = check.payload_list(payloads, FetchRequest)
        for p in items:
            check.integer("fetch offset", p.offset, 0, check.INT64_MAX)
            check.integer("max_bytes", p.max_bytes, 0, check.INT32_MAX)
        check.integer("max_wait_time", max_wait_time, 0, check.INT32_MAX)
        check.integer("min_bytes", min_bytes, 0, check.INT32_MAX)
        check.optional_callable("callback", callback)

        def make_call(batch: Sequence[FetchRequest]) -> FetchCall:
            return FetchCall(batch, max_wait_time, min_bytes, self._cluster.cache.topic_ids, level)

        return self._operation(
            self._to_leaders(items, make_call, fail_on_error, callback, max_wait_time / 1000)
        )

    def send_offset_request(
        self,
        payloads: Sequence[OffsetRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetResponse], OffsetResult] | None = None,
        *,
        isolation_level: str | int = "read_uncommitted",
    ) -> Deferred[list[OffsetResult]]:
        """Look up offsets by time (-1 latest, -2 earliest) at each partition's leader.

        Fires with an :class:`OffsetResponse` per payload; ``offsets`` is a
        1-tuple (``max_offsets`` is ignored by modern brokers).  With
        *isolation_level* ``"read_committed"`` (or its wire value 1), latest
        is the last stable offset.
        """
        level = isolation_level_of(isolation_level)
        items = check.payload_list(payloads, OffsetRequest)
        for p in items:
            check.integer("time", p.time, check.INT64_MIN, check.INT64_MAX)
        check.optional_callable("callback", callback)
        timeout_ms = int(self.timeout * 1000)
        return self._operation(
            self._to_leaders(
                items,
                lambda batch: ListOffsetsCall(batch, timeout_ms, level),
                fail_on_error,
                callback,
                0,
            )
        )

    async def _to_leaders(
        self,
        payloads: Sequence[Any],
        make_call: Callable[[Sequence[Any]], Any],
        fail_on_error: bool,
        callback: Callable[[Any], Any] | None,
        server_wait: float,
        expect_response: bool = True,
    ) -> list[Any]:
        leaders = await self._cluster.leaders(payload_key(p) for p in payloads)
        batches = group_by_broker(payloads, lambda p: leaders[payload_key(p)])

        def lost(batch: Sequence[Any], failure: Failure) -> None:
            self._cluster.note_lost_leader((payload_key(p) for p in batch), failure)

        outcomes = await fan_out(
            self._cluster,
            batches,
            make_call,
            lost,
            expect_response=expect_response,
            timeout=self.timeout + server_wait,
        )
        return finish(
            self._cluster,
            payloads,
            outcomes,
            fail_on_error,
            callback,
            expect_response=expect_response,
        )

    # -- group requests ------------------------------------------------------

    def send_offset_commit_request(
        self,
        group: str,
        payloads: Sequence[OffsetCommitRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetCommitResponse], CommitResult] | None = None,
        group_generation_id: int = -1,
        consumer_id: str = "",
    ) -> Deferred[list[CommitResult]]:
        """Commit offsets for *group* at its coordinator; each offset is stored as given.

        Fires with an :class:`OffsetCommitResponse` per payload.
        """
        from ._commit_calls import OffsetCommitCall, metadata_text

        group = check.group_name(group)
        items = check.payload_list(payloads, OffsetCommitRequest)
        for p in items:
            check.integer("offset", p.offset, check.INT64_MIN, check.INT64_MAX)
            metadata_text(p.metadata)
        check.integer("group_generation_id", group_generation_id, -(2**31), check.INT32_MAX)
        if not isinstance(consumer_id, str):
            raise TypeError(f"consumer_id must be a str, not {consumer_id!r}")
        check.optional_callable("callback", callback)

        def make_call(batch: Sequence[OffsetCommitRequest]) -> OffsetCommitCall:
            ids = self._cluster.cache.topic_ids
            return OffsetCommitCall(group, batch, group_generation_id, consumer_id, ids)

        return self._operation(
            self._to_coordinator(group, items, make_call, fail_on_error, callback)
        )

    def send_offset_fetch_request(
        self,
        group: str,
        payloads: Sequence[OffsetFetchRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetFetchResponse], OffsetFetchResult] | None = None,
        *,
        require_stable: bool = False,
    ) -> Deferred[list[OffsetFetchResult]]:
        """Fetch *group*'s committed offsets (-1 where none) from its coordinator.

        Fires with an :class:`OffsetFetchResponse` per payload; ``metadata``
        is ``bytes`` (``None`` when unset).  With *require_stable*, offsets
        that an open transaction staged fail with the retriable
        :class:`UnstableOffsetCommit` instead (KIP-447).
        """
        from ._commit_calls import OffsetFetchCall

        group = check.group_name(group)
        items = check.payload_list(payloads, OffsetFetchRequest)
        check.optional_callable("callback", callback)

        def make_call(batch: Sequence[OffsetFetchRequest]) -> OffsetFetchCall:
            return OffsetFetchCall(group, batch, self._cluster.cache.topic_ids, require_stable)

        return self._operation(
            self._to_coordinator(group, items, make_call, fail_on_error, callback)
        )

    async def _to_coordinator(
        self,
        group: str,
        payloads: Sequence[Any],
        make_call: Callable[[Sequence[Any]], Any],
        fail_on_error: bool,
        callback: Callable[[Any], Any] | None,
    ) -> list[Any]:
        coordinator = await self._cluster.coordinator(group)

        def lost(batch: Sequence[Any], failure: Failure) -> None:
            self._cluster.note_lost_coordinator(group, failure)

        outcomes = await fan_out(
            self._cluster,
            {coordinator: payloads},
            make_call,
            lost,
            timeout=self.timeout,
            coordinator=True,
        )
        return finish(self._cluster, payloads, outcomes, fail_on_error, callback, group=group)

    # -- raw requests, for afkak's higher layers ------------------------------

    def send_request_to_coordinator(
        self,
        group: str,
        request: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> Deferred[Any]:
        """Send a protocol request (message or builder) to *group*'s coordinator.

        For the group membership APIs.  Fires with the decoded response; a
        top-level NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE error in it, or a
        lost connection, makes the client look the coordinator up again next
        time.  *timeout* is in seconds (default: the client's).
        """
        group = check.group_name(group)
        return self._operation(
            self._cluster.request_coordinator(
                group,
                request,
                min_version=min_version,
                max_version=max_version,
                timeout=self.timeout if timeout is None else timeout,
            )
        )

    def send_request_to_any_broker(
        self, request: Any, *, min_version: int | None = None, max_version: int | None = None
    ) -> Deferred[Any]:
        """Send a protocol request that any broker can answer; fires with the response.

        Fails with :exc:`KafkaUnavailableError` when no broker (known or
        bootstrap) answers.
        """
        return self._operation(self._cluster.request_any(request, min_version, max_version))

    @property
    def topic_ids(self) -> Mapping[str, UUID]:
        """Topic name -> topic id, for the topics Metadata (v10+) gave an id (read-only).

        Fetch v13+ names topics by id; the consumer builds its fetches with these.
        """
        return MappingProxyType(self._cluster.cache.topic_ids)

    def finalized_feature(self, name: str) -> int:
        """The cluster's finalized level of feature *name* (0: not finalized), as the
        connection negotiated with the newest feature epoch heard it (Java's ApiVersions).

        The transactional producer reads ``transaction.version`` here (KIP-890).
        """
        conns = [c for lane in self._cluster.pool.lanes() for c in lane.values()]
        newest = max(conns, key=lambda c: c.finalized_features_epoch, default=None)
        return 0 if newest is None else newest.finalized_features.get(name, 0)

    def leaders_for(
        self, partitions: Iterable[TopicAndPartition]
    ) -> Deferred[dict[TopicAndPartition, BrokerMetadata]]:
        """The leader broker of each partition, loading unknown ones in one Metadata request.

        For the producer and consumer layers, which route their own requests.
        Fails with :exc:`PartitionUnavailableError` for a partition the cluster
        does not have and :exc:`LeaderUnavailableError` for one without a leader.
        """
        return self._operation(self._cluster.leaders(partitions))

    def send_request_to_broker(
        self,
        broker: BrokerMetadata,
        request: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> Deferred[Any]:
        """Send a protocol request (message or builder) to *broker*; fires with the response.

        Nothing is retried or resent: a lost connection fails the Deferred with a
        retriable :exc:`BrokerConnectionError` and the caller decides. *timeout*
        is in seconds (default: the client's).
        """
        if self._closed is not None:
            return fail(ClientError(f"{self!r} has been closed"))
        d = self._cluster.request(
            broker,
            request,
            min_version=min_version,
            max_version=max_version,
            expect_response=expect_response,
            timeout=self.timeout if timeout is None else timeout,
            settled=self._forget_pending,
        )
        if not d.called:
            self._pending.add(d)
        return d

    def leader_epoch(self, key: TopicAndPartition) -> int:
        """The partition's leader epoch as last loaded (-1: unknown; Metadata v7+, KIP-320).

        Consumers fetch with it (``current_leader_epoch``): a broker whose
        epoch differs answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH.
        """
        return self._cluster.cache.leader_epoch(key)

    def broker_by_id(self, node_id: int) -> BrokerMetadata | None:
        """The known broker *node_id* (None: not in the last metadata)."""
        return self._cluster.cache.brokers.get(node_id)

    def note_new_leader(
        self, partition: TopicAndPartition, current_leader: Any, node_endpoints: Any = ()
    ) -> bool:
        """KIP-951: a Produce (v10+) or Fetch (v12+) error's ``current_leader`` (with the
        response's ``node_endpoints``, v16+ / v10+) names the partition's new leader: route
        to it at once, no Metadata round trip.  The :meth:`note_stale_leaders` that follows
        the error keeps it.  False when the hint is unusable: the refresh then finds it.
        """
        if current_leader is None or current_leader.leader_id < 0:
            return False
        return self._cluster.hint_leader(
            partition, current_leader.leader_id, current_leader.leader_epoch, node_endpoints
        )

    def note_stale_leaders(self, partitions: Iterable[TopicAndPartition]) -> None:
        """Forget the leaders of *partitions*: the next lookup loads fresh metadata.

        For the layers above, when a broker answers NOT_LEADER_OR_FOLLOWER and the like.
        """
        for key in partitions:
            self._cluster.cache.reset_leader(key)

    # -- lifecycle ------------------------------------------------------------

    def close(self) -> Deferred[None]:
        """Permanently dispose of the client.

        Pending operations fail with :exc:`CancelledError`, later ones with
        :exc:`ClientError`; cached metadata is cleared and every broker
        connection closed.  Fires once all resources are released.
        """
        if self._closed is None:
            log.debug("{client}: close", client=repr(self))
            closed = self._closed = Deferred()
            if self._statistics is not None:
                self._statistics.stop()
            for d in list(self._pending):
                d.cancel()
            # KIP-714: the last push, marked terminating, goes before the connections close.
            pushed = defer.succeed(None) if self._telemetry is None else self._telemetry.close()
            pushed.addCallback(lambda _: self._cluster.close()).chainDeferred(closed)
        waiter: Deferred[None] = Deferred()
        self._closed.addBoth(_fire_and_pass, waiter)
        return waiter

    def _operation(self, coro: Coroutine[Any, Any, Any]) -> Deferred[Any]:
        """Run a public operation: cancellable, and cancelled by :meth:`close`."""
        if self._closed is not None:
            coro.close()
            return fail(ClientError(f"{self!r} has been closed"))
        d = Deferred.fromCoroutine(coro)
        if not d.called:
            self._pending.add(d)
            d.addBoth(self._settled, d)
        return d.addErrback(_cancelled_as_afkak)

    def _settled(self, result: Any, d: Deferred[Any]) -> Any:
        self._pending.discard(d)
        return result

    def _connection_ready(self, conn: BrokerConnection) -> None:
        if self._telemetry is not None:
            self._telemetry.connection_ready(conn)

    def _request_timed_out(self, conn: BrokerConnection, request_sent: bool) -> None:
        if self._disconnect_on_timeout:
            log.info("Disconnecting {conn} after a request timed out", conn=repr(conn))
            conn.disconnect()


def _cancelled_as_afkak(failure: Failure) -> Failure:
    """Report Twisted's cancellation as afkak's :exc:`CancelledError`, as the connection does."""
    if failure.check(defer.CancelledError):
        return Failure(CancelledError(message=str(failure.value) or "cancelled"))
    return failure


def _fire_and_pass(result: Any, waiter: Deferred[None]) -> Any:
    waiter.callback(None)
    return result


def _secured(endpoint_factory: Any, tls: Any, sasl: SaslMechanism | None) -> Any:
    """*endpoint_factory* over TLS if *tls* asks for it, *sasl* checked (the client's
    security arguments)."""
    if sasl is not None:
        from afkak.connection import SaslMechanism

        if not isinstance(sasl, SaslMechanism):
            raise TypeError(f"sasl must be a SaslMechanism (name and start()), not {sasl!r}")
    if tls is not None and tls is not False:
        from afkak.connection import tls_endpoint_factory

        return tls_endpoint_factory(tls, endpoint_factory)
    return endpoint_factory


def _payload_batches(
    items: Sequence[ProduceRequest], prepared: Sequence[tuple[list[Any], int]], limit: int
) -> tuple[list[deque[list[Any]]], list[Any]]:
    """Each payload's records cut into batches of at most *limit* bytes, and its result so
    far (a ProduceResponse for a record too large alone, else None until known)."""
    from ._produce_split import split_records

    waiting: list[deque[list[Any]]] = []
    results: list[Any] = []
    for p, (records, _) in zip(items, prepared, strict=True):
        batches = split_records(records, limit)
        waiting.append(deque(batches or ()))
        too_large = MessageSizeTooLargeError.errno
        results.append(None if batches else ProduceResponse(p.topic, p.partition, too_large, -1))
    return waiting, results


def _next_round(
    items: Sequence[ProduceRequest], waiting: list[deque[list[Any]]], results: list[Any]
) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the payload whose next batch goes in this round (none that failed)."""
    chosen: dict[tuple[str, int], int] = {}
    for i, p in enumerate(items):
        failed = results[i] is not None and results[i].error
        if waiting[i] and not failed:
            chosen[p.topic, p.partition] = i
    return chosen
