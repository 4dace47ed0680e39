"""KafkaClient against afkak.testing's in-memory FakeKafkaCluster.

Every test runs the real client, connections and protocol against fake
brokers on a Clock; nothing of afkak is mocked.
"""

from __future__ import annotations

import gc
import warnings
from typing import Any

from twisted.internet.defer import Deferred
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import (
    BrokerConnectionError,
    BrokerMetadata,
    CancelledError,
    ClientError,
    CoordinatorNotAvailable,
    DecodeError,
    FailedPayloadsError,
    FetchRequest,
    GroupAuthorizationFailed,
    KafkaUnavailableError,
    LeaderUnavailableError,
    Message,
    MessageSizeTooLargeError,
    NotCoordinator,
    NotLeaderForPartitionError,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetOutOfRangeError,
    OffsetRequest,
    PartitionUnavailableError,
    ProduceRequest,
    ProduceResponse,
    RebootstrapRequired,
    RequestTimedOutError,
    TopicAndPartition,
    TopicAuthorizationFailed,
    UnknownTopicOrPartitionError,
)
from afkak.message_set import create_message, create_message_set
from afkak.producer import Producer
from afkak.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    MetadataResponse,
    OffsetFetchRequest as RawOffsetFetch,
)
from afkak.records import read_batches
from afkak.test.helpers import ClockTestCase, needs_codecs
from afkak.test.test_connection import ConnectionTestCase
from afkak.testing import FakeKafkaCluster


class CorruptNextResponse:
    """Endpoints to a fake cluster that can spoil the next response from one host.

    When ``armed``, the next response frame (other than ApiVersions, correlation
    id 0) arriving from ``host`` gets a byte appended inside the frame, which
    no decoder accepts.  Wraps the transport's bytes, not any afkak class.
    """

    def __init__(self, endpoint_factory: Any, host: str) -> None:
        self._endpoint_factory = endpoint_factory
        self._host = host
        self.armed = False

    def endpoint_factory(self, reactor: Any, host: str, port: int) -> Any:
        endpoint = self._endpoint_factory(reactor, host, port)
        if host != self._host:
            return endpoint
        return _WrappedEndpoint(endpoint, self)

    def spoil(self, frame: bytes) -> bytes:
        if self.armed and frame[:4] != bytes(4):
            self.armed = False
            return frame + b"\0"
        return frame


class _WrappedEndpoint:
    def __init__(self, endpoint: Any, owner: CorruptNextResponse) -> None:
        self._endpoint = endpoint
        self._owner = owner

    def connect(self, factory: Any) -> Any:
        wrapping = WrappingFactory(factory)
        wrapping.protocol = lambda f, p: _SpoilingProtocol(f, p, self._owner)
        return self._endpoint.connect(wrapping).addCallback(lambda wrapper: wrapper.wrappedProtocol)


class _SpoilingProtocol(ProtocolWrapper):
    def __init__(self, factory: Any, wrapped: Any, owner: CorruptNextResponse) -> None:
        super().__init__(factory, wrapped)
        self._owner = owner
        self._buffer = b""

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 4:
            size = int.from_bytes(self._buffer[:4], "big")
            if len(self._buffer) < 4 + size:
                return
            frame = self._owner.spoil(self._buffer[4 : 4 + size])
            self._buffer = self._buffer[4 + size :]
            self.wrappedProtocol.dataReceived(len(frame).to_bytes(4, "big") + frame)


PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = (
    0,
    1,
    2,
    3,
    8,
    9,
    10,
)


class ClientTestCase(ClockTestCase):
    """A 3-broker fake cluster on a Clock, and clients that are closed after each test."""

    brokers = 3

    def setUp(self) -> None:
        super().setUp()
        self.cluster = self.make_cluster()

    def make_cluster(self, **options: Any) -> FakeKafkaCluster:
        return FakeKafkaCluster(brokers=self.brokers, reactor=self.clock, **options)

    def make_client(self, hosts: Any = None, **options: Any) -> KafkaClient:
        options.setdefault("retry_policy", lambda failures: 1.0)
        options.setdefault("endpoint_factory", self.cluster.endpoint_factory)
        client = KafkaClient(
            self.cluster.bootstrap_hosts if hosts is None else hosts, reactor=self.clock, **options
        )
        self.addCleanup(self.close_client, client)
        return client

    def close_client(self, client: KafkaClient) -> None:
        self.assertIsNone(self.successResultOf(client.close()))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def seen(self, api_key: int) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == api_key]


class ConstructorTests(ClientTestCase):
    def test_inert_correlation_id_says_so(self) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = KafkaClient("h", correlation_id=7, reactor=self.clock)
            KafkaClient("h", reactor=self.clock).close()
        client.close()
        self.assertEqual(client.correlation_id, 7)
        [warning] = caught
        self.assertIs(warning.category, DeprecationWarning)
        self.assertIn("inert", str(warning.message))
        self.assertEqual(warning.filename, __file__)

    def test_bad_arguments_fail_before_connecting(self) -> None:
        factory = self.cluster.endpoint_factory
        for hosts, error in (
            (None, TypeError),
            ("", ValueError),
            ("h:port", ValueError),
            ([("h", "1")], TypeError),
        ):
            self.assertRaises(
                error, KafkaClient, hosts, reactor=self.clock, endpoint_factory=factory
            )
        self.assertRaises(TypeError, KafkaClient, "h", clientId=b"id", reactor=self.clock)
        self.assertRaises(TypeError, KafkaClient, "h", timeout=None, reactor=self.clock)
        self.assertRaises(ValueError, KafkaClient, "h", timeout=0, reactor=self.clock)
        self.assertRaises(ValueError, KafkaClient, "h", metadata_max_age=-1, reactor=self.clock)
        self.assertRaises(TypeError, KafkaClient, "h", correlation_id="0", reactor=self.clock)
        self.assertRaises(ValueError, KafkaClient, "h", timeout=float("inf"), reactor=self.clock)
        self.assertRaises(ValueError, KafkaClient, "h", timeout=float("nan"), reactor=self.clock)
        self.assertRaises(TypeError, KafkaClient, "h", reactor="x")
        self.assertRaises(TypeError, KafkaClient, "h", disconnect_on_timeout="no")
        self.assertRaises(TypeError, KafkaClient, "h", reactor=self.clock, unknown=1)
        self.assertEqual(self.cluster.requests_seen, [])

    def test_default_reactor_is_the_global_one(self) -> None:
        from twisted.internet import reactor

        client = KafkaClient("broker-0")
        self.assertIs(client.reactor, reactor)
        self.successResultOf(client.close())

    def test_attributes(self) -> None:
        client = self.make_client("[::1]:9093,broker-0", clientId="me", timeout=2500)
        self.assertEqual(client.clientId, "me")
        self.assertEqual(client.timeout, 2.5)
        self.assertIs(client.reactor, self.clock)
        self.assertEqual(
            (client.topic_partitions, client.topics_to_brokers, client.clients, client._brokers),
            ({}, {}, {}, {}),
        )
        self.assertIn("[::1]:9093,broker-0:9092", repr(client))
        self.assertEqual(KafkaClient.clientId, "afkak-client")


class MetadataTests(ClientTestCase):
    def test_load_topics_fills_the_documented_attributes(self) -> None:
        self.cluster.create_topic("t", partitions=3)
        client = self.make_client(clientId="meta-client")
        self.assertIs(self.successResultOf(client.load_metadata_for_topics("t")), True)
        self.assertEqual(client.topic_partitions, {"t": [0, 1, 2]})
        self.assertEqual(
            client.topics_to_brokers[TopicAndPartition("t", 1)], BrokerMetadata(1, "broker-1", 9092)
        )
        self.assertEqual(client.partition_meta[TopicAndPartition("t", 2)].leader, 2)
        self.assertEqual(sorted(client._brokers), [0, 1, 2])
        self.assertTrue(client.has_metadata_for_topic("t"))
        self.assertEqual(client.metadata_error_for_topic("t"), 0)
        self.assertTrue(client.topic_fully_replicated("t"))
        self.assertTrue(client.partition_fully_replicated(TopicAndPartition("t", 0)))
        self.assertEqual({r.client_id for r in self.cluster.requests_seen}, {"meta-client"})

    def test_load_all_topics_does_not_create(self) -> None:
        self.cluster.create_topic("a")
        self.cluster.create_topic("b", partitions=2)
        client = self.make_client()
        self.assertIs(self.successResultOf(client.load_metadata_for_topics()), True)
        self.assertEqual(client.topic_partitions, {"a": [0], "b": [0, 1]})
        self.assertIsNone(self.seen(METADATA)[-1].request.topics)

    def test_unknown_topic_error(self) -> None:
        self.cluster = self.make_cluster(auto_create_topics=False)
        client = self.make_client()
        self.assertIs(self.successResultOf(client.load_metadata_for_topics("nope")), True)
        self.assertFalse(client.has_metadata_for_topic("nope"))
        self.assertEqual(
            client.metadata_error_for_topic("nope"), UnknownTopicOrPartitionError.errno
        )
        self.assertFalse(client.topic_fully_replicated("nope"))

    def test_under_replicated_topic(self) -> None:
        self.cluster.create_topic("t", partitions=2, replication_factor=2)
        client = self.make_client()
        self.cluster.set_broker_down(1)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertFalse(client.topic_fully_replicated("t"))
        self.assertFalse(client.partition_fully_replicated(TopicAndPartition("t", 0)))

    def test_reset_methods(self) -> None:
        self.cluster.create_topic("t")
        self.cluster.create_topic("u")
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t", "u"))
        self.successResultOf(client.load_coordinator_for_group("g"))
        client.reset_topic_metadata("t")
        self.assertEqual(list(client.topic_partitions), ["u"])
        client.reset_consumer_group_metadata("g")
        self.assertEqual(client._cluster.cache.coordinators, {})
        client.reset_all_metadata()
        self.assertEqual((client.topic_partitions, client.topics_to_brokers), ({}, {}))
        self.assertEqual(sorted(client._brokers), [0, 1, 2])
        self.assertRaises(TypeError, client.reset_topic_metadata, 1)
        self.assertRaises(TypeError, client.reset_consumer_group_metadata, None)

    def test_metadata_answers_are_remembered_for_known_topics_only(self) -> None:
        """The entries kept to skip reading unchanged topics again are the cache's topics'."""
        self.cluster.create_topic("t")
        self.cluster.create_topic("u")
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t", "u"))
        answered = client._cluster._answered
        self.assertEqual(sorted(answered.entries), ["t", "u"])
        client.reset_topic_metadata("t")
        self.successResultOf(client.load_metadata_for_topics("u"))
        self.assertEqual(sorted(answered.entries), ["u"])

    def test_no_reachable_broker(self) -> None:
        for node in self.cluster.state.brokers:
            self.cluster.refuse_connections(node)
        client = self.make_client()
        failure = self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.assertIn("broker-0:9092", str(failure.value))

    def test_bootstrap_through_new_hosts_when_known_brokers_are_gone(self) -> None:
        self.cluster.create_topic("t", partitions=3)
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        for node in self.cluster.state.brokers:
            self.cluster.state.change_address(node, f"moved-{node}", 9093)
        self.cluster.drop_connections()
        self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        client.update_cluster_hosts(["moved-2:9093"])
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(client._brokers[0], BrokerMetadata(0, "moved-0", 9093))
        self.assertEqual(
            client.topics_to_brokers[TopicAndPartition("t", 1)], BrokerMetadata(1, "moved-1", 9093)
        )
        responses = self.successResultOf(
            client.send_offset_request([OffsetRequest("t", p, -1, 1) for p in range(3)])
        )
        self.assertEqual([r.error for r in responses], [0, 0, 0])

    def test_departed_broker_loses_its_connection(self) -> None:
        self.cluster.create_topic("t", partitions=3)
        client = self.make_client()
        self.successResultOf(
            client.send_offset_request([OffsetRequest("t", p, -1, 1) for p in range(3)])
        )
        self.assertEqual(sorted(client.clients), [0, 1, 2])
        self.cluster.set_broker_down(2)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(sorted(client.clients), [0, 1])
        self.assertEqual(sorted(client._brokers), [0, 1])
        self.assertEqual(client.topics_to_brokers[TopicAndPartition("t", 2)].node_id, 0)

    def test_moved_broker_gets_a_new_connection(self) -> None:
        self.cluster.create_topic("t", partitions=3)
        client = self.make_client()
        self.successResultOf(client.send_offset_request([OffsetRequest("t", 1, -1, 1)]))
        old = client.clients[1]
        self.cluster.state.change_address(1, "elsewhere", 1234)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertNotIn(1, client.clients)
        self.successResultOf(client.send_offset_request([OffsetRequest("t", 1, -1, 1)]))
        self.assertIsNot(client.clients[1], old)
        self.assertEqual((client.clients[1].host, client.clients[1].port), ("elsewhere", 1234))

    def test_list_offsets_to_a_killed_leader_fails_at_its_refusal(self) -> None:
        """Issue 33: a ListOffsets for a leader whose broker died waited for its request
        timeout; it fails at the connection's next refusal (1 s here), which reloads the
        metadata: once the cluster has moved the partition, the next one goes to the
        new leader."""
        self.cluster.create_topic("t", partitions=3)
        client = self.make_client()
        key = TopicAndPartition("t", 1)
        payloads = [OffsetRequest("t", 1, -1, 1)]
        self.successResultOf(client.send_offset_request(payloads))
        leader = client.topics_to_brokers[key].node_id
        self.cluster.refuse_connections(leader)
        self.cluster.drop_connections(leader)
        d = client.send_offset_request(payloads)
        self.clock.advance(1)
        self.failureResultOf(d, FailedPayloadsError)
        new = (leader + 1) % 3
        self.cluster.move_leader("t", 1, new)
        d = client.send_offset_request(payloads)  # the leader reloaded at the refusal
        self.clock.advance(1)
        self.failureResultOf(d, FailedPayloadsError)
        [answer] = self.successResultOf(client.send_offset_request(payloads))
        self.assertEqual((answer.error, client.topics_to_brokers[key].node_id), (0, new))

    def test_new_leader_hint(self) -> None:
        """KIP-951: an error's current_leader (and node_endpoints) moves the partition."""
        from afkak.protocol.messages import ProduceResponse as R

        self.cluster.create_topic("k")
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("k"))
        key = TopicAndPartition("k", 0)
        other = (client.topics_to_brokers[key].node_id + 1) % 3
        self.successResultOf(client.send_offset_request([OffsetRequest("k", 0, -1, 1)]))
        moved = R.NodeEndpoint(other, "elsewhere", 1234, None)
        # No newer than the metadata's leader epoch: a broker behind the move.
        stale = client.leader_epoch(key)
        self.assertFalse(client.note_new_leader(key, R.LeaderIdAndEpoch(other, stale), [moved]))
        self.assertTrue(client.note_new_leader(key, R.LeaderIdAndEpoch(other, stale + 1), [moved]))
        self.assertEqual(client.topics_to_brokers[key], BrokerMetadata(other, "elsewhere", 1234))
        self.assertEqual(client.partition_meta[key].leader, other)
        self.assertEqual(client.leader_epoch(key), stale + 1)  # fetches carry the new epoch
        # A broker behind the move points back at an older epoch: not followed.
        third = (other + 1) % 3
        self.assertFalse(client.note_new_leader(key, R.LeaderIdAndEpoch(third, stale + 1)))
        self.assertFalse(client.note_new_leader(key, R.LeaderIdAndEpoch(third, stale)))
        self.assertEqual(client.topics_to_brokers[key].node_id, other)
        client.note_stale_leaders([key])  # the reset after the error keeps the hint
        self.assertEqual(client.topics_to_brokers[key].node_id, other)
        client.note_stale_leaders([key])  # a later one, without a hint, forgets it
        self.assertIsNone(client.topics_to_brokers[key])
        # Unusable hints change nothing: the metadata refresh finds the leader (the
        # cluster's move made real: metadata older than the hint's epoch is not taken).
        self.cluster.move_leader("k", 0, other)
        self.successResultOf(client.load_metadata_for_topics("k"))
        leader = client.topics_to_brokers[key]
        for hint in (R.LeaderIdAndEpoch(-1, -1), R.LeaderIdAndEpoch(9, 1), None):
            self.assertFalse(client.note_new_leader(key, hint, []))
        self.assertFalse(client.note_new_leader(key, R.LeaderIdAndEpoch(leader.node_id, 9)))
        self.assertFalse(
            client.note_new_leader(TopicAndPartition("no", 0), R.LeaderIdAndEpoch(0, 1))
        )
        self.assertEqual(client.topics_to_brokers[key], leader)

    def test_periodic_refresh(self) -> None:
        self.cluster.create_topic("t")
        client = self.make_client(metadata_max_age=60)
        self.successResultOf(client.load_metadata_for_topics("t"))
        before = len(self.seen(METADATA))
        self.cluster.move_leader("t", 0, 2)
        self.clock.advance(59)
        self.assertEqual(len(self.seen(METADATA)), before)
        self.clock.advance(1)
        self.assertEqual(len(self.seen(METADATA)), before + 1)
        self.assertEqual([t.name for t in self.seen(METADATA)[-1].request.topics], ["t"])
        self.assertEqual(client.topics_to_brokers[TopicAndPartition("t", 0)].node_id, 2)
        self.clock.advance(60)
        self.assertEqual(len(self.seen(METADATA)), before + 2)

    def test_failed_refresh_is_retried_later(self) -> None:
        client = self.make_client(metadata_max_age=60)
        self.successResultOf(client.load_metadata_for_topics("t"))
        for node in self.cluster.state.brokers:
            self.cluster.refuse_connections(node)
        self.cluster.drop_connections()
        self.clock.advance(60)
        self.assertEqual(client.topic_partitions, {"t": [0]})
        for node in self.cluster.state.brokers:
            self.cluster.refuse_connections(node, False)
        before = len(self.seen(METADATA))
        self.cluster.move_leader("t", 0, 2)
        self.clock.advance(60)
        self.assertEqual(len(self.seen(METADATA)), before + 1)
        self.assertEqual(client.topics_to_brokers[TopicAndPartition("t", 0)].node_id, 2)

    def test_no_refresh_when_disabled(self) -> None:
        client = self.make_client(metadata_max_age=None)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_leader_lookups_share_one_metadata_request(self) -> None:
        for name in "abc":
            self.cluster.create_topic(name, partitions=3)
        client = self.make_client()
        payloads = [OffsetRequest(t, p, -1, 1) for t in "abc" for p in range(3)]
        self.successResultOf(client.send_offset_request(payloads))
        [metadata] = self.seen(METADATA)
        self.assertEqual(sorted(t.name for t in metadata.request.topics), ["a", "b", "c"])

    def test_concurrent_loads_are_coalesced(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics())  # connect
        self.cluster.delay(METADATA, 1.0)
        first = client.load_metadata_for_topics("a")
        same = client.load_metadata_for_topics("a")
        later = [client.load_metadata_for_topics("b"), client.load_metadata_for_topics("c")]
        self.assertEqual(len(self.seen(METADATA)), 2)
        self.clock.advance(1)
        self.assertIs(self.successResultOf(first), True)
        self.assertIs(self.successResultOf(same), True)
        self.assertEqual(len(self.seen(METADATA)), 3)
        self.assertEqual(sorted(t.name for t in self.seen(METADATA)[-1].request.topics), ["b", "c"])
        self.clock.advance(1)
        for d in later:
            self.assertIs(self.successResultOf(d), True)

    def test_cancelled_load_fires_none(self) -> None:
        client = self.make_client()
        self.cluster.delay(METADATA, 5.0)
        d = client.load_metadata_for_topics("a")
        d.cancel()
        self.assertIsNone(self.successResultOf(d))
        self.clock.advance(5)


class RebootstrapTests(ClientTestCase):
    """KIP-1102: the cluster moves to new addresses behind the bootstrap address."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("t")
        #: The bootstrap name "boot:1" resolves to broker 0's address of the moment.
        self.boot_connects = 0

    def endpoint(self, reactor: Any, host: str, port: int) -> Any:
        if (host, port) == ("boot", 1):
            self.boot_connects += 1
            b = self.cluster.state.brokers[0]
            host, port = b.host, b.port
        return self.cluster.endpoint_factory(reactor, host, port)

    def client(self, **options: Any) -> KafkaClient:
        client = self.make_client("boot:1", endpoint_factory=self.endpoint, **options)
        self.successResultOf(client.load_metadata_for_topics("t"))
        return client

    def move_cluster(self) -> None:
        """Every broker on a new port (a restart elsewhere); the bootstrap name follows."""
        for node, b in self.cluster.state.brokers.items():
            self.cluster.state.change_address(node, b.host, b.port + 1000)
        self.cluster.drop_connections()

    def test_recovers_through_the_bootstrap_address(self) -> None:
        client = self.client()
        self.move_cluster()
        self.clock.advance(1)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(
            sorted(b.port for b in client._brokers.values()),
            sorted(b.port for b in self.cluster.state.brokers.values()),
        )
        [answer] = self.successResultOf(client.send_offset_request([OffsetRequest("t", 0, -1, 1)]))
        self.assertEqual(answer.error, 0)

    def test_a_producer_goes_back_to_the_bootstrap_address_at_once(self) -> None:
        """Issue 33: a produce queued for a broker's old address waited for its request
        timeout (30 s) before the client went back to the bootstrap address; a refused
        connection to a known broker now reloads the metadata at once (KIP-899)."""
        client = self.client()
        producer = Producer(client)
        self.addCleanup(lambda: self.successResultOf(producer.stop()))
        d = producer.send("t", b"before", partition=0)
        self.clock.advance(0.1)
        self.assertEqual(self.successResultOf(d).offset, 0)
        self.move_cluster()
        self.clock.advance(5)  # the old connection backs off, refused
        d = producer.send("t", b"after", partition=0)
        for _ in range(10):
            self.clock.advance(0.1)
        self.assertEqual(self.successResultOf(d).offset, 1)
        self.assertEqual(client._brokers[0].port, self.cluster.state.brokers[0].port)

    def test_none_strategy_stays_with_the_known_brokers(self) -> None:
        client = self.client(metadata_recovery_strategy="none")
        self.move_cluster()
        self.clock.advance(1)
        self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.assertEqual(self.boot_connects, 1)

    def test_trigger_forgets_the_known_brokers(self) -> None:
        """No Metadata for the trigger's time: the next load goes to the bootstrap
        address alone, instead of trying every known broker first."""
        client = self.client(metadata_recovery_rebootstrap_trigger_ms=5000)
        self.cluster.refuse_connections(0)
        for node in (1, 2):
            self.cluster.refuse_connections(node)
        self.cluster.drop_connections()
        self.clock.advance(1)
        self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.clock.advance(6)
        tried = set(client.clients)
        self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.assertEqual(client._brokers, {})  # forgotten
        self.assertTrue(tried)
        for node in (0, 1, 2):
            self.cluster.refuse_connections(node, False)
        self.clock.advance(1)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(sorted(client._brokers), [0, 1, 2])

    def test_rebootstrap_required(self) -> None:
        client = self.client()
        connects = self.boot_connects
        self.cluster.fail_next(MetadataRequest, RebootstrapRequired)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(self.boot_connects, connects + 1)
        self.assertEqual(sorted(client._brokers), [0, 1, 2])

    def test_rebootstrap_required_under_none_is_an_error(self) -> None:
        client = self.client(metadata_recovery_strategy="none")
        self.cluster.fail_next(MetadataRequest, RebootstrapRequired)
        failure = self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.assertIn("REBOOTSTRAP_REQUIRED", str(failure.value))

    def test_bad_options(self) -> None:
        self.assertRaises(ValueError, self.make_client, metadata_recovery_strategy="again")
        self.assertRaises(TypeError, self.make_client, metadata_recovery_strategy=None)
        self.assertRaises(ValueError, self.make_client, metadata_recovery_rebootstrap_trigger_ms=-1)


class CloseTests(ClientTestCase):
    def test_close_sends_no_queued_metadata_load(self) -> None:
        """A load queued behind the one in flight was sent after close(): a request,
        and its timeout timer, left behind by a closed client."""
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.delay(3, 1.0)  # Metadata
        first = client.load_metadata_for_topics("a")
        queued = client.load_metadata_for_topics("b")
        self.clock.advance(0.01)
        sent = len(self.cluster.requests_seen)
        self.successResultOf(client.close())
        self.assertEqual(len(self.cluster.requests_seen), sent)
        for d in (first, queued):
            self.failureResultOf(d, CancelledError)
        self.clock.advance(1.0)  # the fake broker's held answer goes nowhere
        self.assertEqual(self.clock.getDelayedCalls(), [])


class SharedStateTests(ClientTestCase):
    def test_shared_makes_one_per_client_and_factory(self) -> None:
        """What a layer above shares among its users of one client (the consumers'
        fetch manager) is the client's: made once, with the client, per factory."""
        made: list[object] = []

        def factory(client: KafkaClient) -> object:
            made.append(client)
            return object()

        client, other = self.make_client(), self.make_client()
        first = client.shared(factory)
        self.assertIs(client.shared(factory), first)
        self.assertIsNot(other.shared(factory), first)
        self.assertIsNot(client.shared(lambda c: object()), first)
        self.assertEqual(made, [client, other])


class CoordinatorTests(ClientTestCase):
    def test_load_coordinator(self) -> None:
        client = self.make_client()
        self.assertIs(self.successResultOf(client.load_coordinator_for_group("g")), True)
        node = self.cluster.coordinator("g")
        self.assertEqual(
            client._cluster.cache.coordinators["g"], BrokerMetadata(node, f"broker-{node}", 9092)
        )
        [find] = self.seen(FIND_COORDINATOR)
        self.assertEqual(find.request.coordinator_keys, ["g"])

    def test_single_key_form_for_older_brokers(self) -> None:
        self.cluster = self.make_cluster(api_versions={FIND_COORDINATOR: (0, 3)})
        client = self.make_client()
        self.successResultOf(client.load_coordinator_for_group("g"))
        [find] = self.seen(FIND_COORDINATOR)
        self.assertEqual((find.api_version, find.request.key), (3, "g"))

    def test_deprecated_alias_warns(self) -> None:
        client = self.make_client()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = client.load_consumer_metadata_for_group("g")
        self.assertIs(self.successResultOf(d), True)
        self.assertEqual([w.category for w in caught], [DeprecationWarning])

    def test_unavailable_coordinator_is_retried(self) -> None:
        # Apache Kafka answers the first FindCoordinator of a new cluster with
        # COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets: retried, as
        # Kafka's own clients do, with retry.backoff.ms.
        client = self.make_client()
        self.cluster.fail_next(FIND_COORDINATOR, CoordinatorNotAvailable.errno, count=2)
        d = client.load_coordinator_for_group("g")
        self.assertNoResult(d)
        self.clock.pump([0.1] * 10)
        self.assertIs(self.successResultOf(d), True)
        self.assertEqual(len(self.seen(FIND_COORDINATOR)), 3)
        self.assertIn("g", client._cluster.cache.coordinators)

    def test_unavailable_coordinator_fails_after_the_client_timeout(self) -> None:
        client = self.make_client(timeout=5000)
        self.cluster.fail_next(FIND_COORDINATOR, CoordinatorNotAvailable.errno, count=1000)
        d = client.load_coordinator_for_group("g")
        self.clock.pump([0.5] * 7)  # waits never pass the deadline: done by 5 - 1.2 s
        self.assertNoResult(d)
        self.clock.pump([0.5] * 5)
        self.failureResultOf(d, CoordinatorNotAvailable)
        self.assertNotIn("g", client._cluster.cache.coordinators)

    def test_other_coordinator_errors_fail_at_once(self) -> None:
        """Only a coordinator not available yet is waited for; other retriable errors
        are CoordinatorNotAvailable at once (a denied group: the test below)."""
        client = self.make_client()
        self.cluster.fail_next(FIND_COORDINATOR, NotCoordinator.errno)
        self.failureResultOf(client.load_coordinator_for_group("g"), CoordinatorNotAvailable)
        self.assertNotIn("g", client._cluster.cache.coordinators)

    def test_a_denied_group_is_an_authorization_error_at_once(self) -> None:
        """GROUP_AUTHORIZATION_FAILED is final, not a coordinator to wait for."""
        client = self.make_client()
        self.cluster.fail_next(FIND_COORDINATOR, GroupAuthorizationFailed.errno)
        failure = self.failureResultOf(
            client.load_coordinator_for_group("g"), GroupAuthorizationFailed
        )
        self.assertIn("group 'g'", str(failure.value))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_concurrent_lookups_share_one_request(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics())
        self.cluster.delay(FIND_COORDINATOR, 1.0)
        ds = [client.load_coordinator_for_group("g"), client.load_coordinator_for_group("g")]
        self.clock.advance(1)
        self.assertEqual([self.successResultOf(d) for d in ds], [True, True])
        self.assertEqual(len(self.seen(FIND_COORDINATOR)), 1)


class ProduceTests(ClientTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("t", partitions=3)

    def test_produce_in_payload_order_one_request_per_broker(self) -> None:
        client = self.make_client()
        payloads = [
            ProduceRequest("t", 2, [create_message(b"two")]),
            ProduceRequest("t", 0, [create_message(b"zero", b"key")]),
            ProduceRequest("t", 1, [create_message(b"one-a"), create_message(b"one-b")]),
        ]
        self.successResultOf(
            client.send_produce_request([ProduceRequest("t", 1, [create_message(b"first")])])
        )
        responses = self.successResultOf(client.send_produce_request(payloads))
        self.assertEqual(
            responses,
            [
                ProduceResponse("t", 2, 0, 0),
                ProduceResponse("t", 0, 0, 0),
                ProduceResponse("t", 1, 0, 1),
            ],
        )
        self.assertEqual(
            [(r.key, r.value) for r in self.cluster.records("t", 0)], [(b"key", b"zero")]
        )
        self.assertEqual(
            [r.value for r in self.cluster.records("t", 1)], [b"first", b"one-a", b"one-b"]
        )
        self.assertEqual(len(self.seen(PRODUCE)), 4)
        self.assertEqual({r.api_version for r in self.seen(PRODUCE)}, {13})

    def test_requests_to_brokers_are_sent_in_parallel(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.delay(PRODUCE, 1.0)
        payloads = [ProduceRequest("t", p, [create_message(b"x")]) for p in range(3)]
        d = client.send_produce_request(payloads)
        self.assertEqual(sorted(r.broker for r in self.seen(PRODUCE)), [0, 1, 2])
        self.assertNoResult(d)
        self.clock.advance(1.0)
        self.assertEqual([r.partition for r in self.successResultOf(d)], [0, 1, 2])

    def test_codec_timestamps_and_headers(self) -> None:
        client = self.make_client()
        self.clock.advance(1234.5)
        messages = create_message_set([("t", None, [b"a", b"b"], None)], CODEC_GZIP)
        messages.append(Message(0, 0, None, b"c", timestamp=99, headers=(("h", b"v"),)))
        self.successResultOf(
            client.send_produce_request([ProduceRequest("t", 0, messages)], acks=-1)
        )
        records = self.cluster.records("t", 0)
        self.assertEqual(
            [(r.value, r.timestamp, r.headers) for r in records],
            [(b"a", 1234500, ()), (b"b", 1234500, ()), (b"c", 99, (("h", b"v"),))],
        )
        self.assertEqual(self.seen(PRODUCE)[0].request.acks, -1)
        [sent] = self.seen(PRODUCE)[0].request.topic_data[0].partition_data
        [batch] = read_batches(sent.records)
        self.assertEqual(batch.codec, CODEC_GZIP)

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_afkak_21_wrappers_write_their_inner_messages(self) -> None:
        # afkak 21 applications pass create_message_set(...)[0], or mix wrappers and plain
        # messages; every inner message becomes a record, offsets count them.
        client = self.make_client()
        for codec in (CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            self.cluster.create_topic(f"w{codec}", 1)
            wrapper = create_message_set([("t", b"k", [b"a", b"b", b"c"], None)], codec)[0]
            plain = create_message(b"p")
            [first] = self.successResultOf(
                client.send_produce_request([ProduceRequest(f"w{codec}", 0, [wrapper])])
            )
            [second] = self.successResultOf(
                client.send_produce_request(
                    [ProduceRequest(f"w{codec}", 0, [plain, wrapper, plain])]
                )
            )
            self.assertEqual((first.offset, second.offset), (0, 3))
            self.assertEqual(
                [(r.offset, r.key, r.value) for r in self.cluster.records(f"w{codec}", 0)],
                [
                    (0, b"k", b"a"),
                    (1, b"k", b"b"),
                    (2, b"k", b"c"),
                    (3, None, b"p"),
                    (4, b"k", b"a"),
                    (5, b"k", b"b"),
                    (6, b"k", b"c"),
                    (7, None, b"p"),
                ],
            )
            last = self.seen(PRODUCE)[-1].request.topic_data[0].partition_data[0]
            [batch] = read_batches(last.records)
            self.assertEqual((batch.codec, batch.record_count), (codec, 5))

    def test_a_wrapper_without_a_message_set_fails_the_call(self) -> None:
        client = self.make_client()
        bad = Message(0, CODEC_GZIP, None, b"not gzip")
        with self.assertRaises(ValueError):
            client.send_produce_request([ProduceRequest("t", 0, [bad])])
        self.assertEqual(self.seen(PRODUCE), [])

    def test_payload_over_the_limit_is_written_as_several_batches_in_order(self) -> None:
        # afkak 21 wrote ten 384 KiB messages in one call: each message is under the broker's
        # 1 MiB, the whole is not.  The client cuts the batch; the offsets follow on.
        client = self.make_client()
        values = [bytes([65 + i]) * (384 * 1024) for i in range(10)]
        [response] = self.successResultOf(
            client.send_produce_request(
                [ProduceRequest("t", 0, [create_message(v) for v in values])]
            )
        )
        self.assertEqual((response.error, response.offset), (0, 0))
        self.assertEqual([r.value for r in self.cluster.records("t", 0)], values)
        sizes = [len(r.request.topic_data[0].partition_data[0].records) for r in self.seen(PRODUCE)]
        self.assertEqual(len(sizes), 5)
        self.assertTrue(all(size <= client.max_request_size for size in sizes), sizes)
        [again] = self.successResultOf(
            client.send_produce_request([ProduceRequest("t", 0, [create_message(b"next")])])
        )
        self.assertEqual(again.offset, 10)

    def test_record_over_the_limit_fails_only_its_payload(self) -> None:
        client = self.make_client()
        huge = create_message(b"x" * (1024 * 1024))
        payloads = [
            ProduceRequest("t", 0, [create_message(b"before"), huge]),
            ProduceRequest("t", 1, [create_message(b"fine")]),
        ]
        responses = self.successResultOf(client.send_produce_request(payloads, fail_on_error=False))
        self.assertEqual([(r.error, r.offset) for r in responses], [(10, -1), (0, 0)])
        self.assertEqual(self.cluster.records("t", 0), [])
        self.assertEqual([r.value for r in self.cluster.records("t", 1)], [b"fine"])
        failure = self.failureResultOf(
            client.send_produce_request(payloads[:1]), MessageSizeTooLargeError
        )
        self.assertEqual(failure.value.args[0], ProduceResponse("t", 0, 10, -1))

    def test_batch_refused_as_too_large_is_halved(self) -> None:
        # A broker whose message.max.bytes is below the client's limit: learn and split.
        self.cluster.state.max_message_bytes = 300 * 1024
        client = self.make_client()
        values = [b"%d" % i * (50 * 1024) for i in range(8)]
        [response] = self.successResultOf(
            client.send_produce_request(
                [ProduceRequest("t", 0, [create_message(v) for v in values])]
            )
        )
        self.assertEqual((response.error, response.offset), (0, 0))
        self.assertEqual([r.value for r in self.cluster.records("t", 0)], values)
        single = create_message(b"y" * (400 * 1024))
        [refused] = self.successResultOf(
            client.send_produce_request([ProduceRequest("t", 0, [single])], fail_on_error=False)
        )
        self.assertEqual(refused.error, 10)
        self.assertEqual(len(self.cluster.records("t", 0)), 8)

    def test_acks_zero_returns_no_responses(self) -> None:
        client = self.make_client()
        self.assertEqual(
            self.successResultOf(
                client.send_produce_request(
                    [ProduceRequest("t", 0, [create_message(b"x")])], acks=0
                )
            ),
            [],
        )
        self.assertEqual([r.value for r in self.cluster.records("t", 0)], [b"x"])

    def test_broker_error_raises_and_forgets_the_leader(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.fail_next(PRODUCE, NotLeaderForPartitionError.errno)
        d = client.send_produce_request([ProduceRequest("t", 1, [create_message(b"x")])])
        failure = self.failureResultOf(d, NotLeaderForPartitionError)
        self.assertEqual(failure.value.args[0], ProduceResponse("t", 1, 6, -1))
        self.assertIsNone(client.topics_to_brokers[TopicAndPartition("t", 1)])
        self.assertIsNotNone(client.topics_to_brokers[TopicAndPartition("t", 0)])

    def test_moved_leader_is_found_again(self) -> None:
        client = self.make_client()
        payload = [ProduceRequest("t", 1, [create_message(b"x")])]
        self.successResultOf(client.send_produce_request(payload))
        self.cluster.move_leader("t", 1, 2)
        failure = self.failureResultOf(
            client.send_produce_request(payload), NotLeaderForPartitionError
        )
        self.assertEqual(failure.value.args[0].partition, 1)
        responses = self.successResultOf(client.send_produce_request(payload))
        self.assertEqual(responses, [ProduceResponse("t", 1, 0, 1)])
        self.assertEqual(self.seen(PRODUCE)[-1].broker, 2)

    def test_fail_on_error_false_returns_errors_through_callback(self) -> None:
        client = self.make_client()
        self.cluster.fail_next(PRODUCE, NotLeaderForPartitionError.errno, broker=0)
        payloads = [ProduceRequest("t", p, [create_message(b"x")]) for p in range(3)]
        d = client.send_produce_request(
            payloads, fail_on_error=False, callback=lambda r: (r.partition, r.error)
        )
        self.assertEqual(self.successResultOf(d), [(0, 6), (1, 0), (2, 0)])

    def test_partial_failure(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.drop_next(PRODUCE, broker=1)
        payloads = [ProduceRequest("t", p, [create_message(b"x")]) for p in range(3)]
        failure = self.failureResultOf(
            client.send_produce_request(payloads, fail_on_error=False), FailedPayloadsError
        )
        self.assertEqual(
            failure.value.responses, [ProduceResponse("t", 0, 0, 0), ProduceResponse("t", 2, 0, 0)]
        )
        [(payload, reason)] = failure.value.failed_payloads
        self.assertEqual(payload, payloads[1])
        self.assertTrue(reason.check(BrokerConnectionError))
        self.assertIsNone(client.topics_to_brokers[TopicAndPartition("t", 1)])
        retry = client.send_produce_request(payloads[1:2])
        self.clock.advance(1)  # the retry policy's delay before reconnecting
        self.assertEqual(self.successResultOf(retry), [ProduceResponse("t", 1, 0, 0)])

    def test_unknown_partition(self) -> None:
        client = self.make_client()
        self.failureResultOf(
            client.send_produce_request([ProduceRequest("t", 7, [create_message(b"x")])]),
            PartitionUnavailableError,
        )
        self.assertEqual(self.seen(PRODUCE), [])

    def test_leaderless_partition(self) -> None:
        self.cluster.create_topic("solo", replicas=[[1]])
        client = self.make_client()
        self.cluster.set_broker_down(1)
        self.failureResultOf(
            client.send_produce_request([ProduceRequest("solo", 0, [create_message(b"x")])]),
            LeaderUnavailableError,
        )

    def test_bad_input_raises_before_sending(self) -> None:
        client = self.make_client()
        message = [create_message(b"x")]
        bad_calls = [
            (TypeError, lambda: client.send_produce_request(None)),
            (ValueError, lambda: client.send_produce_request([])),
            (TypeError, lambda: client.send_produce_request([("t", 0, message)])),
            (TypeError, lambda: client.send_produce_request([ProduceRequest(b"t", 0, message)])),
            (
                ValueError,
                lambda: client.send_produce_request([ProduceRequest("bad topic", 0, message)]),
            ),
            (ValueError, lambda: client.send_produce_request([ProduceRequest("t", 0, [])])),
            (
                TypeError,
                lambda: client.send_produce_request(
                    [ProduceRequest("t", 0, [Message(0, 0, None, "str")])]
                ),
            ),
            (
                ValueError,
                lambda: client.send_produce_request([ProduceRequest("t", 0, message)] * 2),
            ),
            (
                ValueError,
                lambda: client.send_produce_request([ProduceRequest("t", 0, message)], acks=2),
            ),
            (
                TypeError,
                lambda: client.send_produce_request([ProduceRequest("t", 0, message)], timeout=1.5),
            ),
            (
                TypeError,
                lambda: client.send_produce_request([ProduceRequest("t", 0, message)], callback=5),
            ),
        ]
        for error, call in bad_calls:
            self.assertRaises(error, call)
        self.assertEqual(self.cluster.requests_seen, [])


class FetchTests(ClientTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("t", partitions=2)
        self.cluster.append("t", 0, [b"a", b"b", b"c"], [b"k", None, None], timestamp=7)
        self.cluster.append("t", 0, [b"d"], timestamp=8, headers=[[("h", b"1")]])

    def test_fetch_from_an_offset_inside_a_batch(self) -> None:
        client = self.make_client()
        [response] = self.successResultOf(
            client.send_fetch_request([FetchRequest("t", 0, 1, 10000)], max_wait_time=0)
        )
        self.assertEqual(
            (response.topic, response.partition, response.error, response.highwaterMark),
            ("t", 0, 0, 4),
        )
        messages = list(response.messages)
        self.assertEqual(
            [(m.offset, m.message.value) for m in messages], [(1, b"b"), (2, b"c"), (3, b"d")]
        )
        self.assertEqual(
            messages[2].message, Message(2, 0, None, b"d", timestamp=8, headers=(("h", b"1"),))
        )
        self.assertGreaterEqual(self.seen(FETCH)[0].api_version, 13)
        self.assertEqual(self.seen(FETCH)[0].request.topics[0].topic_id, self.cluster.topic_id("t"))

    def test_fetch_by_name_from_older_brokers(self) -> None:
        self.cluster.state.api_versions[FETCH] = (4, 12)
        client = self.make_client()
        [response] = self.successResultOf(
            client.send_fetch_request([FetchRequest("t", 0, 3, 10000)], max_wait_time=0)
        )
        self.assertEqual([m.offset for m in response.messages], [3])
        self.assertEqual(self.seen(FETCH)[0].api_version, 12)

    def test_long_poll_gets_the_server_wait_on_top_of_the_timeout(self) -> None:
        client = self.make_client(timeout=1000)
        d = client.send_fetch_request(
            [FetchRequest("t", 1, 0, 10000)], max_wait_time=3000, min_bytes=1
        )
        self.clock.advance(2.9)
        self.assertNoResult(d)
        self.cluster.append("t", 1, [b"late"], timestamp=1)
        [response] = self.successResultOf(d)
        self.assertEqual([m.message.value for m in response.messages], [b"late"])

    def test_offset_out_of_range(self) -> None:
        client = self.make_client()
        d = client.send_fetch_request([FetchRequest("t", 0, 99, 10000)], max_wait_time=0)
        self.failureResultOf(d, OffsetOutOfRangeError)
        d = client.send_fetch_request(
            [FetchRequest("t", 0, 99, 10000)], max_wait_time=0, fail_on_error=False
        )
        [response] = self.successResultOf(d)
        self.assertEqual(
            (response.error, list(response.messages)), (OffsetOutOfRangeError.errno, [])
        )

    def test_unknown_topic_error_forgets_the_topic(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.fail_next(FETCH, UnknownTopicOrPartitionError.errno)
        self.failureResultOf(
            client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=0),
            UnknownTopicOrPartitionError,
        )
        self.assertFalse(client.has_metadata_for_topic("t"))

    def test_timeout_and_disconnect_on_timeout(self) -> None:
        client = self.make_client(timeout=1000, disconnect_on_timeout=True)
        self.successResultOf(
            client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=0)
        )
        self.assertEqual(self.cluster.open_connections(0), 1)
        self.cluster.delay(FETCH, 10)
        d = client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=500)
        self.clock.advance(1.4)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        failure = self.failureResultOf(d, FailedPayloadsError)
        self.assertTrue(failure.value.failed_payloads[0][1].check(RequestTimedOutError))
        self.assertEqual(self.cluster.open_connections(0), 0)
        self.cluster.delay(FETCH, 0)
        self.clock.advance(10)
        self.successResultOf(
            client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=0)
        )

    def test_bad_input(self) -> None:
        client = self.make_client()
        for kwargs in ({"max_wait_time": -1}, {"min_bytes": 2**31}, {"max_wait_time": "5"}):
            self.assertRaises(
                (TypeError, ValueError),
                client.send_fetch_request,
                [FetchRequest("t", 0, 0, 1)],
                **kwargs,
            )
        self.assertRaises(ValueError, client.send_fetch_request, [FetchRequest("t", 0, -1, 1)])
        self.assertRaises(TypeError, client.send_fetch_request, [FetchRequest("t", 0, 0, None)])
        self.assertEqual(self.cluster.requests_seen, [])


class OffsetTests(ClientTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("t", partitions=2)
        self.cluster.append("t", 1, [b"a", b"b"], timestamp=5)

    def test_earliest_and_latest(self) -> None:
        client = self.make_client()
        latest = [OffsetRequest("t", 1, -1, 1), OffsetRequest("t", 0, -1, 5)]
        responses = self.successResultOf(client.send_offset_request(latest))
        self.assertEqual(
            [(r.topic, r.partition, r.error, r.offsets) for r in responses],
            [("t", 1, 0, (2,)), ("t", 0, 0, (0,))],
        )
        self.cluster.delete_records("t", 1, 1)
        [earliest] = self.successResultOf(
            client.send_offset_request([OffsetRequest("t", 1, -2, 1)])
        )
        self.assertEqual(earliest.offsets, (1,))
        self.assertTrue(all(r.request.replica_id == -1 for r in self.seen(LIST_OFFSETS)))

    def test_commit_and_fetch_round_trip(self) -> None:
        client = self.make_client()
        commit = [
            OffsetCommitRequest("t", 0, 42, -1, b"meta"),
            OffsetCommitRequest("t", 1, 7, -1, None),
        ]
        responses = self.successResultOf(client.send_offset_commit_request("g", commit))
        self.assertEqual(
            [(r.topic, r.partition, r.error) for r in responses], [("t", 0, 0), ("t", 1, 0)]
        )
        self.assertEqual(dict(self.cluster.state.committed("g"))[("t", 0)].offset, 42)
        fetched = self.successResultOf(
            client.send_offset_fetch_request(
                "g", [OffsetFetchRequest("t", 1), OffsetFetchRequest("t", 0)]
            )
        )
        self.assertEqual(
            [(r.partition, r.offset, r.metadata, r.error) for r in fetched],
            [(1, 7, b"", 0), (0, 42, b"meta", 0)],
        )
        coordinator = self.cluster.coordinator("g")
        self.assertEqual(
            {r.broker for r in self.seen(OFFSET_COMMIT) + self.seen(OFFSET_FETCH)}, {coordinator}
        )

    def test_topic_ids_once_known(self) -> None:
        client = self.make_client()
        self.assertEqual(dict(client.topic_ids), {})
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.assertEqual(dict(client.topic_ids), {"t": self.cluster.topic_id("t")})
        commit = [OffsetCommitRequest("t", 1, 3, -1, "m")]
        self.successResultOf(client.send_offset_commit_request("g", commit))
        [fetched] = self.successResultOf(
            client.send_offset_fetch_request("g", [OffsetFetchRequest("t", 1)])
        )
        self.assertEqual((fetched.topic, fetched.offset, fetched.metadata), ("t", 3, b"m"))
        [seen_commit], [seen_fetch] = self.seen(OFFSET_COMMIT), self.seen(OFFSET_FETCH)
        self.assertEqual((seen_commit.api_version, seen_fetch.api_version), (10, 10))
        self.assertEqual(seen_commit.request.topics[0].topic_id, self.cluster.topic_id("t"))

    def test_commit_generation_and_member(self) -> None:
        client = self.make_client()
        self.successResultOf(
            client.send_offset_commit_request(
                "g",
                [OffsetCommitRequest("t", 0, 1, -1, "")],
                group_generation_id=3,
                consumer_id="m-1",
                fail_on_error=False,
            )
        )
        request = self.seen(OFFSET_COMMIT)[0].request
        self.assertEqual((request.generation_id_or_member_epoch, request.member_id), (3, "m-1"))

    def test_no_committed_offset(self) -> None:
        client = self.make_client()
        [r] = self.successResultOf(
            client.send_offset_fetch_request("g", [OffsetFetchRequest("t", 0)])
        )
        self.assertEqual((r.offset, r.error), (-1, 0))

    def test_not_coordinator_forgets_the_coordinator(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_coordinator_for_group("g"))
        self.cluster.fail_next(OFFSET_COMMIT, NotCoordinator.errno)
        d = client.send_offset_commit_request("g", [OffsetCommitRequest("t", 0, 1, -1, "")])
        self.failureResultOf(d, NotCoordinator)
        self.assertNotIn("g", client._cluster.cache.coordinators)
        self.successResultOf(
            client.send_offset_commit_request("g", [OffsetCommitRequest("t", 0, 1, -1, "")])
        )
        self.assertEqual(len(self.seen(FIND_COORDINATOR)), 2)

    def test_callback_applies_to_each_response(self) -> None:
        client = self.make_client()
        d = client.send_offset_fetch_request(
            "g",
            [OffsetFetchRequest("t", 0), OffsetFetchRequest("t", 1)],
            callback=lambda r: r.partition,
        )
        self.assertEqual(self.successResultOf(d), [0, 1])

    def test_bad_input(self) -> None:
        client = self.make_client()
        self.assertRaises(
            TypeError,
            client.send_offset_commit_request,
            None,
            [OffsetCommitRequest("t", 0, 1, -1, "")],
        )
        self.assertRaises(
            ValueError,
            client.send_offset_commit_request,
            "",
            [OffsetCommitRequest("t", 0, 1, -1, "")],
        )
        self.assertRaises(
            TypeError,
            client.send_offset_commit_request,
            "g",
            [OffsetCommitRequest("t", 0, 1, -1, 5)],
        )
        self.assertRaises(
            ValueError,
            client.send_offset_commit_request,
            "g",
            [OffsetCommitRequest("t", 0, 1, -1, b"\xff")],
        )
        self.assertRaises(
            TypeError,
            client.send_offset_commit_request,
            "g",
            [OffsetCommitRequest("t", 0, 1, -1, "")],
            consumer_id=None,
        )
        self.assertRaises(
            TypeError,
            client.send_offset_commit_request,
            "g",
            [OffsetCommitRequest("t", 0, "1", -1, "")],
        )
        self.assertRaises(
            TypeError, client.send_offset_fetch_request, "g", [OffsetRequest("t", 0, -1, 1)]
        )
        self.assertRaises(TypeError, client.send_offset_request, [OffsetRequest("t", 0, None, 1)])
        self.assertEqual(self.cluster.requests_seen, [])


class UndecodableResponseTests(ClientTestCase):
    def test_only_that_request_fails(self) -> None:
        self.cluster.create_topic("t", partitions=3)
        spoiler = CorruptNextResponse(self.cluster.endpoint_factory, "broker-1")
        client = self.make_client(endpoint_factory=spoiler.endpoint_factory)
        payloads = [OffsetRequest("t", p, -1, 1) for p in range(3)]
        self.assertEqual(len(self.successResultOf(client.send_offset_request(payloads))), 3)
        spoiler.armed = True
        failure = self.failureResultOf(client.send_offset_request(payloads), FailedPayloadsError)
        self.assertEqual([r.partition for r in failure.value.responses], [0, 2])
        [(payload, reason)] = failure.value.failed_payloads
        self.assertEqual(payload, payloads[1])
        self.assertTrue(reason.check(DecodeError))
        self.assertEqual(self.cluster.open_connections(1), 0)
        self.assertEqual(self.cluster.open_connections(0), 1)
        self.assertIsNotNone(client.topics_to_brokers[TopicAndPartition("t", 1)])
        retry = client.send_offset_request(payloads)
        self.clock.advance(1)  # reconnecting to broker 1
        self.assertEqual([r.error for r in self.successResultOf(retry)], [0, 0, 0])

    def test_metadata_from_a_broker_that_sends_garbage(self) -> None:
        spoiler = CorruptNextResponse(self.cluster.endpoint_factory, "broker-0")
        spoiler.armed = True
        client = self.make_client("broker-0", endpoint_factory=spoiler.endpoint_factory)
        failure = self.failureResultOf(client.load_metadata_for_topics("t"), KafkaUnavailableError)
        self.assertIn("trailing bytes", str(failure.value))
        self.assertIs(self.successResultOf(client.load_metadata_for_topics("t")), True)
        self.assertEqual(client.topic_partitions, {"t": [0]})


class RawRequestTests(ClientTestCase):
    def test_request_to_any_broker(self) -> None:
        client = self.make_client()
        response = self.successResultOf(
            client.send_request_to_any_broker(ApiVersionsRequest(), max_version=2)
        )
        self.assertEqual(response.error_code, 0)
        self.assertEqual(self.cluster.requests_seen[-1].api_version, 2)

    def test_request_to_coordinator_forgets_a_moved_coordinator(self) -> None:
        client = self.make_client()
        request = RawOffsetFetch(group_id="g", topics=None)
        response = self.successResultOf(
            client.send_request_to_coordinator("g", request, max_version=7)
        )
        self.assertEqual(response.error_code, 0)
        self.assertEqual(self.cluster.requests_seen[-1].broker, self.cluster.coordinator("g"))
        self.assertIn("g", client._cluster.cache.coordinators)
        self.cluster.fail_next(OFFSET_FETCH, NotCoordinator.errno)
        response = self.successResultOf(
            client.send_request_to_coordinator("g", request, max_version=7)
        )
        self.assertEqual(response.error_code, NotCoordinator.errno)
        self.assertNotIn("g", client._cluster.cache.coordinators)

    def test_lost_connection_forgets_the_coordinator(self) -> None:
        client = self.make_client()
        self.successResultOf(client.load_coordinator_for_group("g"))
        self.cluster.drop_next(OFFSET_FETCH)
        d = client.send_request_to_coordinator(
            "g", RawOffsetFetch(group_id="g", topics=None), max_version=7
        )
        self.failureResultOf(d, BrokerConnectionError)
        self.assertNotIn("g", client._cluster.cache.coordinators)
        self.clock.advance(1)


class LifecycleTests(ClientTestCase):
    def test_close_cancels_pending_and_refuses_later_operations(self) -> None:
        self.cluster.create_topic("t")
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.delay(FETCH, 5)
        pending = client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=0)
        self.cluster.delay(METADATA, 5)
        loading = client.load_metadata_for_topics("u")
        closed = client.close()
        self.failureResultOf(pending, CancelledError)
        self.failureResultOf(loading, CancelledError)
        self.assertIsNone(self.successResultOf(closed))
        self.assertEqual((client.topic_partitions, client.clients), ({}, {}))
        self.assertEqual(
            sum(self.cluster.open_connections(n) for n in self.cluster.state.brokers), 0
        )
        self.failureResultOf(client.send_fetch_request([FetchRequest("t", 0, 0, 100)]), ClientError)
        self.failureResultOf(client.load_metadata_for_topics("t"), ClientError)
        self.assertIsNone(self.successResultOf(client.close()))
        self.clock.advance(5)

    def test_close_while_bootstrapping(self) -> None:
        client = self.make_client()
        self.cluster.delay(METADATA, 5)
        loading = client.load_metadata_for_topics("t")
        self.assertEqual(
            sum(self.cluster.open_connections(n) for n in self.cluster.state.brokers), 1
        )
        self.successResultOf(client.close())
        self.failureResultOf(loading, CancelledError)
        self.assertEqual(
            sum(self.cluster.open_connections(n) for n in self.cluster.state.brokers), 0
        )
        self.clock.advance(5)

    def test_cancel_one_operation(self) -> None:
        self.cluster.create_topic("t", partitions=2)
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.cluster.delay(FETCH, 1, broker=0)
        slow = client.send_fetch_request([FetchRequest("t", 0, 0, 100)], max_wait_time=0)
        slow.cancel()
        self.failureResultOf(slow, CancelledError)
        self.successResultOf(
            client.send_fetch_request([FetchRequest("t", 1, 0, 100)], max_wait_time=0)
        )
        self.clock.advance(1)


class RoutingForHigherLayersTests(ClientTestCase):
    """leaders_for / send_request_to_broker / note_stale_leaders, used by producer and consumer."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("r", partitions=3)

    def test_leaders_for_loads_all_partitions_in_one_metadata_request(self) -> None:
        client = self.make_client()
        keys = [TopicAndPartition("r", p) for p in range(3)]
        leaders = self.successResultOf(client.leaders_for(keys))
        self.assertEqual(
            {k: b.node_id for k, b in leaders.items()},
            {k: self.cluster.partition("r", k.partition).leader for k in keys},
        )
        self.assertEqual(len(self.seen(METADATA)), 1)

    def test_leaders_for_unknown_partition_fails(self) -> None:
        client = self.make_client()
        self.failureResultOf(
            client.leaders_for([TopicAndPartition("r", 7)]), PartitionUnavailableError
        )

    def test_send_request_to_broker_and_stale_leaders(self) -> None:
        client = self.make_client()
        key = TopicAndPartition("r", 1)
        leader = self.successResultOf(client.leaders_for([key]))[key]
        response = self.successResultOf(
            client.send_request_to_broker(leader, MetadataRequest(topics=None))
        )
        self.assertEqual(sorted(t.name for t in response.topics), ["r"])
        self.cluster.move_leader("r", 1, (leader.node_id + 1) % 3)
        client.note_stale_leaders([key])
        moved = self.successResultOf(client.leaders_for([key]))[key]
        self.assertEqual(moved.node_id, (leader.node_id + 1) % 3)

    def test_send_request_to_broker_after_close_fails(self) -> None:
        client = self.make_client()
        key = TopicAndPartition("r", 0)
        leader = self.successResultOf(client.leaders_for([key]))[key]
        self.successResultOf(client.close())
        self.failureResultOf(
            client.send_request_to_broker(leader, MetadataRequest(topics=None)), ClientError
        )


class FetchConnectionTests(ClientTestCase):
    """Fetches have their own connection: a broker answers a connection's requests in
    order, so nothing else may queue behind a fetch that long-polls."""

    def test_produce_does_not_wait_behind_a_long_polling_fetch(self) -> None:
        self.cluster.create_topic("lp", partitions=1)
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("lp"))
        polling = client.send_fetch_request(
            [FetchRequest("lp", 0, 0, 1024)], max_wait_time=5000, min_bytes=4096
        )
        produced = client.send_produce_request([ProduceRequest("lp", 0, [create_message(b"v")])])
        self.assertEqual([r.error for r in self.successResultOf(produced)], [0])
        self.assertNoResult(polling)
        self.clock.advance(5)
        [fetched] = self.successResultOf(polling)
        self.assertEqual([m.message.value for m in fetched.messages], [b"v"])


class CoordinatorConnectionTests(ClientTestCase):
    """Coordinator traffic has its own connection, as in Kafka's Java client."""

    def test_commit_does_not_wait_behind_a_long_polling_fetch(self) -> None:
        self.cluster.create_topic("lp", partitions=1)
        group = "lp-group"
        self.cluster.move_leader("lp", 0, self.cluster.coordinator(group))
        client = self.make_client()
        self.successResultOf(client.load_metadata_for_topics("lp"))
        self.successResultOf(client.load_coordinator_for_group(group))
        polling = client.send_fetch_request(
            [FetchRequest("lp", 0, 0, 1024)], max_wait_time=5000, min_bytes=1
        )
        self.assertNoResult(polling)
        committed = client.send_offset_commit_request(
            group, [OffsetCommitRequest("lp", 0, 1, -1, None)]
        )
        self.assertEqual([r.error for r in self.successResultOf(committed)], [0])
        self.assertNoResult(polling)
        node = self.cluster.coordinator(group)
        pool = client._cluster.pool
        self.assertIsNot(pool.fetch_clients[node], pool.coordinator_clients[node])
        self.clock.advance(5)
        self.assertEqual(self.successResultOf(polling)[0].error, 0)

    def kill_coordinator(self, client: KafkaClient, group: str) -> int:
        """kill -9 of *group*'s coordinator: its connections dropped, new ones refused."""
        self.successResultOf(client.load_coordinator_for_group(group))
        node = self.cluster.coordinator(group)
        self.cluster.refuse_connections(node)
        self.cluster.drop_connections(node)
        return node

    def test_requests_to_a_dead_coordinator_fail_at_its_next_refusal(self) -> None:
        """Issue 33: a request for a coordinator whose broker died fails when its
        connection is refused (the reconnection back-off is 1 s here), not at its
        timeout; the coordinator is forgotten, so the next request looks it up again."""
        client = self.make_client()
        self.kill_coordinator(client, "g")
        raw = client.send_request_to_coordinator(
            "g", RawOffsetFetch(group_id="g", topics=None), max_version=7, timeout=300
        )
        self.clock.advance(1)
        self.failureResultOf(raw, BrokerConnectionError)
        self.assertNotIn("g", client.consumer_group_to_brokers())
        self.successResultOf(client.load_coordinator_for_group("g"))
        commit = client.send_offset_commit_request("g", [OffsetCommitRequest("t", 0, 1, -1, "")])
        self.clock.advance(1)
        self.failureResultOf(commit, FailedPayloadsError)
        self.assertNotIn("g", client.consumer_group_to_brokers())

    def coordinator_backing_off(self, client: KafkaClient) -> RawOffsetFetch:
        """Kill group "g"'s coordinator, have one request refused (its connection now
        backs off) and look the coordinator up again: a request to send it."""
        self.kill_coordinator(client, "g")
        request = RawOffsetFetch(group_id="g", topics=None)
        first = client.send_request_to_coordinator("g", request, max_version=7)
        self.failureResultOf(first, BrokerConnectionError)
        self.successResultOf(client.load_coordinator_for_group("g"))
        return request

    def test_every_request_queued_for_a_dead_coordinator_fails(self) -> None:
        client = self.make_client()
        request = self.coordinator_backing_off(client)
        queued = [client.send_request_to_coordinator("g", request, max_version=7) for _ in "ab"]
        self.clock.advance(1)
        for d in queued:
            self.failureResultOf(d, BrokerConnectionError)

    def test_client_closed_as_a_coordinator_request_is_refused(self) -> None:
        """The failure of a refused coordinator request closes the connection that was
        connecting (here: the whole client) before the connection hears of the refusal:
        it stays closed, nothing else happens."""
        client = self.make_client()
        request = self.coordinator_backing_off(client)
        d = client.send_request_to_coordinator("g", request, max_version=7)
        closing: list[Deferred[None]] = []
        d.addErrback(lambda _: closing.append(client.close()))
        self.clock.advance(1)
        self.assertIsNone(self.successResultOf(closing[0]))
        self.assertEqual(self.clock.getDelayedCalls(), [])
        gc.collect()  # an error left in a Deferred is logged (failing the test) now

    def test_a_dead_coordinator_is_dropped_once_the_cluster_has_noticed(self) -> None:
        """A coordinator lost with its broker makes the client ask for the live brokers:
        once the cluster no longer lists it, it is forgotten, its connections closed."""
        client = self.make_client()
        node = self.kill_coordinator(client, "g")
        self.cluster.set_broker_down(node)
        d = client.send_request_to_coordinator(
            "g", RawOffsetFetch(group_id="g", topics=None), max_version=7, timeout=300
        )
        self.clock.advance(1)
        self.failureResultOf(d, BrokerConnectionError)
        self.assertNotIn(node, client._brokers)
        self.assertNotIn(node, client._cluster.pool.coordinator_clients)
        d = client.send_request_to_coordinator(
            "g", RawOffsetFetch(group_id="g", topics=None), max_version=7
        )
        self.assertEqual(self.successResultOf(d).error_code, 0)
        self.assertEqual(self.cluster.requests_seen[-1].broker, self.cluster.coordinator("g"))


class DeniedTopicTests(ConnectionTestCase):
    """A topic the principal may not describe: Kafka's Metadata names it with
    TOPIC_AUTHORIZATION_FAILED (and the response itself succeeds)."""

    def test_leaders_of_a_denied_topic_is_an_authorization_error(self) -> None:
        denied = MetadataResponse.MetadataResponseTopic(
            name="denied", error_code=TopicAuthorizationFailed.errno
        )
        self.broker.special["denied"] = lambda header: MetadataResponse(topics=[denied])
        client = KafkaClient(
            "broker:9092", reactor=self.clock, endpoint_factory=self.net.endpoint_factory
        )
        d = client.leaders_for([TopicAndPartition("denied", 0)])
        self.net.flush()
        failure = self.failureResultOf(d, TopicAuthorizationFailed)
        self.assertIn("'denied'", str(failure.value))
        d = client.leaders_for([TopicAndPartition("unknown", 0)])  # no error, no partitions
        self.net.flush()
        self.failureResultOf(d, PartitionUnavailableError)
        closed = client.close()
        self.net.flush()
        self.successResultOf(closed)
