"""Compression codecs of Kafka record batches: gzip, snappy, lz4 and zstd.

gzip needs only the standard library; snappy, lz4 and zstd use optional
packages (the ``afkak[snappy]``, ``afkak[lz4]`` and ``afkak[zstd]`` extras).
A codec whose package is missing raises :class:`UnsupportedCodecError`.

Decompression of untrusted data is bounded: :func:`decompress` stops with a
:class:`DecodeError` as soon as the output would exceed ``max_size`` bytes,
without allocating the whole output first.  Corrupt data raises
:class:`DecodeError` too, never a library-specific exception.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from afkak._errors import DecodeError, UnsupportedCodecError
from afkak.common import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD

try:
    import snappy as _snappy
except ImportError:  # pragma: no cover - depends on the environment
    _snappy = None

try:
    import lz4.frame as _lz4
except ImportError:  # pragma: no cover - depends on the environment
    _lz4 = None

try:
    import zstandard as _zstd
except ImportError:  # pragma: no cover - depends on the environment
    _zstd = None  # type: ignore[assignment, unused-ignore]  # typed only when installed

__all__ = [
    "CODEC_NONE",
    "CODEC_GZIP",
    "CODEC_SNAPPY",
    "CODEC_LZ4",
    "CODEC_ZSTD",
    "CODEC_NAMES",
    "DEFAULT_MAX_SIZE",
    "COMPRESSION_LEVELS",
    "check_compression_level",
    "compress",
    "decompress",
    "decompress_lz4_legacy",
    "has_gzip",
    "has_snappy",
    "has_lz4",
    "has_zstd",
    "gzip_encode",
    "gzip_decode",
    "snappy_encode",
    "snappy_decode",
]


#: Codec number -> the name Kafka uses for it (``compression.type``).
CODEC_NAMES: Final = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}

#: Default bound on the decompressed size of one batch or message: 64 MiB,
#: well above Kafka's default ``message.max.bytes`` (1 MiB) and fetch sizes.
DEFAULT_MAX_SIZE: Final = 64 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

#: Codec -> the compression levels it takes, lowest and highest (KIP-390, the
#: Java client's ranges: ``compression.gzip.level``, ``compression.lz4.level``,
#: ``compression.zstd.level``).  By default gzip compresses at 6 and zstd at 3,
#: as Kafka does, and lz4 in its fast mode.
COMPRESSION_LEVELS: Final = {
    CODEC_GZIP: (1, 9),
    CODEC_LZ4: (1, 17),
    CODEC_ZSTD: (-131072, 22),
}


def check_compression_level(codec: int, level: int | None) -> int | None:
    """*level* if *codec* takes it: TypeError unless an int, ValueError out of range."""
    if level is None:
        return None
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"a compression level is an int, not {level!r}")
    bounds = COMPRESSION_LEVELS.get(codec)
    if bounds is None:
        name = CODEC_NAMES.get(codec, codec)
        raise ValueError(f"codec {name} has no compression levels")
    low, high = bounds
    if not low <= level <= high:
        raise ValueError(
            f"{CODEC_NAMES[codec]} compression levels are {low} to {high}, not {level}"
        )
    return level


def has_gzip() -> bool:
    """gzip is always available (it uses the standard library's zlib)."""
    return True


def has_snappy() -> bool:
    """Whether python-snappy is installed (``pip install afkak[snappy]``)."""
    return _snappy is not None


def has_lz4() -> bool:
    """Whether lz4 is installed (``pip install afkak[lz4]``)."""
    return _lz4 is not None


def has_zstd() -> bool:
    """Whether zstandard is installed (``pip install afkak[zstd]``)."""
    return _zstd is not None


def _missing(codec: int) -> UnsupportedCodecError:
    name = CODEC_NAMES[codec]
    return UnsupportedCodecError(
        f"{name} compression needs an optional package: pip install afkak[{name}]"
    )


def _unknown(codec: int) -> UnsupportedCodecError:
    return UnsupportedCodecError(f"unknown compression codec {codec!r}")


# --- compression -----------------------------------------------------------


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Compress *data* the way Kafka's Java client does for *codec*.

    snappy uses xerial framing, lz4 the LZ4 frame format with independent
    64 KiB blocks, zstd one standard frame and gzip one gzip member.
    *level* (see :data:`COMPRESSION_LEVELS`, checked by the caller with
    :func:`check_compression_level`) is the codec's default when None.
    """
    if codec == CODEC_GZIP:
        c = zlib.compressobj(_GZIP_LEVEL if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == CODEC_SNAPPY:
        return snappy_encode(data, xerial_compatible=True)
    if codec == CODEC_LZ4:
        if _lz4 is None:
            raise _missing(codec)
        return _lz4.compress(
            data,
            compression_level=0 if level is None else level,
            block_size=_lz4.BLOCKSIZE_MAX64KB,
            block_linked=False,
            store_size=False,
        )
    if codec == CODEC_ZSTD:
        if _zstd is None:
            raise _missing(codec)
        return _zstd.ZstdCompressor(level=_ZSTD_LEVEL if level is None else level).compress(data)
    if codec == CODEC_NONE:
        return bytes(data)
    raise _unknown(codec)


def gzip_encode(payload: bytes) -> bytes:
    """afkak 21's name for ``compress(CODEC_GZIP, payload)``."""
    return compress(CODEC_GZIP, payload)


def snappy_encode(
    payload: bytes, xerial_compatible: bool = False, xerial_blocksize: int = _XERIAL_BLOCK
) -> bytes:
    """Compress *payload* with snappy, as afkak 21 did.

    With *xerial_compatible*, in xerial framing (the format Kafka uses),
    cutting *payload* into blocks of *xerial_blocksize* bytes; otherwise one
    raw snappy block.
    """
    if _snappy is None:
        raise _missing(CODEC_SNAPPY)
    if not xerial_compatible:
        return _snappy.compress(bytes(payload))
    parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    view = memoryview(payload)
    for start in range(0, len(payload), xerial_blocksize):
        block = _snappy.compress(bytes(view[start : start + xerial_blocksize]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# --- decompression ---------------------------------------------------------


def decompress(codec: int, data: bytes | memoryview, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Decompress *data* compressed with *codec*, producing at most *max_size* bytes.

    Raises :class:`DecodeError` for corrupt data or when the output would be
    larger than *max_size*, and :class:`UnsupportedCodecError` for an unknown
    codec or one whose optional package is missing.
    """
    if codec == CODEC_GZIP:
        return _gunzip(data, max_size)
    if codec == CODEC_SNAPPY:
        if _snappy is None:
            raise _missing(codec)
        return _unsnappy(data, max_size)
    if codec == CODEC_LZ4:
        if _lz4 is None:
            raise _missing(codec)
        return _unlz4(data, max_size)
    if codec == CODEC_ZSTD:
        if _zstd is None:
            raise _missing(codec)
        return _unzstd(data, max_size)
    if codec == CODEC_NONE:
        if len(data) > max_size:
            raise _too_big(max_size)
        return bytes(data)
    raise _unknown(codec)


def gzip_decode(payload: bytes) -> bytes:
    """afkak 21's name for ``decompress(CODEC_GZIP, payload)``."""
    return decompress(CODEC_GZIP, payload)


def snappy_decode(payload: bytes) -> bytes:
    """afkak 21's name for ``decompress(CODEC_SNAPPY, payload)``: xerial framing or a raw block."""
    return decompress(CODEC_SNAPPY, payload)


def decompress_lz4_legacy(data: bytes, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Decompress an lz4 frame from a magic-0 message (KAFKA-1493).

    Kafka's old writer computed the frame header checksum over the magic
    number too; the checksum byte is recomputed before decoding.
    """
    if _lz4 is None:
        raise _missing(CODEC_LZ4)
    return _unlz4(_fix_lz4_header_checksum(data), max_size)


def _too_big(max_size: int) -> DecodeError:
    return DecodeError(f"decompressed data exceeds max_size of {max_size} bytes")


def _gunzip(data: bytes | memoryview, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    try:
        while True:
            d = zlib.decompressobj(47)  # gzip or zlib header, autodetected
            chunk = d.decompress(data, max_size + 1 - total)
            while True:
                total += len(chunk)
                if total > max_size:
                    raise _too_big(max_size)
                out.append(chunk)
                if not d.unconsumed_tail:
                    break
                chunk = d.decompress(d.unconsumed_tail, max_size + 1 - total)
            if not d.eof:
                raise DecodeError("truncated gzip data")
            data = d.unused_data
            if not data:  # further gzip members are concatenated, as Java reads them
                return b"".join(out)
    except zlib.error as e:
        raise DecodeError(f"corrupt gzip data: {e}") from None


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    for _ in range(5):
        if pos >= len(data):
            break
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise DecodeError("corrupt snappy block length")


def _unsnappy_block(block: bytes, budget: int, max_size: int) -> bytes:
    declared, _ = _read_uvarint(block, 0)
    if declared > budget:
        raise _too_big(max_size)
    try:
        out = _snappy.decompress(block)
    except Exception as e:  # the library raises several unrelated types
        raise DecodeError(f"corrupt snappy data: {e}") from None
    if len(out) != declared:
        raise DecodeError("corrupt snappy data: wrong uncompressed length")
    return out


def _unsnappy(data: bytes | memoryview, max_size: int) -> bytes:
    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        return _unsnappy_block(data, max_size, max_size)
    pos = _XERIAL_HEADER.size
    if len(data) < pos:
        raise DecodeError("truncated xerial snappy header")
    out: list[bytes] = []
    total = 0
    end = len(data)
    while pos < end:
        if pos + 4 > end:
            raise DecodeError("truncated xerial snappy block length")
        (size,) = _INT32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise DecodeError("xerial snappy block runs past the end")
        block = _unsnappy_block(data[pos : pos + size], max_size - total, max_size)
        total += len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _unlz4(data: bytes | memoryview, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    try:
        d = _lz4.LZ4FrameDecompressor()
        chunk = d.decompress(data, max_size + 1)
        while True:
            total += len(chunk)
            if total > max_size:
                raise _too_big(max_size)
            out.append(chunk)
            if d.eof or d.needs_input or not chunk:
                break
            chunk = d.decompress(b"", max_size + 1 - total)
    except DecodeError:
        raise
    except RuntimeError as e:  # lz4 reports corrupt frames as RuntimeError
        raise DecodeError(f"corrupt lz4 data: {e}") from None
    if not d.eof or d.unused_data:
        raise DecodeError("truncated lz4 frame or trailing data")
    return b"".join(out)


def _unzstd(data: bytes | memoryview, max_size: int) -> bytes:
    # zstd cannot bound one call's output, so the input is fed in pieces small
    # enough that one piece expands to at most about max_size bytes (a zstd
    # block of up to 128 KiB can be encoded in 4 bytes): the output never
    # exceeds twice max_size before the check.  The window limit bounds the
    # decoder's own allocation: between 8 MiB (enough for the levels Kafka
    # clients use) and zstd's default limit of 128 MiB.
    window = 1 << max(23, min(27, (max_size - 1).bit_length()))
    step = max(64, max_size >> 15)
    out: list[bytes] = []
    total = 0
    view = memoryview(data)
    try:
        d = _zstd.ZstdDecompressor(max_window_size=window).decompressobj()
        for start in range(0, len(view), step):
            chunk = d.decompress(view[start : start + step])
            total += len(chunk)
            if total > max_size:
                break
            out.append(chunk)
            if d.eof:
                break
    except _zstd.ZstdError as e:
        raise DecodeError(f"corrupt zstd data: {e}") from None
    if total > max_size:
        raise _too_big(max_size)
    if not d.eof or d.unused_data or start + step < len(view):
        raise DecodeError("truncated zstd frame or trailing data")
    return b"".join(out)


# --- KAFKA-1493: lz4 header checksum of magic-0 messages -----------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _xxh32_short(data: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: all an lz4 frame descriptor needs."""
    h = (_P5 + len(data)) & _M32
    pos = 0
    while pos + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, pos)
        h = (h + word * _P3) & _M32
        h = (((h << 17) | (h >> 15)) & _M32) * _P4 & _M32
        pos += 4
    for b in data[pos:]:
        h = (h + b * _P5) & _M32
        h = (((h << 11) | (h >> 21)) & _M32) * _P1 & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _fix_lz4_header_checksum(data: bytes) -> bytes:
    data = bytes(data)
    if len(data) < 7:
        raise DecodeError("truncated lz4 frame header")
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        raise DecodeError("truncated lz4 frame header")
    checksum = (_xxh32_short(data[4:end]) >> 8) & 0xFF
    return data[:end] + bytes((checksum,)) + data[end + 1 :]
