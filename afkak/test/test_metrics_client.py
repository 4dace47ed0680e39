"""KafkaClient.metrics(): per node and per client connection metrics, on the fake cluster."""

from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import ProduceRequest, TopicAndPartition
from afkak.message_set import create_message
from afkak.metrics import CLIENT, NODE, MetricName
from afkak.protocol.messages import ProduceRequest as ProduceMessage
from afkak.testing import FakeKafkaCluster


def value(metrics: dict[MetricName, float], name: str, group: str, **tags: str) -> float:
    return metrics[MetricName(name, group, tags={"client-id": "c", **tags})]


class FakeClusterCase(SynchronousTestCase):
    """Topic "t" (2 partitions) on 2 fake brokers, and a client called ``client_id``, on a Clock."""

    client_id = "c"
    brokers = 2

    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=self.brokers, reactor=self.clock)
        self.cluster.create_topic("t", partitions=2)
        self.client = self.make_client()
        self.addCleanup(self.client.close)

    def make_client(self, **options: Any) -> KafkaClient:
        return KafkaClient(
            self.cluster.bootstrap_hosts,
            clientId=self.client_id,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            **options,
        )


class ClientMetricsTests(FakeClusterCase):
    def produce(self, partition: int) -> None:
        d = self.client.send_produce_request(
            [ProduceRequest("t", partition, [create_message(b"v" * 100)])]
        )
        self.clock.advance(0.25)
        self.successResultOf(d)

    def test_requests_bytes_latency_per_node_and_client(self) -> None:
        self.successResultOf(self.client.load_metadata_for_topics("t"))
        leader = self.client.topics_to_brokers[TopicAndPartition("t", 0)].node_id
        self.cluster.delay(ProduceMessage, 0.25)
        self.produce(0)
        self.produce(0)
        metrics = self.client.metrics()
        node = f"node-{leader}"
        self.assertEqual(value(metrics, "request-total", NODE, **{"node-id": node}), 2)
        self.assertEqual(value(metrics, "response-total", NODE, **{"node-id": node}), 2)
        self.assertAlmostEqual(
            value(metrics, "request-latency-avg", NODE, **{"node-id": node}), 250.0
        )
        self.assertAlmostEqual(
            value(metrics, "request-latency-max", NODE, **{"node-id": node}), 250.0
        )
        sent = value(metrics, "outgoing-byte-total", NODE, **{"node-id": node})
        self.assertGreater(sent, 2 * 100)
        # 2 requests over the 0.5 s since the first, plus the one more window
        # Java's Rate counts (its windows are never fewer than samples - 1).
        self.assertAlmostEqual(value(metrics, "request-rate", NODE, **{"node-id": node}), 2 / 30.5)
        # The client-wide figures add the bootstrap Metadata request to the node's.
        self.assertEqual(value(metrics, "request-total", CLIENT), 3)
        self.assertGreater(value(metrics, "outgoing-byte-total", CLIENT), sent)
        self.assertGreater(value(metrics, "incoming-byte-total", CLIENT), 0)
        self.assertEqual(value(metrics, "connection-count", CLIENT), 1)  # the leader's
        self.assertEqual(value(metrics, "connection-creation-total", CLIENT), 2)
        self.assertEqual(value(metrics, "connection-close-total", CLIENT), 1)  # bootstrap

    def test_dropped_connections_count_as_closed(self) -> None:
        self.successResultOf(self.client.load_metadata_for_topics("t"))
        self.produce(0)
        self.produce(1)
        self.assertEqual(value(self.client.metrics(), "connection-count", CLIENT), 2)
        self.cluster.drop_connections()
        metrics = self.client.metrics()
        self.assertEqual(value(metrics, "connection-count", CLIENT), 0)
        self.assertEqual(value(metrics, "connection-close-total", CLIENT), 3)
