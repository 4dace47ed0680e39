"""Argument checks shared by the client's public methods.

Each raises :exc:`TypeError` or :exc:`ValueError` synchronously, before any
request is built, so bad input never reaches a broker.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def topic_name(topic: object) -> str:
    """A legal Kafka topic name: 1-249 characters of ``[a-zA-Z0-9._-]``."""
    if not isinstance(topic, str):
        raise TypeError(f"topic name must be a str, not {topic!r}")
    if not _TOPIC_RE.match(topic) or topic in (".", ".."):
        raise ValueError(f"illegal topic name {topic!r}")
    return topic


def topic_list(topics: object) -> list[str]:
    """A non-empty list of legal topic names (one ``str`` is a list of one)."""
    if isinstance(topics, str):
        topics = [topics]
    if isinstance(topics, (bytes, bytearray)) or not isinstance(topics, Iterable):
        raise TypeError(f"topics must be a sequence of str, not {topics!r:.100}")
    names = [topic_name(t) for t in topics]
    if not names:
        raise ValueError("topics must not be empty")
    return names


def group_name(group: object) -> str:
    """A non-empty consumer group id."""
    if not isinstance(group, str):
        raise TypeError(f"consumer group must be a str, not {group!r}")
    if not group:
        raise ValueError("consumer group must not be empty")
    return group


def integer(name: str, value: object, low: int, high: int) -> int:
    """An ``int`` (not a ``bool``) within ``[low, high]``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be within [{low}, {high}], not {value!r}")
    return value


def one_of(name: str, value: object, choices: tuple[str, ...]) -> str:
    """A ``str`` among *choices*."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def number(name: str, value: object, low: float = 0.0) -> float:
    """A finite ``int`` or ``float`` (not a ``bool``) greater than ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not (math.isfinite(value) and value > low):
        raise ValueError(f"{name} must be finite and greater than {low}, not {value!r}")
    return value


def reactor_time(name: str, reactor: object) -> Any:
    """An IReactorTime provider (``callLater`` and ``seconds``), as a Clock or reactor is."""
    if not (
        callable(getattr(reactor, "callLater", None))
        and callable(getattr(reactor, "seconds", None))
    ):
        raise TypeError(
            f"{name} must provide IReactorTime (callLater, seconds), not {reactor!r:.100}"
        )
    return reactor


def kafka_client(client: object) -> Any:
    """A :class:`~afkak.client.KafkaClient` (or an object with its API and a reactor)."""
    if not callable(getattr(client, "load_metadata_for_topics", None)):
        raise TypeError(f"client must be a KafkaClient, not {client!r:.100}")
    reactor_time("client.reactor", getattr(client, "reactor", None))
    return client


def optional_callable(name: str, value: object) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, not {value!r}")
    return value


def payload_list(payloads: object, kind: type[Any]) -> Sequence[Any]:
    """A non-empty list of *kind* payloads with legal, distinct (topic, partition) pairs."""
    if payloads is None or isinstance(payloads, (str, bytes)) or not isinstance(payloads, Iterable):
        raise TypeError(f"payloads must be a sequence of {kind.__name__}, not {payloads!r}")
    items: list[Any] = list(payloads)
    if not items:
        raise ValueError("payloads must not be empty")
    seen = set()
    for payload in items:
        if not isinstance(payload, kind):
            raise TypeError(f"payloads must be {kind.__name__} instances, not {payload!r}")
        topic_name(payload.topic)
        integer("partition", payload.partition, 0, INT32_MAX)
        key = (payload.topic, payload.partition)
        if key in seen:
            raise ValueError(f"more than one payload for topic {key[0]!r} partition {key[1]}")
        seen.add(key)
    return items
