"""The mutable state of a fake cluster, which the request handlers read and change.

:class:`ClusterState` holds the brokers, topics and their logs, committed
offsets, groups, transactions, producer ids and the fault schedule, with the
operations both the handlers and the test-facing
:class:`~afkak.testing.FakeKafkaCluster` apply to them.  It knows nothing of
connections or of the facade, so the handlers import it without a cycle.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from afkak.testing._consumer_group_coordinator import ConsumerGroupCoordinator
from afkak.testing._faults import FaultPlan
from afkak.testing._group_state import GroupCoordinatorState
from afkak.testing._lookup import topic_name_problem
from afkak.testing._operator_state import Entity, FeatureLevels
from afkak.testing._share_groups import ShareGroupCoordinator
from afkak.testing._state import CommittedOffset, FakeBroker, FakePartition, FakeTopic, SeenRequest
from afkak.testing._txn_state import TransactionCoordinatorState

if TYPE_CHECKING:
    from afkak.testing._fetch_sessions import FakeFetchSession
    from afkak.testing._telemetry_state import FakeClientTelemetry

DEFAULT_PORT = 9092
OFFSETS_TOPIC_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions


class FetchWaiter(Protocol):
    """A long-polling Fetch, re-evaluated after each change to the logs or leaders."""

    def poll(self) -> None: ...


class RequestContext(Protocol):
    """What an API handler knows of the request it answers: the state and the broker asked."""

    state: ClusterState
    node: int
    client_id: str | None


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``, which Kafka uses to place group coordinators."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


class ClusterState:
    """Everything a fake cluster remembers; see :class:`~afkak.testing.FakeKafkaCluster`."""

    def __init__(
        self,
        brokers: int,
        reactor: Any,
        api_versions: dict[int, tuple[int, int]],
        *,
        auto_create_topics: bool,
        default_partitions: int,
        default_replication: int,
        cluster_id: str,
        max_message_bytes: int,
    ) -> None:
        self.reactor = reactor
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.default_replication = default_replication
        self.cluster_id = cluster_id
        self.max_message_bytes = max_message_bytes
        #: A Fetch returns its first batch whole even beyond the fetch size (Kafka
        #: since KIP-74); False cuts it as older brokers did.
        self.fetch_whole_first_batch = True
        #: Grant KIP-227 fetch sessions (False: a broker whose session cache is full).
        self.fetch_sessions = False
        #: Leaders send consumers with a ``client_rack`` to a replica in their rack (KIP-392).
        self.rack_aware_replica_selector = False
        self.sessions: dict[tuple[int, int], FakeFetchSession] = {}
        self.brokers: dict[int, FakeBroker] = {
            n: FakeBroker(n, f"broker-{n}", DEFAULT_PORT) for n in range(brokers)
        }
        self.api_versions = api_versions
        self.topics: dict[str, FakeTopic] = {}
        self.topics_by_id: dict[UUID, FakeTopic] = {}
        self.requests_seen: list[SeenRequest] = []
        self.committed_offsets: dict[tuple[str, str, int], CommittedOffset] = {}
        self.groups: set[str] = set()
        self.group_coordinator = GroupCoordinatorState(reactor)
        #: KIP-848 consumer groups (ConsumerGroupHeartbeat).
        self.consumer_groups = ConsumerGroupCoordinator(self)
        #: KIP-932 share groups (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge).
        self.share_groups = ShareGroupCoordinator(self)
        self.faults = FaultPlan()
        self._random = random.Random(0)
        self._next_producer_id = 1000
        #: Producer ids below this are unknown to the brokers (:meth:`forget_producers`).
        self.forgotten_producers_below = 0
        self.transactions = TransactionCoordinatorState(self)
        self.features = FeatureLevels()
        #: Client quotas: {entity's (type, name) pairs: {quota key: value}}.
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.fetch_waiters: set[FetchWaiter] = set()
        #: KIP-714's client-metrics subscription, once enabled (None: no telemetry plugin).
        self.telemetry: FakeClientTelemetry | None = None

    # Topics and logs

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        *,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> FakeTopic:
        """Create a topic (ValueError for an existing or illegal name or a bad placement)."""
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

    def delete_topic(self, name: str) -> None:
        """Delete a topic, its logs and the offsets committed for it (KeyError: no such topic)."""
        topic = self.topics.pop(name)
        del self.topics_by_id[topic.topic_id]
        for key in [k for k in self.committed_offsets if k[1] == name]:
            del self.committed_offsets[key]
        self.wake_fetches()

    def partition(self, topic: str, partition: int) -> FakePartition:
        """The state of one partition (KeyError/IndexError if it does not exist)."""
        return self.topics[topic].partitions[partition]

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Advance a partition's log start offset."""
        self.partition(topic, partition).log.delete_before(before_offset)
        self.wake_fetches()

    def wake_fetches(self) -> None:
        """Re-evaluate the long-polling Fetch requests (after any change to the logs or leaders)."""
        for waiter in list(self.fetch_waiters):
            waiter.poll()

    # Leaders

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

    def unclean_election(
        self, topic: str, partition: int, new_leader: int, truncate_to: int
    ) -> None:
        """An out-of-sync replica becomes leader: the log loses its records from *truncate_to* on.

        Models an unclean leader election (KIP-320's case): the new leader's
        epoch starts at the truncated log's end.
        """
        part = self.partition(topic, partition)
        part.log.truncate(truncate_to)
        self.move_leader(topic, partition, new_leader)

    def set_broker_down(self, node_id: int) -> None:
        """Mark a broker down; its partitions move to their next live replica (or to -1)."""
        self.brokers[node_id].up = False
        for topic in self.topics.values():
            for part in topic.partitions:
                if part.leader == node_id:
                    live = [n for n in part.replicas if self.brokers[n].up]
                    part.leader = live[0] if live else -1
                    part.leader_epoch += 1
        self.wake_fetches()

    def set_broker_up(self, node_id: int) -> None:
        """Mark a broker up; it leads again the partitions left without a leader."""
        self.brokers[node_id].up = True
        for topic in self.topics.values():
            for part in topic.partitions:
                if part.leader == -1 and node_id in part.replicas:
                    part.leader = node_id
                    part.leader_epoch += 1
        self.wake_fetches()

    # Groups and producers

    def commit(self, group: str, topic: str, partition: int, committed: CommittedOffset) -> None:
        """Record a committed offset, as an OffsetCommit request does."""
        self.groups.add(group)
        self.committed_offsets[group, topic, partition] = committed

    def committed(self, group: str) -> Iterable[tuple[tuple[str, int], CommittedOffset]]:
        """``((topic, partition), CommittedOffset)`` of each commit of ``group``."""
        return (((t, p), c) for (g, t, p), c in self.committed_offsets.items() if g == group)

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

    def change_address(self, node_id: int, host: str, port: int) -> None:
        """Move a broker to a new address: Metadata advertises it, new connections need it."""
        broker = self.brokers[node_id]
        broker.host, broker.port = host, port

    def forget_producers(self) -> None:
        """Make the producer ids given out so far unknown (UNKNOWN_PRODUCER_ID)."""
        self.forgotten_producers_below = self._next_producer_id + 1
