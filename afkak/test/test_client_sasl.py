"""What only the repository's loopback SASL server can show, and what the other
brokers do with SASL.

Every SASL and TLS proof runs against Apache Kafka itself
(``test_security_kafka.py``, ``test_acls_kafka.py``).  The loopback server
(:mod:`afkak.test.brokers.sasl`) stays for what Kafka does not let a test see:
the SASL extensions (KIP-342) a client sent.  ``BrokerFindingsTests`` record
what Tansu and noida-db do with SASL (their ``sasl_*`` quirks).
"""

from __future__ import annotations

import time
import uuid
from typing import Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak import (
    KafkaClient,
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    Producer,
    ScramSha256,
)
from afkak.common import KafkaUnavailableError
from afkak.test.brokers.sasl import SaslBroker
from afkak.test.helpers import wait
from afkak.test.test_security_kafka import capture_logs, sleep, unsecured_jwt

PASSWORD = "alice-pw-7f3c9e"
WRONG = "wrong-pw-51ab0d"


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


class OAuthBearerExtensionsTests(SaslServerCase):
    """SASL extensions (KIP-342) arrive with every authentication, re-authentications
    included.  Only the loopback server shows this: Kafka's unsecured validator
    accepts the token whatever extensions come with it and reports none of them, so
    on Kafka an extension lost on the way would go unnoticed.  The server grants
    1.5 s sessions (KIP-368) to see re-authentications too."""

    server_options: ClassVar[dict[str, Any]] = {"session_lifetime_ms": 1500}

    def test_extensions_reach_the_broker_on_every_authentication(self) -> None:
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
            sleep(0.2)
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
