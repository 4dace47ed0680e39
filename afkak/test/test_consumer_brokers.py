"""Consumer against real Kafka-protocol brokers (Tansu, noida-db, librdkafka's mock).

Records are produced by confluent-kafka (librdkafka), the reference peer
client, and afkak must read them exactly as confluent-kafka does; committed
offsets must mean the same to both.  The global reactor is driven with
``wait()`` from test_client_brokers; each test uses its own topic and group.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.task import deferLater
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    ConsumerFetchSizeTooSmall,
    OffsetOutOfRangeError,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.consumer import Consumer
from afkak.test.brokers import Broker, client_config, consume, produce, shared_broker
from afkak.test.helpers import wait

_names = itertools.count()
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


class Collector:
    """A processor that collects messages and stops the consumer once it has ``count``."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.messages: list[SourcedMessage] = []
        self.done: Deferred[None] = Deferred()

    def __call__(self, consumer: Consumer, messages: list[SourcedMessage]) -> None:
        self.messages.extend(messages)
        if len(self.messages) >= self.count and not self.done.called:
            self.done.callback(None)


def confluent_committed(bootstrap: str, group: str, topic: str) -> int:
    """The offset confluent-kafka sees committed for partition 0 of *topic* by *group*."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(client_config(bootstrap, **{"group.id": group}))
    try:
        [tp] = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def confluent_first_offset(bootstrap: str, group: str, topic: str, timeout: float = 10.0) -> int:
    """The offset of the first record a confluent-kafka consumer of *group* reads."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        client_config(
            bootstrap,
            **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "error"},
        )
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0)])  # from the committed offset
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                return int(msg.offset())
        raise TimeoutError(f"confluent-kafka read nothing of {topic!r}")
    finally:
        consumer.close()


def confluent_commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    import confluent_kafka

    consumer = confluent_kafka.Consumer(client_config(bootstrap, **{"group.id": group}))
    try:
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition(topic, 0, offset)], asynchronous=False
        )
    finally:
        consumer.close()


class BrokerConsumerCase:
    """A client on a shared real broker, and a way to consume with afkak's Consumer."""

    broker_name: ClassVar[str]
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        n = next(_names)
        self.topic = f"consumer-{self.broker_name}-{n}"
        self.group = f"consumer-group-{self.broker_name}-{n}"
        self.client = KafkaClient(
            self.broker.bootstrap,
            clientId="afkak-consumer-test",
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(self.client.close()))  # type: ignore[attr-defined]

    def create(self, topic: str | None = None) -> str:
        topic = topic or self.topic
        self.broker.create_topic(topic, 1)
        wait(self.client.load_metadata_for_topics(topic))
        return topic

    def consume(
        self, count: int, start: int = OFFSET_EARLIEST, topic: str | None = None, **options: Any
    ) -> tuple[list[SourcedMessage], Consumer]:
        """Run a consumer of partition 0 until it has *count* messages, then stop it."""
        collector = Collector(count)
        consumer = Consumer(
            self.client, topic or self.topic, 0, collector, fetch_max_wait_time=50, **options
        )
        d = consumer.start(start)
        d.addErrback(collector.done.errback)
        try:
            wait(collector.done)
        finally:
            if consumer._start_d is not None:
                consumer.stop()
        return collector.messages, consumer

    def produce_and_consume_each(
        self: Any, partitions: int, first: int, count: int, start_at: int | None = None
    ) -> None:
        """Write *count* records to each of the topic's first *partitions* (their offsets
        from *first*), then read exactly them with one Consumer per partition on the one
        client, each started at *start_at* (by default *first*)."""
        for p in range(partitions):
            values = [b"%d-%d" % (p, i) for i in range(first, first + count)]
            produce(self.broker.bootstrap, self.topic, values, partition=p)
        collectors = [Collector(count) for _ in range(partitions)]
        consumers = [
            Consumer(self.client, self.topic, p, collectors[p], fetch_max_wait_time=50)
            for p in range(partitions)
        ]
        for c in consumers:
            d = c.start(first if start_at is None else start_at)
            d.addErrback(collectors[c.partition].done.errback)
        try:
            for collector in collectors:
                wait(collector.done)
        finally:
            for c in consumers:
                c.stop()
        for p, collector in enumerate(collectors):
            self.assertEqual(
                [(m.offset, m.message.value) for m in collector.messages[:count]],
                [(i, b"%d-%d" % (p, i)) for i in range(first, first + count)],
            )


class RealBrokerConsumerTests(BrokerConsumerCase):
    """Mixed into one SynchronousTestCase per broker kind."""

    def test_consumers_of_many_partitions_share_one_fetch_per_broker(self: Any) -> None:
        """Eight consumers on one client read eight partitions exactly, in shared fetches."""
        from afkak.consumer._broker_fetch import FetchManager

        self.broker.create_topic(self.topic, 8)
        wait(self.client.load_metadata_for_topics(self.topic))
        self.produce_and_consume_each(8, 0, 50, start_at=OFFSET_EARLIEST)
        leaders = {
            self.client.topics_to_brokers[TopicAndPartition(self.topic, p)].node_id
            for p in range(8)
        }
        self.assertEqual(
            {node for node, _, _ in self.client.shared(FetchManager).fetchers}, leaders
        )  # one per leader
        self.assertGreater(self.client.shared(FetchManager).requests, 0)

    def test_fetch_sessions_are_granted_and_used(self: Any) -> None:
        """KIP-227: the broker grants the shared fetcher a session, and later requests
        are incremental ones of that session (its epoch advances), reading everything."""
        from afkak.consumer._broker_fetch import FetchManager
        from afkak.records.aborted import READ_UNCOMMITTED

        self.broker.quirks.skip_if("no_fetch_sessions")
        self.broker.create_topic(self.topic, 2)
        wait(self.client.load_metadata_for_topics(self.topic))
        sessions = []
        for start in (0, 20):
            self.produce_and_consume_each(2, start, 20)
            leader = self.client.topics_to_brokers[TopicAndPartition(self.topic, 0)].node_id
            fetcher = self.client.shared(FetchManager).fetchers[(leader, READ_UNCOMMITTED, "")]
            sessions.append((fetcher.session.session_id, fetcher.session.epoch))
        [(first_id, first_epoch), (second_id, second_epoch)] = sessions
        self.assertNotEqual(first_id, 0, "no fetch session granted")
        self.assertEqual(second_id, first_id)
        self.assertGreaterEqual(first_epoch, 1)
        self.assertGreater(second_epoch, first_epoch)  # incremental requests of the session

    def test_reads_what_confluent_produced_with_every_codec(self: Any) -> None:
        for codec in CODECS:
            with self.subTest(codec=codec):
                topic = self.create(f"{self.topic}-{codec}")
                values = [b"%s-%d" % (codec.encode(), i) * (i + 1) for i in range(20)]
                produce(
                    self.broker.bootstrap,
                    topic,
                    values[:10],
                    partition=0,
                    key=b"key",
                    headers=[("h1", b"one"), ("h2", b"")],
                    config={"compression.type": codec, "linger.ms": 20},
                )
                produce(
                    self.broker.bootstrap,
                    topic,
                    values[10:],
                    partition=0,
                    config={"compression.type": codec, "linger.ms": 20},
                )
                reference = consume(self.broker.bootstrap, topic, 20, partitions=[0])
                messages, _ = self.consume(20, topic=topic)
                got = [
                    (
                        m.offset,
                        m.message.key,
                        m.message.value,
                        tuple(m.message.headers),
                        m.message.timestamp,
                    )
                    for m in messages
                ]
                expected = [
                    (r.offset, r.key, r.value, tuple(r.headers), r.timestamp_ms) for r in reference
                ]
                self.assertEqual(got, expected)
                self.assertEqual([m.message.value for m in messages], values)
                self.assertEqual({m.message.magic for m in messages}, {2})

    def test_restart_from_committed_resumes_after_the_last_processed_record(self: Any) -> None:
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"%d" % i for i in range(6)], partition=0)
        messages, consumer = self.consume(6, consumer_group=self.group, auto_commit_every_n=0)
        self.assertEqual(consumer.last_processed_offset, 5)
        self.assertEqual(wait(consumer.commit()), 5)
        produce(self.broker.bootstrap, self.topic, [b"%d" % i for i in range(6, 10)], partition=0)
        messages, second = self.consume(4, start=OFFSET_COMMITTED, consumer_group=self.group)
        self.assertEqual([m.offset for m in messages], [6, 7, 8, 9])
        self.assertEqual([m.message.value for m in messages], [b"6", b"7", b"8", b"9"])
        self.assertEqual(second.last_committed_offset, 5)

    def test_afkak_commit_is_where_confluent_starts(self: Any) -> None:
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"%d" % i for i in range(5)], partition=0)
        messages, consumer = self.consume(5, consumer_group=self.group, auto_commit_every_n=0)
        self.assertEqual(wait(consumer.commit()), 4)
        produce(self.broker.bootstrap, self.topic, [b"5", b"6"], partition=0)
        self.assertEqual(confluent_committed(self.broker.bootstrap, self.group, self.topic), 5)
        self.assertEqual(confluent_first_offset(self.broker.bootstrap, self.group, self.topic), 5)

    def test_confluent_commit_is_where_afkak_starts(self: Any) -> None:
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"%d" % i for i in range(6)], partition=0)
        confluent_commit(self.broker.bootstrap, self.group, self.topic, 4)
        messages, consumer = self.consume(2, start=OFFSET_COMMITTED, consumer_group=self.group)
        self.assertEqual([m.offset for m in messages], [4, 5])
        self.assertEqual(consumer.last_committed_offset, 3)

    def test_shutdown_commits_the_next_offset(self: Any) -> None:
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"a", b"b", b"c"], partition=0)
        collector = Collector(3)
        consumer = Consumer(
            self.client, self.topic, 0, collector, self.group, fetch_max_wait_time=50
        )
        start_d = consumer.start(OFFSET_EARLIEST)
        wait(collector.done)
        self.assertEqual(wait(consumer.shutdown()), 2)
        self.assertEqual(wait(start_d), 2)
        self.assertEqual(confluent_committed(self.broker.bootstrap, self.group, self.topic), 3)

    def test_out_of_range_offset_resets_to_earliest(self: Any) -> None:
        self.broker.quirks.skip_if("no_offset_out_of_range")
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"a", b"b"], partition=0)
        messages, _ = self.consume(2, start=100, auto_offset_reset=OFFSET_EARLIEST)
        self.assertEqual([m.message.value for m in messages], [b"a", b"b"])

    def test_out_of_range_offset_without_reset_fails(self: Any) -> None:
        self.broker.quirks.skip_if("no_offset_out_of_range")
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"a"], partition=0)
        consumer = Consumer(self.client, self.topic, 0, lambda c, m: None)
        self.assertRaises(OffsetOutOfRangeError, wait, consumer.start(100))

    def test_record_larger_than_max_buffer_size_fails_after_those_before(self: Any) -> None:
        # afkak 21's ConsumerFetchSizeTooSmall, whatever the broker returns (KIP-74 brokers
        # return the oversized batch whole).
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"a", b"b", b"c"], partition=0)
        produce(self.broker.bootstrap, self.topic, [b"x" * (256 * 1024)], partition=0)
        produce(self.broker.bootstrap, self.topic, [b"after"], partition=0)
        seen: list[bytes] = []
        consumer = Consumer(
            self.client,
            self.topic,
            0,
            lambda c, messages: seen.extend(m.message.value for m in messages),
            fetch_max_wait_time=50,
            buffer_size=64 * 1024,
            max_buffer_size=256 * 1024,
        )
        with self.assertRaises(ConsumerFetchSizeTooSmall):
            wait(consumer.start(OFFSET_EARLIEST))
        self.assertEqual(seen, [b"a", b"b", b"c"])
        self.assertEqual(consumer.last_processed_offset, 2)

    def test_latest_reads_only_new_records(self: Any) -> None:
        from twisted.internet import reactor

        self.broker.quirks.skip_if("list_offsets_latest_is_last_batch_base_plus_one")
        self.create()
        produce(self.broker.bootstrap, self.topic, [b"old", b"older"], partition=0)
        collector = Collector(1)
        consumer = Consumer(self.client, self.topic, 0, collector, fetch_max_wait_time=50)
        d = consumer.start(OFFSET_LATEST)
        d.addErrback(collector.done.errback)
        self.addCleanup(lambda: consumer.stop() if consumer._start_d is not None else None)
        deadline = time.monotonic() + 10
        while consumer._fetch_offset < 0 and time.monotonic() < deadline:  # looked up yet?
            wait(deferLater(reactor, 0.02, lambda: None))
        produce(self.broker.bootstrap, self.topic, [b"new"], partition=0)
        wait(collector.done)
        self.assertEqual([(m.offset, m.message.value) for m in collector.messages], [(2, b"new")])


class Kafka39ConsumerTests(RealBrokerConsumerTests, SynchronousTestCase):
    broker_name = "kafka-3.9"


class KafkaConsumerTests(RealBrokerConsumerTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuConsumerTests(RealBrokerConsumerTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaConsumerTests(RealBrokerConsumerTests, SynchronousTestCase):
    broker_name = "noida"


class RdkafkaMockConsumerTests(RealBrokerConsumerTests, SynchronousTestCase):
    broker_name = "rdkafka_mock"
