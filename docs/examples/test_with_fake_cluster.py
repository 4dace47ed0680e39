"""Testing code that uses afkak against afkak.testing's in-memory fake cluster.

A trial (or pytest) test module: no broker, no network, no real time.  The
fake cluster answers over in-memory connections as soon as a request is
written, so only timers (the producer's retry backoff, a consumer's fetch
wait) need the Clock advanced.

Usage: python -m twisted.trial docs/examples/test_with_fake_cluster.py
"""

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak import Consumer, KafkaClient, Producer
from afkak.common import OFFSET_EARLIEST, NotLeaderForPartitionError
from afkak.protocol.messages import ProduceRequest
from afkak.testing import FakeKafkaCluster


def record_order(producer, customer, item):
    """The code under test: publish an order, keyed by customer."""
    return producer.send("orders", item.encode(), key=customer.encode())


class OrderTests(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic("orders", partitions=1)
        self.client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.addCleanup(self.client.close)
        self.producer = Producer(self.client)
        self.addCleanup(self.producer.stop)

    def run_clock(self, seconds=5.0):
        """Let *seconds* of fake time pass, in small steps."""
        for _ in range(int(seconds * 100)):
            self.clock.advance(0.01)

    def test_order_is_written(self):
        d = record_order(self.producer, "alice", "tea")
        self.run_clock(0.1)
        self.assertEqual(self.successResultOf(d).offset, 0)
        [record] = self.cluster.records("orders", 0)
        self.assertEqual((record.key, record.value), (b"alice", b"tea"))

    def test_order_survives_a_leader_change(self):
        # The next Produce is answered NOT_LEADER_OR_FOLLOWER: the producer
        # refreshes its metadata and sends again, once, without a duplicate.
        self.cluster.fail_next(ProduceRequest, NotLeaderForPartitionError)
        d = record_order(self.producer, "bob", "coffee")
        self.run_clock(2)
        self.successResultOf(d)
        self.assertEqual([r.value for r in self.cluster.records("orders", 0)], [b"coffee"])

    def test_orders_are_consumed(self):
        self.cluster.append("orders", 0, [b"tea", b"cake"])
        seen = []
        consumer = Consumer(
            self.client,
            "orders",
            0,
            lambda consumer, messages: seen.extend(m.message.value for m in messages),
            auto_offset_reset=OFFSET_EARLIEST,
        )
        consumer.start(OFFSET_EARLIEST)
        self.addCleanup(consumer.stop)
        self.run_clock(1)  # the broker holds a fetch up to fetch_max_wait_time (100 ms)
        self.assertEqual(seen, [b"tea", b"cake"])
