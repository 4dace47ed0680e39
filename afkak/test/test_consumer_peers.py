"""afkak's Consumer reads what kafka-python and aiokafka produced, identically.

confluent-kafka's records are covered in test_consumer_brokers; these are the
two pure-Python peers.  Each peer writes keyed records with headers and explicit
timestamps to one partition; afkak must see the same offset, key, value,
headers and timestamp.  (kafka-python cannot bootstrap against librdkafka's
mock cluster, so these run on Tansu and noida-db.)
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any, ClassVar

from twisted.trial.unittest import SynchronousTestCase

from afkak.test.brokers import Broker
from afkak.test.test_consumer_brokers import BrokerConsumerCase

_names = itertools.count()
COUNT = 30


def peer_records(prefix: bytes) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]], int]]:
    """(key, value, headers, timestamp ms) for each record a peer writes."""
    now = int(time.time() * 1000)
    return [
        (
            None if i % 5 == 0 else b"key-%d" % (i % 3),
            prefix + b"-value-%d" % i,
            [("i", b"%d" % i), ("peer", prefix)] if i % 2 else [],
            now + i,
        )
        for i in range(COUNT)
    ]


def kafka_python_produce(bootstrap: str, topic: str, records: list[Any], codec: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec)
    try:
        for key, value, headers, ts in records:
            producer.send(
                topic, value=value, key=key, headers=headers, partition=0, timestamp_ms=ts
            )
        producer.flush(10)
    finally:
        producer.close(5)


def aiokafka_produce(bootstrap: str, topic: str, records: list[Any], codec: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec)
        await producer.start()
        try:
            for key, value, headers, ts in records:
                await producer.send(
                    topic, value=value, key=key, headers=headers, partition=0, timestamp_ms=ts
                )
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


PEERS = {"kafka-python": kafka_python_produce, "aiokafka": aiokafka_produce}


class PeerInteropTests(BrokerConsumerCase):
    broker_name: ClassVar[str]
    broker: Broker

    def test_reads_what_python_peers_produced(self: Any) -> None:
        for peer, produce in PEERS.items():
            for codec in ("gzip", "lz4", "zstd"):
                with self.subTest(peer=peer, codec=codec):
                    topic = self.create(f"{self.topic}-{peer}-{codec}")
                    records = peer_records(peer.encode())
                    produce(self.broker.bootstrap, topic, records, codec)
                    messages, _ = self.consume(COUNT, topic=topic)
                    self.assertEqual(
                        [
                            (
                                m.offset,
                                m.message.key,
                                m.message.value,
                                list(m.message.headers),
                                m.message.timestamp,
                            )
                            for m in messages
                        ],
                        [(i, *record) for i, record in enumerate(records)],
                    )


class KafkaPeerTests(PeerInteropTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuPeerTests(PeerInteropTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaPeerTests(PeerInteropTests, SynchronousTestCase):
    broker_name = "noida"
