"""The consumer protocol's JoinGroup metadata and SyncGroup assignment payloads.

Kafka's consumers put a ConsumerProtocolSubscription in their JoinGroup
protocol metadata and get a ConsumerProtocolAssignment back from SyncGroup.
Both are "versioned payloads": an int16 version, then the body at that
version.  As Kafka's ``ConsumerProtocol``, a newer version than we know is
read as the newest we know and trailing bytes are ignored, so members running
newer clients stay readable.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import attrs

from afkak._errors import DecodeError
from afkak.common import TopicAndPartition
from afkak.protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription

__all__ = [
    "ASSIGNMENT_VERSION",
    "PROTOCOL_TYPE",
    "SUBSCRIPTION_VERSION",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

_VERSION = struct.Struct(">h")

#: The JoinGroup protocol type of Kafka's consumers.
PROTOCOL_TYPE = "consumer"

#: What afkak writes: v3 subscriptions (owned partitions, generation, rack) and
#: v3 assignments, as Kafka 4's Java consumer.
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


@attrs.frozen
class Subscription:
    """A member's JoinGroup metadata: what it wants and, for cooperative rebalancing, owns.

    ``generation_id`` is the generation in which the member got ``owned``
    (-1 if unknown); the sticky assignor uses it to settle conflicting claims.
    """

    topics: tuple[str, ...]
    owned: tuple[TopicAndPartition, ...] = ()
    generation_id: int = -1
    user_data: bytes | None = None
    rack_id: str | None = None


def _grouped(partitions: Iterable[TopicAndPartition], struct_cls: Any) -> list[Any]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [struct_cls(topic=t, partitions=sorted(ps)) for t, ps in sorted(by_topic.items())]


def _flat(entries: Iterable[Any]) -> tuple[TopicAndPartition, ...]:
    return tuple(TopicAndPartition(e.topic, p) for e in entries for p in e.partitions)


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    msg = ConsumerProtocolSubscription(
        topics=sorted(sub.topics),
        user_data=sub.user_data,
        owned_partitions=_grouped(sub.owned, ConsumerProtocolSubscription.TopicPartition),
        generation_id=sub.generation_id,
        rack_id=sub.rack_id,
    )
    return _VERSION.pack(version) + msg.encode(version)


def decode_subscription(data: bytes) -> Subscription:
    """Read a member's JoinGroup metadata; raise DecodeError if malformed."""
    msg = _decode(ConsumerProtocolSubscription, data)
    return Subscription(
        topics=tuple(msg.topics),
        owned=_flat(msg.owned_partitions),
        generation_id=msg.generation_id,
        user_data=msg.user_data,
        rack_id=msg.rack_id,
    )


def encode_assignment(
    partitions: Iterable[TopicAndPartition],
    user_data: bytes | None = None,
    version: int = ASSIGNMENT_VERSION,
) -> bytes:
    msg = ConsumerProtocolAssignment(
        assigned_partitions=_grouped(partitions, ConsumerProtocolAssignment.TopicPartition),
        user_data=user_data,
    )
    return _VERSION.pack(version) + msg.encode(version)


def decode_assignment(data: bytes) -> tuple[TopicAndPartition, ...]:
    """The partitions of a SyncGroup assignment (empty bytes: none); DecodeError if malformed."""
    if not data:
        return ()
    return _flat(_decode(ConsumerProtocolAssignment, data).assigned_partitions)


def _decode(cls: Any, data: bytes) -> Any:
    if len(data) < 2:
        raise DecodeError(f"{cls.__name__} shorter than its version", offset=0)
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise DecodeError(f"{cls.__name__} has negative version {version}", offset=0)
    version = min(version, cls.MAX_VERSION)
    msg, _ = cls._decode_from(memoryview(data), 2, version)
    return msg
