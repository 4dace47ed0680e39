"""Apache Kafka as enterprise clusters run it: Kerberos (GSSAPI) and Java keystores.

:class:`KafkaEnterpriseBroker` (``shared_broker("kafka-enterprise")``) starts an
MIT KDC (:mod:`afkak.test.brokers.kdc`) with principals ``kafka/localhost`` (the
broker) and :data:`CLIENT` (keytabs for both), stores made by Java's
``keytool``, and one Kafka node whose listeners are:

========== ============== ==================================================================
listener   protocol       what it proves
========== ============== ==================================================================
PLAINTEXT  PLAINTEXT      the harness's own door
GSSAPI     SASL_PLAINTEXT Kerberos: the broker's key from its keytab, service ``kafka``
REAUTH     SASL_PLAINTEXT GSSAPI with ``connections.max.reauth.ms`` = :data:`REAUTH_MS`
JKS        SSL            keystore and truststore in JKS; ``ssl.client.auth=required``
PKCS12     SSL            the same in PKCS12
========== ============== ==================================================================

The client's stores (:attr:`KafkaEnterpriseBroker.stores`) are the same formats:
per format a truststore holding the CA and a keystore holding the ``admin``
client certificate, JKS's key under its own password (:data:`KEY_PASSWORD`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import attrs
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from afkak.test.brokers.certificates import CertificateAuthority, Issued
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.brokers.kdc import REALM, KerberosKDC
from afkak.test.brokers.process import unavailable
from afkak.test.brokers.quirks import Quirks
from afkak.testing.apache_kafka import JVM_OPTIONS

#: The client's principal (its keytab: ``KafkaEnterpriseBroker.client_keytab``).
CLIENT = f"alice@{REALM}"
BROKER_PRINCIPAL = f"kafka/localhost@{REALM}"
REAUTH_MS = 3000
STORE_PASSWORD = "store-secret"
#: The client JKS keystore's key password (not the store's, to prove ssl.key.password).
KEY_PASSWORD = "key-secret"
FORMATS = ("JKS", "PKCS12")
_LISTENERS = ("GSSAPI", "REAUTH", *FORMATS)


@attrs.frozen
class Stores:
    """One format's client stores: ``truststore`` (the CA) and ``keystore`` (admin's key)."""

    type: str
    truststore: str
    keystore: str


def keytool(*args: str) -> None:
    path = shutil.which("keytool")
    if path is None:
        unavailable("keytool (Java's) is not installed")
    result = subprocess.run([path, *args], capture_output=True, stdin=subprocess.DEVNULL)
    if result.returncode:
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        raise RuntimeError(f"keytool {args[0]} failed: {output[-2000:]}")


def java_stores(
    ca: CertificateAuthority, issued: Issued, directory: str, label: str
) -> dict[str, Stores]:
    """Per format, a truststore of *ca* and a keystore of *issued*, made by ``keytool``."""
    with open(issued.key, "rb") as k, open(issued.cert, "rb") as c:
        key = serialization.load_pem_private_key(k.read(), None)
        from cryptography import x509

        cert = x509.load_pem_x509_certificate(c.read())
    source = os.path.join(directory, f"{label}-source.p12")
    with open(source, "wb") as f:
        f.write(
            pkcs12.serialize_key_and_certificates(
                label.encode(), key, cert, None,  # type: ignore[arg-type]
                serialization.BestAvailableEncryption(STORE_PASSWORD.encode()),
            )
        )  # fmt: skip
    stores = {}
    for kind in FORMATS:
        truststore = os.path.join(directory, f"{label}-truststore.{kind.lower()}")
        keytool(
            "-importcert", "-noprompt", "-alias", "ca", "-file", ca.cert,
            "-keystore", truststore, "-storetype", kind, "-storepass", STORE_PASSWORD,
        )  # fmt: skip
        keystore = os.path.join(directory, f"{label}-keystore.{kind.lower()}")
        key_password = KEY_PASSWORD if kind == "JKS" and label == "client" else STORE_PASSWORD
        keytool(
            "-importkeystore", "-noprompt", "-srckeystore", source, "-srcstoretype", "PKCS12",
            "-srcstorepass", STORE_PASSWORD, "-destkeystore", keystore, "-deststoretype", kind,
            "-deststorepass", STORE_PASSWORD, "-destkeypass", key_password,
            "-srcalias", label, "-destalias", label,
        )  # fmt: skip
        stores[kind] = Stores(kind, truststore, keystore)
    return stores


def enterprise_config(broker_keytab: str, server: dict[str, Stores]) -> dict[str, str]:
    """The server properties of :class:`KafkaEnterpriseBroker`."""
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{broker_keytab}" principal="{BROKER_PRINCIPAL}";'
    )
    config = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,GSSAPI:SASL_PLAINTEXT,"
            "REAUTH:SASL_PLAINTEXT,JKS:SSL,PKCS12:SSL"
        ),
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.gssapi.gssapi.sasl.jaas.config": jaas,
        "listener.name.reauth.gssapi.sasl.jaas.config": jaas,
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
    }
    for kind, stores in server.items():
        prefix = f"listener.name.{kind.lower()}.ssl."
        config |= {
            f"{prefix}keystore.type": kind,
            f"{prefix}keystore.location": stores.keystore,
            f"{prefix}keystore.password": STORE_PASSWORD,
            f"{prefix}key.password": STORE_PASSWORD,
            f"{prefix}truststore.type": kind,
            f"{prefix}truststore.location": stores.truststore,
            f"{prefix}truststore.password": STORE_PASSWORD,
            f"{prefix}client.auth": "required",
        }
    return config


class KafkaEnterpriseBroker(KafkaBroker):
    """One Apache Kafka node with Kerberos and JKS/PKCS12 listeners, and its KDC."""

    name = "kafka-enterprise"
    quirks = Quirks(broker="kafka-enterprise")

    def __init__(self, *, version: str | None = None) -> None:
        self.directory = tempfile.mkdtemp(prefix="afkak-kafka-enterprise-")
        self.kdc = KerberosKDC()
        self.ca = CertificateAuthority(self.directory)
        server = self.ca.issue("server", "127.0.0.1", ("127.0.0.1", "localhost"))
        self.client_pem = self.ca.issue("client", "admin")
        self._version = version
        self._server = server
        self.stores: dict[str, Stores] = {}
        self.client_keytab = ""
        super().__init__(version=version, listeners=dict.fromkeys(_LISTENERS, 0))

    def prepare(self) -> None:
        self.kdc.start()
        os.environ["KRB5_CONFIG"] = self.kdc.krb5_conf  # the client side: MIT's library
        broker_keytab = self.kdc.add_principal(BROKER_PRINCIPAL)
        self.client_keytab = self.kdc.add_principal(CLIENT)
        server = java_stores(self.ca, self._server, self.directory, "server")
        self.stores = java_stores(self.ca, self.client_pem, self.directory, "client")
        self.node.config.update(enterprise_config(broker_keytab, server))
        self.node.jvm_options = [*JVM_OPTIONS, f"-Djava.security.krb5.conf={self.kdc.krb5_conf}"]

    def stop(self) -> None:
        super().stop()
        self.kdc.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
