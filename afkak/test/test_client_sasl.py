"""SASL and TLS against a real broker behind the harness's SASL server (afkak.test.brokers.sasl).

Every mechanism runs produce, consume (Consumer), a ConsumerGroup (its
coordinator connections authenticate too) and admin-ish calls (Metadata,
CreateTopics); confluent-kafka with the same credentials reads what afkak
wrote, which also shows the server's exchange is right.  Wrong credentials
and unsupported mechanisms fail at once, and nothing leaks a secret.
"""

from __future__ import annotations

import base64
import json
import tempfile
import time
import uuid
from typing import Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from afkak import (
    TLS,
    Consumer,
    ConsumerGroup,
    KafkaClient,
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    Producer,
    ScramSha256,
    ScramSha512,
)
from afkak.admin import KafkaAdminClient, NewTopic
from afkak.common import (
    OFFSET_EARLIEST,
    KafkaUnavailableError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
)
from afkak.test.brokers.sasl import SaslBroker
from afkak.test.helpers import pump, wait
from afkak.test.test_client_tls import self_signed_certificate, tls_directory

PASSWORD = "alice-pw-7f3c9e"
WRONG = "wrong-pw-51ab0d"


def unsecured_jwt(subject: str, expires_at: float) -> str:
    """An unsecured JWT (``alg: none``), the kind librdkafka's test token builder makes."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'exp': expires_at})}."


def confluent_config(bootstrap: str, mechanism: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


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


def create_topic(client: KafkaClient, topic: str) -> list[int]:
    """Create *topic* with one partition with the admin client; the error codes."""
    created = wait(KafkaAdminClient(client).create_topics([NewTopic(topic, 1, 1)]))
    return [0 if t.error is None else t.error.errno for t in created.values()]


def afkak_read(client: KafkaClient, topic: str, count: int) -> list[bytes]:
    """The first *count* values of partition 0 of *topic*, read by afkak's Consumer."""
    got: list[bytes] = []
    consumer = Consumer(client, topic, 0, lambda c, msgs: got.extend(m.message.value for m in msgs))
    consumer.start(OFFSET_EARLIEST)
    try:
        pump(lambda: len(got) >= count, 20, f"{count} records of {topic} consumed")
    finally:
        consumer.stop()
    return got


def confluent_read(config: dict[str, Any], topic: str, count: int) -> list[bytes]:
    """The first *count* values of *topic*, read by confluent-kafka from the start."""
    import confluent_kafka

    reader = confluent_kafka.Consumer(
        {**config, "group.id": f"ck-{topic}", "auto.offset.reset": "earliest"}
    )
    try:
        reader.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        reader.close()
    return values


class SaslServerCase(SynchronousTestCase):
    server: ClassVar[SaslBroker]
    server_options: ClassVar[dict[str, Any]] = {}

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = SaslBroker({"alice": PASSWORD}, **cls.server_options).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def client(self, sasl: Any, **kwargs: Any) -> KafkaClient:
        client = KafkaClient(
            self.server.bootstrap, sasl=sasl, endpoint_factory=TCP4ClientEndpoint, **kwargs
        )
        self.addCleanup(lambda: wait(client.close()))
        return client


class MechanismTests:
    """Mixed in once per mechanism: ``mechanism()`` gives afkak's, ``name`` is its SASL name."""

    name: ClassVar[str]
    server: SaslBroker

    def mechanism(self, password: str = PASSWORD) -> Any:
        raise NotImplementedError

    def test_produce_consume_admin_and_interop(self: Any) -> None:

        client = self.client(self.mechanism())
        topic = f"sasl-{self.name.lower()}-{uuid.uuid4().hex[:6]}"
        self.assertEqual(create_topic(client, topic), [0])  # an admin call: CreateTopics
        producer = Producer(client)
        self.addCleanup(producer.stop)
        wait(producer.send_messages(topic, msgs=[b"one", b"two"]))

        self.assertEqual(afkak_read(client, topic, 2), [b"one", b"two"])

        config = confluent_config(self.server.bootstrap, self.name, PASSWORD)
        self.assertEqual(confluent_read(config, topic, 2), [b"one", b"two"])

    def test_consumer_group(self: Any) -> None:
        client = self.client(self.mechanism())
        topic = f"sasl-group-{uuid.uuid4().hex[:6]}"
        producer = Producer(client)
        self.addCleanup(producer.stop)
        wait(producer.send_messages(topic, msgs=[b"g1"]))
        seen: list[bytes] = []
        group = ConsumerGroup(
            client,
            f"group-{topic}",
            [topic],
            lambda c, msgs: seen.extend(m.message.value for m in msgs),
            session_timeout_ms=2000,
            heartbeat_interval_ms=500,
            auto_offset_reset=OFFSET_EARLIEST,
            fetch_max_wait_time=100,
        )
        group.start()
        try:
            pump(lambda: b"g1" in seen, 30, "the group consumed")
        finally:
            wait(group.shutdown(), 20)
        self.assertTrue(client._cluster.pool.coordinator_clients, "a coordinator connection")

    def test_wrong_password_fails_at_once_without_a_tight_loop(self: Any) -> None:
        import confluent_kafka
        import confluent_kafka.admin

        logged = capture_logs(self)
        mechanism = self.mechanism(WRONG)
        client = self.client(mechanism, timeout=20000)
        before = len([e for e in self.server.events() if e.get("event") == "failed"])
        start = time.monotonic()
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics("never"))
        self.assertLess(time.monotonic() - start, 5.0, "failed at once, not at the timeout")
        text = str(caught.exception)
        self.assertIn("SASL_AUTHENTICATION_FAILED", text)
        self.assertIn("invalid credentials", text)  # the broker's message
        self.assertIsInstance(caught.exception.__cause__, SaslAuthenticationFailed)
        self.assertFalse(caught.exception.__cause__.retriable)
        # Later calls keep failing, after back-off rather than in a loop.
        for _ in range(3):
            with self.assertRaises(KafkaUnavailableError):
                wait(client.load_metadata_for_topics("never"))
        wait(_sleep(max(0.0, 1.5 - (time.monotonic() - start))))
        failures = len([e for e in self.server.events() if e.get("event") == "failed"]) - before
        self.assertLessEqual(failures, 10, "reconnects back off")
        # The secret is nowhere: logs, reprs, the error.
        conns = [*client.clients.values(), *client._cluster.pool._ephemeral]
        texts = [text, repr(client), repr(mechanism), *map(repr, conns), *logged]
        for t in texts:
            self.assertNotIn(WRONG, t)
        # confluent-kafka fails the same way against the same server.
        admin = confluent_kafka.admin.AdminClient(
            {**confluent_config(self.server.bootstrap, self.name, WRONG), "logger": _Quiet()}
        )
        with self.assertRaises(confluent_kafka.KafkaException):
            admin.list_topics(timeout=3)


class _Quiet:
    """A logging.Logger stand-in for librdkafka's expected complaints."""

    def log(self, *args: Any) -> None:
        pass


class PlainTests(MechanismTests, SaslServerCase):
    name = "PLAIN"

    def mechanism(self, password: str = PASSWORD) -> Any:
        return Plain("alice", password)


class Scram256Tests(MechanismTests, SaslServerCase):
    name = "SCRAM-SHA-256"

    def mechanism(self, password: str = PASSWORD) -> Any:
        return ScramSha256("alice", password)


class Scram512Tests(MechanismTests, SaslServerCase):
    name = "SCRAM-SHA-512"

    def mechanism(self, password: str = PASSWORD) -> Any:
        return ScramSha512("alice", password)


class UnsupportedMechanismTests(SaslServerCase):
    server_options: ClassVar[dict[str, Any]] = {"mechanisms": ("SCRAM-SHA-512",)}

    def test_error_names_the_enabled_mechanisms(self) -> None:
        client = self.client(Plain("alice", PASSWORD))
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics())
        self.assertIn(
            "does not enable SASL mechanism PLAIN; it enables: SCRAM-SHA-512", str(caught.exception)
        )
        self.assertIsInstance(caught.exception.__cause__, UnsupportedSaslMechanism)


class OAuthBearerAndReauthenticationTests(SaslServerCase):
    """OAUTHBEARER, and KIP-368 re-authentication: the server grants 1.5 s sessions."""

    server_options: ClassVar[dict[str, Any]] = {"session_lifetime_ms": 1500}

    def test_token_provider_extensions_and_reauthentication(self) -> None:
        from twisted.internet import reactor

        issued: list[str] = []
        logged = capture_logs(self)

        def provider() -> Deferred[OAuthBearerToken]:
            now = reactor.seconds()
            issued.append(unsecured_jwt("alice", now + 3))
            d: Deferred[OAuthBearerToken] = Deferred()
            token = OAuthBearerToken(issued[-1], now + 3, "alice")
            reactor.callLater(0.01, d.callback, token)
            return d

        mechanism = OAuthBearer(provider, extensions={"traceId": "abc"})
        client = self.client(mechanism)
        topic = f"sasl-oauth-{uuid.uuid4().hex[:6]}"
        producer = Producer(client)
        self.addCleanup(producer.stop)
        wait(producer.send_messages(topic, msgs=[b"before"]))
        [node] = client.clients
        protocol = client.clients[node]._protocol
        # Keep producing across several session lifetimes (and token lifetimes).
        deadline = time.monotonic() + 4.5
        sent = 0
        while time.monotonic() < deadline:
            wait(producer.send_messages(topic, msgs=[b"during-%d" % sent]))
            sent += 1
            wait(_sleep(0.2))
        self.assertIs(client.clients[node]._protocol, protocol, "the same TCP connection")
        events = self.server.events()
        auths = [
            e for e in events if e.get("event") == "authenticated" and e["principal"] == "alice"
        ]
        self.assertFalse([e for e in events if e.get("event") == "expired"])
        self.assertGreaterEqual(len([e for e in auths if e["reauthentication"]]), 2, auths)
        self.assertTrue(all(e["extensions"] == {"traceId": "abc"} for e in auths))
        self.assertGreaterEqual(len(issued), 2, "tokens were refreshed before expiry")
        texts = [*logged, repr(client), repr(mechanism), *map(repr, client.clients.values())]
        for token in issued:
            for text in texts:
                self.assertNotIn(token, text)

    def test_bad_token_fails_cleanly(self) -> None:
        from twisted.internet import reactor

        mechanism = OAuthBearer(lambda: OAuthBearerToken("not-a-jwt", reactor.seconds() + 60))
        client = self.client(mechanism)
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics())
        self.assertIn("SASL_AUTHENTICATION_FAILED", str(caught.exception))
        self.assertNotIn("not-a-jwt", str(caught.exception))

    def test_confluent_kafka_authenticates_and_reauthenticates(self) -> None:
        import confluent_kafka.admin

        admin = confluent_kafka.admin.AdminClient(
            {
                "bootstrap.servers": self.server.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=carol extension_traceId=ck",
            }
        )
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            admin.list_topics(timeout=5)
            time.sleep(0.3)
        auths = [
            e
            for e in self.server.events()
            if e.get("event") == "authenticated" and e["principal"] == "carol"
        ]
        self.assertTrue(auths and auths[0]["extensions"] == {"traceId": "ck"}, auths)
        self.assertTrue([e for e in auths if e["reauthentication"]], auths)


def _sleep(seconds: float) -> Deferred[None]:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    return deferLater(reactor, seconds, lambda: None)


class SaslOverTLSTests(SynchronousTestCase):
    """SCRAM-SHA-512 over TLS; the SASL server terminates TLS (Tansu's own TLS flags conflict)."""

    def setUp(self) -> None:
        self.cert, key = self_signed_certificate(tls_directory(self))
        self.server = SaslBroker({"alice": PASSWORD}, cert=self.cert, key=key).start()
        self.addCleanup(self.server.stop)

    def test_scram_over_tls_with_confluent_kafka(self) -> None:

        client = KafkaClient(
            self.server.bootstrap,
            tls=TLS(trust_root=self.cert),
            sasl=ScramSha512("alice", PASSWORD),
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(client.close()))
        producer = Producer(client)
        self.addCleanup(producer.stop)
        topic = f"sasl-tls-{uuid.uuid4().hex[:6]}"
        wait(producer.send_messages(topic, msgs=[b"over tls"]))
        config = {
            **confluent_config(self.server.bootstrap, "SCRAM-SHA-512", PASSWORD),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": self.cert,
        }
        self.assertEqual(confluent_read(config, topic, 1), [b"over tls"])

    def test_scram_over_stdlib_ssl_context(self) -> None:
        """``tls=ssl.SSLContext``: Python's own TLS, chain and host name checked by the context."""
        import ssl

        context = ssl.create_default_context(cafile=self.cert)
        client = KafkaClient(
            self.server.bootstrap,
            tls=context,
            sasl=ScramSha512("alice", PASSWORD),
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(client.close()))
        producer = Producer(client)
        self.addCleanup(producer.stop)
        topic = f"sasl-stdlib-tls-{uuid.uuid4().hex[:6]}"
        self.assertEqual(create_topic(client, topic), [0])
        wait(producer.send_messages(topic, msgs=[b"stdlib tls"] * 50))
        self.assertEqual(afkak_read(client, topic, 50), [b"stdlib tls"] * 50)
        untrusting = KafkaClient(
            self.server.bootstrap,
            tls=ssl.create_default_context(),
            sasl=ScramSha512("alice", PASSWORD),
            endpoint_factory=TCP4ClientEndpoint,
            timeout=5000,
        )
        self.addCleanup(lambda: wait(untrusting.close()))
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(untrusting.load_metadata_for_topics())
        text = str(caught.exception)
        self.assertIn(f"TLS handshake with {self.server.bootstrap} failed", text)
        self.assertIn("CERTIFICATE_VERIFY_FAILED", text)

    def test_untrusted_certificate_names_host_and_reason(self) -> None:
        client = KafkaClient(
            self.server.bootstrap,
            tls=True,
            sasl=ScramSha512("alice", PASSWORD),
            timeout=5000,
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(client.close()))
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics())
        text = str(caught.exception)
        self.assertIn(f"TLS handshake with {self.server.bootstrap} failed", text)
        self.assertIn("certificate verify failed", text)


class BrokerFindingsTests(SynchronousTestCase):
    """What the installable brokers do with SASL (the ``sasl_*`` quirks), checked with afkak."""

    def test_noida_accepts_any_password(self) -> None:
        from afkak.test.brokers import shared_broker

        broker = shared_broker("noida")
        self.assertTrue(broker.quirks.sasl_accepts_any_password)
        client = KafkaClient(
            broker.bootstrap,
            sasl=Plain("nobody", WRONG),
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(client.close()))
        self.assertTrue(wait(client.load_metadata_for_topics()))

    def test_authenticating_tansu_lets_nobody_in(self) -> None:
        from afkak.test.brokers import TansuBroker

        self.assertTrue(TansuBroker.quirks.sasl_users_cannot_be_created)
        broker = TansuBroker(authentication=True).start()
        self.addCleanup(broker.stop)
        for mechanism in (ScramSha256("alice", PASSWORD), Plain("alice", PASSWORD)):
            client = KafkaClient(
                broker.bootstrap, sasl=mechanism, endpoint_factory=TCP4ClientEndpoint, timeout=3000
            )
            self.addCleanup(lambda c=client: wait(c.close()))
            with self.assertRaises(KafkaUnavailableError):
                wait(client.load_metadata_for_topics())


class MutualTLSTests(SynchronousTestCase):
    """Client certificates: the SASL server requires one signed by the client CA."""

    def setUp(self) -> None:
        import os

        directory = tempfile.mkdtemp(prefix="afkak-mtls-", dir=tls_directory(self))
        os.mkdir(os.path.join(directory, "client"))
        self.cert, key = self_signed_certificate(directory)
        self.client_cert = self_signed_certificate(os.path.join(directory, "client"))
        self.server = SaslBroker(
            {"alice": PASSWORD}, cert=self.cert, key=key, client_ca=self.client_cert[0]
        ).start()
        self.addCleanup(self.server.stop)

    def client(self, tls: Any) -> KafkaClient:
        client = KafkaClient(
            self.server.bootstrap,
            tls=tls,
            sasl=ScramSha256("alice", PASSWORD),
            endpoint_factory=TCP4ClientEndpoint,
            timeout=5000,
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    def test_client_certificate_accepted_and_required(self) -> None:
        client = self.client(TLS(trust_root=self.cert, client_certificate=self.client_cert))
        self.assertTrue(wait(client.load_metadata_for_topics("mtls")))
        import ssl

        context = ssl.create_default_context(cafile=self.cert)
        context.load_cert_chain(*self.client_cert)
        stdlib = self.client(context)
        self.assertTrue(wait(stdlib.load_metadata_for_topics("mtls")))
        without = self.client(TLS(trust_root=self.cert))
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(without.load_metadata_for_topics("mtls"))
        self.assertIn(self.server.bootstrap, str(caught.exception))
