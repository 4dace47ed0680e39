"""What an idle producer and an idle consumer give the cyclic GC to scan (issue 39).

Fifty producers and fifty consumers in one process (``tools/bench_scale.py
--workloads many``) spent a third of their CPU in the collector: each full
collection walks every object the clients hold.  These tests count the
GC-tracked objects reachable from one client (its ``KafkaClient`` and the
producer or ``KafkaConsumer`` on it), not those of the fake cluster, the
reactor or what existed before, and pin an upper bound: a change that adds
objects per client or per partition shows here, deterministically.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import TopicAndPartition
from afkak.consumer import Consumer
from afkak.group import KafkaConsumer
from afkak.producer import Producer
from afkak.protocol.messages import MetadataRequest
from afkak.records import gc_pause
from afkak.testing import FakeKafkaCluster

PARTITIONS = 20  # over two topics
TOPICS = ("a", "b")


def tracked_from(roots: Iterable[Any], existing: set[int], clock: Clock) -> int:
    """The GC-tracked objects reachable from *roots*, except through objects whose ids
    are in *existing*, classes, modules, the *clock* and the fake cluster's objects."""
    seen = set(existing)
    stack = list(roots)
    count = 0
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        kind = type(o)
        if isinstance(o, type) or kind.__name__ == "module" or o is clock:
            continue
        if kind.__module__.startswith("afkak.testing"):
            continue
        count += gc.is_tracked(o)
        stack.extend(gc.get_referents(o))
    return count


class IdleClientFootprintTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        for topic in TOPICS:
            self.cluster.create_topic(topic, partitions=PARTITIONS // 2)
            for p in range(PARTITIONS // 2):
                self.cluster.append(topic, p, [b"v"] * 3)

    def client(self) -> KafkaClient:
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.addCleanup(client.close)
        return client

    def consumer(self) -> tuple[KafkaClient, KafkaConsumer]:
        """A consumer of every partition that has read their records and waits for more."""
        client = self.client()
        consumer = KafkaConsumer(client)
        consumer.assign([(t, p) for t in TOPICS for p in range(PARTITIONS // 2)])
        seen = 0
        for _ in range(5):
            got: list[Any] = []
            consumer.getmany(timeout_ms=1000).addCallback(got.append)
            self.clock.advance(1.0)
            seen += sum(map(len, got[0].values()))
        self.assertGreaterEqual(seen, 3 * PARTITIONS)
        self.addCleanup(consumer.close)
        return client, consumer

    def producer(self) -> tuple[KafkaClient, Producer]:
        """A producer that has written to every partition, every send acknowledged."""
        client = self.client()
        producer = Producer(client)
        sent = [producer.send(t, b"v", partition=p) for t in TOPICS for p in range(PARTITIONS // 2)]
        self.clock.advance(1.0)
        for d in sent:
            self.successResultOf(d)
        self.addCleanup(producer.stop)
        return client, producer

    def footprint(self, make: Any) -> int:
        make()  # what the first client builds once per process is not the second's
        gc.collect()
        existing = gc.get_objects()  # (held: their ids stay theirs)
        roots = make()
        gc.collect()
        return tracked_from(roots, {id(o) for o in existing}, self.clock)

    def test_an_idle_consumer(self) -> None:
        """About 80 objects per partition: its Consumer, the fetch it waits on, its
        metrics (2,413 over 20 partitions when each sensor kept five objects and
        each fetch built its retry policy, 2,114 when each fetch waited in a chain
        of coroutines, 1,627 now)."""
        self.assertLess(self.footprint(self.consumer), 1_700)

    def test_an_idle_producer(self) -> None:
        """Its client's connection and producer metrics, its partitions' state (558
        over 20 partitions when each sensor kept five objects, 499 now)."""
        self.assertLess(self.footprint(self.producer), 530)


def one_broker(
    test: SynchronousTestCase, partitions: int
) -> tuple[Clock, FakeKafkaCluster, KafkaClient]:
    """A Clock, a one-broker fake cluster with topic "t" of *partitions*, a client."""
    clock = Clock()
    cluster = FakeKafkaCluster(brokers=1, reactor=clock)
    cluster.create_topic("t", partitions=partitions)
    client = KafkaClient(
        cluster.bootstrap_hosts, reactor=clock, endpoint_factory=cluster.endpoint_factory
    )
    test.addCleanup(client.close)
    return clock, cluster, client


def created_since(before: list[Any]) -> list[Any]:
    """The GC-tracked objects alive now (after a collection) that are not in *before*
    (held meanwhile, so that their ids are not reused)."""
    gc.collect()
    old = {id(o) for o in before}
    return [o for o in gc.get_objects() if id(o) not in old]


class FetchInFlightFootprintTests(SynchronousTestCase):
    """What one consumer's fetch cycle leaves alive while the broker holds the next fetch.

    Fifty consumers in one process promoted about 60,000 objects to the oldest
    generation per full collection: each partition's long poll held five
    nested coroutines and their Deferreds' callbacks until the broker answered.
    """

    CONSUMERS = 10

    def test_a_fetch_in_flight(self) -> None:
        """A record consumed and the next fetch parked at the (fake) broker: the objects
        that cycle left alive, per consumer, its share of the broker's parked request
        included (46 when each fetch was a chain of five coroutines, 24 now)."""
        clock, cluster, client = one_broker(self, self.CONSUMERS)
        consumed = [0]

        def count(consumer: Consumer, messages: list[Any]) -> None:
            consumed[0] += len(messages)

        consumers = [Consumer(client, "t", p, count) for p in range(self.CONSUMERS)]
        for c in consumers:
            c.start(0)
            self.addCleanup(c.stop)
        for _ in range(4):  # the last cycle is measured: metrics and caches settled
            gc.collect()
            before = gc.get_objects()
            for p in range(self.CONSUMERS):
                cluster.append("t", p, [b"v"])
            clock.advance(1.0)
            new = len(created_since(before))
            del before
        self.assertEqual(consumed[0], 4 * self.CONSUMERS)
        self.assertLess(new, 26 * self.CONSUMERS)


class RequestInFlightFootprintTests(SynchronousTestCase):
    """What one request through the client's connection pool holds until answered.

    Fifty producers and fifty consumers in one process promoted the closures
    :meth:`~afkak.client._pool.ConnectionPool.send` made for each request (its
    watch callback and explanation of a cancellation, their cells and lists),
    the client's callback and the connection's canceller to the oldest
    generation: the next full collection walked them all.
    """

    REQUESTS = 8

    def test_a_request_in_flight(self) -> None:
        """Metadata requests the broker holds: the objects each one keeps alive, its
        Deferred and pending request included (26 when the pool, the client and the
        connection made closures and callbacks for each, 6 now)."""
        clock, cluster, client = one_broker(self, 1)
        leader = self.successResultOf(client.leaders_for([TopicAndPartition("t", 0)]))
        broker = leader[TopicAndPartition("t", 0)]
        self.successResultOf(client.send_request_to_broker(broker, MetadataRequest(topics=None)))
        cluster.delay(MetadataRequest, 1.0)
        request = MetadataRequest(topics=None)
        gc.collect()
        existing = gc.get_objects()
        waiting = [client.send_request_to_broker(broker, request) for _ in range(self.REQUESTS)]
        clock.advance(0)
        new = tracked_from([client, waiting], {id(o) for o in existing}, clock)
        del existing
        for _ in range(self.REQUESTS):
            clock.advance(1.0)
        for d in waiting:
            self.assertEqual(self.successResultOf(d).topics[0].name, "t")
        self.assertLess(new, 7 * self.REQUESTS)


class ProduceInFlightFootprintTests(SynchronousTestCase):
    """What a producer's Produce request holds while the broker has not answered.

    Fifty producers in one process promoted each request's payloads (a
    ``ProduceRequest`` per batch and their list), its topic-id maps and its
    batches' lists to the oldest generation: the next full collection walked
    them all.
    """

    PARTITIONS = 10

    def in_flight(self, send: Any) -> int:
        """The objects alive while one request (a batch per partition, each of one
        send made by *send*) waits for its answer, the broker's share included."""
        clock, cluster, client = one_broker(self, self.PARTITIONS)
        producer = Producer(client, linger_ms=5)
        self.addCleanup(producer.stop)
        for _ in range(2):  # metrics, caches and the connection settled
            sent = [send(producer, p) for p in range(self.PARTITIONS)]
            clock.advance(1.0)
            for d in sent:
                self.successResultOf(d)
        cluster.delay(0, 1.0)  # Produce
        gc.collect()
        before = gc.get_objects()
        sent = [send(producer, p) for p in range(self.PARTITIONS)]
        clock.advance(0.01)
        new = len(created_since(before))
        del before
        clock.advance(1.0)
        for d in sent:
            self.successResultOf(d)
        return new

    def test_sends_in_flight(self) -> None:
        """``send()`` records: 10 batches in one request (201 objects when each batch had a
        payload built for the request and an empty list for ``send_messages`` calls,
        and every request its reverse topic-id map; 179 or 180 now; 20 more without
        the compiled module, whose sends wait tracked)."""
        new = self.in_flight(lambda producer, p: producer.send("t", b"v", partition=p))
        self.assertLess(new, 185 if gc_pause.untrack is not None else 205)
