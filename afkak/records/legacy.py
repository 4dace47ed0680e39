"""Legacy message sets (magic 0 and 1), which old brokers may still return.

Kafka 4.x accepts only record batch v2 on produce, so legacy sets are never
sent.  A compressed message wraps a whole inner message set; each message
found at the top level of a fetch becomes one :class:`RecordBatch`, decoded
eagerly (legacy data is rare, so it has no fast path).  afkak 21's
compressed wrapper messages are built (:func:`encode_message_set`) and
opened again (:func:`unwrap_message`) so that the client can write their
inner messages as records.
"""

from __future__ import annotations

import struct
import zlib

from afkak._errors import ChecksumError, DecodeError
from afkak.codec import CODEC_LZ4, CODEC_NONE, CODEC_ZSTD, decompress, decompress_lz4_legacy
from afkak.records.batch import RecordBatch
from afkak.records.record import Record, TimestampType

__all__ = ["encode_message_set", "read_legacy_message", "unwrap_message"]

_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAGIC0_HEAD = struct.Struct(">bb")  # magic, attributes
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_LOG_OVERHEAD = 12  # offset and size: the part of a message that size does not count

#: A legacy message: (offset, magic, attributes, timestamp, key, value).
_Message = tuple[int, int, int, int, "bytes | None", "bytes | None"]


def _parse(buf: bytes, pos: int, check_crc: bool) -> tuple[_Message, int]:
    """Parse the complete message at *pos*; return it and the position after it."""
    offset, size, crc, magic, attributes = _HEAD.unpack_from(buf, pos)
    end = pos + _LOG_OVERHEAD + size
    if size < 14 or end > len(buf):
        raise DecodeError(f"bad message size {size}", offset=pos)
    if check_crc and zlib.crc32(memoryview(buf)[pos + 16 : end]) != crc:
        raise ChecksumError("legacy message CRC-32 mismatch", batch_offset=offset, offset=pos)
    p = pos + _HEAD.size
    if magic == 0:
        timestamp = -1
    elif magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, p)
        p += 8
    else:
        raise DecodeError(f"unknown magic {magic} in a message set", offset=pos)
    fields: list[bytes | None] = []
    for _ in range(2):
        if p + 4 > end:
            raise DecodeError("message shorter than its fields", offset=p)
        (n,) = _INT32.unpack_from(buf, p)
        p += 4
        if n == -1:
            fields.append(None)
            continue
        if n < 0 or p + n > end:
            raise DecodeError(f"bad key or value length {n}", offset=p)
        fields.append(buf[p : p + n])
        p += n
    if p != end:
        raise DecodeError("message longer than its fields", offset=p)
    return (offset, magic, attributes, timestamp, fields[0], fields[1]), end


def _unwrap(outer: _Message, check_crc: bool, max_size: int) -> list[_Message]:
    """The messages of a compressed wrapper, with absolute offsets."""
    offset, magic, attributes, _, _, value = outer
    codec = attributes & _CODEC_MASK
    if codec > CODEC_LZ4:
        raise DecodeError(f"unknown codec {codec} in legacy message at offset {offset}")
    if value is None:
        raise DecodeError(f"compressed message at offset {offset} has a null value")
    if codec == CODEC_LZ4 and magic == 0:
        data = decompress_lz4_legacy(value, max_size)
    else:
        data = decompress(codec, value, max_size)
    inner = []
    pos = 0
    while pos < len(data):
        if pos + 17 > len(data):
            raise DecodeError(f"truncated inner message in wrapper at offset {offset}")
        msg, pos = _parse(data, pos, check_crc)
        if msg[2] & _CODEC_MASK:
            raise DecodeError(f"nested compression in wrapper at offset {offset}")
        inner.append(msg)
    if not inner:
        raise DecodeError(f"compressed message at offset {offset} holds no messages")
    if magic > 0:  # inner offsets are relative; the wrapper has the last one's
        shift = offset - inner[-1][0]
        inner = [(m[0] + shift,) + m[1:] for m in inner]
    return inner


def encode_message_set(messages: list[tuple[int, int, bytes | None, bytes | None]]) -> bytes:
    """afkak 21's magic-0 message set of *messages*, ``(magic, attributes, key, value)`` tuples.

    Every message gets offset 0 (the broker assigned offsets); the magic and
    attributes given are ignored: inner messages are plain magic 0 messages.
    """
    out = []
    for _, _, key, value in messages:
        parts = [_MAGIC0_HEAD.pack(0, 0)]
        for field in (key, value):
            if field is None:
                parts.append(_INT32.pack(-1))
            else:
                parts.append(_INT32.pack(len(field)))
                parts.append(bytes(field))
        body = b"".join(parts)
        crc = zlib.crc32(body)
        out.append(struct.pack(">qiI", 0, len(body) + 4, crc))
        out.append(body)
    return b"".join(out)


def unwrap_message(
    magic: int, attributes: int, value: bytes | None, max_size: int
) -> list[tuple[bytes | None, bytes | None, int | None]]:
    """The ``(key, value, timestamp)`` of each inner message of a compressed wrapper.

    Raises :class:`DecodeError` when *value* is not a compressed message set.
    """
    if attributes & _CODEC_MASK == CODEC_ZSTD and value is not None:
        # Never on the legacy wire, but afkak's own wrappers may use zstd.
        value, attributes = decompress(CODEC_ZSTD, value, max_size), CODEC_NONE
    try:
        inner = _unwrap((0, magic, attributes, -1, None, value), True, max_size)
    except struct.error:
        raise DecodeError("truncated inner message in a compressed message") from None
    return [(m[4], m[5], m[3] if m[1] > 0 else None) for m in inner]


def read_legacy_message(buf: bytes, pos: int, check_crc: bool, max_size: int) -> RecordBatch:
    """Read the complete top-level legacy message at *pos* as a batch."""
    try:
        outer, end = _parse(buf, pos, check_crc)
    except struct.error:
        raise DecodeError("truncated legacy message", offset=pos) from None
    offset, magic, attributes, wrapper_ts, _, _ = outer
    codec = attributes & _CODEC_MASK
    try:
        messages = _unwrap(outer, check_crc, max_size) if codec != CODEC_NONE else [outer]
    except struct.error:
        raise DecodeError(f"truncated inner message in wrapper at offset {offset}") from None
    if magic == 0:
        tt = TimestampType.NO_TIMESTAMP
    elif attributes & _LOG_APPEND_TIME:
        tt = TimestampType.LOG_APPEND_TIME
    else:
        tt = TimestampType.CREATE_TIME
    override = wrapper_ts if tt == TimestampType.LOG_APPEND_TIME else None
    records = [
        Record(m[0], m[3] if override is None else override, tt, m[4], m[5]) for m in messages
    ]
    timestamps = [r[1] for r in records]
    return RecordBatch(
        base_offset=records[0][0],
        last_offset=records[-1][0],
        magic=magic,
        codec=codec,
        timestamp_type=tt,
        is_transactional=False,
        is_control=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        partition_leader_epoch=-1,
        base_timestamp=timestamps[0],
        max_timestamp=max(timestamps),
        record_count=len(records),
        size_in_bytes=end - pos,
        records=records,
    )
