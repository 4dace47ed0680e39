"""afkak's request, response and message value types.

They are named tuples with afkak's historical field names and order, so code
that indexes or unpacks them keeps working.  :class:`Message` is a 4-tuple
that also carries a timestamp and headers as keyword-only attributes.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

ProduceRequest = namedtuple("ProduceRequest", ["topic", "partition", "messages"])
ProduceResponse = namedtuple("ProduceResponse", ["topic", "partition", "error", "offset"])
FetchRequest = namedtuple("FetchRequest", ["topic", "partition", "offset", "max_bytes"])
FetchResponse = namedtuple(
    "FetchResponse", ["topic", "partition", "error", "highwaterMark", "messages"]
)
OffsetRequest = namedtuple("OffsetRequest", ["topic", "partition", "time", "max_offsets"])
OffsetResponse = namedtuple("OffsetResponse", ["topic", "partition", "error", "offsets"])
OffsetCommitRequest = namedtuple(
    "OffsetCommitRequest", ["topic", "partition", "offset", "timestamp", "metadata"]
)
OffsetCommitResponse = namedtuple("OffsetCommitResponse", ["topic", "partition", "error"])
OffsetFetchRequest = namedtuple("OffsetFetchRequest", ["topic", "partition"])
OffsetFetchResponse = namedtuple(
    "OffsetFetchResponse", ["topic", "partition", "offset", "metadata", "error"]
)
ConsumerMetadataResponse = namedtuple(
    "ConsumerMetadataResponse", ["error", "node_id", "host", "port"]
)
BrokerMetadata = namedtuple("BrokerMetadata", ["node_id", "host", "port"])
PartitionMetadata = namedtuple(
    "PartitionMetadata",
    ["topic", "partition", "partition_error_code", "leader", "replicas", "isr"],
)
TopicMetadata = namedtuple("TopicMetadata", ["topic", "topic_error_code", "partition_metadata"])
TopicAndPartition = namedtuple("TopicAndPartition", ["topic", "partition"])
OffsetAndMessage = namedtuple("OffsetAndMessage", ["offset", "message"])
SourcedMessage = namedtuple("SourcedMessage", ["topic", "partition", "offset", "message"])
SendRequest = namedtuple("SendRequest", ["topic", "key", "messages", "deferred"])

_MessageFields = namedtuple("_MessageFields", ["magic", "attributes", "key", "value"])


class Message(_MessageFields):
    """A Kafka message: a 4-tuple ``(magic, attributes, key, value)``.

    :ivar int magic: Message format version.
    :ivar int attributes: Compression flags.
    :ivar key: Message key (``bytes``), or ``None`` when the message lacks a
        key.  The key is required on a compacted topic.
    :ivar value: Message value (``bytes``), or ``None`` for a tombstone,
        a.k.a. null message.
    :ivar timestamp: Keyword-only.  Timestamp in milliseconds since the epoch,
        or ``None`` when unset (the producer stamps the current time).
    :ivar headers: Keyword-only.  Record headers, a tuple of
        ``(str, bytes | None)`` pairs, ``()`` by default.

    ``timestamp`` and ``headers`` are not tuple items, so unpacking, indexing
    and ``len()`` see the four classic fields.  Equality: two ``Message``
    objects are equal when all six fields are; a ``Message`` and a plain
    tuple (or another tuple type) compare as tuples, on the four classic
    fields, as they did in afkak 21.  The hash covers the four classic fields.
    """

    # Defaults on the class keep the common case (no timestamp, no headers)
    # from allocating an instance dict.
    timestamp: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()

    def __new__(
        cls,
        magic: int,
        attributes: int,
        key: bytes | None,
        value: bytes | None,
        *,
        timestamp: int | None = None,
        headers: tuple[tuple[str, bytes | None], ...] = (),
    ) -> Message:
        self = tuple.__new__(cls, (magic, attributes, key, value))
        if timestamp is not None:
            self.timestamp = timestamp
        if headers:
            self.headers = tuple(headers)
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Message):
            return (
                tuple.__eq__(self, other)
                and self.timestamp == other.timestamp
                and self.headers == other.headers
            )
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        extras = ""
        if self.timestamp is not None:
            extras += f", timestamp={self.timestamp!r}"
        if self.headers:
            extras += f", headers={self.headers!r}"
        return (
            f"Message(magic={self.magic!r}, attributes={self.attributes!r}, "
            f"key={self.key!r}, value={self.value!r}{extras})"
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _rebuild_message, (*self, self.timestamp, self.headers)

    def _replace(self, **changes: Any) -> Message:
        fields = {name: changes.pop(name, getattr(self, name)) for name in self._fields}
        timestamp = changes.pop("timestamp", self.timestamp)
        headers = changes.pop("headers", self.headers)
        if changes:
            raise ValueError(f"Got unexpected field names: {sorted(changes)!r}")
        return Message(**fields, timestamp=timestamp, headers=headers)


def _rebuild_message(
    magic: int,
    attributes: int,
    key: bytes | None,
    value: bytes | None,
    timestamp: int | None,
    headers: tuple[tuple[str, bytes | None], ...],
) -> Message:
    """Unpickle a :class:`Message` with its keyword-only extras."""
    return Message(magic, attributes, key, value, timestamp=timestamp, headers=headers)
