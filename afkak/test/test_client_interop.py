"""KafkaClient and confluent-kafka read each other's records, with every codec, on real brokers.

confluent-kafka (librdkafka) is a Kafka client we did not write: what it produces
must come back identically through ``send_fetch_request``, and what
``send_produce_request`` writes must come back identically through it.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import FetchRequest, Message, ProduceRequest, SendRequest
from afkak.message_set import MessageSet, create_message, create_message_set
from afkak.test.brokers import Broker, consume, produce, shared_broker
from afkak.test.helpers import wait

#: afkak codec -> librdkafka's compression.type.
CODECS = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}
COUNT = 50
_names = itertools.count()


def sample_messages(name: str, now: int, count: int) -> list[Message]:
    """Records with every field's variants: null keys and a null value, headers (with a
    null value) on odd ones, timestamps ``now + i``."""
    return [
        Message(
            0,
            0,
            None if i % 3 == 0 else f"key-{i}".encode(),
            None if i == 7 else f"{name}-value-{i}".encode(),
            timestamp=now + i,
            headers=(("i", str(i).encode()), ("none", None)) if i % 2 else (),
        )
        for i in range(count)
    ]


class InteropTests:
    """Mixed into one SynchronousTestCase per broker kind."""

    broker_name: ClassVar[str]
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        self.client = KafkaClient(
            self.broker.bootstrap, clientId="afkak-interop", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))  # type: ignore[attr-defined]

    def topic(self, codec: int) -> str:
        topic = f"interop-{self.broker_name}-{CODECS[codec]}-{next(_names)}"
        self.broker.create_topic(topic, 1)
        wait(self.client.load_metadata_for_topics(topic))
        return topic

    def fetch_all(self, topic: str, count: int) -> list[Any]:
        """Fetch from offset 0 until *count* messages arrived (the mock sends a batch a time)."""
        got: list[Any] = []
        while len(got) < count:
            [response] = wait(
                self.client.send_fetch_request(
                    [FetchRequest(topic, 0, len(got), 1 << 20)], max_wait_time=200, min_bytes=1
                )
            )
            got.extend(response.messages)
        return got

    def test_afkak_reads_what_confluent_kafka_wrote(self: Any) -> None:
        for codec, name in CODECS.items():
            with self.subTest(codec=name):
                topic = self.topic(codec)
                values = [f"{name}-{i}".encode() * 7 for i in range(COUNT)]
                produce(
                    self.broker.bootstrap,
                    topic,
                    values,
                    partition=0,
                    key=b"the-key",
                    headers=[("codec", name.encode()), ("n", b"")],
                    config={"compression.type": name, "linger.ms": 50},
                )
                got = self.fetch_all(topic, COUNT)
                self.assertEqual([m.offset for m in got], list(range(COUNT)))
                self.assertEqual([m.message.value for m in got], values)
                self.assertEqual({m.message.key for m in got}, {b"the-key"})
                self.assertEqual(
                    {m.message.headers for m in got}, {(("codec", name.encode()), ("n", b""))}
                )
                now = time.time() * 1000
                for m in got:
                    self.assertLess(abs(m.message.timestamp - now), 60_000)

    def test_confluent_kafka_reads_what_afkak_wrote(self: Any) -> None:
        now = int(time.time() * 1000)
        for codec, name in CODECS.items():
            with self.subTest(codec=name):
                topic = self.topic(codec)
                messages = MessageSet(sample_messages(name, now, COUNT), codec=codec)
                [produced] = wait(
                    self.client.send_produce_request([ProduceRequest(topic, 0, messages)], acks=-1)
                )
                self.assertEqual((produced.error, produced.offset), (0, 0))
                records = consume(self.broker.bootstrap, topic, COUNT, partitions=[0])
                self.assertEqual(
                    [(r.offset, r.key, r.value, r.timestamp_ms) for r in records],
                    [(i, m.key, m.value, now + i) for i, m in enumerate(messages)],
                )
                self.assertEqual(
                    [tuple(r.headers) for r in records],
                    [m.headers for m in messages],
                )

    def test_confluent_kafka_reads_afkak_21_wrappers(self: Any) -> None:
        # afkak 21's create_message_set(..., codec) wrapper, alone ([0]) or mixed with plain
        # messages: confluent-kafka reads the inner messages, in a batch of that codec.
        for codec, name in CODECS.items():
            if codec == CODEC_NONE:
                continue
            with self.subTest(codec=name):
                topic = self.topic(codec)
                values = [f"{name}-{i}".encode() for i in range(COUNT)]
                wrapper = create_message_set([SendRequest(topic, b"k", values, None)], codec)[0]
                plain = create_message(b"plain")
                responses = [
                    wait(self.client.send_produce_request([ProduceRequest(topic, 0, msgs)]))[0]
                    for msgs in ([wrapper], [plain, wrapper, plain])
                ]
                self.assertEqual([(r.error, r.offset) for r in responses], [(0, 0), (0, COUNT)])
                total = 2 * COUNT + 2
                records = consume(self.broker.bootstrap, topic, total, partitions=[0])
                self.assertEqual(
                    [(r.offset, r.key, r.value) for r in records],
                    [
                        (i, key, value)
                        for i, (key, value) in enumerate(
                            [(b"k", v) for v in values]
                            + [(None, b"plain")]
                            + [(b"k", v) for v in values]
                            + [(None, b"plain")]
                        )
                    ],
                )


class KafkaInteropTests(InteropTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuInteropTests(InteropTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaInteropTests(InteropTests, SynchronousTestCase):
    broker_name = "noida"


class RdkafkaMockInteropTests(InteropTests, SynchronousTestCase):
    broker_name = "rdkafka_mock"
