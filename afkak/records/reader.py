"""Reading the records blob of a fetch response, batch by batch."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from crc32c import crc32c

from afkak._errors import ChecksumError, DecodeError
from afkak.codec import CODEC_ZSTD, DEFAULT_MAX_SIZE
from afkak.records.batch import RecordBatch
from afkak.records.legacy import read_legacy_message
from afkak.records.record import TimestampType

__all__ = ["read_batches"]

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_V2_HEADER_SIZE = _V2_HEADER.size  # 61
_PREFIX = struct.Struct(">qi")  # base offset and length: the log overhead
_LOG_OVERHEAD = 12
_MAGIC_OFFSET = 16
_CRC_START = 21  # attributes onwards
_LEGACY_MIN_SIZE = 14
_TIMESTAMP_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


def read_batches(
    data: bytes | bytearray | memoryview | None,
    *,
    check_crc: bool = True,
    max_size: int = DEFAULT_MAX_SIZE,
) -> Iterator[RecordBatch]:
    """Iterate lazily over the record batches of a fetched records blob.

    Reads v2 batches and legacy (magic 0/1) messages, told apart by their
    magic byte.  A partial batch at the end (one whose declared length runs
    past the end of *data*, as a fetch response may have) is dropped
    silently.  Each batch's CRC is checked when the batch is reached, unless
    *check_crc* is false; a mismatch raises :class:`ChecksumError`.
    *max_size* bounds each batch's decompressed size.  Any other malformed
    input raises :class:`DecodeError`.
    """
    if not data:
        return
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    # Batches decode lazily: they keep views of immutable bytes (a fetch
    # response), and copies of anything that could change meanwhile.
    copy = type(view.obj) is not bytes
    end = len(view)
    pos = 0
    while pos + _LOG_OVERHEAD <= end:
        base_offset, size = _PREFIX.unpack_from(view, pos)
        batch_end = pos + _LOG_OVERHEAD + size
        if size < _LEGACY_MIN_SIZE:
            raise DecodeError(f"record batch length {size} is too small", offset=pos)
        if batch_end > end:
            return  # a partial trailing batch
        magic = view[pos + _MAGIC_OFFSET]
        if magic == 2:
            yield _read_v2(view, pos, batch_end, check_crc, max_size, copy)
        elif magic < 2:
            chunk = view[pos:batch_end].tobytes()
            yield read_legacy_message(chunk, 0, check_crc, max_size)
        else:
            raise DecodeError(f"unknown record batch magic {magic}", offset=pos)
        pos = batch_end


def _read_v2(
    view: memoryview, pos: int, end: int, check_crc: bool, max_size: int, copy: bool
) -> RecordBatch:
    if end - pos < _V2_HEADER_SIZE:
        raise DecodeError("record batch shorter than its header", offset=pos)
    (
        base_offset,
        _,
        leader_epoch,
        _,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _V2_HEADER.unpack_from(view, pos)
    if check_crc and crc32c(view[pos + _CRC_START : end]) != crc:
        raise ChecksumError("record batch CRC-32C mismatch", batch_offset=base_offset, offset=pos)
    if count < 0:
        raise DecodeError(f"negative record count {count}", offset=pos)
    if attributes & 0x07 > CODEC_ZSTD:
        raise DecodeError(f"unknown codec {attributes & 0x07} in record batch", offset=pos)
    body = view[pos + _V2_HEADER_SIZE : end]
    return RecordBatch(
        base_offset=base_offset,
        last_offset=base_offset + last_offset_delta,
        magic=2,
        codec=attributes & 0x07,
        timestamp_type=_TIMESTAMP_TYPES[(attributes >> 3) & 1],
        is_transactional=bool(attributes & 0x10),
        is_control=bool(attributes & 0x20),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=leader_epoch,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        record_count=count,
        size_in_bytes=end - pos,
        payload=body.tobytes() if copy else body,
        max_size=max_size,
    )
