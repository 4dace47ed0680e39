"""Reaching the cluster: which broker to ask, and keeping metadata current.

:class:`Cluster` owns the metadata cache and the connection pool.  It sends a
request to a given broker, to any broker (connected ones first, then the
bootstrap hosts), to a partition's leader or to a group's coordinator; it
loads metadata (coalescing concurrent loads), refreshes it every
``metadata_max_age`` seconds, closes connections to brokers that left the
cluster, and forgets what failed requests proved stale.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._retry import retry_backoff, retrying
from afkak.common import (
    BrokerConnectionError,
    BrokerMetadata,
    BrokerResponseError,
    CancelledError,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    ErrorCode,
    IllegalSaslState,
    KafkaError,
    KafkaUnavailableError,
    LeaderUnavailableError,
    NoCommonVersionError,
    PartitionUnavailableError,
    SaslAuthenticationFailed,
    TLSAuthenticationFailed,
    TLSListenerError,
    TopicAndPartition,
    UnsupportedSaslMechanism,
)
from afkak.connection import BrokerConnection, State
from afkak.protocol.messages import FetchRequest as FetchMessage
from afkak.protocol.metadata_answer import TopicMemo

from ._coalesce import MetadataCoalescer, SharedResult
from ._coordinator_call import FindCoordinatorCall
from ._hosts import HostPort, format_host_port
from ._metadata import BrokerChanges, MetadataCache
from ._metadata_call import MetadataCall
from ._pool import ConnectionPool, HandshakeFailed, Refused
from ._stale import COORDINATOR_MOVED, lost_broker

log = Logger()


class NoBrokerListening(KafkaUnavailableError):
    """No bootstrap address could be connected to, and no broker ever answered.

    Every address refused the connection (Kafka not started, a wrong port) or
    failed its TLS handshake (a plaintext port, an untrusted certificate):
    not retriable, so that the program says so at once instead of retrying
    until its timeouts.  Once the cluster has answered, a refusal is a broker
    restarting: retriable.
    """

    retriable = False


class AuthenticationRefused(KafkaUnavailableError):
    """Every broker tried refused the client's credentials or security settings.

    Wrong SASL credentials, a mechanism the broker does not enable, a SASL
    client on a listener without SASL, a client without TLS on a TLS listener,
    a TLS client certificate missing or not trusted: not retriable (a new
    connection would be refused the same way), so that producers, consumers
    and groups fail at once rather than retry until their timeouts.  Its
    ``__cause__`` is the broker's answer.
    """

    retriable = False


#: What a broker answers the same way on every connection until someone changes
#: the credentials or the broker's configuration: final.
_REFUSED = (
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
    IllegalSaslState,
    TLSAuthenticationFailed,
    TLSListenerError,
)


@attrs.define
class _Tried:
    """How the brokers tried for one request failed: a line for each, the last error
    (the cause raised) and the first final one (credentials refused, say)."""

    errors: list[str] = attrs.Factory(list)
    last: KafkaError | None = None
    final: KafkaError | None = None

    def add(self, host: HostPort, error: KafkaError, note: str = "") -> None:
        self.last = error
        if self.final is None and isinstance(error, _REFUSED):
            self.final = error
        self.errors.append(f"{format_host_port(*host)}: {error}{note}")


@attrs.define
class _Refusal:
    """A bootstrap host's last failure to connect (a refused or lost connection, a
    failed handshake, credentials refused): not tried again until its back-off ends."""

    error: KafkaError
    failures: int
    until: float


#: KIP-1102 ``metadata.recovery.strategy``: back to the bootstrap hosts when no
#: known broker answers (Kafka 4's default), or never once brokers are known.
RECOVERY_STRATEGIES = ("rebootstrap", "none")


class Cluster:
    """Routing and metadata for one :class:`~afkak.client.KafkaClient`.

    With the ``rebootstrap`` recovery strategy (KIP-1102), as Java's client: a
    request no known broker answered goes to the bootstrap hosts (their names
    resolved again); when no Metadata has come for *rebootstrap_trigger*
    seconds since a load began, or a broker answers REBOOTSTRAP_REQUIRED, the
    known brokers are forgotten and the next load starts from the bootstrap hosts.
    """

    def __init__(
        self,
        reactor: Any,
        pool: ConnectionPool,
        bootstrap_hosts: tuple[HostPort, ...],
        metadata_max_age: float | None,
        coordinator_timeout: float,
        retry_policy: Callable[[int], float],
        recovery: str = "rebootstrap",
        rebootstrap_trigger: float = 300.0,
        rng: random.Random | None = None,
    ) -> None:
        self.reactor = reactor
        self._rebootstrap_enabled = recovery == "rebootstrap"
        self._rebootstrap_trigger = rebootstrap_trigger
        #: When the Metadata loads began failing (None: the last one succeeded).
        self._metadata_failing_since: float | None = None
        self._coordinator_timeout = coordinator_timeout
        self._retry_policy = retry_policy
        #: Bootstrap hosts whose last connection failed: not reconnected to
        #: before their back-off ends (Java's reconnect.backoff.ms), so that a
        #: loop retrying a call does not become a reconnect storm; all of them
        #: refusing connections and no broker ever known is :class:`NoBrokerListening`.
        self._refusals: dict[HostPort, _Refusal] = {}
        self.pool = pool
        self.cache = MetadataCache()
        #: The known topics' entries in earlier Metadata answers: not read again unchanged.
        self._answered = TopicMemo()
        self.bootstrap_hosts = bootstrap_hosts
        self._max_age = metadata_max_age
        self._refresh_call: IDelayedCall | None = None
        self._loads = MetadataCoalescer(self._fetch_metadata)
        self._coordinator_loads: dict[str, SharedResult] = {}
        self._random = random.Random() if rng is None else rng
        self._reload_call: IDelayedCall | None = None
        self.closed = False
        pool.on_unreachable = self._broker_unreachable

    # -- sending ------------------------------------------------------------

    def request(
        self,
        broker: BrokerMetadata,
        call: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
        coordinator: bool = False,
        settled: Callable[[Deferred[Any]], None] | None = None,
    ) -> Deferred[Any]:
        """Send *call* (a request message or builder) to *broker*; *settled* as
        :meth:`ConnectionPool.send`'s.

        Version bounds default to the call's own ``min_version`` and
        ``max_version`` attributes, which the client's calls have.  Group
        coordinator requests (*coordinator*) use the broker's coordinator
        connection, and fetches its fetch connection, so that nothing waits
        behind a fetch's long-poll.  Any request fails as soon as its connection's
        attempt to connect does (:meth:`ConnectionPool.send`), rather than wait for
        its timeout (JoinGroup's is the rebalance timeout) while the broker is down:
        its caller looks the coordinator up again (Java's ``markCoordinatorUnknown``)
        or the partition's leader, loading the metadata, which skips brokers backing
        off, back to the bootstrap addresses when every known broker refuses (KIP-899).
        """
        fetch = getattr(call, "request_class", type(call)) is FetchMessage
        conn = self.pool.connection(broker, coordinator=coordinator, fetch=fetch)
        bounds = _bounds(call, min_version, max_version)
        return self.pool.send(
            conn, call, settled, **bounds, expect_response=expect_response, timeout=timeout
        )

    def _broker_unreachable(self, conn: BrokerConnection) -> None:
        """A known broker that requests wanted cannot be connected to: reload the
        metadata (in a moment: the failed attempt is being handled), as Java's client
        does after a failed connection, so that a broker the cluster dropped or moved
        is dropped here too (its connections closed).  Not while a load is under way:
        it will show the same."""
        if self.closed or self._loads.loading or self._reload_call is not None:
            return
        self._reload_call = self.reactor.callLater(0, self._reload)

    def _reload(self) -> None:
        self._reload_call = None
        topics = sorted(set(self.cache.topic_partitions) | set(self.cache.topic_errors))
        self.load_metadata(topics).addErrback(self._reload_failed)

    def _reload_failed(self, failure: Failure) -> None:
        log.debug("Metadata reload failed: {error}", error=failure.getErrorMessage())

    async def request_any(
        self, call: Any, min_version: int | None = None, max_version: int | None = None
    ) -> Any:
        """The response to *call* from any broker that answers.

        Known brokers are tried first, connected ones before the others, in
        random order, skipping those that failed to connect last time; then the
        bootstrap hosts, each over a connection of its own.  A broker that
        cannot be reached, drops the connection, times out or sends garbage
        is skipped; a broker error in a decoded response is the caller's, and so
        is a broker's ApiVersions answer that it lacks the API (or the version
        the call needs).

        :raises NoCommonVersionError: the first broker that answered does not
            support the call.
        :raises KafkaUnavailableError: no broker answered.
        """
        bounds = _bounds(call, min_version, max_version)
        tried = _Tried()
        for broker in self._candidates():
            answered, response = await self._ask(self.pool.connection(broker), call, bounds, tried)
            if answered:
                return response
        hosts = list(self.bootstrap_hosts)
        if self.cache.brokers and not self._rebootstrap_enabled:
            hosts = []  # metadata.recovery.strategy=none
        self._random.shuffle(hosts)
        for host in hosts:
            refusal = self._refusals.get(host)
            wait = 0.0 if refusal is None else refusal.until - self.reactor.seconds()
            if refusal is not None and wait > 0:
                tried.add(host, refusal.error, f" (not retried for another {wait:.1f} s)")
                continue
            conn = self.pool.open(*host)
            try:
                answered, response = await self._ask(conn, call, bounds, tried, host)
            finally:
                self.pool.release(conn)
            if answered:
                self._refusals.pop(host, None)
                return response
        error, cause = self._unavailable(call, hosts, tried)
        raise error from cause

    async def _ask(
        self,
        conn: BrokerConnection,
        call: Any,
        bounds: dict[str, Any],
        tried: _Tried,
        bootstrap: HostPort | None = None,
    ) -> tuple[bool, Any]:
        """Whether *conn*'s broker answered *call*, and its answer; how it failed goes to
        *tried* (and, for a *bootstrap* host, to its refusals)."""
        try:
            return True, await self.pool.send(conn, call, **bounds)
        except (CancelledError, NoCommonVersionError):
            raise
        except KafkaError as e:
            error = e if bootstrap is None else self._refuse(bootstrap, e)
            tried.add((conn.host, conn.port), error)
            return False, None

    def _unavailable(
        self, call: Any, hosts: list[HostPort], tried: _Tried
    ) -> tuple[KafkaUnavailableError, KafkaError | None]:
        """The error that no broker answered *call*, and its cause."""
        refusals = (self._refusals.get(h) for h in hosts)
        refused = [r.error for r in refusals if r is not None and isinstance(r.error, Refused)]
        if hosts and len(refused) == len(hosts) and not self.cache.brokers:
            addresses = ", ".join(format_host_port(h, p) for h, p in self.bootstrap_hosts)
            handshakes = [str(e) for e in refused if isinstance(e, HandshakeFailed)]
            if handshakes:
                message = "; ".join(handshakes)
            else:
                message = (
                    f"no Kafka broker listens at {addresses} (connection refused): "
                    "is it running, on that port?"
                )
            return NoBrokerListening(message), tried.last
        if tried.final is not None:
            return AuthenticationRefused("; ".join(tried.errors)), tried.final
        return KafkaUnavailableError(
            f"no broker answered {type(call).__name__}: "
            + "; ".join(tried.errors or ["no hosts known"])
        ), tried.last

    def _refuse(self, host: HostPort, error: KafkaError) -> KafkaError:
        """Note how *host* failed; a failure to connect is kept, with its back-off.

        Returns *error* detached from the traceback that raised it, which holds
        this call's frame and, through it, the previous failure: kept as it
        was, each refusal would keep every earlier one alive.
        """
        error = _detached(error)
        if not isinstance(error, (BrokerConnectionError, *_REFUSED)):
            self._refusals.pop(host, None)
            return error
        previous = self._refusals.get(host)
        failures = 1 if previous is None else previous.failures + 1
        backoff = self._retry_policy(failures)
        self._refusals[host] = _Refusal(error, failures, self.reactor.seconds() + backoff)
        return error

    def _candidates(self) -> list[BrokerMetadata]:
        ready, others = [], []
        for broker in self.cache.brokers.values():
            conn = self.pool.clients.get(broker.node_id)
            state = None if conn is None else conn.state
            if state is State.READY:
                ready.append(broker)
            elif state is not State.BACKING_OFF:
                others.append(broker)
        self._random.shuffle(ready)
        self._random.shuffle(others)
        return ready + others

    # -- metadata -----------------------------------------------------------

    def load_metadata(self, topics: Iterable[str] | None) -> Deferred[None]:
        """Load metadata for *topics* (``None``: all topics), coalesced with other loads."""
        return self._loads.load(topics)

    def _fetch_metadata(self, topics: tuple[str, ...] | None) -> Deferred[None]:
        return Deferred.fromCoroutine(self._metadata_round(topics))

    async def _metadata_round(self, topics: tuple[str, ...] | None) -> None:
        if self.closed:  # a load queued behind the one close() cancelled
            raise CancelledError(request_sent=False, message="the client is closed")
        now = self.reactor.seconds()
        if self._metadata_failing_since is None:
            self._metadata_failing_since = now
        elif now - self._metadata_failing_since > self._rebootstrap_trigger:
            self.rebootstrap(f"no metadata for {now - self._metadata_failing_since:.0f} s")
        call = MetadataCall(topics, self._answered)
        response = await self.request_any(call)
        if response.error_code == ErrorCode.REBOOTSTRAP_REQUIRED and self._rebootstrap_enabled:
            self.rebootstrap("the broker answered REBOOTSTRAP_REQUIRED")
            response = await self.request_any(call)
        [snapshot] = call.parse(response)
        if self.closed:
            return
        self._metadata_failing_since = None
        self._apply(self.cache.merge(snapshot))
        self._answered.retain(self.cache.topic_errors)
        self._schedule_refresh()

    def rebootstrap(self, why: str) -> None:
        """Forget every known broker (closing their connections): the next request
        goes to the bootstrap hosts.  Nothing to do under the ``none`` strategy."""
        if not self._rebootstrap_enabled or not self.cache.brokers:
            return
        log.info("rebootstrapping from {hosts}: {why}", hosts=self.bootstrap_hosts, why=why)
        self._metadata_failing_since = self.reactor.seconds()
        self._apply(self.cache.update_brokers((), complete=True))

    def _apply(self, changes: BrokerChanges) -> None:
        for node_id in changes.removed | changes.moved:
            self.pool.discard(node_id)

    def _schedule_refresh(self) -> None:
        if self._max_age is None or self.closed:
            return
        if self._refresh_call is None or not self._refresh_call.active():
            self._refresh_call = self.reactor.callLater(self._max_age, self._refresh)

    def _refresh(self) -> None:
        """Reload the metadata of every known topic (and the broker list)."""
        self._refresh_call = None
        topics = sorted(set(self.cache.topic_partitions) | set(self.cache.topic_errors))
        d = self.load_metadata(topics)
        d.addErrback(self._refresh_failed)

    def _refresh_failed(self, failure: Failure) -> None:
        log.warn("Periodic metadata refresh failed: {error}", error=failure.getErrorMessage())
        self._schedule_refresh()

    async def leaders(
        self, keys: Iterable[TopicAndPartition]
    ) -> dict[TopicAndPartition, BrokerMetadata]:
        """The leader of each partition, loading the metadata of unknown ones in one request.

        :raises PartitionUnavailableError: a partition is not in the metadata.
        :raises TopicAuthorizationFailed: the metadata refused the topic (and so on
            for the topic errors that are not retriable).
        :raises LeaderUnavailableError: a partition has no leader.
        """
        keys = list(keys)
        missing = {k.topic for k in keys if self.cache.leader(k) is None}
        if missing:
            await self.load_metadata(missing)
        leaders = {}
        for key in keys:
            try:
                broker = self.cache.topics_to_brokers[key]
            except KeyError:
                self._raise_final_topic_error(key.topic)
                raise PartitionUnavailableError(f"{key} not available") from None
            if broker is None:
                raise LeaderUnavailableError(
                    f"leader not available for topic {key.topic} partition {key.partition}"
                )
            leaders[key] = broker
        return leaders

    def _raise_final_topic_error(self, topic: str) -> None:
        """Raise the topic's error from the metadata if waiting will not cure it
        (TOPIC_AUTHORIZATION_FAILED, say), rather than report a missing partition."""
        code = self.cache.topic_errors.get(topic, 0)
        if code:
            error = BrokerResponseError.from_errno(code, f"topic {topic!r}")
            if not error.retriable:
                raise error

    # -- coordinators -------------------------------------------------------

    def coordinator(self, group: str) -> Deferred[BrokerMetadata]:
        """The coordinator of *group*, from the cache or looked up."""
        known = self.cache.coordinators.get(group)
        return succeed(known) if known is not None else self.load_coordinator(group)

    def load_coordinator(self, group: str) -> Deferred[BrokerMetadata]:
        """Look up *group*'s coordinator; concurrent lookups share one request.

        :raises CoordinatorNotAvailable: (in the Deferred) it could not be determined;
            the broker's own error if it is final (GroupAuthorizationFailed).
        """
        shared = self._coordinator_loads.get(group)
        if shared is not None:
            return shared.wait()
        shared = self._coordinator_loads[group] = SharedResult()
        waiter = shared.wait()
        d = Deferred.fromCoroutine(self._coordinator_round(group))
        d.addBoth(self._coordinator_found, group, shared)
        return waiter

    async def _coordinator_round(self, group: str) -> BrokerMetadata:
        """FindCoordinator, repeated while the broker answers that the coordinator is
        not available yet (Kafka creating ``__consumer_offsets``, or loading it), for
        at most the client's timeout."""
        call = FindCoordinatorCall(group)

        async def find() -> list[BrokerMetadata]:
            return list(call.parse(await self.request_any(call)))

        try:
            [broker] = await retrying(
                self.reactor,
                find,
                retry_backoff(self._random.uniform),
                retriable=_coordinator_pending,
                deadline=self.reactor.seconds() + self._coordinator_timeout,
                what=f"FindCoordinator for group {group!r}",
            )
        except (CancelledError, AuthenticationRefused):
            raise  # credentials refused: no coordinator will change that either
        except KafkaError as e:
            self.cache.reset_groups(group)
            if isinstance(e, BrokerResponseError) and not e.retriable and e.errno is not None:
                # GROUP_AUTHORIZATION_FAILED, say: no coordinator will change that.
                detail = f"group {group!r}" + "".join(f": {arg}" for arg in e.args[:1])
                raise BrokerResponseError.from_errno(e.errno, detail) from e
            raise CoordinatorNotAvailable(
                f"coordinator for group {group!r} not available: {e}"
            ) from e
        if not self.closed:
            self._apply(self.cache.update_brokers([broker], complete=False))
            self.cache.coordinators[group] = broker
        return broker

    def _coordinator_found(self, result: Any, group: str, shared: SharedResult) -> None:
        del self._coordinator_loads[group]
        shared.settle(result)

    async def request_coordinator(self, group: str, call: Any, **options: Any) -> Any:
        """Send *call* to *group*'s coordinator; forget the coordinator if it moved.

        *options* are those of :meth:`request`.
        """
        broker = await self.coordinator(group)
        try:
            response = await self.request(broker, call, coordinator=True, **options)
        except KafkaError:
            self.note_lost_coordinator(group, Failure())
            raise
        if getattr(response, "error_code", 0) in COORDINATOR_MOVED:
            self.cache.reset_groups(group)
        return response

    # -- invalidation and shutdown ------------------------------------------

    def hint_leader(
        self, key: TopicAndPartition, leader_id: int, epoch: int, endpoints: Any
    ) -> bool:
        """Move *key* to broker *leader_id* (leader *epoch*), its address from
        *endpoints* (a response's ``node_endpoints``) or the cache; False when neither
        knows it or the cache refuses the hint (KIP-951)."""
        given = [e for e in endpoints if e.node_id == leader_id]
        if given:
            self._apply(
                self.cache.update_brokers(
                    [BrokerMetadata(leader_id, given[0].host, given[0].port)], complete=False
                )
            )
        broker = self.cache.brokers.get(leader_id)
        return broker is not None and self.cache.hint_leader(key, broker, epoch)

    def note_lost_leader(self, keys: Iterable[TopicAndPartition], failure: Failure) -> None:
        if lost_broker(failure):
            for key in keys:
                self.cache.reset_leader(key)

    def note_lost_coordinator(self, group: str, failure: Failure) -> None:
        """Forget *group*'s coordinator if its broker may be gone, and ask for the live
        brokers (as Java's client asks for metadata after a disconnection): once the
        cluster has noticed, a dead broker is dropped and its connections closed."""
        if lost_broker(failure):
            self.cache.reset_groups(group)
            if not self.closed:
                self.load_metadata(()).addErrback(self._brokers_not_reloaded)

    def _brokers_not_reloaded(self, failure: Failure) -> None:
        log.info("Reloading the brokers failed: {error}", error=failure.getErrorMessage())

    def close(self) -> Deferred[Any]:
        self.closed = True
        for call in (self._refresh_call, self._reload_call):
            if call is not None and call.active():
                call.cancel()
        self._refresh_call = self._reload_call = None
        self.cache.reset_all()
        self.cache.brokers.clear()
        return self.pool.close()


def _bounds(call: Any, min_version: int | None, max_version: int | None) -> dict[str, Any]:
    """Version bounds: those given, else the call's own (the client's calls carry them)."""
    return {
        "min_version": getattr(call, "min_version", None) if min_version is None else min_version,
        "max_version": getattr(call, "max_version", None) if max_version is None else max_version,
    }


def _detached(error: KafkaError) -> KafkaError:
    """*error* without the traceback and context it was raised with (frames keep
    their locals alive: connections, earlier errors)."""
    error.__traceback__ = None
    error.__context__ = None
    return error


def _coordinator_pending(error: BaseException) -> bool:
    """The broker answered that the group's coordinator is not ready yet."""
    return isinstance(error, (CoordinatorNotAvailable, CoordinatorLoadInProgress))
