"""The Prometheus collector: a scrape parsed by prometheus_client after a known workload."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from afkak.common import TopicAndPartition
from afkak.consumer import Consumer
from afkak.metrics import MetricName
from afkak.metrics.prometheus import AfkakCollector, prometheus_name
from afkak.partitioner import RoundRobinPartitioner
from afkak.producer import Producer
from afkak.test.test_metrics_client import FakeClusterCase


class PrometheusTests(FakeClusterCase):
    client_id = "app"

    def setUp(self) -> None:
        super().setUp()
        self.registry = CollectorRegistry()
        self.registry.register(AfkakCollector(self.client))

    def scrape(self) -> dict[str, Any]:
        text = generate_latest(self.registry).decode()
        return {f.name: f for f in text_string_to_metric_families(text)}

    def sample(self, families: dict[str, Any], family: str, sample: str, **labels: str) -> float:
        found = [
            s.value
            for s in families[family].samples
            if s.name == sample and s.labels == {"client_id": "app", **labels}
        ]
        self.assertEqual(len(found), 1, f"{sample} {labels}: {families[family].samples}")
        return float(found[0])

    def test_names(self) -> None:
        self.assertEqual(
            prometheus_name(MetricName("record-send-total", "producer-metrics")),
            "afkak_producer_record_send_total",
        )
        self.assertEqual(
            prometheus_name(MetricName("records-lag", "consumer-fetch-manager-metrics")),
            "afkak_consumer_fetch_manager_records_lag",
        )

    def test_families_after_producing_and_consuming(self) -> None:
        producer = Producer(
            self.client, partitioner_class=RoundRobinPartitioner, enable_idempotence=False
        )
        for _ in range(3):
            d = producer.send_messages("t", key=b"k", msgs=[b"v" * 100] * 4)
            self.clock.advance(0.1)
            self.successResultOf(d)
        self.successResultOf(producer.stop())
        # Round robin put 8 records in one partition, 4 in the other: consume the first.
        partition = max((0, 1), key=lambda p: len(self.cluster.records("t", p)))
        leader = self.client.topics_to_brokers[TopicAndPartition("t", partition)].node_id
        consumer = Consumer(self.client, "t", partition, lambda c, m: None, fetch_size_bytes=1)
        consumer.start(0)
        self.addCleanup(consumer.stop)
        for _ in range(5):  # a block of messages per reactor turn
            self.clock.advance(0)
        families = self.scrape()

        self.assertEqual(families["afkak_producer_record_send"].type, "counter")
        self.assertEqual(
            self.sample(families, "afkak_producer_record_send", "afkak_producer_record_send_total"),
            12,
        )
        topic_sends = self.sample(
            families,
            "afkak_producer_topic_record_send",
            "afkak_producer_topic_record_send_total",
            topic="t",
        )
        self.assertEqual(topic_sends, 12)
        self.assertEqual(families["afkak_producer_record_send_rate"].type, "gauge")
        self.assertEqual(
            self.sample(
                families,
                "afkak_consumer_fetch_manager_records_consumed",
                "afkak_consumer_fetch_manager_records_consumed_total",
            ),
            8,
        )
        self.assertEqual(
            self.sample(
                families,
                "afkak_consumer_fetch_manager_records_lag",
                "afkak_consumer_fetch_manager_records_lag",
                topic="t",
                partition=str(partition),
            ),
            0,
        )
        node = {"node_id": f"node-{leader}"}
        self.assertGreaterEqual(
            self.sample(
                families, "afkak_client_node_request", "afkak_client_node_request_total", **node
            ),
            4,  # 3 produce requests and a fetch
        )
        self.assertEqual(
            self.sample(families, "afkak_client_connection_count", "afkak_client_connection_count"),
            len(
                {
                    leader,
                    self.client.topics_to_brokers[TopicAndPartition("t", 1 - partition)].node_id,
                }
            )
            + 1,  # the consumer's fetch connection to the leader
        )
        self.assertEqual(
            families["afkak_producer_request_latency_avg"].documentation,
            "The average request latency in ms",
        )
