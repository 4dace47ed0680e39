"""The metrics registry: named metrics, and the sensors that feed them (Kafka's model).

A :class:`MetricName` is a name, a group (``producer-metrics``,
``consumer-fetch-manager-metrics`` ...), a description and tags
(``client-id``, ``node-id``, ``topic``, ``partition``).  A :class:`Sensor`
records values into stats, each stat published under its own name; a sensor
may have parents (a per-node sensor feeds its client-wide one) so one
``record`` updates both.  Time is the injected reactor's ``seconds()``: Clock
tests step through windows.  One :class:`Metrics` belongs to one
:class:`~afkak.client.KafkaClient` and is shared by the producer, consumers,
groups and admin client built on it: no module-global registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs

from ._stats import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Gauge,
    Max,
    Measurable,
    MetricConfig,
    Rate,
    Stat,
    Value,
)


def _frozen_tags(
    tags: Mapping[str, str] | Iterable[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    pairs = tags.items() if isinstance(tags, Mapping) else tags
    return tuple(sorted((str(k), str(v)) for k, v in pairs))


@attrs.frozen
class MetricName:
    """A metric's identity, as Kafka's ``MetricName``: equal by name, group and tags."""

    name: str
    group: str
    description: str = attrs.field(default="", eq=False, repr=False)
    _tags: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_frozen_tags)

    @property
    def tags(self) -> dict[str, str]:
        return dict(self._tags)


class Sensor:
    """Records values into its stats (and its parents'), at the reactor's time.

    Hot paths record once per request, batch or fetch, never per record.
    """

    __slots__ = ("name", "_stats", "_parents", "_seconds", "_config")

    def __init__(
        self,
        name: str,
        seconds: Callable[[], float],
        config: MetricConfig,
        parents: tuple[Sensor, ...],
    ) -> None:
        self.name = name
        self._stats: list[Stat] = []
        self._parents = parents
        self._seconds = seconds
        self._config = config

    def record(self, value: float = 1.0) -> None:
        now = self._seconds()
        for stat in self._stats:
            stat.record(value, now)
        for parent in self._parents:
            parent.record_at(value, now)

    def record_at(self, value: float, now: float) -> None:
        for stat in self._stats:
            stat.record(value, now)
        for parent in self._parents:
            parent.record_at(value, now)


T = TypeVar("T")


class Metrics:
    """A registry of metrics and sensors on one reactor's clock.

    :param reactor: provides ``seconds()``.
    :param config: the windows of the windowed stats (Java's defaults: 2 of 30 s).
    :param client_id: the ``client-id`` tag of the metrics the layers register.
    """

    def __init__(
        self, reactor: Any, config: MetricConfig | None = None, *, client_id: str = "afkak"
    ) -> None:
        self._seconds: Callable[[], float] = reactor.seconds
        self.client_id = client_id
        self.config = MetricConfig() if config is None else config
        self._metrics: dict[MetricName, Measurable] = {}
        self._sensors: dict[str, Sensor] = {}
        self._owned: dict[str, list[MetricName]] = {}
        self._shared: dict[Any, Any] = {}

    def seconds(self) -> float:
        return self._seconds()

    def shared(self, factory: Callable[..., T], *args: Any) -> T:
        """The one ``factory(self, *args)`` of this registry (a layer's sensors, per tag set)."""
        key = (factory, args)
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = factory(self, *args)
        return found

    def get_sensor(self, name: str) -> Sensor | None:
        return self._sensors.get(name)

    def sensor(self, name: str, *parents: Sensor) -> Sensor:
        """The sensor called *name*, made (with these parents) on first use."""
        sensor = self._sensors.get(name)
        if sensor is None:
            sensor = self._sensors[name] = Sensor(name, self._seconds, self.config, parents)
            self._owned[name] = []
        return sensor

    def add_stat(self, sensor: Sensor, metric: MetricName, stat: Any) -> None:
        """Publish *stat* (a Stat with ``measure``) as *metric*, fed by *sensor*."""
        if metric in self._metrics:
            return
        sensor._stats.append(stat)
        self._metrics[metric] = stat
        self._owned[sensor.name].append(metric)

    def add_gauge(self, metric: MetricName, read: Callable[[float], float]) -> None:
        """Publish a value read when measured (``read(now)``), replacing any under that name."""
        self._metrics[metric] = Gauge(read)

    def remove_metric(self, metric: MetricName) -> None:
        self._metrics.pop(metric, None)

    def remove_sensor(self, name: str) -> None:
        """Forget a sensor and the metrics it fed (a departed broker, a revoked partition)."""
        self._sensors.pop(name, None)
        for metric in self._owned.pop(name, ()):
            self._metrics.pop(metric, None)

    # -- the stat shapes Kafka's clients use --------------------------------------

    def add_avg_max(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        """``<name>-avg`` and ``<name>-max`` of the values recorded."""
        config = self.config
        self.add_stat(
            sensor, MetricName(f"{name}-avg", group, f"The average {what}", tags), Avg(config)
        )
        self.add_stat(
            sensor, MetricName(f"{name}-max", group, f"The maximum {what}", tags), Max(config)
        )

    def add_avg(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add_stat(
            sensor, MetricName(f"{name}-avg", group, f"The average {what}", tags), Avg(self.config)
        )

    def add_max(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add_stat(
            sensor, MetricName(f"{name}-max", group, f"The maximum {what}", tags), Max(self.config)
        )

    def add_meter(
        self,
        sensor: Sensor,
        name: str,
        group: str,
        what: str,
        tags: Mapping[str, str],
        *,
        count: bool = False,
    ) -> None:
        """``<name>-rate`` (per second) and ``<name>-total``, as Kafka's ``Meter``.

        With *count*, each record counts 1 (request-rate); else its value is
        summed (byte-rate, record-send-rate recorded once per batch).
        """
        config = self.config
        self.add_stat(
            sensor,
            MetricName(f"{name}-rate", group, f"The number of {what} per second", tags),
            Rate(config, count=count),
        )
        self.add_stat(
            sensor,
            MetricName(f"{name}-total", group, f"The total number of {what}", tags),
            CumulativeCount() if count else CumulativeSum(),
        )

    def add_value(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add_stat(sensor, MetricName(name, group, what, tags), Value())

    # -- reading ---------------------------------------------------------------------

    def metric(self, metric: MetricName) -> float:
        """The current value of one metric; :exc:`KeyError` if it is not registered."""
        return self._metrics[metric].measure(self._seconds())

    def names(self) -> list[MetricName]:
        return list(self._metrics)

    def metrics(self, *groups: str) -> dict[MetricName, float]:
        """Each metric's current value (of *groups* only, if given), as Java's ``metrics()``."""
        now = self._seconds()
        return {
            name: stat.measure(now)
            for name, stat in list(self._metrics.items())
            if not groups or name.group in groups
        }


@runtime_checkable
class Measured(Protocol):
    """A client with a metrics registry (:class:`~afkak.client.KafkaClient`)."""

    metrics_registry: Metrics


def registry_of(client: Any) -> Metrics:
    """*client*'s registry; a registry of its own for a client that keeps none (a test double)."""
    if isinstance(client, Measured):
        return client.metrics_registry
    return Metrics(client.reactor, client_id=getattr(client, "clientId", "afkak"))
