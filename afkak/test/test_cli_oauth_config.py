"""``--command-config`` with ``sasl.mechanism=OAUTHBEARER``: OIDC client credentials and MSK IAM."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from afkak.cli._config import ConfigError, client_options, read_properties
from afkak.connection import ClientCredentials, LoginRefresh, MskIamTokens, OAuthBearer

URL = "https://idp.example/realms/kafka/protocol/openid-connect/token"
HEAD = (
    "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
    "ssl.endpoint.identification.algorithm=\n"
)
SECRET = "do-not-show-me"


class OAuthPropertiesTests(SynchronousTestCase):
    def options(self, text: str) -> dict[str, object]:
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(text)
        return client_options(read_properties(path))

    def mechanism(self, text: str) -> OAuthBearer:
        sasl = self.options(HEAD + text)["sasl"]
        assert isinstance(sasl, OAuthBearer)
        return sasl

    def error(self, text: str) -> str:
        """The error for *text*, after ``FILE``; it never shows the secret."""
        with self.assertRaises(ConfigError) as e:
            self.options(HEAD + text)
        message = str(e.exception)
        self.assertNotIn(SECRET, message)
        return message.split(":", 1)[1]

    def test_kafka4_names(self) -> None:
        mechanism = self.mechanism(
            f"sasl.oauthbearer.token.endpoint.url={URL}\n"
            "sasl.oauthbearer.client.credentials.client.id=afkak\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"
            "sasl.oauthbearer.scope=kafka\n"
            "sasl.oauthbearer.sub.claim.name=azp\n"
            "sasl.login.retry.backoff.ms=50\n"
            "sasl.login.retry.backoff.max.ms=3000\n"
            "sasl.login.read.timeout.ms=2000\n"
            "sasl.login.refresh.window.factor=0.9\n"
            "sasl.login.refresh.window.jitter=0\n"
            "sasl.login.refresh.min.period.seconds=10\n"
            "sasl.login.refresh.buffer.seconds=20\n"
        )
        provider = mechanism.token_provider
        assert isinstance(provider, ClientCredentials)
        self.assertEqual(
            (provider.token_endpoint_url, provider.client_id, provider.scope),
            (URL, "afkak", "kafka"),
        )
        self.assertEqual(provider.sub_claim_name, "azp")
        self.assertEqual(mechanism.refresh, LoginRefresh(0.9, 0, 10, 20))
        self.assertNotIn(SECRET, repr(mechanism) + repr(provider))

    def test_jaas_options_as_older_java_configs(self) -> None:
        mechanism = self.mechanism(
            "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer."
            "secured.OAuthBearerLoginCallbackHandler\n"
            f"sasl.oauthbearer.token.endpoint.url={URL}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
            f' required clientId="afkak" clientSecret="{SECRET}" scope="kafka"'
            ' extension_logicalCluster="lkc-1";\n'
        )
        provider = mechanism.token_provider
        assert isinstance(provider, ClientCredentials)
        self.assertEqual((provider.client_id, provider.scope), ("afkak", "kafka"))
        self.assertEqual(mechanism.refresh, LoginRefresh())  # Java's defaults
        self.assertEqual(repr(mechanism), "<OAuthBearer extensions=['logicalCluster']>")

    def test_msk_iam(self) -> None:
        self.patch(os, "environ", {"AWS_REGION": "eu-west-1"})
        mechanism = self.mechanism(
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
            ' required awsProfileName="dev";\n'
            "sasl.login.callback.handler.class="
            "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
            "sasl.client.callback.handler.class="
            "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        )
        provider = mechanism.token_provider
        assert isinstance(provider, MskIamTokens)
        self.assertEqual((provider.region, provider.profile), ("eu-west-1", "dev"))

    def test_msk_iam_region_from_the_bootstrap_host(self) -> None:
        self.patch(os, "environ", {})
        options = self.options(
            HEAD + "bootstrap.servers=b-1.c1.abc.c2.kafka.us-east-2.amazonaws.com:9098\n"
            "sasl.login.callback.handler.class="
            "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        )
        sasl = options["sasl"]
        assert isinstance(sasl, OAuthBearer) and isinstance(sasl.token_provider, MskIamTokens)
        self.assertEqual(sasl.token_provider.region, "us-east-2")
        self.assertIn(
            "MSK IAM needs the cluster's region: set AWS_REGION",
            self.error(
                "sasl.login.callback.handler.class="
                "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
            ),
        )

    def test_wrong_properties_are_named(self) -> None:
        cases = {
            "": "2: OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url",
            f"sasl.oauthbearer.token.endpoint.url={URL}\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n": (
                "4: OIDC client credentials need sasl.oauthbearer.client.credentials.client.id"
            ),
            "sasl.login.callback.handler.class=com.example.Mine\n": (
                "4: unsupported sasl.login.callback.handler.class 'com.example.Mine'"
            ),
            f"sasl.oauthbearer.token.endpoint.url={URL}\nsasl.login.refresh.window.factor=2\n": (
                "5: sasl.login.refresh.window.factor: window_factor must be within 0.5-1.0"
            ),
            f"sasl.oauthbearer.token.endpoint.url={URL}\n"
            "sasl.oauthbearer.client.credentials.client.id=a\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"
            "sasl.login.retry.backoff.ms=soon\n": (
                "7: sasl.login.retry.backoff.ms must be a number, not 'soon'"
            ),
            "sasl.oauthbearer.token.endpoint.url=file:///etc/passwd\n"
            f"sasl.oauthbearer.client.credentials.client.id=a\n"
            f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n": (
                "4: token_endpoint_url must be an http or https URL"
            ),
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule"
            " required;\n": ("4: sasl.jaas.config for OAUTHBEARER must use"),
            "sasl.username=alice\n": "4: sasl.username is not used by OAUTHBEARER",
            "sasl.client.callback.handler.class=com.example.Mine\n": (
                "4: sasl.client.callback.handler.class is only taken as MSK IAM's"
            ),
        }
        for text, expected in cases.items():
            with self.subTest(text=text):
                self.assertTrue(self.error(text).startswith(expected), self.error(text))

    def test_oauth_keys_need_oauthbearer(self) -> None:
        with self.assertRaises(ConfigError) as e:
            client_options(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": 'x required username="a" password="b";',
                    "sasl.oauthbearer.token.endpoint.url": URL,
                }
            )
        self.assertIn(
            "sasl.oauthbearer.token.endpoint.url needs sasl.mechanism=OAUTHBEARER",
            str(e.exception),
        )
