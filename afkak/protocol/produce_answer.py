"""The answer to a Produce request for one partition, read without the general decoder.

A producer awaiting each send (request-reply services) gets one such answer
per record: it is the one-partition success shape of the flexible versions
(9 and later) nearly always, a fixed layout once the topic's name or id is
known.  :func:`one_partition_answer` reads that layout with one ``unpack``
and builds the same :class:`~afkak.protocol.messages.ProduceResponse` the
generated decoder does; anything else (another version, more entries,
record errors, an error message, tagged fields, a length that does not fit)
returns None for the general decoder, which also reports what is malformed.
"""

from __future__ import annotations

import struct
from uuid import UUID

from afkak.protocol._primitives import ZERO_UUID, uvarint
from afkak.protocol.messages.produce_response import (
    LeaderIdAndEpoch,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)

__all__ = ["one_partition_answer", "topic_entry"]

#: The first version with a flexible (compact, tagged) response.
FLEXIBLE_VERSION = 9
#: The first version naming topics by id.
TOPIC_ID_VERSION = 13

# After the response header v1 (correlation id, no tagged fields) and the
# topic's entry: the partition's index, error code, base offset, log append
# time, log start offset, no record errors, a null error message, no tagged
# fields (partition, topic), the throttle time, no tagged fields.
_PARTITION = struct.Struct(">ihqqqBBBBiB")


def topic_entry(version: int, name: str, topic_id: UUID | None) -> bytes | None:
    """The bytes from the responses array's length to the partitions array's length,
    for one topic of one partition at *version* (None: a version this module does not read)."""
    if version < FLEXIBLE_VERSION:
        return None
    if version >= TOPIC_ID_VERSION:
        if topic_id is None:
            return None
        return b"\x02" + topic_id.bytes + b"\x02"
    encoded = name.encode()
    return b"\x02" + uvarint(len(encoded) + 1) + encoded + b"\x02"


def one_partition_answer(
    frame: bytes, entry: bytes, version: int, name: str, topic_id: UUID | None, partition: int
) -> ProduceResponse | None:
    """*frame*'s ProduceResponse if it answers *partition* of the topic whose
    :func:`topic_entry` is *entry*, in the success shape; None otherwise."""
    start = 5 + len(entry)
    if len(frame) != start + _PARTITION.size or frame[4] != 0 or frame[5:start] != entry:
        return None
    (index, code, base, append_time, start_offset, batch_indexes, message, tags, topic_tags,
     throttle, last_tags) = _PARTITION.unpack_from(frame, start)  # fmt: skip
    # (batch_indexes: the record errors array's compact length, 1 when empty)
    if index != partition or batch_indexes != 1 or message or tags or topic_tags or last_tags:
        return None
    answer = PartitionProduceResponse(
        index, code, base, append_time, start_offset, [], None, LeaderIdAndEpoch()
    )
    if version >= TOPIC_ID_VERSION and topic_id is not None:
        topic = TopicProduceResponse("", topic_id, [answer])
    else:
        topic = TopicProduceResponse(name, ZERO_UUID, [answer])
    return ProduceResponse([topic], throttle, [])
