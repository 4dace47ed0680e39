"""afkak's metrics against Apache Kafka (issue 25): a quota'd producer is throttled
(KIP-219) and keeps quiet meanwhile; records-lag equals ``kafka-consumer-groups``;
KIP-714 pushes reach a broker plugin; a trace crosses processes in record headers.

The producer's connections are watched through its endpoint factory: each
write a connection makes is timed on the reactor's clock, as is each throttle
the connection logs, so the proof counts writes inside throttle windows rather
than timing anything against a wall clock.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.logger import ILogObserver, globalLogPublisher
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from afkak.admin import (
    ConfigChange,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    QuotaEntity,
)
from afkak.client import KafkaClient
from afkak.common import TopicAndPartition
from afkak.consumer import Consumer
from afkak.consumer._fetch_ahead import SlotState
from afkak.metrics import FETCH, NODE, PRODUCER, ConsumerSensors, MetricName
from afkak.producer import Producer
from afkak.test.brokers import produce, shared_broker
from afkak.test.brokers.java_tools import describe_group
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.brokers.oauth_kafka import compile_java
from afkak.test.helpers import pump, wait
from afkak.testing._telemetry_state import decode_metrics
from afkak.tracing import KafkaTracing

_names = itertools.count()


def _stamp() -> str:
    return f"{next(_names)}-{os.getpid()}-{int(time.time() * 1000)}"


class _TimedWrites(ProtocolWrapper):
    """Records the reactor time of every write its protocol makes."""

    def write(self, data: bytes) -> None:
        self.factory.writes.setdefault(self.wrappedProtocol, []).append(reactor.seconds())
        super().write(data)

    def writeSequence(self, data: Any) -> None:
        self.factory.writes.setdefault(self.wrappedProtocol, []).append(reactor.seconds())
        super().writeSequence(data)


class _WriteLog(WrappingFactory):
    protocol = _TimedWrites


class WriteWatcher:
    """An endpoint factory timing each connection's writes, keyed by its protocol."""

    def __init__(self) -> None:
        self.writes: dict[Any, list[float]] = {}

    def __call__(self, reactor_: Any, host: str, port: int) -> Any:
        endpoint = TCP4ClientEndpoint(reactor_, host, port)
        watcher = self

        class Watched:
            def connect(self, factory: Any) -> Deferred[Any]:
                wrapping = _WriteLog(factory)
                wrapping.writes = watcher.writes  # type: ignore[attr-defined]
                d: Deferred[Any] = endpoint.connect(wrapping)
                return d.addCallback(lambda wrapper: wrapper.wrappedProtocol)

        return Watched()


class KafkaThrottleTests(SynchronousTestCase):
    """A producer over its ``producer_byte_rate`` on one Kafka node."""

    def setUp(self) -> None:
        self.broker = shared_broker("kafka")
        self.topic = f"metrics-quota-{_stamp()}"
        self.client_id = f"quota-{_stamp()}"
        self.broker.create_topic(self.topic, 1)
        admin_client = KafkaClient(
            self.broker.bootstrap, clientId="quota-admin", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(admin_client.close()))
        self.admin = KafkaAdminClient(admin_client)
        self.entity = QuotaEntity({"client-id": self.client_id})
        results = wait(self.admin.alter_client_quotas({self.entity: {"producer_byte_rate": 8192}}))
        self.assertIsNone(results[self.entity].error)
        self.addCleanup(
            lambda: wait(
                self.admin.alter_client_quotas({self.entity: {"producer_byte_rate": None}})
            )
        )

    def test_throttled_producer_sends_nothing_meanwhile_kafka(self) -> None:
        holds: list[tuple[Any, float, float]] = []

        @implementer(ILogObserver)
        def observe(event: dict[str, Any]) -> None:
            if "throttled by the broker" in event.get("log_format", ""):
                holds.append((event["broker"], reactor.seconds(), event["s"]))

        globalLogPublisher.addObserver(observe)
        self.addCleanup(globalLogPublisher.removeObserver, observe)
        watcher = WriteWatcher()
        client = KafkaClient(
            self.broker.bootstrap,
            clientId=self.client_id,
            endpoint_factory=watcher,
            timeout=30000,
        )
        self.addCleanup(lambda: wait(client.close()))
        producer = Producer(client, batch_send=True, batch_every_n=20, batch_every_t=0.05)
        self.addCleanup(lambda: wait(producer.stop()))
        value = b"x" * 1000
        # Waves of 20 KB, each sent as soon as the last one is acknowledged: 160 KB at
        # 8 KB/s overflows the quota's 11 one-second samples, and each throttled
        # response is followed at once by more records to send.
        offsets: set[int] = set()
        for _wave in range(8):
            wave = [producer.send(self.topic, value) for _ in range(20)]
            offsets.update(wait(d, 120).offset for d in wave)

        self.assertTrue(holds, "Kafka never throttled the producer")
        checked = 0  # throttled connections whose writes were timed
        for connection, start, seconds in holds:
            protocol = connection._protocol
            writes = watcher.writes.get(protocol, [])
            inside = [t for t in writes if start < t < start + seconds]
            self.assertEqual(inside, [], f"written while throttled for {seconds} s")
            checked += bool(writes)
        self.assertGreater(checked, 0, "no throttled connection was watched")
        tags = {"client-id": self.client_id}
        produce_max = client.metrics_registry.metric(
            MetricName("produce-throttle-time-max", PRODUCER, tags=tags)
        )
        self.assertGreater(produce_max, 0)
        self.assertGreaterEqual(produce_max, max(s for _, _, s in holds) * 1000 - 1)
        node_max = max(
            value
            for name, value in client.metrics_registry.metrics(NODE).items()
            if name.name == "throttle-time-max"
        )
        self.assertGreater(node_max, 0)
        self.assertEqual(len(offsets), 160)  # every record still arrived, once


class KafkaLagTests(SynchronousTestCase):
    """records-lag per partition equals the LAG ``kafka-consumer-groups --describe`` prints."""

    def setUp(self) -> None:
        self.broker = shared_broker("kafka")
        self.topic = f"metrics-lag-{_stamp()}"
        self.group = f"{self.topic}-g"
        self.broker.create_topic(self.topic, 2)
        self.client = KafkaClient(
            self.broker.bootstrap, clientId="lag", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))

    def test_records_lag_equals_kafka_consumer_groups_kafka(self) -> None:
        for partition in (0, 1):
            for batch in range(3 + partition):  # one batch per call: 60 and 80 records
                values = (b"%d-%d-%d" % (partition, batch, i) + b"." * 100 for i in range(20))
                produce(self.broker.bootstrap, self.topic, values, partition=partition)
        stuck: list[Deferred[None]] = []

        def hold(consumer: Consumer, messages: list[Any]) -> Deferred[None]:
            d: Deferred[None] = Deferred()
            stuck.append(d)
            return d  # the processor keeps its first block: the consumer stops after one prefetch

        consumers = [
            Consumer(self.client, self.topic, p, hold, consumer_group=self.group, buffer_size=1024)
            for p in (0, 1)
        ]
        for c in consumers:
            c.start(0)
        registry = self.client.metrics_registry
        sensors = registry.shared(ConsumerSensors)

        def settled() -> bool:
            # Each consumer holds its first block and has prefetched the next: no more fetches.
            return len(stuck) == 2 and all(c._ahead.state is SlotState.FILLED for c in consumers)

        pump(settled, 60, "each consumer holds a block and has prefetched the next")
        tags = {"client-id": "lag", "topic": self.topic}
        lags = {
            p: registry.metric(MetricName("records-lag", FETCH, tags={**tags, "partition": str(p)}))
            for p in (0, 1)
        }
        self.assertEqual(lags, {0: 20.0, 1: 40.0})  # one 20-record batch per fetch
        # records-lag-max is the window's largest: partition 1's first fetch, 80 - 20.
        self.assertEqual(
            registry.metric(MetricName("records-lag-max", FETCH, tags={"client-id": "lag"})), 60.0
        )
        # Commit where each consumer's next fetch reads (the offset records-lag counts
        # from), then ask Kafka's tool.
        positions = {
            TopicAndPartition(self.topic, p): sensors.offsets[self.topic, p][0] for p in (0, 1)
        }
        wait(KafkaAdminClient(self.client).alter_consumer_group_offsets(self.group, positions))
        rows = describe_group(self.broker.bootstrap, self.group)
        self.assertEqual({p: float(rows[self.topic, p]["LAG"]) for p in (0, 1)}, lags)
        for c in consumers:
            c.stop()


_RECEIVER = os.path.join(os.path.dirname(__file__), "brokers", "telemetry")


class KafkaTelemetryTests(SynchronousTestCase):
    """KIP-714 on an Apache Kafka node whose ``metric.reporters`` receiver (compiled here)
    writes each push to a file: afkak's pushes decode, with the subscribed metrics."""

    def setUp(self) -> None:
        self.pushes = tempfile.mkdtemp(prefix="afkak-telemetry-pushes-")
        self.addCleanup(shutil.rmtree, self.pushes, True)
        classes = compile_java(os.path.join(_RECEIVER, "AfkakTelemetryReceiver.java"))
        self.addCleanup(shutil.rmtree, classes, True)
        self.broker = KafkaBroker(
            config={
                "metric.reporters": "AfkakTelemetryReceiver",
                "afkak.telemetry.dir": self.pushes,
            },
            classpath=[classes],
        ).start()
        self.addCleanup(self.broker.stop)
        self.topic = f"telemetry-{_stamp()}"
        self.broker.create_topic(self.topic, 1)

    def received(self) -> list[tuple[dict[str, Any], bytes]]:
        """The pushes the receiver wrote so far, in order: (metadata, OTLP bytes)."""
        found = []
        for n in itertools.count(1):
            meta = os.path.join(self.pushes, f"push-{n}.json")
            if not os.path.exists(meta):
                return found
            with open(meta) as m, open(os.path.join(self.pushes, f"push-{n}.bin"), "rb") as b:
                found.append((json.loads(m.read()), b.read()))
        return found

    def test_subscribed_metrics_pushed_to_a_telemetry_receiver_kafka(self) -> None:
        client = KafkaClient(
            self.broker.bootstrap, clientId="telemetry", endpoint_factory=TCP4ClientEndpoint
        )
        admin = KafkaAdminClient(client)
        subscription = ConfigResource(ConfigResourceType.CLIENT_METRICS, "afkak-producer")
        changes = [
            ConfigChange("metrics", "org.apache.kafka.producer."),
            ConfigChange("interval.ms", "1000"),
        ]
        results = wait(admin.incremental_alter_configs({subscription: changes}))
        self.assertIsNone(results[subscription].error)
        producer = Producer(client, enable_idempotence=False)
        for i in range(30):
            wait(producer.send(self.topic, b"%d" % i))
        pump(lambda: len(self.received()) >= 2, 60, "two pushes from afkak")
        wait(producer.stop())
        wait(client.close(), 30)  # the last push, marked terminating

        pushes = self.received()
        self.assertTrue(pushes[-1][0]["terminating"], pushes[-1][0])
        self.assertFalse(any(meta["terminating"] for meta, _ in pushes[:-1]))
        self.assertEqual({meta["client_id"] for meta, _ in pushes}, {"telemetry"})
        self.assertEqual(len({meta["client_instance_id"] for meta, _ in pushes}), 1)
        points = [p for _, data in pushes for p in decode_metrics(data)]
        names = {p.name for p in points}
        self.assertTrue(all(n.startswith("org.apache.kafka.producer.") for n in names), names)
        for expected in (
            "org.apache.kafka.producer.record.send.total",
            "org.apache.kafka.producer.record.queue.time.avg",
            "org.apache.kafka.producer.node.request.latency.avg",
            "org.apache.kafka.producer.connection.creation.total",
        ):
            self.assertIn(expected, names)
        # Kafka's default subscription asks for deltas: they add up to the records sent.
        sent = [p for p in points if p.name == "org.apache.kafka.producer.record.send.total"]
        self.assertEqual(sum(p.value for p in sent), 30.0)
        latencies = [
            p.value
            for p in points
            if p.name == "org.apache.kafka.producer.node.request.latency.avg"
        ]
        self.assertTrue(any(0 < v < 30000 for v in latencies), latencies)


_TRACED_SEND = """
import json, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from twisted.internet import task
from twisted.internet.endpoints import TCP4ClientEndpoint
from afkak.client import KafkaClient
from afkak.producer import Producer
from afkak.tracing import KafkaTracing

async def main(reactor, bootstrap, topic):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = KafkaClient(bootstrap, clientId="traced-producer", endpoint_factory=TCP4ClientEndpoint)
    producer = Producer(client, enable_idempotence=False)
    await KafkaTracing(provider).send(producer, topic, b"traced", partition=0)
    await producer.stop()
    await client.close()
    [span] = exporter.get_finished_spans()
    print(json.dumps([span.context.trace_id, span.context.span_id, span.name]))

task.react(lambda reactor: task.ensureDeferred(main(reactor, *sys.argv[1:])))
"""


class KafkaTracingTests(SynchronousTestCase):
    """A record sent with tracing by another process; consumed here, its process span
    links to that process's send span (read from the record's traceparent header)."""

    def test_process_span_links_to_a_send_span_of_another_process_kafka(self) -> None:
        broker = shared_broker("kafka")
        topic = f"traced-{_stamp()}"
        broker.create_topic(topic, 1)
        checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sent = subprocess.run(
            [sys.executable, "-c", _TRACED_SEND, broker.bootstrap, topic],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": checkout},
            check=True,
        )
        trace_id, span_id, name = json.loads(sent.stdout.strip().splitlines()[-1])
        self.assertEqual(name, f"send {topic}")

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        client = KafkaClient(
            broker.bootstrap, clientId="traced", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close()))
        seen: list[Any] = []
        consumer = Consumer(
            client, topic, 0, KafkaTracing(provider).processor(lambda c, m: seen.extend(m))
        )
        consumer.start(0)
        pump(lambda: bool(seen), 60, "the traced record")
        consumer.stop()
        [process] = exporter.get_finished_spans()
        self.assertEqual(process.name, f"process {topic}")
        self.assertEqual(
            [(link.context.trace_id, link.context.span_id) for link in process.links],
            [(trace_id, span_id)],
        )
