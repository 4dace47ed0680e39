"""Wire primitives shared by the generated message codecs.

Encoders return ``bytes``; decoders take ``(mv, pos)`` (a ``memoryview`` and a
byte offset into it) and return ``(value, new_pos)``.  Every decoder raises
:class:`~afkak._errors.DecodeError` with the failing byte offset on malformed
input; callers add the API key and version.
"""

from __future__ import annotations

import functools
import struct
from uuid import UUID, SafeUUID

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
        if b < 0x80:
            return b, pos + 1
        b2 = mv[pos + 1]
        if b2 < 0x80:  # lengths of 128 B .. 16 KiB
            return (b & 0x7F) | (b2 << 7), pos + 2
        result = (b & 0x7F) | ((b2 & 0x7F) << 7)
        for i in range(2, 5):
            b = mv[pos + i]
            result |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if result >> 32:
                    raise DecodeError("varint exceeds 32 bits", offset=pos)
                return result, pos + i + 1
    except IndexError:
        raise DecodeError("truncated varint", offset=pos) from None
    raise DecodeError("varint longer than 5 bytes", offset=pos)


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


def _bad_length(at: int, n: int) -> DecodeError:
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


def read_string(mv: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    """int16 length (-1 = null) and UTF-8 bytes."""
    (n,) = INT16.unpack_from(mv, pos)
    end = pos + 2 + n
    if n < 0 or end > len(mv):
        if n == -1 and nullable:
            return None, pos + 2
        raise _bad_length(pos, n)
    return _utf8(mv, pos + 2, end, pos), end


def read_compact_string(mv: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    """Unsigned varint length + 1 (0 = null) and UTF-8 bytes."""
    n = mv[pos]
    if n < 0x80:
        start = pos + 1
    else:
        n, start = read_uvarint(mv, pos)
    end = start + n - 1
    if n == 0 or end > len(mv):
        if n == 0 and nullable:
            return None, start
        raise _bad_length(pos, n - 1)
    return _utf8(mv, start, end, pos), end


# --- bytes / records -------------------------------------------------------


def read_bytes(mv: memoryview, pos: int, nullable: bool) -> tuple[bytes | None, int]:
    """int32 length (-1 = null) and the bytes, copied once."""
    view, end = read_records(mv, pos, nullable)
    return None if view is None else bytes(view), end


def read_compact_bytes(mv: memoryview, pos: int, nullable: bool) -> tuple[bytes | None, int]:
    """Unsigned varint length + 1 (0 = null) and the bytes, copied once."""
    view, end = read_compact_records(mv, pos, nullable)
    return None if view is None else bytes(view), end


def read_records(mv: memoryview, pos: int, nullable: bool) -> tuple[memoryview | None, int]:
    """A response's records: int32 length (-1 = null), then a view of them, not a copy.

    Fetched records are the bulk of a response, and the record reader slices
    what it keeps (keys, values) out of them anyway; the view keeps the
    response's buffer alive until the records are read.
    """
    (n,) = INT32.unpack_from(mv, pos)
    end = pos + 4 + n
    if n < 0 or end > len(mv):
        if n == -1 and nullable:
            return None, pos + 4
        raise _bad_length(pos, n)
    return mv[pos + 4 : end], end


def read_compact_records(mv: memoryview, pos: int, nullable: bool) -> tuple[memoryview | None, int]:
    """Compact (unsigned varint length + 1, 0 = null) twin of :func:`read_records`."""
    n = mv[pos]
    if n < 0x80:
        start = pos + 1
    else:
        n, start = read_uvarint(mv, pos)
    end = start + n - 1
    if n == 0 or end > len(mv):
        if n == 0 and nullable:
            return None, start
        raise _bad_length(pos, n - 1)
    return mv[start:end], end


# --- uuid ------------------------------------------------------------------


_new_object = object.__new__
_set_slot = object.__setattr__
_UNKNOWN = SafeUUID.unknown


def uuid_from(b: bytes) -> UUID:
    """UUID from 16 bytes; shares the zero UUID and skips UUID.__init__'s checks."""
    if b == _ZERO_UUID_BYTES:
        return ZERO_UUID
    u = _new_object(UUID)
    _set_slot(u, "int", int.from_bytes(b, "big"))
    _set_slot(u, "is_safe", _UNKNOWN)
    return u


# --- arrays of fixed-size primitives ---------------------------------------


def array(table: tuple[struct.Struct, ...], code: str, values: list) -> bytes:
    """int32 length and packed fixed-size primitives; ``table`` from :func:`array_structs`."""
    n = len(values)
    body = table[n].pack(*values) if n < 128 else struct.pack(f">{n}{code}", *values)
    return INT32.pack(n) + body


def compact_array(table: tuple[struct.Struct, ...], code: str, values: list) -> bytes:
    """Compact length and packed fixed-size primitives; ``table`` from :func:`array_structs`."""
    n = len(values)
    if n < 127:
        return _UVARINT_CACHE[n + 1] + table[n].pack(*values)
    return uvarint(n + 1) + struct.pack(f">{n}{code}", *values)


@functools.cache
def array_structs(code: str) -> tuple[struct.Struct, ...]:
    """Precompiled structs for 0..127 items of ``code``, for inline array decoding."""
    return tuple(struct.Struct(f">{n}{code}") for n in range(128))


def read_array(
    mv: memoryview, pos: int, code: str, size: int, nullable: bool
) -> tuple[list | None, int]:
    """An int32-length array of fixed-size primitives (struct ``code``)."""
    (n,) = INT32.unpack_from(mv, pos)
    return _unpack_array(mv, pos, pos + 4, n, code, size, nullable)


def read_compact_array(
    mv: memoryview, pos: int, code: str, size: int, nullable: bool
) -> tuple[list | None, int]:
    """A compact-length array of fixed-size primitives (struct ``code``)."""
    n = mv[pos]
    if n < 0x80:
        start = pos + 1
    else:
        n, start = read_uvarint(mv, pos)
    return _unpack_array(mv, pos, start, n - 1, code, size, nullable)


def _unpack_array(
    mv: memoryview, at: int, start: int, n: int, code: str, size: int, nullable: bool
) -> tuple[list | None, int]:
    end = start + n * size
    if n <= 0 or end > len(mv):
        if n == 0:
            return [], start
        if n == -1 and nullable:
            return None, start
        raise DecodeError(f"invalid array length {n}", offset=at)
    return list(struct.unpack_from(f">{n}{code}", mv, start)), end


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
