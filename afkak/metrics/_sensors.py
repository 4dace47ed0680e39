"""The sensors each layer records into, under the Java client's metric names.

Each class registers its metrics once per registry (and tag set) and offers
one method per event, recorded per request, batch or fetch response, never per
record.  Times are in milliseconds, as Java's metrics report them.

Groups (Java's, except that one :class:`~afkak.client.KafkaClient` serves every
producer, consumer and group on it, so its connection metrics are in
``client-metrics`` / ``client-node-metrics``, and group metrics carry a
``group-id`` tag besides ``client-id``):

- ``client-metrics`` and ``client-node-metrics`` (``node-id`` tag);
- ``producer-metrics`` and ``producer-topic-metrics`` (``topic`` tag);
- ``consumer-fetch-manager-metrics``, per partition with ``topic`` and ``partition`` tags;
- ``consumer-coordinator-metrics``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from ._registry import MetricName, Metrics
from ._stats import Sensor

CLIENT = "client-metrics"
NODE = "client-node-metrics"
PRODUCER = "producer-metrics"
PRODUCER_TOPIC = "producer-topic-metrics"
FETCH = "consumer-fetch-manager-metrics"
COORDINATOR = "consumer-coordinator-metrics"


def node_tag(node_id: int) -> str:
    """Java's ``node-id`` tag value: ``node-3``; bootstrap connections are ``node--1``."""
    return f"node-{node_id}"


class _SensorSet:
    """A layer's sensors in one registry, tagged with its client id."""

    def __init__(self, metrics: Metrics) -> None:
        self.registry = metrics
        self._seconds = metrics.seconds
        self._client_id = metrics.client_id

    def now(self) -> float:
        return self._seconds()


class ConnectionSensors(_SensorSet):
    """One broker connection's traffic, per node and summed per client.

    Several connections to one node (the coordinator connection) share its sensors.
    """

    def __init__(self, metrics: Metrics, node_id: int) -> None:
        super().__init__(metrics)
        client_id = metrics.client_id
        client = {"client-id": client_id}
        node = {"client-id": client_id, "node-id": node_tag(node_id)}
        self._sent = self._pair(metrics, "bytes-sent", client, node, _add_sent)
        self._received = self._pair(metrics, "bytes-received", client, node, _add_received)
        self._latency = self._pair(metrics, "request-latency", client, node, _add_latency)
        self._throttle = self._pair(metrics, "throttle-time", client, node, _add_throttle)
        self._created = self._pair(metrics, "connections-created", client, node, _add_created)
        self._closed = self._pair(metrics, "connections-closed", client, node, _add_closed)

    @staticmethod
    def _pair(
        metrics: Metrics,
        name: str,
        client: dict[str, str],
        node: dict[str, str],
        add: Callable[[Metrics, Sensor, str, dict[str, str]], None],
    ) -> Sensor:
        parent = metrics.sensor(name)
        add(metrics, parent, CLIENT, client)  # once: a metric's name is registered once
        sensor = metrics.sensor(f"{node['node-id']}.{name}", parent)
        add(metrics, sensor, NODE, node)
        return sensor

    def sent(self, size: int) -> float:
        """A request of *size* bytes was written; returns when (reactor seconds)."""
        now = self._seconds()
        self._sent.record_at(size, now)
        return now

    def received(self, size: int, sent_at: float, throttle_ms: int | None = None) -> None:
        """A response of *size* bytes came, to a request written at *sent_at* (reactor
        seconds; negative: not timed), asking to be throttled *throttle_ms* (if it says)."""
        now = self._seconds()
        if sent_at >= 0:
            self._received.record_at(size, now)
            self._latency.record_at((now - sent_at) * 1000.0, now)
        if throttle_ms is not None:
            self._throttle.record_at(throttle_ms, now)

    def connected(self) -> None:
        self._created.record()

    def disconnected(self) -> None:
        self._closed.record()


def _add_created(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_meter(
        sensor, "connection-creation", group, "new connections established", tags, count=True
    )


def _add_closed(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_meter(sensor, "connection-close", group, "connections closed", tags, count=True)


def _add_sent(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_meter(sensor, "outgoing-byte", group, "bytes sent", tags)
    metrics.add_meter(sensor, "request", group, "requests sent", tags, count=True)
    metrics.add_avg_max(sensor, "request-size", group, "size of requests sent, in bytes", tags)


def _add_received(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_meter(sensor, "incoming-byte", group, "bytes received", tags)
    metrics.add_meter(sensor, "response", group, "responses received", tags, count=True)


def _add_latency(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_avg_max(sensor, "request-latency", group, "request latency in ms", tags)


def _add_throttle(metrics: Metrics, sensor: Sensor, group: str, tags: dict[str, str]) -> None:
    metrics.add_avg_max(
        sensor, "throttle-time", group, "broker throttle time in ms (KIP-219)", tags
    )


class SentBatch(Protocol):
    """What :meth:`ProducerSensors.request` reads of a producer batch."""

    topic: str
    count: int
    #: Estimated size before compression; ``data`` is the encoded batch.
    size: int
    data: bytes | None
    opened: float
    attempts: int


class ProducerSensors(_SensorSet):
    """A producer's batches and requests (``producer-metrics``, ``producer-topic-metrics``)."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(metrics)
        tags = {"client-id": metrics.client_id}
        m = metrics
        self._records = m.sensor("producer.records-sent")
        m.add_meter(self._records, "record-send", PRODUCER, "records sent", tags)
        self._errors = m.sensor("producer.record-errors")
        m.add_meter(self._errors, "record-error", PRODUCER, "record sends that failed", tags)
        self._retries = m.sensor("producer.record-retries")
        m.add_meter(self._retries, "record-retry", PRODUCER, "records retried", tags)
        self._batch_size = m.sensor("producer.batch-size")
        m.add_avg_max(self._batch_size, "batch-size", PRODUCER, "record batch size in bytes", tags)
        self._compression = m.sensor("producer.compression-rate")
        m.add_avg(
            self._compression,
            "compression-rate",
            PRODUCER,
            "compressed/uncompressed batch size ratio",
            tags,
        )
        self._queue_time = m.sensor("producer.queue-time")
        m.add_avg_max(
            self._queue_time, "record-queue-time", PRODUCER, "ms a batch waited to be sent", tags
        )
        self._per_request = m.sensor("producer.records-per-request")
        m.add_avg(
            self._per_request, "records-per-request", PRODUCER, "records per produce request", tags
        )
        m.add_max(
            self._per_request, "records-per-request", PRODUCER, "records per produce request", tags
        )
        # As in Java, the producer's request-latency is its connections' (read, not recorded).
        m.add_avg_max(
            m.sensor("request-latency"), "request-latency", PRODUCER, "request latency in ms", tags
        )
        self._throttle = m.sensor("producer.throttle-time")
        m.add_avg_max(
            self._throttle, "produce-throttle-time", PRODUCER, "produce throttle time in ms", tags
        )
        self._topics: dict[str, tuple[Sensor, Sensor, Sensor, Sensor]] = {}

    def buffer(self, total: int, used: Callable[[], int]) -> None:
        """Publish ``buffer-total-bytes`` and ``buffer-available-bytes`` (read when measured)."""
        tags = {"client-id": self._client_id}
        m = self.registry
        m.add_gauge(
            MetricName("buffer-total-bytes", PRODUCER, "The buffer memory", tags), lambda now: total
        )
        m.add_gauge(
            MetricName("buffer-available-bytes", PRODUCER, "Buffer memory not in use", tags),
            lambda now: total - used(),
        )

    def _topic(self, topic: str) -> tuple[Sensor, Sensor, Sensor, Sensor]:
        sensors = self._topics.get(topic)
        if sensors is None:
            m = self.registry
            tags = {"client-id": self._client_id, "topic": topic}
            records = m.sensor(f"topic.{topic}.records-sent", self._records)
            m.add_meter(records, "record-send", PRODUCER_TOPIC, "records sent", tags)
            size = m.sensor(f"topic.{topic}.bytes")
            m.add_meter(size, "byte", PRODUCER_TOPIC, "bytes sent", tags)
            errors = m.sensor(f"topic.{topic}.record-errors", self._errors)
            m.add_meter(errors, "record-error", PRODUCER_TOPIC, "record sends that failed", tags)
            retries = m.sensor(f"topic.{topic}.record-retries", self._retries)
            m.add_meter(retries, "record-retry", PRODUCER_TOPIC, "records retried", tags)
            sensors = self._topics[topic] = (records, size, errors, retries)
        return sensors

    def request(self, batches: Iterable[SentBatch]) -> None:
        """A produce request goes with *batches*.

        Queue time (since the batch was opened) counts at a batch's first attempt.
        """
        now = self._seconds()
        records = 0
        for batch in batches:
            records += batch.count
            size = len(batch.data or b"")
            self._batch_size.record_at(size, now)
            self._compression.record_at(size / batch.size if batch.size else 1.0, now)
            if batch.attempts == 1:
                self._queue_time.record_at((now - batch.opened) * 1000.0, now)
        self._per_request.record_at(records, now)

    def answered(self, throttle_ms: int) -> None:
        self._throttle.record_at(throttle_ms, self._seconds())

    def written(self, topic: str, records: int, size: int) -> None:
        """A batch of *records* (*size* bytes) was acknowledged."""
        sensors = self._topics.get(topic) or self._topic(topic)
        now = self._seconds()
        sensors[0].record_at(records, now)
        sensors[1].record_at(size, now)

    def failed(self, topic: str, records: int) -> None:
        self._topic(topic)[2].record(records)

    def retried(self, topic: str, records: int) -> None:
        self._topic(topic)[3].record(records)


class ConsumerSensors(_SensorSet):
    """Fetches and the records consumers took (``consumer-fetch-manager-metrics``)."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(metrics)
        tags = {"client-id": metrics.client_id}
        m = metrics
        self._latency = m.sensor("fetch.latency")
        m.add_avg_max(self._latency, "fetch-latency", FETCH, "fetch request latency in ms", tags)
        m.add_meter(self._latency, "fetch", FETCH, "fetch requests", tags, count=True)
        self._size = m.sensor("fetch.bytes")
        m.add_avg_max(self._size, "fetch-size", FETCH, "bytes fetched per request", tags)
        m.add_meter(self._size, "bytes-consumed", FETCH, "bytes consumed", tags)
        self._records = m.sensor("fetch.records")
        m.add_meter(self._records, "records-consumed", FETCH, "records consumed", tags)
        self._throttle = m.sensor("fetch.throttle-time")
        m.add_avg_max(
            self._throttle, "fetch-throttle-time", FETCH, "fetch throttle time in ms", tags
        )
        self._lag = m.sensor("fetch.records-lag")
        m.add_max(
            self._lag,
            "records-lag",
            FETCH,
            "records behind the high watermark, of any partition",
            tags,
        )
        self._partitions: dict[tuple[str, int], tuple[Sensor, Sensor]] = {}
        #: (topic, partition) -> (next offset, high watermark, last stable offset,
        #: log start offset) as last fetched: the statistics callback's partitions.
        self.offsets: dict[tuple[str, int], list[int]] = {}

    def fetched(self, sent_at: float, size: int, throttle_ms: int) -> None:
        """A fetch response of *size* record bytes came, to a request sent at *sent_at*."""
        now = self._seconds()
        self._latency.record_at((now - sent_at) * 1000.0, now)
        self._size.record_at(size, now)
        self._throttle.record_at(throttle_ms, now)

    def consumed(self, records: int) -> None:
        self._records.record(records)

    def _partition(self, topic: str, partition: int) -> tuple[Sensor, Sensor]:
        key = (topic, partition)
        sensors = self._partitions.get(key)
        if sensors is None:
            m = self.registry
            tags = {"client-id": self._client_id, "topic": topic, "partition": str(partition)}
            lag = m.sensor(f"{topic}-{partition}.records-lag", self._lag)
            m.add_value(lag, "records-lag", FETCH, "Records behind the high watermark", tags)
            m.add_avg_max(lag, "records-lag", FETCH, "records behind the high watermark", tags)
            lead = m.sensor(f"{topic}-{partition}.records-lead")
            m.add_value(lead, "records-lead", FETCH, "Records ahead of the log start offset", tags)
            sensors = self._partitions[key] = (lag, lead)
        return sensors

    def position(
        self, topic: str, partition: int, next_offset: int, high_watermark: int, last_stable: int
    ) -> None:
        """A fetch moved a consumer of the partition to *next_offset*: records-lag."""
        offsets = self.offsets.get((topic, partition))
        if offsets is None:
            offsets = self.offsets[topic, partition] = [-1, -1, -1, -1]
        offsets[:3] = next_offset, high_watermark, last_stable
        if high_watermark >= 0:
            self._partition(topic, partition)[0].record(high_watermark - next_offset)

    def lead(self, topic: str, partition: int, fetch_offset: int, log_start: int) -> None:
        """A fetch read at *fetch_offset* of a log starting at *log_start*: records-lead."""
        offsets = self.offsets.get((topic, partition))
        if offsets is None:
            offsets = self.offsets[topic, partition] = [-1, -1, -1, -1]
        offsets[3] = log_start
        self._partition(topic, partition)[1].record(fetch_offset - log_start)

    def forget(self, topic: str, partition: int) -> None:
        """The partition is no longer consumed: drop its metrics."""
        self.offsets.pop((topic, partition), None)
        if self._partitions.pop((topic, partition), None) is not None:
            self.registry.remove_sensor(f"{topic}-{partition}.records-lag", self._lag)
            self.registry.remove_sensor(f"{topic}-{partition}.records-lead")


class GroupSensors(_SensorSet):
    """One group member's rebalances, heartbeats and commits (``consumer-coordinator-metrics``)."""

    def __init__(self, metrics: Metrics, group_id: str) -> None:
        super().__init__(metrics)
        self._tags = tags = {"client-id": metrics.client_id, "group-id": group_id}
        m = metrics
        prefix = f"group.{group_id}"
        self._rebalance = m.sensor(f"{prefix}.rebalance-latency")
        m.add_avg_max(
            self._rebalance, "rebalance-latency", COORDINATOR, "rebalance time in ms", tags
        )
        m.add_meter(self._rebalance, "rebalance", COORDINATOR, "rebalances", tags, count=True)
        self._heartbeat = m.sensor(f"{prefix}.heartbeat-latency")
        m.add_max(
            self._heartbeat,
            "heartbeat-response-time",
            COORDINATOR,
            "heartbeat response time in ms",
            tags,
        )
        m.add_meter(self._heartbeat, "heartbeat", COORDINATOR, "heartbeats", tags, count=True)
        self._commit = m.sensor(f"{prefix}.commit-latency")
        m.add_avg_max(
            self._commit, "commit-latency", COORDINATOR, "offset commit latency in ms", tags
        )
        m.add_meter(self._commit, "commit", COORDINATOR, "offset commits", tags, count=True)
        self.last_heartbeat: float | None = None

    def member(self, assigned: Callable[[], int]) -> None:
        """Publish ``assigned-partitions`` and ``last-heartbeat-seconds-ago`` of the member."""
        m = self.registry
        m.add_gauge(
            MetricName(
                "assigned-partitions", COORDINATOR, "Partitions assigned to the member", self._tags
            ),
            lambda now: assigned(),
        )
        m.add_gauge(
            MetricName(
                "last-heartbeat-seconds-ago",
                COORDINATOR,
                "Seconds since the last heartbeat",
                self._tags,
            ),
            self._since_heartbeat,
        )

    def _since_heartbeat(self, now: float) -> float:
        return float("nan") if self.last_heartbeat is None else now - self.last_heartbeat

    def rebalanced(self, started: float) -> None:
        now = self._seconds()
        self._rebalance.record_at((now - started) * 1000.0, now)

    def heartbeat(self, sent_at: float) -> None:
        now = self.last_heartbeat = self._seconds()
        self._heartbeat.record_at((now - sent_at) * 1000.0, now)

    def committed(self, sent_at: float) -> None:
        now = self._seconds()
        self._commit.record_at((now - sent_at) * 1000.0, now)
