"""A record batch as read from a fetch response, and record decoding (v2).

Batches are parsed lazily: the header when the batch is reached, the records
(decompressed once) on the first call to :meth:`RecordBatch.records`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from itertools import repeat
from operator import add
from typing import Any

import attrs

from afkak._errors import DecodeError
from afkak.codec import CODEC_NONE, DEFAULT_MAX_SIZE, decompress
from afkak.records._varint import DEC1, DEC2, LEN1, LEN2, decode_length, decode_zigzag
from afkak.records.record import ControlMarker, ControlType, Header, Record, TimestampType

__all__ = ["RecordBatch", "COMPILED", "RecordColumns"]

_new_record = partial(tuple.__new__, Record)
_INT16 = struct.Struct(">h")
_CONTROL_VALUE = struct.Struct(">hi")


def compiled_records() -> Any:
    """The compiled record module (``_crecords``), or None: unbuilt or disabled."""
    if os.environ.get("AFKAK_NO_EXTENSIONS"):
        return None
    try:
        import afkak.records._crecords as _crecords
    except ImportError:
        return None
    return _crecords


#: Decodes records when the extension is built: same results as the
#: reference :func:`_decode_records`, or None to leave a batch to it.
_compiled_decode: Callable[..., list[Record] | None] | None = getattr(
    compiled_records(), "decode_records", None
)
#: Whether records are decoded by compiled code (see setup.py).
COMPILED = _compiled_decode is not None
#: ``RecordColumns(rows_hint, bytes_hint, headers=False)``: records decoded
#: into column buffers in Arrow's layout by :meth:`RecordBatch.add_to` (see
#: ``_crecords.pyx``); None without the compiled code.
RecordColumns: Any = getattr(compiled_records(), "RecordColumns", None)


@attrs.define(eq=False)
class RecordBatch:
    """One record batch (magic 2) or one legacy message (magic 0/1) of a fetch.

    A legacy message that wraps a compressed message set is one batch holding
    the inner messages.  Header fields that legacy messages lack take Kafka's
    "none" values (-1, or False for the flags).
    """

    base_offset: int
    last_offset: int
    magic: int
    codec: int
    timestamp_type: TimestampType
    is_transactional: bool
    is_control: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    #: The number of records the header announces.
    record_count: int
    #: Size of the batch on the wire, headers included.
    size_in_bytes: int
    #: The records section: bytes, or a view of the fetch response it came in.
    _payload: bytes | memoryview | None = attrs.field(default=None, repr=False)
    _records: list[Record] | None = attrs.field(default=None, repr=False)
    _max_size: int = attrs.field(default=DEFAULT_MAX_SIZE, repr=False)
    _inflated_done: bool = attrs.field(default=False, repr=False)

    @property
    def next_offset(self) -> int:
        """The offset to fetch from after this batch."""
        return self.last_offset + 1

    def __len__(self) -> int:
        return self.record_count

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def records(self, min_offset: int | None = None) -> list[Record]:
        """The batch's records, or only those at or after *min_offset*.

        The full list is decoded once and cached.  With *min_offset* past the
        batch's start and nothing cached yet, the records before it are
        skipped without being built.
        """
        if self._records is None:
            if min_offset is not None and min_offset > self.base_offset:
                return self._decode(min_offset)
            self._records = self._decode(None)
        if min_offset is None or min_offset <= self.base_offset:
            return self._records
        return [r for r in self._records if r[0] >= min_offset]

    def fields(self, min_offset: int | None = None) -> Sequence[tuple[Any, ...]]:
        """Like :meth:`records`, for code that reads each record once: not cached.

        The pure-Python decoder then returns plain ``(offset, timestamp,
        timestamp_type, key, value, headers)`` tuples, without building the
        :class:`Record` of each (the compiled one builds them anyway).
        """
        if self._records is not None:
            return self.records(min_offset)
        return self._decode(min_offset, False)

    @property
    def control_marker(self) -> ControlMarker | None:
        """The transaction marker of a control batch; None for other batches."""
        if not self.is_control:
            return None
        records = self.records()
        if not records:
            raise DecodeError("control batch without a record")
        key, value = records[0][3], records[0][4]
        if key is None or len(key) < 4:
            raise DecodeError("control record key shorter than 4 bytes")
        version, type_ = struct.unpack_from(">hh", key)
        epoch = 0
        if value is not None and len(value) >= 6:
            epoch = _CONTROL_VALUE.unpack_from(value)[1]
        try:
            type_ = ControlType(type_)
        except ValueError:
            pass  # a marker type newer than this client: keep the number
        return ControlMarker(type=type_, version=version, coordinator_epoch=epoch)

    def add_to(self, columns: Any, min_offset: int, end_offset: int) -> bool:
        """Append the records at offsets [*min_offset*, *end_offset*) to compiled *columns*.

        *columns* is a ``RecordColumns``.  False, with *columns* left
        unusable, for a batch that only :meth:`records` reads (a legacy
        message, numbers beyond 64 bits).
        """
        if self.magic != 2:
            return False
        payload = self._inflated()
        tt = self.timestamp_type
        fixed = self.max_timestamp if tt == TimestampType.LOG_APPEND_TIME else None
        with self._decode_errors():
            return bool(
                columns.add(
                    payload, self.record_count, self.base_offset, self.base_timestamp,
                    int(tt), fixed, min_offset, end_offset,
                )
            )  # fmt: skip

    def _inflated(self) -> bytes | memoryview:
        """The records section, decompressed (once)."""
        payload = self._payload
        assert payload is not None
        if self.codec != CODEC_NONE and not self._inflated_done:
            payload = self._payload = decompress(self.codec, payload, self._max_size)
            self._inflated_done = True
        return payload

    @contextmanager
    def _decode_errors(self) -> Iterator[None]:
        """The decoders' IndexError and UnicodeDecodeError as DecodeError."""
        try:
            yield
        except IndexError:
            raise DecodeError(
                f"record batch at offset {self.base_offset} ends inside a record"
            ) from None
        except UnicodeDecodeError:
            raise DecodeError(
                f"record batch at offset {self.base_offset} has a header key that is not UTF-8"
            ) from None

    def _decode(self, min_offset: int | None, as_records: bool = True) -> list[Any]:
        payload = self._inflated()
        with self._decode_errors():
            pos, count = 0, self.record_count
            if min_offset is not None:
                pos, count = _skip_records(payload, count, min_offset - self.base_offset)
            args = (pos, count, self.base_offset, self.base_timestamp, self.timestamp_type)
            records: list[Any] | None = None
            if _compiled_decode is not None:
                records = _compiled_decode(payload, *args)
            if records is None:
                # the reference slices keys and values out of bytes, not out of a view
                records = _decode_records(bytes(payload), *args, as_records)
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            t, tt = self.max_timestamp, self.timestamp_type
            make = _new_record if as_records else tuple
            records = [make((r[0], t, tt, r[3], r[4], r[5])) for r in records]
        return records


def _skip_records(buf: bytes | memoryview, count: int, min_delta: int) -> tuple[int, int]:
    """Skip the records whose offset delta is below *min_delta*.

    Return the position of the first record kept and the number of records
    left, reading only each record's length, timestamp and offset delta.
    """
    pos = 0
    while count:
        length, start = decode_zigzag(buf, pos)
        _, p = decode_zigzag(buf, start + 1)
        delta, _ = decode_zigzag(buf, p)
        if delta >= min_delta:
            break
        if length < 0:
            raise DecodeError(f"negative record length {length}", offset=pos)
        pos = start + length
        count -= 1
    return pos, count


def _decode_records(
    buf: bytes,
    pos: int,
    count: int,
    base_offset: int,
    base_ts: int,
    tt: TimestampType,
    as_records: bool = True,
) -> list[Any]:
    """Decode *count* v2 records from *buf* at *pos*; the buffer must end with them.

    :class:`Record` tuples, or plain ones without *as_records*.

    The common cases (1- and 2-byte varints, no headers) are inlined; the
    rest call the generic varint decoder.  Malformed data ends in a
    DecodeError, IndexError or UnicodeDecodeError, which the caller converts.
    """
    out: list[tuple] = []
    append = out.append
    dec1, dec2, len1, len2 = DEC1, DEC2, LEN1, LEN2
    off1 = list(map(add, dec1, repeat(base_offset, 128)))
    ts1 = list(map(add, dec1, repeat(base_ts, 128)))
    for _ in range(count):
        # length, then skip attributes
        b = buf[pos]
        if b < 128:
            end = pos + 1 + len1[b]
            pos += 2
        else:
            b2 = buf[pos + 1]
            if b2 < 128:
                end = pos + 2 + len2[b + (b2 << 7)]
                pos += 3
            else:
                length, pos = decode_length(buf, pos)
                end = pos + length
                pos += 1
        # timestamp delta
        b = buf[pos]
        if b < 128:
            ts = ts1[b]
            pos += 1
        else:
            ts, pos = decode_zigzag(buf, pos)
            ts += base_ts
        # offset delta
        b = buf[pos]
        if b < 128:
            off = off1[b]
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 128:
                off = base_offset + dec2[b + (b2 << 7)]
                pos += 2
            else:
                off, pos = decode_zigzag(buf, pos)
                off += base_offset
        # key (a 1-byte length other than null is never -1)
        b = buf[pos]
        if b == 1:
            key = None
            pos += 1
        elif b < 128:
            n = pos + 1 + len1[b]
            key = buf[pos + 1 : n]
            pos = n
        else:
            n, pos = decode_length(buf, pos)
            if n == -1:
                key = None
            else:
                key = buf[pos : pos + n]
                pos += n
        # value
        b = buf[pos]
        if b == 1:
            value = None
            pos += 1
        else:
            if b < 128:
                n = pos + 1 + len1[b]
                value = buf[pos + 1 : n]
            else:
                b2 = buf[pos + 1]
                if b2 < 128:
                    n = len2[b + (b2 << 7)]
                    if n == -1:  # null, written in two bytes
                        value = None
                        n = pos + 2
                    else:
                        n += pos + 2
                        value = buf[pos + 2 : n]
                else:
                    n, pos = decode_length(buf, pos)
                    if n == -1:
                        value = None
                    else:
                        value = buf[pos : pos + n]
                    n = pos + max(n, 0)
            pos = n
        # headers
        if buf[pos] == 0:
            pos += 1
            headers: tuple[Header, ...] = ()
        else:
            headers, pos = _decode_headers(buf, pos)
        if pos != end:
            raise DecodeError(
                f"record at offset {off} does not fill its declared length", offset=pos
            )
        append((off, ts, tt, key, value, headers))
    if pos != len(buf):
        raise DecodeError("record batch has bytes after its last record", offset=pos)
    return list(map(_new_record, out)) if as_records else out


def _decode_headers(buf: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_zigzag(buf, pos)
    if count < 0:
        raise DecodeError(f"negative header count {count}", offset=pos)
    headers: list[Header] = []
    end = len(buf)
    for _ in range(count):
        n, pos = decode_zigzag(buf, pos)
        if n < 0 or pos + n > end:
            raise DecodeError(f"bad header key length {n}", offset=pos)
        key = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = decode_length(buf, pos)
        if n == -1:
            headers.append((key, None))
        else:
            if pos + n > end:
                raise DecodeError("header value runs past the end", offset=pos)
            headers.append((key, buf[pos : pos + n]))
            pos += n
    return tuple(headers), pos
