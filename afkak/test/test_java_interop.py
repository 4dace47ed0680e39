"""afkak and Apache Kafka's own Java client read each other's records exactly.

The Java peer is Kafka's tools from the broker's classpath
(``afkak/test/brokers/java_tools.py``): ConsoleConsumer reads what afkak wrote (every
codec and every compression level, keys, headers, timestamps, the idempotent
producer's batches), and what
VerifiableProducer (idempotent) and ConsoleProducer (every codec, headers) wrote,
afkak reads back exactly.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_NAMES, COMPRESSION_LEVELS
from afkak.common import FetchRequest, ProduceRequest
from afkak.message_set import MessageSet
from afkak.producer import Producer
from afkak.test.brokers import shared_broker
from afkak.test.brokers.java_tools import (
    console_consume,
    console_produce,
    verifiable_produce,
)
from afkak.test.helpers import wait
from afkak.test.test_client_interop import CODECS, sample_messages

COUNT = 20
_names = itertools.count()


class KafkaJavaInteropTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.broker = shared_broker("kafka")
        self.client = KafkaClient(
            self.broker.bootstrap,
            clientId="afkak-java-interop",
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(self.client.close()))

    def topic(self, partitions: int) -> str:
        name = f"java-interop-{next(_names)}-{int(time.time() * 1000)}"
        self.broker.create_topic(name, partitions)
        wait(self.client.load_metadata_for_topics(name))
        return name

    def fetch_all(self, topic: str, partition: int, count: int) -> list[Any]:
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            [response] = wait(
                self.client.send_fetch_request(
                    [FetchRequest(topic, partition, len(got), 1 << 20)],
                    max_wait_time=200,
                    min_bytes=1,
                )
            )
            got.extend(response.messages)
        return got

    def test_java_consumer_reads_what_afkak_wrote_in_every_codec(self) -> None:
        # Partition i holds codec i's batch: one ConsoleConsumer run reads them all.
        topic = self.topic(len(CODECS))
        now = int(time.time() * 1000)
        expected = []
        for partition, (codec, name) in enumerate(CODECS.items()):
            messages = sample_messages(name, now, COUNT)
            [produced] = wait(
                self.client.send_produce_request(
                    [ProduceRequest(topic, partition, MessageSet(messages, codec=codec))], acks=-1
                )
            )
            self.assertEqual((produced.error, produced.offset), (0, 0))
            expected += [
                (
                    partition,
                    i,
                    now + i,
                    None if m.key is None else m.key.decode(),
                    None if m.value is None else m.value.decode(),
                    tuple((n, None if v is None else v.decode()) for n, v in m.headers),
                )
                for i, m in enumerate(messages)
            ]
        records = console_consume(self.broker.bootstrap, topic, len(expected))
        self.assertEqual(
            [(r.partition, r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in records],
            expected,
        )

    def test_java_consumer_reads_afkak_idempotent_batches_once_in_order(self) -> None:
        topic = self.topic(2)
        producer = Producer(self.client, enable_idempotence=True, linger_ms=5)
        self.addCleanup(lambda: wait(producer.stop()))
        sent = [
            producer.send(topic, b"%d" % i, key=b"k%d" % (i % 2), partition=i % 2)
            for i in range(200)
        ]
        for d in sent:
            wait(d, 30)
        records = console_consume(self.broker.bootstrap, topic, 200)
        for partition in (0, 1):
            mine = [r for r in records if r.partition == partition]
            self.assertEqual([r.offset for r in mine], list(range(100)))
            self.assertEqual([r.value for r in mine], [str(i) for i in range(partition, 200, 2)])
            self.assertEqual({r.key for r in mine}, {f"k{partition}"})

    def test_java_consumer_reads_every_compression_level_afkak_wrote(self) -> None:
        """Issue 24 (KIP-390): every gzip and lz4 level, zstd's -5 to 22 and its lowest."""
        levels = [
            (codec, level)
            for codec, (low, high) in COMPRESSION_LEVELS.items()
            for level in ([low] if low < -5 else []) + list(range(max(low, -5), high + 1))
        ]
        topic = self.topic(len(levels))
        expected = []
        for partition, (codec, level) in enumerate(levels):
            producer = Producer(self.client, codec=codec, compression_level=level, linger_ms=50)
            self.addCleanup(lambda p=producer: wait(p.stop()))
            values = [f"{CODEC_NAMES[codec]} {level} record {i} " * 8 for i in range(5)]
            sent = [producer.send(topic, v.encode(), partition=partition) for v in values]
            wait(producer.flush())
            self.assertEqual([wait(d).offset for d in sent], list(range(5)), (codec, level))
            expected += [(partition, i, v) for i, v in enumerate(values)]
        records = console_consume(self.broker.bootstrap, topic, len(expected))
        self.assertEqual([(r.partition, r.offset, r.value) for r in records], expected)

    def test_afkak_reads_what_the_java_idempotent_producer_wrote(self) -> None:
        topic = self.topic(3)
        created = int(time.time() * 1000) - 5000
        acked = verifiable_produce(
            self.broker.bootstrap,
            topic,
            150,
            value_prefix=42,
            create_time_ms=created,
            config={"enable.idempotence": "true", "compression.type": "zstd", "linger.ms": "5"},
        )
        self.assertEqual(len(acked), 150)
        for partition in range(3):
            mine = sorted(
                (int(str(e["offset"])), str(e["key"]), str(e["value"]))
                for e in acked
                if e["partition"] == partition
            )
            got = self.fetch_all(topic, partition, len(mine))
            self.assertEqual(
                [(m.offset, m.message.key.decode(), m.message.value.decode()) for m in got], mine
            )
            # VerifiableProducer's create times start at --message-create-time and grow.
            stamps = [m.message.timestamp for m in got]
            self.assertEqual(stamps, sorted(stamps))
            self.assertTrue(all(stamp >= created for stamp in stamps))

    def test_afkak_reads_what_the_java_console_producer_wrote_in_every_codec(self) -> None:
        for name in CODECS.values():
            with self.subTest(codec=name):
                topic = self.topic(1)
                written = [
                    ((("codec", name), ("n", str(i))), f"key-{i}", f"{name}-{i}")
                    for i in range(COUNT)
                ]
                console_produce(self.broker.bootstrap, topic, written, compression=name)
                got = self.fetch_all(topic, 0, COUNT)
                self.assertEqual(
                    [
                        (
                            tuple((n, v.decode()) for n, v in m.message.headers),
                            m.message.key.decode(),
                            m.message.value.decode(),
                        )
                        for m in got
                    ],
                    written,
                )
                self.assertEqual([m.offset for m in got], list(range(COUNT)))
