"""AWS MSK IAM tokens: byte for byte as AWS's signer makes them, and as SigV4 defines them.

No AWS here: the credentials and the signing time are fixed, the token that
afkak sends is compared with the signer's own output and with a presigned
URL computed from the SigV4 specification by hand.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
from collections.abc import Callable
from importlib.metadata import version
from typing import Any
from urllib.parse import quote

import botocore.auth
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
from botocore.credentials import CredentialProvider, Credentials
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.connection import MskIamError, MskIamTokens, OAuthBearer
from afkak.connection._sasl_mechanisms import initial_response

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SIGNED_AT = datetime.datetime(2026, 1, 2, 3, 4, 5)
REGION = "eu-west-1"


class FixedCredentials(CredentialProvider):  # type: ignore[misc]
    METHOD = "fixed"

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def load(self) -> Credentials:
        return Credentials(ACCESS_KEY, SECRET_KEY, self.token)


class NoCredentials(CredentialProvider):  # type: ignore[misc]
    def load(self) -> Credentials:
        return Credentials("", "")


class CallingThreadPool:
    """A thread pool that runs each call at once, recording it."""

    def __init__(self) -> None:
        self.calls = 0

    def callInThreadWithCallback(  # noqa: N802 -- Twisted's name
        self, done: Callable[[bool, Any], None], f: Callable[..., Any], *args: Any, **kw: Any
    ) -> None:
        self.calls += 1
        try:
            result = f(*args, **kw)
        except BaseException as e:
            from twisted.python.failure import Failure

            done(False, Failure(e))
        else:
            done(True, result)


class ThreadedClock(Clock):
    def callFromThread(self, f: Callable[..., Any], *args: Any, **kw: Any) -> None:  # noqa: N802
        f(*args, **kw)


def sigv4_url(region: str, session_token: str | None) -> str:
    """The presigned ``kafka-cluster:Connect`` URL, from the SigV4 specification."""
    host = f"kafka.{region}.amazonaws.com"
    amz_date, day = SIGNED_AT.strftime("%Y%m%dT%H%M%SZ"), SIGNED_AT.strftime("%Y%m%d")
    scope = f"{day}/{region}/kafka-cluster/aws4_request"
    params = [
        ("Action", "kafka-cluster:Connect"),
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", f"{ACCESS_KEY}/{scope}"),
        ("X-Amz-Date", amz_date),
        ("X-Amz-Expires", "900"),
        ("X-Amz-SignedHeaders", "host"),
    ]
    if session_token is not None:
        params.append(("X-Amz-Security-Token", session_token))
    encoded = [(quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in params]
    query = "&".join(f"{k}={v}" for k, v in encoded)
    canonical = "\n".join(
        ["GET", "/", "&".join(f"{k}={v}" for k, v in sorted(encoded)), f"host:{host}", "",
         "host", hashlib.sha256(b"").hexdigest()]
    )  # fmt: skip
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + SECRET_KEY).encode()
    for part in (day, region, "kafka-cluster", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    agent = quote(
        f"aws-msk-iam-sasl-signer-python/{version('aws-msk-iam-sasl-signer-python')}", safe=""
    )
    return f"https://{host}/?{query}&X-Amz-Signature={signature}&User-Agent={agent}"


class MskIamTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.patch(botocore.auth, "get_current_datetime", lambda *a, **k: SIGNED_AT)
        self.clock = ThreadedClock()
        self.clock.advance(SIGNED_AT.replace(tzinfo=datetime.UTC).timestamp())
        self.pool = CallingThreadPool()

    def tokens(self, provider: CredentialProvider) -> MskIamTokens:
        return MskIamTokens(
            REGION, credentials_provider=provider, reactor=self.clock, threadpool=self.pool
        )

    def test_token_byte_for_byte(self) -> None:
        for session_token in (None, "FQoGZXIvYXdzEJr//session+token="):
            provider = FixedCredentials(session_token)
            expected, expires_ms = (
                MSKAuthTokenProvider.generate_auth_token_from_credentials_provider(REGION, provider)
            )
            url = base64.urlsafe_b64decode(expected + "=" * (-len(expected) % 4)).decode()
            self.assertEqual(url, sigv4_url(REGION, session_token))
            mechanism = OAuthBearer(self.tokens(provider))
            conversation = self.successResultOf(mechanism.start("b-1.msk", self.clock))
            self.assertEqual(conversation.respond(None), initial_response(expected, {}))
            token = self.successResultOf(mechanism.token(self.clock))
            self.assertEqual(token.expires_at, expires_ms / 1000)
            self.assertEqual(token.expires_at - self.clock.seconds(), 900)
        self.assertEqual(self.pool.calls, 2)  # signed in the pool, once per token

    def test_refreshed_before_expiry(self) -> None:
        mechanism = OAuthBearer(self.tokens(FixedCredentials()))
        self.successResultOf(mechanism.start("b-1.msk", self.clock))
        self.clock.advance(900 * 0.8 - 1)
        self.successResultOf(mechanism.start("b-1.msk", self.clock))
        self.assertEqual(self.pool.calls, 1)
        self.clock.advance(1)
        self.successResultOf(mechanism.start("b-1.msk", self.clock))
        self.assertEqual(self.pool.calls, 2)

    def test_no_credentials_fails_naming_the_cause(self) -> None:
        failure = self.failureResultOf(self.tokens(NoCredentials())(), MskIamError)
        self.assertEqual(
            str(failure.value).split(": ", 1)[1],
            f"AWS MSK IAM: cannot sign a token for region {REGION}: "
            "ValueError: AWS Credentials can not be empty",
        )

    def test_bad_arguments(self) -> None:
        with self.assertRaises(TypeError):
            MskIamTokens("", reactor=self.clock)
        with self.assertRaises(ValueError):
            MskIamTokens(REGION, profile="p", role_arn="arn:aws:iam::1:role/r", reactor=self.clock)
        with self.assertRaises(ValueError):
            MskIamTokens(REGION, session_name="s", reactor=self.clock)
        self.assertEqual(
            repr(MskIamTokens(REGION, profile="dev", reactor=self.clock)),
            f"<MskIamTokens {REGION} profile dev>",
        )
