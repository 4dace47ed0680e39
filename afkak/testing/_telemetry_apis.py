"""Client telemetry (KIP-714) on the fake cluster: GetTelemetrySubscriptions, PushTelemetry.

Kafka advertises these APIs only with a client-telemetry plugin, and so does
the fake: after :meth:`~afkak.testing.FakeKafkaCluster.enable_client_telemetry`,
which returns the :class:`FakeClientTelemetry` that holds the subscription and
records each push (decompressed, with its metrics decoded by
:func:`decode_metrics`).  The checks are Kafka's ``ClientMetricsManager``'s:
the subscription id must be current, the compression accepted, the payload
within the size limit, and a push (unless terminating) no earlier than the
push interval after the previous one.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from afkak import codec
from afkak._broker_errors import (
    TelemetryTooLarge,
    ThrottlingQuotaExceeded,
    UnknownSubscriptionId,
    UnsupportedCompressionType,
)
from afkak.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from afkak.testing._lookup import code

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext

GET_SUBSCRIPTIONS = GetTelemetrySubscriptionsRequest.API_KEY
PUSH = PushTelemetryRequest.API_KEY


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


def handle_get_telemetry_subscriptions(
    ctx: RequestContext, request: GetTelemetrySubscriptionsRequest, version: int
) -> GetTelemetrySubscriptionsResponse:
    telemetry = ctx.state.telemetry
    assert telemetry is not None  # only advertised once enabled
    instance = request.client_instance_id
    if instance == uuid.UUID(int=0):
        instance = uuid.UUID(int=len(telemetry.instances) + 1)
    telemetry.instances.setdefault(instance, None)
    return GetTelemetrySubscriptionsResponse(
        client_instance_id=instance,
        subscription_id=telemetry.subscription_id,
        accepted_compression_types=list(telemetry.accepted_compression_types),
        push_interval_ms=telemetry.push_interval_ms,
        telemetry_max_bytes=telemetry.telemetry_max_bytes,
        delta_temporality=telemetry.delta_temporality,
        requested_metrics=list(telemetry.metrics),
    )


def handle_push_telemetry(
    ctx: RequestContext, request: PushTelemetryRequest, version: int
) -> PushTelemetryResponse:
    telemetry = ctx.state.telemetry
    assert telemetry is not None
    now = ctx.state.reactor.seconds()
    last = telemetry.instances.get(request.client_instance_id)
    if request.subscription_id != telemetry.subscription_id:
        error = code(UnknownSubscriptionId)
    elif request.compression_type and (
        request.compression_type not in telemetry.accepted_compression_types
    ):
        error = code(UnsupportedCompressionType)
    elif len(request.metrics) > telemetry.telemetry_max_bytes:
        error = code(TelemetryTooLarge)
    elif (
        not request.terminating
        and last is not None
        and now - last < telemetry.push_interval_ms / 1000.0
    ):
        error = code(ThrottlingQuotaExceeded)
    else:
        telemetry.instances[request.client_instance_id] = now
        data = request.metrics
        if request.compression_type:
            data = codec.decompress(request.compression_type, data)
        telemetry.pushes.append(
            Push(
                request.client_instance_id,
                request.subscription_id,
                request.terminating,
                request.compression_type,
                data,
                now,
            )
        )
        error = 0
    return PushTelemetryResponse(error_code=error)


TELEMETRY_APIS: dict[int, Callable[[Any, Any, int], Any]] = {
    GET_SUBSCRIPTIONS: handle_get_telemetry_subscriptions,
    PUSH: handle_push_telemetry,
}


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
