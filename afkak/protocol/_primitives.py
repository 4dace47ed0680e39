"""Wire primitives shared by the generated message codecs.

Encoders return ``bytes``; decoders take ``(mv, pos)`` (a ``memoryview`` and a
byte offset into it) and return ``(value, new_pos)``.  Every decoder raises
:class:`~afkak._errors.DecodeError` with the failing byte offset on malformed
input; callers add the API key and version.
"""

from __future__ import annotations

import struct
from uuid import UUID

from afkak._errors import DecodeError

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
ZERO_UUID = UUID(int=0)
_ZERO_UUID_BYTES = bytes(16)

# --- varints ---------------------------------------------------------------

_UVARINT_CACHE = tuple(bytes([i]) for i in range(128))


def uvarint(value: int) -> bytes:
    """Unsigned varint (LEB128) of a value in [0, 2**32)."""
    if value < 128:
        if value < 0:
            raise struct.error(f"unsigned varint out of range: {value}")
        return _UVARINT_CACHE[value]
    if value >> 32:
        raise struct.error(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(mv: memoryview, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint of at most 5 bytes (32 bits)."""
    try:
        b = mv[pos]
    except IndexError:
        raise DecodeError("truncated varint", offset=pos) from None
    if b < 0x80:
        return b, pos + 1
    start = pos
    result = b & 0x7F
    shift = 7
    end = len(mv)
    while True:
        pos += 1
        if pos >= end:
            raise DecodeError("truncated varint", offset=start)
        b = mv[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result >> 32:
                raise DecodeError("varint exceeds 32 bits", offset=start)
            return result, pos + 1
        shift += 7
        if shift > 28:
            raise DecodeError("varint longer than 5 bytes", offset=start)


def zigzag(value: int) -> int:
    """Map a signed 64-bit int to the unsigned zigzag form."""
    return (value << 1) ^ (value >> 63)


def unzigzag(value: int) -> int:
    """Inverse of :func:`zigzag`."""
    return (value >> 1) ^ -(value & 1)


# --- lengths ---------------------------------------------------------------


def compact_len(n: int | None) -> bytes:
    """Compact length prefix: unsigned varint ``n + 1``; ``None`` -> 0."""
    return _UVARINT_CACHE[0] if n is None else uvarint(n + 1)


def array_len(n: int | None) -> bytes:
    """Classic array length: int32, ``None`` -> -1."""
    return INT32.pack(-1 if n is None else n)


def read_array_len(mv: memoryview, pos: int, nullable: bool, min_size: int) -> tuple[int, int]:
    """Read an int32 array length (-1 for null) and bound it by the bytes left."""
    try:
        (n,) = INT32.unpack_from(mv, pos)
    except struct.error:
        raise DecodeError("truncated array length", offset=pos) from None
    return _check_count(mv, pos, n, nullable, min_size), pos + 4


def read_compact_array_len(
    mv: memoryview, pos: int, nullable: bool, min_size: int
) -> tuple[int, int]:
    """Read a compact array length (-1 for null) and bound it by the bytes left."""
    n, new_pos = read_uvarint(mv, pos)
    return _check_count(mv, pos, n - 1, nullable, min_size), new_pos


def _check_count(mv: memoryview, pos: int, n: int, nullable: bool, min_size: int) -> int:
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise DecodeError(f"invalid array length {n}", offset=pos)
    if n * min_size > len(mv) - pos:
        raise DecodeError(f"array length {n} runs past the end", offset=pos)
    return n


def _bad_length(mv: memoryview, at: int, n: int) -> DecodeError:
    if n < 0:
        return DecodeError(f"invalid length {n}", offset=at)
    return DecodeError(f"length {n} runs past the end", offset=at)


def _utf8(mv: memoryview, start: int, end: int, at: int) -> str:
    try:
        return str(mv[start:end], "utf-8")
    except UnicodeDecodeError:
        raise DecodeError("invalid UTF-8 in string", offset=at) from None


# The readers below may raise struct.error or IndexError on truncation; the
# generated decoders turn those into DecodeError at the field's offset.

# --- strings ---------------------------------------------------------------


def string(s: str) -> bytes:
    b = s.encode()
    return INT16.pack(len(b)) + b


def nstring(s: str | None) -> bytes:
    return b"\xff\xff" if s is None else string(s)


def compact_string(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_nstring(s: str | None) -> bytes:
    return b"\x00" if s is None else compact_string(s)


def read_string(mv: memoryview, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(mv, pos)
    end = pos + 2 + n
    if n < 0 or end > len(mv):
        raise _bad_length(mv, pos, n)
    return _utf8(mv, pos + 2, end, pos), end


def read_nstring(mv: memoryview, pos: int) -> tuple[str | None, int]:
    if INT16.unpack_from(mv, pos)[0] == -1:
        return None, pos + 2
    return read_string(mv, pos)


def read_compact_string(mv: memoryview, pos: int) -> tuple[str, int]:
    n = mv[pos]
    if n < 0x80:
        start = pos + 1
    else:
        n, start = read_uvarint(mv, pos)
    end = start + n - 1
    if n == 0 or end > len(mv):
        raise _bad_length(mv, pos, n - 1)
    return _utf8(mv, start, end, pos), end


def read_compact_nstring(mv: memoryview, pos: int) -> tuple[str | None, int]:
    if mv[pos] == 0:
        return None, pos + 1
    return read_compact_string(mv, pos)


# --- bytes / records -------------------------------------------------------


def bytes_(b: bytes) -> bytes:
    return INT32.pack(len(b)) + b


def nbytes(b: bytes | None) -> bytes:
    return b"\xff\xff\xff\xff" if b is None else INT32.pack(len(b)) + b


def compact_bytes(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


def compact_nbytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else uvarint(len(b) + 1) + b


def read_bytes(mv: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = INT32.unpack_from(mv, pos)
    end = pos + 4 + n
    if n < 0 or end > len(mv):
        raise _bad_length(mv, pos, n)
    return bytes(mv[pos + 4 : end]), end


def read_nbytes(mv: memoryview, pos: int) -> tuple[bytes | None, int]:
    if INT32.unpack_from(mv, pos)[0] == -1:
        return None, pos + 4
    return read_bytes(mv, pos)


def read_compact_bytes(mv: memoryview, pos: int) -> tuple[bytes, int]:
    n = mv[pos]
    if n < 0x80:
        start = pos + 1
    else:
        n, start = read_uvarint(mv, pos)
    end = start + n - 1
    if n == 0 or end > len(mv):
        raise _bad_length(mv, pos, n - 1)
    return bytes(mv[start:end]), end


def read_compact_nbytes(mv: memoryview, pos: int) -> tuple[bytes | None, int]:
    if mv[pos] == 0:
        return None, pos + 1
    return read_compact_bytes(mv, pos)


# --- uuid ------------------------------------------------------------------


def uuid_from(b: bytes) -> UUID:
    """UUID from 16 bytes, sharing the zero UUID instance."""
    return ZERO_UUID if b == _ZERO_UUID_BYTES else UUID(bytes=b)


# --- arrays of fixed-size primitives ---------------------------------------


def pack_array(code: str, values: list) -> bytes:
    """Pack a list of same-typed fixed-size primitives (struct ``code``)."""
    return struct.pack(f">{len(values)}{code}", *values)


def unpack_array(mv: memoryview, pos: int, n: int, code: str, size: int) -> tuple[list, int]:
    end = pos + n * size
    if end > len(mv):
        raise DecodeError("array runs past the end", offset=pos)
    return list(struct.unpack_from(f">{n}{code}", mv, pos)), end


# --- tagged fields ---------------------------------------------------------


def tagged_field(tag: int, payload: bytes) -> bytes:
    """One entry of a tagged-field section: tag, size, payload."""
    return uvarint(tag) + uvarint(len(payload)) + payload


def tagged_section(entries: list[bytes]) -> bytes:
    """A tagged-field section from entries already sorted by tag."""
    return uvarint(len(entries)) + b"".join(entries)


def read_tag(mv: memoryview, pos: int) -> tuple[int, int, int]:
    """Read a tag header; return ``(tag, payload_start, payload_end)``."""
    tag, pos = read_uvarint(mv, pos)
    at = pos
    size, pos = read_uvarint(mv, pos)
    end = pos + size
    if end > len(mv):
        raise DecodeError(f"tagged field {tag} runs past the end", offset=at)
    return tag, pos, end


def skip_tagged_fields(mv: memoryview, pos: int) -> int:
    """Skip a tagged-field section whose tags are all unknown."""
    n, pos = read_uvarint(mv, pos)
    for _ in range(n):
        _tag, _start, pos = read_tag(mv, pos)
    return pos


def check_tag_end(pos: int, end: int, tag: int) -> None:
    """A known tagged field must not read past its declared size."""
    if pos > end:
        raise DecodeError(f"tagged field {tag} overruns its size", offset=end)


def truncated(pos: int) -> DecodeError:
    return DecodeError("truncated input", offset=pos)
