"""Faults only Apache Kafka can show (issue 19): a hung broker on the 3-node cluster, and
KIP-227 fetch sessions evicted by the broker.

The long fault runs (1,000,000 records through leader kills, a group through rolling
restarts) are ``tools/chaos.py``'s; their short versions are in ``test_chaos.py`` and
their numbers in docs/reliability.rst.  No assertion here bounds wall-clock time: each
wait is generous, and the times measured are reported in the failure messages.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak._broker_errors import ErrorCode
from afkak.client import KafkaClient
from afkak.client._fetch_call import FetchCall
from afkak.common import RequestTimedOutError, SourcedMessage, TopicAndPartition
from afkak.consumer import Consumer
from afkak.producer import Producer
from afkak.protocol.messages import ApiVersionsRequest
from afkak.test.brokers import produce, shared_broker
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.helpers import pump, wait

_names = itertools.count()


class Collector:
    """A processor keeping every value it is given, in order."""

    def __init__(self) -> None:
        self.values: list[bytes] = []

    def __call__(self, consumer: Consumer, messages: list[SourcedMessage]) -> None:
        self.values.extend(m.message.value or b"" for m in messages)


def name(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{int(time.time() * 1000)}"


class KafkaHungBrokerTests(SynchronousTestCase):
    """A SIGSTOPped partition leader (hung with its sockets open, not closed): requests
    to it time out instead of wedging the connection, produce and fetch move on once the
    controller fences it and moves leadership, and nothing hangs after it resumes."""

    #: The client's request timeout (s): a request to the hung broker fails after it.
    timeout = 5.0

    def setUp(self) -> None:
        self.cluster = shared_broker("kafka-cluster")
        self.topic = name("hung")
        self.cluster.create_topic(self.topic, 1)
        self.client = KafkaClient(
            self.cluster.bootstrap,
            timeout=int(self.timeout * 1000),
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(self.client.close(), timeout=60))
        self.producer = Producer(self.client, linger_ms=5)
        self.addCleanup(lambda: wait(self.producer.stop(), timeout=60))

    def send(self, values: range) -> Deferred[Any]:
        return gatherResults(
            [self.producer.send(self.topic, b"%d" % i, partition=0) for i in values],
            consumeErrors=True,
        )

    def test_produce_and_fetch_move_on_from_a_hung_leader_kafka(self) -> None:
        collector = Collector()
        consumer = Consumer(self.client, self.topic, 0, collector, fetch_max_wait_time=100)
        consumer.start(0).addErrback(self.fail)
        self.addCleanup(consumer.stop)

        def consumed(n: int) -> bool:
            return len(collector.values) >= n

        wait(self.send(range(100)), timeout=60)
        pump(lambda: consumed(100), 60, "the first 100 records")
        tp = TopicAndPartition(self.topic, 0)
        hung = self.client.topics_to_brokers[tp]
        node = self.cluster.nodes[hung.node_id - 1]
        node.pause()
        self.addCleanup(node.resume)
        paused_at = time.monotonic()

        # A request to the hung broker fails with a timeout; it does not hang.
        d = self.client.send_request_to_broker(hung, ApiVersionsRequest())
        self.assertRaises(RequestTimedOutError, wait, d, 60)

        wait(self.send(range(100, 200)), timeout=120)
        produced = time.monotonic() - paused_at
        pump(lambda: consumed(200), 120, "the records sent while the leader hung")
        fetched = time.monotonic() - paused_at
        moved = self.client.topics_to_brokers[tp]
        self.assertNotEqual(moved.node_id, hung.node_id)

        node.resume()
        self.cluster.wait_for_brokers(3, timeout=120)
        # The connection to the resumed broker is not wedged: it answers again (the
        # late answers to the requests that timed out are dropped).
        answer = wait(self.client.send_request_to_broker(hung, ApiVersionsRequest()), 60)
        self.assertEqual(answer.error_code, 0)
        wait(self.send(range(200, 300)), timeout=60)
        pump(lambda: consumed(300), 60, "the records sent after the resume")
        self.assertEqual(
            collector.values,
            [b"%d" % i for i in range(300)],
            f"sent within {produced:.1f} s, fetched within {fetched:.1f} s of the pause",
        )


class RecordingClient(KafkaClient):
    """A KafkaClient keeping (request's session id, epoch, response's error, session id)
    of every Fetch it sends: the sessions as the broker saw them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetches: list[tuple[int, int, int, int]] = []

    def send_request_to_broker(self, broker: Any, request: Any, **options: Any) -> Deferred[Any]:
        d = super().send_request_to_broker(broker, request, **options)
        if isinstance(request, FetchCall):

            def seen(response: Any, call: FetchCall = request) -> Any:
                self.fetches.append(
                    (call.session_id, call.session_epoch, response.error_code, response.session_id)
                )
                return response

            d.addCallback(seen)
        return d


class KafkaFetchSessionEvictionTests(SynchronousTestCase):
    """KIP-227 sessions evicted by Kafka: the broker keeps 8 sessions (one in each of its
    8 cache shards, ``max.incremental.fetch.session.cache.slots=8``), 8 clients reading one
    partition take them, then 8 clients reading all four partitions arrive and evict
    them (a session with more partitions evicts a smaller one).  The evicted clients'
    next incremental Fetch gets FETCH_SESSION_ID_NOT_FOUND; they fall back to full
    fetches and every client still reads every record, in order."""

    def setUp(self) -> None:
        self.broker = KafkaBroker(config={"max.incremental.fetch.session.cache.slots": "8"}).start()
        self.addCleanup(self.broker.stop)
        self.topic = name("evict")
        self.broker.create_topic(self.topic, 4)
        self.clients: list[RecordingClient] = []

    def reader(self, partitions: range) -> list[tuple[int, Collector]]:
        """A client of its own reading *partitions* from the start; (partition, collector)
        of each."""
        client = RecordingClient(
            self.broker.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close(), timeout=60))
        self.clients.append(client)
        collectors = []
        for p in partitions:
            collector = Collector()
            consumer = Consumer(client, self.topic, p, collector, fetch_max_wait_time=100)
            consumer.start(0).addErrback(self.fail)
            self.addCleanup(consumer.stop)
            collectors.append((p, collector))
        return collectors

    def write(self, start: int) -> None:
        for p in range(4):
            values = [b"%d-%d" % (p, i) for i in range(start, start + 100)]
            produce(self.broker.bootstrap, self.topic, values, partition=p)

    def test_evicted_sessions_fall_back_to_full_fetches_kafka(self) -> None:
        self.write(0)
        small = [self.reader(range(1)) for _ in range(8)]
        pump(lambda: all(len(c.values) >= 100 for ((_, c),) in small), 120, "the small readers")
        self.assertTrue(
            all(any(f[3] for f in client.fetches) for client in self.clients),
            "every small reader got a session",
        )
        big = [self.reader(range(4)) for _ in range(8)]
        for start in (100, 200, 300):
            self.write(start)
            expected = 100 + start
            pump(
                lambda: all(len(c.values) >= expected for cs in small + big for _, c in cs),  # noqa: B023
                120,
                f"{expected} records per partition read by every reader",
            )
        for p, collector in (pc for cs in small + big for pc in cs):
            self.assertEqual(collector.values, [b"%d-%d" % (p, i) for i in range(400)])
        fetches = [f for client in self.clients for f in client.fetches]
        errors = [f for f in fetches if f[2]]
        self.assertTrue(errors, "no session was evicted")
        self.assertEqual(
            {f[2] for f in errors},
            {ErrorCode.FETCH_SESSION_ID_NOT_FOUND},
            errors,
        )
        for client in self.clients[:8]:
            after = list(itertools.dropwhile(lambda f: not f[2], client.fetches))[1:]
            if after:  # the request after the error is a full fetch asking for a new session
                self.assertEqual(after[0][:2], (0, 0))
