"""OIDC client credentials (KIP-768) and AWS MSK IAM against Apache Kafka checking the tokens.

``shared_broker("kafka-oauth")``: mock-oauth2-server issues signed JWTs, Kafka's
``OAuthBearerValidatorCallbackHandler`` checks their signature (JWKS), issuer and
audience; an MSK IAM listener checks SigV4 signatures (``AfkakMskIamValidator``).
Kafka's Java client on the same listener with the same credentials is the
control; the ``afkak`` command runs with each mechanism's properties file.  Each
bad input fails the connection within seconds with an error naming its cause,
and the process connects once the configuration is fixed.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from typing import Any

from botocore.credentials import CredentialProvider, Credentials
from treq.client import HTTPClient
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.client import Agent
from twisted.web.iweb import IAgentEndpointFactory
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site
from zope.interface import implementer

import afkak
from afkak import KafkaClient, OAuthBearer, Producer
from afkak.common import FetchRequest, KafkaUnavailableError
from afkak.connection import ClientCredentials, MskIamTokens
from afkak.test import test_security_kafka
from afkak.test.brokers import shared_broker
from afkak.test.brokers.java_tools import run_tool
from afkak.test.brokers.oauth_kafka import (
    AUDIENCE,
    MSK_ACCESS_KEY,
    MSK_REGION,
    MSK_SECRET_KEY,
    REAUTH_MS,
    KafkaOAuthBroker,
    allowed_urls,
)
from afkak.test.helpers import wait
from afkak.testing.apache_kafka import free_port

SECRET = "client-secret-never-shown"
_ROOT = os.path.dirname(os.path.dirname(afkak.__file__))


class Fixed(CredentialProvider):  # type: ignore[misc]
    METHOD = "afkak-tests"

    def __init__(self, secret: str = MSK_SECRET_KEY) -> None:
        self.secret = secret

    def load(self) -> Credentials:
        return Credentials(MSK_ACCESS_KEY, self.secret)


class StaticEndpoint(Resource):
    """A token endpoint on the test's reactor: answers *body*, or never (``None``)."""

    isLeaf = True

    def __init__(self, body: bytes | None) -> None:
        super().__init__()
        self.body = body

    def render_POST(self, request: Any) -> Any:  # noqa: N802 -- twisted.web's name
        return NOT_DONE_YET if self.body is None else self.body


class OAuthKafkaCase(SynchronousTestCase):
    broker: KafkaOAuthBroker

    def setUp(self) -> None:
        broker = shared_broker("kafka-oauth")
        assert isinstance(broker, KafkaOAuthBroker)
        self.broker = broker

    def oidc(self, scope: str = AUDIENCE, url: str | None = None, **kwargs: Any) -> OAuthBearer:
        """OIDC client credentials; HTTP by treq over IPv4 endpoints, for the tests'
        reactor is iterated, not run, and its resolver's threads never start."""
        from twisted.internet import reactor

        url = url or self.broker.oauth.token_url()
        agent = Agent.usingEndpointFactory(reactor, _IPv4Endpoints(reactor))
        http = HTTPClient(agent)
        provider = ClientCredentials(url, "afkak-client", SECRET, scope=scope, http=http, **kwargs)
        return OAuthBearer(provider)

    def signing_pool(self) -> ThreadPool:
        """A thread pool for the MSK IAM signer (the iterated reactor's never starts)."""
        pool = ThreadPool(1, 1, "msk-iam-signer")
        pool.start()
        self.addCleanup(pool.stop)
        return pool

    def client(self, listener: str, sasl: Any) -> KafkaClient:
        client = KafkaClient(
            self.broker.address(listener),
            sasl=sasl,
            endpoint_factory=TCP4ClientEndpoint,
            timeout=10000,
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    #: An admin call (CreateTopics), a produce and a fetch over a client; the topic.
    round_trip = test_security_kafka.SecureKafkaCase.round_trip

    def refused(self, listener: str, sasl: Any, *expected: str) -> float:
        """The connection fails, with each of *expected* in the error; the seconds it took."""
        began = time.monotonic()
        with self.assertRaises(KafkaUnavailableError) as caught:
            wait(self.client(listener, sasl).load_metadata_for_topics(), 30)
        took = time.monotonic() - began
        message = str(caught.exception)
        for text in expected:
            self.assertIn(text, message)
        self.assertNotIn(SECRET, message)
        self.assertNotIn(MSK_SECRET_KEY, message)
        print(f"refused in {took:.2f} s: {message[-300:]}")
        self.assertLess(took, 8.0, "failed within seconds, not at the timeout")
        return took

    def serve(self, body: bytes | None) -> str:
        """A token endpoint answering *body* on 127.0.0.1; its URL."""
        from twisted.internet import reactor

        port = reactor.listenTCP(0, Site(StaticEndpoint(body)), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        return f"http://127.0.0.1:{port.getHost().port}/token"


@implementer(IAgentEndpointFactory)
class _IPv4Endpoints:
    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor

    def endpointForURI(self, uri: Any) -> Any:  # noqa: N802 -- Twisted's name
        return TCP4ClientEndpoint(self.reactor, uri.host.decode(), uri.port)


class OidcTests(OAuthKafkaCase):
    def test_client_credentials_produce_fetch_and_admin(self) -> None:
        client = self.client("OIDC", self.oidc())
        self.round_trip(client, "oidc")

    def test_java_client_is_the_control(self) -> None:
        """Kafka's Java producer and TopicCommand, on the same listener with the same
        client credentials, read what afkak wrote and write what afkak reads."""
        topic = self.round_trip(self.client("OIDC", self.oidc()), "oidc-java")
        config = self.mktemp()
        token_url = self.broker.oauth.token_url()
        with open(config, "w") as f:
            f.write(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                "sasl.login.callback.handler.class=org.apache.kafka.common.security."
                "oauthbearer.OAuthBearerLoginCallbackHandler\n"
                f"sasl.oauthbearer.token.endpoint.url={token_url}\n"
                "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
                f'OAuthBearerLoginModule required clientId="afkak-client" '
                f'clientSecret="{SECRET}" scope="{AUDIENCE}";\n'
            )
        env = {**os.environ, "JAVA_TOOL_OPTIONS": allowed_urls([token_url])}
        bootstrap = self.broker.address("OIDC")
        listed = run_tool(
            "org.apache.kafka.tools.TopicCommand",
            *("--bootstrap-server", bootstrap, "--command-config", config, "--list"),
            env=env,
        )
        self.assertIn(topic, listed.split())
        run_tool(
            "org.apache.kafka.tools.ConsoleProducer",
            *("--bootstrap-server", bootstrap, "--topic", topic),
            *("--producer.config", config),
            input="from-java\n",
            env=env,
        )
        client = self.client("OIDC", self.oidc())
        [fetched] = wait(
            client.send_fetch_request(
                [FetchRequest(topic, 0, 2, 1 << 16)], max_wait_time=100, min_bytes=1
            )
        )
        self.assertEqual([m.message.value for m in fetched.messages], [b"from-java"])

    def test_sessions_are_reauthenticated(self) -> None:
        """KIP-368: a 3 s session on the REAUTH listener; one connection keeps working
        for 8 s, re-authenticating with the cached token."""
        mechanism = self.oidc()
        starts: list[float] = []
        start = mechanism.start

        def counted(host: str, clock: Any) -> Any:
            starts.append(time.monotonic())
            return start(host, clock)

        mechanism.start = counted  # type: ignore[method-assign]
        client = self.client("REAUTH", mechanism)
        topic = self.round_trip(client, "oidc-reauth")
        [node] = client.clients
        protocol = client.clients[node]._protocol
        starts.clear()
        producer = Producer(client)
        self.addCleanup(producer.stop)
        began = time.monotonic()
        while time.monotonic() - began < 8:
            wait(producer.send_messages(topic, msgs=[b"again"]), 10)
            wait(_sleep(0.2))
        print(f"re-authentications in 8 s: {len(starts)} (session {REAUTH_MS} ms)")
        self.assertGreaterEqual(len(starts), 2)
        self.assertIs(client.clients[node]._protocol, protocol, "one connection throughout")

    def test_wrong_audience_is_refused(self) -> None:
        took = self.refused("OIDC", self.oidc(scope="not-kafka"), "SASL_AUTHENTICATION_FAILED")
        print(f"wrong audience: {took:.2f} s")
        self.round_trip(self.client("OIDC", self.oidc()), "oidc-fixed")

    def test_unsigned_token_is_refused(self) -> None:
        def part(value: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

        claims = {
            "sub": "afkak-client",
            "aud": [AUDIENCE],
            "iss": self.broker.oauth.issuer(),
            "iat": int(time.time()),
            "exp": int(time.time()) + 600,
        }
        unsigned = f"{part({'alg': 'none'})}.{part(claims)}."
        url = self.serve(json.dumps({"access_token": unsigned}).encode())
        self.refused("OIDC", self.oidc(url=url), "SASL_AUTHENTICATION_FAILED")

    def test_token_endpoint_down(self) -> None:
        url = f"http://127.0.0.1:{free_port()}/default/token"
        took = self.refused(
            "OIDC",
            self.oidc(url=url, retry_backoff_max=2.0),
            f"token endpoint {url} gave no token within 2 s: cannot reach it",
        )
        print(f"token endpoint down: {took:.2f} s")

    def test_token_endpoint_slow(self) -> None:
        url = self.serve(None)
        took = self.refused(
            "OIDC",
            self.oidc(url=url, request_timeout=1.0, retry_backoff_max=2.0),
            "gave no token within 2 s: no answer within 1 s",
        )
        print(f"token endpoint slow: {took:.2f} s")
        self.round_trip(self.client("OIDC", self.oidc()), "oidc-after-slow")

    def test_expired_token_is_refused_before_the_broker(self) -> None:
        def part(value: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

        expired = f"{part({'alg': 'RS256'})}.{part({'sub': 'x', 'exp': 1})}.c2ln"
        url = self.serve(json.dumps({"access_token": expired}).encode())
        self.refused(
            "OIDC", self.oidc(url=url), f"token endpoint {url} gave a token that has expired"
        )


class MskIamTests(OAuthKafkaCase):
    def msk(self, secret: str = MSK_SECRET_KEY) -> OAuthBearer:
        return OAuthBearer(
            MskIamTokens(
                MSK_REGION, credentials_provider=Fixed(secret), threadpool=self.signing_pool()
            )
        )

    def test_signed_token_produce_fetch_and_admin(self) -> None:
        self.round_trip(self.client("MSK", self.msk()), "msk")

    def test_wrong_secret_is_refused(self) -> None:
        took = self.refused("MSK", self.msk("wrong/secret"), "SASL_AUTHENTICATION_FAILED")
        print(f"MSK IAM wrong secret: {took:.2f} s")

    def test_no_credentials(self) -> None:
        class Empty(CredentialProvider):  # type: ignore[misc]
            def load(self) -> Credentials:
                return Credentials("", "")

        sasl = OAuthBearer(
            MskIamTokens(MSK_REGION, credentials_provider=Empty(), threadpool=self.signing_pool())
        )
        self.refused("MSK", sasl, "AWS MSK IAM: cannot sign a token for region eu-west-1")
        self.round_trip(self.client("MSK", self.msk()), "msk-fixed")


class CommandLineTests(OAuthKafkaCase):
    """``afkak --command-config FILE topics list`` with each mechanism's properties file."""

    def afkak(self, properties: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(properties)
        return subprocess.run(
            [sys.executable, "-m", "afkak", "--command-config", path, "topics", "list"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": _ROOT, **env},
        )

    def test_oidc_properties(self) -> None:
        topic = self.round_trip(self.client("OIDC", self.oidc()), "cli-oidc")
        done = self.afkak(
            f"bootstrap.servers={self.broker.address('OIDC')}\n"
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            f"sasl.oauthbearer.token.endpoint.url={self.broker.oauth.token_url()}\n"
            "sasl.oauthbearer.client.credentials.client.id=afkak-client\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"
            f"sasl.oauthbearer.scope={AUDIENCE}\n",
            {},
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(topic, done.stdout)
        bad = self.afkak(
            f"bootstrap.servers={self.broker.address('OIDC')}\n"
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            f"sasl.oauthbearer.token.endpoint.url={self.broker.oauth.token_url()}\n"
            "sasl.oauthbearer.client.credentials.client.id=afkak-client\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"
            "sasl.oauthbearer.scope=not-kafka\n",
            {},
        )
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("SASL_AUTHENTICATION_FAILED", bad.stderr)
        self.assertNotIn(SECRET, bad.stderr + bad.stdout)

    def test_msk_iam_properties(self) -> None:
        topic = self.round_trip(self.client("MSK", self.msk_mechanism()), "cli-msk")
        done = self.afkak(
            f"bootstrap.servers={self.broker.address('MSK')}\n"
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginModule required;\n"
            "sasl.login.callback.handler.class="
            "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n",
            {
                "AWS_REGION": MSK_REGION,
                "AWS_ACCESS_KEY_ID": MSK_ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": MSK_SECRET_KEY,
                "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            },
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(topic, done.stdout)

    def msk_mechanism(self) -> OAuthBearer:
        return OAuthBearer(
            MskIamTokens(MSK_REGION, credentials_provider=Fixed(), threadpool=self.signing_pool())
        )


def _sleep(seconds: float) -> Any:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    return deferLater(reactor, seconds)
