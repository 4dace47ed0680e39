"""``--command-config`` with Kerberos (GSSAPI) and Java key/trust store properties."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from afkak import GSSAPI, KeyStore, TrustStore
from afkak.cli._config import ConfigError, client_options, read_properties
from afkak.test.test_gssapi import skip_without_gssapi
from afkak.test.test_keystores import PASSWORD, store


class PropertiesCase(SynchronousTestCase):
    def options(self, text: str) -> dict[str, object]:
        self.path = self.mktemp()
        with open(self.path, "w") as f:
            f.write(text)
        return client_options(read_properties(self.path))

    def error(self, text: str) -> str:
        with self.assertRaises(ConfigError) as caught:
            self.options(text)
        message = str(caught.exception)
        self.assertTrue(message.startswith(self.path + ":"), message)
        return message[len(self.path) :]


class GSSAPIPropertiesTests(PropertiesCase):
    def setUp(self) -> None:
        skip_without_gssapi(self)

    def test_java_keytab_configuration(self) -> None:
        keytab = os.path.abspath(__file__)  # any readable file: read at connection time
        sasl = self.options(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
            "sasl.kerberos.service.name=kafka-prod\n"
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\\n"
            f'  useKeyTab=true storeKey=true keyTab="{keytab}" principal="alice@EXAMPLE.COM";\n'
        )["sasl"]
        assert isinstance(sasl, GSSAPI)
        self.assertEqual(
            (sasl.principal, sasl.keytab, sasl.service_name),
            ("alice@EXAMPLE.COM", keytab, "kafka-prod"),
        )

    def test_ticket_cache_configuration(self) -> None:
        sasl = self.options(
            "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n"
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required "
            'useTicketCache=true ticketCache="FILE:/tmp/cc";\n'
        )["sasl"]
        assert isinstance(sasl, GSSAPI)
        self.assertEqual(
            (sasl.keytab, sasl.ticket_cache, sasl.service_name), (None, "FILE:/tmp/cc", "kafka")
        )

    def test_bad_gssapi_properties_name_their_line(self) -> None:
        self.assertEqual(
            self.error(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                'required username="a" password="b";\n'
            ),
            ":3: sasl.mechanism=GSSAPI needs Java's Krb5LoginModule in sasl.jaas.config",
        )
        self.assertEqual(
            self.error(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
                "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required "
                "useKeyTab=true;\n"
            ),
            ':3: useKeyTab=true needs keyTab="PATH"',
        )
        self.assertEqual(
            self.error(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=a\n"
                "sasl.password=b\nsasl.kerberos.service.name=kafka\n"
            ),
            ":5: sasl.kerberos.service.name needs sasl.mechanism=GSSAPI",
        )


class StorePropertiesTests(PropertiesCase):
    def test_jks_and_pkcs12_stores(self) -> None:
        tls = self.options(
            "security.protocol=SSL\n"
            f"ssl.truststore.location={store('trust.p12')}\nssl.truststore.type=PKCS12\n"
            f"ssl.truststore.password={PASSWORD}\n"
            f"ssl.keystore.location={store('client.jks')}\nssl.keystore.type=JKS\n"
            f"ssl.keystore.password={PASSWORD}\nssl.key.password=key-secret\n"
        )["tls"]
        self.assertIsInstance(tls.trust_root, TrustStore)  # type: ignore[attr-defined]
        self.assertIsInstance(tls.client_certificate, KeyStore)  # type: ignore[attr-defined]
        self.assertTrue(tls.verify_hostname)  # type: ignore[attr-defined]

    def test_endpoint_identification_off(self) -> None:
        tls = self.options(
            "security.protocol=SSL\nssl.endpoint.identification.algorithm=\n"
            f"ssl.truststore.location={store('trust.jks')}\nssl.truststore.password={PASSWORD}\n"
        )["tls"]
        self.assertFalse(tls.verify_hostname)  # type: ignore[attr-defined]

    def test_wrong_password_names_the_line_not_the_password(self) -> None:
        message = self.error(
            f"security.protocol=SSL\nssl.keystore.location={store('client.p12')}\n"
            "ssl.keystore.type=PKCS12\nssl.keystore.password=hunter2\n"
        )
        self.assertEqual(
            message, f":2: key store {store('client.p12')}: wrong password (or a corrupt file)"
        )

    def test_store_keys_without_location(self) -> None:
        self.assertEqual(
            self.error("security.protocol=SSL\nssl.truststore.password=x\n"),
            ":2: ssl.truststore.password needs its store's location",
        )

    def test_pem_ca_and_trust_store_exclude_each_other(self) -> None:
        self.assertEqual(
            self.error(
                f"security.protocol=SSL\nssl.ca.location={store('client.pem')}\n"
                f"ssl.truststore.location={store('trust.jks')}\nssl.truststore.password={PASSWORD}\n"
            ),
            ":2: ssl.ca.location and a TrustStore exclude each other",
        )
