"""Errors that name the real cause (issue 26): a refused bootstrap surfaces at once
as KafkaUnavailableError naming the address, a missing TLS file is a ValueError
at construction, and TLS to a plaintext port fails as a TLS handshake failure."""

from __future__ import annotations

import gc
import os
import random
import tempfile
import time
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.logger import LimitedHistoryLogObserver, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from afkak import TLS, KafkaClient, Producer
from afkak._retry import backoff_policy
from afkak.client import AuthenticationRefused
from afkak.common import (
    KafkaUnavailableError,
    NotLeaderForPartitionError,
    TLSListenerError,
    TopicAuthorizationFailed,
)
from afkak.connection import BrokerConnection
from afkak.connection._protocol import BrokerProtocol
from afkak.protocol.messages import MetadataRequest, ProduceRequest
from afkak.test.helpers import wait
from afkak.test.test_admin import on_fake_cluster
from afkak.testing import FakeKafkaCluster


def refusing_cluster(case: SynchronousTestCase) -> tuple[Clock, FakeKafkaCluster, KafkaClient]:
    """A fake cluster refusing every connection, and a client that never reached it."""
    clock, cluster, client = on_fake_cluster(case)
    for node in cluster.state.brokers:
        cluster.refuse_connections(node)
    return clock, cluster, client


def gone_after_answering(case: SynchronousTestCase) -> tuple[Clock, KafkaClient]:
    """A client that loaded the fake cluster's metadata, then every broker refusing."""
    clock, cluster, client = on_fake_cluster(case)
    case.successResultOf(client.load_metadata_for_topics())
    for node in cluster.state.brokers:
        cluster.drop_connections(node)
        cluster.refuse_connections(node)
    return clock, client


def settle(clock: Clock, d: Any, seconds: float) -> None:
    for _ in range(int(seconds * 10)):
        if d.called:
            return
        clock.advance(0.1)


class RefusedBootstrapTests(SynchronousTestCase):
    """Nothing listens at any bootstrap address, and no broker ever answered."""

    def test_metadata_names_the_addresses(self) -> None:
        clock, _, client = refusing_cluster(self)
        d = client.load_metadata_for_topics("t")
        settle(clock, d, 5)
        error = self.failureResultOf(d, KafkaUnavailableError).value
        self.assertIn("broker-0:9092", str(error))
        self.assertIn("refused", str(error))
        self.assertFalse(error.retriable)

    def test_producer_send_fails_within_seconds_not_120(self) -> None:
        clock, _, client = refusing_cluster(self)
        producer = Producer(client)
        d = producer.send("greetings", b"hello")
        settle(clock, d, 5)
        error = self.failureResultOf(d, KafkaUnavailableError).value
        self.assertIn("broker-1:9092", str(error))
        self.assertLess(clock.seconds(), 5)

    def test_once_the_cluster_answered_a_refusal_is_retried(self) -> None:
        clock, client = gone_after_answering(self)
        d = client.load_metadata_for_topics("t")
        settle(clock, d, 5)
        error = self.failureResultOf(d, KafkaUnavailableError).value
        self.assertTrue(error.retriable)


def connections_alive() -> int:
    gc.collect()
    return sum(isinstance(o, (BrokerConnection, BrokerProtocol)) for o in gc.get_objects())


class FailedAttemptsTests(SynchronousTestCase):
    """Issue 33: a long outage neither keeps its failed connections in memory nor
    reconnects on every call."""

    def setUp(self) -> None:
        # What a program that has not begun logging keeps (Twisted buffers its
        # first events until then), here without a bound.
        self.buffered = LimitedHistoryLogObserver(size=1_000_000)
        globalLogPublisher.addObserver(self.buffered)
        self.addCleanup(globalLogPublisher.removeObserver, self.buffered)

    def events(self) -> int:
        kept: list[Any] = []
        self.buffered.replayTo(kept.append)
        return len(kept)

    def attempts_keep_nothing(self, clock: Clock, client: KafkaClient) -> None:
        """2,000 calls, each a failed attempt, then ``close()``: no connection is kept,
        neither by the client nor by the log events the attempts emitted."""
        before = connections_alive()
        events = self.events()
        for _ in range(2000):
            client.load_metadata_for_topics("t").addErrback(lambda f: f.trap(KafkaUnavailableError))
            clock.advance(2)  # past the reconnect back-off: every call is an attempt
        self.successResultOf(client.close())
        self.assertGreater(self.events() - events, 2000)
        self.assertEqual(connections_alive() - before, 0)

    def test_failed_bootstrap_attempts_keep_no_connection_alive(self) -> None:
        """Each kept refusal held the traceback of the call that raised it, whose
        frame held the connection and the previous refusal: a chain growing by a
        connection (4.4 KB) per attempt.  And each attempt's log events held the
        connection and its refusal's traceback for as long as an observer (Twisted's
        buffer before logging begins, a program's own) kept them."""
        clock, _, client = refusing_cluster(self)
        self.attempts_keep_nothing(clock, client)

    def test_failed_attempts_to_known_brokers_keep_no_connection_alive(self) -> None:
        clock, client = gone_after_answering(self)
        self.attempts_keep_nothing(clock, client)

    def test_every_failed_bootstrap_connection_backs_off(self) -> None:
        """A dead port drew a connection per call (149 in 60 s): now one per back-off,
        Java's reconnect.backoff.ms doubling to reconnect.backoff.max.ms, jittered by
        the injected random source."""
        clock = Clock()
        cluster = FakeKafkaCluster(brokers=1, reactor=clock)
        cluster.refuse_connections(0)
        attempts: list[tuple[str, int]] = []

        def endpoint_factory(reactor: Any, host: str, port: int) -> Any:
            attempts.append((host, port))
            return cluster.endpoint_factory(reactor, host, port)

        policy = backoff_policy(0.05, 1.0, uniform=random.Random(33).uniform)
        client = KafkaClient(
            cluster.bootstrap_hosts,
            reactor=clock,
            endpoint_factory=endpoint_factory,
            retry_policy=policy,
        )
        self.addCleanup(client.close)
        for _ in range(600):  # a call every 100 ms for 60 s
            d = client.load_metadata_for_topics("t")
            self.failureResultOf(d, KafkaUnavailableError)
            clock.advance(0.1)
        # 50, 100, 200, 400, 800 ms, then 1 s (within 20 %): about 60, not 600.
        self.assertGreater(len(attempts), 40)
        self.assertLess(len(attempts), 70)


class FinalLeaderLookupTests(SynchronousTestCase):
    def test_a_final_error_looking_up_leaders_fails_the_send_at_once(self) -> None:
        """A send whose partition's leader must be looked up again fails at once when
        the lookup's error is final (here the topic's authorization; a refused
        connection's AuthenticationRefused the same), not at its delivery timeout."""
        clock, cluster, client = on_fake_cluster(self)
        cluster.create_topic("t", 1)
        producer = Producer(client)
        self.addCleanup(producer.stop)
        d = producer.send("t", b"one", partition=0)
        settle(clock, d, 1)
        self.successResultOf(d)
        cluster.fail_next(ProduceRequest, NotLeaderForPartitionError)
        cluster.fail_next(MetadataRequest, TopicAuthorizationFailed)
        d = producer.send("t", b"two", partition=0)
        settle(clock, d, 1)
        self.failureResultOf(d, TopicAuthorizationFailed)


class TLSFileTests(SynchronousTestCase):
    def test_missing_ca_file_is_a_value_error_naming_it(self) -> None:
        with self.assertRaises(ValueError) as e:
            TLS(trust_root="/nonexistent/ca.pem")
        self.assertIn("/nonexistent/ca.pem", str(e.exception))

    def test_missing_client_certificate_or_key(self) -> None:
        with tempfile.NamedTemporaryFile(suffix=".pem") as cert:
            with self.assertRaises(ValueError) as e:
                TLS(client_certificate=(cert.name, "/nonexistent/key.pem"))
            self.assertIn("/nonexistent/key.pem", str(e.exception))
            with self.assertRaises(ValueError) as e:
                TLS(client_certificate=("/nonexistent/cert.pem", cert.name))
            self.assertIn("/nonexistent/cert.pem", str(e.exception))

    def test_an_unreadable_ca_is_refused(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            with self.assertRaises(ValueError) as e:
                TLS(trust_root=directory)
            self.assertIn(directory, str(e.exception))

    def test_existing_files_are_accepted(self) -> None:
        with tempfile.NamedTemporaryFile(suffix=".pem") as ca:
            self.assertEqual(TLS(trust_root=ca.name).trust_root, ca.name)
            self.assertTrue(os.path.exists(ca.name))


class _Silent(Protocol):
    """A plaintext listener that reads and never answers (as Tansu does to TLS)."""


class _Closing(Protocol):
    """A plaintext listener that closes on its first bytes (as Kafka does to TLS:
    a ClientHello read as a request size is far too large)."""

    def dataReceived(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.loseConnection()


class _TLSAlert(Protocol):
    """A TLS listener reading a plaintext request: Kafka answers with a TLS alert
    (its first bytes, read as a frame's length, make 352 MB) and closes."""

    def dataReceived(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(bytes.fromhex("15030300020250"))
        self.transport.loseConnection()


class TLSToPlaintextTests(SynchronousTestCase):
    """TLS to a plaintext port fails as a TLS handshake failure, in seconds,
    not as REQUEST_TIMED_OUT once the request timeout ran out."""

    def listen(self, protocol: type[Protocol]) -> str:
        from twisted.internet import reactor

        port = reactor.listenTCP(0, Factory.forProtocol(protocol), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        return f"127.0.0.1:{port.getHost().port}"

    def metadata_error(self, bootstrap: str, tls: Any) -> tuple[Exception, float]:
        client = KafkaClient(bootstrap, tls=tls, timeout=30000, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        start = time.monotonic()
        with self.assertRaises(KafkaUnavailableError) as e:
            wait(client.load_metadata_for_topics("t"), timeout=20)
        return e.exception, time.monotonic() - start

    def test_a_silent_listener(self) -> None:
        bootstrap = self.listen(_Silent)
        error, took = self.metadata_error(bootstrap, TLS(handshake_timeout=0.5))
        self.assertIn("TLS handshake", str(error))
        self.assertIn("no answer within 0.5 s", str(error))
        self.assertIn(bootstrap, str(error))
        self.assertFalse(error.retriable)
        self.assertLess(took, 5)

    def test_a_listener_that_closes(self) -> None:
        bootstrap = self.listen(_Closing)
        error, took = self.metadata_error(bootstrap, True)
        self.assertIn("TLS handshake", str(error))
        self.assertIn("TLS port?", str(error))
        self.assertLess(took, 3)

    def test_a_plaintext_client_on_a_tls_listener(self) -> None:
        """Issue 33: the client reconnected with back-off until REQUEST_TIMED_OUT
        (10 s), logging a 352 MB frame; the TLS record is named, for good."""
        bootstrap = self.listen(_TLSAlert)
        error, took = self.metadata_error(bootstrap, None)
        self.assertIsInstance(error, AuthenticationRefused)
        self.assertIsInstance(error.__cause__, TLSListenerError)
        self.assertIn(f"{bootstrap} answered with TLS: is this the broker's TLS port?", str(error))
        self.assertLess(took, 5)

    def test_handshake_timeout_is_checked(self) -> None:
        for bad in (0, -1, float("inf"), "5", True):
            with self.subTest(bad):
                self.assertRaises(ValueError, TLS, handshake_timeout=bad)
