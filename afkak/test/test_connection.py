"""Tests for afkak.connection.BrokerConnection against an in-memory fake broker.

Bytes move through twisted.test.iosim between a real BrokerConnection and a
real afkak.testing KafkaServerProtocol; time is a Clock.  Nothing of ours is
mocked.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from twisted.internet.abstract import FileDescriptor
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.endpoints import HostnameEndpoint
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.interfaces import IStreamClientEndpoint, IWriteDescriptor
from twisted.internet.task import Clock
from twisted.logger import capturedLogs
from twisted.python.failure import Failure
from twisted.test import iosim
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from afkak.common import (
    BrokerConnectionError,
    CancelledError,
    ClientError,
    DecodeError,
    EncodeError,
    NoCommonVersionError,
    RequestTimedOutError,
)
from afkak.connection import BrokerConnection, State, VersionedRequest, default_endpoint_factory
from afkak.connection._interlayer import TRANSITIONS, Event, choose_version
from afkak.connection._lifecycle import TABLE
from afkak.protocol.header import encode_response
from afkak.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from afkak.test.helpers import calls_to
from afkak.testing._server import KafkaServerFactory

API_VERSIONS = ApiVersionsRequest.API_KEY
METADATA = MetadataRequest.API_KEY
PRODUCE = ProduceRequest.API_KEY
SASL_HANDSHAKE = SaslHandshakeRequest.API_KEY

DEFAULT_VERSIONS = {
    API_VERSIONS: (0, 4),
    METADATA: (0, 12),
    PRODUCE: (0, 11),
    SASL_HANDSHAKE: (0, 1),
}


def metadata(*topics: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics])


def topics_of(response: Any) -> list[str]:
    return [t.name for t in response.topics]


def api_versions_response(
    versions: dict[int, tuple[int, int]], error_code: int = 0
) -> ApiVersionsResponse:
    version = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            version(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in versions.items()
        ],
    )


class Broker:
    """The handler of the fake broker in these tests.

    Answers ApiVersions with ``versions``, Metadata by echoing the topic names
    (or through ``special[topic](header)``), SaslHandshake and Produce with
    empty successes.  Records every request; with ``hold`` set, keeps answers
    (other than ApiVersions) until :meth:`release`.
    """

    def __init__(self, versions: dict[int, tuple[int, int]] = DEFAULT_VERSIONS) -> None:
        self.versions = dict(versions)
        self.received: list[tuple[Any, Any]] = []
        self.hold = False
        self.held: list[tuple[Deferred[Any], Any]] = []
        self.special: dict[str, Callable[[Any], Any]] = {}

    def __call__(self, header: Any, request: Any) -> Any:
        self.received.append((header, request))
        if header.request_api_key == API_VERSIONS:
            return self.api_versions(header)
        answer = self.answer(header, request)
        if self.hold:
            waiting: Deferred[Any] = Deferred()
            self.held.append((waiting, answer))
            return waiting
        return answer

    def api_versions(self, header: Any) -> Any:
        return api_versions_response(self.versions)

    def answer(self, header: Any, request: Any) -> Any:
        if header.request_api_key == METADATA:
            names = [t.name for t in request.topics or []]
            for name in names:
                if name in self.special:
                    return self.special[name](header)
            return MetadataResponse(
                topics=[MetadataResponse.MetadataResponseTopic(name=n) for n in names]
            )
        if header.request_api_key == SASL_HANDSHAKE:
            return SaslHandshakeResponse(mechanisms=["PLAIN"])
        return ProduceResponse()

    def release(self, index: int = 0) -> None:
        waiting, answer = self.held.pop(index)
        waiting.callback(answer)

    def headers(self, api_key: int) -> list[Any]:
        return [h for h, _ in self.received if h.request_api_key == api_key]

    def topics(self) -> list[list[str]]:
        """Topic names of every Metadata request received, in order."""
        return [
            [t.name for t in r.topics or []]
            for h, r in self.received
            if h.request_api_key == METADATA
        ]


class ClientTransport(iosim.FakeTransport):
    """iosim's transport for the client side, recording what the connection asks of it."""

    tcp_no_delay = False
    reading_paused = False

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.tcp_no_delay = enabled

    def pauseProducing(self) -> None:
        self.reading_paused = True

    def resumeProducing(self) -> None:
        self.reading_paused = False


@implementer(IWriteDescriptor)
class WrappingTransport(ClientTransport):
    """As a wrapper of Twisted's TCP transport (TLS): ``write`` holds bytes until
    ``doWrite`` sends them, and it looks like a write descriptor.

    The reactor calls ``doWrite`` at its next iteration (:meth:`Network.flush`
    does, counting those in :attr:`reactor_writes`); a protocol may call it
    first.  ``writeSomeData`` is the wrapped socket's (as a TLS wrapper's
    attribute lookups reach it): what it sends skips the wrapper.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held: list[bytes] = []
        self.sends: list[bytes] = []
        self.reactor_writes = 0
        self.bypassed: list[bytes] = []
        self.written_while_closing = False

    def write(self, data: bytes) -> None:
        self.held.append(data)

    def writeSomeData(self, data: bytes) -> int:
        self.bypassed.append(data)
        return len(data)

    def doWrite(self) -> None:
        if self.disconnecting:
            # Twisted's doWrite of a closing transport returns what the reactor
            # needs to finish the close: a protocol's call would lose it.
            self.written_while_closing = True
        self.reactor_write()

    def reactor_write(self) -> None:
        if self.held:
            data = b"".join(self.held)
            self.held = []
            self.sends.append(data)
            self.stream.append(data)  # what a closing transport holds is still sent


class SocketTransport(WrappingTransport, FileDescriptor):
    """As Twisted's TCP transport itself (a ``FileDescriptor``): ``write`` also
    registers for writing, and ``writeSomeData`` sends at once, at most
    :attr:`accept` bytes (the socket's room).  ``dataBuffer``, ``offset`` and
    ``_tempDataLen`` show what is held, as Twisted's."""

    connected = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registrations = 0
        self.accept = self.SEND_LIMIT

    @property  # type: ignore[override]
    def _tempDataLen(self) -> int:
        return sum(map(len, self.held))

    def write(self, data: bytes) -> None:
        if not self.held:
            self.registrations += 1  # startWriting: the reactor polls it writable
        super().write(data)

    def writeSomeData(self, data: bytes) -> int:
        taken = data[: self.accept]
        self.sends.append(taken)
        self.stream.append(taken)
        return len(taken)


class Network:
    """In-memory TCP between BrokerConnections and fake brokers, moved by iosim pumps."""

    def __init__(self, clock: Clock, transport: type[ClientTransport] = ClientTransport) -> None:
        self.clock = clock
        self.servers: dict[tuple[str, int], KafkaServerFactory] = {}
        self.pumps: list[iosim.IOPump] = []
        self.transports: list[ClientTransport] = []
        self.transport_class = transport

    def serve(
        self, handle: Any, host: str = "broker", port: int = 9092, **kwargs: Any
    ) -> KafkaServerFactory:
        factory = self.servers[host, port] = KafkaServerFactory(handle, self.clock, **kwargs)
        return factory

    def endpoint_factory(self, reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
        return MemoryEndpoint(self, host, port)

    def connect(self, host: str, port: int, factory: Any) -> Deferred[Any]:
        server_factory = self.servers.get((host, port))
        server = None if server_factory is None else server_factory.buildProtocol(None)
        if server is None:
            return fail(ConnectionRefusedError(host, port))
        client = factory.buildProtocol(None)
        transport = self.transport_class(client, isServer=False)
        server_transport = iosim.FakeTransport(server, isServer=True)
        self.pumps.append(iosim.connect(server, server_transport, client, transport, greet=False))
        self.transports.append(transport)
        return succeed(client)

    def flush(self) -> None:
        for _ in range(1000):
            for transport in self.transports:  # the reactor's iteration writes what is held
                if isinstance(transport, WrappingTransport) and transport.held:
                    transport.reactor_writes += 1
                    transport.reactor_write()
            if not any([pump.pump() for pump in self.pumps]):
                return
        raise AssertionError("the network never went quiet")

    @property
    def transport(self) -> ClientTransport:
        """The client transport of the latest connection."""
        return self.transports[-1]


@implementer(IStreamClientEndpoint)
class MemoryEndpoint:
    def __init__(self, network: Network, host: str, port: int) -> None:
        self.network = network
        self.host = host
        self.port = port

    def connect(self, protocolFactory: Any) -> Deferred[Any]:
        return self.network.connect(self.host, self.port, protocolFactory)


class LoopbackTransport(iosim.FakeTransport):
    """Delivers each write, and closing, to the peer before returning."""

    peer: LoopbackTransport

    def write(self, data: bytes) -> None:
        self.peer.protocol.dataReceived(data)

    def loseConnection(self) -> None:
        for end in (self, self.peer):
            if not end.disconnected:
                end.disconnected = True
                end.protocol.connectionLost(Failure(ConnectionDone()))


@implementer(IStreamClientEndpoint)
class LoopbackEndpoint:
    def __init__(self, server_factory: KafkaServerFactory) -> None:
        self.server_factory = server_factory

    def connect(self, protocolFactory: Any) -> Deferred[Any]:
        server = self.server_factory.buildProtocol(None)
        client = protocolFactory.buildProtocol(None)
        client_transport = LoopbackTransport(client, isServer=False)
        server_transport = LoopbackTransport(server, isServer=True)
        client_transport.peer, server_transport.peer = server_transport, client_transport
        server.makeConnection(server_transport)
        client.makeConnection(client_transport)
        return succeed(client)


@implementer(IStreamClientEndpoint)
class HangingEndpoint:
    """An endpoint whose connection attempts never complete by themselves."""

    def __init__(self) -> None:
        self.attempts: list[Deferred[Any]] = []

    def connect(self, protocolFactory: Any) -> Deferred[Any]:
        self.attempts.append(Deferred())
        return self.attempts[-1]


def retry_policy(failures: int) -> float:
    return 10.0 * failures


class ConnectionTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.net = Network(self.clock)
        self.broker = Broker()
        self.server = self.net.serve(self.broker)
        self.timeouts: list[tuple[BrokerConnection, bool]] = []

    def connection(self, **kwargs: Any) -> BrokerConnection:
        kwargs.setdefault("retry_policy", retry_policy)
        kwargs.setdefault("endpoint_factory", self.net.endpoint_factory)
        kwargs.setdefault(
            "on_timeout", lambda connection, sent: self.timeouts.append((connection, sent))
        )
        connection = BrokerConnection(self.clock, "broker", 9092, client_id="tests", **kwargs)
        self.addCleanup(self.assert_closes_cleanly, connection)
        return connection

    def ready(self, **kwargs: Any) -> BrokerConnection:
        connection = self.connection(**kwargs)
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        return connection

    def assert_closes_cleanly(self, connection: BrokerConnection) -> None:
        closed = connection.close()
        self.net.flush()
        self.assertIsNone(self.successResultOf(closed))
        self.assertIs(connection.state, State.CLOSED)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def assert_answered(self, d: Deferred[Any], *topics: str) -> None:
        self.assertEqual(topics_of(self.successResultOf(d)), list(topics))


class LifecycleTests(ConnectionTestCase):
    def test_closed_after_api_versions_alone_names_sasl(self) -> None:
        """Issue 33: a client without SASL on a SASL listener: Kafka answers ApiVersions,
        then closes the connection on the next request.  The error says so (retriable:
        a broker going away looks the same); once answered, no such hint."""
        self.broker.hold = True
        connection = self.connection()
        d = connection.request(metadata("t"))
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.net.transport.protocol.connectionLost(Failure(ConnectionDone()))
        error = self.failureResultOf(d, BrokerConnectionError).value
        self.assertIn("is this the broker's SASL port?", str(error))
        self.broker.hold = False
        self.clock.advance(10)
        self.net.flush()
        answered = connection.request(metadata("a"))
        self.net.flush()
        self.assert_answered(answered, "a")
        self.broker.hold = True
        d = connection.request(metadata("t"))
        self.net.flush()
        self.net.transport.protocol.connectionLost(Failure(ConnectionDone()))
        error = self.failureResultOf(d, BrokerConnectionError).value
        self.assertNotIn("SASL", str(error))

    def test_idle_until_first_request(self) -> None:
        connection = self.connection()
        self.assertIs(connection.state, State.IDLE)
        self.assertEqual(self.net.transports, [])
        d = connection.request(metadata("t"))
        self.assertIs(connection.state, State.NEGOTIATING)
        self.assertNoResult(d)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assert_answered(d, "t")

    def test_connect_sets_nodelay_and_registers_as_push_producer(self) -> None:
        connection = self.ready()
        self.assertTrue(self.net.transport.tcp_no_delay)
        self.assertIs(self.net.transport.producer, connection._protocol)
        self.assertTrue(self.net.transport.streamingProducer)

    def test_negotiates_with_highest_api_versions_version(self) -> None:
        connection = self.ready()
        [(header, request)] = self.broker.received
        self.assertEqual((header.request_api_key, header.request_api_version), (API_VERSIONS, 4))
        self.assertEqual(header.client_id, "tests")
        self.assertEqual(request.client_software_name, "afkak")
        self.assertEqual(connection.api_versions, DEFAULT_VERSIONS)

    def test_refused_connection_backs_off_by_policy_and_failures_reset_when_ready(self) -> None:
        del self.net.servers["broker", 9092]
        connection = self.connection(request_timeout=1000)
        d = connection.request(metadata("t"))
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(9.9)
        self.assertEqual(self.net.transports, [])
        self.clock.advance(0.1)  # retry 1 after 10 s: refused again
        self.assertIs(connection.state, State.BACKING_OFF)
        server = self.net.serve(self.broker)
        self.clock.advance(19.9)
        self.assertEqual(self.net.transports, [])
        self.clock.advance(0.1)  # retry 2 after 20 s
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assert_answered(d, "t")

        server.drop_connections()  # the first drop after a good connection waits 10 s again
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(9.9)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(0.1)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assertEqual(len(self.net.transports), 2)

    def test_connect_timeout(self) -> None:
        endpoint = HangingEndpoint()
        connection = self.connection(endpoint_factory=lambda *_: endpoint, connect_timeout=5)
        connection.connect()
        self.assertIs(connection.state, State.CONNECTING)
        self.clock.advance(5)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.assertTrue(endpoint.attempts[0].called)  # the attempt was cancelled
        self.clock.advance(10)
        self.assertIs(connection.state, State.CONNECTING)
        self.assertEqual(len(endpoint.attempts), 2)

    def test_close_when_idle(self) -> None:
        connection = self.connection()
        self.assertIsNone(self.successResultOf(connection.close()))
        self.assertIs(connection.state, State.CLOSED)
        self.assertEqual(self.net.transports, [])

    def test_close_while_connecting_cancels_the_attempt(self) -> None:
        endpoint = HangingEndpoint()
        connection = self.connection(endpoint_factory=lambda *_: endpoint)
        d = connection.request(metadata("t"))
        self.assertIsNone(self.successResultOf(connection.close()))
        self.assertTrue(endpoint.attempts[0].called)
        error = self.failureResultOf(d, CancelledError).value
        self.assertIs(error.request_sent, False)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_close_while_backing_off_cancels_the_retry(self) -> None:
        del self.net.servers["broker", 9092]
        connection = self.connection()
        connection.connect()
        self.assertIs(connection.state, State.BACKING_OFF)
        self.assertIsNone(self.successResultOf(connection.close()))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_close_fails_queued_and_in_flight_requests_and_fires_when_closed(self) -> None:
        connection = self.ready(max_in_flight=1)
        self.broker.hold = True
        sent = connection.request(metadata("a"))
        queued = connection.request(metadata("b"))
        self.net.flush()
        self.assertIsNotNone(self.net.transport.producer)
        closed = connection.close()
        # Unregistered before loseConnection: TLS holds its shutdown while one is registered.
        self.assertIsNone(self.net.transport.producer)
        self.assertIs(connection.state, State.CLOSED)
        self.assertIs(self.failureResultOf(sent, CancelledError).value.request_sent, True)
        self.assertIs(self.failureResultOf(queued, CancelledError).value.request_sent, False)
        self.assertNoResult(closed)
        self.net.flush()
        self.assertIsNone(self.successResultOf(closed))
        self.assertEqual(self.server.connections, [])
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_requests_after_close_fail_with_client_error(self) -> None:
        connection = self.ready()
        connection.close()
        self.failureResultOf(connection.request(metadata("t")), ClientError)
        self.net.flush()
        self.assertIsNone(self.successResultOf(connection.close()))  # closing twice is fine

    def test_close_while_negotiating(self) -> None:
        connection = self.connection()
        connection.connect()
        self.assertIs(connection.state, State.NEGOTIATING)
        closed = connection.close()
        self.net.flush()
        self.assertIsNone(self.successResultOf(closed))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_close_from_a_callback_of_a_dropped_request_leaves_no_timer(self) -> None:
        connection = self.ready()
        self.broker.hold = True
        d = connection.request(metadata("a"))
        self.net.flush()
        closed: list[Deferred[None]] = []
        d.addErrback(lambda failure: closed.append(connection.close()))
        self.server.drop_connections()
        self.net.flush()
        self.assertIs(connection.state, State.CLOSED)
        self.assertIsNone(self.successResultOf(closed[0]))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_endpoint_factory_error_backs_off(self) -> None:
        def broken(reactor: Any, host: str, port: int) -> IStreamClientEndpoint:
            raise ValueError(f"cannot resolve {host}")

        connection = self.connection(endpoint_factory=broken)
        connection.connect()
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_transition_table_rejects_unknown_transitions(self) -> None:
        self.assertIs(TABLE.next(State.READY, Event.DROPPED), State.BACKING_OFF)
        self.assertRaises(RuntimeError, TABLE.next, State.CLOSED, Event.RETRY)
        self.assertRaises(RuntimeError, TABLE.next, State.IDLE, Event.NEGOTIATED)
        self.assertEqual({e for s, e in TRANSITIONS if s is State.CLOSED}, set())

    def test_declared_no_ops(self) -> None:
        """connect, close, disconnect and re-authentication where they mean nothing
        change nothing."""
        for state, event in [
            (State.CLOSED, Event.CONNECT),
            (State.READY, Event.CONNECT),
            (State.CLOSED, Event.CLOSE),
            (State.IDLE, Event.DROPPED),
            (State.BACKING_OFF, Event.DROPPED),
            (State.AUTHENTICATING, Event.REAUTHENTICATE),
            (State.REAUTHENTICATING, Event.REAUTHENTICATE),
            (State.BACKING_OFF, Event.REAUTHENTICATE),
        ]:
            self.assertIsNone(TABLE.next(state, event), (state, event))
        connection = self.connection()
        connection.disconnect()
        self.assertIs(connection.state, State.IDLE)
        self.successResultOf(connection.close())
        self.successResultOf(connection.close())
        connection.connect()
        self.assertIs(connection.state, State.CLOSED)

    def test_default_endpoint_is_a_hostname_endpoint(self) -> None:
        from twisted.internet import reactor  # only to build the endpoint; nothing runs

        endpoint = default_endpoint_factory(reactor, "kafka.example", 9092)
        self.assertIsInstance(endpoint, HostnameEndpoint)

    def test_max_in_flight_must_be_positive(self) -> None:
        self.assertRaises(ValueError, BrokerConnection, self.clock, "h", 1, max_in_flight=0)

    def test_disconnect_drops_and_reconnects(self) -> None:
        connection = self.ready()
        connection.disconnect()
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(10)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assertEqual(len(self.net.transports), 2)


class NegotiationTests(ConnectionTestCase):
    def test_unsupported_version_answer_in_v0_layout_gives_the_retry_version(self) -> None:
        """KIP-511: a broker that only knows ApiVersions 0-2 answers v4 in the v0 layout."""
        self.broker.versions[API_VERSIONS] = (0, 2)

        def api_versions(header: Any) -> Any:
            if header.request_api_version > 2:
                rejection = api_versions_response({API_VERSIONS: (0, 2)}, error_code=35)
                return encode_response(rejection, 0, header.correlation_id)
            return api_versions_response(self.broker.versions)

        self.broker.api_versions = api_versions  # type: ignore[method-assign]
        connection = self.ready()
        self.assertEqual([h.request_api_version for h in self.broker.headers(API_VERSIONS)], [4, 2])
        self.assertEqual(connection.api_versions[API_VERSIONS], (0, 2))  # type: ignore[index]

    def test_librdkafka_mock_answer_retries_with_v0(self) -> None:
        """The mock answers ApiVersions > 2 with a body whose first two bytes alone are standard."""

        def api_versions(header: Any) -> Any:
            if header.request_api_version > 2:
                body = (
                    struct.pack(">ih", header.correlation_id, 35)
                    + b"\x02\x00\x12\x00\x00\x00\x02\x00"
                )
                return struct.pack(">i", len(body)) + body
            return api_versions_response(self.broker.versions)

        self.broker.api_versions = api_versions  # type: ignore[method-assign]
        connection = self.ready()
        self.assertEqual([h.request_api_version for h in self.broker.headers(API_VERSIONS)], [4, 0])
        d = connection.request(metadata("t"))
        self.net.flush()
        self.assert_answered(d, "t")
        self.assertEqual(self.broker.headers(METADATA)[0].request_api_version, 12)

    def test_negotiation_error_drops_the_connection_and_keeps_requests_queued(self) -> None:
        rejection = api_versions_response({}, error_code=35)
        answers = [rejection, rejection, api_versions_response(DEFAULT_VERSIONS)]
        self.broker.api_versions = lambda header: answers.pop(0)  # type: ignore[method-assign]
        connection = self.connection(request_timeout=100)
        d = connection.request(metadata("t"))
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)  # 35 at v4 without a range: v0 retry
        self.assertEqual([h.request_api_version for h in self.broker.headers(API_VERSIONS)], [4, 0])
        self.clock.advance(10)
        self.net.flush()
        self.assert_answered(d, "t")
        self.assertEqual(
            [h.request_api_version for h in self.broker.headers(API_VERSIONS)], [4, 0, 4]
        )

    def test_negotiation_timeout_backs_off(self) -> None:
        never: Deferred[Any] = Deferred()
        self.broker.api_versions = lambda header: never  # type: ignore[method-assign]
        connection = self.connection(request_timeout=3)
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.NEGOTIATING)
        self.clock.advance(3)
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_undecodable_api_versions_answer_backs_off(self) -> None:
        self.broker.api_versions = lambda header: struct.pack(">ii", 4, header.correlation_id)  # type: ignore[method-assign]
        connection = self.connection()
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_implausible_api_versions_answer_backs_off(self) -> None:
        """A corrupted answer once made a READY connection that no request could use (fuzzer)."""
        for versions in (
            {METADATA: (0, 12)},  # ApiVersions itself missing
            {API_VERSIONS: (0, 4), METADATA: (9, 2)},  # min above max
            {API_VERSIONS: (0, 2), METADATA: (0, 12)},  # does not list the version it answered
            {API_VERSIONS: (0, 4), 200: (0, 12)},  # Metadata missing (its key corrupted)
        ):
            with self.subTest(versions=versions):
                self.broker.versions = versions
                connection = self.connection()
                connection.connect()
                self.net.flush()
                self.assertIs(connection.state, State.BACKING_OFF)
                connection.close()


class VersionChoiceTests(ConnectionTestCase):
    def test_highest_common_version(self) -> None:
        self.assertEqual(choose_version(MetadataRequest, {METADATA: (0, 12)}), 12)
        self.assertEqual(
            choose_version(MetadataRequest, {METADATA: (0, 99)}), MetadataRequest.MAX_VERSION
        )
        self.assertEqual(choose_version(MetadataRequest, {METADATA: (0, 12)}, max_version=9), 9)
        self.assertEqual(choose_version(MetadataRequest, {METADATA: (0, 12)}, min_version=12), 12)

    def test_never_below_the_class_minimum(self) -> None:
        """Kafka 4 still advertises Produce 0-2, which afkak does not speak."""
        with self.assertRaises(NoCommonVersionError) as caught:
            choose_version(ProduceRequest, {PRODUCE: (0, 2)})
        message = str(caught.exception)
        self.assertIn("Produce (api key 0)", message)
        self.assertIn(
            f"afkak supports {ProduceRequest.MIN_VERSION}-{ProduceRequest.MAX_VERSION}", message
        )
        self.assertIn("the broker supports 0-2", message)

    def test_caller_bounds_outside_the_broker_range(self) -> None:
        with self.assertRaises(NoCommonVersionError) as caught:
            choose_version(MetadataRequest, {METADATA: (0, 8)}, min_version=10)
        self.assertIn("the request allows 10-", str(caught.exception))
        with self.assertRaises(NoCommonVersionError):
            choose_version(MetadataRequest, {METADATA: (5, 8)}, max_version=4)

    def test_api_unknown_to_the_broker(self) -> None:
        with self.assertRaises(NoCommonVersionError) as caught:
            choose_version(MetadataRequest, {})
        self.assertIn("the broker does not support it", str(caught.exception))

    def test_no_common_version_fails_the_request_and_sends_nothing(self) -> None:
        self.broker.versions[PRODUCE] = (0, 2)
        connection = self.ready()
        d = connection.request(ProduceRequest())
        self.net.flush()
        self.failureResultOf(d, NoCommonVersionError)
        self.assertEqual(self.broker.headers(PRODUCE), [])
        self.assertIs(connection.state, State.READY)

    def test_version_is_narrowed_by_the_caller(self) -> None:
        connection = self.ready()
        d = connection.request(metadata("t"), max_version=7)
        self.net.flush()
        self.assert_answered(d, "t")
        self.assertEqual(self.broker.headers(METADATA)[0].request_api_version, 7)

    def test_builder_is_called_with_the_chosen_version(self) -> None:
        versions: list[int] = []

        def build(version: int) -> MetadataRequest:
            versions.append(version)
            return metadata(f"v{version}")

        connection = self.ready()
        d = connection.request(VersionedRequest(MetadataRequest, build))
        self.net.flush()
        self.assertEqual(versions, [12])
        self.assert_answered(d, "v12")

    def test_the_version_is_chosen_once_per_negotiation(self) -> None:
        """A request like the last one (a producer's, each send) is not matched
        against the broker's ranges again (issue 39); a new connection's
        negotiation is, and its choice is used."""
        connection = self.ready()
        with calls_to(choose_version.__code__) as calls:
            for name in "abc":
                d = connection.request(metadata(name))
                self.net.flush()
                self.assert_answered(d, name)
        self.assertEqual(len(calls), 1)
        self.broker.versions[METADATA] = (0, 9)
        connection.disconnect()
        self.clock.advance(10)
        self.net.flush()
        d = connection.request(metadata("d"))
        self.net.flush()
        self.assert_answered(d, "d")
        self.assertEqual(
            [h.request_api_version for h in self.broker.headers(METADATA)], [12, 12, 12, 9]
        )

    def test_builder_of_the_wrong_class_fails_the_request(self) -> None:
        connection = self.ready()
        d = connection.request(VersionedRequest(MetadataRequest, lambda version: ProduceRequest()))
        self.assertIn("built ProduceRequest", str(self.failureResultOf(d, TypeError).value))
        self.assertIs(connection.state, State.READY)

    def test_not_a_request(self) -> None:
        connection = self.connection()
        self.assertRaises(TypeError, connection.request, object())

    def test_encode_error_fails_only_that_request(self) -> None:
        connection = self.ready()
        bad = connection.request(
            MetadataRequest(topics=None), max_version=0
        )  # null topics needs v1+
        good = connection.request(metadata("t"))
        self.net.flush()
        self.failureResultOf(bad, EncodeError)
        self.assert_answered(good, "t")


class PipeliningTests(ConnectionTestCase):
    def test_at_most_max_in_flight_requests_are_written(self) -> None:
        connection = self.ready()
        self.broker.hold = True
        ds = [connection.request(metadata(str(i))) for i in range(7)]
        self.net.flush()
        self.assertEqual(self.broker.topics(), [[str(i)] for i in range(5)])
        self.broker.release()
        self.net.flush()
        self.assert_answered(ds[0], "0")
        self.assertEqual(len(self.broker.topics()), 6)
        while self.broker.held:
            self.broker.release()
            self.net.flush()
        for i, d in enumerate(ds[1:], 1):
            self.assert_answered(d, str(i))

    def test_max_in_flight_is_configurable(self) -> None:
        connection = self.ready(max_in_flight=1)
        self.broker.hold = True
        a = connection.request(metadata("a"))
        b = connection.request(metadata("b"))
        self.net.flush()
        self.assertEqual(self.broker.topics(), [["a"]])
        connection.close()
        self.assertIs(self.failureResultOf(a, CancelledError).value.request_sent, True)
        self.assertIs(self.failureResultOf(b, CancelledError).value.request_sent, False)

    def test_responses_matched_by_correlation_id_out_of_order(self) -> None:
        self.net.serve(self.broker, ordered=False)
        connection = self.ready()
        self.broker.hold = True
        ds = [connection.request(metadata(name)) for name in "abc"]
        self.net.flush()
        for index in (2, 1, 0):
            self.broker.release(index)
            self.net.flush()
        for name, d in zip("abc", ds, strict=True):
            self.assert_answered(d, name)

    def test_correlation_ids_count_up_per_connection(self) -> None:
        connection = self.ready()
        for name in "ab":
            connection.request(metadata(name))
        self.net.flush()
        self.assertEqual([h.correlation_id for h, _ in self.broker.received], [0, 1, 2])

    def test_request_made_while_writing_keeps_its_order(self) -> None:
        connection = self.ready()
        self.net.transport.producer.pauseProducing()
        later: list[Deferred[Any]] = []
        first = connection.request(metadata("first"), expect_response=False)
        first.addCallback(lambda _: later.append(connection.request(metadata("third"))))
        second = connection.request(metadata("second"))
        self.net.transport.producer.resumeProducing()  # writes first, whose callback asks for third
        self.net.flush()
        self.assertEqual(self.broker.topics(), [["first"], ["second"], ["third"]])
        self.assert_answered(second, "second")
        self.assert_answered(later[0], "third")

    def test_answer_delivered_while_writing(self) -> None:
        """A transport may deliver the response before its ``write`` returns."""
        endpoint = LoopbackEndpoint(self.server)
        connection = self.connection(endpoint_factory=lambda *_: endpoint, max_in_flight=1)
        ds = [connection.request(metadata(name)) for name in "ab"]
        self.assertIs(connection.state, State.READY)
        self.assert_answered(ds[0], "a")
        self.assert_answered(ds[1], "b")

    def test_unsolicited_response_is_dropped(self) -> None:
        """Test brokers answer acks=0 produce requests; the answer is dropped, not an error."""
        connection = self.ready()
        with capturedLogs() as events:
            written = connection.request(metadata("fire-and-forget"), expect_response=False)
            self.assertIsNone(self.successResultOf(written))
            self.net.flush()
        self.assertEqual(self.broker.topics(), [["fire-and-forget"]])
        self.assertIn("nobody waits for", " ".join(e["log_format"] for e in events))
        self.assertIs(connection.state, State.READY)
        d = connection.request(metadata("next"))
        self.net.flush()
        self.assert_answered(d, "next")


class WriteNowTests(ConnectionTestCase):
    """Issue 39: a request is sent in the turn it is written, not at the reactor's next
    iteration (Twisted's TCP transport holds writes until then: twisted#5303)."""

    def setUp(self) -> None:
        super().setUp()
        self.net = Network(self.clock, SocketTransport)
        self.server = self.net.serve(self.broker)

    def test_request_sent_in_its_turn(self) -> None:
        connection = self.ready()
        transport = self.net.transport
        assert isinstance(transport, SocketTransport)
        reactor_writes = transport.reactor_writes
        d = connection.request(metadata("now"))
        self.assertEqual(transport.held, [])
        self.assertEqual(len(transport.sends), 2)  # ApiVersions, then this request
        self.net.flush()
        self.assert_answered(d, "now")
        self.assertEqual(transport.reactor_writes, reactor_writes)

    def test_request_sent_without_registering_for_writes(self) -> None:
        """A frame the socket takes whole never makes the transport poll for writability
        (its write would: two ``epoll_ctl`` calls per request)."""
        connection = self.ready()
        transport = self.net.transport
        assert isinstance(transport, SocketTransport)
        d = connection.request(metadata("direct"))
        self.net.flush()
        self.assert_answered(d, "direct")
        self.assertEqual((transport.registrations, transport.reactor_writes), (0, 0))

    def test_what_the_socket_does_not_take_is_sent_in_order(self) -> None:
        connection = self.ready()
        transport = self.net.transport
        assert isinstance(transport, SocketTransport)
        transport.accept = 10  # the socket's buffer is nearly full
        first = connection.request(metadata("first"))
        self.assertEqual(len(transport.sends[-1]), 10)
        self.assertEqual(transport.registrations, 1)  # the rest waits for writability
        transport.accept = transport.SEND_LIMIT
        second = connection.request(metadata("second"))  # behind the rest, not past it
        self.assertEqual(len(transport.sends[-1]), 10)
        self.net.flush()
        self.assertEqual(self.broker.topics(), [["first"], ["second"]])
        self.assert_answered(first, "first")
        self.assert_answered(second, "second")

    def test_requests_of_one_pump_sent_together(self) -> None:
        connection = self.connection()
        ds = [connection.request(metadata(name)) for name in "abc"]
        self.net.flush()  # connects; the ApiVersions answer makes it ready: one pump writes all
        transport = self.net.transport
        assert isinstance(transport, SocketTransport)
        self.assertEqual(len(transport.sends), 2)  # ApiVersions, then the three
        self.assertEqual(transport.reactor_writes, 0)
        self.assertEqual(self.broker.topics(), [["a"], ["b"], ["c"]])
        for name, d in zip("abc", ds, strict=True):
            self.assert_answered(d, name)

    def test_a_wrapping_transport_writes_through_its_own_write(self) -> None:
        """A TLS wrapper of a TCP transport looks like a write descriptor: frames
        go through its write (to be encrypted), then its doWrite sends them now."""
        self.net = Network(self.clock, WrappingTransport)
        self.server = self.net.serve(self.broker)
        connection = self.ready()
        transport = self.net.transport
        assert isinstance(transport, WrappingTransport)
        reactor_writes = transport.reactor_writes
        d = connection.request(metadata("wrapped"))
        self.assertEqual(transport.held, [])
        self.net.flush()
        self.assert_answered(d, "wrapped")
        self.assertEqual((transport.bypassed, transport.reactor_writes), ([], reactor_writes))

    def test_closed_while_writing_leaves_the_close_to_the_reactor(self) -> None:
        """A request's callback closing the connection as a pump writes it."""
        connection = self.connection()
        closed: list[Deferred[None]] = []
        written = connection.request(metadata("last"), expect_response=False)
        written.addCallback(lambda _: closed.append(connection.close()))
        self.net.flush()  # ready: the pump writes "last", whose callback closes
        transport = self.net.transport
        assert isinstance(transport, SocketTransport)
        self.assertFalse(transport.written_while_closing)
        self.assertEqual(self.broker.topics(), [["last"]])
        self.assertIsNone(self.successResultOf(closed[0]))


class TimeoutTests(ConnectionTestCase):
    def test_queued_request_times_out_and_is_never_sent(self) -> None:
        del self.net.servers["broker", 9092]
        connection = self.connection(request_timeout=5)
        d = connection.request(metadata("late"))
        self.clock.advance(5)
        error = self.failureResultOf(d, RequestTimedOutError).value
        self.assertIn("not sent within 5 s", str(error))
        self.assertEqual(self.timeouts, [(connection, False)])
        self.net.serve(self.broker)
        self.clock.advance(10)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assertEqual(self.broker.topics(), [])

    def test_in_flight_timeout_frees_its_slot_and_drops_the_late_response(self) -> None:
        self.net.serve(self.broker, ordered=False)
        connection = self.ready(max_in_flight=2, request_timeout=5)
        self.broker.hold = True
        first = connection.request(metadata("a"))
        answered = connection.request(metadata("x"), timeout=60)
        self.net.flush()
        self.broker.release(1)  # the broker is alive: it answers x
        self.net.flush()
        self.assert_answered(answered, "x")
        ds = [connection.request(metadata(name), timeout=60) for name in "bc"]
        self.net.flush()
        self.assertEqual(self.broker.topics(), [["a"], ["x"], ["b"]])  # c waits for a's slot
        self.clock.advance(5)
        self.assertIn(
            "no response to Metadata", str(self.failureResultOf(first, RequestTimedOutError).value)
        )
        self.assertEqual(self.timeouts, [(connection, True)])
        self.net.flush()
        self.assertEqual(self.broker.topics(), [["a"], ["x"], ["b"], ["c"]])
        self.broker.hold = False
        for _ in range(3):
            self.broker.release()  # a's late answer first: dropped, not an error
            self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assert_answered(ds[0], "b")
        self.assert_answered(ds[1], "c")

    def test_silent_connection_is_dropped_and_made_again(self) -> None:
        """Five timeouts on a hung broker must not wedge the connection (issue 10, 1)."""
        connection = self.ready(max_in_flight=5, request_timeout=5)
        self.broker.hold = True
        hung = [connection.request(metadata(str(n))) for n in range(5)]
        self.net.flush()
        self.clock.advance(5)
        self.failureResultOf(hung[0], RequestTimedOutError)
        for d in hung[1:]:  # the connection they were written on was dropped
            self.failureResultOf(d, BrokerConnectionError)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.broker.hold = False
        later = [connection.request(metadata(str(n)), timeout=60) for n in range(15)]
        self.clock.advance(10)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        for n, d in enumerate(later):
            self.assert_answered(d, str(n))

    def test_unknown_correlation_id_drops_the_connection(self) -> None:
        connection = self.ready()
        self.broker.special["stray"] = lambda header: struct.pack(
            ">ii", 4, header.correlation_id + 1000
        )
        d = connection.request(metadata("stray"))
        with capturedLogs() as events:
            self.net.flush()
        self.failureResultOf(d, BrokerConnectionError)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.assertIn("unknown correlation id", " ".join(str(e.get("error", "")) for e in events))

    def test_timeout_hook_can_disconnect(self) -> None:
        connection = self.ready(
            request_timeout=5,
            on_timeout=lambda connection, sent: connection.disconnect() if sent else None,
        )
        self.broker.hold = True
        timed_out = connection.request(metadata("a"))
        other = connection.request(metadata("b"), timeout=60)
        self.net.flush()
        self.clock.advance(5)
        self.failureResultOf(timed_out, RequestTimedOutError)
        self.failureResultOf(other, BrokerConnectionError)
        self.assertIs(connection.state, State.BACKING_OFF)


class OneTimerTests(ConnectionTestCase):
    """Issue 39: a connection's requests share one timer, and each still times out
    exactly when its own timer would have fired."""

    def test_requests_in_flight_share_one_timer(self) -> None:
        connection = self.ready(max_in_flight=5, request_timeout=30)
        self.broker.hold = True
        ds = [connection.request(metadata(n)) for n in "abcde"]
        self.net.flush()
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        self.broker.hold = False
        while self.broker.held:
            self.broker.release()
            self.net.flush()
        for name, d in zip("abcde", ds, strict=True):
            self.assert_answered(d, name)
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)  # not one armed per request

    def test_each_request_times_out_at_its_own_deadline(self) -> None:
        """A shorter timeout made later, and a request made after the first was
        answered, each fail at their deadlines and not a moment sooner."""
        connection = self.ready(max_in_flight=1, request_timeout=30)
        self.broker.hold = True
        first = connection.request(metadata("first"))  # deadline 30
        self.clock.advance(1)
        short = connection.request(metadata("short"), timeout=5)  # queued; deadline 6
        self.net.flush()
        self.clock.advance(4.5)
        self.assertNoResult(short)
        self.clock.advance(0.5)
        self.failureResultOf(short, RequestTimedOutError)
        self.assertNoResult(first)
        self.broker.release(0)  # first is answered
        self.net.flush()
        self.assert_answered(first, "first")
        self.clock.advance(4)  # 10
        late = connection.request(metadata("late"))  # deadline 40, past first's 30
        self.net.flush()
        self.clock.advance(19.75)  # 29.75
        self.clock.advance(0.25)  # 30: the timer armed for "first" finds nothing due
        self.assertNoResult(late)
        self.clock.advance(9.5)
        self.assertNoResult(late)
        self.clock.advance(0.5)  # 40
        self.assertIn(
            "within 30 s",
            str(self.failureResultOf(late, RequestTimedOutError).value),
        )
        self.assertEqual(self.timeouts, [(connection, False), (connection, True)])

    def test_requests_due_together_time_out_in_order_of_their_deadlines(self) -> None:
        del self.net.servers["broker", 9092]
        connection = self.connection(request_timeout=10)
        failed: list[str] = []
        for name, timeout in (("a", 10), ("b", 3), ("c", 10)):
            d = connection.request(metadata(name), timeout=timeout)
            d.addErrback(lambda f, name=name: failed.append(name))
            self.clock.advance(1)
        self.clock.advance(20)
        self.assertEqual(failed, ["b", "a", "c"])

    def test_a_request_timing_out_while_another_is_sent_keeps_its_deadline(self) -> None:
        """The timer fires inside a busy pump: a request made from a timed-out
        request's errback is timed from then."""
        connection = self.ready(request_timeout=5)
        self.broker.hold = True
        retried: list[Deferred[Any]] = []
        d = connection.request(metadata("a"), timeout=60)
        d.addErrback(lambda _: retried.append(connection.request(metadata("b"))))
        self.net.flush()
        d.cancel()
        self.assertEqual(len(retried), 1)
        self.clock.advance(4.75)
        self.assertNoResult(retried[0])
        self.clock.advance(0.25)
        self.failureResultOf(retried[0], RequestTimedOutError)


class CancellationTests(ConnectionTestCase):
    def test_cancel_before_sending(self) -> None:
        connection = self.connection()
        d = connection.request(metadata("never"))
        d.cancel()
        self.assertIs(self.failureResultOf(d, CancelledError).value.request_sent, False)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assertEqual(self.broker.topics(), [])

    def test_cancel_after_sending_drops_the_late_response(self) -> None:
        connection = self.ready()
        self.broker.hold = True
        d = connection.request(metadata("a"))
        self.net.flush()
        d.cancel()
        self.assertIs(self.failureResultOf(d, CancelledError).value.request_sent, True)
        self.broker.hold = False
        self.broker.release()
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        after = connection.request(metadata("b"))
        self.net.flush()
        self.assert_answered(after, "b")


class DropTests(ConnectionTestCase):
    def test_in_flight_requests_fail_and_are_never_resent(self) -> None:
        connection = self.ready()
        self.broker.hold = True
        d = connection.request(metadata("a"))
        self.net.flush()
        self.server.drop_connections()
        self.net.flush()
        self.assertIn("lost", str(self.failureResultOf(d, BrokerConnectionError).value))
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(10)
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        self.assertEqual(self.broker.topics(), [["a"]])

    def test_queued_requests_survive_a_reconnect(self) -> None:
        connection = self.ready(max_in_flight=1)
        self.server.faults.drop_next(METADATA)
        ds = [connection.request(metadata(name)) for name in "abc"]
        self.net.flush()
        self.failureResultOf(ds[0], BrokerConnectionError)
        self.assertNoResult(ds[1])
        self.clock.advance(10)
        self.net.flush()
        self.assert_answered(ds[1], "b")
        self.assert_answered(ds[2], "c")
        self.assertEqual(self.broker.topics(), [["b"], ["c"]])

    def test_undecodable_response_fails_its_request_and_drops_the_connection(self) -> None:
        self.net.serve(self.broker, ordered=False)
        self.broker.special["bad"] = lambda header: struct.pack(">iih", 6, header.correlation_id, 0)
        connection = self.ready()
        self.broker.hold = True
        other = connection.request(metadata("other"))
        bad = connection.request(metadata("bad"))
        self.net.flush()
        with capturedLogs() as events:
            self.broker.release(1)
            self.net.flush()
        self.failureResultOf(bad, DecodeError)
        self.failureResultOf(other, BrokerConnectionError)
        self.assertIs(connection.state, State.BACKING_OFF)
        errors = [e for e in events if e["log_level"].name == "error"]
        self.assertEqual(len(errors), 1)
        self.clock.advance(10)
        self.net.flush()
        self.assertIs(connection.state, State.READY)

    def test_truncated_response_header_drops_the_connection(self) -> None:
        self.broker.special["short"] = lambda header: struct.pack(">ih", 2, 0)
        connection = self.ready()
        d = connection.request(metadata("short"))
        self.net.flush()
        self.assertIn("truncated", str(self.failureResultOf(d, BrokerConnectionError).value))
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_oversized_response_drops_the_connection(self) -> None:
        connection = self.ready(max_frame_size=100)
        d = connection.request(metadata("x" * 200))
        self.net.flush()
        self.assertIn(
            "maximum frame size", str(self.failureResultOf(d, BrokerConnectionError).value)
        )
        self.assertIs(connection.state, State.BACKING_OFF)


class FlowControlTests(ConnectionTestCase):
    def test_no_writes_while_the_transport_is_paused(self) -> None:
        connection = self.ready()
        producer = self.net.transport.producer
        producer.pauseProducing()
        d = connection.request(metadata("a"))
        self.net.flush()
        self.assertEqual(self.broker.topics(), [])
        producer.resumeProducing()
        self.net.flush()
        self.assert_answered(d, "a")

    def test_no_writes_once_the_transport_stops_producing(self) -> None:
        connection = self.ready()
        self.net.transport.producer.stopProducing()
        d = connection.request(metadata("a"))
        self.net.flush()
        self.assertEqual(self.broker.topics(), [])
        connection.close()
        self.assertIs(self.failureResultOf(d, CancelledError).value.request_sent, False)

    def test_pause_reading(self) -> None:
        connection = self.ready()
        connection.pause_reading()
        self.assertTrue(self.net.transport.reading_paused)
        connection.resume_reading()
        self.assertFalse(self.net.transport.reading_paused)

    def test_reading_stays_paused_across_reconnects(self) -> None:
        connection = self.connection()
        connection.pause_reading()  # before any connection: applied once ready
        connection.connect()
        self.net.flush()
        self.assertTrue(self.net.transport.reading_paused)
        connection.disconnect()
        self.clock.advance(10)
        self.net.flush()
        self.assertEqual(len(self.net.transports), 2)
        self.assertTrue(self.net.transport.reading_paused)


class AuthenticationTests(ConnectionTestCase):
    def test_authenticator_runs_before_queued_requests(self) -> None:
        mechanisms: list[list[str]] = []
        done: Deferred[None] = Deferred()

        def authenticate(send: Any) -> Deferred[None]:
            send(SaslHandshakeRequest(mechanism="PLAIN")).addCallback(
                lambda r: mechanisms.append(r.mechanisms)
            )
            return done

        connection = self.connection(authenticator=authenticate)
        d = connection.request(metadata("t"))
        self.net.flush()
        self.assertIs(connection.state, State.AUTHENTICATING)
        self.assertEqual(mechanisms, [["PLAIN"]])
        self.assertEqual(self.broker.headers(SASL_HANDSHAKE)[0].request_api_version, 1)
        self.assertEqual(self.broker.topics(), [])
        done.callback(None)
        self.net.flush()
        self.assert_answered(d, "t")

    def test_authenticator_sending_after_the_connection_dropped(self) -> None:
        sends: list[Any] = []
        connection = self.connection(authenticator=lambda send: sends.append(send) or Deferred())
        connection.connect()
        self.net.flush()
        self.server.drop_connections()
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)
        late = sends[0](SaslHandshakeRequest(mechanism="PLAIN"))
        self.failureResultOf(late, BrokerConnectionError)

    def test_failed_authentication_backs_off(self) -> None:
        connection = self.connection(authenticator=lambda send: fail(ValueError("bad password")))
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)
