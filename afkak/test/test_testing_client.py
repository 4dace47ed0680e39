"""afkak.testing driven through afkak's own client side: BrokerConnection and KafkaClient."""

from __future__ import annotations

import textwrap
import unittest
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak import testing
from afkak.client import KafkaClient
from afkak.common import (
    FetchRequest,
    NotLeaderForPartitionError,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from afkak.connection import BrokerConnection, State
from afkak.message_set import create_message
from afkak.protocol import messages as m
from afkak.records import build_batch, read_batches
from afkak.testing import FakeKafkaCluster


class BrokerConnectionTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)
        self.cluster.create_topic("t", partitions=2)

    def connection(self, node: int = 0) -> BrokerConnection:
        conn = BrokerConnection(
            self.clock,
            f"broker-{node}",
            9092,
            endpoint_factory=self.cluster.endpoint_factory,
            retry_policy=lambda n: 1.0,
        )
        self.addCleanup(conn.close)
        return conn

    def test_negotiates_and_requests_synchronously(self) -> None:
        conn = self.connection()
        response = self.successResultOf(conn.request(m.MetadataRequest(topics=None)))
        self.assertEqual([t.name for t in response.topics], ["t"])
        self.assertEqual(conn.state, State.READY)
        self.assertEqual(conn.api_versions[1], (4, 18))  # type: ignore[index]
        self.assertEqual(
            [(s.api_key, s.api_version) for s in self.cluster.requests_seen], [(18, 4), (3, 13)]
        )

    def test_produce_then_fetch(self) -> None:
        conn = self.connection()
        P, F = m.ProduceRequest, m.FetchRequest
        topic_id = self.cluster.topic_id("t")
        produce = P(
            acks=-1,
            timeout_ms=1000,
            topic_data=[
                P.TopicProduceData(
                    name="t",
                    topic_id=topic_id,
                    partition_data=[P.PartitionProduceData(0, build_batch([b"a", b"b"]))],
                )
            ],
        )
        answer = self.successResultOf(conn.request(produce)).responses[0].partition_responses[0]
        self.assertEqual((answer.error_code, answer.base_offset), (0, 0))
        fetch = F(
            max_wait_ms=5000,
            min_bytes=1,
            topics=[
                F.FetchTopic(
                    topic="t",
                    topic_id=topic_id,
                    partitions=[
                        F.FetchPartition(partition=0, fetch_offset=2, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        )
        d = conn.request(fetch)
        self.assertNoResult(d)  # long-polling
        self.cluster.append("t", 0, [b"c"])
        records = self.successResultOf(d).responses[0].partitions[0].records
        self.assertEqual(
            [(r.offset, r.value) for b in read_batches(records) for r in b], [(2, b"c")]
        )

    def test_reconnects_after_drop(self) -> None:
        conn = self.connection()
        self.successResultOf(conn.request(m.MetadataRequest(topics=[])))
        self.cluster.drop_connections(0)
        self.assertNotEqual(conn.state, State.READY)
        self.clock.advance(1.0)
        self.successResultOf(conn.request(m.MetadataRequest(topics=[])))
        self.assertEqual(conn.state, State.READY)

    def test_refused_while_down(self) -> None:
        self.cluster.set_broker_down(1)
        conn = self.connection(1)
        d = conn.request(m.MetadataRequest(topics=[]))
        self.assertNoResult(d)
        self.assertEqual(conn.state, State.BACKING_OFF)
        self.cluster.set_broker_up(1)
        self.clock.advance(1.0)
        self.successResultOf(d)


class KafkaClientTests(SynchronousTestCase):
    """The usage the afkak.testing docstring shows."""

    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic("t", partitions=2)
        self.client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.addCleanup(self.client.close)

    def test_metadata(self) -> None:
        self.assertTrue(self.successResultOf(self.client.load_metadata_for_topics("t")))
        self.assertEqual(self.client.topic_partitions["t"], [0, 1])

    def test_produce_and_fetch(self) -> None:
        self.successResultOf(self.client.load_metadata_for_topics("t"))
        d = self.client.send_produce_request([ProduceRequest("t", 1, [create_message(b"v", b"k")])])
        (produced,) = self.successResultOf(d)
        self.assertEqual((produced.error, produced.offset), (0, 0))
        self.assertEqual([(r.key, r.value) for r in self.cluster.records("t", 1)], [(b"k", b"v")])
        d = self.client.send_fetch_request([FetchRequest("t", 1, 0, 1 << 20)], min_bytes=1)
        (fetched,) = self.successResultOf(d)
        self.assertEqual([(om.offset, om.message.value) for om in fetched.messages], [(0, b"v")])

    def test_commit_and_fetch_offsets(self) -> None:
        d = self.client.send_offset_commit_request(
            "g", [OffsetCommitRequest("t", 0, 42, -1, "meta")]
        )
        self.assertEqual([r.error for r in self.successResultOf(d)], [0])
        committed = self.cluster.committed_offsets[("g", "t", 0)]
        self.assertEqual((committed.offset, committed.metadata), (42, "meta"))
        d = self.client.send_offset_fetch_request("g", [OffsetFetchRequest("t", 0)])
        (fetched,) = self.successResultOf(d)
        self.assertEqual((fetched.error, fetched.offset), (0, 42))

    def test_not_leader_error_surfaces(self) -> None:
        self.successResultOf(self.client.load_metadata_for_topics("t"))
        self.cluster.fail_next(m.ProduceRequest, NotLeaderForPartitionError)
        d = self.client.send_produce_request([ProduceRequest("t", 0, [create_message(b"v")])])
        failure: Any = self.failureResultOf(d)
        self.assertIsNotNone(failure.check(NotLeaderForPartitionError))
        self.assertEqual(self.cluster.records("t", 0), [])


class DocstringExampleTests(SynchronousTestCase):
    def test_example_passes(self) -> None:
        """The trial test in afkak.testing's docstring runs and passes."""
        doc = testing.__doc__ or ""
        start = doc.index("    from twisted.internet.task import Clock")
        source = textwrap.dedent(doc[start : doc.index("Setting up:")])
        namespace: dict[str, Any] = {}
        exec(compile(source, "afkak.testing docstring", "exec"), namespace)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(namespace["ClientTests"])
        result = unittest.TestResult()
        suite.run(result)
        self.assertEqual((result.testsRun, result.errors, result.failures), (3, [], []))
