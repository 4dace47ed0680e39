"""Golden tests against kafka-python's record classes, in both directions."""

from __future__ import annotations

import struct
import zlib
from unittest import skipUnless

from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from twisted.trial.unittest import SynchronousTestCase

from afkak import codec
from afkak._errors import ChecksumError, DecodeError
from afkak.records import (
    ControlType,
    Record,
    TimestampType,
    build_batch,
    build_control_batch,
    read_batches,
)
from afkak.test.helpers import UTF8_CHARACTERS, property_examples
from afkak.test.test_codec import ALL_CODECS, INSTALLED, _broken_lz4_header, lz4_frame

CODECS = ALL_CODECS
LEGACY_CODECS = [c for c in CODECS if c != codec.CODEC_ZSTD]
TS = 1_600_000_000_000

blobs = st.one_of(st.none(), st.binary(max_size=200))
record_lists = st.lists(
    st.tuples(
        blobs,
        blobs,
        st.lists(
            st.tuples(
                st.text(UTF8_CHARACTERS, max_size=8), st.one_of(st.none(), st.binary(max_size=10))
            ),
            max_size=2,
        ),
        st.integers(TS - 10**6, TS + 10**6),
    ),
    min_size=1,
    max_size=25,
)


def their_batch(records, c, *, transactional=False, producer=(-1, -1, -1)):  # type: ignore[no-untyped-def]
    builder = DefaultRecordBatchBuilder(
        2, c, transactional, producer[0], producer[1], producer[2], 1 << 30
    )
    for i, (key, value, headers, ts) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    return bytes(builder.build())


class V2GoldenTests(SynchronousTestCase):
    @settings(max_examples=property_examples(150), deadline=None)
    @given(records=record_lists, c=st.sampled_from(CODECS), transactional=st.booleans())
    def test_theirs_decoded_by_ours(self, records, c, transactional):  # type: ignore[no-untyped-def]
        data = their_batch(records, c, transactional=transactional, producer=(77, 3, 11))
        (batch,) = read_batches(data)
        self.assertEqual(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional),
            (77, 3, 11, transactional),
        )
        self.assertEqual((batch.base_offset, batch.last_offset), (0, len(records) - 1))
        self.assertIn(batch.codec, (c, codec.CODEC_NONE))  # they skip useless compression
        self.assertEqual(
            [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in batch.records()],
            [(i, k, v, h, t) for i, (k, v, h, t) in enumerate(records)],
        )

    @settings(max_examples=property_examples(150), deadline=None)
    @given(
        records=record_lists,
        c=st.sampled_from(CODECS),
        transactional=st.booleans(),
        base_offset=st.integers(0, 2**40),
    )
    def test_ours_decoded_by_theirs(self, records, c, transactional, base_offset):  # type: ignore[no-untyped-def]
        keys, values, headers, timestamps = (list(x) for x in zip(*records, strict=True))
        data = build_batch(
            values,
            keys,
            headers=headers,
            timestamps=timestamps,
            codec=c,
            base_offset=base_offset,
            producer_id=5,
            producer_epoch=6,
            base_sequence=7,
            is_transactional=transactional,
            partition_leader_epoch=9,
        )
        batch = DefaultRecordBatch(data)
        self.assertTrue(batch.validate_crc())
        self.assertEqual(
            (
                batch.base_offset,
                batch.compression_type,
                batch.is_transactional,
                batch.is_control_batch,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.leader_epoch,
                batch.first_timestamp,
                batch.max_timestamp,
                batch.next_offset,
            ),
            (
                base_offset,
                c,
                transactional,
                False,
                5,
                6,
                7,
                9,
                timestamps[0],
                max(timestamps),
                base_offset + len(records),
            ),
        )
        self.assertEqual(
            [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in batch],
            [(base_offset + i, k, v, h, t) for i, (k, v, h, t) in enumerate(records)],
        )

    def test_common_shape_both_ways(self) -> None:
        """The table-driven fast path matches kafka-python byte for byte (uncompressed)."""
        values = [b"%d" % i * (i % 50) for i in range(1000)]
        ours = build_batch(values, timestamp=TS, partition_leader_epoch=0)  # theirs writes 0
        theirs = their_batch([(None, v, [], TS) for v in values], codec.CODEC_NONE)
        self.assertEqual(ours, theirs)
        keyed = [(b"k%d" % i, v, [], TS + i * 300) for i, v in enumerate(values)]
        ours = build_batch(
            values,
            [k for k, *_ in keyed],
            timestamps=[t for *_, t in keyed],
            partition_leader_epoch=0,
        )
        self.assertEqual(ours, their_batch(keyed, codec.CODEC_NONE))

    def test_control_batches(self) -> None:
        for marker in (ControlType.ABORT, ControlType.COMMIT):
            data = build_control_batch(
                marker, producer_id=3, producer_epoch=4, coordinator_epoch=8, timestamp=TS
            )
            batch = DefaultRecordBatch(data)
            self.assertTrue(batch.validate_crc())
            self.assertTrue(batch.is_control_batch and batch.is_transactional)
            (record,) = list(batch)
            self.assertEqual((record.type, record.version), (marker, 0))
            self.assertEqual(record.commit, marker == ControlType.COMMIT)

    @skipUnless(INSTALLED[codec.CODEC_ZSTD], "zstandard is not installed")
    def test_memory_records_stream(self) -> None:
        """Several batches, theirs and ours mixed, read by both readers."""
        parts = [
            their_batch([(None, b"a", [], TS)], codec.CODEC_GZIP),
            build_batch([b"b", b"c"], timestamp=TS, base_offset=1, codec=codec.CODEC_ZSTD),
        ]
        data = b"".join(parts)
        ours = [r.value for b in read_batches(data) for r in b.records()]
        theirs = []
        mr = MemoryRecords(data)
        while (batch := mr.next_batch()) is not None:
            theirs.extend(r.value for r in batch)
        self.assertEqual(ours, theirs)
        self.assertEqual(ours, [b"a", b"b", b"c"])


def legacy_set(magic: int, c: int, records, wrapper_offset: int | None = None) -> bytes:  # type: ignore[no-untyped-def]
    builder = LegacyRecordBatchBuilder(magic, c, 1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, ts, key, value)
    data = bytes(builder.build())
    if wrapper_offset is not None:  # the broker's job; the offset is outside the CRC
        data = struct.pack(">q", wrapper_offset) + data[8:]
    return data


def legacy_message(
    magic: int, attributes: int, offset: int, value: bytes, timestamp: int = 0
) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def _with_crc(message: bytes) -> bytes:
    return message[:12] + struct.pack(">I", zlib.crc32(message[16:])) + message[16:]


def theirs_read(data: bytes):  # type: ignore[no-untyped-def]
    out = []
    mr = MemoryRecords(data)
    while (batch := mr.next_batch()) is not None:
        # magic 0 has no timestamp: None there, -1 (as in Kafka's Java client) here
        out.extend(
            (r.offset, r.key, r.value, -1 if r.timestamp is None else r.timestamp) for r in batch
        )
    return out


legacy_records = st.lists(
    st.tuples(blobs, blobs, st.integers(TS, TS + 10**6)), min_size=1, max_size=20
)


class LegacyGoldenTests(SynchronousTestCase):
    @settings(max_examples=property_examples(150), deadline=None)
    @given(records=legacy_records, magic=st.sampled_from([0, 1]), c=st.sampled_from(LEGACY_CODECS))
    def test_legacy_sets(self, records, magic, c):  # type: ignore[no-untyped-def]
        if magic == 0 and c == codec.CODEC_LZ4:
            return  # kafka-python needs xxhash for it: see test_magic0_lz4
        wrapper = 500 if c else None
        data = legacy_set(magic, c, records, wrapper)
        batches = list(read_batches(data))
        ours = [(r.offset, r.key, r.value, r.timestamp) for b in batches for r in b.records()]
        self.assertEqual(ours, theirs_read(data))
        n = len(records)
        if c and magic == 1:
            offsets = list(range(500 - n + 1, 501))
        else:
            offsets = list(range(n))
        expected_ts = [t if magic else -1 for _, _, t in records]
        self.assertEqual(
            ours,
            [(o, k, v, t) for o, (k, v, _), t in zip(offsets, records, expected_ts, strict=True)],
        )
        self.assertEqual(len(batches), 1 if c else n)
        self.assertEqual({b.magic for b in batches}, {magic})
        self.assertEqual({b.codec for b in batches}, {c})
        self.assertEqual(batches[-1].next_offset, offsets[-1] + 1)
        expected_type = TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP
        self.assertEqual({r.timestamp_type for b in batches for r in b.records()}, {expected_type})

    @skipUnless(lz4_frame, "lz4 is not installed")
    def test_magic0_lz4(self) -> None:
        """KAFKA-1493: magic-0 lz4 wrappers carry a broken frame header checksum."""
        inner = legacy_set(0, codec.CODEC_NONE, [(None, b"x%d" % i, 0) for i in range(5)])
        compressed = _broken_lz4_header(lz4_frame.compress(inner))  # type: ignore[union-attr]
        data = legacy_message(0, codec.CODEC_LZ4, 4, compressed)
        (batch,) = read_batches(data)
        self.assertEqual(
            [(r.offset, r.value) for r in batch.records()], [(i, b"x%d" % i) for i in range(5)]
        )

    def test_log_append_time_wrapper(self) -> None:
        inner = legacy_set(1, codec.CODEC_NONE, [(None, b"a", TS), (None, b"b", TS + 1)])
        data = legacy_message(
            1, codec.CODEC_GZIP | 0x08, 10, codec.compress(codec.CODEC_GZIP, inner), 42
        )
        (batch,) = read_batches(data)
        self.assertEqual(batch.timestamp_type, TimestampType.LOG_APPEND_TIME)
        self.assertEqual([(r.offset, r.timestamp) for r in batch.records()], [(9, 42), (10, 42)])

    def test_mixed_with_v2(self) -> None:
        data = legacy_set(1, codec.CODEC_NONE, [(None, b"old", TS)]) + build_batch(
            [b"new"], timestamp=TS, base_offset=1
        )
        self.assertEqual(
            [r.value for b in read_batches(data) for r in b.records()], [b"old", b"new"]
        )

    def test_bad_crc(self) -> None:
        data = bytearray(legacy_set(1, codec.CODEC_GZIP, [(b"k", b"v", TS)], 7))
        data[-1] ^= 1
        with self.assertRaises(ChecksumError) as ctx:
            list(read_batches(bytes(data)))
        self.assertEqual(ctx.exception.batch_offset, 7)

    @skipUnless(INSTALLED[codec.CODEC_SNAPPY] and INSTALLED[codec.CODEC_ZSTD], "needs snappy, zstd")
    def test_truncated_and_malformed(self) -> None:
        data = legacy_set(1, codec.CODEC_SNAPPY, [(b"k", b"v" * 30, TS)] * 3, 2)
        for cut in range(len(data)):
            self.assertEqual(list(read_batches(data[:cut])), [])
        inner = legacy_set(1, codec.CODEC_NONE, [(None, b"a", TS)])
        bad_wrappers = [
            legacy_message(1, codec.CODEC_GZIP, 0, codec.compress(codec.CODEC_GZIP, inner[:-3])),
            legacy_message(1, codec.CODEC_GZIP, 0, codec.compress(codec.CODEC_GZIP, b"")),
            legacy_message(1, codec.CODEC_GZIP, 0, b"not gzip"),
            legacy_message(1, codec.CODEC_ZSTD, 0, codec.compress(codec.CODEC_ZSTD, inner)),
            legacy_message(
                1,
                codec.CODEC_GZIP,
                0,
                codec.compress(codec.CODEC_GZIP, legacy_message(1, 1, 0, b"x")),
            ),
            _with_crc(
                struct.pack(">qi", 0, 14) + b"\x00\x00\x00\x00\x00\x00" + struct.pack(">ii", 9, -1)
            ),
            _with_crc(
                struct.pack(">qi", 0, 14) + b"\x00\x00\x00\x00\x00\x00" + struct.pack(">ii", -1, -5)
            ),
            _with_crc(
                struct.pack(">qi", 0, 15)
                + b"\x00\x00\x00\x00\x00\x00"
                + struct.pack(">iib", -1, -1, 0)
            ),
        ]
        for wrapper in bad_wrappers:
            with self.assertRaises(DecodeError, msg=wrapper):
                list(read_batches(wrapper))

    @settings(max_examples=property_examples(300), deadline=None)
    @given(
        pos=st.integers(min_value=0),
        value=st.integers(0, 255),
        magic=st.sampled_from([0, 1]),
        c=st.sampled_from(LEGACY_CODECS[:3]),
    )
    def test_mutated(self, pos: int, value: int, magic: int, c: int) -> None:
        """Any changed byte: ChecksumError, DecodeError, or records (no other error)."""
        data = bytearray(legacy_set(magic, c, [(b"k", b"value", TS), (None, None, TS)], 9))
        data[pos % len(data)] = value
        for check_crc in (True, False):
            try:
                for batch in read_batches(bytes(data), check_crc=check_crc):
                    self.assertTrue(all(isinstance(r, Record) for r in batch.records()))
            except DecodeError:
                pass
