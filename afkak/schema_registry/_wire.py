"""The Confluent wire format: magic byte 0, the schema id (4 bytes, big-endian), the payload.

Protobuf payloads start with the message indexes: the path from the schema's
top-level messages to the record's (nested) message, as a count and indexes in
zigzag varints, ``[0]`` (the first message) written as the single byte 0.
"""

from __future__ import annotations

import struct

from ._errors import DeserializationError

MAGIC = 0
_HEADER = struct.Struct(">bI")
HEADER_SIZE = _HEADER.size


def frame(schema_id: int, payload: bytes) -> bytes:
    """*payload* framed with *schema_id*."""
    return _HEADER.pack(MAGIC, schema_id) + payload


def schema_id_of(data: bytes) -> int:
    """The schema id that framed *data* starts with (DeserializationError if not framed)."""
    if len(data) < HEADER_SIZE:
        raise DeserializationError(
            f"{len(data)} bytes are too short for the Confluent wire format (magic byte and"
            " 4-byte schema id)",
            data,
        )
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise DeserializationError(
            f"unknown magic byte {magic} (the Confluent wire format starts with {MAGIC})", data
        )
    return schema_id


def _zigzag_varint(n: int, out: bytearray) -> None:
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def message_indexes(indexes: list[int]) -> bytes:
    """*indexes* as the Protobuf payload's prefix."""
    if indexes == [0]:
        return b"\x00"
    out = bytearray()
    _zigzag_varint(len(indexes), out)
    for i in indexes:
        _zigzag_varint(i, out)
    return bytes(out)


def read_message_indexes(data: bytes, offset: int) -> tuple[list[int], int]:
    """The message indexes at *offset* of *data*, and the offset after them."""

    def varint(pos: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise DeserializationError("truncated Protobuf message indexes", data)
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), pos
            shift += 7

    count, offset = varint(offset)
    if count == 0:
        return [0], offset
    if count < 0 or count > len(data):
        raise DeserializationError(f"bad Protobuf message index count {count}", data)
    indexes = []
    for _ in range(count):
        i, offset = varint(offset)
        indexes.append(i)
    return indexes, offset
