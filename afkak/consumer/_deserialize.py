"""Turning fetched keys and values into application objects (``key_deserializer`` /
``value_deserializer``, as aiokafka's), once per record, before the processor sees them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from afkak.common import Message, SourcedMessage

Deserializer = Callable[[bytes], Any]


def checked(name: str, deserializer: object) -> Deserializer | None:
    if deserializer is None:
        return None
    if not callable(deserializer):
        raise TypeError(f"{name} must be callable or None, not {deserializer!r}")
    return deserializer


def deserializing(
    key: Deserializer | None, value: Deserializer | None
) -> Callable[[list[SourcedMessage]], list[SourcedMessage]] | None:
    """What makes fetched messages the application's (None: nothing to do).

    A null key or value (no key, a tombstone) stays None; the deserializer
    gets only bytes.  Timestamp and headers are kept.
    """
    if key is None and value is None:
        return None
    new = tuple.__new__

    def convert(messages: list[SourcedMessage]) -> list[SourcedMessage]:
        out = []
        for m in messages:
            old = m.message
            k, v = old.key, old.value
            if key is not None and k is not None:
                k = key(k)
            if value is not None and v is not None:
                v = value(v)
            message: Any = new(Message, (old.magic, old.attributes, k, v))
            message.timestamp = old.timestamp
            if old.headers:
                message.headers = old.headers
            out.append(new(SourcedMessage, (m.topic, m.partition, m.offset, message)))
        return out

    return convert
