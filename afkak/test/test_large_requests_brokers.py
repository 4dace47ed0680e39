"""Requests larger than the broker accepts, on noida-db and Tansu (message.max.bytes: 1 MiB).

afkak 21 wrote legacy message sets, each message checked alone; a v2 record
batch is checked whole.  Ten 384 KiB messages in one call must be written
(as several batches, in order) through ``send_produce_request`` and the
Producer, and a record that cannot fit fails only its own send.
confluent-kafka reads back what was written.

On Apache Kafka, a topic whose ``max.message.bytes`` (100,000) is below the
producer's batches: the Producer halves each batch the broker refuses until
it fits (issue 33), idempotent and not, and everything is written in order.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import KafkaAdminClient, NewTopic
from afkak.client import KafkaClient
from afkak.common import MessageSizeTooLargeError, ProduceRequest
from afkak.message_set import create_message
from afkak.producer import Producer
from afkak.test.brokers import Broker, consume, shared_broker, wait_for_partitions
from afkak.test.helpers import wait

_names = itertools.count()
VALUES = [bytes([65 + i]) * (384 * 1024) for i in range(10)]
HUGE = b"h" * (1024 * 1024 + 1)
_READ = {"fetch.max.bytes": 8 << 20, "max.partition.fetch.bytes": 8 << 20}


class LargeRequestTests:
    broker_name: ClassVar[str]
    broker: Broker

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)

    def client(self, **options: Any) -> KafkaClient:
        client = KafkaClient(
            self.broker.bootstrap,
            clientId="afkak-large",
            endpoint_factory=TCP4ClientEndpoint,
            **options,
        )
        self.addCleanup(lambda: wait(client.close()))  # type: ignore[attr-defined]
        return client

    def topic(self, partitions: int = 1) -> str:
        name = f"large-{self.broker_name}-{next(_names)}-{int(time.time())}"
        self.broker.create_topic(name, partitions)
        return name

    def read(self, topic: str, count: int, partitions: list[int] | None = None) -> list[Any]:
        return consume(
            self.broker.bootstrap, topic, count, partitions=partitions, timeout=30, config=_READ
        )

    def test_send_produce_request(self: Any) -> None:
        client = self.client()
        topic = self.topic(partitions=2)
        wait(client.load_metadata_for_topics(topic))
        payloads = [
            ProduceRequest(topic, 0, [create_message(v) for v in VALUES]),
            ProduceRequest(topic, 1, [create_message(b"small"), create_message(HUGE)]),
        ]
        responses = wait(client.send_produce_request(payloads, fail_on_error=False), 60)
        self.assertEqual([(r.error, r.offset) for r in responses], [(0, 0), (10, -1)])
        with self.assertRaises(MessageSizeTooLargeError):
            wait(client.send_produce_request(payloads[1:]))
        ok = ProduceRequest(topic, 1, [create_message(b"ok")])
        [after] = wait(client.send_produce_request([ok]))
        self.assertEqual((after.error, after.offset), (0, 0))
        records = self.read(topic, 11)
        self.assertEqual(
            [(r.offset, r.value) for r in records if r.partition == 0], list(enumerate(VALUES))
        )
        self.assertEqual([r.value for r in records if r.partition == 1], [b"ok"])

    def test_split_further_after_message_too_large(self: Any) -> None:
        # A client allowed 8 MiB learns the broker's 1 MiB from MESSAGE_TOO_LARGE.
        self.broker.quirks.skip_if("no_message_max_bytes")
        client = self.client(max_request_size=8 << 20)
        topic = self.topic()
        wait(client.load_metadata_for_topics(topic))
        payload = ProduceRequest(topic, 0, [create_message(v) for v in VALUES])
        [response] = wait(client.send_produce_request([payload]), 60)
        self.assertEqual((response.error, response.offset), (0, 0))
        single = ProduceRequest(topic, 0, [create_message(HUGE)])
        with self.assertRaises(MessageSizeTooLargeError):
            wait(client.send_produce_request([single]))
        self.assertEqual([r.value for r in self.read(topic, 10)], VALUES)

    def test_producer(self: Any) -> None:
        client = self.client()
        topic = self.topic()
        producer = Producer(client)
        self.addCleanup(lambda: wait(producer.stop()))
        big = producer.send_messages(topic, None, VALUES)
        refused = producer.send_messages(topic, None, [b"small", HUGE])
        after = producer.send_messages(topic, None, [b"after"])
        self.assertEqual(wait(big, 60).offset, 0)
        self.assertEqual(wait(after, 60).offset, 10)
        with self.assertRaises(MessageSizeTooLargeError):
            wait(refused)
        self.assertEqual([r.value for r in self.read(topic, 11)], [*VALUES, b"after"])


class KafkaLargeRequestTests(LargeRequestTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuLargeRequestTests(LargeRequestTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaLargeRequestTests(LargeRequestTests, SynchronousTestCase):
    broker_name = "noida"


class KafkaTopicLimitTests(SynchronousTestCase):
    """Issue 33's workload: 3,000 sends of 1 KB to a topic with ``max.message.bytes=100000``
    (0 were written before: every batch was refused MESSAGE_TOO_LARGE)."""

    SENDS = 3000
    PARTITIONS = 3

    def setUp(self) -> None:
        self.broker = shared_broker("kafka")
        self.client = KafkaClient(
            self.broker.bootstrap, clientId="afkak-split", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))

    def topic(self) -> str:
        name = f"split-{next(_names)}-{int(time.time() * 1000)}"
        new = NewTopic(name, self.PARTITIONS, -1, configs={"max.message.bytes": "100000"})
        [result] = wait(KafkaAdminClient(self.client).create_topics([new])).values()
        self.assertIsNone(result.error)
        wait_for_partitions(self.broker.bootstrap, name, self.PARTITIONS)
        return name

    def write_and_read(self, **options: Any) -> None:
        topic = self.topic()
        producer = Producer(self.client, **options)
        self.addCleanup(lambda: wait(producer.stop()))
        sends = [
            producer.send(topic, b"%05d" % i + b"v" * 1019, partition=i % self.PARTITIONS)
            for i in range(self.SENDS)
        ]
        wait(producer.flush(), 120)
        results = [wait(d) for d in sends]
        for p in range(self.PARTITIONS):
            offsets = [r.offset for r in results[p :: self.PARTITIONS]]
            self.assertEqual(offsets, list(range(len(offsets))))
        records = self.read(topic)
        self.assertEqual(len(records), self.SENDS)
        for p in range(self.PARTITIONS):
            values = [r.value[:5] for r in records if r.partition == p]
            self.assertEqual(values, [b"%05d" % i for i in range(p, self.SENDS, self.PARTITIONS)])

    def read(self, topic: str) -> list[Any]:
        return consume(self.broker.bootstrap, topic, self.SENDS, timeout=60)

    def test_idempotent(self) -> None:
        self.write_and_read()

    def test_without_idempotence(self) -> None:
        # One batch in flight per partition keeps the order (as Java's producer needs
        # max.in.flight.requests.per.connection=1 without idempotence).
        self.write_and_read(enable_idempotence=False, max_in_flight_per_partition=1)
