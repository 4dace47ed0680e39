"""The statistics callback: librdkafka-shaped JSON every statistics_interval_ms (fake cluster)."""

from __future__ import annotations

import json
from typing import Any

from afkak.client import KafkaClient
from afkak.common import TopicAndPartition
from afkak.consumer import Consumer
from afkak.producer import Producer
from afkak.protocol.messages import ProduceRequest
from afkak.test.test_metrics_client import FakeClusterCase


class StatisticsTests(FakeClusterCase):
    client_id = "stats"

    def make_client(self, **options: Any) -> KafkaClient:
        self.documents: list[dict[str, Any]] = []
        return super().make_client(
            statistics_interval_ms=1000,
            stats_cb=lambda text: self.documents.append(json.loads(text)),
            **options,
        )

    def test_emitted_every_interval_until_closed(self) -> None:
        self.clock.advance(0.999)
        self.assertEqual(self.documents, [])
        self.clock.advance(0.001)
        self.assertEqual(len(self.documents), 1)
        self.clock.advance(1)
        self.clock.advance(1)
        self.assertEqual([d["age"] for d in self.documents], [1_000_000, 2_000_000, 3_000_000])
        self.client.close()
        self.clock.advance(5)
        self.assertEqual(len(self.documents), 3)

    def test_brokers_topics_partitions_after_a_workload(self) -> None:
        producer = Producer(self.client, enable_idempotence=False)
        self.cluster.delay(ProduceRequest, 0.1)
        d = producer.send_messages("t", msgs=[b"a", b"b", b"c"])
        for _ in range(20):
            self.clock.advance(0.01)
        self.successResultOf(d)
        self.successResultOf(producer.stop())
        consumer = Consumer(self.client, "t", 0, lambda c, msgs: None, fetch_size_bytes=1)
        consumer.start(0)
        self.addCleanup(consumer.stop)
        self.clock.advance(1 - self.clock.seconds())
        doc = self.documents[-1]
        self.assertEqual((doc["name"], doc["client_id"], doc["type"]), ("stats", "stats", "client"))
        self.assertEqual(doc["txmsgs"], 3)
        self.assertGreater(doc["tx"], 2)
        self.assertGreater(doc["rx_bytes"], 0)
        leader = self.client.topics_to_brokers[TopicAndPartition("t", 0)].node_id
        (broker,) = [b for b in doc["brokers"].values() if b["nodeid"] == leader]
        self.assertEqual(broker["state"], "UP")
        self.assertIn("t-0", broker["toppars"])
        self.assertEqual((broker["outbuf_cnt"], broker["waitresp_cnt"]), (0, 1))  # the long poll
        # The produce's 0.1 s (seen at the next 10 ms step of the clock), in µs.
        self.assertTrue(100_000 <= broker["rtt"]["max"] <= 110_001, broker["rtt"])
        self.assertEqual(broker["connects"], 2)  # the produce connection and the fetch one
        partitions = doc["topics"]["t"]["partitions"]
        self.assertEqual(
            {k: partitions["0"][k] for k in ("leader", "fetch_state", "hi_offset", "next_offset")},
            {
                "leader": leader,
                "fetch_state": "active",
                "hi_offset": 3 if self.values_in(0) else 0,
                "next_offset": 3 if self.values_in(0) else 0,
            },
        )
        self.assertEqual(partitions["0"]["consumer_lag"], 0)
        self.assertEqual(partitions["1"]["fetch_state"], "none")
        self.assertEqual(doc["topics"]["t"]["txmsgs"], 3)

    def values_in(self, partition: int) -> int:
        return len(self.cluster.records("t", partition))

    def test_a_failing_callback_is_logged_and_emission_goes_on(self) -> None:
        calls = []

        def broken(text: str) -> None:
            calls.append(text)
            raise RuntimeError("dashboard down")

        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            statistics_interval_ms=500,
            stats_cb=broken,
        )
        self.addCleanup(client.close)
        self.clock.advance(0.5)
        self.clock.advance(0.5)
        self.assertEqual(len(calls), 2)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 2)

    def test_bad_arguments(self) -> None:
        hosts = self.cluster.bootstrap_hosts
        self.assertRaises(
            TypeError, KafkaClient, hosts, reactor=self.clock, statistics_interval_ms=10
        )
        self.assertRaises(
            ValueError, KafkaClient, hosts, reactor=self.clock, statistics_interval_ms=-1
        )
