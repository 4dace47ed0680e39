"""OpenTelemetry spans of afkak.tracing: a send span per record, its context carried in
the record's traceparent header, and the consumer's process span linked to it, in
another client with another tracer provider (as another process would be)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from twisted.internet.defer import Deferred

from afkak._broker_errors import TopicAuthorizationFailed
from afkak.client import KafkaClient
from afkak.consumer import Consumer
from afkak.protocol.messages import ProduceRequest
from afkak.test.test_producer import ProducerTestCase
from afkak.tracing import KafkaTracing


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, exporter


class TracingTests(ProducerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.producing, self.produced = provider()
        self.consuming, self.consumed = provider()
        self.consumer_client = KafkaClient(
            self.cluster.bootstrap_hosts,
            clientId="reader",
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.addCleanup(self.consumer_client.close)

    def advance(self, seconds: float) -> None:
        for _ in range(round(seconds / 0.01)):
            self.clock.advance(0.01)

    def test_process_span_links_to_the_send_span_across_clients(self) -> None:
        producer = self.producer(enable_idempotence=False)
        tracing = KafkaTracing(self.producing)
        for i in range(3):
            self.succeed(tracing.send(producer, "t", b"v%d" % i, key=b"k", partition=1))
        sends = self.produced.get_finished_spans()
        self.assertEqual([s.name for s in sends], ["send t"] * 3)
        self.assertEqual({s.kind for s in sends}, {SpanKind.PRODUCER})
        first = sends[0]
        self.assertEqual(first.attributes["messaging.system"], "kafka")
        self.assertEqual(first.attributes["messaging.destination.name"], "t")
        self.assertEqual(first.attributes["messaging.destination.partition.id"], "1")
        self.assertEqual(first.attributes["messaging.kafka.offset"], 0)
        self.assertEqual(first.attributes["messaging.kafka.message.key"], "k")
        [record, *_] = self.cluster.records("t", 1)
        traceparent = dict(record.headers)["traceparent"]
        context = first.context
        ids = b"00-%032x-%016x-" % (context.trace_id, context.span_id)
        self.assertTrue(traceparent.startswith(ids), traceparent)

        seen: list[Any] = []
        consumer = Consumer(
            self.consumer_client,
            "t",
            1,
            KafkaTracing(self.consuming).processor(lambda c, messages: seen.extend(messages)),
        )
        consumer.start(0)
        self.addCleanup(consumer.stop)
        self.advance(1)
        self.assertEqual(len(seen), 3)
        [process] = self.consumed.get_finished_spans()
        self.assertEqual((process.name, process.kind), ("process t", SpanKind.CONSUMER))
        self.assertEqual(process.attributes["messaging.batch.message_count"], 3)
        self.assertEqual(process.attributes["messaging.operation.type"], "process")
        self.assertEqual(
            [(link.context.trace_id, link.context.span_id) for link in process.links],
            [(s.context.trace_id, s.context.span_id) for s in sends],
        )
        # Two providers: the consumer's span is in a trace of its own, linked, not a child.
        self.assertNotIn(process.context.trace_id, {s.context.trace_id for s in sends})

    def test_process_span_lasts_until_the_processor_deferred_fires(self) -> None:
        self.cluster.append("t", 0, [b"plain"])  # no traceparent: no link
        pending: Deferred[None] = Deferred()
        consumer = Consumer(
            self.consumer_client,
            "t",
            0,
            KafkaTracing(self.consuming).processor(lambda c, messages: pending),
        )
        started = consumer.start(0)
        self.advance(1)
        self.assertEqual(self.consumed.get_finished_spans(), ())
        pending.errback(ValueError("boom"))
        [process] = self.consumed.get_finished_spans()
        self.assertEqual(process.links, ())
        self.assertEqual(process.status.status_code, StatusCode.ERROR)
        self.failureResultOf(started, ValueError)

    def test_a_failed_send_ends_its_span_with_the_error(self) -> None:
        producer = self.producer(enable_idempotence=False)
        self.cluster.fail_next(ProduceRequest, TopicAuthorizationFailed)
        d = KafkaTracing(self.producing).send(producer, "t", b"v")
        result = self.run_until(d)
        self.assertTrue(result.check(TopicAuthorizationFailed), result)
        [span] = self.produced.get_finished_spans()
        self.assertEqual(span.status.status_code, StatusCode.ERROR)
        self.assertEqual(span.attributes["error.type"], "TopicAuthorizationFailed")
