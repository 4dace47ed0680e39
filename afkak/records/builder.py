"""Building record batches (magic 2, the only format Kafka 4.x accepts).

:func:`build_batch` encodes many records at once.  For the common shapes (no
headers, no null values, keys all null or all present, lengths and timestamp
deltas below 16 KiB) the per-record work is table lookups driven by ``map``
and one ``bytes.join``; other records take a per-record path.
:class:`RecordBatchBuilder` collects records one by one (tracking the size,
so that a producer can cut batches) and builds with :func:`build_batch`.
"""

from __future__ import annotations

import struct
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, repeat
from operator import add, sub

from crc32c import crc32c

from afkak._errors import EncodeError
from afkak.codec import CODEC_NAMES, CODEC_NONE, compress
from afkak.records._varint import (
    ATTR_TS0_ENC,
    ENC,
    ENC0,
    FIELD,
    NULL_ENC,
    SIZE,
    TABLE_LIMIT,
    encode_zigzag,
)
from afkak.records.batch import compiled_records
from afkak.records.record import ControlType, Header

__all__ = [
    "RecordBatchBuilder",
    "build_batch",
    "build_batches",
    "build_control_batch",
    "BATCH_HEADER_SIZE",
    "RECORD_SIZE_BOUND",
    "split_points",
]

_HEADER = struct.Struct(">qiibIhiqqqhii")
#: Size of a v2 batch's header, the records count included.
BATCH_HEADER_SIZE = _HEADER.size
_LENGTH_OFFSET = 12  # base offset and length are outside the length and the CRC
_CRC_START = 21
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MAX_SEQUENCE = 2**31 - 1
#: Per-record overhead that size estimates assume: length (2), attributes,
#: timestamp delta (1), offset delta (2), key and value lengths (1 and 2)
#: and header count: the usual sizes for records of 64 B to 8 KiB.
_RECORD_OVERHEAD = 10
#: The most a record adds beyond its key, value and header bytes: its length,
#: offset delta, key and value lengths and header count as 5-byte varints, a
#: 10-byte timestamp delta and its attributes (for exact size limits).
RECORD_SIZE_BOUND = 36
# SIZE_PLUS[c][i]: SIZE[i] + c, for adding constant parts of a record's length.
_SIZE_PLUS = {c: [s + c for s in SIZE] for c in (2, 3, 4)}
_BytesLike = bytes | bytearray | memoryview
_byteslike = (bytes, bytearray, memoryview)
#: Encodes records when the extension is built: the same bytes as the
#: reference (_encode_common / _encode_each), or None.
_compiled_encode = getattr(compiled_records(), "encode_records", None)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_batch(
    values: Sequence[_BytesLike | None],
    keys: Sequence[_BytesLike | None] | None = None,
    *,
    headers: Sequence[Sequence[Header]] | None = None,
    timestamps: Sequence[int] | None = None,
    timestamp: int | None = None,
    codec: int = CODEC_NONE,
    compression_level: int | None = None,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode records into one v2 record batch.

    ``values[i]``, ``keys[i]`` (all null when *keys* is None), ``headers[i]``
    (none when *headers* is None) and ``timestamps[i]`` make record *i*.
    Without *timestamps* every record gets *timestamp*, by default now (ms).
    The batch's base timestamp is the first record's.  *compression_level*
    (checked by :func:`afkak.codec.check_compression_level`) is *codec*'s.
    """
    n = len(values)
    if n == 0:
        raise EncodeError("a record batch needs at least one record")
    if keys is not None and len(keys) != n:
        raise EncodeError(f"{len(keys)} keys for {n} values")
    if headers is not None and len(headers) != n:
        raise EncodeError(f"{len(headers)} header lists for {n} values")
    if timestamps is None:
        base_ts = max_ts = _now_ms() if timestamp is None else timestamp
    else:
        if len(timestamps) != n:
            raise EncodeError(f"{len(timestamps)} timestamps for {n} values")
        base_ts, max_ts = timestamps[0], max(timestamps)
    if codec not in CODEC_NAMES:
        compress(codec, b"")  # raises UnsupportedCodecError
    body = None
    plain = headers is None or not any(headers)
    if _compiled_encode is not None:
        body = _compiled_encode(values, keys, timestamps, base_ts, None if plain else headers)
    if body is None:
        deltas = None if timestamps is None else list(map(sub, timestamps, repeat(base_ts, n)))
        if plain:
            body = _encode_common(values, keys, deltas)
        if body is None:
            body = _encode_each(values, keys, headers, deltas)
    if codec != CODEC_NONE:
        body = compress(codec, body, compression_level)
    attributes = codec
    if is_transactional:
        attributes |= _TRANSACTIONAL
    if is_control:
        attributes |= _CONTROL
    header = _HEADER.pack(
        base_offset,
        BATCH_HEADER_SIZE - _LENGTH_OFFSET + len(body),
        partition_leader_epoch,
        2,
        0,
        attributes,
        n - 1,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        n,
    )
    crc = crc32c(body, crc32c(memoryview(header)[_CRC_START:]))
    return b"".join((header[:17], crc.to_bytes(4, "big"), header[_CRC_START:], body))


def _encode_common(
    values: Sequence[_BytesLike | None],
    keys: Sequence[_BytesLike | None] | None,
    deltas: list[int] | None,
) -> bytes | None:
    """Encode records without headers by table lookups; None if they do not fit."""
    n = len(values)
    if n >= TABLE_LIMIT:
        return None
    try:
        vlens = list(map(len, values))  # type: ignore[arg-type]
    except TypeError:  # a None value, or a wrong type
        return None
    klens = None
    if keys is not None:
        try:
            klens = list(map(len, keys))  # type: ignore[arg-type]
        except TypeError:  # a None key, or a wrong type
            if any(k is not None for k in keys):
                return None
            keys = None
    if max(vlens) >= TABLE_LIMIT:
        return None
    same_ts = deltas is None or not any(deltas)
    # Record length: attributes, timestamp delta, offset delta, key, value and
    # a header count of 0; the columns after each record's length, by field.
    const = 2 + (keys is None) + same_ts
    lengths = map(add, map(FIELD.__getitem__, vlens), _SIZE_PLUS[const][:n])
    if same_ts:
        time_columns: tuple[Iterable, ...] = (ATTR_TS0_ENC[:n],)
    else:
        if min(deltas) < 0 or max(deltas) >= TABLE_LIMIT:  # type: ignore[arg-type]
            return None
        lengths = map(add, lengths, map(SIZE.__getitem__, deltas))  # type: ignore[arg-type]
        time_columns = (map(ENC0.__getitem__, deltas), ENC[:n])  # type: ignore[arg-type]
    if klens is None:
        key_columns: tuple[Iterable, ...] = (map(NULL_ENC.__getitem__, vlens),)
    else:
        if max(klens) >= TABLE_LIMIT:
            return None
        lengths = map(add, lengths, map(FIELD.__getitem__, klens))
        key_columns = (map(ENC.__getitem__, klens), keys, map(ENC.__getitem__, vlens))  # type: ignore[assignment]
    sizes = list(lengths)
    if max(sizes) >= TABLE_LIMIT:
        return None
    # previous header count and length, then each field
    columns = [map(ENC0.__getitem__, sizes), *time_columns, *key_columns, values]
    width = len(columns)
    parts: list = [None] * (width * n)
    for i, column in enumerate(columns):
        parts[i::width] = column
    parts[0] = ENC[sizes[0]]  # no header count before the first record
    parts.append(b"\x00")
    return b"".join(parts)


def _encode_each(
    values: Sequence[_BytesLike | None],
    keys: Sequence[_BytesLike | None] | None,
    headers: Sequence[Sequence[Header]] | None,
    deltas: list[int] | None,
) -> bytes:
    """Encode records one by one: any shape."""
    out = bytearray()
    for i, value in enumerate(values):
        delta = 0 if deltas is None else deltas[i]
        rec = bytearray(b"\x00")  # attributes
        rec += _zigzag(delta)
        rec += _zigzag(i)
        rec += _blob(None if keys is None else keys[i])
        rec += _blob(value)
        record_headers = () if headers is None else headers[i]
        rec += _zigzag(len(record_headers))
        for hkey, hvalue in record_headers:
            hk = hkey.encode("utf-8")
            rec += _zigzag(len(hk))
            rec += hk
            rec += _blob(hvalue)
        out += _zigzag(len(rec))
        out += rec
    return bytes(out)


def _zigzag(n: int) -> bytes:
    return ENC[n] if 0 <= n < TABLE_LIMIT else encode_zigzag(n)


def _blob(blob: _BytesLike | None) -> bytes:
    """A nullable length-prefixed key, value or header value."""
    if blob is None:
        return b"\x01"
    if not isinstance(blob, _byteslike):
        raise TypeError(f"keys, values and header values must be bytes or None, not {blob!r}")
    return _zigzag(len(blob)) + blob


def build_control_batch(
    control_type: ControlType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    timestamp: int | None = None,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker (commit or abort) as a control batch.

    Brokers write these; clients only need them in tests and tools.
    """
    return build_batch(
        [struct.pack(">hi", 0, coordinator_epoch)],
        [struct.pack(">hh", 0, control_type)],
        timestamp=timestamp,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def build_batches(
    values: Sequence[_BytesLike | None],
    keys: Sequence[_BytesLike | None] | None = None,
    *,
    batch_size: int = 64 * 1024,
    headers: Sequence[Sequence[Header]] | None = None,
    timestamps: Sequence[int] | None = None,
    timestamp: int | None = None,
    base_offset: int = 0,
    base_sequence: int = -1,
    **options: object,
) -> list[bytes]:
    """Encode records into consecutive batches of about *batch_size* bytes each.

    Batch sizes are estimated before compression from the records' lengths.
    Each batch continues the offsets (and, unless -1, the sequence numbers) of
    the one before.  Other *options* are passed on to :func:`build_batch`.
    """
    n = len(values)
    if timestamps is None and timestamp is None:
        timestamp = _now_ms()
    sizes = map(add, _lengths(values), repeat(_RECORD_OVERHEAD, n))
    if keys is not None:
        sizes = map(add, sizes, _lengths(keys))
    if headers is not None:
        sizes = map(add, sizes, map(_headers_size, headers))
    ends = list(accumulate(sizes))
    room = batch_size - BATCH_HEADER_SIZE
    batches = []
    start = 0
    while start < n:
        before = ends[start - 1] if start else 0
        stop = max(start + 1, bisect_right(ends, before + room, start))
        batches.append(
            build_batch(
                values[start:stop],
                None if keys is None else keys[start:stop],
                headers=None if headers is None else headers[start:stop],
                timestamps=None if timestamps is None else timestamps[start:stop],
                timestamp=timestamp,
                base_offset=base_offset + start,
                base_sequence=_add_sequence(base_sequence, start),
                **options,  # type: ignore[arg-type]
            )
        )
        start = stop
    return batches


def split_points(sizes: Iterable[int], limit: int) -> list[int] | None:
    """Where to cut records of these sizes into batches of at most *limit* bytes.

    *sizes* are upper bounds of the records' encoded sizes (see
    ``RECORD_SIZE_BOUND``); the batch header counts too.  Returns the
    indexes at which a new batch starts (0 first), or None when a record
    cannot fit in a batch alone.
    """
    room = limit - BATCH_HEADER_SIZE
    starts = [0]
    used = 0
    for i, size in enumerate(sizes):
        if size > room:
            return None
        if used + size > room and i > starts[-1]:
            starts.append(i)
            used = 0
        used += size
    return starts


def _add_sequence(base_sequence: int, n: int) -> int:
    if base_sequence < 0:
        return base_sequence
    return (base_sequence + n) % (_MAX_SEQUENCE + 1)


def _headers_size(headers: Sequence[Header]) -> int:
    return sum(len(k) + (len(v) if v is not None else 0) + 3 for k, v in headers)


def _lengths(blobs: Sequence[_BytesLike | None]) -> Iterable[int]:
    """The lengths of *blobs*, None counting as 0."""
    try:
        return list(map(len, blobs))  # type: ignore[arg-type]
    except TypeError:
        return [0 if b is None else len(b) for b in blobs]


class RecordBatchBuilder:
    """Collects records one at a time into a v2 batch.

    :attr:`size` estimates the uncompressed size of the batch built so far,
    and :meth:`append` refuses a record that would take it past
    *batch_size* (except the first), so that a producer can cut batches.
    """

    __slots__ = (
        "codec",
        "batch_size",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "partition_leader_epoch",
        "base_offset",
        "size",
        "_values",
        "_keys",
        "_headers",
        "_timestamps",
        "_has_keys",
        "_has_headers",
    )

    def __init__(
        self,
        codec: int = CODEC_NONE,
        *,
        batch_size: int | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        partition_leader_epoch: int = -1,
        base_offset: int = 0,
    ) -> None:
        if codec not in CODEC_NAMES:
            compress(codec, b"")  # raises UnsupportedCodecError
        self.codec = codec
        self.batch_size = batch_size
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.partition_leader_epoch = partition_leader_epoch
        self.base_offset = base_offset
        #: Estimated size in bytes of the batch built so far, before compression.
        self.size = BATCH_HEADER_SIZE
        self._values: list[_BytesLike | None] = []
        self._keys: list[_BytesLike | None] = []
        self._headers: list[Sequence[Header]] = []
        self._timestamps: list[int] = []
        self._has_keys = False
        self._has_headers = False

    def __len__(self) -> int:
        return len(self._values)

    def append(
        self,
        value: _BytesLike | None,
        key: _BytesLike | None = None,
        headers: Sequence[Header] = (),
        timestamp: int | None = None,
    ) -> bool:
        """Add a record; return False (adding nothing) if the batch is full.

        *timestamp* defaults to now, in milliseconds.
        """
        if value is not None and not isinstance(value, _byteslike):
            raise TypeError(f"record values must be bytes or None, not {value!r}")
        if key is not None and not isinstance(key, _byteslike):
            raise TypeError(f"record keys must be bytes or None, not {key!r}")
        size = _RECORD_OVERHEAD + (len(value) if value is not None else 0)
        if key is not None:
            size += len(key)
            self._has_keys = True
        if headers:
            size += _headers_size(headers)
        if self.batch_size is not None and self._values and self.size + size > self.batch_size:
            return False
        if headers:
            self._has_headers = True
        self.size += size
        self._values.append(value)
        self._keys.append(key)
        self._headers.append(headers)
        self._timestamps.append(_now_ms() if timestamp is None else timestamp)
        return True

    def build(self) -> bytes:
        """Encode the records appended so far into one batch."""
        return build_batch(
            self._values,
            self._keys if self._has_keys else None,
            headers=self._headers if self._has_headers else None,
            timestamps=self._timestamps,
            codec=self.codec,
            base_offset=self.base_offset,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            is_transactional=self.is_transactional,
            partition_leader_epoch=self.partition_leader_epoch,
        )
