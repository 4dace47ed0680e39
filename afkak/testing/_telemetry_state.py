"""The fake cluster's client telemetry (KIP-714): the subscription, the pushes received,
and their OTLP metrics read back (a small protobuf reader, for tests)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import attrs


@attrs.frozen
class DataPoint:
    """One decoded OTLP number data point."""

    name: str
    value: float
    attributes: dict[str, str]
    time_ns: int
    start_ns: int
    #: "gauge" or "sum"; sums carry their temporality (1 delta, 2 cumulative).
    kind: str
    temporality: int = 0


@attrs.frozen
class Push:
    """One PushTelemetry the fake accepted."""

    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    #: The OTLP ``MetricsData``, decompressed.
    data: bytes
    at: float

    def points(self) -> list[DataPoint]:
        return decode_metrics(self.data)

    def resource(self) -> dict[str, str]:
        return decode_resource(self.data)


@attrs.define
class FakeClientTelemetry:
    """The fake cluster's client-metrics subscription, and the pushes it received."""

    metrics: list[str] = attrs.field(factory=lambda: [""])
    push_interval_ms: int = 30000
    accepted_compression_types: list[int] = attrs.field(factory=lambda: [4, 3, 1, 2])
    telemetry_max_bytes: int = 1048576
    delta_temporality: bool = True
    subscription_id: int = 1
    pushes: list[Push] = attrs.field(factory=list)
    instances: dict[uuid.UUID, float | None] = attrs.field(factory=dict)

    def subscribe(self, metrics: list[str], push_interval_ms: int | None = None) -> None:
        """A new subscription: clients' next pushes fail with UNKNOWN_SUBSCRIPTION_ID."""
        self.metrics = list(metrics)
        if push_interval_ms is not None:
            self.push_interval_ms = push_interval_ms
        self.subscription_id += 1


# -- OTLP, read back -----------------------------------------------------------------


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """A protobuf message's (field number, value) pairs: ints, or bytes for LEN fields."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, value))
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _attributes(fields: list[tuple[int, Any]], number: int) -> dict[str, str]:
    attributes = {}
    for n, kv in fields:
        if n == number:
            parts = dict(_fields(kv))
            attributes[parts[1].decode()] = dict(_fields(parts[2]))[1].decode()
    return attributes


def decode_resource(data: bytes) -> dict[str, str]:
    """The resource attributes of an OTLP ``MetricsData``'s first ResourceMetrics."""
    resource_metrics = dict(_fields(data))[1]
    resource = dict(_fields(resource_metrics)).get(1, b"")
    return _attributes(_fields(resource), 1)


def decode_metrics(data: bytes) -> list[DataPoint]:
    """The number data points of an OTLP ``MetricsData`` (gauges and sums)."""
    points = []
    for n, resource_metrics in _fields(data):
        if n != 1:
            continue
        for m, scope_metrics in _fields(resource_metrics):
            if m != 2:
                continue
            for k, metric in _fields(scope_metrics):
                if k != 2:
                    continue
                parts = _fields(metric)
                name = dict(parts)[1].decode()
                for kind_field, body in parts:
                    if kind_field not in (5, 7):
                        continue
                    body_fields = _fields(body)
                    temporality = dict(body_fields).get(2, 0)
                    for dp_field, dp in body_fields:
                        if dp_field == 1:
                            points.append(_point(name, kind_field, temporality, dp))
    return points


def _point(name: str, kind_field: int, temporality: int, dp: bytes) -> DataPoint:
    fields = _fields(dp)
    values = dict(fields)
    return DataPoint(
        name=name,
        value=struct.unpack("<d", values[4])[0],
        attributes=_attributes(fields, 7),
        time_ns=struct.unpack("<Q", values[3])[0],
        start_ns=struct.unpack("<Q", values[2])[0] if 2 in values else 0,
        kind="sum" if kind_field == 7 else "gauge",
        temporality=temporality,
    )
