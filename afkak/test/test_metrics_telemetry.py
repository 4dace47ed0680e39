"""KIP-714 client telemetry on the fake cluster: subscription, pushes, their OTLP content.

The fake advertises GetTelemetrySubscriptions/PushTelemetry only after
``enable_client_telemetry`` (Kafka: only with a telemetry plugin), decompresses
each push and decodes its OTLP metrics (:mod:`afkak.testing._telemetry_apis`).
"""

from __future__ import annotations

import random
from typing import Any

from afkak._broker_errors import InvalidRecord
from afkak.client import KafkaClient
from afkak.codec import CODEC_LZ4, CODEC_NONE, has_lz4
from afkak.consumer import Consumer
from afkak.metrics.telemetry import CUMULATIVE, DELTA, Point, encode
from afkak.protocol.messages import GetTelemetrySubscriptionsRequest, PushTelemetryRequest
from afkak.test.test_producer import ProducerTestCase
from afkak.testing._telemetry_state import decode_metrics

GET, PUSH = GetTelemetrySubscriptionsRequest.API_KEY, PushTelemetryRequest.API_KEY
PRODUCER = "org.apache.kafka.producer."


class TelemetryTestCase(ProducerTestCase):
    def requests(self, api_key: int) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == api_key]

    def advance(self, seconds: float, step: float = 0.01) -> None:
        """Advance the clock in steps, so timers set by timers fire in time."""
        for _ in range(round(seconds / step)):
            self.clock.advance(step)

    def send(self, count: int = 1) -> None:
        producer = getattr(self, "_producer", None)
        if producer is None:
            producer = self._producer = self.producer(enable_idempotence=False)
        for _ in range(count):
            self.succeed(producer.send("t", b"v", partition=0))


class NoTelemetryPluginTests(TelemetryTestCase):
    def test_a_broker_without_telemetry_is_sent_nothing(self) -> None:
        self.send(3)
        self.clock.advance(600)
        self.assertEqual(self.requests(GET) + self.requests(PUSH), [])
        self.assertEqual(self.client._telemetry.phase.name, "WAITING_FOR_BROKER")  # type: ignore[union-attr]

    def test_disabled_sends_nothing_to_a_broker_with_telemetry(self) -> None:
        self.cluster.enable_client_telemetry(push_interval_ms=1000)
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            enable_metrics_push=False,
        )
        self.addCleanup(client.close)
        self.successResultOf(client.load_metadata_for_topics("t"))
        self.clock.advance(10)
        self.assertEqual(self.requests(GET) + self.requests(PUSH), [])

    def test_enable_metrics_push_must_be_a_bool(self) -> None:
        with self.assertRaises(TypeError):
            KafkaClient("h:9092", enable_metrics_push="yes")  # type: ignore[arg-type]


class PushTests(TelemetryTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.telemetry = self.cluster.enable_client_telemetry(
            metrics=[PRODUCER], push_interval_ms=1000, accepted_compression_types=[]
        )

    def test_first_push_within_half_to_one_and_a_half_intervals_then_every_interval(
        self,
    ) -> None:
        self.send()  # subscribed at its first connection, by now
        [get] = self.requests(GET)
        subscribed_by = self.clock.seconds()
        self.assertLess(subscribed_by, 0.1)
        self.advance(0.49 - subscribed_by)
        self.assertEqual(self.telemetry.pushes, [])
        self.advance(1.02 + subscribed_by)
        [first] = self.telemetry.pushes
        self.advance(0.99 - (self.clock.seconds() - first.at))
        self.assertEqual(len(self.telemetry.pushes), 1)
        self.advance(0.02)
        self.assertEqual(len(self.telemetry.pushes), 2)
        self.assertLess(abs(self.telemetry.pushes[1].at - first.at - 1.0), 0.011)
        self.assertFalse(any(p.terminating for p in self.telemetry.pushes))
        # The broker's client instance id, kept from the first answer.
        self.assertEqual(get.request.client_instance_id.int, 0)
        self.assertEqual({p.client_instance_id.int for p in self.telemetry.pushes}, {1})

    def test_pushes_the_subscribed_metrics_under_kip714_names(self) -> None:
        self.send(4)
        self.clock.advance(1.5)
        [push] = self.telemetry.pushes
        points = {(p.name, tuple(sorted(p.attributes.items()))): p for p in push.points()}
        names = {name for name, _ in points}
        self.assertTrue(all(n.startswith(PRODUCER) for n in names), names)
        for expected in (
            "org.apache.kafka.producer.record.queue.time.avg",
            "org.apache.kafka.producer.produce.throttle.time.max",
            "org.apache.kafka.producer.connection.creation.total",
            "org.apache.kafka.producer.node.request.latency.avg",
        ):
            self.assertIn(expected, names)
        sent = points["org.apache.kafka.producer.record.send.total", ()]
        self.assertEqual((sent.value, sent.kind, sent.temporality), (4.0, "sum", DELTA))
        topic = points["org.apache.kafka.producer.topic.record.send.total", (("topic", "t"),)]
        self.assertEqual(topic.value, 4.0)
        node_tags = [dict(a) for n, a in points if n.endswith("node.request.latency.avg")]
        self.assertTrue(all(set(t) == {"node_id"} for t in node_tags), node_tags)
        gauge = points["org.apache.kafka.producer.record.queue.time.avg", ()]
        self.assertEqual(gauge.kind, "gauge")
        self.assertEqual(push.resource(), {"client_id": "afkak-client"})

    def sends_pushed_twice(self) -> tuple[Any, Any]:
        """record-send-total as pushed after 2 records, then after 3 more."""
        self.send(2)
        self.clock.advance(1.5)
        self.send(3)
        self.advance(1.1)
        first, second = (
            next(p for p in push.points() if p.name == PRODUCER + "record.send.total")
            for push in self.telemetry.pushes
        )
        return first, second

    def test_delta_sums_count_since_the_last_push(self) -> None:
        first, second = self.sends_pushed_twice()
        self.assertEqual((first.value, second.value), (2.0, 3.0))
        self.assertEqual(second.start_ns, first.time_ns)

    def test_cumulative_sums_when_the_subscription_asks(self) -> None:
        self.telemetry.delta_temporality = False
        first, second = self.sends_pushed_twice()
        self.assertEqual((first.value, second.value), (2.0, 5.0))
        self.assertEqual((first.temporality, second.start_ns), (CUMULATIVE, first.start_ns))

    def test_compression_the_broker_accepts(self) -> None:
        if not has_lz4():
            self.skipTest("lz4 is not installed")
        self.telemetry.accepted_compression_types = [99, CODEC_LZ4]
        self.send()
        self.clock.advance(1.5)
        [push] = self.telemetry.pushes
        self.assertEqual(push.compression_type, CODEC_LZ4)
        [raw] = self.requests(PUSH)
        self.assertNotEqual(raw.request.metrics, push.data)  # compressed on the wire
        self.assertTrue(push.points())

    def test_uncompressed_when_nothing_is_accepted(self) -> None:
        self.send()
        self.clock.advance(1.5)
        self.assertEqual(self.telemetry.pushes[0].compression_type, CODEC_NONE)

    def test_no_requested_metric_pushes_nothing_and_asks_again_each_interval(self) -> None:
        self.telemetry.metrics = []
        self.send()
        self.advance(3.05)
        self.assertEqual(self.telemetry.pushes, [])
        self.assertEqual(len(self.requests(GET)), 4)  # at 0, 1, 2 and 3 s
        self.assertEqual(self.requests(PUSH), [])

    def test_a_changed_subscription_is_fetched_again(self) -> None:
        self.send()
        self.clock.advance(1.5)
        self.telemetry.subscribe(["org.apache.kafka.producer.record.send"])
        self.advance(1.1)  # UNKNOWN_SUBSCRIPTION_ID, then a new subscription
        self.assertEqual(len(self.requests(GET)), 2)
        self.advance(1.5)
        last = self.telemetry.pushes[-1]
        self.assertEqual(last.subscription_id, 2)
        names = {p.name for p in last.points()}
        self.assertEqual(names, {PRODUCER + "record.send.rate", PRODUCER + "record.send.total"})

    def test_a_zero_push_interval_means_kafkas_least_100_ms(self) -> None:
        self.telemetry.push_interval_ms = 0
        self.send()
        self.advance(1.0)
        self.assertTrue(5 <= len(self.telemetry.pushes) <= 10, len(self.telemetry.pushes))

    def test_close_pushes_a_last_time_marked_terminating(self) -> None:
        self.send()
        self.clock.advance(1.5)
        closed = self.client.close()
        self.successResultOf(closed)
        self.assertEqual([p.terminating for p in self.telemetry.pushes], [False, True])
        self.clock.advance(10)
        self.assertEqual(len(self.telemetry.pushes), 2)

    def test_close_before_any_subscription_pushes_nothing(self) -> None:
        self.telemetry.metrics = []
        self.send()
        self.successResultOf(self.client.close())
        self.assertEqual(self.requests(PUSH), [])

    def test_an_invalid_record_stops_pushing_for_good(self) -> None:
        self.cluster.fail_next(PushTelemetryRequest, InvalidRecord)
        self.send()
        self.advance(11.5)
        self.assertEqual(len(self.requests(PUSH)), 1)
        self.assertEqual(len(self.requests(GET)), 1)
        self.assertEqual(self.client._telemetry.phase.name, "TERMINATED")  # type: ignore[union-attr]


class _Latest(random.Random):
    """A random source whose every draw is the highest: the latest first push."""

    def uniform(self, a: float, b: float) -> float:
        return b


class ConsumerPushTests(TelemetryTestCase):
    def random_source(self) -> random.Random:
        return _Latest()  # the latest first push must be seen too

    def test_a_consumer_pushes_under_the_consumer_names(self) -> None:
        telemetry = self.cluster.enable_client_telemetry(
            metrics=["org.apache.kafka.consumer."], push_interval_ms=1000
        )
        self.cluster.append("t", 2, [b"a", b"b", b"c"])
        consumer = Consumer(self.client, "t", 2, lambda c, messages: None)
        consumer.start(1)
        # Subscribed once connected; the first push 0.5 to 1.5 intervals later.
        self.advance(2.0)
        points = {p.name: p for p in telemetry.pushes[0].points()}
        for name in (
            "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
            "org.apache.kafka.consumer.fetch.manager.records.consumed.total",
            "org.apache.kafka.consumer.node.request.latency.avg",
            "org.apache.kafka.consumer.connection.creation.total",
        ):
            self.assertIn(name, points)
        lag = points["org.apache.kafka.consumer.fetch.manager.records.lag"]
        self.assertEqual((lag.value, lag.attributes), (0.0, {"topic": "t", "partition": "2"}))
        consumed = points["org.apache.kafka.consumer.fetch.manager.records.consumed.total"]
        self.assertEqual(consumed.value, 2.0)
        self.assertFalse(any(n.startswith("org.apache.kafka.producer.") for n in points))
        # Only fetch connections: the terminating push waits behind the long-polling Fetch.
        consumer.stop()
        closed = self.client.close()
        self.advance(1.0)
        self.successResultOf(closed)
        self.assertTrue(telemetry.pushes[-1].terminating)


class EncodingTests(ProducerTestCase):
    def test_gauges_and_sums_round_trip(self) -> None:
        points = [
            Point("a.gauge", "g", 1.5, (("node_id", "node-1"),), 10),
            Point("a.sum", "s", 7.0, (), 20, 5, DELTA),
        ]
        data = encode(points, {"client_id": "c"}, "afkak", "1")
        gauge, total = decode_metrics(data)
        self.assertEqual(
            (gauge.name, gauge.value, gauge.attributes, gauge.time_ns, gauge.kind),
            ("a.gauge", 1.5, {"node_id": "node-1"}, 10, "gauge"),
        )
        self.assertEqual(
            (total.name, total.value, total.start_ns, total.time_ns, total.kind, total.temporality),
            ("a.sum", 7.0, 5, 20, "sum", DELTA),
        )
