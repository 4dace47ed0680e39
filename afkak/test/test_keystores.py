"""KeyStore and TrustStore: stores made by Java's keytool, by cryptography and as PEM.

``afkak/test/keystores/`` holds stores keytool (OpenJDK 17) made, password
``store-secret``::

    keytool -genkeypair -keyalg EC -groupname secp256r1 -alias client -dname CN=admin \\
        -keystore client.jks -storetype JKS -storepass store-secret -keypass key-secret
    keytool -exportcert -rfc -alias client -keystore client.jks -file client.pem ...
    keytool -importcert -alias client -file client.pem -keystore trust.jks -storetype JKS ...
    keytool -genkeypair -keyalg RSA -keysize 2048 -alias rsa -dname CN=rsa \\
        -keystore client.p12 -storetype PKCS12 -storepass store-secret
    keytool -importcert -alias client -file client.pem -keystore trust.p12 -storetype PKCS12 ...
"""

from __future__ import annotations

import os

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec
from twisted.trial.unittest import SynchronousTestCase

from afkak import TLS, KeyStore, TrustStore

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keystores")
PASSWORD = "store-secret"


def store(name: str) -> str:
    return os.path.join(HERE, name)


class StoreCase(SynchronousTestCase):
    def error(self, make: object) -> str:
        """The ValueError *make* raises (never holding the password)."""
        with self.assertRaises(ValueError) as caught:
            make()  # type: ignore[operator]
        message = str(caught.exception)
        self.assertNotIn(PASSWORD, message)
        return message


class KeytoolStoreTests(StoreCase):
    def test_jks_key_under_its_own_password(self) -> None:
        """JKS's key protection with ``ssl.key.password``; the chain's certificate is admin's."""
        keys = KeyStore(store("client.jks"), PASSWORD, "JKS", key_password="key-secret")
        certificate = keys.private_certificate()
        self.assertIn("admin", str(certificate.getSubject()))
        self.assertEqual(keys.extra_chain(), [])

    def test_jks_and_pkcs12_trust_stores(self) -> None:
        with open(store("client.pem"), "rb") as f:
            expected = x509.load_pem_x509_certificate(f.read())
        for name, kind in (("trust.jks", "JKS"), ("trust.p12", "PKCS12")):
            trust = TrustStore(store(name), PASSWORD, kind)
            self.assertEqual(list(trust._loaded), [expected], name)
            self.assertIsNotNone(trust.trust_root())

    def test_repr_shows_no_password(self) -> None:
        keys = KeyStore(store("client.jks"), PASSWORD, key_password="key-secret")
        trust = TrustStore(store("trust.jks"), PASSWORD)
        for text in (repr(keys), repr(trust), repr(TLS(trust_root=trust, client_certificate=keys))):
            self.assertNotIn(PASSWORD, text)
            self.assertNotIn("key-secret", text)

    def test_pkcs12_rsa_key(self) -> None:
        keys = KeyStore(store("client.p12"), PASSWORD, "PKCS12")
        self.assertIn("rsa", str(keys.private_certificate().getSubject()))

    def test_type_names_either_binary_format(self) -> None:
        """As Java's keystore.type.compat: a PKCS12 file read as JKS, and back."""
        KeyStore(store("client.p12"), PASSWORD, "JKS")
        KeyStore(store("client.jks"), PASSWORD, "PKCS12", key_password="key-secret")

    def test_tls_takes_stores(self) -> None:
        tls = TLS(
            trust_root=TrustStore(store("trust.jks"), PASSWORD),
            client_certificate=KeyStore(store("client.jks"), PASSWORD, key_password="key-secret"),
        )
        self.assertIsNotNone(tls.creator("127.0.0.1"))
        off = TLS(
            trust_root=TrustStore(store("trust.p12"), PASSWORD, "PKCS12"),
            client_certificate=KeyStore(store("client.p12"), PASSWORD, "PKCS12"),
            verify_hostname=False,
        )
        self.assertIsNotNone(off.creator("127.0.0.1"))

    def test_wrong_passwords(self) -> None:
        jks, p12 = store("client.jks"), store("client.p12")
        self.assertEqual(
            self.error(lambda: KeyStore(jks, "nope", "JKS")),
            f"key store {jks}: wrong password (or a corrupt file)",
        )
        self.assertEqual(
            self.error(lambda: KeyStore(jks, PASSWORD, "JKS")),
            f"key store {jks}: wrong key password",
        )
        self.assertEqual(
            self.error(lambda: KeyStore(p12, "nope", "PKCS12")),
            f"key store {p12}: wrong password (or a corrupt file)",
        )
        trust = store("trust.p12")
        self.assertEqual(
            self.error(lambda: TrustStore(trust, "nope", "PKCS12")),
            f"trust store {trust}: wrong password (or a corrupt file)",
        )

    def test_wrong_kinds(self) -> None:
        trust = store("trust.jks")
        self.assertEqual(
            self.error(lambda: KeyStore(trust, PASSWORD)),
            f"key store {trust}: holds no private key entry (a trust store?)",
        )
        self.assertIn(
            "a PEM file: set its type to PEM",
            self.error(lambda: KeyStore(store("client.pem"), PASSWORD)),
        )
        self.assertIn("holds no PEM certificate", self.error(lambda: TrustStore(trust, type="PEM")))
        self.assertIn(
            "store type must be one of", self.error(lambda: TrustStore(trust, type="BKS"))
        )
        self.assertIn("No such file", self.error(lambda: TrustStore(store("missing.jks"))))


class PemStoreTests(StoreCase):
    def setUp(self) -> None:
        with open(store("client.pem")) as f:
            self.chain = f.read()
        self.key = self.pem(ec.generate_private_key(ec.SECP256R1())).decode()

    def pem(self, key: object, password: bytes | None = None) -> bytes:
        encryption = (
            serialization.BestAvailableEncryption(password)
            if password
            else serialization.NoEncryption()
        )
        return key.private_bytes(  # type: ignore[attr-defined, no-any-return]
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )

    def test_pem_file_and_inline(self) -> None:
        """Kafka's PEM key store: the key, then the chain, in one file; or each inline."""
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(self.key + self.chain)
        KeyStore(path, type="PEM")
        KeyStore(key=self.key, certificate_chain=self.chain, type="PEM")
        TrustStore(certificates=self.chain, type="PEM")
        TrustStore(store("client.pem"), type="PEM")

    def test_encrypted_pem_key(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        chain = self.chain
        encrypted = self.pem(key, b"key-secret").decode()
        KeyStore(key=encrypted, certificate_chain=chain, type="PEM", key_password="key-secret")
        self.assertIn(
            "give its password (ssl.key.password)",
            self.error(lambda: KeyStore(key=encrypted, certificate_chain=chain, type="PEM")),
        )
        self.assertIn(
            "wrong key password",
            self.error(
                lambda: KeyStore(
                    key=encrypted, certificate_chain=chain, type="PEM", key_password="nope"
                )
            ),
        )

    def test_a_key_tls_cannot_use(self) -> None:
        """A DSA key: TLS 1.2/1.3 clients cannot sign with it."""
        key = dsa.generate_private_key(2048)
        chain = self.chain
        self.assertIn(
            "DSAPrivateKey key, which TLS cannot sign with",
            self.error(
                lambda: KeyStore(key=self.pem(key).decode(), certificate_chain=chain, type="PEM")
            ),
        )

    def test_location_or_inline(self) -> None:
        self.assertIn("not both", self.error(lambda: TrustStore()))
        self.assertIn("both key and certificate_chain", self.error(lambda: KeyStore(key="x")))
