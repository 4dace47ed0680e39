"""A connection to one Kafka broker that outlives its TCP connections.

:class:`BrokerConnection` queues requests, negotiates API versions on every
new TCP connection, pipelines up to ``max_in_flight`` requests, times them
out, and reconnects with back-off.  Its lifecycle is the table in
:mod:`afkak.connection._lifecycle`; the entry action of each state is listed
in :attr:`BrokerConnection._ENTRY_ACTIONS`.

A response carrying a throttle time (KIP-219, see :mod:`._throttle`) holds the
queue until that time has passed: the broker is muting us meanwhile.

Requests in flight when a connection drops fail with
:class:`~afkak.common.BrokerConnectionError` and are never resent (a resent
produce request could be written twice): the layer above decides.  Requests
still queued are sent on the next connection.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from twisted.internet.defer import Deferred, fail, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IStreamClientEndpoint
from twisted.internet.protocol import Factory
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, ErrorCode, RequestTimedOutError
from afkak._errors import (
    BrokerConnectionError,
    CancelledError,
    ClientError,
    KafkaError,
    TLSListenerError,
)
from afkak._retry import reconnect_backoff
from afkak._version import __version__
from afkak.connection._deadlines import RequestDeadlines
from afkak.connection._lifecycle import (
    AUTHENTICATED_STATES,
    CONNECTED_STATES,
    TABLE,
    Event,
    State,
)
from afkak.connection._protocol import BrokerProtocol
from afkak.connection._request import PendingRequest
from afkak.connection._throttle import client_waits
from afkak.connection._versions import (
    UNSUPPORTED_VERSION,
    ApiVersionRanges,
    choose_version,
    decode_api_versions,
    ranges_of,
    retry_version,
)
from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FrameTooLargeError
from afkak.metrics import ConnectionSensors
from afkak.protocol.messages import ApiVersionsRequest

log = Logger()

Send = Callable[..., "Deferred[Any]"]
"""``send(msg_or_builder, *, min_version=None, max_version=None) -> Deferred``."""

Authenticator = Callable[[Send], "Deferred[int | None] | int | None"]
"""Authenticates a connection (SASL) with ``send``, which writes at once, ahead of the queue.

It may fire with the session lifetime in milliseconds that the broker granted
(KIP-368); the connection then runs it again on the same TCP connection
before that lifetime ends.
"""

REAUTHENTICATE_AT = 0.85
"""The fraction of a session lifetime after which a connection re-authenticates (as Kafka's)."""


def default_endpoint_factory(reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
    """A :class:`HostnameEndpoint` (imported here: its module imports pyOpenSSL)."""
    from twisted.internet.endpoints import HostnameEndpoint

    return HostnameEndpoint(reactor, host, port)


#: How a TLS record begins: its content type (20-23: change_cipher_spec, alert,
#: handshake, application_data), then the major version of its protocol, 3.
_TLS_RECORD_STARTS = frozenset(bytes((content_type, 3)) for content_type in range(20, 24))


def _is_tls_record(too_large: FrameTooLargeError) -> bool:
    """Whether the "length" read is a TLS record header, as a TLS listener answers a
    plaintext request (with an alert)."""
    return too_large.size.to_bytes(4, "big")[:2] in _TLS_RECORD_STARTS


class _ApiVersionsExchange(PendingRequest):
    """The ApiVersions request of the negotiation, read with the KIP-511 fallbacks."""

    __slots__ = ()

    def __init__(self) -> None:
        request = ApiVersionsRequest(
            client_software_name="afkak", client_software_version=__version__
        )
        super().__init__(request, None, None, True)

    def decode(self, frame: bytes) -> Any:
        return decode_api_versions(frame, self.version)


class _ProtocolFactory(Factory):
    noisy = False

    def __init__(self, build: Callable[[], BrokerProtocol]) -> None:
        self._build = build

    def buildProtocol(self, addr: Any) -> BrokerProtocol:
        return self._build()


class BrokerConnection:
    """Requests to one broker over one TCP connection at a time, re-established as needed.

    :param reactor: provides ``callLater`` (IReactorTime), and whatever
        ``endpoint_factory`` needs to connect.
    :param endpoint_factory: ``(reactor, host, port) -> IStreamClientEndpoint``;
        by default a :class:`HostnameEndpoint`.
    :param retry_policy: seconds to wait before reconnecting, given the number
        of consecutive failures (1, 2, ...); reset once a connection is ready.
        By default Kafka's reconnect backoff: 50 ms doubling to 1 s, ±20 %
        jitter (``reconnect.backoff.ms``, ``reconnect.backoff.max.ms``).
    :param request_timeout: seconds from :meth:`request` until a request fails
        with :class:`~afkak.common.RequestTimedOutError`, queueing included.
    :param connect_timeout: seconds a TCP connection attempt may take.
    :param max_in_flight: requests written and awaiting a response, at most.
    :param max_frame_size: largest response accepted, in bytes.
    :param authenticator: runs on every new connection after version
        negotiation and before queued requests are written (SASL); its Deferred
        failing drops the connection, and a failure that is not retriable
        (wrong credentials) also fails the queued requests with it.  If it
        fires with a session lifetime (ms), it runs again on the same
        connection at ``REAUTHENTICATE_AT`` of it: queued requests wait
        meanwhile, those in flight are answered in order as usual.
    :param sensors: where to record its traffic, latency, throttling and
        connections (:mod:`afkak.metrics`); none by default.
    :param on_ready: called as ``on_ready(connection)`` each time it becomes
        ready (versions negotiated, authenticated): the client starts pushing
        telemetry (KIP-714) once a broker advertising it is reached.
    :param on_timeout: called as ``on_timeout(connection, request_sent)`` after
        a request timed out; a client can call :meth:`disconnect` from it.  A
        connection silent past a request's timeout is dropped regardless.

    Reading backpressure: :meth:`pause_reading` stops reading responses from
    the socket (the broker then stalls on TCP flow control) until
    :meth:`resume_reading`; call it while the layer above holds too many
    unprocessed response bytes.  Request timeouts keep running meanwhile.
    """

    def __init__(
        self,
        reactor: Any,
        host: str,
        port: int,
        *,
        client_id: str | None = "afkak",
        endpoint_factory: Callable[
            [Any, str, int], IStreamClientEndpoint
        ] = default_endpoint_factory,
        retry_policy: Callable[[int], float] | None = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 30.0,
        max_in_flight: int = 5,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        authenticator: Authenticator | None = None,
        on_timeout: Callable[[BrokerConnection, bool], None] | None = None,
        sensors: ConnectionSensors | None = None,
        on_ready: Callable[[BrokerConnection], None] | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.host = host
        self.port = port
        self._reactor = reactor
        self._client_id = client_id
        self._endpoint_factory = endpoint_factory
        self._retry_policy = reconnect_backoff() if retry_policy is None else retry_policy
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._max_in_flight = max_in_flight
        self._max_frame_size = max_frame_size
        self._authenticator = authenticator
        self._on_timeout = on_timeout
        self._on_ready = on_ready
        self._sensors = sensors

        self._state = State.IDLE
        self._queue: deque[PendingRequest] = deque()
        self._cancel_request = self._cancel  # (one bound method for every request)
        self._api_versions: ApiVersionRanges | None = None
        #: The version chosen by (request class, min_version, max_version) since the
        #: latest negotiation: a request like the last one (a producer's) asks no more.
        self._chosen: dict[tuple[Any, int | None, int | None], int] = {}
        #: The finalized feature levels the broker sent in the latest negotiation
        #: (ApiVersions v3+), and their epoch (-1: none yet): as Java's ApiVersions.
        self.finalized_features: Mapping[str, int] = {}
        self.finalized_features_epoch = -1
        self._protocol: BrokerProtocol | None = None
        self._attempt: Deferred[BrokerProtocol] | None = None
        self._connect_timer: IDelayedCall | None = None
        self._retry_call: IDelayedCall | None = None
        self._failures = 0
        self._reading_paused = False
        self._pumping = False
        self._closing: BrokerProtocol | None = None
        self._close_waiters: list[Deferred[None]] = []
        self._reauth_call: IDelayedCall | None = None
        self._auth_timer: IDelayedCall | None = None
        # KIP-219: nothing is written before this call fires (the broker throttles us).
        self._throttle_call: IDelayedCall | None = None
        self._deadlines = RequestDeadlines(reactor, self._time_out)

    def __repr__(self) -> str:
        return f"<BrokerConnection {self.host}:{self.port} {self._state.value}>"

    @property
    def state(self) -> State:
        return self._state

    @property
    def queued(self) -> int:
        """Requests waiting to be written (the statistics' ``outbuf_cnt``)."""
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        """Requests written and awaiting their response (``waitresp_cnt``)."""
        return 0 if self._protocol is None else len(self._protocol.in_flight)

    @property
    def api_versions(self) -> ApiVersionRanges | None:
        """The broker's version ranges by API key, from the latest negotiation (``None`` before)."""
        return self._api_versions

    # Public API

    def connect(self) -> None:
        """Start connecting now rather than on the first request; no-op unless idle."""
        self._fire(Event.CONNECT)

    def request(
        self,
        msg_or_builder: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> Deferred[Any]:
        """Send a request once ready; fire with the decoded response.

        :param msg_or_builder: a request message, or a
            :class:`~afkak.connection.RequestBuilder` for a message whose shape
            depends on the version.
        :param min_version: lowest acceptable version; ``max_version`` the highest.
            The version used is the highest one within these bounds, the
            message class's range and the broker's.  With none in common the
            Deferred fails with :class:`~afkak.common.NoCommonVersionError` and
            nothing is sent.
        :param expect_response: ``False`` for requests the broker does not
            answer (produce with acks=0): the Deferred fires with ``None`` once
            the bytes are written.
        :param timeout: seconds instead of the connection's ``request_timeout``.
            A request that times out or is cancelled after it was written
            frees its pipelining slot at once (its late response is dropped).
            One that times out with nothing received on the connection since
            it was written shows a silent broker (hung, or a half-open TCP
            connection): the connection is dropped and made again.
        :returns: a Deferred, whose cancellation fails it with
            :class:`~afkak.common.CancelledError` telling whether the request
            had been sent.
        """
        if self._state is State.CLOSED:
            return fail(ClientError(f"{self!r} is closed"))
        request = PendingRequest(
            msg_or_builder, min_version, max_version, expect_response, self._cancel_request
        )
        if timeout is None:
            timeout = self._request_timeout
        self._deadlines.add(request, timeout)
        self._queue.append(request)
        if self._state is State.READY:
            self._pump()
        else:
            self._fire(Event.CONNECT)
        return request.deferred

    def pause_reading(self) -> None:
        """Stop reading responses until :meth:`resume_reading`, on this and later connections."""
        self._reading_paused = True
        if self._state in AUTHENTICATED_STATES:
            self._transport().pauseProducing()

    def resume_reading(self) -> None:
        self._reading_paused = False
        if self._state in AUTHENTICATED_STATES:
            self._transport().resumeProducing()

    def disconnect(self) -> None:
        """Drop the TCP connection, if there is one, and reconnect after the retry policy's delay.

        Requests in flight fail with :class:`~afkak.common.BrokerConnectionError`;
        queued ones wait for the next connection.
        """
        self._fire(Event.DROPPED, ClientError("disconnect() was called"))

    def close(self) -> Deferred[None]:
        """Close for good; fires once the TCP connection (if any) is closed.

        Queued and in-flight requests fail with
        :class:`~afkak.common.CancelledError`; later requests with
        :class:`~afkak.common.ClientError`.  No timer is left behind.
        """
        self._fire(Event.CLOSE)
        if self._closing is None:
            return succeed(None)
        waiter: Deferred[None] = Deferred()
        self._close_waiters.append(waiter)
        return waiter

    # The state machine

    def _fire(self, event: Event, *args: Any) -> None:
        old, new = self._state, TABLE.next(self._state, event)
        if new is None:  # declared a no-op in this state
            return
        self._state = new
        log.debug(
            "{broker}: {old} -> {new} ({event})",
            broker=str(self),
            old=old.value,
            new=new.value,
            event=event.value,
        )
        self._ENTRY_ACTIONS[new](self, *args)

    def _start_connecting(self) -> None:
        build = partial(BrokerProtocol, self, self._client_id, self._max_frame_size)
        factory = _ProtocolFactory(build)
        # Fires with the BrokerProtocol that the factory built (typed IProtocol by Twisted).
        attempt: Deferred[Any] = maybeDeferred(
            lambda: self._endpoint_factory(self._reactor, self.host, self.port).connect(factory)
        )
        if self._state is not State.CONNECTING:
            # The attempt failed at once and whoever watched it closed this connection.
            attempt.addErrback(lambda _: None)
            return
        self._attempt = attempt
        self._connect_timer = self._reactor.callLater(self._connect_timeout, attempt.cancel)
        attempt.addCallbacks(self._connected, self._connect_failed, errbackArgs=(attempt,))

    def _negotiate_versions(self, protocol: BrokerProtocol) -> None:
        self._protocol = protocol
        if self._sensors is not None:
            self._sensors.connected()
        self._send_api_versions(protocol, ApiVersionsRequest.MAX_VERSION)

    def _authenticate(self, api_versions: ApiVersionRanges) -> None:
        self._api_versions = api_versions
        self._chosen = {}
        if self._authenticator is None:
            self._fire(Event.AUTHENTICATED)
            return
        self._run_authenticator(self._authenticated)

    def _become_ready(self) -> None:
        self._failures = 0
        log.info("{broker}: ready", broker=str(self))
        if self._reading_paused:
            self._transport().pauseProducing()
        self._pump()
        if self._on_ready is not None:
            self._on_ready(self)

    def _reauthenticate(self) -> None:
        """KIP-368: authenticate again on the same connection; requests queue meanwhile."""
        log.debug("{broker}: re-authenticating", broker=str(self))
        self._run_authenticator(self._reauthenticated)

    def _back_off(self, reason: BaseException) -> None:
        self._stop_authenticating()
        self._failures += 1
        delay = self._retry_policy(self._failures)
        log.warn(
            "{broker}: {reason}; reconnecting in {delay:.3g} s",
            broker=str(self),
            reason=str(reason),
            delay=delay,
        )
        self._retry_call = self._reactor.callLater(delay, self._retry)
        # Last, as the requests' callbacks may close this connection.
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            if self._sensors is not None:
                self._sensors.disconnected()
            lost = BrokerConnectionError(
                f"connection to {self.host}:{self.port} lost: {reason}{self._likely_sasl(protocol)}"
            )
            self._abandon(protocol, lost)

    def _likely_sasl(self, protocol: BrokerProtocol) -> str:
        """Name the likely cause when the broker closed a connection without SASL as
        soon as it got a request past ApiVersions, as a listener requiring SASL does
        (it cannot be told from a broker going away, so the error stays retriable)."""
        if self._authenticator is None and protocol.in_flight and protocol.frames_received == 1:
            return (
                " (closed after answering ApiVersions alone, as a listener that requires "
                "SASL does: is this the broker's SASL port?)"
            )
        return ""

    def _shut_down(self) -> None:
        self._stop_authenticating()
        self._deadlines.stop()
        for timer in (self._retry_call, self._connect_timer, self._throttle_call):
            if timer is not None and timer.active():
                timer.cancel()
        self._retry_call = self._connect_timer = self._throttle_call = None
        attempt, self._attempt = self._attempt, None
        if attempt is not None:
            attempt.cancel()
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            if self._sensors is not None:
                self._sensors.disconnected()
            protocol.stopFraming()
            if not protocol.lost:
                self._closing = protocol
                protocol.close()
            for request in protocol.take_in_flight():
                request.fail(CancelledError(request_sent=True, message=f"{self!r} was closed"))
        queued = list(self._queue)
        self._queue.clear()
        for request in queued:
            request.fail(CancelledError(request_sent=False, message=f"{self!r} was closed"))

    _ENTRY_ACTIONS: dict[State, Callable[..., None]] = {
        State.CONNECTING: _start_connecting,
        State.NEGOTIATING: _negotiate_versions,
        State.AUTHENTICATING: _authenticate,
        State.READY: _become_ready,
        State.REAUTHENTICATING: _reauthenticate,
        State.BACKING_OFF: _back_off,
        State.CLOSED: _shut_down,
    }

    # Connecting

    def _connected(self, protocol: BrokerProtocol) -> None:
        self._end_attempt()
        self._fire(Event.CONNECTED, protocol)

    def _connect_failed(self, failure: Failure, attempt: Deferred[BrokerProtocol]) -> None:
        if attempt is not self._attempt:  # cancelled by close()
            return
        timed_out = self._connect_timer is not None and not self._connect_timer.active()
        self._end_attempt()
        if timed_out:
            reason: BaseException = BrokerConnectionError(
                f"connecting timed out after {self._connect_timeout} s"
            )
        else:
            reason = failure.value or ConnectionRefusedError()
        self._fire(Event.CONNECT_FAILED, reason)

    def _end_attempt(self) -> None:
        self._attempt = None
        if self._connect_timer is not None and self._connect_timer.active():
            self._connect_timer.cancel()
        self._connect_timer = None

    def _retry(self) -> None:
        self._retry_call = None
        self._fire(Event.RETRY)

    # Negotiation and authentication

    def _send_api_versions(self, protocol: BrokerProtocol, version: int) -> None:
        request = _ApiVersionsExchange()
        request.notify = False
        self._deadlines.add(request, self._request_timeout)
        request.deferred.addCallbacks(
            self._versions_received,
            self._handshake_failed,
            callbackArgs=(protocol, version),
            errbackArgs=(protocol, "version negotiation"),
        )
        protocol.send(request, request.message(version))
        protocol.flush()

    def _versions_received(self, response: Any, protocol: BrokerProtocol, version: int) -> None:
        if response.error_code == ErrorCode.NONE:
            if response.finalized_features_epoch >= 0:
                self.finalized_features_epoch = response.finalized_features_epoch
                self.finalized_features = {
                    f.name: f.max_version_level for f in response.finalized_features
                }
            self._fire(Event.NEGOTIATED, ranges_of(response))
        elif response.error_code == UNSUPPORTED_VERSION and version > 0:
            retry = retry_version(response, version)
            log.info(
                "{broker}: ApiVersions v{version} is unsupported, retrying with v{retry}",
                broker=str(self),
                version=version,
                retry=retry,
            )
            self._send_api_versions(protocol, retry)
        else:
            self._fire(
                Event.DROPPED,
                BrokerResponseError.from_errno(response.error_code, f"ApiVersions v{version}"),
            )

    def _send_now(
        self,
        protocol: BrokerProtocol,
        msg_or_builder: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
    ) -> Deferred[Any]:
        """Write a handshake request on ``protocol`` at once, bypassing the queue."""
        request = PendingRequest(
            msg_or_builder, min_version, max_version, True, self._forget_handshake_request
        )
        if protocol is not self._protocol:
            request.fail(BrokerConnectionError(f"connection to {self.host}:{self.port} lost"))
        else:
            request.notify = False
            self._deadlines.add(request, self._request_timeout)
            self._send(protocol, request)
            protocol.flush()
        return request.deferred

    def _forget_handshake_request(self, request: PendingRequest) -> None:
        """A handshake request was cancelled (its authentication timed out): drop it quietly."""
        if request.sent and self._protocol is not None:
            self._protocol.forget(request)

    def _authenticated(self, lifetime_ms: object, protocol: BrokerProtocol) -> None:
        self._end_authentication_timer()
        if protocol is self._protocol and self._state is State.AUTHENTICATING:
            self._schedule_reauthentication(lifetime_ms, protocol)
            self._fire(Event.AUTHENTICATED)

    def _authentication_failed(self, failure: Failure, protocol: BrokerProtocol) -> None:
        self._end_authentication_timer()
        if protocol is not self._protocol or self._state not in CONNECTED_STATES:
            return
        self._fail_queued_if_final(failure.value)
        self._handshake_failed(failure, protocol, "authentication")

    def _fail_queued_if_final(self, error: BaseException) -> None:
        """Wrong credentials (SASL or TLS) will not get better by waiting: fail the
        queued requests now rather than at their timeouts."""
        if isinstance(error, KafkaError) and not error.retriable:
            queued = list(self._queue)
            self._queue.clear()
            for request in queued:
                request.fail(error)

    # Re-authentication (KIP-368)

    def _schedule_reauthentication(self, lifetime_ms: object, protocol: BrokerProtocol) -> None:
        if isinstance(lifetime_ms, int) and lifetime_ms > 0:
            self._reauth_call = self._reactor.callLater(
                lifetime_ms / 1000 * REAUTHENTICATE_AT, self._session_ending
            )

    def _session_ending(self) -> None:
        self._reauth_call = None
        self._fire(Event.REAUTHENTICATE)

    def _reauthenticated(self, lifetime_ms: object, protocol: BrokerProtocol) -> None:
        self._end_authentication_timer()
        if protocol is self._protocol:
            self._schedule_reauthentication(lifetime_ms, protocol)
            self._fire(Event.AUTHENTICATED)

    def _run_authenticator(self, done: Callable[[object, BrokerProtocol], None]) -> None:
        """Run the authenticator on this connection: *done* gets the session lifetime.

        Cancelled if it takes longer than a request may: its own requests
        time out by themselves; this bounds what it awaits besides them (a
        token provider, say), so no connection waits forever.  A failure
        drops the connection (:meth:`_authentication_failed`).
        """
        protocol = self._protocol
        assert self._authenticator is not None and protocol is not None
        authenticating = maybeDeferred(self._authenticator, partial(self._send_now, protocol))
        self._auth_timer = self._reactor.callLater(self._request_timeout, authenticating.cancel)
        authenticating.addCallbacks(
            done, self._authentication_failed, callbackArgs=(protocol,), errbackArgs=(protocol,)
        )

    def _end_authentication_timer(self) -> None:
        if self._auth_timer is not None and self._auth_timer.active():
            self._auth_timer.cancel()
        self._auth_timer = None

    def _stop_authenticating(self) -> None:
        self._end_authentication_timer()
        if self._reauth_call is not None and self._reauth_call.active():
            self._reauth_call.cancel()
        self._reauth_call = None

    def _handshake_failed(self, failure: Failure, protocol: BrokerProtocol, step: str) -> None:
        if protocol is self._protocol:
            self._fire(Event.DROPPED, ClientError(f"{step} failed: {failure.getErrorMessage()}"))

    # Sending requests

    def _pump(self) -> None:
        """Write queued requests while ready, writable, and below the in-flight bound."""
        if self._pumping:
            return  # a callback of a request being written queued another one
        self._pumping = True
        protocol = self._protocol
        wrote = False
        try:
            queue = self._queue
            limit = self._max_in_flight
            while (
                queue
                and protocol is not None
                and self._state is State.READY
                and self._throttle_call is None
                and self._protocol is protocol
                and not protocol.write_paused
                and len(protocol.in_flight) < limit
            ):
                self._send(protocol, queue.popleft())
                wrote = True
        finally:
            self._pumping = False
        if wrote and protocol is not None:
            protocol.flush()  # the requests of this pump in one send, in this turn

    def _send(self, protocol: BrokerProtocol, request: PendingRequest) -> None:
        try:
            key = (request.request_class, request.min_version, request.max_version)
            version = self._chosen.get(key)
            if version is None:
                version = self._chosen[key] = choose_version(
                    request.request_class,
                    self._api_versions or {},
                    request.min_version,
                    request.max_version,
                    broker=f"{self.host}:{self.port}",
                    reason=request.min_version_reason,
                )
            size = protocol.send(request, request.message(version))
        except Exception as error:
            request.fail(error)
            return
        sensors = self._sensors
        if sensors is not None:
            request.sent_at = sensors.sent(size)
        if not request.expect_response:
            request.succeed(None)

    def _time_out(self, request: PendingRequest) -> None:
        timeout = request.timeout
        sent = request.sent
        protocol = self._protocol
        silent = False
        if sent:
            if protocol is not None:
                protocol.forget(request)
                silent = protocol.frames_received == request.frames_before
            error = RequestTimedOutError(
                f"no response to {request.api_name} from {self.host}:{self.port} within {timeout} s"
            )
        else:
            self._queue.remove(request)
            error = RequestTimedOutError(
                f"{request.api_name} request to {self.host}:{self.port} not sent within {timeout} s"
            )
        request.fail(error)
        if request.notify and self._on_timeout is not None:
            self._on_timeout(self, sent)
        if protocol is None or protocol is not self._protocol:
            return
        if silent:
            self._fire(
                Event.DROPPED,
                BrokerConnectionError(f"nothing received for {timeout} s after a request"),
            )
        elif sent:
            self._pump()

    def _cancel(self, request: PendingRequest) -> None:
        protocol = self._protocol
        if request.sent:
            if protocol is not None:
                protocol.forget(request)
        else:
            self._queue.remove(request)
        request.fail(
            CancelledError(
                request_sent=request.sent, message=f"{request.api_name} request was cancelled"
            )
        )
        if request.sent and protocol is not None and protocol is self._protocol:
            self._pump()

    def _abandon(self, protocol: BrokerProtocol, error: BrokerConnectionError) -> None:
        """Close ``protocol`` (if it is still open) and fail its requests in flight."""
        protocol.stopFraming()
        if not protocol.lost:
            protocol.transport.abortConnection()
        for request in protocol.take_in_flight():
            request.fail(error)

    def _transport(self) -> Any:
        assert self._protocol is not None
        return self._protocol.transport

    # Reports from the protocol

    def _protocol_failed(self, protocol: BrokerProtocol, error: Exception) -> None:
        if protocol is self._protocol:
            negotiating = self._state is State.NEGOTIATING
            if negotiating and isinstance(error, FrameTooLargeError) and _is_tls_record(error):
                error = TLSListenerError(
                    f"{self.host}:{self.port} answered with TLS: is this the broker's TLS "
                    "port? (a client without tls= cannot use it)"
                )
            log.error(
                "{broker}: closing the connection: {error}", broker=str(self), error=str(error)
            )
            self._fire(Event.DROPPED, error)
            if negotiating:  # last: the requests' callbacks may close this connection
                self._fail_queued_if_final(error)

    def _protocol_answered(
        self, protocol: BrokerProtocol, request: PendingRequest, size: int, response: Any
    ) -> None:
        self._deadlines.answered(request)
        throttle = getattr(response, "throttle_time_ms", None)
        if self._sensors is not None:
            self._sensors.received(size, request.sent_at, throttle)
        if throttle is None:
            return
        if throttle > 0 and client_waits(request.request_class, request.version):
            self._hold_for(min(throttle / 1000.0, self._request_timeout))

    def _hold_for(self, seconds: float) -> None:
        """Write nothing for *seconds* (KIP-219); queued requests wait, their timeouts running.

        The hold lasts the request timeout at most: Kafka caps its throttle
        times at its quota window (11 s by default), and a broker asking for
        more must not make the connection silent for longer than a request
        may wait.
        """
        call = self._throttle_call
        until = self._reactor.seconds() + seconds
        if call is not None:
            if call.getTime() >= until:
                return
            call.cancel()
        log.debug("{broker}: throttled by the broker for {s:.3g} s", broker=str(self), s=seconds)
        self._throttle_call = self._reactor.callLater(seconds, self._throttle_ended)

    def _throttle_ended(self) -> None:
        self._throttle_call = None
        self._pump()

    def _protocol_writable(self, protocol: BrokerProtocol) -> None:
        if protocol is self._protocol and self._queue:
            self._pump()

    def _protocol_lost(self, protocol: BrokerProtocol, reason: Failure) -> None:
        if protocol is self._protocol:
            was_ready = self._state in AUTHENTICATED_STATES
            self._fire(Event.DROPPED, reason.value)
            if not was_ready:  # last: the requests' callbacks may close this connection
                self._fail_queued_if_final(reason.value)
        elif protocol is self._closing:
            self._closing = None
            waiters, self._close_waiters = self._close_waiters, []
            for waiter in waiters:
                waiter.callback(None)
