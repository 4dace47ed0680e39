"""FakeKafkaCluster: an in-memory multi-broker Kafka cluster speaking the real protocol.

The facade tests use: connecting, setup, fault injection and inspection.  It
owns a :class:`~afkak.testing._cluster_state.ClusterState` (brokers, topics,
logs, groups, transactions, faults), which :mod:`afkak.testing._handlers`
reads and changes to answer the requests, and the in-memory connections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload
from uuid import UUID

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, fail
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.interfaces import IProtocolFactory, IStreamClientEndpoint
from twisted.internet.task import Clock
from zope.interface import implementer

from afkak._broker_errors import BrokerResponseError
from afkak.protocol import Message
from afkak.protocol.messages import REQUESTS
from afkak.records import Record, build_batch, read_batches
from afkak.testing._cluster_state import ClusterState
from afkak.testing._handlers import OPT_IN_APIS, SERVED_APIS, ConnectionHandler
from afkak.testing._lookup import code
from afkak.testing._server import KafkaServerFactory, KafkaServerProtocol
from afkak.testing._share_groups import ShareGroupCoordinator
from afkak.testing._state import CommittedOffset, FakeBroker, FakePartition, FakeTopic, SeenRequest
from afkak.testing._telemetry_state import FakeClientTelemetry
from afkak.testing._transport import DeliveryLoop, connect_pair

T = TypeVar("T")


class _Shared(Generic[T]):
    """An attribute of the facade that is its state's attribute of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, cluster: None, owner: type) -> _Shared[T]: ...
    @overload
    def __get__(self, cluster: FakeKafkaCluster, owner: type | None = None) -> T: ...
    def __get__(
        self, cluster: FakeKafkaCluster | None, owner: type | None = None
    ) -> T | _Shared[T]:
        if cluster is None:  # looked up on the class (help(), Sphinx)
            return self
        value: T = getattr(cluster.state, self._name)
        return value

    def __set__(self, cluster: FakeKafkaCluster, value: T) -> None:
        setattr(cluster.state, self._name, value)


ApiKeyLike = int | type[Message]
ErrorCodeLike = int | type[BrokerResponseError]


class FakeKafkaCluster:
    """An in-memory Kafka cluster for tests, reached through :meth:`endpoint_factory`.

    :param brokers: number of broker nodes; node ``N`` listens at
        ``broker-N:9092``.
    :param reactor: the clock for Fetch long-polls and injected delays; a new
        :class:`~twisted.internet.task.Clock` (``cluster.reactor``) by default.
    :param auto_create_topics: whether Metadata requests create unknown topics
        (when the request allows it), with ``default_partitions`` partitions.
    :param default_replication: replication factor of topics created without
        one; ``min(3, brokers)`` by default.
    :param api_versions: ``{api_key: (min, max)}`` overriding the advertised
        version ranges; by default each served API's whole range.  A range of
        ``None`` stops advertising (and serving) that API.
    :param max_message_bytes: the largest batch Produce accepts.

    What a test uses, all of it below:

    - connecting: :attr:`bootstrap_hosts`, :meth:`endpoint_factory`, :attr:`reactor`;
    - options: :attr:`auto_create_topics`, :attr:`rack_aware_replica_selector`,
      :attr:`share_groups` (share groups' settings);
    - setup: :meth:`create_topic`, :meth:`delete_topic`, :meth:`append`,
      :meth:`commit`, :meth:`delete_records`, :meth:`enable_client_telemetry`;
    - faults: :meth:`fail_next`, :meth:`drop_next`, :meth:`drop_answer_next`,
      :meth:`delay`, :meth:`drop_connections`, :meth:`refuse_connections`,
      :meth:`move_leader`, :meth:`unclean_election`, :meth:`set_broker_down`,
      :meth:`set_broker_up`, :meth:`forget_producers`;
    - inspection: :attr:`requests_seen`, :meth:`records`,
      :attr:`committed_offsets`, :meth:`partition`,
      :meth:`topic_id`, :meth:`coordinator`, :meth:`open_connections`.

    Expert: ``state`` (:class:`~afkak.testing._cluster_state.ClusterState`)
    is what the request handlers share and change, for tests of afkak's
    own protocol edges: ``state.brokers`` (node id -> :class:`FakeBroker`),
    ``state.topics`` (name -> :class:`FakeTopic`), ``state.api_versions``,
    ``state.group_coordinator`` and ``state.consumer_groups`` (the two group
    protocols' coordinators), ``state.transactions`` (the transaction
    coordinator), ``state.sessions`` (KIP-227 fetch sessions by node and
    session id), ``state.faults``, ``state.fetch_waiters``,
    ``state.wake_fetches()`` (after changing a log or a leader there),
    ``state.fetch_sessions`` (grant KIP-227 fetch sessions; False, the
    default: a broker whose session cache is full), ``state.fetch_whole_first_batch``
    (True, the default: a Fetch returns its first batch whole beyond the fetch
    size, as Kafka since KIP-74; False cuts it as older brokers did),
    ``state.committed(group)`` and ``state.change_address(node_id, host, port)``.  Its
    shape may change between releases; the names above will not.
    """

    def __init__(
        self,
        brokers: int = 3,
        reactor: Any = None,
        *,
        auto_create_topics: bool = True,
        default_partitions: int = 1,
        default_replication: int | None = None,
        api_versions: dict[int, tuple[int, int] | None] | None = None,
        cluster_id: str = "afkak-fake-cluster",
        max_message_bytes: int = 1048588,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        versions = {
            key: (REQUESTS[key].MIN_VERSION, REQUESTS[key].MAX_VERSION)
            for key in SERVED_APIS
            if key not in OPT_IN_APIS
        }
        for key, vrange in (api_versions or {}).items():
            if vrange is None:
                versions.pop(key, None)
            else:
                versions[key] = vrange
        reactor = Clock() if reactor is None else reactor
        #: Expert: what the request handlers share, read and change (see above).
        self.state = ClusterState(
            brokers,
            reactor,
            versions,
            auto_create_topics=auto_create_topics,
            default_partitions=default_partitions,
            default_replication=(
                min(3, brokers) if default_replication is None else default_replication
            ),
            cluster_id=cluster_id,
            max_message_bytes=max_message_bytes,
        )
        self._loop = DeliveryLoop()
        self._factories = {
            n: KafkaServerFactory(self._unused_handler, reactor) for n in self.state.brokers
        }

    #: The clock of Fetch long-polls, injected delays and group timers.
    reactor: _Shared[Any] = _Shared()
    #: Whether Metadata requests create unknown topics (when the request allows it).
    auto_create_topics: _Shared[bool] = _Shared()
    #: Leaders name a replica in the rack of a consumer's ``client_rack``
    #: (``state.brokers[n].rack``) as its ``preferred_read_replica``, as Kafka's
    #: ``RackAwareReplicaSelector`` (KIP-392); followers serve Fetch v11+ in any case.
    rack_aware_replica_selector: _Shared[bool] = _Shared()
    #: Every request the brokers received, in order (:class:`SeenRequest`).
    requests_seen: _Shared[list[SeenRequest]] = _Shared()
    #: KIP-932 share groups and their share-partitions: what a test sets (lock duration,
    #: delivery limit, ``auto_offset_reset[group]``) and reads
    #: (:class:`~afkak.testing._share_groups.ShareGroupCoordinator`).
    share_groups: _Shared[ShareGroupCoordinator] = _Shared()

    if not TYPE_CHECKING:  # (hidden from mypy, which would accept any attribute)

        def __getattr__(self, name: str) -> Any:
            # Only reached for names the facade lacks: say where the state went.
            if name != "state" and hasattr(self.__dict__.get("state"), name):
                raise AttributeError(
                    f"{type(self).__name__}.{name} is the request handlers' state:"
                    f" use cluster.state.{name}"
                )
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @staticmethod
    def _unused_handler(header: Any, request: Any) -> None:
        raise AssertionError("connections are built by the cluster, each with its own handler")

    # Connecting

    @property
    def bootstrap_hosts(self) -> str:
        """``"host:port,..."`` of every broker, for a client's ``hosts`` argument."""
        return ",".join(f"{b.host}:{b.port}" for b in self.state.brokers.values())

    def endpoint_factory(self, reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
        """An endpoint connecting, in memory, to the broker at ``host:port``.

        Matches the client's ``endpoint_factory(reactor, host, port)``
        signature; ``reactor`` is unused.  The address is looked up when
        connecting: an unknown address, a broker that is down or refusing
        fails the connection with ``ConnectionRefusedError``.
        """
        return _FakeBrokerEndpoint(self, host, port)

    def _connect(self, host: str, port: int, factory: IProtocolFactory) -> Deferred[Any]:
        brokers = self.state.brokers.values()
        broker = next((b for b in brokers if b.host == host and b.port == port), None)
        if broker is None or not broker.up or broker.refusing:
            why = "no such broker" if broker is None else "broker is down or refusing"
            return fail(ConnectionRefusedError(f"{host}:{port}: {why}"))
        server_factory = self._factories[broker.node_id]
        handler = ConnectionHandler(self.state, broker.node_id)
        server = KafkaServerProtocol(handler, self.reactor, server_factory.faults)
        server.factory = server_factory
        handler.protocol = server
        client = factory.buildProtocol(server_address(broker))
        if client is None:
            return fail(ConnectionRefusedError(f"{host}:{port}: the client factory refused"))
        connected: Deferred[Any] = Deferred()
        connect_pair(self._loop, client, server, server_address(broker), connected)
        return connected

    def enable_client_telemetry(self, **subscription: Any) -> FakeClientTelemetry:
        """Serve KIP-714's client telemetry, as a Kafka broker with a telemetry plugin.

        GetTelemetrySubscriptions and PushTelemetry are advertised (on
        connections made from now on) and answered with the subscription
        *subscription* sets up (the fields of ``FakeClientTelemetry``:
        ``metrics`` prefixes, ``push_interval_ms``, ``accepted_compression_types``,
        ``telemetry_max_bytes``, ``delta_temporality``); the returned object
        holds it and records every push.
        """
        telemetry = self.state.telemetry = FakeClientTelemetry(**subscription)
        for key in OPT_IN_APIS:
            self.state.api_versions[key] = (REQUESTS[key].MIN_VERSION, REQUESTS[key].MAX_VERSION)
        return telemetry

    def open_connections(self, node_id: int) -> int:
        """How many client connections broker ``node_id`` has open."""
        return len(self._factories[node_id].connections)

    # Topics and records

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        *,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> FakeTopic:
        """Create a topic; partition ``p``'s leader is node ``p % brokers`` by default.

        ``replicas`` places each partition explicitly (its first node leads).
        Raises ValueError for an existing or illegal name or a bad placement.
        """
        return self.state.create_topic(name, partitions, replication_factor, replicas=replicas)

    def delete_topic(self, name: str) -> None:
        """Delete a topic, as DeleteTopics does (KeyError: no such topic)."""
        self.state.delete_topic(name)

    def topic_id(self, topic: str) -> UUID:
        """The topic's id (Metadata v10+, Fetch v13+ name topics by it)."""
        return self.state.topics[topic].topic_id

    def partition(self, topic: str, partition: int) -> FakePartition:
        """The state of one partition (KeyError/IndexError if it does not exist)."""
        return self.state.partition(topic, partition)

    def append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        **batch_options: Any,
    ) -> int:
        """Write records directly to a partition's log (as if produced); return the base offset.

        ``batch_options`` go to :func:`afkak.records.build_batch` (headers,
        timestamps, codec, ...).
        """
        data = build_batch(values, keys, **batch_options)
        part = self.partition(topic, partition)
        (batch,) = read_batches(data)
        base = part.log.append(batch, data, part.leader_epoch)
        self.state.wake_fetches()
        return base

    def records(self, topic: str, partition: int) -> list[Record]:
        """The records stored in a partition, decoded (:class:`afkak.records.Record`)."""
        return self.partition(topic, partition).log.records()

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Advance a partition's log start offset, as the DeleteRecords API does."""
        self.state.delete_records(topic, partition, before_offset)

    # Groups and producers

    @property
    def committed_offsets(self) -> dict[tuple[str, str, int], CommittedOffset]:
        """``{(group, topic, partition): CommittedOffset}``, a copy."""
        return dict(self.state.committed_offsets)

    def commit(
        self,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        metadata: str = "",
        leader_epoch: int = -1,
    ) -> None:
        """Record a committed offset, as an OffsetCommit request does."""
        self.state.commit(group, topic, partition, CommittedOffset(offset, metadata, leader_epoch))

    def coordinator(self, key: str) -> int:
        """The node coordinating group (or transactional id) ``key``; -1 if none is up.

        As Kafka, the key hashes to one of 50 internal partitions, led by node
        ``partition % brokers`` or, when that node is down, the next one up.
        """
        return self.state.coordinator(key)

    def forget_producers(self) -> None:
        """Lose the idempotent producers' state, as a broker keeping it in memory does on restart.

        Produce requests from the producer ids given out so far are answered
        UNKNOWN_PRODUCER_ID; a producer must get a new id (KIP-360).
        """
        self.state.forget_producers()

    # Faults

    def fail_next(
        self,
        api_key: ApiKeyLike,
        error_code: ErrorCodeLike,
        count: int = 1,
        broker: int | None = None,
    ) -> None:
        """Answer the next ``count`` requests of ``api_key`` with ``error_code``.

        ``api_key`` is a number or a request class (``ProduceRequest``);
        ``error_code`` a number or a :class:`~afkak.common.BrokerResponseError`
        subclass (``NotLeaderForPartitionError``).

        The answer is the request's error response as Kafka builds it (the
        code in every partition, topic or group the request named, or in the
        top-level field); the request has no effect.  ``broker`` limits this
        to one node.
        """
        self.state.faults.fail_next(_api_key(api_key), _error_code(error_code), count, broker)

    def drop_next(self, api_key: ApiKeyLike, count: int = 1, broker: int | None = None) -> None:
        """Abort the connection, unanswered, on the next ``count`` requests of ``api_key``."""
        self.state.faults.drop_next(_api_key(api_key), count, broker)

    def drop_answer_next(
        self, api_key: ApiKeyLike, count: int = 1, broker: int | None = None
    ) -> None:
        """Handle the next ``count`` requests of ``api_key`` (they take effect), then abort
        the connection instead of answering: the client cannot tell whether they did.
        """
        self.state.faults.drop_answer_next(_api_key(api_key), count, broker)

    def delay(self, api_key: ApiKeyLike, seconds: float, broker: int | None = None) -> None:
        """Hold every response to ``api_key`` for ``seconds`` on the reactor; 0 stops it."""
        for node in self.state.brokers if broker is None else [broker]:
            self._factories[node].faults.delay(_api_key(api_key), seconds)

    def drop_connections(self, broker: int | None = None) -> None:
        """Abort every open connection to ``broker`` (to every broker when None)."""
        for node in self.state.brokers if broker is None else [broker]:
            self._factories[node].drop_connections()

    def refuse_connections(self, broker: int, refuse: bool = True) -> None:
        """Make new connections to ``broker`` fail (open ones stay) until called with False."""
        self.state.brokers[broker].refusing = refuse

    def move_leader(self, topic: str, partition: int, new_leader: int) -> None:
        """Make ``new_leader`` lead the partition (joining its replicas), bumping its epoch."""
        self.state.move_leader(topic, partition, new_leader)

    def unclean_election(
        self, topic: str, partition: int, new_leader: int, truncate_to: int
    ) -> None:
        """Elect an out-of-sync ``new_leader``: the log loses its records from ``truncate_to`` on.

        The new leader's epoch starts at the truncated end (KIP-320's case:
        consumers past it detect the truncation).
        """
        self.state.unclean_election(topic, partition, new_leader, truncate_to)

    def set_broker_down(self, node_id: int) -> None:
        """Stop a broker: drop its connections, refuse new ones, hide it from Metadata.

        Each partition it led moves to its next live replica (leader -1, so
        LEADER_NOT_AVAILABLE, when there is none); its groups move to another
        coordinator.
        """
        self.state.set_broker_down(node_id)
        self._factories[node_id].drop_connections()

    def set_broker_up(self, node_id: int) -> None:
        """Restart a broker; it leads again the partitions left without a leader."""
        self.state.set_broker_up(node_id)


def _api_key(api_key: ApiKeyLike) -> int:
    return api_key if isinstance(api_key, int) else int(api_key.API_KEY or 0)


def _error_code(error: ErrorCodeLike) -> int:
    return error if isinstance(error, int) else code(error)


def server_address(broker: FakeBroker) -> IPv4Address:
    return IPv4Address("TCP", broker.host, broker.port)


@implementer(IStreamClientEndpoint)
class _FakeBrokerEndpoint:
    def __init__(self, cluster: FakeKafkaCluster, host: str, port: int) -> None:
        self._cluster = cluster
        self._host = host
        self._port = port

    def connect(self, protocolFactory: IProtocolFactory) -> Deferred[Any]:
        return self._cluster._connect(self._host, self._port, protocolFactory)
