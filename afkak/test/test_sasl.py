"""SASL mechanisms and the connection's SASL exchange, synchronously on a Clock.

SCRAM is checked against RFC 7677's test vector; the exchange, failures and
KIP-368 re-authentication against an in-memory broker that checks passwords.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import AuthenticationRefused, KafkaClient
from afkak.common import (
    OFFSET_EARLIEST,
    CancelledError,
    IllegalSaslState,
    KafkaUnavailableError,
    SaslAuthenticationFailed,
    TLSAuthenticationFailed,
    UnsupportedSaslMechanism,
)
from afkak.connection import (
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    SaslAuthenticator,
    Scram,
    ScramSha256,
    State,
)
from afkak.connection._connection import REAUTHENTICATE_AT
from afkak.connection._sasl_mechanisms import initial_response
from afkak.consumer import Consumer
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from afkak.test.test_connection import (
    DEFAULT_VERSIONS,
    METADATA,
    Broker,
    ConnectionTestCase,
    metadata,
)

SASL_HANDSHAKE = SaslHandshakeRequest.API_KEY
SASL_AUTHENTICATE = SaslAuthenticateRequest.API_KEY
SECRET = "s3cret-9d2f"


class Rfc7677Tests(SynchronousTestCase):
    """RFC 7677 section 3: user "user", password "pencil", fixed nonces and salt."""

    def test_scram_sha_256_test_vector(self) -> None:
        conversation = Scram("SCRAM-SHA-256", "user", "pencil").start("h", Clock())
        conversation.client = ScramSha256("user", "pencil").client(nonce="rOprNGfwEbeRWgbNEkqO")
        self.assertEqual(conversation.respond(None), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        final = conversation.respond(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        )
        self.assertEqual(
            final,
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        )
        self.assertIsNone(conversation.respond(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="))

    def test_a_wrong_server_signature_is_refused(self) -> None:
        conversation = Scram("SCRAM-SHA-256", "user", "pencil").start("h", Clock())
        conversation.client = ScramSha256("user", "pencil").client(nonce="rOprNGfwEbeRWgbNEkqO")
        conversation.respond(None)
        conversation.respond(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        )
        from scramp import ScramException

        with self.assertRaises(ScramException):
            conversation.respond(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


class MechanismTests(SynchronousTestCase):
    def test_plain_message(self) -> None:
        conversation = Plain("alice", "pw").start("h", Clock())
        self.assertEqual(conversation.respond(None), b"\0alice\0pw")
        self.assertIsNone(conversation.respond(b""))

    def test_bad_credentials_are_refused_at_the_call(self) -> None:
        self.assertRaises(TypeError, Plain, "", "pw")
        self.assertRaises(ValueError, Plain, "a\0b", "pw")
        self.assertRaises(ValueError, Scram, "SCRAM-SHA-1", "a", "b")

    def test_oauthbearer_initial_response(self) -> None:
        self.assertEqual(
            initial_response("tok", {"traceId": "1", "logicalCluster": "lkc-1"}),
            b"n,,\x01auth=Bearer tok\x01traceId=1\x01logicalCluster=lkc-1\x01\x01",
        )
        self.assertRaises(ValueError, OAuthBearer, lambda: None, extensions={"auth": "x"})
        self.assertRaises(ValueError, OAuthBearer, lambda: None, extensions={"a-b": "x"})

    def test_secrets_stay_out_of_reprs(self) -> None:
        clock = Clock()
        things = [
            Plain("alice", SECRET),
            ScramSha256("alice", SECRET),
            OAuthBearerToken(SECRET, 100.0, "alice"),
            OAuthBearer(lambda: OAuthBearerToken(SECRET, 100.0)),
            SaslAuthenticator(Plain("alice", SECRET), "h", 1, clock),
            Plain("alice", SECRET).start("h", clock),
            ScramSha256("alice", SECRET).start("h", clock),
        ]
        for thing in things:
            self.assertNotIn(SECRET, repr(thing))
            self.assertNotIn(SECRET, str(thing))


class TokenRefreshTests(SynchronousTestCase):
    """OAUTHBEARER tokens are cached and replaced after 80% of their lifetime, on a Clock."""

    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1000)
        self.calls: list[Deferred[OAuthBearerToken]] = []

        def provider() -> Deferred[OAuthBearerToken]:
            d: Deferred[OAuthBearerToken] = Deferred()
            self.calls.append(d)
            return d

        self.mechanism = OAuthBearer(provider, extensions={"x": "1"})

    def token(self, lifetime: float, value: str = "t") -> OAuthBearerToken:
        return OAuthBearerToken(value, self.clock.seconds() + lifetime)

    def test_cached_until_the_refresh_window_then_refreshed(self) -> None:
        first = self.mechanism.token(self.clock)
        second = self.mechanism.token(self.clock)
        self.assertEqual(len(self.calls), 1, "one provider call for concurrent connections")
        self.calls[0].callback(self.token(100, "one"))
        self.assertEqual(self.successResultOf(first).value, "one")
        self.assertEqual(self.successResultOf(second).value, "one")
        self.clock.advance(79)
        self.assertEqual(self.successResultOf(self.mechanism.token(self.clock)).value, "one")
        self.assertEqual(len(self.calls), 1)
        self.clock.advance(2)  # 81% of the lifetime: refresh before expiry
        third = self.mechanism.token(self.clock)
        self.assertEqual(len(self.calls), 2)
        self.calls[1].callback(self.token(100, "two"))
        self.assertEqual(self.successResultOf(third).value, "two")

    def test_conversation_carries_token_and_extensions(self) -> None:
        d = self.mechanism.start("h", self.clock)
        self.calls[0].callback(
            OAuthBearerToken("tok", self.clock.seconds() + 10, extensions={"y": "2"})
        )
        conversation = self.successResultOf(d)
        self.assertEqual(conversation.respond(None), initial_response("tok", {"x": "1", "y": "2"}))
        self.assertEqual(conversation.respond(b'{"status":"invalid_token"}'), b"\x01")
        self.assertIsNone(conversation.respond(b""))

    def test_expired_or_wrong_tokens_fail(self) -> None:
        d = self.mechanism.token(self.clock)
        self.calls[0].callback(self.token(-1))
        self.failureResultOf(d, ValueError)
        d = self.mechanism.token(self.clock)
        self.calls[1].callback("a string")  # type: ignore[arg-type]
        self.failureResultOf(d, TypeError)


class PasswordBroker(Broker):
    """The in-memory broker, checking PLAIN passwords and granting session lifetimes."""

    def __init__(self, versions: dict[int, tuple[int, int]] | None = None) -> None:
        super().__init__(versions or {**DEFAULT_VERSIONS, SASL_AUTHENTICATE: (0, 2)})
        self.password = "right"
        self.lifetime_ms = 0
        self.enabled = ["PLAIN"]
        self.takes_sasl = True  # False: a listener without SASL (PLAINTEXT)
        self.hold_metadata: list[Deferred[Any]] = []

    def answer(self, header: Any, request: Any) -> Any:
        key = header.request_api_key
        if key == SASL_HANDSHAKE and not self.takes_sasl:
            return SaslHandshakeResponse(error_code=IllegalSaslState.errno)
        if key == SASL_HANDSHAKE:
            code = 0 if request.mechanism in self.enabled else UnsupportedSaslMechanism.errno
            return SaslHandshakeResponse(error_code=code, mechanisms=self.enabled)
        if key == SASL_AUTHENTICATE:
            if request.auth_bytes.split(b"\0")[2].decode() != self.password:
                return SaslAuthenticateResponse(
                    error_code=SaslAuthenticationFailed.errno,
                    error_message="Authentication failed: Invalid username or password",
                )
            return SaslAuthenticateResponse(session_lifetime_ms=self.lifetime_ms)
        if key == METADATA and request.topics and request.topics[0].name == "held":
            waiting: Deferred[Any] = Deferred()
            self.hold_metadata.append(waiting)
            return waiting.addCallback(
                lambda _: super(PasswordBroker, self).answer(header, request)
            )
        return super().answer(header, request)

    def keys(self) -> list[int]:
        return [h.request_api_key for h, _ in self.received]


class ConnectionSaslTests(ConnectionTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.broker = PasswordBroker()
        self.server = self.net.serve(self.broker)

    def sasl(self, password: str = "right", **kwargs: Any) -> Any:
        return self.connection(
            authenticator=SaslAuthenticator(Plain("alice", password), "broker", 9092, self.clock),
            **kwargs,
        )

    def test_handshake_v1_and_authenticate_before_any_request(self) -> None:
        connection = self.sasl()
        d = connection.request(metadata("t"))
        self.net.flush()
        self.assert_answered(d, "t")
        self.assertEqual(self.broker.keys()[1:], [SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA])
        self.assertEqual(self.broker.headers(SASL_HANDSHAKE)[0].request_api_version, 1)

    def test_wrong_password_fails_queued_requests_at_once_and_backs_off(self) -> None:
        connection = self.sasl("wrong", request_timeout=60)
        d = connection.request(metadata("t"))
        self.net.flush()
        failure = self.failureResultOf(d, SaslAuthenticationFailed)
        self.assertIn("Invalid username or password", str(failure.value))
        self.assertFalse(failure.value.retriable)
        self.assertNotIn("wrong", str(failure.value))
        self.assertIs(connection.state, State.BACKING_OFF)
        self.assertEqual(len(self.net.transports), 1, "no reconnect before the back-off delay")

    def test_unsupported_mechanism_names_the_enabled_ones(self) -> None:
        self.broker.enabled = ["SCRAM-SHA-512", "OAUTHBEARER"]
        connection = self.sasl()
        d = connection.request(metadata("t"))
        self.net.flush()
        failure = self.failureResultOf(d, UnsupportedSaslMechanism)
        self.assertIn("it enables: SCRAM-SHA-512, OAUTHBEARER", str(failure.value))
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_a_broker_without_sasl_authenticate_is_refused_clearly(self) -> None:
        self.broker.versions = {**DEFAULT_VERSIONS, SASL_HANDSHAKE: (0, 0)}
        connection = self.sasl()
        d = connection.request(metadata("t"))
        self.net.flush()
        failure = self.failureResultOf(d, SaslAuthenticationFailed)
        self.assertIn("raw SASL framing", str(failure.value))

    def test_reauthenticates_before_the_session_ends_keeping_requests_in_order(self) -> None:
        self.broker.lifetime_ms = 10_000
        connection = self.sasl()
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.READY)
        in_flight = connection.request(metadata("held"))
        self.net.flush()
        self.clock.advance(10 * REAUTHENTICATE_AT)  # re-authentication starts
        self.net.flush()
        self.assertIs(connection.state, State.REAUTHENTICATING)
        queued = connection.request(metadata("after"))
        self.net.flush()
        # Written: the held request, then the handshake; "after" waits for re-authentication.
        self.assertEqual(self.broker.topics(), [["held"]])
        self.assertEqual(self.broker.keys()[-2:], [METADATA, SASL_HANDSHAKE])
        self.assertNoResult(in_flight)
        self.assertNoResult(queued)
        self.broker.hold_metadata.pop().callback(None)
        self.net.flush()
        self.assert_answered(in_flight, "held")
        self.assert_answered(queued, "after")
        self.assertEqual(
            self.broker.keys()[-4:], [METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA]
        )
        self.assertEqual(len(self.net.transports), 1, "the same TCP connection")
        # And again one session later.
        self.clock.advance(10 * REAUTHENTICATE_AT)
        self.net.flush()
        self.assertEqual(len(self.broker.headers(SASL_AUTHENTICATE)), 3)
        self.assertIs(connection.state, State.READY)

    def test_reading_paused_or_resumed_while_reauthenticating(self) -> None:
        """The connection stays open while it re-authenticates: pausing reads applies at once."""
        self.broker.lifetime_ms = 10_000
        connection = self.sasl()
        connection.connect()
        self.net.flush()
        connection.pause_reading()
        held = connection.request(metadata("held"))  # keeps re-authentication from finishing
        self.net.flush()
        self.clock.advance(10 * REAUTHENTICATE_AT)
        self.assertIs(connection.state, State.REAUTHENTICATING)
        connection.resume_reading()
        self.assertFalse(self.net.transport.reading_paused)
        connection.pause_reading()
        self.assertTrue(self.net.transport.reading_paused)
        connection.resume_reading()
        self.net.flush()
        self.broker.hold_metadata.pop().callback(None)
        self.net.flush()
        self.assert_answered(held, "held")
        self.assertIs(connection.state, State.READY)

    def test_failed_reauthentication_drops_the_connection(self) -> None:
        self.broker.lifetime_ms = 1000
        connection = self.sasl()
        connection.connect()
        self.net.flush()
        self.broker.password = "changed"
        self.clock.advance(1)
        self.net.flush()
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_authentication_waiting_on_a_token_times_out(self) -> None:
        pending: list[Deferred[OAuthBearerToken]] = []

        def provider() -> Deferred[OAuthBearerToken]:
            pending.append(Deferred())
            return pending[-1]

        self.broker.enabled = ["OAUTHBEARER"]
        mechanism = OAuthBearer(provider)
        connection = self.connection(
            authenticator=SaslAuthenticator(mechanism, "broker", 9092, self.clock),
            request_timeout=5,
        )
        connection.connect()
        self.net.flush()
        self.assertIs(connection.state, State.AUTHENTICATING)
        self.clock.advance(5)
        self.assertIs(connection.state, State.BACKING_OFF)
        pending[0].callback(OAuthBearerToken("late", self.clock.seconds() + 60))  # ignored
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_a_final_refusal_before_ready_fails_queued_requests_at_once(self) -> None:
        """A connection lost before it was ready, for a reason that is not retriable
        (TLS 1.3's late refusal of a client certificate), fails the queued requests
        now; a retriable loss keeps them for the next attempt."""
        self.broker.hold = True  # the handshake stays unanswered: AUTHENTICATING
        connection = self.sasl(request_timeout=60)
        kept = connection.request(metadata("t"))
        self.net.flush()
        self.assertIs(connection.state, State.AUTHENTICATING)
        self.net.transport.protocol.connectionLost(Failure(ConnectionDone()))
        self.assertNoResult(kept)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.clock.advance(10.0)
        self.net.flush()
        self.assertIs(connection.state, State.AUTHENTICATING)
        refused = TLSAuthenticationFailed("broker:9092 refused the TLS session")
        self.net.transport.protocol.connectionLost(Failure(refused))
        self.assertIs(self.failureResultOf(kept, TLSAuthenticationFailed).value, refused)
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_authentication_waiting_on_the_broker_times_out_once(self) -> None:
        self.broker.hold = True  # the broker never answers the handshake
        connection = self.sasl(request_timeout=5)
        d = connection.request(metadata("t"), timeout=60)
        self.net.flush()
        self.assertIs(connection.state, State.AUTHENTICATING)
        self.clock.advance(5)
        self.assertIs(connection.state, State.BACKING_OFF)
        self.assertNoResult(d)  # a retriable failure: the request waits for the next connection
        d.addErrback(lambda f: f.trap(CancelledError))  # closed by the clean-up


class BootstrapRefusalTests(ConnectionTestCase):
    """A client whose credentials a bootstrap broker refused does not reconnect to it on
    every call: until the back-off ends, calls fail at once with the broker's answer."""

    def setUp(self) -> None:
        super().setUp()
        self.broker = PasswordBroker()
        self.server = self.net.serve(self.broker)

    def client(self, password: str) -> KafkaClient:
        client = KafkaClient(
            "broker:9092",
            reactor=self.clock,
            endpoint_factory=self.net.endpoint_factory,
            retry_policy=lambda failures: float(failures),
            sasl=Plain("alice", password),
        )
        self.addCleanup(self.close, client)
        return client

    def close(self, client: KafkaClient) -> None:
        d = client.close()
        self.net.flush()
        self.successResultOf(d)

    def refused(self, client: KafkaClient) -> KafkaUnavailableError:
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        error = self.failureResultOf(d, KafkaUnavailableError).value
        self.assertIn("Invalid username or password", str(error))
        self.assertIsInstance(error.__cause__, SaslAuthenticationFailed)
        return error

    def test_refused_credentials_back_off_per_bootstrap_host(self) -> None:
        client = self.client("wrong")
        self.refused(client)
        self.assertEqual(len(self.net.transports), 1)
        for _ in range(5):  # within the 1 s back-off: no new connection
            error = self.refused(client)
        self.assertIn("not retried for another 1.0 s", str(error))
        self.assertEqual(len(self.net.transports), 1)
        self.clock.advance(1.0)
        self.refused(client)  # the back-off is over: one new attempt, refused again
        self.assertEqual(len(self.net.transports), 2)
        self.clock.advance(1.5)
        self.refused(client)  # the second refusal backs off 2 s
        self.assertEqual(len(self.net.transports), 2)
        self.broker.password = "wrong"  # the broker now accepts it
        self.clock.advance(0.5)
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        self.successResultOf(d)
        self.assertEqual(len(self.net.transports), 3)

    def test_refused_connections_back_off_too(self) -> None:
        """A refused TCP connection is not tried again before its back-off either
        (issue 33: a dead port drew one connection per call)."""
        del self.net.servers["broker", 9092]
        client = self.client("right")
        for _ in range(2):
            d = client.load_metadata_for_topics("t")
            self.net.flush()
            self.failureResultOf(d, KafkaUnavailableError)
        self.net.serve(self.broker)
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        self.failureResultOf(d, KafkaUnavailableError)
        self.assertEqual(self.net.transports, [])  # within the back-off: not connected to
        self.clock.advance(1.0)
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        self.successResultOf(d)

    def test_a_producer_send_fails_at_once_with_the_refusal(self) -> None:
        """Issue 33: wrong credentials failed Producer.send only at its delivery
        timeout (120 s), retrying a retriable KafkaUnavailableError."""
        client = self.client("wrong")
        producer = Producer(client)
        d = producer.send("t", b"v")
        self.net.flush()
        error = self.failureResultOf(d, AuthenticationRefused).value
        self.assertIn("Invalid username or password", str(error))
        self.assertIsInstance(error.__cause__, SaslAuthenticationFailed)
        self.assertFalse(error.retriable)
        self.assertEqual(self.clock.seconds(), 0)
        self.successResultOf(producer.stop())

    def test_consumers_and_groups_fail_at_once_with_the_refusal(self) -> None:
        """Issue 33: a consumer group retried a refused coordinator lookup forever
        (CoordinatorNotAvailable, retriable); it now stops with the refusal, as a
        Consumer does."""
        client = self.client("wrong")
        consumer = Consumer(client, "t", 0, lambda consumer, messages: None)
        group = ConsumerGroup(client, "g", ["t"], lambda consumer, messages: None)
        for d in (consumer.start(OFFSET_EARLIEST), group.start()):
            self.net.flush()
            for _ in range(10):
                if d.called:
                    break
                self.clock.advance(0.1)
                self.net.flush()
            error = self.failureResultOf(d, AuthenticationRefused).value
            self.assertIsInstance(error.__cause__, SaslAuthenticationFailed)
            self.clock.advance(2)  # the next one's bootstrap back-off

    def test_a_listener_without_sasl_is_named(self) -> None:
        """Kafka answers SaslHandshake with ILLEGAL_SASL_STATE on a PLAINTEXT or SSL
        listener: say that the listener does not take SASL, at once and for good."""
        self.broker.takes_sasl = False
        client = self.client("right")
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        error = self.failureResultOf(d, AuthenticationRefused).value
        self.assertIn("the listener at broker:9092 does not take SASL", str(error))
        self.assertIsInstance(error.__cause__, IllegalSaslState)
        d = client.load_metadata_for_topics("t")
        self.net.flush()
        self.failureResultOf(d, AuthenticationRefused)
        self.assertEqual(len(self.net.transports), 1)  # backed off: no second connection
