"""Metrics in the Java client's model: a registry of named, tagged metrics fed by sensors.

One :class:`Metrics` registry belongs to a :class:`~afkak.client.KafkaClient`
(``client.metrics_registry``); the producer, consumers, groups and admin
client on it record into it, on the client's reactor clock.
``client.metrics()`` (and the producer's, consumer's, group's) returns
``{MetricName: value}``.  See :doc:`/monitoring` for the list.
"""

from afkak.metrics._registry import Measured, MetricName, Metrics, registry_of
from afkak.metrics._sensors import (
    CLIENT,
    COORDINATOR,
    FETCH,
    NODE,
    PRODUCER,
    PRODUCER_TOPIC,
    ConnectionSensors,
    ConsumerSensors,
    GroupSensors,
    ProducerSensors,
    node_tag,
)
from afkak.metrics._stats import Avg, Gauge, Max, MetricConfig, Rate, Sensor, Total, Value

__all__ = [
    "CLIENT",
    "COORDINATOR",
    "FETCH",
    "NODE",
    "PRODUCER",
    "PRODUCER_TOPIC",
    "Avg",
    "ConnectionSensors",
    "ConsumerSensors",
    "Gauge",
    "GroupSensors",
    "Max",
    "Measured",
    "MetricConfig",
    "MetricName",
    "Metrics",
    "ProducerSensors",
    "Rate",
    "Sensor",
    "Total",
    "Value",
    "node_tag",
    "registry_of",
]
