"""Producer.metrics(): Java's producer-metrics after a known workload on the fake cluster."""

from __future__ import annotations

from typing import Any

from afkak.codec import CODEC_GZIP
from afkak.common import NotLeaderForPartitionError, UnknownTopicOrPartitionError
from afkak.metrics import PRODUCER, PRODUCER_TOPIC, MetricName
from afkak.test.test_producer import ProducerTestCase

PRODUCE = 0


class ProducerMetricsTests(ProducerTestCase):
    def metric(self, producer: Any, name: str, group: str = PRODUCER, **tags: str) -> float:
        return producer.metrics()[
            MetricName(name, group, tags={"client-id": "afkak-client", **tags})
        ]

    def test_sends_batches_requests_queue_time_latency(self) -> None:
        p = self.producer(linger_ms=100, enable_idempotence=False)
        self.succeed(p.send_messages("t", msgs=[b"x"]))  # metadata
        self.cluster.delay(PRODUCE, 0.05)
        ds = [p.send_messages("t", key=None, msgs=[b"v" * 10] * 4) for _ in range(3)]
        self.succeed(ds[-1])
        for d in ds:
            self.succeed(d)
        self.assertEqual(self.metric(p, "record-send-total"), 13)
        self.assertEqual(self.metric(p, "record-send-total", PRODUCER_TOPIC, topic="t"), 13)
        self.assertGreater(self.metric(p, "byte-total", PRODUCER_TOPIC, topic="t"), 13 * 10)
        self.assertAlmostEqual(self.metric(p, "request-latency-max"), 50.0)
        # Batches lingered linger_ms (plus the 10 ms steps of the clock) before going.
        self.assertGreaterEqual(self.metric(p, "record-queue-time-avg"), 100.0)
        self.assertLessEqual(self.metric(p, "record-queue-time-max"), 120.0)
        # Round robin: each send went to another partition, led by another broker.
        self.assertEqual(self.metric(p, "records-per-request-max"), 4)
        self.assertEqual(self.metric(p, "record-error-total"), 0)
        self.assertGreater(self.metric(p, "batch-size-avg"), 0)
        # Uncompressed: the encoded batch is about the size estimated before encoding.
        self.assertTrue(0.8 < self.metric(p, "compression-rate-avg") <= 1.0)
        self.assertEqual(self.metric(p, "produce-throttle-time-max"), 0)
        self.assertEqual(
            self.metric(p, "buffer-available-bytes"), self.metric(p, "buffer-total-bytes")
        )

    def test_compression_rate(self) -> None:
        p = self.producer(codec=CODEC_GZIP, enable_idempotence=False)
        self.succeed(p.send_messages("t", msgs=[b"a" * 1000] * 10))
        self.assertLess(self.metric(p, "compression-rate-avg"), 0.2)

    def test_buffer_available_bytes_while_in_flight(self) -> None:
        p = self.producer(buffer_memory=1 << 20, enable_idempotence=False)
        self.succeed(p.send_messages("t", msgs=[b"x"]))
        self.cluster.delay(PRODUCE, 1.0)
        d = p.send_messages("t", msgs=[b"v" * 1000])
        self.clock.advance(0.5)
        self.assertLess(self.metric(p, "buffer-available-bytes"), (1 << 20) - 1000)
        self.succeed(d)
        self.assertEqual(self.metric(p, "buffer-available-bytes"), 1 << 20)

    def test_retries_and_errors(self) -> None:
        p = self.producer(enable_idempotence=False, max_req_attempts=3)
        self.succeed(p.send_messages("t", msgs=[b"x"]))
        self.cluster.fail_next(PRODUCE, NotLeaderForPartitionError)
        self.succeed(p.send_messages("t", msgs=[b"a", b"b"]))
        self.assertEqual(self.metric(p, "record-retry-total"), 2)
        self.cluster.fail_next(PRODUCE, UnknownTopicOrPartitionError, count=3)
        self.run_until(p.send_messages("t", msgs=[b"c"]))
        self.assertEqual(self.metric(p, "record-error-total"), 1)
        self.assertEqual(self.metric(p, "record-error-total", PRODUCER_TOPIC, topic="t"), 1)
