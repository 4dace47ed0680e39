"""What sensors keep, and the statistics read from it: Kafka's windowed and cumulative stats.

A sensor keeps ``samples`` windows of ``window`` seconds (Java's
``metrics.num.samples`` = 2 and ``metrics.sample.window.ms`` = 30 s), each
with the count, sum and maximum of the values recorded in it, plus the
cumulative count and sum and the last value.  Recording is one update of that
state, whatever number of statistics are published from it: the hot paths
record per request or batch.  A measurement combines the windows not older
than ``samples * window``, as Kafka's ``SampledStat`` does, over the sensor and
its children (a client-wide sensor reads its per-node ones: nothing is
recorded twice).  With nothing recorded in its windows, Avg and Max measure
NaN, sums, counts and rates 0, as in Java.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import attrs

NAN = math.nan
#: A window before its first record: start, count, sum, max.
_EMPTY_WINDOW = (-math.inf, 0.0, 0.0, -math.inf)


@attrs.frozen
class MetricConfig:
    """How sensors sample: ``samples`` windows of ``window`` seconds."""

    samples: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    window: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))


class Measurable(Protocol):
    def measure(self, now: float) -> float: ...


class Sensor:
    """Records values into its windows; its children's windows count in its measurements.

    Hot paths record per request, batch or fetch, never per record.  The
    windows are one flat list of floats and the children a tuple (empty:
    shared), so that a sensor is two objects for the cyclic GC to scan, not
    five: a consumer has two sensors per partition, and a process with a
    thousand partitions' consumers keeps thousands of them.
    """

    __slots__ = (
        "name",
        "children",
        "_seconds",
        "_window",
        "_samples",
        "_ring",
        "_at",
        "count",
        "total",
        "last",
    )

    def __init__(
        self,
        name: str,
        seconds: Callable[[], float],
        config: MetricConfig,
        parents: tuple[Sensor, ...] = (),
    ) -> None:
        self.name = name
        #: Sensors whose records this one's measurements include (per node, per topic).
        self.children: tuple[Sensor, ...] = ()
        self._seconds = seconds
        self._window = config.window
        self._samples = config.samples
        # Window i is _ring[4i:4i + 4]: start, count, sum, max; _at is where the
        # current one starts.  A window counts once something is recorded in it; the
        # first starts at the first record.
        self._ring = list(_EMPTY_WINDOW * config.samples)
        self._at = 0
        self.count = 0
        self.total = 0.0
        self.last = NAN
        for parent in parents:
            parent.children += (self,)

    def record(self, value: float = 1.0) -> None:
        self.record_at(value, self._seconds())

    def record_at(self, value: float, now: float) -> None:
        ring = self._ring
        at = self._at
        if now >= ring[at] + self._window:
            at = self._advance(now)
        ring[at + 1] += 1
        ring[at + 2] += value
        if value > ring[at + 3]:
            ring[at + 3] = value
        self.count += 1
        self.total += value
        self.last = value

    def _advance(self, now: float) -> int:
        ring = self._ring
        at = self._at
        if ring[at + 1]:  # else the first record, or an idle window: restart it
            at = self._at = (at + 4) % len(ring)
        ring[at] = now
        ring[at + 1] = ring[at + 2] = 0.0
        ring[at + 3] = -math.inf
        return at

    def drop_child(self, child: Sensor) -> None:
        self.children = tuple(c for c in self.children if c is not child)

    def _live(self, now: float) -> list[list[float]]:
        """The windows young enough to count (Kafka's ``purgeObsoleteSamples``), children's too."""
        live: list[list[float]] = []
        for sensor in (self, *self.children):
            max_age = sensor._samples * sensor._window
            ring = sensor._ring
            for at in range(0, len(ring), 4):
                if ring[at + 1] and now - ring[at] < max_age:
                    live.append(ring[at : at + 4])
        return live

    # -- measurements -------------------------------------------------------------

    def avg(self, now: float) -> float:
        live = self._live(now)
        count = sum(s[1] for s in live)
        return sum(s[2] for s in live) / count if count else NAN

    def max(self, now: float) -> float:
        return max((s[3] for s in self._live(now)), default=NAN)

    def rate(self, now: float, events: bool) -> float:
        """Per second, of the values' sum (or of the events) over the time the windows span.

        As Kafka's ``Rate``: the span is at least ``samples - 1`` full windows,
        so a first burst does not read as a huge rate.
        """
        live = self._live(now)
        value = sum(s[1] if events else s[2] for s in live)
        elapsed = now - min((s[0] for s in live), default=now)
        full = int(elapsed / self._window)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window
        return value / max(elapsed, 0.001)

    def cumulative(self, events: bool) -> float:
        sensors = (self, *self.children)
        return float(sum(s.count for s in sensors) if events else sum(s.total for s in sensors))


@attrs.frozen
class Avg:
    """The mean of the values recorded in the live windows."""

    sensor: Sensor

    def measure(self, now: float) -> float:
        return self.sensor.avg(now)


@attrs.frozen
class Max:
    """The largest value recorded in the live windows."""

    sensor: Sensor

    def measure(self, now: float) -> float:
        return self.sensor.max(now)


@attrs.frozen
class Rate:
    """Per second: of the values summed, or (``events``) of the records."""

    sensor: Sensor
    events: bool = False

    def measure(self, now: float) -> float:
        return self.sensor.rate(now, self.events)


@attrs.frozen
class Total:
    """The sum of every value ever recorded (Kafka's ``CumulativeSum``), or their count."""

    sensor: Sensor
    events: bool = False

    def measure(self, now: float) -> float:
        return self.sensor.cumulative(self.events)


@attrs.frozen
class Value:
    """The last value recorded (NaN before any)."""

    sensor: Sensor

    def measure(self, now: float) -> float:
        return self.sensor.last


class Gauge:
    """A value read when measured, from a function of the time (connection-count ...)."""

    def __init__(self, read: Callable[[float], float]) -> None:
        self._read = read

    def measure(self, now: float) -> float:
        return float(self._read(now))
