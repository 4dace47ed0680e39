"""Parse the bootstrap ``hosts`` argument into ``(host, port)`` pairs.

Validation happens here, in the constructor's call stack, so a typo fails with
:exc:`TypeError` or :exc:`ValueError` before any connection is attempted.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

DEFAULT_PORT = 9092

HostPort = tuple[str, int]

#: A listener's security protocol before the address (``SSL://host:9093``): ignored, as
#: Java's client does (the connection's security comes from its own settings).
_PROTOCOL_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_+.-]*://")


def parse_hosts(hosts: str | Iterable[str | tuple[str, int]]) -> tuple[HostPort, ...]:
    """Normalize *hosts* to a tuple of unique ``(host, port)`` pairs, in the given order.

    *hosts* is a ``"host[:port][,host[:port]...]"`` string, or an iterable of
    ``"host[:port]"`` strings and ``(host, port)`` tuples.  IPv6 literals are
    written in brackets when a port follows (``"[::1]:9092"``); a bare IPv6
    address (``"::1"``) takes the default port 9092, as does any host given
    without a port.  A ``PROTOCOL://`` prefix (``PLAINTEXT://host:9092``, as in a
    broker's listeners) is tolerated and ignored, as by Java's client.
    """
    if isinstance(hosts, str):
        items: list[str | tuple[str, int]] = [*hosts.split(",")]
    elif isinstance(hosts, (bytes, bytearray)) or not isinstance(hosts, Iterable):
        raise TypeError(f"hosts must be a str or an iterable of str or (host, port), not {hosts!r}")
    else:
        items = list(hosts)
    result: dict[HostPort, None] = {}
    for item in items:
        result[_parse_one(item)] = None
    if not result:
        raise ValueError("hosts must name at least one broker")
    return tuple(result)


def format_host_port(host: str, port: int) -> str:
    """``host:port``, with IPv6 literals in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _parse_one(item: object) -> HostPort:
    if isinstance(item, str):
        return _parse_string(item)
    if isinstance(item, tuple) and len(item) == 2:
        host, port = item
        if not isinstance(host, str):
            raise TypeError(f"host must be a str, not {host!r}")
        host = host.strip()
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return _checked_host(host, item), _checked_port(port, item)
    raise TypeError(f"each host must be a 'host[:port]' str or a (host, port) tuple, not {item!r}")


def _parse_string(item: str) -> HostPort:
    text = item.strip()
    prefix = _PROTOCOL_PREFIX.match(text)
    if prefix:
        text = text[prefix.end() :]
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep:
            raise ValueError(f"unclosed '[' in host {item!r}")
        if rest and not rest.startswith(":"):
            raise ValueError(f"unexpected text after ']' in host {item!r}")
        _require_ipv6(host, item)
        port_text = rest[1:] if rest else None
    elif text.count(":") > 1:
        _require_ipv6(text, item)
        host, port_text = text, None
    else:
        host, sep, port_text_or_empty = text.partition(":")
        port_text = port_text_or_empty if sep else None
    if port_text is None:
        port = DEFAULT_PORT
    else:
        port_text = port_text.strip()
        if not port_text.isascii() or not port_text.isdigit():
            raise ValueError(f"port must be a decimal number in host {item!r}")
        port = int(port_text)
    return _checked_host(host.strip(), item), _checked_port(port, item)


def _require_ipv6(host: str, item: object) -> None:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise ValueError(f"not an IPv6 address: {host!r} in {item!r}") from None


def _checked_host(host: str, item: object) -> str:
    if not host or any(c.isspace() for c in host) or "," in host:
        raise ValueError(f"invalid host name in {item!r}")
    return host


def _checked_port(port: object, item: object) -> int:
    if not isinstance(port, int) or isinstance(port, bool):
        raise TypeError(f"port must be an int, not {port!r} in {item!r}")
    if not 0 < port < 65536:
        raise ValueError(f"port out of range in {item!r}")
    return port
