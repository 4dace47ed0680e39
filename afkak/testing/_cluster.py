"""FakeKafkaCluster: an in-memory multi-broker Kafka cluster speaking the real protocol.

The cluster holds the state (brokers, topics, partition logs, committed
offsets, producer ids) and the test-facing API: setup, fault injection and
inspection.  :mod:`afkak.testing._handlers` answers the requests.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
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
from afkak.testing._faults import FaultPlan
from afkak.testing._group_state import GroupCoordinatorState
from afkak.testing._handlers import SERVED_APIS, ConnectionHandler
from afkak.testing._lookup import code, topic_name_problem
from afkak.testing._server import KafkaServerFactory, KafkaServerProtocol
from afkak.testing._state import (
    CommittedOffset,
    FakeBroker,
    FakePartition,
    FakeTopic,
    SeenRequest,
)
from afkak.testing._transport import DeliveryLoop, connect_pair

if TYPE_CHECKING:
    from afkak.testing._log_apis import FetchWaiter

ApiKeyLike = int | type[Message]
ErrorCodeLike = int | type[BrokerResponseError]

DEFAULT_PORT = 9092
OFFSETS_TOPIC_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``, which Kafka uses to place group coordinators."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


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

    ``fetch_whole_first_batch`` (True, as Kafka since KIP-74) returns the
    first batch of a Fetch whole even when it exceeds the fetch size; False
    cuts it like any other, as older brokers did.

    State, readable (and, for setup, writable) by tests: ``brokers``
    (node id -> :class:`FakeBroker`), ``topics`` (name -> :class:`FakeTopic`),
    ``topics_by_id``, ``api_versions``, ``auto_create_topics``,
    ``requests_seen``.  ``groups``, ``transactional_producers``,
    ``fetch_waiters`` and ``faults`` are the request handlers' bookkeeping.
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
        self.reactor = Clock() if reactor is None else reactor
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.default_replication = (
            min(3, brokers) if default_replication is None else default_replication
        )
        self.cluster_id = cluster_id
        self.max_message_bytes = max_message_bytes
        self.fetch_whole_first_batch = True
        self.brokers: dict[int, FakeBroker] = {
            n: FakeBroker(n, f"broker-{n}", DEFAULT_PORT) for n in range(brokers)
        }
        self.api_versions: dict[int, tuple[int, int]] = {
            key: (REQUESTS[key].MIN_VERSION, REQUESTS[key].MAX_VERSION) for key in SERVED_APIS
        }
        for key, vrange in (api_versions or {}).items():
            if vrange is None:
                self.api_versions.pop(key, None)
            else:
                self.api_versions[key] = vrange
        self.topics: dict[str, FakeTopic] = {}
        self.topics_by_id: dict[UUID, FakeTopic] = {}
        self.requests_seen: list[SeenRequest] = []
        self._committed: dict[tuple[str, str, int], CommittedOffset] = {}
        self.groups: set[str] = set()
        self.group_coordinator = GroupCoordinatorState(self.reactor)
        self.faults = FaultPlan()
        self._loop = DeliveryLoop()
        self._factories = {
            n: KafkaServerFactory(self._unused_handler, self.reactor) for n in self.brokers
        }
        self._random = random.Random(0)
        self._next_producer_id = 1000
        #: Producer ids below this are unknown to the brokers (:meth:`forget_producers`).
        self.forgotten_producers_below = 0
        self.transactional_producers: dict[str, tuple[int, int]] = {}
        self.fetch_waiters: set[FetchWaiter] = set()

    @staticmethod
    def _unused_handler(header: Any, request: Any) -> None:
        raise AssertionError("connections are built by the cluster, each with its own handler")

    # Connecting

    @property
    def bootstrap_hosts(self) -> str:
        """``"host:port,..."`` of every broker, for a client's ``hosts`` argument."""
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers.values())

    def endpoint_factory(self, reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
        """An endpoint connecting, in memory, to the broker at ``host:port``.

        Matches the client's ``endpoint_factory(reactor, host, port)``
        signature; ``reactor`` is unused.  The address is looked up when
        connecting: an unknown address, a broker that is down or refusing
        fails the connection with ``ConnectionRefusedError``.
        """
        return _FakeBrokerEndpoint(self, host, port)

    def _connect(self, host: str, port: int, factory: IProtocolFactory) -> Deferred[Any]:
        broker = next((b for b in self.brokers.values() if b.host == host and b.port == port), None)
        if broker is None or not broker.up or broker.refusing:
            why = "no such broker" if broker is None else "broker is down or refusing"
            return fail(ConnectionRefusedError(f"{host}:{port}: {why}"))
        server_factory = self._factories[broker.node_id]
        handler = ConnectionHandler(self, broker.node_id)
        server = KafkaServerProtocol(handler, self.reactor, server_factory.faults)
        server.factory = server_factory
        handler.protocol = server
        client = factory.buildProtocol(server_address(broker))
        if client is None:
            return fail(ConnectionRefusedError(f"{host}:{port}: the client factory refused"))
        connected: Deferred[Any] = Deferred()
        connect_pair(self._loop, client, server, server_address(broker), connected)
        return connected

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
        problem = topic_name_problem(name)
        if problem:
            raise ValueError(problem)
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        nodes = sorted(self.brokers)
        if replicas is None:
            rf = self.default_replication if replication_factor is None else replication_factor
            if partitions < 1 or not 1 <= rf <= len(nodes):
                raise ValueError(f"cannot place {partitions} partitions with replication {rf}")
            replicas = [[nodes[(p + i) % len(nodes)] for i in range(rf)] for p in range(partitions)]
        elif not replicas or any(
            not r or set(r) - set(nodes) or len(set(r)) != len(r) for r in replicas
        ):
            raise ValueError(f"bad replica placement {replicas!r}")
        topic_id = UUID(int=self._random.getrandbits(128), version=4)
        topic = FakeTopic(name, topic_id, [])
        for index, nodes_of in enumerate(replicas):
            live = [n for n in nodes_of if self.brokers[n].up]
            topic.partitions.append(
                FakePartition(name, index, list(nodes_of), live[0] if live else -1)
            )
        self.topics[name] = topic
        self.topics_by_id[topic_id] = topic
        return topic

    def topic_id(self, topic: str) -> UUID:
        return self.topics[topic].topic_id

    def partition(self, topic: str, partition: int) -> FakePartition:
        """The state of one partition (KeyError/IndexError if it does not exist)."""
        return self.topics[topic].partitions[partition]

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
        self.wake_fetches()
        return base

    def records(self, topic: str, partition: int) -> list[Record]:
        """The records stored in a partition, decoded (:class:`afkak.records.Record`)."""
        return self.partition(topic, partition).log.records()

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Advance a partition's log start offset, as the DeleteRecords API does."""
        self.partition(topic, partition).log.delete_before(before_offset)
        self.wake_fetches()

    # Groups and producers

    @property
    def committed_offsets(self) -> dict[tuple[str, str, int], CommittedOffset]:
        """``{(group, topic, partition): CommittedOffset}``, a copy."""
        return dict(self._committed)

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
        self.groups.add(group)
        self._committed[group, topic, partition] = CommittedOffset(offset, metadata, leader_epoch)

    def committed(self, group: str) -> Iterable[tuple[tuple[str, int], CommittedOffset]]:
        """``((topic, partition), CommittedOffset)`` of each commit of ``group``."""
        return (((t, p), c) for (g, t, p), c in self._committed.items() if g == group)

    def coordinator(self, key: str) -> int:
        """The node coordinating group (or transactional id) ``key``; -1 if none is up.

        As Kafka, the key hashes to one of 50 internal partitions, led by node
        ``partition % brokers`` or, when that node is down, the next one up.
        """
        nodes = sorted(self.brokers)
        h = java_string_hash(key)
        start = (0 if h == -(2**31) else abs(h)) % OFFSETS_TOPIC_PARTITIONS % len(nodes)
        for i in range(len(nodes)):
            node = nodes[(start + i) % len(nodes)]
            if self.brokers[node].up:
                return node
        return -1

    def new_producer_id(self) -> int:
        self._next_producer_id += 1
        return self._next_producer_id

    def forget_producers(self) -> None:
        """Lose the idempotent producers' state, as a broker keeping it in memory does on restart.

        Produce requests from the producer ids given out so far are answered
        UNKNOWN_PRODUCER_ID; a producer must get a new id (KIP-360).
        """
        self.forgotten_producers_below = self._next_producer_id + 1

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
        self.faults.fail_next(_api_key(api_key), _error_code(error_code), count, broker)

    def drop_next(self, api_key: ApiKeyLike, count: int = 1, broker: int | None = None) -> None:
        """Abort the connection, unanswered, on the next ``count`` requests of ``api_key``."""
        self.faults.drop_next(_api_key(api_key), count, broker)

    def drop_answer_next(
        self, api_key: ApiKeyLike, count: int = 1, broker: int | None = None
    ) -> None:
        """Handle the next ``count`` requests of ``api_key`` (they take effect), then abort
        the connection instead of answering: the client cannot tell whether they did.
        """
        self.faults.drop_answer_next(_api_key(api_key), count, broker)

    def delay(self, api_key: ApiKeyLike, seconds: float, broker: int | None = None) -> None:
        """Hold every response to ``api_key`` for ``seconds`` on the reactor; 0 stops it."""
        for node in self.brokers if broker is None else [broker]:
            self._factories[node].faults.delay(_api_key(api_key), seconds)

    def drop_connections(self, broker: int | None = None) -> None:
        """Abort every open connection to ``broker`` (to every broker when None)."""
        for node in self.brokers if broker is None else [broker]:
            self._factories[node].drop_connections()

    def refuse_connections(self, broker: int, refuse: bool = True) -> None:
        """Make new connections to ``broker`` fail (open ones stay) until called with False."""
        self.brokers[broker].refusing = refuse

    def move_leader(self, topic: str, partition: int, new_leader: int) -> None:
        """Make ``new_leader`` lead the partition (joining its replicas), bumping its epoch."""
        if new_leader not in self.brokers:
            raise ValueError(f"no broker {new_leader}")
        part = self.partition(topic, partition)
        if new_leader not in part.replicas:
            part.replicas.append(new_leader)
        part.leader = new_leader
        part.leader_epoch += 1
        self.wake_fetches()

    def set_broker_down(self, node_id: int) -> None:
        """Stop a broker: drop its connections, refuse new ones, hide it from Metadata.

        Each partition it led moves to its next live replica (leader -1, so
        LEADER_NOT_AVAILABLE, when there is none); its groups move to another
        coordinator.
        """
        self.brokers[node_id].up = False
        self._factories[node_id].drop_connections()
        for topic in self.topics.values():
            for part in topic.partitions:
                if part.leader == node_id:
                    live = [n for n in part.replicas if self.brokers[n].up]
                    part.leader = live[0] if live else -1
                    part.leader_epoch += 1
        self.wake_fetches()

    def set_broker_up(self, node_id: int) -> None:
        """Restart a broker; it leads again the partitions left without a leader."""
        self.brokers[node_id].up = True
        for topic in self.topics.values():
            for part in topic.partitions:
                if part.leader == -1 and node_id in part.replicas:
                    part.leader = node_id
                    part.leader_epoch += 1
        self.wake_fetches()

    def change_address(self, node_id: int, host: str, port: int) -> None:
        """Move a broker to a new address: Metadata advertises it, new connections need it."""
        broker = self.brokers[node_id]
        broker.host, broker.port = host, port

    def wake_fetches(self) -> None:
        """Re-evaluate the long-polling Fetch requests (after any change to the logs or leaders)."""
        for waiter in list(self.fetch_waiters):
            waiter.poll()


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
