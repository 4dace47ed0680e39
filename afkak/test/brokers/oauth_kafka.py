"""Apache Kafka checking OAUTHBEARER tokens as in production: OIDC (KIP-768) and MSK IAM.

:class:`KafkaOAuthBroker` (``shared_broker("kafka-oauth")``) starts a real
identity provider, ``no.nav.security:mock-oauth2-server`` from Maven Central
(signed RS256 JWTs, a JWKS endpoint, any client id and secret accepted; each
path segment is an issuer: ``/default/token``), then one Kafka node whose
listeners are:

======== ============== ===================================================================
listener protocol       tokens checked by
======== ============== ===================================================================
OIDC     SASL_PLAINTEXT Kafka's ``OAuthBearerValidatorCallbackHandler``: signature by
                        the JWKS, issuer ``/default``, audience :data:`AUDIENCE`
REAUTH   SASL_PLAINTEXT the same, with ``connections.max.reauth.ms`` = :data:`REAUTH_MS`
MSK      SASL_PLAINTEXT ``AfkakMskIamValidator`` (compiled here): an MSK IAM token's SigV4
                        signature by :data:`MSK_ACCESS_KEY`'s secret, in :data:`MSK_REGION`
======== ============== ===================================================================

The server's token is signed, so the broker's validator checks afkak's tokens
as a production cluster's would.  Kafka 4 only fetches JWKS from URLs listed
in the ``org.apache.kafka.sasl.oauthbearer.allowed.urls`` system property;
:data:`JAVA_CLIENT_OPTIONS` is what a Java client needs for the token endpoint.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Self

from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.brokers.maven import cached_jars
from afkak.test.brokers.process import ManagedProcess, unavailable
from afkak.test.brokers.quirks import Quirks
from afkak.testing.apache_kafka import (
    JVM_OPTIONS,
    ApacheKafkaUnavailable,
    free_port,
    resolve_classpath,
)

#: The mock-oauth2-server release (built for Java 11+).
MOCK_OAUTH2_SERVER_VERSION = "2.1.10"
_MAIN = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
_FILES = os.path.dirname(os.path.abspath(__file__))
_POM = os.path.join(_FILES, "mock-oauth2-server-pom.xml")
#: The audience Kafka expects; mock-oauth2-server puts the requested scope there.
AUDIENCE = "kafka"
#: The REAUTH listener's ``connections.max.reauth.ms``.
REAUTH_MS = 3000
MSK_REGION = "eu-west-1"
MSK_ACCESS_KEY = "AKIDAFKAKTESTS"
MSK_SECRET_KEY = "afkak/msk+iam/secret/key/for/tests"
_VALIDATOR = os.path.join(_FILES, "msk_iam", "AfkakMskIamValidator.java")
_OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"


def mock_oauth2_server_jars() -> str:
    """The folder of mock-oauth2-server's jars, copied from Maven Central once."""
    return cached_jars(
        "mock-oauth2-server",
        MOCK_OAUTH2_SERVER_VERSION,
        _POM,
        {"mock-oauth2-server.version": MOCK_OAUTH2_SERVER_VERSION},
        lambda staging: bool(glob.glob(os.path.join(staging, "mock-oauth2-server-*.jar"))),
    )


def compile_java(source: str, version: str | None = None) -> str:
    """javac *source* against Kafka's jars (a broker plugin); a new folder of its classes."""
    if shutil.which("javac") is None:
        unavailable(f"{os.path.basename(source)}: javac is not installed")
    classes = tempfile.mkdtemp(prefix="afkak-java-plugin-")
    subprocess.run(
        [
            "javac", "-nowarn", "-Xlint:-removal", "-d", classes,
            "-cp", os.path.join(resolve_classpath(version), "*"), source,
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return classes


class MockOAuth2Server:
    """mock-oauth2-server on 127.0.0.1, a child process (``ManagedProcess``)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: ManagedProcess | None = None

    def issuer(self, name: str = "default") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def token_url(self, issuer: str = "default") -> str:
        return f"{self.issuer(issuer)}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer()}/jwks"

    def start(self, timeout: float = 90.0) -> Self:
        try:
            jars = mock_oauth2_server_jars()
        except ApacheKafkaUnavailable as exc:
            unavailable(str(exc))
        argv = [
            "java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-cp", os.path.join(jars, "*"), _MAIN,
        ]  # fmt: skip
        env = {**os.environ, "SERVER_HOSTNAME": "127.0.0.1", "SERVER_PORT": str(self.port)}
        self.process = ManagedProcess("mock-oauth2-server", argv, env=env)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.jwks_url, timeout=2):
                    return self
            except (urllib.error.URLError, OSError):
                if self.process.exit_code() is not None or time.monotonic() > deadline:
                    tail = self.process.log_tail()
                    self.stop()
                    unavailable(f"mock-oauth2-server did not start:\n{tail}")
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


def oauth_config(server: MockOAuth2Server) -> dict[str, str]:
    """The server properties of :class:`KafkaOAuthBroker`."""
    config = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,OIDC:SASL_PLAINTEXT,"
            "REAUTH:SASL_PLAINTEXT,MSK:SASL_PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.jwks.endpoint.url": server.jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": server.issuer(),
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
        "listener.name.msk.oauthbearer.sasl.server.callback.handler.class": (
            "AfkakMskIamValidator"
        ),
        "listener.name.msk.oauthbearer.sasl.jaas.config": (
            f'{_LOGIN_MODULE} unsecuredLoginStringClaim_sub="broker" region="{MSK_REGION}" '
            f'accessKey="{MSK_ACCESS_KEY}" secretKey="{MSK_SECRET_KEY}";'
        ),
    }
    for listener in ("oidc", "reauth"):
        config[f"listener.name.{listener}.oauthbearer.sasl.jaas.config"] = f"{_LOGIN_MODULE};"
        config[f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class"] = (
            _OIDC_HANDLER
        )
    return config


def allowed_urls(urls: Sequence[str]) -> str:
    """The JVM option letting Kafka 4's OAuth code fetch *urls* (KIP-1139's allow list)."""
    return f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={','.join(urls)}"


class KafkaOAuthBroker(KafkaBroker):
    """One Apache Kafka node validating OIDC JWTs and MSK IAM tokens, with its IdP."""

    name = "kafka-oauth"
    quirks = Quirks(broker="kafka-oauth")

    def __init__(self, *, version: str | None = None) -> None:
        self.oauth = MockOAuth2Server()
        self.classes = ""
        super().__init__(
            version=version,
            listeners={"OIDC": 0, "REAUTH": 0, "MSK": 0},
            config=oauth_config(self.oauth),
            jvm_options=(*JVM_OPTIONS, allowed_urls([self.oauth.jwks_url])),
        )

    def prepare(self) -> None:
        self.classes = compile_java(_VALIDATOR, self.node.version)
        self.node.classpath.append(self.classes)
        self.oauth.start()

    def stop(self) -> None:
        super().stop()
        self.oauth.stop()
        if self.classes:
            shutil.rmtree(self.classes, ignore_errors=True)
