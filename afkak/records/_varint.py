"""Zigzag varints of record batch v2, with lookup tables for the hot paths.

Encoding and decoding records is done mostly by table lookups so that the
per-record work stays in C (``map``, ``bytes.join``, list indexing): the
tables hold the encodings of the small non-negative numbers that lengths,
offset deltas and timestamp deltas almost always are.
"""

from __future__ import annotations

from afkak._errors import DecodeError

#: Numbers below this use the tables; larger ones take the slow paths.
TABLE_LIMIT = 1 << 14


def encode_zigzag(n: int) -> bytes:
    """Encode a signed 64-bit integer as a zigzag varint."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def decode_zigzag(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode the zigzag varint at *pos*; return it and the position after it."""
    result = shift = 0
    while shift < 70:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise DecodeError("varint longer than 10 bytes", offset=pos)


def decode_length(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a length varint that may be -1 (null) but no other negative value."""
    n, pos = decode_zigzag(buf, pos)
    if n < -1:
        raise DecodeError(f"negative length {n}", offset=pos)
    return n, pos


def zigzag_size(n: int) -> int:
    """Size in bytes of *n* as a zigzag varint."""
    return len(ENC[n]) if 0 <= n < TABLE_LIMIT else len(encode_zigzag(n))


#: ENC[n]: zigzag varint of n, for 0 <= n < TABLE_LIMIT.
#: Built by byte arithmetic (zigzag of n >= 0 is 2n: one byte below 64, two below
#: 8192, three below 16384) rather than by calling encode_zigzag 16,384 times,
#: which was a tenth of afkak's import time.
ENC = (
    [bytes((u,)) for u in range(0, 128, 2)]
    + [bytes(((u & 0x7F) | 0x80, u >> 7)) for u in range(128, 1 << 14, 2)]
    + [
        bytes(((u & 0x7F) | 0x80, ((u >> 7) & 0x7F) | 0x80, u >> 14))
        for u in range(1 << 14, 1 << 15, 2)
    ]
)
#: ENC0[n]: a zero byte then ENC[n] (a zero field, e.g. attributes, followed by n).
ENC0 = [b"\x00" + e for e in ENC]
#: ATTR_TS0_ENC[n]: attributes 0, timestamp delta 0, then ENC[n] (an offset delta).
ATTR_TS0_ENC = [b"\x00\x00" + e for e in ENC]
#: NULL_ENC[n]: a null key (-1), then ENC[n] (a value length).
NULL_ENC = [b"\x01" + e for e in ENC]
#: SIZE[n]: len(ENC[n]).
SIZE = [len(e) for e in ENC]
#: FIELD[n]: the size of a length-prefixed field of n bytes, n + len(ENC[n]).
FIELD = [n + len(e) for n, e in enumerate(ENC)]

# Decoding: a varint byte b < 0x80 is a whole varint, DEC1[b] its value;
# two bytes b0 >= 0x80, b1 < 0x80 decode as DEC2[b0 + (b1 << 7)].
_LIMIT = 1 << 62  # a negative length maps to this, so that slicing runs past the end
DEC1 = [(b >> 1) ^ -(b & 1) for b in range(128)]
DEC2 = [0] * 128 + [((u - 128) >> 1) ^ -((u - 128) & 1) for u in range(128, 128 * 129)]
#: Like DEC1/DEC2 for lengths: -1 stays, other negatives become a huge length
#: (which makes the record overrun its end and fail the consistency check).
LEN1 = [n if n >= -1 else _LIMIT for n in DEC1]
LEN2 = [n if n >= -1 else _LIMIT for n in DEC2]
