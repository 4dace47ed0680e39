"""Consumer.metrics(): Java's consumer-fetch-manager-metrics after a known workload."""

from __future__ import annotations

from afkak.metrics import FETCH, MetricName
from afkak.test.test_consumer import ConsumerTestCase, Recorder

FETCH_KEY = 1


class ConsumerMetricsTests(ConsumerTestCase):
    def metric(self, name: str, **tags: str) -> float:
        return self.client.metrics()[
            MetricName(name, FETCH, tags={"client-id": "afkak-client", **tags})
        ]

    def partition_metric(self, name: str) -> float:
        return self.metric(name, topic="t", partition="1")

    def test_records_bytes_fetches_lag_lead(self) -> None:
        self.cluster.append("t", 1, [b"a" * 100] * 5)
        self.cluster.append("t", 1, [b"b" * 100] * 5)
        self.cluster.delete_records("t", 1, 2)
        processor = Recorder(block=True)
        consumer = self.consumer(processor, fetch_size_bytes=1, buffer_size=700)
        self.start(consumer, 2)
        self.addCleanup(self.stop, consumer)
        # The first batch (offsets 0-4) fits the 700-byte buffer, not both.
        self.assertEqual([m.offset for m in processor.calls[0]], [2, 3, 4])
        self.assertEqual(self.metric("records-consumed-total"), 3)
        # The first fetch left 5 records behind (10 - 5); the second, sent while
        # the processor works on the first, fetched them.
        self.assertEqual(self.metric("fetch-total"), 2)
        self.assertEqual(self.partition_metric("records-lag"), 0)
        self.assertEqual(self.partition_metric("records-lag-max"), 5)
        self.assertEqual(self.partition_metric("records-lag-avg"), 2.5)
        self.assertEqual(self.metric("records-lag-max"), 5)
        self.assertEqual(self.partition_metric("records-lead"), 3)  # fetched at 5, log start 2
        self.assertGreater(self.metric("bytes-consumed-total"), 500)
        self.assertEqual(self.metric("fetch-throttle-time-max"), 0)
        self.assertEqual(
            consumer.metrics(),
            {
                n: v
                for n, v in self.client.metrics().items()
                if n.group in (FETCH, "client-metrics", "client-node-metrics")
            },
        )

    def test_fetch_latency(self) -> None:
        self.cluster.append("t", 1, [b"a"])
        self.cluster.delay(FETCH_KEY, 0.2)
        processor = Recorder()
        consumer = self.consumer(processor)
        self.start(consumer, 0)
        self.addCleanup(self.stop, consumer)
        self.clock.advance(0.2)
        self.clock.advance(0)
        self.assertEqual(len(processor.calls), 1)
        self.assertAlmostEqual(self.metric("fetch-latency-max"), 200.0)
        self.assertEqual(self.partition_metric("records-lag"), 0)

    def test_stopped_consumer_drops_its_partition_metrics(self) -> None:
        self.cluster.append("t", 1, [b"a"])
        consumer = self.consumer()
        self.start(consumer, 0)
        self.assertEqual(self.partition_metric("records-lag"), 0)
        consumer.stop()
        self.assertNotIn(
            MetricName(
                "records-lag",
                FETCH,
                tags={"client-id": "afkak-client", "topic": "t", "partition": "1"},
            ),
            self.client.metrics(),
        )
