"""The client's broker connections: one per node id, plus short-lived bootstrap ones.

Every connection's endpoint is wrapped so the pool hears about failed
connection attempts.  A :class:`~afkak.connection.BrokerConnection` would keep
a request queued while it retries; :meth:`ConnectionPool.send` fails it as
soon as an attempt to connect fails instead, whatever the request: a request
any broker can answer (Metadata, FindCoordinator) goes to the next broker at
once, and one for a partition's leader or a group's coordinator back to its
caller's retry, which looks the leader or coordinator up again rather than
wait for its timeout on a broker that is down (Java's client sends nothing to
a node it cannot connect to, and refreshes its metadata on a disconnection).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from afkak.common import BrokerConnectionError, BrokerMetadata, CancelledError
from afkak.connection import BrokerConnection, State
from afkak.connection._interlayer import CONNECTED_STATES
from afkak.metrics import ConnectionSensors, Metrics

if TYPE_CHECKING:
    from afkak.connection import SaslMechanism

log = Logger()

EndpointFactory = Callable[[Any, str, int], IStreamClientEndpoint]


@implementer(IStreamClientEndpoint)
class _WatchedEndpoint:
    """An endpoint that reports its connection attempts' outcomes to its watch."""

    def __init__(self, endpoint: IStreamClientEndpoint, watch: _ConnectWatch) -> None:
        self._endpoint = endpoint
        self._watch = watch

    def connect(self, factory: Any) -> Deferred[Any]:
        d = self._endpoint.connect(factory)
        d.addCallbacks(self._watch.connected, self._watch.failed)
        return d


class Refused(BrokerConnectionError):
    """The connection attempt was refused."""


class HandshakeFailed(Refused):
    """The connection's TLS handshake failed or got no answer."""


@attrs.frozen
class _ConnectFailure:
    """Why an attempt to connect failed: a fresh retriable error for each request
    it fails (one exception shared by many Deferreds would gather their tracebacks)."""

    kind: type[BrokerConnectionError]
    message: str

    @classmethod
    def of(cls, reason: Failure) -> _ConnectFailure:
        from afkak.connection import TLSHandshakeError  # SASL and TLS are imported on use

        message = reason.getErrorMessage()
        if reason.check(TLSHandshakeError):
            return cls(HandshakeFailed, message)
        if reason.check(ConnectionRefusedError):
            return cls(Refused, f"cannot connect: {message}")
        return cls(BrokerConnectionError, f"cannot connect: {message}")

    def error(self) -> BrokerConnectionError:
        return self.kind(self.message)


class _ConnectWatch:
    """One connection's attempts to connect: the requests sent through the pool
    to fail when the next one fails, and how the last one failed (None once one
    succeeds).

    *unreachable*, set by the pool for a known broker's connection, is run when
    an attempt that requests waited for fails, and when a request comes while
    the connection backs off from a failed attempt: the client reloads its
    metadata, as Java's does after a failed connection, so that a broker the
    cluster dropped or moved is dropped here too (its requests failing at once).
    """

    def __init__(self, endpoint_factory: EndpointFactory) -> None:
        self._endpoint_factory = endpoint_factory
        #: The pool's requests waiting on this connection (a dict for its order).
        self.waiting: dict[_PooledRequest, None] = {}
        self.failure: _ConnectFailure | None = None
        self.unreachable: Callable[[], None] | None = None

    def endpoint(self, reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
        return _WatchedEndpoint(self._endpoint_factory(reactor, host, port), self)

    def connected(self, protocol: Any) -> Any:
        self.failure = None
        return protocol

    def failed(self, failure: Failure) -> Failure:
        self.failure = refusal = _ConnectFailure.of(failure)
        waiting, self.waiting = self.waiting, {}
        for request in waiting:  # a cancellation's callbacks may send or cancel others
            request.refuse(refusal)
        if waiting and self.unreachable is not None:
            self.unreachable()
        return failure


class _PooledRequest:
    """A request sent through :meth:`ConnectionPool.send` until its Deferred fires:
    failed when its connection's attempt to connect fails, its cancellation then
    explained.  One small object per request, called as the Deferred's last
    callback (many clients in one process promoted the closures that did this,
    and their cells, to the GC's oldest generation)."""

    __slots__ = ("_pool", "_conn", "_watch", "_settled", "deferred", "refused")

    def __init__(
        self,
        pool: ConnectionPool,
        conn: BrokerConnection,
        watch: _ConnectWatch,
        settled: Callable[[Deferred[Any]], None] | None,
    ) -> None:
        self._pool = pool
        self._conn = conn
        self._watch = watch
        self._settled = settled
        self.deferred: Deferred[Any] | None = None
        self.refused: _ConnectFailure | None = None

    def refuse(self, refusal: _ConnectFailure) -> None:
        """Its connection's attempt to connect failed: cancel it, explained."""
        if self.refused is None:
            self.refused = refusal
        if self.deferred is not None:
            self.deferred.cancel()

    def __call__(self, result: Any) -> Any:
        self._watch.waiting.pop(self, None)
        if self._settled is not None:
            assert self.deferred is not None
            self._settled(self.deferred)
        if isinstance(result, Failure) and result.check(CancelledError):
            if self.refused is not None:
                return Failure(self.refused.error())
            conn = self._conn
            if conn in self._pool.discarded:
                return Failure(
                    BrokerConnectionError(f"{conn.host}:{conn.port} left the cluster or moved")
                )
        return result


class ConnectionPool:
    """Creates, hands out and closes :class:`BrokerConnection` objects.

    ``clients`` maps node ids to their connections (the client's documented
    ``clients`` attribute).  A broker answers one connection's requests in
    order, so nothing may queue behind a fetch that long-polls: fetches get a
    connection of their own per broker, ``fetch_clients`` (a Java application's
    consumer and producer are separate clients), and so does group coordinator
    traffic, ``coordinator_clients``, as in Kafka's Java consumer.  A connection to a broker that
    left the cluster or moved is *discarded*: closed, and its in-flight
    requests then fail.
    """

    def __init__(
        self,
        reactor: Any,
        endpoint_factory: EndpointFactory,
        retry_policy: Callable[[int], float],
        client_id: str,
        request_timeout: float,
        on_timeout: Callable[[BrokerConnection, bool], None],
        sasl: SaslMechanism | None = None,
        metrics: Metrics | None = None,
        on_ready: Callable[[BrokerConnection], None] | None = None,
    ) -> None:
        self._reactor = reactor
        self._on_ready = on_ready
        self._metrics = metrics
        self._sasl = sasl
        self._endpoint_factory = endpoint_factory
        self._retry_policy = retry_policy
        self._client_id = client_id
        self._request_timeout = request_timeout
        self._on_timeout = on_timeout
        self.clients: dict[int, BrokerConnection] = {}
        self.coordinator_clients: dict[int, BrokerConnection] = {}
        self.fetch_clients: dict[int, BrokerConnection] = {}
        self._watches: dict[BrokerConnection, _ConnectWatch] = {}
        self._closing: list[Deferred[Any]] = []
        self._ephemeral: set[BrokerConnection] = set()
        self.discarded: set[BrokerConnection] = set()
        #: Called as ``on_unreachable(connection)`` when an attempt of a kept
        #: connection (to a known broker) that requests wait for fails, or a request
        #: comes while such a connection backs off from a failed attempt.
        self.on_unreachable: Callable[[BrokerConnection], None] | None = None

    def connection(
        self, broker: BrokerMetadata, *, coordinator: bool = False, fetch: bool = False
    ) -> BrokerConnection:
        """The connection to *broker* (its coordinator or fetch connection if asked), made
        on first use."""
        conns = (
            self.coordinator_clients
            if coordinator
            else self.fetch_clients
            if fetch
            else self.clients
        )
        conn = conns.get(broker.node_id)
        if conn is None:
            conn = conns[broker.node_id] = self._new(broker.host, broker.port, broker.node_id)
        return conn

    def lanes(self) -> tuple[dict[int, BrokerConnection], ...]:
        """The kept connections by node id: ``clients``, the coordinator and fetch ones."""
        return (self.clients, self.coordinator_clients, self.fetch_clients)

    def open(self, host: str, port: int) -> BrokerConnection:
        """A new connection not kept in ``clients`` (bootstrap): :meth:`release` it after use."""
        conn = self._new(host, port)
        self._ephemeral.add(conn)
        return conn

    def _new(self, host: str, port: int, node_id: int = -1) -> BrokerConnection:
        watch = _ConnectWatch(self._endpoint_factory)
        metrics = self._metrics
        authenticator = None
        if self._sasl is not None:
            from afkak.connection import SaslAuthenticator

            authenticator = SaslAuthenticator(self._sasl, host, port, self._reactor)
        conn = BrokerConnection(
            self._reactor,
            host,
            port,
            client_id=self._client_id,
            endpoint_factory=watch.endpoint,
            retry_policy=self._retry_policy,
            request_timeout=self._request_timeout,
            on_timeout=self._on_timeout,
            authenticator=authenticator,
            sensors=(None if metrics is None else metrics.shared(ConnectionSensors, node_id)),
            on_ready=self._on_ready,
        )
        if node_id >= 0:
            watch.unreachable = partial(self._unreachable, conn)
        self._watches[conn] = watch
        return conn

    def _unreachable(self, conn: BrokerConnection) -> None:
        if self.on_unreachable is not None and conn in self._watches:
            self.on_unreachable(conn)

    def connection_count(self) -> int:
        """Connections with an open TCP connection (the ``connection-count`` metric)."""
        conns = [*(c for lane in self.lanes() for c in lane.values()), *self._ephemeral]
        return sum(conn.state in CONNECTED_STATES for conn in conns)

    def send(
        self,
        conn: BrokerConnection,
        call: Any,
        settled: Callable[[Deferred[Any]], None] | None = None,
        **options: Any,
    ) -> Deferred[Any]:
        """Send *call* on *conn* (*options* of its ``request``), failing with a retriable
        :class:`~afkak.common.BrokerConnectionError` as soon as *conn*'s next attempt
        to connect fails, or when *conn* is discarded, rather than wait for its
        timeout.  Failures are paced by the connection's back-off (the callers'
        retries grow theirs with each failure).  *settled* is called with the
        Deferred returned when it fires, before its caller's callbacks run (no
        callback of its own per request)."""
        watch = self._watches[conn]
        pooled = _PooledRequest(self, conn, watch, settled)
        watch.waiting[pooled] = None
        d = pooled.deferred = conn.request(call, **options)
        if pooled.refused is not None:  # the attempt failed at once, within request()
            d.cancel()
        elif watch.failure is not None and conn.state is State.BACKING_OFF:
            if watch.unreachable is not None:
                watch.unreachable()
        return d.addBoth(pooled)

    def discard(self, node_id: int) -> None:
        """Close and forget the connections to a broker that left or moved."""
        for conn in [conns.pop(node_id, None) for conns in self.lanes()]:
            if conn is None:
                continue
            log.info(
                "Closing the connection to departed or moved broker {node_id}: {conn}",
                node_id=node_id,
                conn=repr(conn),
            )
            self.discarded.add(conn)
            self.release(conn)

    def release(self, conn: BrokerConnection) -> None:
        """Close a connection; :meth:`close` waits for it."""
        self._watches.pop(conn, None)
        self._ephemeral.discard(conn)
        d = conn.close()
        self._closing.append(d)
        d.addBoth(self._closed, d, conn)

    def _closed(self, result: Any, d: Deferred[Any], conn: BrokerConnection) -> None:
        self._closing.remove(d)
        self.discarded.discard(conn)
        if isinstance(result, Failure):
            result.cleanFailure()
            log.failure("Closing {conn} failed", result, conn=repr(conn))

    def close(self) -> Deferred[Any]:
        """Close every connection; fire once all are closed."""
        for conns in self.lanes():
            for conn in conns.values():
                self.release(conn)
            conns.clear()
        for conn in list(self._ephemeral):
            self.release(conn)
        return DeferredList(list(self._closing), consumeErrors=True).addCallback(lambda _: None)
