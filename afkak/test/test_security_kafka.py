"""Security against Apache Kafka itself (``shared_broker("kafka-secure")``).

TLS with certificates the tests make (PEM keystores on the broker), host name
verification and mutual TLS on real listeners; SASL PLAIN, SCRAM users created
with afkak's admin, OAUTHBEARER through Kafka's unsecured validator, KIP-368
re-authentication under ``connections.max.reauth.ms``; wrong credentials fail at
once with Kafka's own message and without a reconnect storm.  The ACL proofs are
in ``test_acls_kafka.py``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import tempfile
import time
import uuid
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint, wrapClientTLS
from twisted.internet.ssl import Certificate, optionsForClientTLS
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from afkak import (
    TLS,
    KafkaClient,
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    Producer,
    ScramSha256,
    ScramSha512,
)
from afkak.admin import KafkaAdminClient, NewTopic, ScramMechanism, ScramUpsertion
from afkak.client import AuthenticationRefused
from afkak.common import (
    DuplicateResource,
    FetchRequest,
    IllegalSaslState,
    KafkaUnavailableError,
    Message,
    ProduceRequest,
    SaslAuthenticationFailed,
    TLSAuthenticationFailed,
    TLSListenerError,
    UnsupportedSaslMechanism,
)
from afkak.connection import SaslMechanism
from afkak.test.brokers import shared_broker
from afkak.test.brokers.kafka_secure import REAUTH_MS, USERS, KafkaSecureBroker
from afkak.test.helpers import wait
from afkak.test.test_brokers_harness import _BrokerChecks

ADMIN = Plain("admin", USERS["admin"])


def unsecured_jwt(subject: str, expires_at: float) -> str:
    """A token Kafka's unsecured validator accepts: ``alg: none``, empty signature."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'exp': expires_at, 'iat': 0})}."


def oauth(subject: str, lifetime: float, issued: list[float] | None = None) -> OAuthBearer:
    """OAUTHBEARER with unsecured tokens for *subject*, valid *lifetime* seconds; the
    time each is issued is appended to *issued*."""
    from twisted.internet import reactor

    def provider() -> OAuthBearerToken:
        now = reactor.seconds()
        if issued is not None:
            issued.append(time.monotonic())
        return OAuthBearerToken(unsecured_jwt(subject, now + lifetime), now + lifetime, subject)

    return OAuthBearer(provider)


def capture_logs(case: SynchronousTestCase) -> list[str]:
    """Every log event (debug included) until the test ends, formatted, with tracebacks."""
    from twisted.logger import formatEvent

    logged: list[str] = []

    def observe(event: dict[str, Any]) -> None:
        logged.append(formatEvent(event))
        if event.get("log_failure") is not None:
            logged.append(event["log_failure"].getTraceback())

    globalLogPublisher.addObserver(observe)
    case.addCleanup(globalLogPublisher.removeObserver, observe)
    return logged


def sleep(seconds: float) -> None:
    from twisted.internet import reactor

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reactor.iterate(0.02)  # type: ignore[attr-defined]


class CountingEndpoints:
    """An ``endpoint_factory`` counting connection attempts (TCP connects)."""

    def __init__(self) -> None:
        self.attempts: list[float] = []

    def __call__(self, reactor: Any, host: str, port: int) -> Any:
        endpoint = TCP4ClientEndpoint(reactor, host, port)
        connect = endpoint.connect

        def counted(factory: Any) -> Any:
            self.attempts.append(time.monotonic())
            return connect(factory)

        endpoint.connect = counted  # type: ignore[method-assign]
        return endpoint


class CountingMechanism:
    """A SASL mechanism that records when each authentication starts (KIP-368 timing)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.started: list[float] = []

    def start(self, host: str, clock: Any) -> Any:
        self.started.append(time.monotonic())
        return self.inner.start(host, clock)


class SecureKafkaCase(SynchronousTestCase):
    broker: KafkaSecureBroker

    def setUp(self) -> None:
        broker = shared_broker("kafka-secure")
        assert isinstance(broker, KafkaSecureBroker)
        self.broker = broker

    def client(
        self,
        listener: str,
        *,
        sasl: SaslMechanism | None = None,
        tls: Any = None,
        endpoints: Any = TCP4ClientEndpoint,
        timeout: float = 10000,
    ) -> KafkaClient:
        client = KafkaClient(
            self.broker.address(listener),
            sasl=sasl,
            tls=tls,
            endpoint_factory=endpoints,
            timeout=timeout,
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    def trusted(self, **kwargs: Any) -> TLS:
        return TLS(trust_root=self.broker.ca.cert, **kwargs)

    def mutual(self) -> TLS:
        cert = self.broker.client
        return self.trusted(client_certificate=(cert.cert, cert.key))

    def round_trip(self, client: KafkaClient, what: str) -> str:
        """Create a topic, produce two records and fetch them back over *client*; the topic."""
        topic = f"{what}-{uuid.uuid4().hex[:8]}"
        created = wait(KafkaAdminClient(client).create_topics([NewTopic(topic, 1, 1)]), 30)
        self.assertIsNone(created[topic].error)
        producer = Producer(client)
        self.addCleanup(producer.stop)
        wait(producer.send_messages(topic, msgs=[b"one", b"two"]), 30)
        [fetched] = wait(
            client.send_fetch_request(
                [FetchRequest(topic, 0, 0, 1 << 16)], max_wait_time=100, min_bytes=1
            )
        )
        self.assertEqual([m.message.value for m in fetched.messages], [b"one", b"two"])
        return topic

    def assert_refused(self, client: KafkaClient, *expected: str, within: float = 5.0) -> Any:
        """A Metadata call fails at once (not at the timeout); the error, whose text
        holds each of *expected*."""
        began = time.monotonic()
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics(), 30)
        self.assertLess(time.monotonic() - began, within, "failed at once, not at the timeout")
        for text in expected:
            self.assertIn(text, str(caught.exception))
        return caught.exception


class TLSTests(SecureKafkaCase):
    """TLS listeners whose keystores are PEM files made by the tests' CA."""

    def test_mutual_tls_with_pem_keystores(self) -> None:
        """``ssl.client.auth=required``: afkak's TLS(client_certificate=...) and a
        stdlib SSLContext holding the certificate both get in, produce and fetch."""
        self.round_trip(self.client("SSL", tls=self.mutual()), "mtls")
        context = ssl.create_default_context(cafile=self.broker.ca.cert)
        context.load_cert_chain(self.broker.client.cert, self.broker.client.key)
        self.round_trip(self.client("SSL", tls=context), "mtls-stdlib")

    def test_mutual_tls_without_a_client_certificate_fails_cleanly(self) -> None:
        """TLS 1.3: Kafka checks the client's certificate after the client's handshake
        is done, then sends an alert; the call fails at once (it waited for its
        timeout before), not retriably, and later calls back off."""
        address = self.broker.address("SSL")
        for tls in (self.trusted(), ssl.create_default_context(cafile=self.broker.ca.cert)):
            endpoints = CountingEndpoints()
            client = self.client("SSL", tls=tls, endpoints=endpoints)
            error = self.assert_refused(client, f"{address} refused the TLS session", within=3.0)
            self.assertIsInstance(error.__cause__, TLSAuthenticationFailed)
            self.assertFalse(error.__cause__.retriable)
            for _ in range(5):
                self.assert_refused(client, "not retried for another", within=0.5)
            self.assertEqual(len(endpoints.attempts), 1)
        # TLS 1.2 refuses during the handshake itself: the connection attempt fails.
        tls12 = ssl.create_default_context(cafile=self.broker.ca.cert)
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        self.assert_refused(self.client("SSL", tls=tls12), f"TLS handshake with {address} failed")
        # A certificate the CA signed for a principal without ACLs gets in, and no further.
        stranger = self.trusted(
            client_certificate=(self.broker.stranger.cert, self.broker.stranger.key)
        )
        client = self.client("SSL", tls=stranger)
        topic = f"stranger-{uuid.uuid4().hex[:8]}"
        self.broker.create_topic(topic)
        wait(client.load_metadata_for_topics())
        self.assertNotIn(topic, client.topic_partitions)  # no Describe ACL: not listed

    def test_a_certificate_for_another_name_fails_host_name_verification(self) -> None:
        """WRONG_NAME serves a certificate for ``kafka.invalid`` signed by the trusted CA:
        the chain is good, the name is not."""
        address = self.broker.address("WRONG_NAME")
        error = self.assert_refused(
            self.client("WRONG_NAME", tls=self.trusted()), f"TLS handshake with {address} failed"
        )
        self.assertIn("IPAddressMismatch", str(error))
        context = ssl.create_default_context(cafile=self.broker.ca.cert)
        error = self.assert_refused(self.client("WRONG_NAME", tls=context), address)
        self.assertIn("IP address mismatch", str(error))
        # The same listener with host name verification off: the chain alone is checked.
        self.round_trip(
            self.client("WRONG_NAME", tls=self.trusted(verify_hostname=False)), "noname"
        )

    def test_an_endpoint_factory_doing_tls_itself(self) -> None:
        """The older route (docs/security.rst): ``endpoint_factory`` wraps TLS."""
        with open(self.broker.ca.cert, "rb") as f:
            trust_root = Certificate.loadPEM(f.read())

        def tls_endpoint(reactor: Any, host: str, port: int) -> Any:
            options = optionsForClientTLS(host, trustRoot=trust_root)
            return wrapClientTLS(options, TCP4ClientEndpoint(reactor, host, port))

        self.round_trip(self.client("SASL_SSL", sasl=ADMIN, endpoints=tls_endpoint), "route")

    def test_an_untrusted_certificate_fails_cleanly(self) -> None:
        address = self.broker.address("SASL_SSL")
        self.assert_refused(
            self.client("SASL_SSL", tls=True, sasl=ADMIN),
            f"TLS handshake with {address} failed",
            "certificate verify failed",
        )


class SaslTests(SecureKafkaCase):
    def test_plain_over_sasl_plaintext_and_sasl_ssl(self) -> None:
        self.round_trip(self.client("SASL_PLAINTEXT", sasl=ADMIN), "plain")
        self.round_trip(self.client("SASL_SSL", sasl=ADMIN, tls=self.trusted()), "plain-tls")

    def create_scram_user(self, password: str) -> str:
        """A new user with SCRAM-SHA-256 and -512 credentials, made with afkak's admin
        (AlterUserScramCredentials) over SASL PLAIN as ``admin``."""
        user = f"carol-{uuid.uuid4().hex[:8]}"
        admin = KafkaAdminClient(self.client("SASL_PLAINTEXT", sasl=ADMIN))
        changes = [
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_256, password),
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_512, password, iterations=8192),
        ]
        # KRaft keys a request's changes by user alone: one change per user per request.
        [refused] = wait(admin.alter_user_scram_credentials(changes)).values()
        self.assertIsInstance(refused.error, DuplicateResource)
        self.assertIn("cannot be altered twice in the same request", str(refused.error))
        for change in changes:
            results = wait(admin.alter_user_scram_credentials([change]))
            self.assertTrue(results[user].ok, results)
        described = wait(admin.describe_user_scram_credentials([user]))[user]
        self.assertEqual(
            sorted((c.mechanism, c.iterations) for c in described.credentials),
            [(ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192)],
        )
        return user

    def test_scram_users_created_with_the_admin_client_log_in(self) -> None:
        password = f"pw-{uuid.uuid4().hex}"
        user = self.create_scram_user(password)
        for mechanism in (ScramSha256(user, password), ScramSha512(user, password)):
            for listener, tls in (("SASL_PLAINTEXT", None), ("SASL_SSL", self.trusted())):
                client = self.client(listener, sasl=mechanism, tls=tls)
                # A user with no ACL sees no topics, but is in: Metadata answers.
                self.assertTrue(wait(client.load_metadata_for_topics()))
        self.assert_refused(
            self.client("SASL_PLAINTEXT", sasl=ScramSha512(user, "not-" + password)),
            "SASL_AUTHENTICATION_FAILED",
            "Authentication failed during authentication due to invalid credentials with "
            "SASL mechanism SCRAM-SHA-512",
        )

    def test_wrong_password_fails_at_once_without_a_reconnect_storm(self) -> None:
        """The first call fails as soon as Kafka answers, with Kafka's message; 30 more
        calls (50 ms apart) fail at once and reconnect only as the back-off allows.

        (Counted calls and their median time, not calls per wall-clock second: a loaded
        CI machine once fitted only 19 calls into 3 s.)"""
        logged = capture_logs(self)
        for mechanism, message in (
            (Plain("alice", "wrong-password"), "Invalid username or password"),
            (ScramSha256("alice", "wrong-password"), "invalid credentials"),
        ):
            endpoints = CountingEndpoints()
            client = self.client("SASL_PLAINTEXT", sasl=mechanism, endpoints=endpoints)
            error = self.assert_refused(client, "SASL_AUTHENTICATION_FAILED", message)
            self.assertIsInstance(error.__cause__, SaslAuthenticationFailed)
            self.assertFalse(error.__cause__.retriable)
            self.assertNotIn("wrong-password", str(error))
            took = []
            for _ in range(30):
                began = time.monotonic()
                with self.assertRaises(KafkaUnavailableError):
                    wait(client.load_metadata_for_topics(), 30)
                took.append(time.monotonic() - began)
                sleep(0.05)
            attempts = len(endpoints.attempts)
            median = sorted(took)[len(took) // 2]
            print(f"{mechanism.name}: 30 calls, median {median:.3f} s, {attempts} attempts")
            self.assertLess(median, 0.1, "calls during the back-off fail at once")
            self.assertLessEqual(attempts, 8, "reconnects back off")
            conns = [*client.clients.values(), *client._cluster.pool._ephemeral]
            for text in [repr(client), repr(mechanism), *map(repr, conns), *logged]:
                self.assertNotIn("wrong-password", text)

    def test_an_unsupported_mechanism_names_those_the_listener_enables(self) -> None:
        error = self.assert_refused(
            self.client("REAUTH", sasl=ScramSha512("admin", "any")),
            "does not enable SASL mechanism SCRAM-SHA-512; it enables: PLAIN, OAUTHBEARER",
        )
        self.assertIsInstance(error.__cause__, UnsupportedSaslMechanism)


class RefusedConnectionTests(SecureKafkaCase):
    """Issue 33: a connection the broker refuses for good fails Producer.send as soon
    as Kafka answers, with its answer (it waited for the delivery timeout, 120 s,
    retrying), and repeated calls reconnect only as the back-off allows."""

    def refused_send(self, client: KafkaClient, cause: type, text: str) -> None:
        producer = Producer(client)
        self.addCleanup(lambda: wait(producer.stop()))
        began = time.monotonic()
        with self.assertRaises(AuthenticationRefused) as caught:
            wait(producer.send(f"refused-{uuid.uuid4().hex[:8]}", b"v"), 60)
        print(f"{cause.__name__}: Producer.send failed in {time.monotonic() - began:.3f} s")
        self.assertIsInstance(caught.exception.__cause__, cause)
        self.assertFalse(caught.exception.retriable)
        self.assertIn(text, str(caught.exception))

    def test_wrong_password(self) -> None:
        client = self.client("SASL_PLAINTEXT", sasl=Plain("admin", "wrong-password"))
        self.refused_send(client, SaslAuthenticationFailed, "Invalid username or password")

    def test_mutual_tls_without_a_client_certificate(self) -> None:
        address = self.broker.address("SSL")
        client = self.client("SSL", tls=self.trusted())
        self.refused_send(client, TLSAuthenticationFailed, f"{address} refused the TLS session")

    def test_sasl_on_a_listener_without_sasl(self) -> None:
        address = self.broker.address("PLAINTEXT")
        client = self.client("PLAINTEXT", sasl=ADMIN)
        self.refused_send(client, IllegalSaslState, f"the listener at {address} does not take SASL")

    def test_no_tls_on_a_tls_listener(self) -> None:
        """Kafka answers a plaintext request with a TLS alert: named at once, where the
        client reconnected until REQUEST_TIMED_OUT."""
        address = self.broker.address("SSL")
        endpoints = CountingEndpoints()
        client = self.client("SSL", endpoints=endpoints)
        self.refused_send(client, TLSListenerError, f"{address} answered with TLS")
        for _ in range(20):
            self.assert_refused(client, "TLS port?", within=1.0)
            sleep(0.05)
        print(f"plaintext on TLS: 21 calls, {len(endpoints.attempts)} connections")
        self.assertLessEqual(len(endpoints.attempts), 8, "reconnects back off")


class NoSaslOnASaslListenerTests(SecureKafkaCase):
    def test_the_likely_cause_is_named(self) -> None:
        """Kafka answers ApiVersions, then closes the connection on the next request:
        retriable (a broker going away looks the same), with the likely cause."""
        error = self.assert_refused(
            self.client("SASL_PLAINTEXT"), "is this the broker's SASL port?"
        )
        self.assertTrue(error.retriable)


class CommandLineRefusalTests(SecureKafkaCase):
    """Issue 36: through ``--command-config`` the command line names the likely cause,
    as the library does (SASL on a plaintext listener said ``ILLEGAL_SASL_STATE:
    SaslHandshake ...``; no TLS on a TLS listener waited for REQUEST_TIMED_OUT)."""

    def refused(self, listener: str, properties: str, *expected: str) -> None:
        from afkak.test.test_cli_brokers import cli

        workdir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, workdir, True)
        config = os.path.join(workdir, "command.properties")
        with open(config, "w") as f:
            f.write(properties)
        address = self.broker.address(listener)
        done = cli("--command-config", config, "topics", "list", bootstrap=address)
        [line] = done.stderr.decode().splitlines()
        self.assertEqual(done.returncode, 3, line)
        for text in expected:
            self.assertIn(text.format(address=address), line)

    def test_sasl_on_a_listener_without_sasl(self) -> None:
        self.refused(
            "PLAINTEXT",
            "security.protocol=SASL_PLAINTEXT\nsasl.username=admin\nsasl.password=x\n",
            "the listener at {address} does not take SASL",
        )

    def test_tls_on_a_plaintext_listener(self) -> None:
        self.refused("PLAINTEXT", "security.protocol=SSL\n", "is this the broker's TLS port?")

    def test_no_tls_on_a_tls_listener(self) -> None:
        self.refused(
            "SSL", "security.protocol=PLAINTEXT\n", "{address} answered with TLS", "TLS port?"
        )


class OAuthBearerTests(SecureKafkaCase):
    """OAUTHBEARER tokens checked by Kafka's unsecured validator (no callback handler)."""

    def test_an_unsecured_token_is_accepted(self) -> None:
        self.round_trip(self.client("SASL_PLAINTEXT", sasl=oauth("admin", 3600)), "oauth")
        self.round_trip(
            self.client("SASL_SSL", sasl=oauth("admin", 3600), tls=self.trusted()), "oauth-tls"
        )

    def test_an_expired_or_malformed_token_fails_cleanly(self) -> None:
        from twisted.internet import reactor

        expired = OAuthBearer(
            lambda: OAuthBearerToken(
                unsecured_jwt("admin", reactor.seconds() - 60), reactor.seconds() + 60
            )
        )
        self.assert_refused(
            self.client("SASL_PLAINTEXT", sasl=expired), "SASL_AUTHENTICATION_FAILED"
        )
        garbage = OAuthBearer(lambda: OAuthBearerToken("not-a-jwt", reactor.seconds() + 60))
        error = self.assert_refused(
            self.client("SASL_PLAINTEXT", sasl=garbage), "SASL_AUTHENTICATION_FAILED"
        )
        self.assertNotIn("not-a-jwt", str(error))


class ReauthenticationTests(SecureKafkaCase):
    """KIP-368 on the REAUTH listener (``connections.max.reauth.ms`` = 3 s): Kafka closes
    a connection that sends anything but SASL after its session ends, so one connection
    that keeps working across several sessions has re-authenticated."""

    def keep_producing(self, client: KafkaClient, seconds: float) -> None:
        topic = f"reauth-{uuid.uuid4().hex[:8]}"
        wait(KafkaAdminClient(client).create_topics([NewTopic(topic, 1, 1)]), 30)
        wait(client.load_metadata_for_topics(topic))
        [node] = client.clients
        protocol = client.clients[node]._protocol
        began, sent = time.monotonic(), 0
        while time.monotonic() - began < seconds:
            [response] = wait(
                client.send_produce_request([ProduceRequest(topic, 0, [Message(0, 0, None, b"x")])])
            )
            self.assertEqual(response.offset, sent)
            sent += 1
            sleep(0.1)
        self.assertIs(client.clients[node]._protocol, protocol, "one TCP connection throughout")

    def test_plain_sessions_are_renewed_on_the_same_connection(self) -> None:
        mechanism = CountingMechanism(ADMIN)
        client = self.client("REAUTH", sasl=mechanism)
        wait(client.load_metadata_for_topics())
        mechanism.started.clear()  # the bootstrap connection's authentications
        self.keep_producing(client, 10.0)
        gaps = [b - a for a, b in zip(mechanism.started, mechanism.started[1:], strict=False)]
        print(f"re-authentications: {len(mechanism.started)}, gaps {[round(g, 2) for g in gaps]}")
        self.assertGreaterEqual(len(mechanism.started), 3)
        for gap in gaps:
            # 85% of the 3 s session, give or take the busy machine.
            self.assertLess(abs(gap - REAUTH_MS / 1000 * 0.85), 0.4, gaps)

    def test_a_refused_reauthentication_drops_the_connection(self) -> None:
        """Kafka refuses a re-authentication as another principal and closes the
        connection; the next request connects anew (as the new principal)."""
        from twisted.internet import reactor

        subjects = iter(["admin"])

        def provider() -> OAuthBearerToken:  # a 3 s token, renewed after half of it
            now, subject = reactor.seconds(), next(subjects, "admin-again")
            return OAuthBearerToken(unsecured_jwt(subject, now + 3), now + 3, subject)

        mechanism = CountingMechanism(OAuthBearer(provider, refresh_window=0.5))
        client = self.client("REAUTH", sasl=mechanism)
        self.round_trip(client, "reauth-refused")  # as admin, on node 1's connection
        protocol = client.clients[1]._protocol
        began = time.monotonic()
        while client.clients[1]._protocol is protocol and time.monotonic() - began < 5:
            sleep(0.05)
        self.assertIsNot(client.clients[1]._protocol, protocol, "the connection was dropped")
        self.assertGreaterEqual(len(mechanism.started), 3, "node 1 re-authenticated")
        self.assertTrue(wait(client.load_metadata_for_topics()))  # anew, as admin-again

    def test_oauthbearer_sessions_end_with_the_token(self) -> None:
        """A 4.5 s token on a 3 s session: the session after the first ends with the
        token (1.95 s), and a new token is fetched once 80% of the old one's lifetime
        has passed."""
        issued: list[float] = []
        client = self.client("REAUTH", sasl=oauth("admin", 4.5, issued))
        wait(client.load_metadata_for_topics())
        self.keep_producing(client, 10.0)
        self.assertGreaterEqual(len(issued), 3, "tokens were refreshed")


class SecureBrokerHarnessTests(_BrokerChecks, SynchronousTestCase):
    """The harness's checks of every broker, on the secure node (over its PLAINTEXT
    listener, whose ANONYMOUS principal is a super user)."""

    broker_class = KafkaSecureBroker

    def test_stop_removes_the_certificates(self) -> None:
        broker = KafkaSecureBroker().start()
        self.addCleanup(broker.stop)
        self.assertTrue(os.path.exists(broker.ca.cert))
        broker.stop()
        self.assertFalse(os.path.exists(broker.certificates))
