"""OpenTelemetry metrics of an afkak metrics registry (``pip install afkak[otel]``).

:func:`instrument` creates one observable instrument per afkak metric name on
an OpenTelemetry ``Meter``; each collection reads the registry's current
values, one observation per tag set::

    from opentelemetry import metrics
    from afkak.metrics.otel import instrument

    instrument(client, metrics.get_meter_provider())

Names are ``afkak.``, the group without its ``-metrics`` suffix, a dot and
the metric name with underscores (``record-send-total`` of
``producer-metrics`` is ``afkak.producer.record_send_total``); tags are
attributes (``client_id``, ``node_id``, ``topic``, ``partition``,
``group_id``).  ``-total`` metrics are observable counters, the others
observable gauges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import (
    CallbackOptions,
    Meter,
    MeterProvider,
    Observation,
    get_meter_provider,
)

from ._registry import MetricName, Metrics, registry_of
from ._sensors import ConnectionSensors, ConsumerSensors, GroupSensors, ProducerSensors

__all__ = ["instrument", "otel_name"]


class _Catalogue:
    """A stand-in reactor for listing the metric names the sensor sets register."""

    @staticmethod
    def seconds() -> float:
        return 0.0


def _catalogue() -> dict[tuple[str, str], str]:
    """(group, name) -> description of every metric afkak's layers register."""
    scratch = Metrics(_Catalogue())
    ConnectionSensors(scratch, 0)
    producer = ProducerSensors(scratch)
    producer.buffer(0, lambda: 0)
    producer.written("t", 0, 0)  # the per-topic metrics
    ConsumerSensors(scratch).position("t", 0, 0, 0, 0)
    ConsumerSensors(scratch).lead("t", 0, 0, 0)
    GroupSensors(scratch, "g").member(lambda: 0)
    names = {(m.group, m.name): m.description for m in scratch.names()}
    names["client-metrics", "connection-count"] = "Open connections"
    return names


def otel_name(metric: MetricName, prefix: str = "afkak") -> str:
    """``afkak.producer.record_send_total`` for ``record-send-total`` of ``producer-metrics``."""
    group = metric.group.removesuffix("-metrics").replace("-", "_")
    return f"{prefix}.{group}.{metric.name.replace('-', '_')}"


def instrument(
    source: Any, meter_provider: MeterProvider | None = None, prefix: str = "afkak"
) -> Meter:
    """Observe every afkak metric of *source* (a client or a registry) on a new Meter.

    :returns: the ``Meter`` (``afkak``) the instruments were made on.
    """
    registry = source if isinstance(source, Metrics) else registry_of(source)
    provider = get_meter_provider() if meter_provider is None else meter_provider
    meter = provider.get_meter("afkak")
    for (group, name), description in sorted(_catalogue().items()):
        metric = MetricName(name, group)
        make = (
            meter.create_observable_counter
            if name.endswith("-total")
            else (meter.create_observable_gauge)
        )
        make(otel_name(metric, prefix), [_observer(registry, group, name)], description=description)
    return meter


def _observer(
    registry: Metrics, group: str, name: str
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def observe(options: CallbackOptions) -> Iterable[Observation]:
        for metric, value in registry.metrics(group).items():
            if metric.name == name and not math.isnan(value):
                attributes = {k.replace("-", "_"): v for k, v in metric.tags.items()}
                yield Observation(value, attributes)

    return observe
