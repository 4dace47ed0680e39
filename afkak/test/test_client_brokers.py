"""KafkaClient against real Kafka-protocol brokers (Tansu, noida-db, librdkafka's mock).

The global reactor is driven with ``reactor.iterate()`` until each Deferred
fires, so these tests run under pytest and trial alike (the reactor is never
started, so name resolution, which needs its thread pool, is avoided).  Each test uses its
own topic and group names on the process's shared brokers; a broker that
cannot run skips its tests.
"""

from __future__ import annotations

import itertools
import time
import warnings
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP
from afkak.common import (
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    CancelledError,
    ClientError,
    CoordinatorLoadInProgress,
    FetchRequest,
    KafkaUnavailableError,
    Message,
    NotCoordinator,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetRequest,
    ProduceRequest,
    TopicAndPartition,
)
from afkak.message_set import create_message_set
from afkak.test.brokers import Broker, shared_broker
from afkak.test.helpers import wait

_names = itertools.count()


class RealBrokerTests:
    """Mixed into one SynchronousTestCase per broker kind."""

    broker_name: ClassVar[str]
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        self.topic = f"client-{self.broker_name}-{next(_names)}"
        self.client = KafkaClient(
            self.broker.bootstrap,
            clientId="afkak-client-test",
            timeout=10000,
            endpoint_factory=TCP4ClientEndpoint,  # the harness binds 127.0.0.1: no resolver threads
        )
        self.addCleanup(lambda: wait(self.client.close()))  # type: ignore[attr-defined]

    def create(self, partitions: int = 1) -> None:
        self.broker.create_topic(self.topic, partitions)
        wait(self.client.load_metadata_for_topics(self.topic))

    def test_metadata(self: Any) -> None:
        self.create(partitions=2)
        self.assertEqual(self.client.topic_partitions[self.topic], [0, 1])
        self.assertEqual(self.client.metadata_error_for_topic(self.topic), 0)
        self.assertGreaterEqual(len(self.client._brokers), self.broker.quirks.broker_count)

    def test_produce_fetch_round_trip(self: Any) -> None:
        self.create()
        now = int(time.time() * 1000)
        messages = create_message_set([(self.topic, b"k", [b"one", b"two"], None)], CODEC_GZIP)
        messages.append(Message(0, 0, None, b"three", timestamp=now, headers=(("h", b"v"),)))
        [produced] = wait(
            self.client.send_produce_request([ProduceRequest(self.topic, 0, messages)])
        )
        self.assertEqual((produced.error, produced.offset), (0, 0))
        [fetched] = wait(
            self.client.send_fetch_request(
                [FetchRequest(self.topic, 0, 1, 1 << 20)], max_wait_time=100, min_bytes=1
            )
        )
        got = [
            (m.offset, m.message.key, m.message.value, m.message.headers) for m in fetched.messages
        ]
        self.assertEqual(got, [(1, b"k", b"two", ()), (2, None, b"three", (("h", b"v"),))])
        self.assertEqual(fetched.highwaterMark, 3)

    def test_list_offsets(self: Any) -> None:
        self.create()
        batch = [Message(0, 0, None, b"x", timestamp=int(time.time() * 1000))] * 3
        wait(self.client.send_produce_request([ProduceRequest(self.topic, 0, batch)]))
        earliest, latest = wait(
            self.client.send_offset_request([OffsetRequest(self.topic, 0, OFFSET_EARLIEST, 1)])
        ) + wait(self.client.send_offset_request([OffsetRequest(self.topic, 0, OFFSET_LATEST, 1)]))
        self.assertEqual(earliest.offsets, (0,))
        if not self.broker.quirks.differs("list_offsets_latest_is_last_batch_base_plus_one"):
            self.assertEqual(latest.offsets, (3,))

    def test_commit_and_fetch_offsets(self: Any) -> None:
        self.create(partitions=2)
        group = f"{self.topic}-group"
        commits = [
            OffsetCommitRequest(self.topic, 0, 17, -1, "m"),
            OffsetCommitRequest(self.topic, 1, 3, -1, None),
        ]
        # A new group's coordinator may still be loading its __consumer_offsets
        # partition (Kafka: NOT_COORDINATOR, retriable): the caller retries, as in 21.5.
        for _ in range(50):
            try:
                responses = wait(self.client.send_offset_commit_request(group, commits))
                break
            except (NotCoordinator, CoordinatorLoadInProgress):
                time.sleep(0.1)
        self.assertEqual([r.error for r in responses], [0, 0])
        fetched = wait(
            self.client.send_offset_fetch_request(
                group, [OffsetFetchRequest(self.topic, 1), OffsetFetchRequest(self.topic, 0)]
            )
        )
        self.assertEqual(
            [(r.partition, r.offset, r.error) for r in fetched], [(1, 3, 0), (0, 17, 0)]
        )
        if not self.broker.quirks.differs("commit_metadata_not_stored"):
            self.assertEqual(fetched[1].metadata, b"m")
        self.assertIs(wait(self.client.load_coordinator_for_group(group)), True)

    def test_metadata_cache_calls(self: Any) -> None:
        self.create(partitions=2)
        self.assertTrue(self.client.has_metadata_for_topic(self.topic))
        self.assertTrue(self.client.topic_fully_replicated(self.topic))
        key = TopicAndPartition(self.topic, 1)
        self.assertTrue(self.client.partition_fully_replicated(key))
        meta = self.client.partition_meta[key]
        self.assertEqual(
            (meta.topic, meta.partition, meta.partition_error_code), (self.topic, 1, 0)
        )
        self.assertEqual(self.client.topics_to_brokers[key].node_id, meta.leader)
        self.assertIn(meta.leader, self.client._brokers)
        self.client.reset_topic_metadata(self.topic)
        self.assertFalse(self.client.has_metadata_for_topic(self.topic))
        wait(self.client.load_metadata_for_topics())  # every topic, no auto-creation
        self.assertTrue(self.client.has_metadata_for_topic(self.topic))
        self.client.reset_all_metadata()
        self.assertEqual(self.client.topic_partitions, {})

    def test_coordinator_calls(self: Any) -> None:
        group = f"{self.topic}-coordinated"
        self.assertIs(wait(self.client.load_coordinator_for_group(group)), True)
        self.client.reset_consumer_group_metadata(group)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.assertIs(wait(self.client.load_consumer_metadata_for_group(group)), True)

    def test_update_cluster_hosts_and_close(self: Any) -> None:
        self.create()
        self.client.update_cluster_hosts(self.broker.bootstrap.split(","))
        self.client.reset_all_metadata()
        wait(self.client.load_metadata_for_topics(self.topic))
        self.assertTrue(self.client.clients)
        pending = self.client.send_fetch_request(
            [FetchRequest(self.topic, 0, 0, 1024)], max_wait_time=5000, min_bytes=1 << 20
        )
        wait(self.client.close())
        self.assertRaises(CancelledError, wait, pending)
        self.assertRaises(ClientError, wait, self.client.load_metadata_for_topics(self.topic))


class Kafka39ClientTests(RealBrokerTests, SynchronousTestCase):
    broker_name = "kafka-3.9"


class KafkaClientTests(RealBrokerTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuClientTests(RealBrokerTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaClientTests(RealBrokerTests, SynchronousTestCase):
    broker_name = "noida"


class RdkafkaMockClientTests(RealBrokerTests, SynchronousTestCase):
    broker_name = "rdkafka_mock"


class KafkaRebootstrapTests(SynchronousTestCase):
    """KIP-1102 on Apache Kafka: the node restarts on new ports (listeners and
    controller) with its data, behind the bootstrap address, a TCP proxy that
    follows it (as a DNS name would): the client, still holding the old address,
    goes back to the bootstrap address as soon as the old one refuses (KIP-899),
    not once the request timed out."""

    def test_restarted_on_new_ports_kafka(self) -> None:
        from twisted.internet import reactor
        from twisted.protocols.portforward import ProxyFactory

        from afkak.producer import Producer
        from afkak.test.brokers.kafka import KafkaBroker

        broker = KafkaBroker().start()
        self.addCleanup(broker.stop)
        node = broker.node
        proxy = ProxyFactory("127.0.0.1", node.ports["PLAINTEXT"])
        listening = [reactor.listenTCP(0, proxy, interface="127.0.0.1")]
        self.addCleanup(lambda: listening[-1].stopListening())
        bootstrap_port = listening[0].getHost().port
        bootstrap = f"127.0.0.1:{bootstrap_port}"
        # A produce queued for the old address waited for its request timeout (here
        # 101 s; 11 s by default) before the client went back to the bootstrap address.
        client = KafkaClient(bootstrap, timeout=100_000, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        broker.create_topic("moved", 1)
        producer = Producer(client, delivery_timeout_ms=300_000)
        self.addCleanup(lambda: wait(producer.stop()))
        wait(producer.send("moved", b"before", partition=0), 60)
        stays = KafkaClient(
            bootstrap,
            timeout=5000,
            endpoint_factory=TCP4ClientEndpoint,
            metadata_recovery_strategy="none",
        )
        self.addCleanup(lambda: wait(stays.close()))
        wait(stays.load_metadata_for_topics("moved"))
        old = node.ports["PLAINTEXT"]
        node.shutdown()
        wait(listening[0].stopListening())  # the bootstrap name refuses too, as a DNS name would
        sent = producer.send("moved", b"after", partition=0)  # during the outage
        outage = time.monotonic() + 3
        while time.monotonic() < outage:
            reactor.iterate(0.02)  # type: ignore[attr-defined]
        self.assertNoResult(sent)
        node.ports = {}  # new ports, the same data
        node.start()
        proxy.port = node.ports["PLAINTEXT"]
        listening.append(reactor.listenTCP(bootstrap_port, proxy, interface="127.0.0.1"))
        self.assertNotEqual(proxy.port, old)
        began = time.monotonic()
        result = wait(sent, 15)
        print(f"recovered in {time.monotonic() - began:.2f} s")
        self.assertEqual(result.offset, 1)
        self.assertEqual(client._brokers[1].port, proxy.port)
        [answer] = wait(client.send_fetch_request([FetchRequest("moved", 0, 0, 1 << 20)]))
        self.assertEqual([m.message.value for m in answer.messages], [b"before", b"after"])
        # metadata.recovery.strategy=none: the old address only, no recovery.
        with self.assertRaises(KafkaUnavailableError):
            wait(stays.load_metadata_for_topics("moved"), 60)


class DeadPortTests(SynchronousTestCase):
    """Issue 33: a long outage does not grow memory.  2,000 refused connections to a
    real dead port (no back-off, so each call is an attempt): before, every attempt
    stayed alive (2,000 connections, RSS +8.4 MB), each refusal's traceback holding
    the connection and the previous refusal."""

    def test_failed_attempts_keep_no_connection_alive(self) -> None:
        import gc

        from afkak.connection import BrokerConnection
        from afkak.test.brokers import free_port

        def alive() -> int:
            gc.collect()
            return sum(isinstance(o, BrokerConnection) for o in gc.get_objects())

        def rss_mb() -> float:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096 / 1e6

        before, rss = alive(), rss_mb()
        client = KafkaClient(
            f"127.0.0.1:{free_port()}",
            endpoint_factory=TCP4ClientEndpoint,
            retry_policy=lambda failures: 0.0,
        )
        for _ in range(2000):
            with self.assertRaises(KafkaUnavailableError):
                wait(client.load_metadata_for_topics("t"), 10)
        wait(client.close())
        grown = alive() - before
        print(f"2,000 refused: {grown} connections alive, RSS {rss_mb() - rss:+.1f} MB")
        # At most what Twisted's 200-event log buffer holds until logging begins.
        self.assertLess(grown, 200)
