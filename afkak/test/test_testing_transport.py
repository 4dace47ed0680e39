"""afkak.testing's in-memory connections, and RawClient: raw frames to a fake broker.

RawClient registers each request before writing it, because the in-memory
transport answers synchronously, inside ``write()``.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost, ConnectionRefusedError
from twisted.internet.interfaces import IPullProducer, IPushProducer, ITCPTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from afkak.connection.framing import FramedProtocol
from afkak.protocol.header import decode_response, encode_request, peek_correlation_id
from afkak.protocol.messages import ApiVersionsRequest, MetadataRequest
from afkak.testing import FakeKafkaCluster
from afkak.testing._cluster import server_address
from afkak.testing._transport import connect_pair

_DONE = Failure(ConnectionDone())


class RawClient(FramedProtocol):
    """Sends request messages at chosen versions; each Deferred fires with the decoded response."""

    def __init__(self, client_id: str | None = "raw-client") -> None:
        super().__init__()
        self.client_id = client_id
        self.waiting: dict[int, tuple[Deferred[Any], int, int]] = {}
        self.correlation_id = 0
        self.lost: Failure | None = None

    def request(self, message: Any, version: int) -> Deferred[Any]:
        correlation_id = self.correlation_id
        self.correlation_id += 1
        d: Deferred[Any] = Deferred()
        self.waiting[correlation_id] = (d, message.API_KEY, version)
        self.transport.write(encode_request(message, version, correlation_id, self.client_id))
        return d

    def send_only(self, message: Any, version: int) -> None:
        """Send a request that gets no response (produce with acks=0)."""
        self.transport.write(encode_request(message, version, 9999, self.client_id))
        self.correlation_id += 1

    def frameReceived(self, frame: bytes) -> None:
        d, api_key, version = self.waiting.pop(peek_correlation_id(frame))
        _, response = decode_response(frame, api_key, version)
        d.callback(response)

    def connectionLost(self, reason: Failure = _DONE) -> None:
        self.lost = reason
        waiting, self.waiting = self.waiting, {}
        for d, _, _ in waiting.values():
            d.errback(reason)


def connect(
    cluster: FakeKafkaCluster, node: int = 0, host: str | None = None, port: int = 9092
) -> RawClient:
    """A RawClient connected to broker ``node`` (or to ``host:port``)."""
    client = RawClient()
    host = host if host is not None else cluster.state.brokers[node].host
    endpoint = cluster.endpoint_factory(None, host, port)
    d = endpoint.connect(Factory.forProtocol(lambda: client))
    assert d.called, "connecting to a fake broker is synchronous"
    return client


class _Recorder(Protocol):
    """Records what a protocol sees, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def connectionMade(self) -> None:
        self.events.append("made")

    def dataReceived(self, data: bytes) -> None:
        self.events.append(data)

    def connectionLost(self, reason: Failure = _DONE) -> None:
        self.events.append(reason.type)


class EndpointTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)

    def test_connect_is_synchronous(self) -> None:
        client = RawClient()
        d = self.cluster.endpoint_factory(self.clock, "broker-1", 9092).connect(
            Factory.forProtocol(lambda: client)
        )
        self.assertIs(self.successResultOf(d), client)
        self.assertEqual(self.cluster.open_connections(1), 1)
        self.assertEqual(self.cluster.open_connections(0), 0)

    def test_unknown_host_or_port_refused(self) -> None:
        for host, port in [("nowhere", 9092), ("broker-0", 9093)]:
            d = self.cluster.endpoint_factory(self.clock, host, port).connect(
                Factory.forProtocol(Protocol)
            )
            self.failureResultOf(d, ConnectionRefusedError)

    def test_request_answered_before_write_returns(self) -> None:
        client = connect(self.cluster)
        d = client.request(MetadataRequest(topics=[]), 12)
        self.assertEqual(self.successResultOf(d).brokers[0].host, "broker-0")

    def test_transport_interfaces(self) -> None:
        client = connect(self.cluster, 1)
        transport = client.transport
        self.assertTrue(verifyObject(ITCPTransport, transport))
        self.assertFalse(transport.getTcpNoDelay())
        transport.setTcpNoDelay(True)
        self.assertTrue(transport.getTcpNoDelay())
        transport.setTcpKeepAlive(1)
        self.assertTrue(transport.getTcpKeepAlive())
        self.assertEqual((transport.getPeer().host, transport.getPeer().port), ("broker-1", 9092))
        self.assertEqual(transport.getHost().host, "127.0.0.1")

    def test_lose_connection_both_sides_see_it(self) -> None:
        client = connect(self.cluster)
        self.assertEqual(self.cluster.open_connections(0), 1)
        client.transport.loseConnection()
        self.assertIsNotNone(client.lost)
        client.lost.trap(ConnectionDone)
        self.assertEqual(self.cluster.open_connections(0), 0)

    def test_server_drop_fails_waiting_requests(self) -> None:
        client = connect(self.cluster)
        self.cluster.delay(ApiVersionsRequest, 1.0)
        d = client.request(ApiVersionsRequest(), 0)
        self.assertNoResult(d)
        self.cluster.drop_connections(0)
        self.failureResultOf(d, ConnectionLost)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_data_before_lose_connection_is_delivered(self) -> None:
        server = _Recorder()
        client = self._pair(server)
        client.transport.write(b"one")
        client.transport.writeSequence([b"tw", b"o"])
        client.transport.loseConnection()
        client.transport.write(b"ignored")
        self.assertEqual(server.events, ["made", b"one", b"two", ConnectionDone])
        self.assertEqual(client.events, ["made", ConnectionDone])

    def test_abort_drops_undelivered_data(self) -> None:
        server = _Recorder()
        client = self._pair(server)

        def reply_and_abort(data: bytes) -> None:
            server.events.append(data)
            server.transport.write(b"reply")
            server.transport.abortConnection()

        server.dataReceived = reply_and_abort  # type: ignore[method-assign]
        client.transport.write(b"hi")
        self.assertEqual(client.events, ["made", ConnectionLost])
        self.assertEqual(server.events, ["made", b"hi", ConnectionLost])

    def test_no_nested_delivery(self) -> None:
        """The client gets the answer after the server's dataReceived returned."""
        server = _Recorder()
        client = self._pair(server)
        order: list[str] = []

        def echo(data: bytes) -> None:
            order.append("server got")
            server.transport.write(data)
            order.append("server wrote")

        def client_got(data: bytes) -> None:
            order.append("client got")

        server.dataReceived = echo  # type: ignore[method-assign]
        client.dataReceived = client_got  # type: ignore[method-assign]
        client.transport.write(b"x")
        self.assertEqual(order, ["server got", "server wrote", "client got"])

    def test_pause_holds_incoming_data(self) -> None:
        server = _Recorder()
        client = self._pair(server)
        server.transport.pauseProducing()
        client.transport.write(b"a")
        client.transport.write(b"b")
        self.assertEqual(server.events, ["made"])
        server.transport.resumeProducing()
        self.assertEqual(server.events, ["made", b"a", b"b"])

    def test_streaming_producer_stopped_on_close(self) -> None:
        @implementer(IPushProducer)
        class Producer:
            stopped = False

            def pauseProducing(self) -> None:
                raise AssertionError("never paused: buffers are unbounded")

            resumeProducing = pauseProducing

            def stopProducing(self) -> None:
                self.stopped = True

        client = self._pair(_Recorder())
        producer = Producer()
        client.transport.registerProducer(producer, True)
        self.assertRaises(RuntimeError, client.transport.registerProducer, Producer(), True)
        client.transport.loseConnection()
        self.assertTrue(producer.stopped)

    def test_pull_producer_is_pulled_until_unregistered(self) -> None:
        server = _Recorder()
        client = self._pair(server)

        @implementer(IPullProducer)
        class Producer:
            def __init__(self) -> None:
                self.left = 3

            def resumeProducing(self) -> None:
                client.transport.write(b"%d" % self.left)
                self.left -= 1
                if not self.left:
                    client.transport.unregisterProducer()

            def stopProducing(self) -> None:
                raise AssertionError("not stopped")

        client.transport.registerProducer(Producer(), False)
        self.assertEqual(server.events, ["made", b"3", b"2", b"1"])

    def test_exception_in_data_received_is_logged_and_closes(self) -> None:
        server = _Recorder()
        client = self._pair(server)

        def explode(data: bytes) -> None:
            raise ZeroDivisionError()

        server.dataReceived = explode  # type: ignore[method-assign]
        client.transport.write(b"boom")
        self.assertEqual(client.events, ["made", ZeroDivisionError])
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)

    def _pair(self, server: Protocol) -> _Recorder:
        """A _Recorder client connected to ``server`` through the cluster's transports."""
        client = _Recorder()
        connected: Deferred[Any] = Deferred()
        address = server_address(self.cluster.state.brokers[0])
        connect_pair(self.cluster._loop, client, server, address, connected)
        self.assertIs(self.successResultOf(connected), client)
        return client
