"""Kerberos (GSSAPI) and Java key stores against Apache Kafka (``kafka-enterprise``).

GSSAPI with a keytab and with a ticket cache, KIP-368 re-authentication and a
keytab re-login; PKCS12 and JKS stores made by ``keytool``; each produces,
fetches and runs an admin call.  Kafka's Java tools on the same listeners with
the same credentials are the control, and the CLI reads each as a
``--command-config`` file.  Each bad input fails at once with one error naming
its cause; the time it took is printed (``-s`` shows it).
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak import GSSAPI, TLS, KafkaClient, KeyStore, Producer, TrustStore
from afkak.admin import KafkaAdminClient, NewTopic
from afkak.common import FetchRequest, KafkaUnavailableError, SaslAuthenticationFailed
from afkak.test import test_security_kafka
from afkak.test.brokers import shared_broker
from afkak.test.brokers.java_tools import run_tool
from afkak.test.brokers.kafka_enterprise import (
    CLIENT,
    KEY_PASSWORD,
    REALM,
    REAUTH_MS,
    STORE_PASSWORD,
    KafkaEnterpriseBroker,
)
from afkak.test.helpers import run_reactor_threads, wait
from afkak.test.test_cli_brokers import cli
from afkak.test.test_security_kafka import CountingMechanism, sleep


def _properties(path: str, config: dict[str, str]) -> str:
    with open(path, "w") as f:
        f.writelines(f"{key}={value}\n" for key, value in config.items())
    return path


class EnterpriseCase(SynchronousTestCase):
    broker: KafkaEnterpriseBroker

    def setUp(self) -> None:
        broker = shared_broker("kafka-enterprise")
        assert isinstance(broker, KafkaEnterpriseBroker)
        self.broker = broker
        run_reactor_threads(self)
        self.tmp = tempfile.mkdtemp(prefix="afkak-enterprise-test-")

    def client(self, listener: str, **options: Any) -> KafkaClient:
        client = KafkaClient(
            self.broker.address(listener),
            endpoint_factory=TCP4ClientEndpoint,
            timeout=10000,
            **options,
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    def round_trip(self, client: KafkaClient, what: str) -> str:
        """Create a topic (admin), produce two records and fetch them back over *client*."""
        topic = f"{what}-{uuid.uuid4().hex[:8]}"
        created = wait(KafkaAdminClient(client).create_topics([NewTopic(topic, 1, 1)]), 60)
        self.assertIsNone(created[topic].error)
        producer = Producer(client)
        self.addCleanup(producer.stop)
        wait(producer.send_messages(topic, msgs=[b"one", b"two"]), 30)
        [fetched] = wait(
            client.send_fetch_request(
                [FetchRequest(topic, 0, 0, 1 << 16)], max_wait_time=100, min_bytes=1
            ),
            30,
        )
        self.assertEqual([m.message.value for m in fetched.messages], [b"one", b"two"])
        return topic

    def refused(self, client: KafkaClient, *expected: str, within: float = 10.0) -> str:
        """A Metadata call fails well before the timeout, its error holding *expected*."""
        began = time.monotonic()
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(client.load_metadata_for_topics(), 30)
        took = time.monotonic() - began
        print(f"\n{self.id()}: failed in {took:.2f} s: {caught.exception}")
        self.assertLess(took, within, "failed at once, not at the request timeout")
        for text in expected:
            self.assertIn(text, str(caught.exception))
        return str(caught.exception)

    def java_topics(self, listener: str, config: dict[str, str]) -> str:
        """Kafka's own TopicCommand --list on *listener* with *config* (the Java control)."""
        path = _properties(os.path.join(self.tmp, f"java-{listener}.properties"), config)
        return run_tool(
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server", self.broker.address(listener),
            "--command-config", path, "--list",
            jvm_options=[f"-Djava.security.krb5.conf={self.broker.kdc.krb5_conf}"],
        )  # fmt: skip

    def afkak_topics(self, listener: str, config: dict[str, str]) -> str:
        path = _properties(os.path.join(self.tmp, f"afkak-{listener}.properties"), config)
        done = cli(
            "--command-config", path, "topics", "list", bootstrap=self.broker.address(listener)
        )
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()


def keytab_jaas(keytab: str, principal: str = CLIENT) -> str:
    return (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{keytab}" principal="{principal}";'
    )


class GSSAPITests(EnterpriseCase):
    # One connection, producing throughout.
    keep_producing = test_security_kafka.ReauthenticationTests.keep_producing

    def gssapi(self, **options: Any) -> GSSAPI:
        return GSSAPI(**{"principal": CLIENT, "keytab": self.broker.client_keytab, **options})

    def test_keytab_round_trip_java_control_and_cli(self) -> None:
        """A keytab login produces, fetches and creates a topic; Java's TopicCommand
        with the same keytab and afkak's CLI with the same properties list it."""
        topic = self.round_trip(self.client("GSSAPI", sasl=self.gssapi()), "gssapi")
        config = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.service.name": "kafka",
            "sasl.jaas.config": keytab_jaas(self.broker.client_keytab),
        }
        self.assertIn(topic, self.java_topics("GSSAPI", config).split())
        self.assertIn(topic, self.afkak_topics("GSSAPI", config))

    def test_ticket_cache(self) -> None:
        """kinit's ticket cache, as a user's would be, is used when there is no keytab."""
        cache = f"FILE:{self.tmp}/ccache"
        self.broker.kdc.kinit(CLIENT, self.broker.client_keytab, cache)
        client = self.client("GSSAPI", sasl=GSSAPI(ticket_cache=cache))
        self.round_trip(client, "gssapi-cache")

    def test_reauthentication_and_relogin(self) -> None:
        """On the REAUTH listener the broker's session lifetime makes afkak
        re-authenticate (KIP-368) on the open connection; a principal whose tickets
        live 8 s is logged in again from its keytab once half of that has passed."""
        principal = f"short-{uuid.uuid4().hex[:6]}@{REALM}"
        keytab = self.broker.kdc.add_principal(principal, max_life="8 seconds")
        mechanism = GSSAPI(principal=principal, keytab=keytab, refresh_window=0.5)
        counting = CountingMechanism(mechanism)
        client = self.client("REAUTH", sasl=counting)
        wait(client.load_metadata_for_topics(), 30)
        counting.started.clear()  # the bootstrap connection's authentications
        self.keep_producing(client, 3 * REAUTH_MS / 1000)
        print(f"\nre-authentications: {len(counting.started)}, logins: {mechanism.logins}")
        self.assertGreaterEqual(len(counting.started), 3, "re-authenticated on the connection")
        self.assertGreaterEqual(mechanism.logins, 2, "logged in again from the keytab")

    def test_unknown_principal(self) -> None:
        """A principal the KDC does not know (deleted, its keytab kept) fails at once
        naming it; a client given a known one then connects, in the same process."""
        principal = f"gone-{uuid.uuid4().hex[:6]}@{REALM}"
        keytab = self.broker.kdc.add_principal(principal)
        self.broker.kdc.delete_principal(principal)
        client = self.client("GSSAPI", sasl=GSSAPI(principal=principal, keytab=keytab))
        self.refused(client, principal, "not found in Kerberos database")
        wait(self.client("GSSAPI", sasl=self.gssapi()).load_metadata_for_topics(), 30)

    def test_missing_keytab(self) -> None:
        """A keytab that does not exist fails at once naming it; once the file is
        there, a client connects with it (in the same process)."""
        keytab = os.path.join(self.tmp, "late.keytab")
        client = self.client("GSSAPI", sasl=GSSAPI(principal=CLIENT, keytab=keytab))
        self.refused(client, f"keytab {keytab} does not exist")
        with open(self.broker.client_keytab, "rb") as f, open(keytab, "wb") as g:
            g.write(f.read())
        fixed = self.client("GSSAPI", sasl=GSSAPI(principal=CLIENT, keytab=keytab))
        wait(fixed.load_metadata_for_topics(), 30)

    def test_expired_ticket(self) -> None:
        """A ticket cache whose ticket expired fails at once saying so."""
        cache = f"FILE:{self.tmp}/expired"
        self.broker.kdc.kinit(CLIENT, self.broker.client_keytab, cache, lifetime="2s")
        sleep(3)
        client = self.client("GSSAPI", sasl=GSSAPI(ticket_cache=cache))
        self.refused(client, "expired")

    def test_refusal_is_not_retried(self) -> None:
        """The failure is SaslAuthenticationFailed, which afkak does not retry."""
        mechanism = GSSAPI(principal=CLIENT, keytab=os.path.join(self.tmp, "none.keytab"))
        failures: list[Any] = []
        mechanism.start("127.0.0.1", _SecondsOnly()).addErrback(failures.append)
        [failure] = failures
        self.assertIsInstance(failure.value, SaslAuthenticationFailed)
        self.assertFalse(failure.value.retriable)


class _SecondsOnly:
    """A clock that is no reactor: GSSAPI then runs its calls in line."""

    def seconds(self) -> float:
        return time.time()


class KeyStoreTests(EnterpriseCase):
    def stores(self, kind: str) -> TLS:
        stores = self.broker.stores[kind]
        return TLS(
            trust_root=TrustStore(stores.truststore, STORE_PASSWORD, kind),
            client_certificate=KeyStore(
                stores.keystore,
                STORE_PASSWORD,
                kind,
                key_password=KEY_PASSWORD if kind == "JKS" else None,
            ),
        )

    def config(self, kind: str) -> dict[str, str]:
        stores = self.broker.stores[kind]
        config = {
            "security.protocol": "SSL",
            "ssl.truststore.location": stores.truststore,
            "ssl.truststore.type": kind,
            "ssl.truststore.password": STORE_PASSWORD,
            "ssl.keystore.location": stores.keystore,
            "ssl.keystore.type": kind,
            "ssl.keystore.password": STORE_PASSWORD,
        }
        if kind == "JKS":
            config["ssl.key.password"] = KEY_PASSWORD
        return config

    def check_format(self, kind: str) -> None:
        topic = self.round_trip(self.client(kind, tls=self.stores(kind)), kind.lower())
        self.assertIn(topic, self.java_topics(kind, self.config(kind)).split())
        self.assertIn(topic, self.afkak_topics(kind, self.config(kind)))

    def test_pkcs12(self) -> None:
        """PKCS12 stores from keytool: mutual TLS, host name verified; Java and the CLI too."""
        self.check_format("PKCS12")

    def test_jks(self) -> None:
        """JKS stores from keytool, the key under its own password; Java and the CLI too."""
        self.check_format("JKS")

    def test_wrong_passwords_and_kinds(self) -> None:
        """Each bad store fails when it is read, naming the file and the cause, never the
        password; the right one then connects."""
        jks, p12 = self.broker.stores["JKS"], self.broker.stores["PKCS12"]
        cases = [
            (lambda: KeyStore(p12.keystore, "wrong", "PKCS12"), "wrong password"),
            (lambda: KeyStore(jks.keystore, "wrong", "JKS"), "wrong password"),
            (lambda: KeyStore(jks.keystore, STORE_PASSWORD, "JKS"), "wrong key password"),
            (lambda: KeyStore(jks.truststore, STORE_PASSWORD, "JKS"), "no private key"),
            (lambda: TrustStore(p12.truststore, STORE_PASSWORD, "PEM"), "no PEM certificate"),
            (lambda: KeyStore(p12.keystore, STORE_PASSWORD, "BKS"), "store type must be"),
        ]
        for make, expected in cases:
            began = time.monotonic()
            with self.assertRaises(ValueError) as caught:
                make()
            print(f"\n{expected}: {time.monotonic() - began:.3f} s: {caught.exception}")
            self.assertIn(expected, str(caught.exception))
            self.assertNotIn("wrong\x00", str(caught.exception))
            self.assertNotIn(STORE_PASSWORD, str(caught.exception))
        wait(self.client("JKS", tls=self.stores("JKS")).load_metadata_for_topics(), 30)

    def test_wrong_password_in_cli(self) -> None:
        """The CLI names the property's line and the cause, not the password."""
        config = {**self.config("PKCS12"), "ssl.keystore.password": "not-it"}
        path = _properties(os.path.join(self.tmp, "bad.properties"), config)
        done = cli("--command-config", path, "topics", "list", bootstrap="127.0.0.1:1")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(
            f"{path}:5: key store {self.broker.stores['PKCS12'].keystore}", done.stderr.decode()
        )
        self.assertIn("wrong password", done.stderr.decode())
        self.assertNotIn("not-it", done.stderr.decode())
