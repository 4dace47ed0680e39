"""The metrics registry's arithmetic on a Clock: Kafka's windowed rates, averages and maxima."""

from __future__ import annotations

import math

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.metrics import MetricConfig, MetricName, Metrics, ProducerSensors, registry_of


class MetricNameTests(SynchronousTestCase):
    def test_equal_by_name_group_and_tags_not_description(self) -> None:
        a = MetricName(
            "request-rate", "client-metrics", "one", {"client-id": "c", "node-id": "node-1"}
        )
        b = MetricName(
            "request-rate", "client-metrics", "two", {"node-id": "node-1", "client-id": "c"}
        )
        self.assertEqual(a, b)
        self.assertEqual(hash(a), hash(b))
        self.assertEqual(a.tags, {"client-id": "c", "node-id": "node-1"})
        self.assertNotEqual(
            a, MetricName("request-rate", "client-metrics", tags={"client-id": "c"})
        )


class StatTests(SynchronousTestCase):
    """Java's defaults: two windows of 30 s."""

    def setUp(self) -> None:
        self.clock = Clock()
        self.metrics = Metrics(self.clock)
        self.sensor = self.metrics.sensor("s")
        self.metrics.add_avg_max(self.sensor, "x", "g", "x", {})
        self.metrics.add_meter(self.sensor, "y", "g", "y", {})
        self.metrics.add_meter(self.sensor, "n", "g", "n", {}, count=True)

    def value(self, name: str) -> float:
        return self.metrics.metric(MetricName(name, "g"))

    def test_nothing_recorded(self) -> None:
        self.assertTrue(math.isnan(self.value("x-avg")))
        self.assertTrue(math.isnan(self.value("x-max")))
        self.assertEqual(self.value("y-rate"), 0.0)
        self.assertEqual(self.value("y-total"), 0.0)

    def test_avg_max_total(self) -> None:
        for v in (10, 30, 20):
            self.sensor.record(v)
        self.assertEqual(self.value("x-avg"), 20.0)
        self.assertEqual(self.value("x-max"), 30.0)
        self.assertEqual(self.value("y-total"), 60.0)
        self.assertEqual(self.value("n-total"), 3.0)

    def test_rate_spans_at_least_one_full_window(self) -> None:
        """Java's Rate: 60 units in the first 10 s read as 60 / 30 s, not 60 / 10 s."""
        self.clock.advance(10)
        self.sensor.record(60)
        self.assertEqual(self.value("y-rate"), 2.0)
        self.assertEqual(self.value("n-rate"), 1 / 30)

    def test_rate_over_two_windows(self) -> None:
        self.sensor.record(30)  # window 1 starts at 0
        self.clock.advance(40)
        self.sensor.record(90)  # window 2 starts at 40
        # 120 units over the 40 s since the oldest window started (one full window).
        self.assertEqual(self.value("y-rate"), 3.0)

    def test_old_windows_expire(self) -> None:
        self.sensor.record(100)
        self.clock.advance(35)
        self.sensor.record(1)
        self.assertEqual(self.value("x-max"), 100.0)
        self.clock.advance(30)  # the first window is now 65 s old: beyond 2 x 30 s
        self.assertEqual(self.value("x-max"), 1.0)
        self.assertEqual(self.value("x-avg"), 1.0)
        self.clock.advance(60)
        self.assertTrue(math.isnan(self.value("x-max")))
        self.assertEqual(self.value("y-rate"), 0.0)
        self.assertEqual(self.value("y-total"), 101.0)  # cumulative: never expires

    def test_ring_reuses_windows(self) -> None:
        """A third window replaces the first: only the last two count."""
        for v in (1, 2, 3):
            self.sensor.record(v)
            self.clock.advance(31)
        self.clock.advance(-31 + 1)
        self.assertEqual(self.value("x-avg"), 2.5)

    def test_config_windows(self) -> None:
        clock = Clock()
        metrics = Metrics(clock, MetricConfig(samples=3, window=1.0))
        sensor = metrics.sensor("s")
        for _ in range(5):
            sensor.record(clock.seconds())
            clock.advance(1)
        # At 5 s the window started at 2 s is 3 x 1 s old: those of 3 and 4 s
        # remain, 7 (3 + 4) over the 2 s since the oldest began.
        self.assertEqual(sensor.rate(clock.seconds(), events=False), 3.5)
        self.assertEqual(sensor.rate(clock.seconds(), events=True), 1.0)
        self.assertEqual(sensor.avg(clock.seconds()), 3.5)
        self.assertRaises(ValueError, MetricConfig, samples=0)
        self.assertRaises(ValueError, MetricConfig, window=0)


class SensorTests(SynchronousTestCase):
    def test_parent_reads_its_children(self) -> None:
        metrics = Metrics(Clock())
        parent = metrics.sensor("all")
        metrics.add_meter(parent, "b", "g", "b", {})
        metrics.add_avg_max(parent, "b", "g", "b", {})
        one = metrics.sensor("one", parent)
        metrics.add_meter(one, "b", "g", "b", {"node-id": "node-1"})
        two = metrics.sensor("two", parent)
        one.record(5)
        one.record(7)
        two.record(12)
        values = metrics.metrics()
        self.assertEqual(values[MetricName("b-total", "g")], 24.0)
        self.assertEqual(values[MetricName("b-avg", "g")], 8.0)
        self.assertEqual(values[MetricName("b-max", "g")], 12.0)
        self.assertEqual(values[MetricName("b-total", "g", tags={"node-id": "node-1"})], 12.0)
        metrics.remove_sensor("two", parent)
        self.assertEqual(metrics.metric(MetricName("b-total", "g")), 12.0)

    def test_remove_sensor_drops_its_metrics(self) -> None:
        metrics = Metrics(Clock())
        s = metrics.sensor("one")
        metrics.add_value(s, "v", "g", "v", {})
        s.record(3)
        self.assertEqual(metrics.metrics("g"), {MetricName("v", "g"): 3.0})
        metrics.remove_sensor("one")
        self.assertEqual(metrics.metrics(), {})

    def test_gauge_is_read_when_measured(self) -> None:
        clock = Clock()
        metrics = Metrics(clock)
        metrics.add_gauge(MetricName("t", "g"), lambda now: now * 2)
        clock.advance(4)
        self.assertEqual(metrics.metrics(), {MetricName("t", "g"): 8.0})

    def test_metrics_filters_groups(self) -> None:
        metrics = Metrics(Clock())
        metrics.add_gauge(MetricName("a", "producer-metrics"), lambda now: 1)
        metrics.add_gauge(MetricName("b", "producer-topic-metrics"), lambda now: 2)
        metrics.add_gauge(MetricName("c", "client-metrics"), lambda now: 3)
        self.assertEqual(
            sorted(n.name for n in metrics.metrics("producer-metrics", "producer-topic-metrics")),
            ["a", "b"],
        )


class SharedTests(SynchronousTestCase):
    def test_one_sensor_set_per_registry_and_tags(self) -> None:
        metrics = Metrics(Clock())
        a = metrics.shared(ProducerSensors)
        self.assertIs(metrics.shared(ProducerSensors), a)
        self.assertIsNot(Metrics(Clock()).shared(ProducerSensors), a)

    def test_registry_of_a_client_without_one(self) -> None:
        class Double:
            reactor = Clock()

        self.assertIsInstance(registry_of(Double()), Metrics)
