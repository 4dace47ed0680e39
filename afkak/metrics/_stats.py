"""The statistics a sensor feeds: Kafka's windowed and cumulative stats.

Windowed stats keep ``samples`` windows of ``window`` seconds each (Java's
``metrics.num.samples`` = 2 and ``metrics.sample.window.ms`` = 30 s); a
measurement combines the windows not older than ``samples * window``, as
Kafka's ``SampledStat`` does.  A stat with nothing recorded in its windows
measures NaN (Avg, Max) or 0 (sums, counts, rates), as in Java.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import attrs

NAN = math.nan


@attrs.frozen
class MetricConfig:
    """How windowed stats sample: ``samples`` windows of ``window`` seconds."""

    samples: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    window: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))


class Stat(Protocol):
    """Something a :class:`~afkak.metrics.Sensor` records values into."""

    def record(self, value: float, now: float) -> None: ...


class Measurable(Protocol):
    def measure(self, now: float) -> float: ...


class _Sample:
    __slots__ = ("start", "value", "count")

    def __init__(self, start: float, initial: float) -> None:
        self.start = start
        self.value = initial
        self.count = 0


class SampledStat:
    """A stat kept in a ring of time windows (Kafka's ``SampledStat``)."""

    INITIAL = 0.0

    def __init__(self, config: MetricConfig) -> None:
        self._window = config.window
        self._samples = config.samples
        self._ring: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now: float) -> None:
        ring = self._ring
        if not ring:
            ring.append(_Sample(now, self.INITIAL))
        sample = ring[self._current]
        if now >= sample.start + self._window:
            sample = self._advance(now)
        self._update(sample, value)
        sample.count += 1

    def _advance(self, now: float) -> _Sample:
        self._current = (self._current + 1) % self._samples
        ring = self._ring
        if self._current >= len(ring):
            sample = _Sample(now, self.INITIAL)
            ring.append(sample)
        else:
            sample = ring[self._current]
            sample.start, sample.value, sample.count = now, self.INITIAL, 0
        return sample

    def _purge(self, now: float) -> None:
        """Reset the windows too old to count (Kafka's ``purgeObsoleteSamples``)."""
        max_age = self._samples * self._window
        for sample in self._ring:
            if now - sample.start >= max_age:
                sample.start, sample.value, sample.count = now, self.INITIAL, 0

    def measure(self, now: float) -> float:
        self._purge(now)
        return self._combine(self._ring)

    def oldest_start(self, now: float) -> float:
        """When the oldest live window started (``now`` when there is none)."""
        self._purge(now)
        return min((s.start for s in self._ring), default=now)

    def _update(self, sample: _Sample, value: float) -> None:
        raise NotImplementedError

    def _combine(self, ring: list[_Sample]) -> float:
        raise NotImplementedError


class Avg(SampledStat):
    """The mean of the values recorded in the live windows."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, ring: list[_Sample]) -> float:
        count = sum(s.count for s in ring)
        return sum(s.value for s in ring) / count if count else NAN


class Max(SampledStat):
    """The largest value recorded in the live windows."""

    INITIAL = -math.inf

    def _update(self, sample: _Sample, value: float) -> None:
        if value > sample.value:
            sample.value = value

    def _combine(self, ring: list[_Sample]) -> float:
        live = [s.value for s in ring if s.count]
        return max(live) if live else NAN


class WindowedSum(SampledStat):
    """The sum of the values recorded in the live windows."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def _combine(self, ring: list[_Sample]) -> float:
        return sum(s.value for s in ring)


class WindowedCount(WindowedSum):
    """The number of values recorded in the live windows."""

    def _update(self, sample: _Sample, value: float) -> None:
        sample.value += 1


class Rate:
    """Per second: a windowed sum (or count) over the time its windows span.

    As Kafka's ``Rate``: the elapsed time is at least ``samples - 1`` full
    windows, so a first burst does not read as a huge rate.
    """

    def __init__(self, config: MetricConfig, *, count: bool = False) -> None:
        self._window = config.window
        self._samples = config.samples
        self.stat: SampledStat = WindowedCount(config) if count else WindowedSum(config)

    def record(self, value: float, now: float) -> None:
        self.stat.record(value, now)

    def measure(self, now: float) -> float:
        value = self.stat.measure(now)
        elapsed = now - self.stat.oldest_start(now)
        full = int(elapsed / self._window)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window
        return value / max(elapsed, 0.001)


class CumulativeSum:
    """The sum of every value ever recorded (Kafka's ``CumulativeSum``, the ``-total`` metrics)."""

    def __init__(self) -> None:
        self.total = 0.0

    def record(self, value: float, now: float) -> None:
        self.total += value

    def measure(self, now: float) -> float:
        return self.total


class CumulativeCount(CumulativeSum):
    """How many values were ever recorded."""

    def record(self, value: float, now: float) -> None:
        self.total += 1


class Value:
    """The last value recorded (NaN before any)."""

    def __init__(self) -> None:
        self.value = NAN

    def record(self, value: float, now: float) -> None:
        self.value = value

    def measure(self, now: float) -> float:
        return self.value


class Gauge:
    """A value read when measured, from a function of the time (connection-count ...)."""

    def __init__(self, read: Callable[[float], float]) -> None:
        self._read = read

    def measure(self, now: float) -> float:
        return float(self._read(now))
