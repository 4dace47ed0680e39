"""OpenTelemetry tracing of produced and consumed records (``pip install afkak[otel]``).

Spans follow OpenTelemetry's messaging semantic conventions: a ``send
<topic>`` span (kind PRODUCER) per record sent, ended when the broker
acknowledges it (with its partition and offset) or the send fails; its
context travels in the record's W3C ``traceparent`` (and ``tracestate``)
header; a ``process <topic>`` span (kind CONSUMER) around each call of a
consumer's processor, linked to the send span of every record in the block
(the convention for batches: links, not a parent), with the block's size.
The consumer may run in another process, with another tracer provider: the
link is read back from the record headers alone.

::

    from afkak.tracing import KafkaTracing

    tracing = KafkaTracing()                     # the global tracer provider
    d = tracing.send(producer, "orders", b"...", key=b"42")
    group = ConsumerGroup(client, "billing", ["orders"], tracing.processor(process))

A wrapper rather than hooks in the producer and consumer: nothing on their hot
paths changes for applications that do not trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.python.failure import Failure

from afkak._version import __version__

__all__ = ["KafkaTracing"]

Headers = list[tuple[str, bytes | None]]


class _HeaderSetter(Setter[Headers]):
    def set(self, carrier: Headers, key: str, value: str) -> None:
        carrier[:] = [(k, v) for k, v in carrier if k != key]
        carrier.append((key, value.encode("ascii")))


class _HeaderGetter(Getter[Sequence[tuple[str, bytes | None]]]):
    def get(self, carrier: Sequence[tuple[str, bytes | None]], key: str) -> list[str] | None:
        found = [v.decode("ascii", "replace") for k, v in carrier if k == key and v is not None]
        return found or None

    def keys(self, carrier: Sequence[tuple[str, bytes | None]]) -> list[str]:
        return [k for k, _ in carrier]


_SET, _GET = _HeaderSetter(), _HeaderGetter()


class KafkaTracing:
    """Traced sends and processors on one tracer provider (the global one by default)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("afkak", __version__, tracer_provider)
        self._propagator = TraceContextTextMapPropagator()

    def send(
        self,
        producer: Any,
        topic: str,
        value: Any,
        key: Any = None,
        *,
        headers: Iterable[tuple[str, bytes | None]] = (),
        **options: Any,
    ) -> Deferred[Any]:
        """``producer.send(...)`` in a ``send <topic>`` span, its context in the headers."""
        attributes: dict[str, Any] = {
            "messaging.system": "kafka",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.destination.name": topic,
            "messaging.client.id": getattr(producer.client, "clientId", ""),
        }
        if isinstance(key, bytes):
            attributes["messaging.kafka.message.key"] = key.decode("utf-8", "replace")
        span = self._tracer.start_span(
            f"send {topic}", kind=SpanKind.PRODUCER, attributes=attributes
        )
        carried: Headers = list(headers)
        self._propagator.inject(carried, trace.set_span_in_context(span), _SET)
        d = maybeDeferred(producer.send, topic, value, key, headers=carried, **options)

        def sent(metadata: Any) -> Any:
            partition = getattr(metadata, "partition", None)
            if partition is not None:
                span.set_attribute("messaging.destination.partition.id", str(partition))
            offset = getattr(metadata, "offset", None)
            if offset is not None:
                span.set_attribute("messaging.kafka.offset", offset)
            span.end()
            return metadata

        def failed(failure: Failure) -> Failure:
            span.record_exception(failure.value)
            span.set_status(Status(StatusCode.ERROR, str(failure.value)))
            span.set_attribute("error.type", type(failure.value).__qualname__)
            span.end()
            return failure

        return d.addCallbacks(sent, failed)

    def processor(
        self, processor: Callable[[Any, list[Any]], Any]
    ) -> Callable[[Any, list[Any]], Any]:
        """*processor* (of a Consumer or ConsumerGroup) run in a ``process <topic>`` span,
        linked to each record's send span; the span ends when its result (a Deferred) fires."""
        tracer, propagator = self._tracer, self._propagator

        def traced(consumer: Any, messages: list[Any]) -> Any:
            topic = messages[0].topic if messages else getattr(consumer, "topic", "")
            links = []
            for sourced in messages:
                context = propagator.extract(sourced.message.headers, getter=_GET)
                span_context = trace.get_current_span(context).get_span_context()
                if span_context.is_valid:
                    links.append(Link(span_context))
            attributes: dict[str, Any] = {
                "messaging.system": "kafka",
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": topic,
                "messaging.batch.message_count": len(messages),
                "messaging.client.id": getattr(getattr(consumer, "client", None), "clientId", ""),
            }
            if messages:
                attributes["messaging.destination.partition.id"] = str(messages[0].partition)
            group = getattr(consumer, "consumer_group", None)
            if group:
                attributes["messaging.consumer.group.name"] = group
            span = tracer.start_span(
                f"process {topic}", kind=SpanKind.CONSUMER, links=links, attributes=attributes
            )
            with trace.use_span(span, end_on_exit=False, record_exception=False):
                try:
                    result = processor(consumer, messages)
                except BaseException as exc:
                    span.record_exception(exc)
                    span.set_status(Status(StatusCode.ERROR, str(exc)))
                    span.end()
                    raise
            if not isinstance(result, Deferred):
                span.end()
                return result

            def done(outcome: Any) -> Any:
                if isinstance(outcome, Failure):
                    span.record_exception(outcome.value)
                    span.set_status(Status(StatusCode.ERROR, str(outcome.value)))
                span.end()
                return outcome

            return result.addBoth(done)

        return traced
