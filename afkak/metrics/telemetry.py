"""A registry's metrics as OpenTelemetry ``MetricsData`` (OTLP protobuf), for KIP-714.

Names follow KIP-714 and Java's ``TelemetryMetricNamingConvention``:
``org.apache.kafka.``, the group without ``-metrics`` and the metric name,
dashes made dots (``record-queue-time-avg`` of ``producer-metrics`` is
``org.apache.kafka.producer.record.queue.time.avg``); tags become attributes in
snake_case, ``client-id`` excepted (a resource attribute).  afkak keeps its
connection metrics in ``client-metrics``/``client-node-metrics`` (one client
serves producers and consumers alike): they are pushed under the roles the
client plays, ``producer``/``producer.node`` and ``consumer``/``consumer.node``,
as Java's producer and consumer each report theirs.  As in Java, ``-total``
metrics are monotonic sums (cumulative, or deltas when the subscription asks),
everything else gauges.

The protobuf is written by hand (:func:`encode`), not with
``opentelemetry-proto``: pushing is on by default, as in Java, so it cannot
depend on an optional extra, and the handful of messages involved (MetricsData,
ResourceMetrics, ScopeMetrics, Metric, Gauge, Sum, NumberDataPoint, KeyValue)
do not justify the protobuf runtime as a dependency of every install.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence

import attrs

from ._registry import MetricName, Metrics
from ._sensors import CLIENT, NODE

__all__ = [
    "Collector",
    "Point",
    "encode",
    "telemetry_names",
]

PREFIX = "org.apache.kafka"
#: OTLP's AggregationTemporality.
DELTA, CUMULATIVE = 1, 2


@attrs.frozen
class Point:
    """One metric's value at one time, as pushed."""

    name: str
    description: str
    value: float
    attributes: tuple[tuple[str, str], ...]
    time_ns: int
    #: Sums only: the start of the interval the value covers.
    start_ns: int | None = None
    temporality: int = CUMULATIVE

    @property
    def is_sum(self) -> bool:
        return self.start_ns is not None


def telemetry_names(metric: MetricName, roles: Iterable[str]) -> list[str]:
    """KIP-714 names of *metric*: one per role for the client's connection metrics."""
    name = metric.name.lower().replace("-", ".")
    if metric.group == CLIENT:
        return [f"{PREFIX}.{role}.{name}" for role in roles]
    if metric.group == NODE:
        return [f"{PREFIX}.{role}.node.{name}" for role in roles]
    group = metric.group.lower().removesuffix("-metrics").replace("-", ".")
    return [f"{PREFIX}.{group}.{name}"]


def roles_of(registry: Metrics) -> list[str]:
    """``producer`` and/or ``consumer``, by the layers recording into *registry*."""
    groups = {m.group for m in registry.names()}
    roles = [
        role
        for role, prefix in (("producer", "producer-"), ("consumer", "consumer-"))
        if any(g.startswith(prefix) for g in groups)
    ]
    return roles or ["admin"]


def selected(name: str, requested: Sequence[str]) -> bool:
    """Whether a subscription's requested prefixes take *name* (``""``/``"*"``: all)."""
    return any(not p or p == "*" or name.startswith(p) for p in requested)


class Collector:
    """Reads a registry into points, keeping what delta sums need between pushes."""

    def __init__(self, registry: Metrics) -> None:
        self._registry = registry
        self._first_seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, float]] = {}

    def reset(self) -> None:
        """A new subscription: sums start over (its temporality may differ)."""
        self._first_seen.clear()
        self._last.clear()

    def collect(self, requested: Sequence[str], delta: bool) -> list[Point]:
        registry = self._registry
        now_ns = int(registry.seconds() * 1e9)
        roles = roles_of(registry)
        points = []
        for metric, value in registry.metrics().items():
            if math.isnan(value) or math.isinf(value):
                continue
            attributes = tuple(
                (k.replace("-", "_"), v) for k, v in metric.tags.items() if k != "client-id"
            )
            for name in telemetry_names(metric, roles):
                if not selected(name, requested):
                    continue
                if not metric.name.endswith("-total"):
                    points.append(Point(name, metric.description, value, attributes, now_ns))
                    continue
                key = (name, attributes)
                start = self._first_seen.setdefault(key, now_ns)
                if delta:
                    last_ns, last = self._last.get(key, (start, 0.0))
                    self._last[key] = (now_ns, value)
                    points.append(
                        Point(
                            name, metric.description, value - last, attributes, now_ns,
                            last_ns, DELTA,
                        )
                    )  # fmt: skip
                else:
                    points.append(Point(name, metric.description, value, attributes, now_ns, start))
        return points


# -- protobuf, by hand ---------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, text: str) -> bytes:
    return _field(number, text.encode("utf-8")) if text else b""


def _fixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<Q", value)


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", value)


def _uint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _key_value(key: str, value: str) -> bytes:
    any_value = _field(1, value.encode("utf-8"))  # AnyValue.string_value
    return _field(1, key.encode("utf-8")) + _field(2, any_value)


def _metric(point: Point) -> bytes:
    data_point = b"".join(_field(7, _key_value(k, v)) for k, v in point.attributes)
    if point.start_ns is not None:
        data_point += _fixed64(2, point.start_ns)
    data_point += _fixed64(3, point.time_ns) + _double(4, point.value)
    body = _text(1, point.name) + _text(2, point.description)
    if point.is_sum:
        # Sum: data_points, aggregation_temporality, is_monotonic.
        body += _field(7, _field(1, data_point) + _uint(2, point.temporality) + _uint(3, 1))
    else:
        body += _field(5, _field(1, data_point))  # Gauge: data_points
    return body


def encode(points: Iterable[Point], resource: Mapping[str, str], scope: str, version: str) -> bytes:
    """``MetricsData`` with one ResourceMetrics (*resource* attributes) of one scope."""
    scope_metrics = _field(1, _text(1, scope) + _text(2, version))
    scope_metrics += b"".join(_field(2, _metric(p)) for p in points)
    resource_message = b"".join(_field(1, _key_value(k, v)) for k, v in resource.items())
    resource_metrics = _field(1, resource_message) + _field(2, scope_metrics)
    return _field(1, resource_metrics)
