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
from afkak.common import (
    BrokerConnectionError,
    RequestTimedOutError,
    SourcedMessage,
    TopicAndPartition,
)
from afkak.consumer import Consumer
from afkak.consumer._fetch_ahead import SlotState
from afkak.producer import Producer
from afkak.protocol.messages import ApiVersionsRequest
from afkak.test.brokers import produce, shared_broker
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.helpers import pump, run_for, wait

_names = itertools.count()


class Collector:
    """A processor keeping every value it is given, in order."""

    def __init__(self) -> None:
        self.values: list[bytes] = []

    def __call__(self, consumer: Consumer, messages: list[SourcedMessage]) -> None:
        self.values.extend(m.message.value or b"" for m in messages)


#: A request any broker answers at once.
PING = ApiVersionsRequest(client_software_name="afkak-test", client_software_version="1")


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

        # A request to the hung broker fails with a timeout (or, were the connection
        # dropped as silent first, a connection error); it does not hang.
        d = self.client.send_request_to_broker(hung, PING)
        self.assertRaises((RequestTimedOutError, BrokerConnectionError), wait, d, 60)

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
        answer = wait(self.client.send_request_to_broker(hung, PING), 60)
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
    of every Fetch it sends (error -1: the request failed): the sessions as the broker
    saw them."""

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

            def failed(failure: Any, call: FetchCall = request) -> Any:
                self.fetches.append((call.session_id, call.session_epoch, -1, 0))
                return failure

            d.addCallbacks(seen, failed)
        return d


class KafkaFetchSessionLostTests(SynchronousTestCase):
    """A KIP-227 session the broker no longer has: Kafka forgets its sessions when it
    restarts.  A Consumer whose processor is busy (its fetch ahead answered, so no Fetch
    in flight) while its broker is killed (-9) and restarted sends its next Fetch as an
    incremental one of the old session: Kafka answers FETCH_SESSION_ID_NOT_FOUND, afkak
    falls back to a full fetch asking for a new session, and reads on with no loss.

    (Eviction from a full session cache is the same answer, but Kafka 4.4 evicts only
    sessions older than its fixed ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``, 120 s.)
    """

    def setUp(self) -> None:
        self.broker = KafkaBroker().start()
        self.addCleanup(self.broker.stop)
        self.topic = name("session")
        self.broker.create_topic(self.topic, 1)
        self.client = RecordingClient(
            self.broker.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close(), timeout=60))

    def write(self, start: int) -> None:
        produce(self.broker.bootstrap, self.topic, [b"%d" % i for i in range(start, start + 100)])

    def test_a_session_lost_in_a_restart_falls_back_to_a_full_fetch_kafka(self) -> None:
        gate: Deferred[None] = Deferred()
        collector = Collector()

        def held(consumer: Consumer, messages: list[SourcedMessage]) -> Deferred[None] | None:
            collector(consumer, messages)
            return gate if not gate.called else None

        consumer = Consumer(self.client, self.topic, 0, held, fetch_max_wait_time=100)
        consumer.start(0).addErrback(self.fail)
        self.addCleanup(consumer.stop)
        self.write(0)
        pump(lambda: bool(collector.values), 60, "the first records")
        self.write(100)  # the fetch ahead gets records: then no Fetch is in flight
        pump(lambda: consumer._ahead.state is SlotState.FILLED, 60, "the fetch ahead")
        session = self.client.fetches[-1][3]
        self.assertNotEqual(session, 0, "no fetch session granted")
        before = len(self.client.fetches)

        self.broker.kill()
        run_for(1.0)  # the client sees its connection go
        self.broker.restart()
        gate.callback(None)
        self.write(200)
        pump(lambda: len(collector.values) >= 300, 120, "the records after the restart")
        self.assertEqual(collector.values, [b"%d" % i for i in range(300)])
        after = self.client.fetches[before:]
        self.assertEqual(
            after[0][:3], (session, after[0][1], ErrorCode.FETCH_SESSION_ID_NOT_FOUND), after
        )
        self.assertEqual(after[1][:2], (0, 0))  # a full fetch asking for a new session
        self.assertTrue(any(f[3] not in (0, session) for f in after[1:]), after)  # a new one
