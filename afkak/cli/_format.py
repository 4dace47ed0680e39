"""kcat-style format strings for consumed records (``-f``).

``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key, ``%s`` value,
``%K`` key length, ``%S`` value length (-1 for null), ``%T`` timestamp (ms),
``%h`` headers (``name=value`` pairs joined by ``,``), ``%%`` a percent
sign; ``\\n``, ``\\t``, ``\\r``, ``\\0`` and ``\\\\`` escapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_TOKEN = re.compile(r"%.|\\.|[^%\\]+|[%\\]", re.DOTALL)
_ESCAPES = {"\\n": b"\n", "\\t": b"\t", "\\r": b"\r", "\\0": b"\0", "\\\\": b"\\"}


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def _headers(message: Any) -> bytes:
    return b",".join(
        name.encode() + b"=" + (value if value is not None else b"")
        for name, value in message.message.headers
    )


_FIELDS: dict[str, Callable[[Any], bytes]] = {
    "%t": lambda m: m.topic.encode(),
    "%p": lambda m: str(m.partition).encode(),
    "%o": lambda m: str(m.offset).encode(),
    "%k": lambda m: m.message.key or b"",
    "%s": lambda m: m.message.value or b"",
    "%K": lambda m: _length(m.message.key),
    "%S": lambda m: _length(m.message.value),
    "%T": lambda m: str(m.message.timestamp if m.message.timestamp is not None else -1).encode(),
    "%h": _headers,
}


def compile_format(fmt: str) -> Callable[[Any], bytes]:
    """A function rendering a SourcedMessage as *fmt* says; ValueError for a bad token."""
    parts: list[Callable[[Any], bytes]] = []
    for token in _TOKEN.findall(fmt):
        if token in _FIELDS:
            parts.append(_FIELDS[token])
        elif token == "%%":
            parts.append(_constant(b"%"))
        elif token in _ESCAPES:
            parts.append(_constant(_ESCAPES[token]))
        elif token[0] in "%\\" and len(token) == 2:
            raise ValueError(f"unknown format token {token!r}")
        elif token in ("%", "\\"):
            raise ValueError(f"format ends with a lone {token!r}")
        else:
            parts.append(_constant(token.encode()))
    return lambda m: b"".join(part(m) for part in parts)


def _constant(data: bytes) -> Callable[[Any], bytes]:
    return lambda m: data


def record_json(message: Any) -> dict[str, Any]:
    """A consumed record as JSON-ready values (bytes as UTF-8, replacing bad bytes)."""

    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8", "replace")

    return {
        "topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "timestamp": message.message.timestamp,
        "key": text(message.message.key),
        "value": text(message.message.value),
        "headers": [[n, text(v)] for n, v in message.message.headers],
    }


def _properties(pairs: list[str], known: tuple[str, ...]) -> dict[str, str]:
    """``--property NAME=VALUE`` arguments (Kafka's console tools'), only *known* names."""
    found = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in known:
            raise ValueError(f"--property takes one of {', '.join(known)} =VALUE, not {pair!r}")
        found[name] = value
    return found


def _true(properties: dict[str, str], name: str, default: bool = False) -> bool:
    value = properties.get(name)
    return default if value is None else value.strip().lower() == "true"


def _literal(text: str) -> str:
    """*text* in a format string, printed as is."""
    return text.replace("%", "%%").replace("\\", "\\\\")


CONSUMER_PROPERTIES = (
    "print.key",
    "key.separator",
    "print.timestamp",
    "print.partition",
    "print.offset",
    "print.value",
)


def console_consumer_format(pairs: list[str]) -> str | None:
    """The format kafka-console-consumer's ``--property`` printing settings amount to
    (None: none given): timestamp, partition, offset, key and value, each followed by
    ``key.separator`` (a tab) as Kafka's DefaultMessageFormatter writes them."""
    if not pairs:
        return None
    p = _properties(pairs, CONSUMER_PROPERTIES)
    separator = _literal(p.get("key.separator", "\t"))
    parts = [
        field
        for field, shown in (
            ("CreateTime:%T", _true(p, "print.timestamp")),
            ("Partition:%p", _true(p, "print.partition")),
            ("Offset:%o", _true(p, "print.offset")),
            ("%k", _true(p, "print.key")),
            ("%s", _true(p, "print.value", default=True)),
        )
        if shown
    ]
    return separator.join(parts) + "\\n"


def console_producer_separator(pairs: list[str]) -> str | None:
    """The key separator kafka-console-producer's ``parse.key=true`` asks for (None: off)."""
    p = _properties(pairs, ("parse.key", "key.separator"))
    return p.get("key.separator", "\t") if _true(p, "parse.key") else None
