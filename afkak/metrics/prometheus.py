"""A prometheus_client collector of an afkak metrics registry (``pip install afkak[prometheus]``).

Register it with a ``prometheus_client`` registry (the default ``REGISTRY`` or
your own) and every scrape reads the registry's current values::

    from prometheus_client import REGISTRY, start_http_server
    from afkak.metrics.prometheus import AfkakCollector

    REGISTRY.register(AfkakCollector(client))
    start_http_server(9308)

Names follow the JMX exporter's habit for Kafka's Java clients: ``afkak_``, the
group without its ``-metrics`` suffix, the metric name, dashes made
underscores (``record-send-total`` of ``producer-metrics`` is
``afkak_producer_record_send_total``); tags are labels (``client_id``,
``node_id``, ``topic``, ``partition``, ``group_id``).  ``-total`` metrics are
counters, the others gauges.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ._registry import MetricName, Metrics, registry_of

__all__ = ["AfkakCollector", "prometheus_name"]


def prometheus_name(metric: MetricName, prefix: str = "afkak") -> str:
    """``afkak_producer_record_send_total`` for ``record-send-total`` of ``producer-metrics``."""
    group = metric.group.removesuffix("-metrics")
    return f"{prefix}_{group}_{metric.name}".replace("-", "_").replace(".", "_")


class AfkakCollector(Collector):
    """Collects an afkak :class:`~afkak.metrics.Metrics` registry at each scrape.

    :param source: a :class:`~afkak.client.KafkaClient` (its ``metrics_registry``)
        or a :class:`~afkak.metrics.Metrics`.
    :param prefix: the first part of every name.
    """

    def __init__(self, source: Any, prefix: str = "afkak") -> None:
        self._registry = source if isinstance(source, Metrics) else registry_of(source)
        self._prefix = prefix

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for metric, value in sorted(
            self._registry.metrics().items(), key=lambda item: (item[0].group, item[0].name)
        ):
            name = prometheus_name(metric, self._prefix)
            labels = {key.replace("-", "_"): v for key, v in metric.tags.items()}
            family = families.get(name)
            if family is None:
                kind = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
                family = families[name] = kind(
                    name, metric.description or metric.name, labels=sorted(labels)
                )
            family.add_metric([labels[k] for k in sorted(labels)], value)  # type: ignore[attr-defined]
        yield from families.values()
