"""OAuth 2 client credentials (KIP-768): OAUTHBEARER tokens from an identity provider.

:class:`ClientCredentials` is a token provider for
:class:`~afkak.OAuthBearer`: it posts the client-credentials grant to a
token endpoint (Keycloak, Okta, Entra ID, Confluent Cloud's...) through
``treq`` (the ``afkak[oauth]`` extra), as Java's
``OAuthBearerLoginCallbackHandler`` does, and reads the token's expiry and
principal from its JWT claims.  A refused grant (HTTP 4xx: a wrong client id
or secret, an unknown scope) fails at once; an endpoint that is down, slow or
failing (5xx) is retried with backoff for at most ``retry_backoff_max``
seconds (Kafka's ``sasl.login.retry.backoff.*``).  Either way the
connection's authentication fails with :class:`TokenEndpointError`, whose
message names the endpoint and the cause and never the secret or a token.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlsplit

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectError, ConnectionLost, DNSLookupError, TimeoutError

from afkak._broker_errors import SaslAuthenticationFailed
from afkak._retry import backoff_policy, retrying
from afkak.connection._sasl_mechanisms import OAuthBearerToken

#: Kafka's ``sasl.login.retry.backoff.ms`` and ``.max.ms`` defaults, in seconds.
RETRY_BACKOFF = 0.1
RETRY_BACKOFF_MAX = 10.0
#: How long one request to the token endpoint may take (``sasl.login.read.timeout.ms``).
REQUEST_TIMEOUT = 10.0


def _network_errors() -> tuple[type[Exception], ...]:
    """What a request to the endpoint fails with when the network does; twisted.web is
    imported here, when a token is fetched, not by every ``import afkak``."""
    from twisted.web.client import ResponseFailed

    return (ConnectError, ConnectionLost, DNSLookupError, TimeoutError, ResponseFailed)


class TokenEndpointError(SaslAuthenticationFailed):
    """The token endpoint gave no usable token: the grant was refused, the endpoint
    was unreachable for the whole retry time, or its answer was not a token."""


class _TryAgain(Exception):
    """A failure that another request may not have (down, slow, HTTP 5xx)."""


def _treq() -> Any:
    try:
        import treq
    except ImportError:
        raise ImportError(
            "OAuth client credentials need treq: pip install 'afkak[oauth]'"
        ) from None
    return treq


class ClientCredentials:
    """Fetch OAUTHBEARER tokens by the client-credentials grant (RFC 6749 4.4).

    Pass one to :class:`~afkak.OAuthBearer` as its token provider; it caches
    the token and asks for a new one as :class:`~afkak.connection.LoginRefresh`
    says.

    :param token_endpoint_url: ``sasl.oauthbearer.token.endpoint.url``.
    :param client_id: ``sasl.oauthbearer.client.credentials.client.id``.
    :param client_secret: ``...client.secret``; sent by HTTP Basic
        authentication as Java does; never shown in ``repr``, a message or a log.
    :param scope: ``sasl.oauthbearer.scope``, sent when given.
    :param audience: an ``audience`` form parameter, for providers that need one.
    :param sub_claim_name: the claim naming the principal
        (``sasl.oauthbearer.sub.claim.name``).
    :param retry_backoff: first wait before retrying a failed request, seconds.
    :param retry_backoff_max: longest wait, and how long to keep retrying.
    :param request_timeout: how long one request may take.
    :param reactor: provides ``seconds``/``callLater`` (and the HTTP connection
        when *http* is not given); the global reactor by default.
    :param http: what posts the request: ``treq`` itself by default, else a
        ``treq.HTTPClient`` (its own ``Agent``, TLS or proxy settings), or a
        ``treq.testing.StubTreq`` in tests.
    :param uniform: ``(low, high) -> float`` for the backoff's jitter.
    """

    def __init__(
        self,
        token_endpoint_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        audience: str | None = None,
        sub_claim_name: str = "sub",
        retry_backoff: float = RETRY_BACKOFF,
        retry_backoff_max: float = RETRY_BACKOFF_MAX,
        request_timeout: float = REQUEST_TIMEOUT,
        reactor: Any = None,
        http: Any = None,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        for name, value in (
            ("token_endpoint_url", token_endpoint_url),
            ("client_id", client_id),
            ("client_secret", client_secret),
            ("sub_claim_name", sub_claim_name),
        ):
            if not isinstance(value, str) or not value:
                raise TypeError(f"{name} must be a non-empty str")
        for name, option in (("scope", scope), ("audience", audience)):
            if option is not None and not isinstance(option, str):
                raise TypeError(f"{name} must be a str or None")
        if urlsplit(token_endpoint_url).scheme not in ("http", "https"):
            raise ValueError(
                f"token_endpoint_url must be an http or https URL, not {token_endpoint_url!r}"
            )
        if request_timeout <= 0:
            raise ValueError(f"request_timeout must be positive, not {request_timeout!r}")
        self._policy = backoff_policy(retry_backoff, retry_backoff_max, uniform=uniform)
        self.token_endpoint_url = token_endpoint_url
        self.client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self.audience = audience
        self.sub_claim_name = sub_claim_name
        self._retry_backoff_max = retry_backoff_max
        self._request_timeout = request_timeout
        if reactor is None:
            from twisted.internet import reactor
        self._reactor = reactor
        treq = _treq()
        self._http = http if http is not None else treq
        self._content = treq.content

    def __repr__(self) -> str:
        return f"<ClientCredentials {self.client_id!r} at {self.token_endpoint_url}>"

    def __call__(self) -> Deferred[OAuthBearerToken]:
        """A new token from the endpoint; fails with :class:`TokenEndpointError`."""
        return Deferred.fromCoroutine(self._fetch())

    async def _fetch(self) -> OAuthBearerToken:
        deadline = self._reactor.seconds() + self._retry_backoff_max
        try:
            body = await retrying(
                self._reactor,
                self._request,
                self._policy,
                retriable=lambda e: isinstance(e, _TryAgain),
                deadline=deadline,
                what=f"token request to {self.token_endpoint_url}",
            )
        except _TryAgain as e:
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} gave no token within "
                f"{self._retry_backoff_max:g} s: {e}"
            ) from None
        return self._token(body)

    def _form(self) -> dict[str, str]:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        return form

    def _headers(self) -> dict[bytes, list[bytes]]:
        basic = f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}"
        return {
            b"Authorization": [b"Basic " + base64.b64encode(basic.encode())],
            b"Accept": [b"application/json"],
        }

    async def _request(self) -> Any:
        """One POST: the decoded JSON answer, :class:`_TryAgain`, or a final error."""
        post = self._http.post(self.token_endpoint_url, data=self._form(), headers=self._headers())
        try:
            response = await self._in_time(post)
            body = await self._in_time(self._content(response))
        except _network_errors() as e:
            raise _TryAgain(f"cannot reach it ({type(e).__name__})") from None
        code = response.code
        if code >= HTTPStatus.INTERNAL_SERVER_ERROR:
            raise _TryAgain(f"HTTP {code}")
        if code >= HTTPStatus.BAD_REQUEST:
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} refused client {self.client_id!r}: "
                f"HTTP {code}{_oauth_error(body)}"
            )
        try:
            return json.loads(body)
        except ValueError:
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} answered HTTP {code} without JSON"
            ) from None

    def _in_time(self, d: Deferred[Any]) -> Deferred[Any]:
        """*d*, cancelled after the request timeout with a :class:`_TryAgain` saying so."""

        def timed_out(result: Any, timeout: float) -> Any:
            raise _TryAgain(f"no answer within {timeout:g} s")

        return d.addTimeout(self._request_timeout, self._reactor, onTimeoutCancel=timed_out)

    def _token(self, body: Any) -> OAuthBearerToken:
        access_token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(access_token, str) or not access_token:
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} answered without an access_token"
            )
        claims = _jwt_claims(access_token)
        if claims is None:
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} gave an access_token that is not a JWT"
            )
        expires = claims.get("exp")
        principal = claims.get(self.sub_claim_name)
        if not isinstance(expires, (int, float)) or isinstance(expires, bool):
            raise TokenEndpointError(
                f"the access_token from {self.token_endpoint_url} has no numeric exp claim"
            )
        if not isinstance(principal, str) or not principal:
            raise TokenEndpointError(
                f"the access_token from {self.token_endpoint_url} has no "
                f"{self.sub_claim_name!r} claim (sasl.oauthbearer.sub.claim.name)"
            )
        if expires <= self._reactor.seconds():
            raise TokenEndpointError(
                f"token endpoint {self.token_endpoint_url} gave a token that has expired"
            )
        return OAuthBearerToken(access_token, float(expires), principal)


def _oauth_error(body: bytes) -> str:
    """``: error (description)`` from an RFC 6749 5.2 error answer, else nothing."""
    try:
        answer = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), str):
        return ""
    text = f": {answer['error'][:100]}"
    description = answer.get("error_description")
    if isinstance(description, str) and description:
        text += f" ({description[:200]})"
    return text


def _jwt_claims(token: str) -> dict[str, Any] | None:
    """A JWT's payload, unverified (the broker verifies it), or None if not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None
