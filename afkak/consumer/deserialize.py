"""Turning fetched keys and values into application objects (``key_deserializer`` /
``value_deserializer``, as aiokafka's), once per record, before the processor sees them.

A deserializer that must look something up first (a Schema Registry
deserializer meeting a schema id it has not seen) also has a ``prepare``
method (:class:`PreparingDeserializer`): the consumer gives it a fetched
batch's bytes before decoding the batch, and waits for the Deferred it may
return, without blocking the reactor and keeping the records' order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
from twisted.internet.defer import Deferred, DeferredList

from afkak.common import Message, SourcedMessage

__all__ = ["Deserializer", "Deserializing", "PreparingDeserializer", "checked", "deserializing"]

Deserializer = Callable[[bytes], Any]


@runtime_checkable
class PreparingDeserializer(Protocol):
    """A deserializer that looks up what a batch needs before decoding it."""

    def __call__(self, data: bytes) -> Any: ...

    def prepare(self, data: Sequence[bytes]) -> Deferred[None] | None:
        """Get ready to decode *data*: None when ready, else a Deferred that fires
        (and never fails) once ready."""


def checked(name: str, deserializer: object) -> Deserializer | None:
    if deserializer is None:
        return None
    if not callable(deserializer):
        raise TypeError(f"{name} must be callable or None, not {deserializer!r}")
    return deserializer


class Deserializing:
    """What makes fetched messages the application's.

    A null key or value (no key, a tombstone) stays None; the deserializer
    gets only bytes.  Timestamp and headers are kept.
    """

    def __init__(self, key: Deserializer | None, value: Deserializer | None) -> None:
        self._key = key
        self._value = value
        self._preparing = [
            (d, i) for i, d in enumerate((key, value)) if isinstance(d, PreparingDeserializer)
        ]

    def prepare(self, messages: list[SourcedMessage]) -> Deferred[Any] | None:
        """None when *messages* can be converted now, else a Deferred firing when they can."""
        return self.prepare_fields(lambda field: (m.message[2 + field] for m in messages))

    def prepare_fields(self, data: Callable[[int], Iterable[bytes | None]]) -> Deferred[Any] | None:
        """:meth:`prepare` for records of any shape: *data(0)* their keys, *data(1)* values."""
        waits = []
        for deserializer, field in self._preparing:
            wait = deserializer.prepare([d for d in data(field) if d is not None])
            if wait is not None:
                waits.append(wait)
        if not waits:
            return None
        return waits[0] if len(waits) == 1 else DeferredList(waits, consumeErrors=True)

    def __call__(self, messages: list[SourcedMessage]) -> list[SourcedMessage]:
        key, value = self._key, self._value
        new = tuple.__new__
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

    def evolved(self, records: list[Any]) -> list[Any]:
        """*records* (attrs classes with ``key`` and ``value`` fields) deserialized."""
        key, value = self._key, self._value
        out = []
        for r in records:
            k, v = r.key, r.value
            if key is not None and k is not None:
                k = key(k)
            if value is not None and v is not None:
                v = value(v)
            out.append(attrs.evolve(r, key=k, value=v))
        return out


def deserializing(key: Deserializer | None, value: Deserializer | None) -> Deserializing | None:
    """What makes fetched messages the application's (None: nothing to do)."""
    if key is None and value is None:
        return None
    return Deserializing(key, value)
