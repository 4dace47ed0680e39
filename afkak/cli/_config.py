"""Connection settings: the bootstrap list and a Kafka-style properties file.

``--command-config`` takes the properties file Kafka's shell tools take.  The
standard security keys become KafkaClient options (``tls``, ``sasl``) where
this afkak's KafkaClient has them; any other key is refused rather than
silently ignored, except ``client.id`` and ``request.timeout.ms``.
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any

import afkak
from afkak.client import KafkaClient

BOOTSTRAP_ENV = "AFKAK_BOOTSTRAP"
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = {
    "PLAIN": "Plain",
    "SCRAM-SHA-256": "ScramSha256",
    "SCRAM-SHA-512": "ScramSha512",
}


class ConfigError(ValueError):
    """Bad connection settings (a malformed properties file, an unknown key, ...)."""


def bootstrap(value: str | None) -> str:
    """The bootstrap list: ``--bootstrap``, else ``$AFKAK_BOOTSTRAP``."""
    hosts = value or os.environ.get(BOOTSTRAP_ENV, "")
    if not hosts.strip():
        raise ConfigError(f"no brokers: give --bootstrap HOST:PORT or set {BOOTSTRAP_ENV}")
    return hosts


def read_properties(path: str) -> dict[str, str]:
    """A Java-style ``.properties`` file as a dict (``key=value``, ``key: value``,
    ``#``/``!`` comments, backslash line continuations)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    properties: dict[str, str] = {}
    logical = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        line, logical = logical + line, ""
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            raise ConfigError(f"{path}:{number}: not a key=value line: {raw.strip()!r}")
        properties[match.group(1)] = match.group(2).strip()
    if logical:
        raise ConfigError(f"{path}: the last line ends with a continuation backslash")
    return properties


def client_options(properties: dict[str, str]) -> dict[str, Any]:
    """KafkaClient keyword arguments for the properties (TLS and SASL by their standard keys)."""
    props = dict(properties)
    options: dict[str, Any] = {}
    if "client.id" in props:
        options["clientId"] = props.pop("client.id")
    if "request.timeout.ms" in props:
        options["timeout"] = _int(props.pop("request.timeout.ms"), "request.timeout.ms")
    protocol = props.pop("security.protocol", "PLAINTEXT").upper()
    if protocol not in _SECURITY_PROTOCOLS:
        raise ConfigError(f"security.protocol must be one of {', '.join(_SECURITY_PROTOCOLS)}")
    tls_keys = {k: props.pop(k) for k in list(props) if k.startswith("ssl.")}
    sasl_keys = {k: props.pop(k) for k in list(props) if k.startswith("sasl.")}
    if props:
        raise ConfigError(f"unsupported properties: {', '.join(sorted(props))}")
    if protocol in ("SSL", "SASL_SSL"):
        options["tls"] = _tls(tls_keys)
    elif tls_keys:
        raise ConfigError(
            f"ssl.* properties need security.protocol SSL or SASL_SSL, not {protocol}"
        )
    if protocol.startswith("SASL_"):
        options["sasl"] = _sasl(sasl_keys)
    elif sasl_keys:
        raise ConfigError(f"sasl.* properties need a SASL security.protocol, not {protocol}")
    missing = [k for k in options if k not in inspect.signature(KafkaClient).parameters]
    if missing:
        raise ConfigError(f"this afkak's KafkaClient has no {'/'.join(missing)} option")
    return options


def _int(value: str, key: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {value!r}") from None


def _feature(name: str) -> Any:
    feature = getattr(afkak, name, None)
    if feature is None:
        raise ConfigError(f"this afkak has no {name} support")
    return feature


def _tls(keys: dict[str, str]) -> Any:
    known = {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.endpoint.identification.algorithm",
    }
    unknown = set(keys) - known
    if unknown:
        raise ConfigError(f"unsupported properties: {', '.join(sorted(unknown))}")
    cert, key = keys.get("ssl.certificate.location"), keys.get("ssl.key.location")
    if (cert is None) != (key is None):
        raise ConfigError("ssl.certificate.location and ssl.key.location go together")
    verify = keys.get("ssl.endpoint.identification.algorithm", "https").lower()
    return _feature("TLS")(
        trust_root=keys.get("ssl.ca.location"),
        client_certificate=(cert, key) if cert else None,
        verify_hostname=verify == "https",
    )


def _sasl(keys: dict[str, str]) -> Any:
    mechanism = keys.pop("sasl.mechanism", "PLAIN").upper()
    if mechanism not in _SASL_MECHANISMS:
        raise ConfigError(f"sasl.mechanism must be one of {', '.join(_SASL_MECHANISMS)}")
    username, password = keys.pop("sasl.username", None), keys.pop("sasl.password", None)
    jaas = keys.pop("sasl.jaas.config", None)
    if jaas is not None:
        found = dict(_JAAS_OPTION.findall(jaas))
        username = found.get("username", username)
        password = found.get("password", password)
    if keys:
        raise ConfigError(f"unsupported properties: {', '.join(sorted(keys))}")
    if username is None or password is None:
        raise ConfigError("SASL needs sasl.username and sasl.password (or sasl.jaas.config)")
    return _feature(_SASL_MECHANISMS[mechanism])(username, password)
