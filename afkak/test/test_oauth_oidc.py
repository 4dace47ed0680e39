"""KIP-768 client credentials and Java's token refresh rule, on a Clock.

The token endpoint is a twisted.web resource behind ``treq.testing.StubTreq``
(real treq, in memory): it checks the client's secret as Keycloak does,
answers 401 ``invalid_client`` otherwise, and can fail (503) or hang.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from afkak.common import SaslAuthenticationFailed
from afkak.connection import ClientCredentials, LoginRefresh, OAuthBearer, TokenEndpointError
from afkak.connection._sasl_mechanisms import initial_response

URL = "http://127.0.0.1:9/realms/kafka/token"
SECRET = "s3cret-value"
NOW = 1_800_000_000.0


def jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2lnbmF0dXJl"


class TokenEndpoint(Resource):
    """A client-credentials token endpoint: ``afkak``/:data:`SECRET`, or 401."""

    isLeaf = True

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[bytes, list[bytes]]] = []
        self.failures = 0  # answer this many requests with 503 first
        self.hang = False
        self.claims: dict[str, Any] = {"sub": "afkak", "exp": NOW + 3600, "aud": "kafka"}
        self.body: bytes | None = None

    def render_POST(self, request: Any) -> Any:  # noqa: N802 -- twisted.web's name
        self.requests.append(request.args)
        if self.hang:
            return NOT_DONE_YET
        if self.failures:
            self.failures -= 1
            request.setResponseCode(503)
            return b"busy"
        basic = base64.b64encode(f"afkak:{SECRET}".encode())
        if request.getHeader(b"authorization") != b"Basic " + basic:
            request.setResponseCode(401)
            return json.dumps(
                {"error": "invalid_client", "error_description": "Invalid client credentials"}
            ).encode()
        if self.body is not None:
            return self.body
        return json.dumps({"access_token": jwt(self.claims), "expires_in": 3600}).encode()


class ClientCredentialsTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(NOW)
        self.endpoint = TokenEndpoint()
        self.http = StubTreq(self.endpoint)
        self.logged: list[str] = []

        def observe(event: dict[str, Any]) -> None:
            self.logged.append(repr(event))

        globalLogPublisher.addObserver(observe)
        self.addCleanup(globalLogPublisher.removeObserver, observe)

    def provider(self, secret: str = SECRET, **kwargs: Any) -> ClientCredentials:
        kwargs.setdefault("uniform", lambda low, high: 1.0)
        return ClientCredentials(URL, "afkak", secret, reactor=self.clock, http=self.http, **kwargs)

    def fetch(self, provider: ClientCredentials) -> tuple[Any, float]:
        """What *provider* gives (a token or a Failure), and the Clock seconds it took."""
        d = provider()
        start = self.clock.seconds()
        for _ in range(400):
            self.http.flush()
            if d.called:
                break
            self.clock.advance(0.05)
        results: list[Any] = []
        d.addBoth(results.append)
        self.assertTrue(results, "the provider neither gave a token nor failed")
        return results[0], self.clock.seconds() - start

    def assert_no_secret(self, *texts: str) -> None:
        for text in (*texts, *self.logged):
            self.assertNotIn(SECRET, text)
            self.assertNotIn(jwt(self.endpoint.claims), text)

    def test_grant_and_token(self) -> None:
        token, took = self.fetch(self.provider(scope="kafka", audience="urn:kafka"))
        self.assertEqual(token.value, jwt(self.endpoint.claims))
        self.assertEqual((token.expires_at, token.principal), (NOW + 3600, "afkak"))
        self.assertEqual(
            self.endpoint.requests,
            [{b"grant_type": [b"client_credentials"], b"scope": [b"kafka"],
              b"audience": [b"urn:kafka"]}],
        )  # fmt: skip
        self.assertEqual(took, 0)
        self.assert_no_secret(repr(token), repr(self.provider()))

    def test_sub_claim_name(self) -> None:
        self.endpoint.claims = {"client_id": "svc", "exp": NOW + 60}
        token, _ = self.fetch(self.provider(sub_claim_name="client_id"))
        self.assertEqual(token.principal, "svc")
        failure, _ = self.fetch(self.provider())
        failure.trap(TokenEndpointError)
        self.assertIn("no 'sub' claim (sasl.oauthbearer.sub.claim.name)", str(failure.value))

    def test_wrong_secret_fails_at_once_naming_the_cause(self) -> None:
        failure, took = self.fetch(self.provider(secret="wrong-secret"))
        failure.trap(TokenEndpointError)
        self.assertIsInstance(failure.value, SaslAuthenticationFailed)
        self.assertFalse(failure.value.retriable)
        message = str(failure.value)
        self.assertIn(f"token endpoint {URL} refused client 'afkak': HTTP 401", message)
        self.assertIn("invalid_client (Invalid client credentials)", message)
        self.assertNotIn("wrong-secret", message + "".join(self.logged))
        self.assertEqual((took, len(self.endpoint.requests)), (0, 1))
        # The same process, configuration fixed: the next provider connects.
        token, _ = self.fetch(self.provider())
        self.assertEqual(token.principal, "afkak")

    def test_endpoint_failing_is_retried_with_backoff(self) -> None:
        self.endpoint.failures = 3
        token, took = self.fetch(self.provider())
        self.assertEqual(token.principal, "afkak")
        self.assertEqual(len(self.endpoint.requests), 4)
        self.assertTrue(0.7 <= took <= 0.85, took)  # 100 ms doubling, Clock steps of 50 ms
        self.assert_no_secret()

    def test_endpoint_down_fails_after_the_retry_time(self) -> None:
        self.endpoint.failures = 1000
        failure, took = self.fetch(self.provider(retry_backoff_max=2.0))
        failure.trap(TokenEndpointError)
        self.assertEqual(
            str(failure.value).split(": ", 1)[1],
            f"token endpoint {URL} gave no token within 2 s: HTTP 503",
        )
        self.assertLessEqual(took, 2.0)
        self.assert_no_secret()
        # The endpoint is back: the next attempt, in the same process, gets a token.
        self.endpoint.failures = 0
        token, _ = self.fetch(self.provider())
        self.assertEqual(token.principal, "afkak")

    def test_slow_endpoint_times_out(self) -> None:
        self.endpoint.hang = True
        failure, took = self.fetch(self.provider(request_timeout=1.0, retry_backoff_max=2.0))
        failure.trap(TokenEndpointError)
        self.assertIn("gave no token within 2 s: no answer within 1 s", str(failure.value))
        self.assertLessEqual(took, 3.0)

    def test_answers_that_are_not_tokens(self) -> None:
        cases = {
            b"<html>": "answered HTTP 200 without JSON",
            b"{}": "answered without an access_token",
            b'{"access_token": "opaque"}': "gave an access_token that is not a JWT",
            json.dumps({"access_token": jwt({"sub": "a"})}).encode(): "has no numeric exp claim",
            json.dumps({"access_token": jwt({"sub": "a", "exp": NOW - 1})}).encode(): (
                "gave a token that has expired"
            ),
        }
        for body, expected in cases.items():
            self.endpoint.body = body
            failure, took = self.fetch(self.provider())
            failure.trap(TokenEndpointError)
            self.assertIn(expected, str(failure.value))
            self.assertEqual(took, 0)

    def test_bad_arguments(self) -> None:
        with self.assertRaises(ValueError):
            ClientCredentials("ftp://x", "a", "b", reactor=self.clock, http=self.http)
        with self.assertRaises(TypeError):
            ClientCredentials(URL, "", "b", reactor=self.clock, http=self.http)
        with self.assertRaises(TypeError):
            ClientCredentials(URL, "a", "b", scope=3, reactor=self.clock, http=self.http)  # type: ignore[arg-type]

    def test_oauthbearer_caches_and_refreshes_as_java(self) -> None:
        """Through OAuthBearer: one fetch per refresh time, Java's rule deciding when."""
        mechanism = OAuthBearer(self.provider(), refresh=LoginRefresh(random=lambda: 0.5))
        conversation = mechanism.start("broker", self.clock)
        self.http.flush()
        first = self.successResultOf(conversation).respond(None)
        self.assertEqual(first, initial_response(jwt(self.endpoint.claims), {}))
        # 3600 s lifetime: refreshed at 0.8 + 0.05 * 0.5 = 82.5 % of it.
        self.clock.advance(3600 * 0.825 - 1)
        self.successResultOf(mechanism.start("broker", self.clock))
        self.assertEqual(len(self.endpoint.requests), 1)
        self.clock.advance(1)
        mechanism.start("broker", self.clock)
        self.http.flush()
        self.assertEqual(len(self.endpoint.requests), 2)


class LoginRefreshTests(SynchronousTestCase):
    def test_java_rule(self) -> None:
        refresh = LoginRefresh(random=lambda: 1.0)
        # 0.85 of an hour, within the buffer and past the minimum period.
        self.assertAlmostEqual(refresh.refresh_at(0, 3600), 3600 * 0.85)
        # 0.85 of 30 min would end inside the 300 s buffer: the buffer's start.
        self.assertEqual(refresh.refresh_at(0, 1800), 1500)
        # Expiring within min period + buffer (360 s): half-way.
        self.assertEqual(refresh.refresh_at(0, 300), 150)
        # The minimum period holds when the window is shorter.
        short = LoginRefresh(0.5, 0, min_period=200, buffer=0)
        self.assertEqual(short.refresh_at(0, 300), 200)

    def test_window_is_the_fixed_fraction(self) -> None:
        self.assertEqual(LoginRefresh.window(0.8).refresh_at(100, 200), 180)

    def test_bounds(self) -> None:
        for kwargs in ({"window_factor": 0.4}, {"window_jitter": 0.3}, {"buffer": 3601}):
            with self.assertRaises(ValueError):
                LoginRefresh(**kwargs)
        with self.assertRaises(TypeError):
            LoginRefresh(min_period="60")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            OAuthBearer(lambda: None, refresh=0.8)  # type: ignore[arg-type]
