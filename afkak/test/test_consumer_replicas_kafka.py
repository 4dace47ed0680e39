"""KIP-320 and KIP-392 on a 3-node Apache Kafka cluster of its own.

Each node is in its own rack (``broker.rack`` rack-1..3) and the brokers run
Kafka's ``RackAwareReplicaSelector``: a consumer with ``client_rack`` reads
from the replica in its rack, counted per broker with the client's per-node
request metrics.  An unclean leader election (a follower paused while the
leader takes acks=1 records, the leader killed, unclean election enabled on
the topic and elected through afkak's admin) truncates the log under a
consumer, which detects it: ``LogTruncationError`` without a reset policy,
the new leader's records from the divergence with one.

The cluster is this module's own (the shared one has no racks, and a test
that kills nodes must not share them); it runs only while the module does.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import (
    ConfigChange,
    ConfigResource,
    ElectionType,
    KafkaAdminClient,
    NewTopic,
)
from afkak.client import KafkaClient
from afkak.common import (
    OFFSET_EARLIEST,
    LogTruncationError,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.consumer import Consumer
from afkak.producer import Producer
from afkak.test.brokers.kafka import KafkaCluster
from afkak.test.helpers import pump, run_for, wait

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
_names = itertools.count()
_cluster: KafkaCluster | None = None


def setUpModule() -> None:  # noqa: N802 -- unittest's name
    global _cluster
    cluster = KafkaCluster(
        config={
            "replica.selector.class": SELECTOR,
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "3",
        }
    )
    for node in cluster.nodes:
        node.config["broker.rack"] = f"rack-{node.node_id}"
    _cluster = cluster.start()


def tearDownModule() -> None:  # noqa: N802
    if _cluster is not None:
        _cluster.stop()


class _Case(SynchronousTestCase):
    def setUp(self) -> None:
        assert _cluster is not None
        self.cluster = _cluster
        self.client = self.new_client()
        self.admin = KafkaAdminClient(self.client)
        self.topic = f"replicas-{next(_names)}-{int(time.time() * 1000)}"
        self.tp = TopicAndPartition(self.topic, 0)

    def new_client(self) -> KafkaClient:
        client = KafkaClient(
            self.cluster.bootstrap, timeout=15000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close(), 30))
        return client

    def create(self, replicas: list[int]) -> None:
        created = wait(
            self.admin.create_topics([NewTopic(self.topic, replica_assignment=[replicas])])
        )
        self.assertIsNone(created[self.topic].error)
        self.partition_is(lambda p: p.leader == replicas[0] and len(p.isr) == len(replicas))

    def describe(self) -> Any:
        (p,) = wait(self.admin.describe_topics([self.topic]))[self.topic].partitions
        return p

    def partition_is(self, check: Any, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                p = self.describe()
                if check(p):
                    return p
            except Exception as e:  # a node restarting: ask again
                p = e
            self.assertLess(time.monotonic(), deadline, f"partition still {p}")
            time.sleep(0.3)

    def producer(self, acks: int) -> Producer:
        producer = Producer(self.new_client(), req_acks=acks)
        self.addCleanup(lambda: wait(producer.stop(), 30))
        return producer

    def consume(self, **options: Any) -> tuple[list[SourcedMessage], Consumer, Deferred[Any]]:
        """A consumer of the topic from offset 0: what it read, it, and its start() Deferred."""
        seen: list[SourcedMessage] = []

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            seen.extend(messages)

        consumer = Consumer(
            self.new_client(),
            self.topic,
            0,
            processor,
            request_retry_max_delay=1.0,
            **options,
        )
        started = consumer.start(0)
        self.addCleanup(lambda: consumer.stop() if consumer._start_d is not None else None)
        return seen, consumer, started


def node_requests(client: Any, node: int) -> float:
    """Requests the client sent to *node* (Java's ``client-node-metrics`` request-total)."""
    return sum(
        value
        for name, value in client.metrics().items()
        if name.group == "client-node-metrics"
        and name.name == "request-total"
        and name.tags.get("node-id") == f"node-{node}"
    )


class KafkaRackAwareFetchTests(_Case):
    def test_reads_from_its_racks_follower_kafka(self) -> None:
        self.create([1, 2, 3])
        wait(self.producer(-1).send_messages(self.topic, msgs=[b"r%d" % i for i in range(50)]))
        seen, consumer, _ = self.consume(client_rack="rack-2", fetch_max_wait_time=100)
        pump(lambda: len(seen) >= 50, 60, "50 records read in rack-2")
        before = {n: node_requests(consumer.client, n) for n in (1, 2, 3)}
        # Two seconds of long polls at 100 ms: about 20 fetches, to the follower.
        run_for(2.0)
        after = {n: node_requests(consumer.client, n) for n in (1, 2, 3)}
        served = {n: after[n] - before[n] for n in after}
        self.assertEqual([m.message.value for m in seen], [b"r%d" % i for i in range(50)])
        self.assertGreaterEqual(served[2], 5, served)
        self.assertLessEqual(served[1], 1, served)  # at most a metadata refresh
        self.assertEqual(consumer._fetcher.replica.node_id, 2)
        # Without a rack the same partition is read from its leader, node 1.
        seen_plain, plain, _ = self.consume(fetch_max_wait_time=100)
        pump(lambda: len(seen_plain) >= 50, 60, "50 records read without a rack")
        first = {n: node_requests(plain.client, n) for n in (1, 2)}
        run_for(2.0)
        plain_served = {n: node_requests(plain.client, n) - first[n] for n in (1, 2)}
        self.assertGreaterEqual(plain_served[1], 5, plain_served)
        self.assertLessEqual(plain_served[2], 1, plain_served)


class KafkaTruncationTests(_Case):
    def test_unclean_election_truncation_detected_kafka(self) -> None:
        self.create([1, 2])
        leader, follower = self.cluster.nodes[0], self.cluster.nodes[1]
        wait(self.producer(-1).send_messages(self.topic, msgs=[b"a", b"b"]))
        strict, strict_consumer, strict_started = self.consume()
        resetting, _, _ = self.consume(auto_offset_reset=OFFSET_EARLIEST)
        pump(lambda: len(strict) == len(resetting) == 2, 60, "a and b read")
        # acks=1, its metadata loaded while every node answers.
        quick = self.producer(1)
        wait(quick.client.load_metadata_for_topics(self.topic))
        # The follower stops replicating; the leader shrinks the ISR to itself.
        follower.pause()
        self.addCleanup(follower.resume)
        self.partition_is(lambda p: list(p.isr) == [1])
        wait(quick.send_messages(self.topic, msgs=[b"c", b"d"]), 60)
        pump(lambda: len(strict) == len(resetting) == 4, 60, "c and d read")
        # The leader dies with c and d; the follower comes back without them.
        leader.kill()
        self.addCleanup(self.restart, leader)
        follower.resume()
        self.partition_is(lambda p: p.leader == -1)
        changed = wait(
            self.admin.incremental_alter_configs(
                {
                    ConfigResource.topic(self.topic): [
                        ConfigChange("unclean.leader.election.enable", "true")
                    ]
                }
            )
        )
        self.assertTrue(all(r.error is None for r in changed.values()), changed)
        elected = wait(self.admin.elect_leaders(ElectionType.UNCLEAN, [self.tp]))
        self.assertIn(type(elected[self.tp].error).__name__, ("NoneType", "ElectionNotNeeded"))
        self.partition_is(lambda p: p.leader == 2)
        # A new producer: the old one's requests to the dead leader time out first.
        wait(self.producer(1).send_messages(self.topic, msgs=[b"x", b"y", b"z"]), 60)
        pump(lambda: len(resetting) >= 7, 90, "x, y and z read from the divergence")
        self.assertEqual(
            [(m.offset, m.message.value) for m in resetting[4:]],
            [(2, b"x"), (3, b"y"), (4, b"z")],
        )
        pump(lambda: strict_started.called, 90, "the strict consumer stopped")
        error = self.failureResultOf(strict_started, LogTruncationError).value
        self.assertEqual((error.position, error.divergent_offset), (4, 2))
        self.assertEqual([m.offset for m in strict], [0, 1, 2, 3])
        strict_consumer.stop()

    def restart(self, node: Any) -> None:
        node.start(120)
        self.cluster.wait_for_brokers(3, 120)
