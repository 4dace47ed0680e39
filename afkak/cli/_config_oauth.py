"""``sasl.mechanism=OAUTHBEARER`` in a properties file: OIDC client credentials or AWS MSK IAM.

Java's names select the token source, as they do for the Java client:
``sasl.oauthbearer.token.endpoint.url`` (KIP-768) fetches tokens by the
client-credentials grant, with the client's id and secret from
``sasl.oauthbearer.client.credentials.client.id``/``.secret`` (Kafka 4) or the
``clientId``/``clientSecret``/``scope`` options of ``sasl.jaas.config``
(older configurations); ``sasl.login.callback.handler.class`` naming AWS's
``IAMOAuthBearerLoginCallbackHandler`` signs MSK IAM tokens, with the
``awsProfileName``/``awsRoleArn``/``awsRoleSessionName`` JAAS options and the
region of ``AWS_REGION`` (or the bootstrap host's name), as AWS's Java library.
``sasl.login.refresh.*`` and ``sasl.login.retry.backoff.*`` mean what they
mean in Java.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Protocol

from afkak.connection import ClientCredentials, LoginRefresh, MskIamTokens, OAuthBearer

#: The keys of OAUTHBEARER's token sources.
OAUTH_KEYS = (
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.scope",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.retry.backoff.ms",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.read.timeout.ms",
)
_OIDC_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
)
_MSK_HANDLER = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_REGION_IN_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z0-9-]+)\.amazonaws\.com\b")
_REFRESH = (
    ("sasl.login.refresh.window.factor", "window_factor", 1.0),
    ("sasl.login.refresh.window.jitter", "window_jitter", 1.0),
    ("sasl.login.refresh.min.period.seconds", "min_period", 1.0),
    ("sasl.login.refresh.buffer.seconds", "buffer", 1.0),
)


class _Where(Protocol):
    def at(self, key: str) -> str: ...


def oauthbearer(
    keys: dict[str, str],
    jaas_module: str | None,
    jaas: dict[str, str],
    hosts: str,
    where: _Where,
    error: Callable[[str], Exception],
) -> OAuthBearer:
    """The OAUTHBEARER mechanism the keys (and the JAAS login module's options) describe."""
    if jaas_module not in (None, _LOGIN_MODULE):
        raise error(
            f"{where.at('sasl.jaas.config')}sasl.jaas.config for OAUTHBEARER must use "
            f"{_LOGIN_MODULE}"
        )
    handler = keys.get("sasl.login.callback.handler.class")
    url = keys.get("sasl.oauthbearer.token.endpoint.url")
    refresh = _login_refresh(keys, where, error)
    extensions = {k[len("extension_") :]: v for k, v in jaas.items() if k.startswith("extension_")}
    client_handler = keys.get("sasl.client.callback.handler.class")
    if client_handler is not None and (handler, client_handler) != (_MSK_HANDLER, _MSK_HANDLER):
        raise error(
            f"{where.at('sasl.client.callback.handler.class')}sasl.client.callback.handler.class "
            f"is only taken as MSK IAM's {_MSK_HANDLER}, with the same login handler"
        )
    if handler == _MSK_HANDLER:
        if url is not None:
            raise error(
                f"{where.at('sasl.oauthbearer.token.endpoint.url')}MSK IAM "
                f"({_MSK_HANDLER}) takes no token endpoint"
            )
        provider: Any = MskIamTokens(
            _region(hosts, where, error),
            profile=jaas.get("awsProfileName"),
            role_arn=jaas.get("awsRoleArn"),
            session_name=jaas.get("awsRoleSessionName"),
        )
    elif handler not in (None, *_OIDC_HANDLERS):
        raise error(
            f"{where.at('sasl.login.callback.handler.class')}unsupported "
            f"sasl.login.callback.handler.class {handler!r}: afkak knows "
            f"{_OIDC_HANDLERS[0]} and {_MSK_HANDLER}"
        )
    elif url is None:
        raise error(
            f"{where.at('sasl.mechanism')}OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url "
            f"(OIDC client credentials) or sasl.login.callback.handler.class={_MSK_HANDLER}"
        )
    else:
        provider = _client_credentials(url, keys, jaas, where, error)
    return OAuthBearer(provider, extensions=extensions, refresh=refresh)


def _client_credentials(
    url: str,
    keys: dict[str, str],
    jaas: dict[str, str],
    where: _Where,
    error: Callable[[str], Exception],
) -> ClientCredentials:
    client_id = keys.get("sasl.oauthbearer.client.credentials.client.id", jaas.get("clientId"))
    secret = keys.get("sasl.oauthbearer.client.credentials.client.secret", jaas.get("clientSecret"))
    if not client_id or not secret:
        raise error(
            f"{where.at('sasl.oauthbearer.token.endpoint.url')}OIDC client credentials need "
            "sasl.oauthbearer.client.credentials.client.id and .client.secret "
            "(or clientId and clientSecret in sasl.jaas.config)"
        )
    options: dict[str, Any] = {
        "scope": keys.get("sasl.oauthbearer.scope", jaas.get("scope")),
        "sub_claim_name": keys.get("sasl.oauthbearer.sub.claim.name", "sub"),
    }
    for key, name in (
        ("sasl.login.retry.backoff.ms", "retry_backoff"),
        ("sasl.login.retry.backoff.max.ms", "retry_backoff_max"),
        ("sasl.login.read.timeout.ms", "request_timeout"),
    ):
        if key in keys:
            options[name] = _number(keys[key], key, where, error) / 1000
    try:
        return ClientCredentials(url, client_id, secret, **options)
    except (TypeError, ValueError) as e:
        raise error(f"{where.at('sasl.oauthbearer.token.endpoint.url')}{e}") from None


def _login_refresh(
    keys: dict[str, str], where: _Where, error: Callable[[str], Exception]
) -> LoginRefresh:
    options: dict[str, Any] = {
        name: _number(keys[key], key, where, error) * scale
        for key, name, scale in _REFRESH
        if key in keys
    }
    try:
        return LoginRefresh(**options)
    except ValueError as e:
        culprit = next(k for k, name, _ in _REFRESH if name in str(e))
        raise error(f"{where.at(culprit)}{culprit}: {e}") from None


def _region(hosts: str, where: _Where, error: Callable[[str], Exception]) -> str:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    found = _REGION_IN_HOST.search(hosts)
    if region:
        return region
    if found is not None:
        return found.group(1)
    raise error(
        f"{where.at('sasl.login.callback.handler.class')}MSK IAM needs the cluster's region: "
        "set AWS_REGION (the bootstrap host names none)"
    )


def _number(value: str, key: str, where: _Where, error: Callable[[str], Exception]) -> float:
    try:
        return float(value)
    except ValueError:
        raise error(f"{where.at(key)}{key} must be a number, not {value!r}") from None
