"""Connection settings: the bootstrap list and a Kafka-style properties file.

``--command-config`` takes the properties file Kafka's shell tools take.  The
standard security keys become KafkaClient options (``tls``, ``sasl``) where
this afkak's KafkaClient has them; ``bootstrap.servers``, ``client.id`` and
``request.timeout.ms`` are read too.  Any other key is refused (naming its
file and line, with the key meant when it is a known misspelling) rather than
silently ignored.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from collections.abc import Mapping
from typing import Any

import afkak
from afkak.cli._config_oauth import OAUTH_KEYS, oauthbearer
from afkak.client import KafkaClient

BOOTSTRAP_ENV = "AFKAK_BOOTSTRAP"
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = {
    "PLAIN": "Plain",
    "SCRAM-SHA-256": "ScramSha256",
    "SCRAM-SHA-512": "ScramSha512",
}


#: The keys this command reads.
KNOWN_KEYS: tuple[str, ...] = (
    "bootstrap.servers",
    "client.id",
    "request.timeout.ms",
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "sasl.jaas.config",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.endpoint.identification.algorithm",
    # OAUTHBEARER's token sources: OIDC client credentials and AWS MSK IAM.
    *OAUTH_KEYS,
)
# Kerberos (GSSAPI) and Java key/trust stores: their keys, read by _gssapi and _stores.
_KERBEROS_KEYS = ("sasl.kerberos.service.name",)
_STORE_KEYS = {
    "ssl.truststore.location": "location",
    "ssl.truststore.type": "type",
    "ssl.truststore.password": "password",
    "ssl.truststore.certificates": "certificates",
}
_KEYSTORE_KEYS = {
    "ssl.keystore.location": "location",
    "ssl.keystore.type": "type",
    "ssl.keystore.password": "password",
    "ssl.key.password": "key_password",
    "ssl.keystore.key": "key",
    "ssl.keystore.certificate.chain": "certificate_chain",
}
#: Java's Krb5LoginModule options afkak reads, and GSSAPI's keyword for each.
_KRB5_OPTIONS = {"principal": "principal", "keyTab": "keytab", "ticketCache": "ticket_cache"}
_JAAS_ANY_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
KNOWN_KEYS += (*_KERBEROS_KEYS, *_STORE_KEYS, *_KEYSTORE_KEYS)
#: librdkafka's (and kcat's) names of keys Kafka's tools spell otherwise.
_LIBRDKAFKA_NAMES = {
    "sasl.mechanisms": "sasl.mechanism",
    "metadata.broker.list": "bootstrap.servers",
    "socket.timeout.ms": "request.timeout.ms",
}


class ConfigError(ValueError):
    """Bad connection settings (a malformed properties file, an unknown key, ...)."""


class Properties(dict[str, str]):
    """A properties file's keys and values, remembering the line that set each key."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.lines: dict[str, int] = {}

    def at(self, key: str) -> str:
        """``FILE:LINE: `` where *key* was set, to begin an error message with."""
        if self.path is None:
            return ""
        line = self.lines.get(key)
        return f"{self.path}:{line}: " if line is not None else f"{self.path}: "


def bootstrap(value: str | None) -> str:
    """The bootstrap list: ``--bootstrap`` (or the ``--command-config`` file's
    ``bootstrap.servers``), else ``$AFKAK_BOOTSTRAP``."""
    hosts = value or os.environ.get(BOOTSTRAP_ENV, "")
    if not hosts.strip():
        raise ConfigError(
            f"no brokers: give --bootstrap HOST:PORT, bootstrap.servers in --command-config, "
            f"or set {BOOTSTRAP_ENV}"
        )
    return hosts


def read_properties(path: str) -> dict[str, str]:
    """A Java-style ``.properties`` file as a dict (``key=value``, ``key: value``,
    ``#``/``!`` comments, backslash line continuations)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        at = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{path}:{at}: not UTF-8 text (byte {data[e.start]:#x})") from None
    properties = Properties(path)
    logical = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if not logical:
            start = number
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        line, logical = logical + line, ""
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            raise ConfigError(f"{path}:{number}: not a key=value line: {raw.strip()!r}")
        properties[match.group(1)] = match.group(2).strip()
        properties.lines[match.group(1)] = start
    if logical:
        raise ConfigError(f"{path}: the last line ends with a continuation backslash")
    return properties


def client_options(properties: Mapping[str, str]) -> dict[str, Any]:
    """KafkaClient keyword arguments for the properties (TLS and SASL by their standard keys;
    ``hosts`` from ``bootstrap.servers``)."""
    where = properties if isinstance(properties, Properties) else Properties()
    unknown = sorted(
        (k for k in properties if k not in KNOWN_KEYS),
        key=lambda k: (where.lines.get(k, 0), k),
    )
    if unknown:
        raise ConfigError(f"{where.at(unknown[0])}{_unsupported(unknown)}")
    props = dict(properties)
    options: dict[str, Any] = {}
    if "bootstrap.servers" in props:
        options["hosts"] = props.pop("bootstrap.servers")
    if "client.id" in props:
        options["clientId"] = props.pop("client.id")
    if "request.timeout.ms" in props:
        key = "request.timeout.ms"
        options["timeout"] = _int(props.pop(key), where.at(key) + key)
    protocol = props.pop("security.protocol", "PLAINTEXT").upper()
    if protocol not in _SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where.at('security.protocol')}security.protocol must be one of "
            f"{', '.join(_SECURITY_PROTOCOLS)}"
        )
    tls_keys = {k: props.pop(k) for k in list(props) if k.startswith("ssl.")}
    sasl_keys = {k: props.pop(k) for k in list(props) if k.startswith("sasl.")}
    if protocol in ("SSL", "SASL_SSL"):
        options["tls"] = _tls(tls_keys, where)
    elif tls_keys:
        raise ConfigError(
            f"{where.at(min(tls_keys))}ssl.* properties need security.protocol SSL or "
            f"SASL_SSL, not {protocol}"
        )
    if protocol.startswith("SASL_"):
        options["sasl"] = _sasl(sasl_keys, where, options.get("hosts", ""))
    elif sasl_keys:
        raise ConfigError(
            f"{where.at(min(sasl_keys))}sasl.* properties need a SASL security.protocol, "
            f"not {protocol}"
        )
    missing = [k for k in options if k not in inspect.signature(KafkaClient).parameters]
    if missing:
        raise ConfigError(f"this afkak's KafkaClient has no {'/'.join(missing)} option")
    return options


def _unsupported(keys: list[str]) -> str:
    """``unsupported property 'K'`` (did you mean ...?), and how many more there are."""
    key = keys[0]
    meant = _LIBRDKAFKA_NAMES.get(key) or next(
        iter(difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.75)), None
    )
    text = f"unsupported property {key!r}"
    if meant is not None:
        text += f" (did you mean {meant}?)"
    if len(keys) > 1:
        text += f", and {len(keys) - 1} more: {', '.join(keys[1:])}"
    return text


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


def _tls(keys: dict[str, str], where: Properties) -> Any:
    cert, key = keys.get("ssl.certificate.location"), keys.get("ssl.key.location")
    if (cert is None) != (key is None):
        given = "ssl.certificate.location" if cert is not None else "ssl.key.location"
        raise ConfigError(
            f"{where.at(given)}ssl.certificate.location and ssl.key.location go together"
        )
    verify = keys.get("ssl.endpoint.identification.algorithm", "https").lower()
    truststore, keystore = _stores(keys, where)
    for store, pem_key in ((truststore, "ssl.ca.location"), (keystore, "ssl.certificate.location")):
        if store is not None and keys.get(pem_key):
            raise ConfigError(
                f"{where.at(pem_key)}{pem_key} and a {type(store).__name__} exclude each other"
            )
    try:
        return _feature("TLS")(
            trust_root=truststore or keys.get("ssl.ca.location"),
            client_certificate=keystore or ((cert, key) if cert else None),
            verify_hostname=verify == "https",
        )
    except ValueError as e:  # a file that is missing or unreadable: name the key's line
        file_keys = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
        culprit = next((k for k in file_keys if keys.get(k) and keys[k] in str(e)), None)
        prefix = where.at(culprit) if culprit else where.at("security.protocol")
        raise ConfigError(f"{prefix}{e}") from None


def _sasl(keys: dict[str, str], where: Properties, hosts: str) -> Any:
    mechanism = keys.pop("sasl.mechanism", "PLAIN").upper()
    if mechanism == "OAUTHBEARER":
        return _oauthbearer(keys, where, hosts)
    if mechanism == "GSSAPI":
        return _gssapi(keys, where)
    kerberos = [k for k in _KERBEROS_KEYS if k in keys]
    if kerberos:
        raise ConfigError(f"{where.at(kerberos[0])}{kerberos[0]} needs sasl.mechanism=GSSAPI")
    if mechanism not in _SASL_MECHANISMS:
        raise ConfigError(
            f"{where.at('sasl.mechanism')}sasl.mechanism must be one of "
            f"{', '.join([*_SASL_MECHANISMS, 'OAUTHBEARER', 'GSSAPI'])}"
        )
    oauth = sorted(k for k in keys if k in OAUTH_KEYS)
    if oauth:
        raise ConfigError(f"{where.at(oauth[0])}{oauth[0]} needs sasl.mechanism=OAUTHBEARER")
    username, password = keys.pop("sasl.username", None), keys.pop("sasl.password", None)
    jaas = keys.pop("sasl.jaas.config", None)
    if jaas is not None:
        found = dict(_JAAS_OPTION.findall(jaas))
        username = found.get("username", username)
        password = found.get("password", password)
    if username is None or password is None:
        raise ConfigError(
            f"{where.at('security.protocol')}SASL needs sasl.username and sasl.password "
            "(or sasl.jaas.config)"
        )
    return _feature(_SASL_MECHANISMS[mechanism])(username, password)


def _oauthbearer(keys: dict[str, str], where: Properties, hosts: str) -> Any:
    """OAUTHBEARER from OIDC client credentials or AWS MSK IAM (:mod:`._config_oauth`)."""
    jaas = keys.pop("sasl.jaas.config", None)
    for key in ("sasl.username", "sasl.password"):
        if key in keys:
            raise ConfigError(f"{where.at(key)}{key} is not used by OAUTHBEARER")
    module = jaas.split(None, 1)[0] if jaas and jaas.strip() else None
    options = dict(_JAAS_OPTION.findall(jaas or ""))
    try:
        return oauthbearer(keys, module, options, hosts, where, ConfigError)
    except ImportError as e:
        raise ConfigError(f"{where.at('sasl.mechanism')}{e}") from None


def _gssapi(keys: dict[str, str], where: Properties) -> Any:
    """GSSAPI from Java's ``Krb5LoginModule`` options in ``sasl.jaas.config``."""
    options: dict[str, Any] = {"service_name": keys.pop("sasl.kerberos.service.name", "kafka")}
    jaas = keys.pop("sasl.jaas.config", "")
    found = {name: quoted or bare for name, quoted, bare in _JAAS_ANY_OPTION.findall(jaas)}
    at = where.at("sasl.jaas.config")
    if jaas and "Krb5LoginModule" not in jaas:
        raise ConfigError(
            f"{at}sasl.mechanism=GSSAPI needs Java's Krb5LoginModule in sasl.jaas.config"
        )
    if found.get("useKeyTab", "false").lower() != "true":
        found.pop("keyTab", None)
    elif "keyTab" not in found:
        raise ConfigError(f'{at}useKeyTab=true needs keyTab="PATH"')
    options |= {keyword: found[name] for name, keyword in _KRB5_OPTIONS.items() if name in found}
    extra = sorted(k for k in keys if k != "sasl.mechanism")
    if extra:
        raise ConfigError(f"{where.at(extra[0])}{extra[0]} does not apply to GSSAPI")
    try:
        return _feature("GSSAPI")(**options)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{at}{e}") from None
    except ImportError as e:
        raise ConfigError(str(e)) from None


def _stores(keys: dict[str, str], where: Properties) -> tuple[Any, Any]:
    """The TrustStore and KeyStore the ``ssl.truststore.*``/``ssl.keystore.*`` keys make."""
    made: list[Any] = []
    for table, feature in ((_STORE_KEYS, "TrustStore"), (_KEYSTORE_KEYS, "KeyStore")):
        given = {keyword: keys[k] for k, keyword in table.items() if k in keys}
        if not any(k in given for k in ("location", "certificates", "key", "certificate_chain")):
            stray = [k for k in table if k in keys]
            if stray:
                raise ConfigError(f"{where.at(stray[0])}{stray[0]} needs its store's location")
            made.append(None)
            continue
        try:
            made.append(_feature(feature)(**given))
        except ValueError as e:  # a wrong password, a missing file...: name the store's line
            first = next(k for k in table if k in keys)
            raise ConfigError(f"{where.at(first)}{e}") from None
    return made[0], made[1]
