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

from ._stats import Avg, Gauge, Max, Measurable, MetricConfig, Rate, Sensor, Total, Value


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
        #: The reactor's ``seconds()``: the sensors' clock (called directly: a hot path).
        self.seconds: Callable[[], float] = reactor.seconds
        self.client_id = client_id
        self.config = MetricConfig() if config is None else config
        self._metrics: dict[MetricName, Measurable] = {}
        self._sensors: dict[str, Sensor] = {}
        self._owned: dict[str, list[MetricName]] = {}
        self._shared: dict[Any, Any] = {}

    def shared(self, factory: Callable[..., T], *args: Any) -> T:
        """The one ``factory(self, *args)`` of this registry (a layer's sensors, per tag set)."""
        key = (factory, args)
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = factory(self, *args)
        return found

    def sensor(self, name: str, *parents: Sensor) -> Sensor:
        """The sensor called *name*, made (with these parents) on first use."""
        sensor = self._sensors.get(name)
        if sensor is None:
            sensor = self._sensors[name] = Sensor(name, self._seconds, self.config, parents)
            self._owned[name] = []
        return sensor

    def add(self, metric: MetricName, stat: Measurable, sensor: Sensor) -> None:
        """Publish *stat* (read from *sensor*) as *metric*, unless that name is taken."""
        if metric not in self._metrics:
            self._metrics[metric] = stat
            self._owned[sensor.name].append(metric)

    def add_gauge(self, metric: MetricName, read: Callable[[float], float]) -> None:
        """Publish a value read when measured (``read(now)``), replacing any under that name."""
        self._metrics[metric] = Gauge(read)

    def remove_metric(self, metric: MetricName) -> None:
        self._metrics.pop(metric, None)

    def remove_sensor(self, name: str, *parents: Sensor) -> None:
        """Forget a sensor (a child of *parents*) and the metrics read from it."""
        sensor = self._sensors.pop(name, None)
        if sensor is not None:
            for parent in parents:
                parent.drop_child(sensor)
        for metric in self._owned.pop(name, ()):
            self._metrics.pop(metric, None)

    # -- the stat shapes Kafka's clients use --------------------------------------

    def add_avg(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add(MetricName(f"{name}-avg", group, f"The average {what}", tags), Avg(sensor), sensor)

    def add_max(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add(MetricName(f"{name}-max", group, f"The maximum {what}", tags), Max(sensor), sensor)

    def add_avg_max(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        """``<name>-avg`` and ``<name>-max`` of the values recorded."""
        self.add_avg(sensor, name, group, what, tags)
        self.add_max(sensor, name, group, what, tags)

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
        rate = MetricName(f"{name}-rate", group, f"The number of {what} per second", tags)
        self.add(rate, Rate(sensor, count), sensor)
        total = MetricName(f"{name}-total", group, f"The total number of {what}", tags)
        self.add(total, Total(sensor, count), sensor)

    def add_value(
        self, sensor: Sensor, name: str, group: str, what: str, tags: Mapping[str, str]
    ) -> None:
        self.add(MetricName(name, group, what, tags), Value(sensor), sensor)

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
    # (getattr, not isinstance(client, Measured): a Protocol check costs tens of
    # microseconds, paid by each of a group's thousand Consumers.)
    registry = getattr(client, "metrics_registry", None)
    if isinstance(registry, Metrics):
        return registry
    return Metrics(client.reactor, client_id=getattr(client, "clientId", "afkak"))
