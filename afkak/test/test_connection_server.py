"""Tests for afkak.testing._server: the fake broker's side of a connection and its faults."""

from __future__ import annotations

import struct
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.connection.framing import FramedProtocol
from afkak.protocol.header import decode_response, encode_request
from afkak.protocol.messages import MetadataRequest, MetadataResponse
from afkak.testing._server import KafkaServerFactory, KafkaServerProtocol

METADATA = MetadataRequest.API_KEY


def request_frame(correlation_id: int, topic: str) -> bytes:
    message = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
    return encode_request(message, 12, correlation_id, "client")


def answer(topic: str) -> MetadataResponse:
    return MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name=topic)])


class _Frames(FramedProtocol):
    def __init__(self) -> None:
        super().__init__()
        self.frames: list[bytes] = []

    def frameReceived(self, frame: bytes) -> None:
        self.frames.append(frame)


def responses(transport: StringTransport) -> list[tuple[int, list[str]]]:
    """(correlation id, topic names) of each Metadata v12 response written so far."""
    frames = _Frames()
    frames.dataReceived(transport.value())
    result = []
    for frame in frames.frames:
        correlation_id, message = decode_response(frame, METADATA, 12)
        result.append((correlation_id, [t.name for t in message.topics]))
    return result


class ServerTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.seen: list[tuple[int, str]] = []
        self.answers: dict[str, Any] = {}

    def handle(self, header: Any, request: Any) -> Any:
        topic = request.topics[0].name
        self.seen.append((header.correlation_id, topic))
        return self.answers.get(topic, answer(topic))

    def connect(self, factory: KafkaServerFactory) -> tuple[KafkaServerProtocol, StringTransport]:
        protocol = factory.buildProtocol(None)
        assert protocol is not None
        transport = StringTransport()
        protocol.makeConnection(transport)
        return protocol, transport

    def serve(
        self, **kwargs: Any
    ) -> tuple[KafkaServerFactory, KafkaServerProtocol, StringTransport]:
        factory = KafkaServerFactory(self.handle, self.clock, **kwargs)
        return (factory, *self.connect(factory))


class AnswerTests(ServerTestCase):
    def test_answers_at_the_request_version_with_its_correlation_id(self) -> None:
        _, protocol, transport = self.serve()
        protocol.dataReceived(request_frame(7, "a") + request_frame(8, "b"))
        self.assertEqual(responses(transport), [(7, ["a"]), (8, ["b"])])

    def test_answers_in_request_order(self) -> None:
        first: Deferred[Any] = Deferred()
        second: Deferred[Any] = Deferred()
        self.answers = {"a": first, "b": second}
        _, protocol, transport = self.serve()
        protocol.dataReceived(request_frame(1, "a") + request_frame(2, "b"))
        second.callback(answer("b"))
        self.assertEqual(responses(transport), [])
        first.callback(answer("a"))
        self.assertEqual(responses(transport), [(1, ["a"]), (2, ["b"])])

    def test_unordered_answers_as_soon_as_ready(self) -> None:
        first: Deferred[Any] = Deferred()
        self.answers = {"a": first}
        _, protocol, transport = self.serve(ordered=False)
        protocol.dataReceived(request_frame(1, "a") + request_frame(2, "b"))
        self.assertEqual(responses(transport), [(2, ["b"])])
        first.callback(answer("a"))
        self.assertEqual(responses(transport), [(2, ["b"]), (1, ["a"])])

    def test_none_means_no_response(self) -> None:
        self.answers = {"acks0": None}
        _, protocol, transport = self.serve()
        protocol.dataReceived(request_frame(1, "acks0") + request_frame(2, "b"))
        self.assertEqual(responses(transport), [(2, ["b"])])

    def test_bytes_are_written_verbatim(self) -> None:
        raw = struct.pack(">iih", 6, 1, 35)
        self.answers = {"raw": raw}
        _, protocol, transport = self.serve()
        protocol.dataReceived(request_frame(1, "raw"))
        self.assertEqual(transport.value(), raw)

    def test_handler_failure_aborts_the_connection(self) -> None:
        self.answers = {"boom": Deferred()}
        _, protocol, transport = self.serve()
        protocol.dataReceived(request_frame(1, "boom"))
        self.answers["boom"].errback(ValueError("handler bug"))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(len(self.flushLoggedErrors(ValueError)), 1)

    def test_undecodable_request_aborts_the_connection(self) -> None:
        _, protocol, transport = self.serve()
        protocol.dataReceived(struct.pack(">ihh", 4, 9999, 0) + request_frame(1, "after"))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(self.seen, [])

    def test_connection_lost_cancels_pending_answers(self) -> None:
        cancelled: list[Deferred[Any]] = []
        self.answers = {"slow": Deferred(cancelled.append)}
        factory, protocol, transport = self.serve()
        factory.faults.delay(METADATA, 5)
        protocol.dataReceived(request_frame(1, "slow") + request_frame(2, "delayed"))
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(len(cancelled), 1)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertEqual(transport.value(), b"")
        self.assertEqual(factory.connections, [])


class FaultTests(ServerTestCase):
    def test_drop_next_closes_the_connection_unanswered(self) -> None:
        factory, protocol, transport = self.serve()
        factory.faults.drop_next(METADATA)
        protocol.dataReceived(request_frame(1, "dropped") + request_frame(2, "unread"))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(self.seen, [])
        protocol, transport = self.connect(factory)  # the fault was used up
        protocol.dataReceived(request_frame(3, "ok"))
        self.assertEqual(responses(transport), [(3, ["ok"])])

    def test_drop_next_counts(self) -> None:
        factory = KafkaServerFactory(self.handle, self.clock)
        factory.faults.drop_next(METADATA, count=2)
        for _ in range(2):
            protocol, transport = self.connect(factory)
            protocol.dataReceived(request_frame(1, "x"))
            self.assertTrue(transport.disconnecting)
        protocol, transport = self.connect(factory)
        protocol.dataReceived(request_frame(1, "x"))
        self.assertFalse(transport.disconnecting)

    def test_delay_holds_responses_on_the_clock(self) -> None:
        factory, protocol, transport = self.serve()
        factory.faults.delay(METADATA, 2)
        protocol.dataReceived(request_frame(1, "a"))
        self.clock.advance(1.9)
        self.assertEqual(responses(transport), [])
        self.clock.advance(0.1)
        self.assertEqual(responses(transport), [(1, ["a"])])
        factory.faults.delay(METADATA, 0)
        protocol.dataReceived(request_frame(2, "b"))
        self.assertEqual(responses(transport), [(1, ["a"]), (2, ["b"])])

    def test_refuse_connections(self) -> None:
        factory = KafkaServerFactory(self.handle, self.clock)
        factory.faults.refuse_connections()
        self.assertIsNone(factory.buildProtocol(None))
        factory.faults.refuse_connections(False)
        self.assertIsInstance(factory.buildProtocol(None), KafkaServerProtocol)

    def test_drop_connections_aborts_every_open_connection(self) -> None:
        factory = KafkaServerFactory(self.handle, self.clock)
        (_, one), (_, two) = self.connect(factory), self.connect(factory)
        self.assertEqual(len(factory.connections), 2)
        factory.drop_connections()
        self.assertTrue(one.disconnecting)
        self.assertTrue(two.disconnecting)
