"""OpenTelemetry metrics: an in-memory reader sees afkak's metrics after a known workload."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from afkak.metrics import MetricName
from afkak.metrics.otel import instrument, otel_name
from afkak.producer import Producer
from afkak.test.test_metrics_client import FakeClusterCase


class OpenTelemetryTests(FakeClusterCase):
    client_id = "app"
    brokers = 1

    def setUp(self) -> None:
        super().setUp()
        self.reader = InMemoryMetricReader()
        self.provider = MeterProvider(metric_readers=[self.reader])
        self.addCleanup(self.provider.shutdown)
        instrument(self.client, self.provider)

    def collect(self) -> dict[str, Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return {
            m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }

    def points(self, metrics: dict[str, Any], name: str) -> list[tuple[dict[str, Any], float]]:
        return [(dict(p.attributes), p.value) for p in metrics[name].data.data_points]

    def test_name(self) -> None:
        self.assertEqual(
            otel_name(MetricName("record-send-total", "producer-metrics")),
            "afkak.producer.record_send_total",
        )

    def test_counters_and_gauges_after_producing(self) -> None:
        producer = Producer(self.client, enable_idempotence=False)
        d = producer.send_messages("t", msgs=[b"a", b"b", b"c"])
        self.clock.advance(0.1)
        self.successResultOf(d)
        self.successResultOf(producer.stop())
        metrics = self.collect()
        sent = metrics["afkak.producer.record_send_total"]
        self.assertTrue(sent.data.is_monotonic)
        self.assertEqual(
            self.points(metrics, "afkak.producer.record_send_total"), [({"client_id": "app"}, 3)]
        )
        self.assertEqual(
            self.points(metrics, "afkak.producer_topic.record_send_total"),
            [({"client_id": "app", "topic": "t"}, 3)],
        )
        self.assertEqual(
            self.points(metrics, "afkak.client.connection_count"), [({"client_id": "app"}, 1)]
        )
        requests = dict(
            (a["node_id"], v) for a, v in self.points(metrics, "afkak.client_node.request_total")
        )
        self.assertEqual(requests["node-0"], 1)
        self.assertEqual(
            metrics["afkak.producer.batch_size_avg"].description,
            "The average record batch size in bytes",
        )
        # Nothing consumed: the consumer's instruments exist and observe nothing yet.
        self.assertNotIn("afkak.consumer_fetch_manager.records_lag", metrics)
