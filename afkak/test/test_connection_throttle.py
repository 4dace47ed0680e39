"""Broker throttling (KIP-219): a throttled response holds the connection's next requests.

An in-memory broker (the fake of ``test_connection``) answers Metadata with a
throttle time; the Clock shows that nothing is written until it has passed.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.common import CancelledError, RequestTimedOutError
from afkak.connection import BrokerConnection
from afkak.metrics import NODE, ConnectionSensors, MetricName, Metrics
from afkak.protocol.messages import MetadataResponse
from afkak.test.test_connection import (
    DEFAULT_VERSIONS,
    METADATA,
    Broker,
    LoopbackEndpoint,
    metadata,
)
from afkak.testing._server import KafkaServerFactory


def throttled(ms: int) -> Any:
    def answer(header: Any) -> MetadataResponse:
        return MetadataResponse(throttle_time_ms=ms, topics=[])

    return answer


class ThrottleTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.broker = Broker({**DEFAULT_VERSIONS, METADATA: (0, 12)})
        self.broker.special["slow"] = throttled(500)
        self.metrics = Metrics(self.clock, client_id="c")
        endpoint = LoopbackEndpoint(KafkaServerFactory(self.broker, self.clock))
        self.conn = BrokerConnection(
            self.clock,
            "broker",
            9092,
            endpoint_factory=lambda *_: endpoint,
            request_timeout=10.0,
            sensors=ConnectionSensors(self.metrics, 1),
        )
        self.addCleanup(self.conn.close)

    def sent(self) -> list[list[str]]:
        return self.broker.topics()

    def metric(self, name: str) -> float:
        tags = {"client-id": "c", "node-id": "node-1"}
        return self.metrics.metric(MetricName(name, NODE, tags=tags))

    def test_nothing_is_written_until_the_throttle_time_passed(self) -> None:
        self.successResultOf(self.conn.request(metadata("slow")))
        later = [self.conn.request(metadata(name)) for name in ("a", "b")]
        self.assertEqual(self.sent(), [["slow"]])
        self.clock.advance(0.499)
        self.assertEqual(self.sent(), [["slow"]])
        self.assertNoResult(later[0])
        self.clock.advance(0.001)
        self.assertEqual(self.sent(), [["slow"], ["a"], ["b"]])
        for d in later:
            self.successResultOf(d)
        self.assertEqual(self.metric("throttle-time-max"), 500.0)
        # Zeros count, as in Java: ApiVersions, slow, a, b.
        self.assertEqual(self.metric("throttle-time-avg"), 500 / 4)

    def test_a_shorter_throttle_does_not_cut_a_longer_one(self) -> None:
        self.broker.special["slower"] = throttled(2000)
        self.broker.hold = True  # both are in flight when the answers come
        ds = [self.conn.request(metadata(name)) for name in ("slower", "slow")]
        self.broker.hold = False
        self.broker.release()
        self.broker.release()
        for d in ds:
            self.successResultOf(d)
        d = self.conn.request(metadata("a"))
        self.clock.advance(1.9)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.successResultOf(d)

    def test_held_requests_time_out_and_cancel(self) -> None:
        self.broker.special["long"] = throttled(60_000)
        self.successResultOf(self.conn.request(metadata("long")))
        cancelled = self.conn.request(metadata("x"))
        timing_out = self.conn.request(metadata("y"), timeout=1.0)
        cancelled.cancel()
        self.assertFalse(self.failureResultOf(cancelled, CancelledError).value.request_sent)
        self.clock.advance(1.0)
        self.failureResultOf(timing_out, RequestTimedOutError)
        self.assertEqual(self.sent(), [["long"]])

    def test_an_absurd_throttle_holds_for_the_request_timeout_only(self) -> None:
        """A fuzzed response asking for 24 days would otherwise mute the broker for good."""
        self.broker.special["absurd"] = throttled(2**31 - 1)
        self.successResultOf(self.conn.request(metadata("absurd")))
        d = self.conn.request(metadata("a"), timeout=20.0)
        self.clock.advance(9.999)
        self.assertNoResult(d)
        self.clock.advance(0.001)  # the connection's request_timeout: 10 s
        self.successResultOf(d)

    def test_old_versions_are_throttled_by_the_broker_not_again(self) -> None:
        """Metadata v5 and below: the broker delayed its answer already (KIP-219)."""
        self.successResultOf(self.conn.request(metadata("slow"), max_version=5))
        self.successResultOf(self.conn.request(metadata("a")))
        self.assertEqual(self.metric("throttle-time-max"), 500.0)

    def test_close_while_throttled_leaves_no_timer(self) -> None:
        self.successResultOf(self.conn.request(metadata("slow")))
        d = self.conn.request(metadata("a"))
        self.successResultOf(self.conn.close())
        self.failureResultOf(d, CancelledError)
        self.assertEqual(self.clock.getDelayedCalls(), [])
