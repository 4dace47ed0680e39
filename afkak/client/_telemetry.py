"""Client metrics pushed to the brokers (KIP-714), on by default as in Java.

A broker with a client-telemetry plugin advertises GetTelemetrySubscriptions
and PushTelemetry; one without it does not, and then nothing is sent at all,
not even a request: the pusher only starts when a connection becomes ready to
a broker that advertises both APIs.  It then asks for the client's
subscription and pushes the requested metrics (OTLP, :mod:`afkak.metrics.telemetry`)
every push interval, the first one after a random 0.5 to 1.5 intervals (as
Java, so that clients started together spread out).  A subscription that
requests no metric is asked for again after its interval.  ``close()`` sends a
last push marked terminating.

Errors (as Java's ``ClientTelemetryReporter``): UNKNOWN_SUBSCRIPTION_ID and
UNSUPPORTED_COMPRESSION_TYPE fetch the subscription again at once;
TELEMETRY_TOO_LARGE and THROTTLING_QUOTA_EXCEEDED wait for the next push;
INVALID_REQUEST, INVALID_RECORD and UNSUPPORTED_VERSION stop pushing for good.
A lost connection or a timeout retries on another ready connection later.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from typing import Any
from uuid import UUID

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak import codec
from afkak._broker_errors import ErrorCode
from afkak._version import __version__
from afkak.connection import BrokerConnection, State
from afkak.metrics import Metrics
from afkak.metrics.telemetry import Collector, encode
from afkak.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)

log = Logger()

GET_SUBSCRIPTIONS = GetTelemetrySubscriptionsRequest.API_KEY
PUSH = PushTelemetryRequest.API_KEY
ZERO_UUID = UUID(int=0)
#: Kafka's smallest push interval (``interval.ms``): a broker saying less is not believed.
MIN_INTERVAL_MS = 100
#: Seconds before asking again after a failed request (Java: its retry backoff, capped).
RETRY_SECONDS = 5.0
_RESUBSCRIBE = {ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE}
_FATAL = {ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD, ErrorCode.UNSUPPORTED_VERSION}
_CODECS: dict[int, Callable[[], bool]] = {
    codec.CODEC_GZIP: codec.has_gzip,
    codec.CODEC_SNAPPY: codec.has_snappy,
    codec.CODEC_LZ4: codec.has_lz4,
    codec.CODEC_ZSTD: codec.has_zstd,
}


class Phase(enum.Enum):
    WAITING_FOR_BROKER = "waiting for a broker with client telemetry"
    SUBSCRIBING = "asking for the subscription"
    WAITING = "waiting to push or to ask again"
    PUSHING = "pushing"
    TERMINATED = "terminated"


def supports_telemetry(conn: BrokerConnection) -> bool:
    versions = conn.api_versions
    return versions is not None and GET_SUBSCRIPTIONS in versions and PUSH in versions


def compression_for(accepted: list[int]) -> int:
    """The first accepted compression type afkak can write; none (0) otherwise."""
    for kind in accepted:
        available = _CODECS.get(kind)
        if available is not None and available():
            return kind
    return codec.CODEC_NONE


class TelemetryPusher:
    """Pushes one client's metrics to the brokers that ask for them (KIP-714).

    :param connections: the client's kept connections, read when a request goes out.
    :param timeout: seconds a telemetry request may take.
    """

    def __init__(
        self,
        reactor: Any,
        registry: Metrics,
        connections: Callable[[], list[BrokerConnection]],
        client_id: str,
        timeout: float,
        rng: random.Random | None = None,
    ) -> None:
        self._reactor = reactor
        self._connections = connections
        self._client_id = client_id
        self._timeout = timeout
        self._random = random.Random() if rng is None else rng
        self._collector = Collector(registry)
        self.phase = Phase.WAITING_FOR_BROKER
        #: Assigned by the broker on the first subscription request.
        self.client_instance_id = ZERO_UUID
        self.subscription: GetTelemetrySubscriptionsResponse | None = None
        self._timer: IDelayedCall | None = None
        self._in_flight: Deferred[Any] | None = None

    # -- events --------------------------------------------------------------------

    def connection_ready(self, conn: BrokerConnection) -> None:
        """A connection became ready: start if it is the first to a broker with telemetry."""
        if self.phase is Phase.WAITING_FOR_BROKER and supports_telemetry(conn):
            self._subscribe()

    def close(self) -> Deferred[None]:
        """Stop; with an active subscription, push a last time marked terminating first."""
        if self.phase is Phase.TERMINATED:
            return succeed(None)
        subscribed = self.subscription is not None and bool(self.subscription.requested_metrics)
        self._stop()
        if not subscribed:
            return succeed(None)
        d = self._push_request(terminating=True)
        if d is None:
            return succeed(None)
        return d.addBoth(lambda _: None)

    # -- the cycle -----------------------------------------------------------------

    def _connection(self) -> BrokerConnection | None:
        for conn in self._connections():
            if conn.state is State.READY and supports_telemetry(conn):
                return conn
        return None

    def _send(self, request: Any) -> Deferred[Any] | None:
        conn = self._connection()
        if conn is None:
            return None
        d = conn.request(request, timeout=self._timeout)
        self._in_flight = d
        return d

    def _subscribe(self) -> None:
        self.phase = Phase.SUBSCRIBING
        d = self._send(GetTelemetrySubscriptionsRequest(client_instance_id=self.client_instance_id))
        if d is None:
            self.phase = Phase.WAITING_FOR_BROKER
            return
        d.addCallbacks(self._subscribed, self._failed)

    def _subscribed(self, response: GetTelemetrySubscriptionsResponse) -> None:
        self._in_flight = None
        error = response.error_code
        if error:
            self._answered_error(error, "GetTelemetrySubscriptions")
            return
        if self.client_instance_id == ZERO_UUID:
            self.client_instance_id = response.client_instance_id
        first = self.subscription is None
        self.subscription = response
        self._collector.reset()
        interval = self._interval()
        if not response.requested_metrics:
            self._later(interval, self._subscribe)
        else:
            self._later(
                interval * self._random.uniform(0.5, 1.5) if first else interval, self._push
            )

    def _push(self) -> None:
        self.phase = Phase.PUSHING
        d = self._push_request(terminating=False)
        if d is None:
            self.phase = Phase.WAITING_FOR_BROKER
            return
        d.addCallbacks(self._pushed, self._failed)

    def _push_request(self, terminating: bool) -> Deferred[Any] | None:
        sub = self.subscription
        assert sub is not None
        points = self._collector.collect(sub.requested_metrics, sub.delta_temporality)
        payload = encode(points, {"client_id": self._client_id}, "afkak", __version__)
        compression = compression_for(sub.accepted_compression_types)
        if compression != codec.CODEC_NONE:
            payload = codec.compress(compression, payload)
        return self._send(
            PushTelemetryRequest(
                client_instance_id=self.client_instance_id,
                subscription_id=sub.subscription_id,
                terminating=terminating,
                compression_type=compression,
                metrics=payload,
            )
        )

    def _pushed(self, response: PushTelemetryResponse) -> None:
        self._in_flight = None
        if response.error_code:
            self._answered_error(response.error_code, "PushTelemetry")
            return
        self._later(self._interval(), self._push)

    def _interval(self) -> float:
        """The subscription's push interval in seconds; Kafka's least (100 ms) at the least."""
        assert self.subscription is not None
        return max(self.subscription.push_interval_ms, MIN_INTERVAL_MS) / 1000.0

    def _answered_error(self, error: int, api: str) -> None:
        log.debug("{api}: broker error {error}", api=api, error=error)
        if error in _FATAL:
            log.info("Client telemetry stopped: {api} answered error {error}", api=api, error=error)
            self._stop()
        elif error in _RESUBSCRIBE:
            self._subscribe()
        elif self.subscription is not None and self.subscription.requested_metrics:
            self._later(self._interval(), self._push)
        else:
            self._later(RETRY_SECONDS, self._subscribe)

    def _failed(self, failure: Failure) -> None:
        self._in_flight = None
        if self.phase is Phase.TERMINATED:
            return
        log.debug("Client telemetry request failed: {f}", f=failure.getErrorMessage())
        self._later(RETRY_SECONDS, self._subscribe if self.subscription is None else self._push)

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
        if self.phase is not Phase.TERMINATED:
            self.phase = Phase.WAITING
            self._timer = self._reactor.callLater(seconds, self._fire, action)

    def _fire(self, action: Callable[[], None]) -> None:
        self._timer = None
        action()

    def _stop(self) -> None:
        self.phase = Phase.TERMINATED
        timer, self._timer = self._timer, None
        if timer is not None and timer.active():
            timer.cancel()
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.cancel()
