"""The data source's TLS and SASL options, by the names Spark's Kafka connector users know.

Accepted (each with or without the ``kafka.`` prefix):

- ``security.protocol``: ``PLAINTEXT`` (default), ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``;
- ``sasl.mechanism``: ``PLAIN`` (default), ``SCRAM-SHA-256``, ``SCRAM-SHA-512``, ``OAUTHBEARER``;
- credentials either as Java's ``sasl.jaas.config`` (``...PlainLoginModule required
  username="u" password="p";`` or ``ScramLoginModule``) or as librdkafka's
  ``sasl.username`` / ``sasl.password``;
- OAUTHBEARER: ``sasl.oauthbearer.token.provider`` (afkak's own), ``module:function``
  naming a token provider importable on the executors;
- TLS: ``ssl.ca.location`` (or ``ssl.truststore.location`` with
  ``ssl.truststore.type=PEM``: Java keystores are not read), ``ssl.certificate.location``
  and ``ssl.key.location`` for mutual TLS (PEM), ``ssl.endpoint.identification.algorithm``
  (``https``, the default, verifies host names; empty turns that off).

The password lives in a ``repr=False`` field and is never part of an error message.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

import attrs

SECURITY_SETTINGS = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        "sasl.oauthbearer.token.provider",
        "ssl.ca.location",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.endpoint.identification.algorithm",
    }
)
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_JAAS_FIELD = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityOptionError(ValueError):
    """A TLS or SASL option is missing or malformed (never showing a secret)."""


@attrs.frozen
class SecurityConfig:
    """Picklable, hashable TLS and SASL settings of a worker's client."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    token_provider: str | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    verify_hostname: bool = True

    def client_kwargs(self) -> dict[str, Any]:
        """``tls`` and ``sasl`` keyword arguments of :class:`~afkak.KafkaClient`."""
        from afkak.connection import TLS, OAuthBearer, Plain, Scram

        kwargs: dict[str, Any] = {}
        if self.protocol in ("SSL", "SASL_SSL"):
            client_cert = None
            if self.certificate_location is not None:
                client_cert = (self.certificate_location, self.key_location)
            kwargs["tls"] = TLS(self.ca_location, client_cert, self.verify_hostname)
        if self.protocol.startswith("SASL_"):
            if self.mechanism == "OAUTHBEARER":
                assert self.token_provider is not None
                module, _, name = self.token_provider.partition(":")
                kwargs["sasl"] = OAuthBearer(getattr(importlib.import_module(module), name))
            elif self.mechanism == "PLAIN":
                kwargs["sasl"] = Plain(self.username or "", self.password or "")
            else:
                kwargs["sasl"] = Scram(self.mechanism, self.username or "", self.password or "")
        return kwargs


def security_config(settings: Mapping[str, str]) -> SecurityConfig:
    """The security part of the (lower-cased, unprefixed) client settings."""
    protocol = settings.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in _PROTOCOLS:
        raise SecurityOptionError(f"security.protocol must be one of {', '.join(_PROTOCOLS)}")
    mechanism = settings.get("sasl.mechanism", "PLAIN").strip().upper()
    if mechanism not in _MECHANISMS:
        raise SecurityOptionError(f"sasl.mechanism must be one of {', '.join(_MECHANISMS)}")
    username, password = settings.get("sasl.username"), settings.get("sasl.password")
    jaas = settings.get("sasl.jaas.config")
    if jaas is not None:
        found = {
            m.group(1): re.sub(r"\\(.)", r"\1", m.group(2)) for m in _JAAS_FIELD.finditer(jaas)
        }
        username = found.get("username", username)
        password = found.get("password", password)
    provider = settings.get("sasl.oauthbearer.token.provider")
    if protocol.startswith("SASL_"):
        if mechanism == "OAUTHBEARER":
            if not provider or ":" not in provider:
                raise SecurityOptionError(
                    "OAUTHBEARER needs sasl.oauthbearer.token.provider=module:function"
                )
        elif not username or not password:
            raise SecurityOptionError(
                f"{mechanism} needs a username and password (sasl.jaas.config, or "
                "sasl.username and sasl.password)"
            )
    truststore = settings.get("ssl.truststore.location")
    if truststore is not None and settings.get("ssl.truststore.type", "").upper() != "PEM":
        raise SecurityOptionError(
            "ssl.truststore.location must be a PEM file (set ssl.truststore.type=PEM), "
            "or use ssl.ca.location"
        )
    cert, key = settings.get("ssl.certificate.location"), settings.get("ssl.key.location")
    if (cert is None) != (key is None):
        raise SecurityOptionError("ssl.certificate.location and ssl.key.location go together")
    algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise SecurityOptionError("ssl.endpoint.identification.algorithm must be https or empty")
    return SecurityConfig(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        token_provider=provider,
        ca_location=settings.get("ssl.ca.location", truststore),
        certificate_location=cert,
        key_location=key,
        verify_hostname=algorithm == "https",
    )
