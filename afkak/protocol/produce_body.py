"""The body of a Produce request, written without the generated encoder.

A producer awaiting each send (request-reply services) makes one Produce
request per record.  Through the generated encoder that request is four
attrs objects (the request, a topic, a partition, the header) and a call per
field; its layout is fixed once the batches are encoded, so
:func:`produce_body` writes it straight from them, the same bytes as
``ProduceRequest(...).encode(version)`` at every version (a hypothesis test
compares them), and :func:`~afkak.protocol.header.encode_request_body` frames
it.  A topic's name (or id) field is encoded once per topic.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from uuid import UUID

from afkak._errors import EncodeError
from afkak.protocol._primitives import compact_nstring, compact_string, nstring, string, uvarint

__all__ = ["produce_body"]

#: The first flexible (compact, tagged) version.
FLEXIBLE_VERSION = 9
#: The first version naming topics by id.
TOPIC_ID_VERSION = 13

_ACKS_TIMEOUT = struct.Struct(">hi")
_INT32 = struct.Struct(">i")
_INT32_PAIR = struct.Struct(">ii")

#: (name, topic id, ((partition, records), ...)) per topic.
Topics = Sequence[tuple[str, UUID, Sequence[tuple[int, bytes]]]]


def produce_body(
    version: int, transactional_id: str | None, acks: int, timeout_ms: int, topics: Topics
) -> bytes:
    """The Produce request body (no header, no size prefix) at *version* (3 to 13).

    :raises EncodeError: *acks*, *timeout_ms* or a partition out of its field's
        range.
    """
    try:
        if version < FLEXIBLE_VERSION:
            return _classic_body(transactional_id, acks, timeout_ms, topics)
        return _flexible_body(
            version >= TOPIC_ID_VERSION, transactional_id, acks, timeout_ms, topics
        )
    except struct.error as error:
        raise EncodeError(f"ProduceRequest v{version}: {error}") from None


def _classic_body(
    transactional_id: str | None, acks: int, timeout_ms: int, topics: Topics
) -> bytes:
    parts = [
        nstring(transactional_id),
        _ACKS_TIMEOUT.pack(acks, timeout_ms),
        _INT32.pack(len(topics)),
    ]
    append = parts.append
    for name, _, partitions in topics:
        append(_name(name))
        append(_INT32.pack(len(partitions)))
        for index, records in partitions:
            append(_INT32_PAIR.pack(index, len(records)))
            append(records)
    return b"".join(parts)


def _flexible_body(
    by_id: bool, transactional_id: str | None, acks: int, timeout_ms: int, topics: Topics
) -> bytes:
    parts = [
        compact_nstring(transactional_id),
        _ACKS_TIMEOUT.pack(acks, timeout_ms),
        uvarint(len(topics) + 1),
    ]
    append = parts.append
    for name, topic_id, partitions in topics:
        append(topic_id.bytes if by_id else _compact_name(name))
        append(uvarint(len(partitions) + 1))
        for index, records in partitions:
            append(_INT32.pack(index))
            append(uvarint(len(records) + 1))
            append(records)
            append(b"\x00")  # the partition's tagged fields
        append(b"\x00")  # the topic's
    append(b"\x00")  # the request's
    return b"".join(parts)


@functools.lru_cache(maxsize=1024)
def _name(name: str) -> bytes:
    return string(name)


@functools.lru_cache(maxsize=1024)
def _compact_name(name: str) -> bytes:
    return compact_string(name)
