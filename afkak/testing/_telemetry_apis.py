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

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from afkak.testing._telemetry_state import Push

if TYPE_CHECKING:
    from afkak.testing._cluster_state import RequestContext

GET_SUBSCRIPTIONS = GetTelemetrySubscriptionsRequest.API_KEY
PUSH = PushTelemetryRequest.API_KEY


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
