"""The statistics callback: librdkafka's statistics JSON, every ``statistics_interval_ms``.

Dashboards and tools built for librdkafka's ``stats_cb`` read its document:
top-level totals, ``brokers`` (state, ``outbuf_cnt``, ``waitresp_cnt``,
``rtt`` and ``throttle``), ``topics`` with their ``partitions`` (leader,
``fetch_state``, offsets, ``consumer_lag``), and ``cgrp``.  afkak fills the
fields its metrics hold; window statistics (``rtt``, ``throttle``) carry
``avg``, ``max`` and ``cnt`` (the registry's windows, not percentiles).
Times are librdkafka's units: ``ts``/``age``/``rtt`` in microseconds,
``throttle`` in milliseconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak.common import TopicAndPartition
from afkak.connection import BrokerConnection, State
from afkak.metrics import (
    CLIENT,
    COORDINATOR,
    FETCH,
    NODE,
    PRODUCER,
    PRODUCER_TOPIC,
    ConsumerSensors,
    MetricName,
    Metrics,
    node_tag,
)

from ._cluster import Cluster

log = Logger()

_STATES = {
    State.IDLE: "INIT",
    State.CONNECTING: "CONNECT",
    State.NEGOTIATING: "APIVERSION_QUERY",
    State.AUTHENTICATING: "AUTH_HANDSHAKE",
    State.READY: "UP",
    State.REAUTHENTICATING: "REAUTH",
    State.BACKING_OFF: "DOWN",
    State.CLOSED: "DOWN",
}


def _number(value: float) -> float | int:
    """JSON has no NaN: a metric with nothing recorded reads 0, as in librdkafka."""
    if math.isnan(value) or math.isinf(value):
        return 0
    return int(value) if value == int(value) else value


class Statistics:
    """Builds the document from a client's registry and connections; emits it periodically."""

    def __init__(
        self,
        reactor: Any,
        client_id: str,
        cluster: Cluster,
        registry: Metrics,
        interval: float,
        callback: Callable[[str], object],
    ) -> None:
        self._reactor = reactor
        self._client_id = client_id
        self._cluster = cluster
        self._registry = registry
        self._callback = callback
        self._started = reactor.seconds()
        self._loop = LoopingCall(self._emit)
        self._loop.clock = reactor
        self._loop.start(interval, now=False)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()

    def _emit(self) -> None:
        try:
            self._callback(json.dumps(self.document()))
        except Exception:
            failure = Failure()
            failure.cleanFailure()  # a logged event keeps no frames
            log.failure("The statistics callback failed", failure)

    def document(self) -> dict[str, Any]:
        now = self._reactor.seconds()
        values = self._registry.metrics()
        client = {"client-id": self._client_id}

        def total(name: str, group: str, **tags: str) -> float | int:
            return _number(values.get(MetricName(name, group, tags={**client, **tags}), 0.0))

        return {
            "name": self._client_id,
            "client_id": self._client_id,
            "type": "client",
            "ts": int(now * 1e6),
            "time": int(now),
            "age": int((now - self._started) * 1e6),
            "tx": total("request-total", CLIENT),
            "tx_bytes": total("outgoing-byte-total", CLIENT),
            "rx": total("response-total", CLIENT),
            "rx_bytes": total("incoming-byte-total", CLIENT),
            "txmsgs": total("record-send-total", PRODUCER),
            "rxmsgs": total("records-consumed-total", FETCH),
            "rxmsg_bytes": total("bytes-consumed-total", FETCH),
            "metadata_cache_cnt": len(self._cluster.cache.topic_partitions),
            "brokers": self._brokers(total),
            "topics": self._topics(total),
            **self._group(values),
        }

    def _brokers(self, total: Callable[..., float | int]) -> dict[str, Any]:
        cache = self._cluster.cache
        pool = self._cluster.pool
        led: dict[int, dict[str, Any]] = {}
        for key, broker in cache.topics_to_brokers.items():
            if broker is not None:
                led.setdefault(broker.node_id, {})[f"{key.topic}-{key.partition}"] = {
                    "topic": key.topic,
                    "partition": key.partition,
                }
        brokers = {}
        for node_id, meta in sorted(cache.brokers.items()):
            conns: list[BrokerConnection] = [
                c for c in (lane.get(node_id) for lane in pool.lanes()) if c is not None
            ]
            name = f"{meta.host}:{meta.port}/{node_id}"
            state = conns[0].state if conns else State.IDLE
            node = node_tag(node_id)

            def window(name: str, scale: float, node: str = node) -> dict[str, float | int]:
                return {
                    "avg": _number(total(f"{name}-avg", NODE, **{"node-id": node}) * scale),
                    "max": _number(total(f"{name}-max", NODE, **{"node-id": node}) * scale),
                    "cnt": total("response-total", NODE, **{"node-id": node}),
                }

            brokers[name] = {
                "name": name,
                "nodeid": node_id,
                "nodename": f"{meta.host}:{meta.port}",
                "source": "learned",
                "state": _STATES[state],
                "outbuf_cnt": sum(c.queued for c in conns),
                "waitresp_cnt": sum(c.in_flight for c in conns),
                "tx": total("request-total", NODE, **{"node-id": node}),
                "txbytes": total("outgoing-byte-total", NODE, **{"node-id": node}),
                "rx": total("response-total", NODE, **{"node-id": node}),
                "rxbytes": total("incoming-byte-total", NODE, **{"node-id": node}),
                "connects": total("connection-creation-total", NODE, **{"node-id": node}),
                "disconnects": total("connection-close-total", NODE, **{"node-id": node}),
                "rtt": window("request-latency", 1000.0),  # ms -> µs
                "throttle": window("throttle-time", 1.0),
                "toppars": led.get(node_id, {}),
            }
        return brokers

    def _topics(self, total: Callable[..., float | int]) -> dict[str, Any]:
        cache = self._cluster.cache
        consumed = self._registry.shared(ConsumerSensors).offsets
        topics: dict[str, Any] = {}
        for topic, partitions in sorted(cache.topic_partitions.items()):
            parts = {}
            for partition in partitions:
                leader = cache.topics_to_brokers.get(TopicAndPartition(topic, partition))
                offsets = consumed.get((topic, partition))
                entry: dict[str, Any] = {
                    "partition": partition,
                    "broker": -1 if leader is None else leader.node_id,
                    "leader": -1 if leader is None else leader.node_id,
                    "fetch_state": "none" if offsets is None else "active",
                    "next_offset": -1001,
                    "hi_offset": -1001,
                    "ls_offset": -1001,
                    "lo_offset": -1001,
                    "consumer_lag": -1,
                }
                if offsets is not None:
                    next_offset, high, stable, start = offsets
                    entry.update(next_offset=next_offset, hi_offset=high, ls_offset=stable)
                    entry["lo_offset"] = start if start >= 0 else -1001
                    entry["consumer_lag"] = max(high - next_offset, 0) if high >= 0 else -1
                parts[str(partition)] = entry
            topics[topic] = {
                "topic": topic,
                "txmsgs": total("record-send-total", PRODUCER_TOPIC, topic=topic),
                "txbytes": total("byte-total", PRODUCER_TOPIC, topic=topic),
                "partitions": parts,
            }
        return topics

    def _group(self, values: dict[MetricName, float]) -> dict[str, Any]:
        """``cgrp``: librdkafka has one group per client; afkak reports the first it has."""
        groups: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name.group == COORDINATOR:
                groups.setdefault(name.tags.get("group-id", ""), {})[name.name] = value
        if not groups:
            return {}
        group_id, group = sorted(groups.items())[0]
        return {
            "cgrp": {
                "group_id": group_id,
                "rebalance_cnt": _number(group.get("rebalance-total", 0.0)),
                "assignment_size": _number(group.get("assigned-partitions", 0.0)),
            }
        }


def start_statistics(
    reactor: Any,
    client_id: str,
    cluster: Cluster,
    registry: Metrics,
    interval_ms: int,
    callback: Callable[[str], object] | None,
) -> Statistics | None:
    """A client's statistics emitter, if asked for (``statistics_interval_ms`` > 0)."""
    if not interval_ms:
        return None
    if not callable(callback):
        raise TypeError(f"statistics_interval_ms needs a callable stats_cb, not {callback!r}")
    return Statistics(reactor, client_id, cluster, registry, interval_ms / 1000, callback)
