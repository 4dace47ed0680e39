"""Apache Kafka with security on: SASL, TLS (PEM keystores), mutual TLS and ACLs.

:class:`KafkaSecureBroker` is one KRaft node (``shared_broker("kafka-secure")``)
whose listeners are:

============== ============== ===========================================================
listener       protocol       what it proves
============== ============== ===========================================================
PLAINTEXT      PLAINTEXT      the harness's own door: principal ANONYMOUS, a super user
SASL_PLAINTEXT SASL_PLAINTEXT PLAIN (:data:`USERS`), SCRAM-SHA-256/512 (users created
                              by the tests), OAUTHBEARER (Kafka's unsecured validator)
SSL            SSL            TLS with ``ssl.client.auth=required``: a client
                              certificate's CN is the principal
SASL_SSL       SASL_SSL       the SASL mechanisms over TLS (no client certificate)
REAUTH         SASL_PLAINTEXT ``connections.max.reauth.ms`` = :data:`REAUTH_MS` (KIP-368);
                              PLAIN and OAUTHBEARER only
WRONG_NAME     SSL            a certificate naming ``kafka.invalid``, not 127.0.0.1
============== ============== ===========================================================

The StandardAuthorizer denies whatever no ACL allows
(``allow.everyone.if.no.acl.found=false``); ``admin`` and ``ANONYMOUS`` are super
users.  The certificates are made at start by a throw-away CA
(:mod:`afkak.test.brokers.certificates`): :attr:`KafkaSecureBroker.ca` is the trust
root, :attr:`KafkaSecureBroker.client` a client certificate for ``admin`` and
:attr:`KafkaSecureBroker.stranger` one for ``stranger`` (no ACL).
"""

from __future__ import annotations

import shutil
import tempfile

from afkak.test.brokers.certificates import CertificateAuthority, Issued
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.brokers.quirks import Quirks

#: PLAIN users and their passwords (SCRAM users are made by the tests).
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
#: The REAUTH listener's ``connections.max.reauth.ms`` (3 s, as the OAuth and enterprise
#: brokers': a client re-authenticates at 85% of a session, and a request the broker
#: reads after the session's end closes the connection, so a 2 s session left a busy
#: machine 0.2 to 0.3 s to spare).
REAUTH_MS = 3000
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: The REAUTH listener enables fewer, for the unsupported-mechanism proof.
REAUTH_MECHANISMS = ("PLAIN", "OAUTHBEARER")
_SASL_LISTENERS = ("sasl_plaintext", "sasl_ssl", "reauth")
_LISTENERS = ("SASL_PLAINTEXT", "SSL", "SASL_SSL", "REAUTH", "WRONG_NAME")


def secure_config(ca: CertificateAuthority, server: Issued, wrong_name: Issued) -> dict[str, str]:
    """The server properties of :class:`KafkaSecureBroker`."""
    plain_users = " ".join(f'user_{user}="{password}"' for user, password in USERS.items())
    modules = {
        "plain": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "scram-sha-256": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "oauthbearer": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }
    config = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT,WRONG_NAME:SSL"
        ),
        "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
        "listener.name.reauth.sasl.enabled.mechanisms": ",".join(REAUTH_MECHANISMS),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": server.keystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca.cert,
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.wrong_name.ssl.keystore.type": "PEM",
        "listener.name.wrong_name.ssl.keystore.location": wrong_name.keystore,
        "ssl.principal.mapping.rules": "RULE:^CN=([a-zA-Z0-9._-]+)$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }
    for listener in _SASL_LISTENERS:
        for mechanism, module in modules.items():
            config[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = module
    return config


class KafkaSecureBroker(KafkaBroker):
    """One Apache Kafka node with SASL, TLS, mutual TLS and the StandardAuthorizer."""

    name = "kafka-secure"
    quirks = Quirks(broker="kafka-secure")

    def __init__(self, *, version: str | None = None) -> None:
        self.certificates = tempfile.mkdtemp(prefix="afkak-kafka-tls-")
        self.ca = CertificateAuthority(self.certificates)
        server = self.ca.issue("server", "127.0.0.1", ("127.0.0.1", "localhost"))
        wrong_name = self.ca.issue("wrong-name", "kafka.invalid", ("kafka.invalid",))
        #: A client certificate whose principal is ``admin`` (a super user).
        self.client = self.ca.issue("client", "admin")
        #: A client certificate whose principal, ``stranger``, no ACL names.
        self.stranger = self.ca.issue("stranger", "stranger")
        super().__init__(
            version=version,
            listeners=dict.fromkeys(_LISTENERS, 0),
            config=secure_config(self.ca, server, wrong_name),
        )

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.certificates, ignore_errors=True)
