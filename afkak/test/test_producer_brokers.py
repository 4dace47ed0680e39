"""Producer against real Kafka-protocol brokers (Tansu, noida-db, librdkafka's mock).

What afkak writes is read back by other clients: confluent-kafka (through
afkak.test.brokers.interop.consume) for every broker, kafka-python and
aiokafka against Tansu.  Keys, values, headers, timestamps and partitions
must match what each send reported.  The global reactor is driven as in
test_client_brokers.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any, ClassVar

from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.task import deferLater
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import OffsetRequest, TopicAndPartition
from afkak.partitioner import HashedPartitioner, murmur2
from afkak.producer import Producer, RecordMetadata
from afkak.test.brokers import Broker, consume, shared_broker
from afkak.test.brokers.interop import end_offsets
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.brokers.tansu import TansuBroker
from afkak.test.helpers import run_for, wait
from afkak.test.test_producer import LEVEL_EXTREMES

_names = itertools.count()
CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
PARTITIONS = 4


class RealBrokerProducerTests:
    """Mixed into one SynchronousTestCase per broker kind."""

    broker_name: ClassVar[str]
    #: Records produced by the round-trip test (split over the codecs).
    records = 100_000
    #: Produce responses carry a LogAppendTime although the topic uses CreateTime.
    log_append_time_bogus = False
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        self.client = KafkaClient(
            self.broker.bootstrap,
            clientId="afkak-producer-test",
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(self.client.close()))  # type: ignore[attr-defined]

    def topic(self, partitions: int = PARTITIONS) -> str:
        name = f"producer-{self.broker_name}-{next(_names)}-{int(time.time())}"
        self.broker.create_topic(name, partitions)
        return name

    def producer(self, **options: Any) -> Producer:
        producer = Producer(self.client, **options)
        self.addCleanup(lambda: wait(producer.stop()))  # type: ignore[attr-defined]
        return producer

    def test_round_trip_every_codec(self: Any) -> None:
        per_codec = self.records // len(CODECS)
        for codec in CODECS:
            topic = self.topic()
            producer = self.producer(
                codec=codec,
                partitioner_class=HashedPartitioner,
                linger_ms=5,
                batch_size=64 * 1024,
            )
            start = int(time.time() * 1000)
            sent = []
            for i in range(per_codec):
                key = b"key-%d" % (i % 97)
                value = b"value-%d-" % i + bytes([65 + i % 26]) * (i % 40)
                headers = (("n", b"%d" % i), ("codec", bytes([48 + codec]))) if i % 3 else ()
                stamp = start - 1000 + i if i % 2 else None
                d = producer.send(topic, value, key, headers=headers, timestamp=stamp)
                sent.append((key, value, headers, stamp, d))
            wait(producer.flush(), timeout=60)
            end = int(time.time() * 1000)
            got = {
                (r.partition, r.offset): r
                for r in consume(self.broker.bootstrap, topic, per_codec, timeout=60)
            }
            self.assertEqual(len(got), per_codec)
            for key, value, headers, stamp, d in sent:
                meta = d.result
                self.assertIsInstance(meta, RecordMetadata)
                self.assertEqual(meta.partition, (murmur2(key) & 0x7FFFFFFF) % PARTITIONS)
                record = got[meta.partition, meta.offset]
                self.assertEqual((record.key, record.value, record.headers), (key, value, headers))
                if stamp is not None:
                    self.assertEqual(record.timestamp_ms, stamp)
                else:
                    self.assertTrue(start <= record.timestamp_ms <= end)
                if not self.log_append_time_bogus:
                    self.assertEqual(meta.timestamp, record.timestamp_ms)

    def test_send_messages_and_explicit_timestamps(self: Any) -> None:
        topic = self.topic(partitions=1)
        producer = self.producer()
        first = wait(producer.send_messages(topic, b"k", [b"a", b"b", None]))
        self.assertEqual(
            (first.topic, first.partition, first.error, first.offset), (topic, 0, 0, 0)
        )
        stamp = int(time.time() * 1000) - 5000
        meta = wait(producer.send(topic, b"c", timestamp=stamp, headers=[("x", None)]))
        self.assertEqual(meta.offset, 3)
        if not self.log_append_time_bogus:
            self.assertEqual(meta.timestamp, stamp)
        records = consume(self.broker.bootstrap, topic, 4)
        self.assertEqual(
            [(r.key, r.value) for r in records],
            [(b"k", b"a"), (b"k", b"b"), (b"k", None), (None, b"c")],
        )
        self.assertEqual(records[3].timestamp_ms, stamp)
        self.assertEqual(records[3].headers, (("x", None),))

    def test_afkak_21_batch_triggers(self: Any) -> None:
        # afkak 21.5's documented batching: nothing before the byte trigger, then the
        # first and third calls' messages on partition 0 with the trigger's message.
        topic = self.topic(partitions=2)
        producer = self.producer(
            batch_send=True, batch_every_b=4096, batch_every_n=0, batch_every_t=0
        )
        calls = [
            producer.send_messages(topic, None, [b"%d-%d" % (c, i) for i in range(4)])
            for c in range(4)
        ]
        run_for(1.0)
        latest = wait(
            self.client.send_offset_request([OffsetRequest(topic, p, -1, 1) for p in (0, 1)])
        )
        self.assertEqual([r.offsets[0] for r in latest], [0, 0])
        self.assertFalse(any(d.called for d in calls))
        calls.append(producer.send_messages(topic, None, [b"x" * 4096]))
        results = [wait(d) for d in calls]
        self.assertEqual([r.partition for r in results], [0, 1, 0, 1, 0])
        records = consume(self.broker.bootstrap, topic, 17, partitions=[0, 1])
        by_partition = {p: [r.value for r in records if r.partition == p] for p in (0, 1)}
        self.assertEqual(
            by_partition[0],
            [b"0-%d" % i for i in range(4)] + [b"2-%d" % i for i in range(4)] + [b"x" * 4096],
        )
        self.assertEqual(
            by_partition[1], [b"1-%d" % i for i in range(4)] + [b"3-%d" % i for i in range(4)]
        )

    def test_acks_0(self: Any) -> None:
        topic = self.topic(partitions=1)
        producer = self.producer(req_acks=0)
        for i in range(50):
            d = producer.send_messages(topic, None, [b"%d" % i])
        self.assertIsNone(wait(d))
        # A broker may answer acks=0 anyway; the connection must drop the answers.
        self.assertEqual(wait(producer.send(topic, b"last")).offset, -1)
        # An acks=0 send fires once written to the connection (an idle producer's
        # within send()): let the reactor send the bytes before blocking it.
        run_for(0.2)
        records = consume(self.broker.bootstrap, topic, 51)
        self.assertEqual([r.value for r in records], [b"%d" % i for i in range(50)] + [b"last"])

    def test_acks_1_without_idempotence(self: Any) -> None:
        topic = self.topic(partitions=2)
        producer = self.producer(req_acks=1, codec=CODEC_GZIP)
        results = [producer.send_messages(topic, None, [b"%d" % i]) for i in range(20)]
        wait(producer.flush())
        self.assertEqual(
            sorted((r.result.partition, r.result.offset) for r in results),
            [(p, o) for p in range(2) for o in range(10)],
        )
        records = consume(self.broker.bootstrap, topic, 20)
        self.assertEqual(sorted(r.value for r in records), sorted(b"%d" % i for i in range(20)))


class Kafka39ProducerTests(RealBrokerProducerTests, SynchronousTestCase):
    broker_name = "kafka-3.9"


class KafkaProducerTests(RealBrokerProducerTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuProducerTests(RealBrokerProducerTests, SynchronousTestCase):
    broker_name = "tansu"

    def test_compression_levels_read_by_confluent_kafka(self) -> None:
        """Issue 24 (KIP-390): batches at each codec's lowest and highest level."""
        for codec, level in LEVEL_EXTREMES:
            topic = self.topic(partitions=1)
            producer = self.producer(codec=codec, compression_level=level, linger_ms=5)
            values = [b"value %d " % i * 10 for i in range(200)]
            for value in values:
                producer.send(topic, value)
            wait(producer.flush())
            records = consume(self.broker.bootstrap, topic, len(values))
            self.assertEqual([r.value for r in records], values, (codec, level))

    def test_read_by_kafka_python(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        topic = self.topic(partitions=1)
        producer = self.producer(codec=CODEC_ZSTD)
        metas = [
            producer.send(topic, b"v%d" % i, b"k%d" % i, headers=[("h", b"%d" % i)])
            for i in range(100)
        ]
        wait(producer.flush())
        consumer = KafkaConsumer(
            bootstrap_servers=self.broker.bootstrap,
            enable_auto_commit=False,
            consumer_timeout_ms=5000,
        )
        try:
            consumer.assign([TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            got = list(itertools.islice(consumer, 100))
        finally:
            consumer.close()
        self.assertEqual(
            [(m.offset, m.key, m.value, list(m.headers), m.timestamp) for m in got],
            [
                (d.result.offset, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)], d.result.timestamp)
                for i, d in enumerate(metas)
            ],
        )

    def test_read_by_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        topic = self.topic(partitions=1)
        producer = self.producer(codec=CODEC_LZ4)
        metas = [producer.send(topic, b"v%d" % i, b"k%d" % i) for i in range(100)]
        wait(producer.flush())

        async def read() -> list[Any]:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self.broker.bootstrap, enable_auto_commit=False
            )
            await consumer.start()
            try:
                consumer.assign([TopicPartition(topic, 0)])
                await consumer.seek_to_beginning()
                got: list[Any] = []
                while len(got) < 100:
                    batches = await consumer.getmany(timeout_ms=5000)
                    if not batches:
                        break
                    for messages in batches.values():
                        got.extend(messages)
                return got
            finally:
                await consumer.stop()

        got = asyncio.run(read())
        self.assertEqual(
            [(m.offset, m.key, m.value, m.timestamp) for m in got],
            [
                (d.result.offset, b"k%d" % i, b"v%d" % i, d.result.timestamp)
                for i, d in enumerate(metas)
            ],
        )


class NoidaProducerTests(RealBrokerProducerTests, SynchronousTestCase):
    broker_name = "noida"

    def test_idempotent_batches_are_accepted_in_sequence(self) -> None:
        topic = self.topic(partitions=1)
        producer = self.producer(batch_size=2000, max_in_flight_per_partition=5)
        ds = [producer.send(topic, b"%04d" % i + b"x" * 200) for i in range(300)]
        wait(producer.flush(), timeout=30)
        self.assertEqual([d.result.offset for d in ds], list(range(300)))
        records = consume(self.broker.bootstrap, topic, 300)
        self.assertEqual([r.value[:4] for r in records], [b"%04d" % i for i in range(300)])


class KafkaRestartTests(SynchronousTestCase):
    """kill -9 of Apache Kafka under a running idempotent producer (issue 10, 5 and 7)."""

    def test_producer_recovers_when_the_broker_restarts(self) -> None:
        broker = KafkaBroker().start()
        self.addCleanup(broker.stop)
        topic = f"restart-{int(time.time())}"
        broker.create_topic(topic, 1)
        client = KafkaClient(broker.bootstrap, timeout=5000, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        producer = Producer(client, linger_ms=5)
        self.addCleanup(lambda: wait(producer.stop()))
        sent: list[Any] = []
        for _ in range(3):
            n = len(sent)
            sent.extend(producer.send(topic, b"%05d" % i) for i in range(n, n + 400))
            wait(producer.flush(), timeout=30)
            n = len(sent)
            sent.extend(producer.send(topic, b"%05d" % i) for i in range(n, n + 400))
            wait(deferLater(reactor, 0.005, lambda: None))  # some of them in flight
            broker.crash_and_restart()
            wait(producer.flush(), timeout=60)  # hung before: the producer never recovered
        for d in sent:
            self.assertIsInstance(d.result, RecordMetadata)
        # Kafka keeps what it acknowledged through kill -9 (the page cache survives),
        # and its producer state, rebuilt from the log, drops the retried duplicates.
        records = consume(broker.bootstrap, topic, len(sent), timeout=30)
        self.assertEqual([int(r.value) for r in records], list(range(len(sent))))
        self.assertEqual(end_offsets(broker.bootstrap, topic)[0], len(sent))


class TansuRestartTests(SynchronousTestCase):
    """Tansu restarted with its data gone forgets every producer id (issue 20, 4)."""

    def test_idempotent_producer_recovers_when_the_broker_forgets_it(self) -> None:
        broker = TansuBroker().start()
        self.addCleanup(broker.stop)
        topic = f"forget-{int(time.time())}"
        broker.create_topic(topic, 1)
        client = KafkaClient(broker.bootstrap, timeout=5000, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        producer = Producer(client)
        self.addCleanup(lambda: wait(producer.stop()))
        before = [producer.send(topic, b"a%d" % i, partition=0) for i in range(20)]
        wait(producer.flush(), timeout=30)
        broker.crash_and_restart()  # memory storage: topics and producer ids are gone
        broker.create_topic(topic, 1)
        after = [producer.send(topic, b"b%d" % i, partition=0) for i in range(20)]
        # Failed before: InitProducerId carrying the lost id was refused, for ever.
        wait(producer.flush(), timeout=30)
        for d in before + after:
            self.assertIsInstance(d.result, RecordMetadata)
        records = consume(broker.bootstrap, topic, 20, timeout=30)
        self.assertEqual([r.value for r in records], [b"b%d" % i for i in range(20)])


class RdkafkaMockProducerTests(RealBrokerProducerTests, SynchronousTestCase):
    broker_name = "rdkafka_mock"
    records = 50_000  # the mock keeps only the last 5 MiB of each partition
    log_append_time_bogus = True  # librdkafka's mock answers LogAppendTime 1234

    def test_retries_pushed_errors(self) -> None:
        topic = self.topic(partitions=1)
        producer = self.producer(retry_interval=0.05)
        wait(producer.send(topic, b"first"))
        mock: Any = self.broker
        mock.push_request_errors(0, 6, 19)  # NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS
        self.addCleanup(mock.clear_request_errors, 0)
        meta = wait(producer.send(topic, b"second"))
        self.assertEqual(meta.offset, 1)
        records = consume(self.broker.bootstrap, topic, 2)
        self.assertEqual([r.value for r in records], [b"first", b"second"])

    def test_leader_moves(self) -> None:
        topic = self.topic(partitions=1)
        producer = self.producer(retry_interval=0.05)
        wait(producer.send(topic, b"first"))
        mock: Any = self.broker
        leader = self.client.topics_to_brokers[TopicAndPartition(topic, 0)].node_id
        other = next(n for n in mock.addresses if n != leader)
        mock.partition_set_leader(topic, 0, other)
        self.assertEqual(wait(producer.send(topic, b"second")).offset, 1)
        self.assertEqual(self.client.topics_to_brokers[TopicAndPartition(topic, 0)].node_id, other)
