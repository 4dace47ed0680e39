"""Tests of afkak.records: round trips, the builder, the reader, malformed input."""

from __future__ import annotations

import struct

from crc32c import crc32c
from hypothesis import HealthCheck, given, settings, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak import codec
from afkak._errors import ChecksumError, DecodeError, EncodeError, UnsupportedCodecError
from afkak.records import (
    BATCH_HEADER_SIZE,
    ControlMarker,
    ControlType,
    Record,
    RecordBatchBuilder,
    TimestampType,
    batch as batch_module,
    build_batch,
    build_batches,
    build_control_batch,
    builder as builder_module,
    read_batches,
)
from afkak.test.helpers import UTF8_CHARACTERS, needs_codecs, property_examples
from afkak.test.test_codec import ALL_CODECS

CODECS = ALL_CODECS  # those installed
HEADER = struct.Struct(">qiibIhiqqqhii")
TS = 1_700_000_000_000
#: The tests run on the compiled and the pure-Python path (the PurePython*
#: classes at the end): one test function, two classes.
BOTH_PATHS = [HealthCheck.differing_executors]


def patch_batch(data: bytes, fix_crc: bool = True, **fields: int) -> bytes:
    """Change header fields of the v2 batch at the start of *data*, fixing its CRC."""
    names = (
        "base_offset length leader_epoch magic crc attributes last_offset_delta "
        "base_ts max_ts producer_id producer_epoch base_sequence count"
    ).split()
    values = dict(zip(names, HEADER.unpack_from(data), strict=True))
    values.update(fields)
    out = bytearray(HEADER.pack(*values.values()) + data[HEADER.size :])
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c(out[21 : 12 + values["length"]]))
    return bytes(out)


def with_body(data: bytes, body: bytes) -> bytes:
    """The batch at the start of *data* with its records section replaced."""
    return patch_batch(data[:BATCH_HEADER_SIZE] + body, length=BATCH_HEADER_SIZE - 12 + len(body))


def all_records(data: bytes, **kwargs: object) -> list[Record]:
    return [r for batch in read_batches(data, **kwargs) for r in batch.records()]


blobs = st.one_of(st.none(), st.binary(max_size=300))
headers_st = st.lists(
    st.tuples(st.text(UTF8_CHARACTERS, max_size=10), st.one_of(st.none(), st.binary(max_size=20))),
    max_size=3,
)
timestamps_st = st.integers(min_value=0, max_value=2**42)


@st.composite
def record_sets(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(min_value=1, max_value=30))
    shape = draw(st.sampled_from(["any", "common", "keyed"]))
    if shape == "any":
        values = draw(st.lists(blobs, min_size=n, max_size=n))
        keys = draw(st.one_of(st.none(), st.lists(blobs, min_size=n, max_size=n)))
        headers = draw(st.one_of(st.none(), st.lists(headers_st, min_size=n, max_size=n)))
    else:
        values = draw(st.lists(st.binary(max_size=300), min_size=n, max_size=n))
        keys = (
            draw(st.lists(st.binary(max_size=50), min_size=n, max_size=n))
            if shape == "keyed"
            else None
        )
        headers = None
    timestamps = draw(
        st.one_of(
            st.none(),
            st.lists(timestamps_st, min_size=n, max_size=n),
            timestamps_st.flatmap(
                lambda t: st.lists(st.integers(t, t + 20_000), min_size=n, max_size=n)
            ),
        )
    )
    return values, keys, headers, timestamps


class RoundTripTests(SynchronousTestCase):
    @settings(max_examples=property_examples(300), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(
        records=record_sets(),
        codec_=st.sampled_from(CODECS),
        base_offset=st.integers(min_value=0, max_value=2**62),
        producer=st.tuples(
            st.integers(-1, 2**62), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)
        ),
        transactional=st.booleans(),
        leader_epoch=st.integers(-1, 2**31 - 1),
    )
    def test_round_trip(self, records, codec_, base_offset, producer, transactional, leader_epoch):  # type: ignore[no-untyped-def]
        values, keys, headers, timestamps = records
        data = build_batch(
            values,
            keys,
            headers=headers,
            timestamps=timestamps,
            timestamp=TS,
            codec=codec_,
            base_offset=base_offset,
            producer_id=producer[0],
            producer_epoch=producer[1],
            base_sequence=producer[2],
            is_transactional=transactional,
            partition_leader_epoch=leader_epoch,
        )
        (batch,) = read_batches(data)
        n = len(values)
        expected_ts = timestamps or [TS] * n
        self.assertEqual(
            (batch.base_offset, batch.last_offset, batch.next_offset, batch.magic, batch.codec),
            (base_offset, base_offset + n - 1, base_offset + n, 2, codec_),
        )
        self.assertEqual(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            producer,
        )
        self.assertEqual(batch.is_transactional, transactional)
        self.assertFalse(batch.is_control)
        self.assertIsNone(batch.control_marker)
        self.assertEqual(batch.partition_leader_epoch, leader_epoch)
        self.assertEqual(
            (batch.base_timestamp, batch.max_timestamp), (expected_ts[0], max(expected_ts))
        )
        self.assertEqual((len(batch), batch.size_in_bytes), (n, len(data)))
        self.assertEqual(batch.timestamp_type, TimestampType.CREATE_TIME)
        expected = [
            Record(
                base_offset + i,
                expected_ts[i],
                TimestampType.CREATE_TIME,
                None if keys is None else keys[i],
                values[i],
                tuple(headers[i]) if headers else (),
            )
            for i in range(n)
        ]
        self.assertEqual(batch.records(), expected)
        self.assertEqual(list(batch), expected)
        self.assertEqual([type(r) for r in batch.records()], [Record] * n)

    @settings(max_examples=property_examples(100), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(records=record_sets(), codec_=st.sampled_from(CODECS))
    def test_builder(self, records, codec_):  # type: ignore[no-untyped-def]
        values, keys, headers, timestamps = records
        builder = RecordBatchBuilder(codec_, producer_id=7, producer_epoch=1, base_sequence=3)
        for i, value in enumerate(values):
            appended = builder.append(
                value,
                None if keys is None else keys[i],
                () if headers is None else headers[i],
                TS if timestamps is None else timestamps[i],
            )
            self.assertTrue(appended)
        self.assertEqual(len(builder), len(values))
        data = builder.build()
        (batch,) = read_batches(data)
        self.assertEqual([r.value for r in batch.records()], values)
        self.assertEqual([r.key for r in batch.records()], keys or [None] * len(values))
        self.assertEqual(
            [r.headers for r in batch.records()],
            [tuple(h) for h in headers] if headers else [()] * len(values),
        )
        self.assertEqual((batch.producer_id, batch.base_sequence), (7, 3))
        if codec_ == codec.CODEC_NONE:
            self.assertLessEqual(
                abs(builder.size - len(data)),
                4 * len(values) + 20 * sum(len(h) for h in headers or ()),
            )

    @settings(max_examples=property_examples(50), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(records=record_sets(), min_offset=st.integers(-5, 40))
    def test_min_offset(self, records, min_offset):  # type: ignore[no-untyped-def]
        values, keys, headers, timestamps = records
        data = build_batch(values, keys, headers=headers, timestamps=timestamps)
        expected = [r for r in all_records(data) if r.offset >= min_offset]
        (batch,) = read_batches(data)
        self.assertEqual(batch.records(min_offset), expected)  # decoded skipping
        self.assertEqual(len(batch.records()), len(values))
        self.assertEqual(batch.records(min_offset), expected)  # from the cache

    @settings(max_examples=property_examples(50), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(
        records=record_sets(),
        min_offset=st.one_of(st.none(), st.integers(-5, 40)),
        log_append=st.booleans(),
    )
    def test_fields(self, records, min_offset, log_append):  # type: ignore[no-untyped-def]
        """fields() holds what records() holds, as tuples, without caching anything."""
        values, keys, headers, timestamps = records
        data = build_batch(values, keys, headers=headers, timestamps=timestamps)
        if log_append:
            data = patch_batch(data, attributes=0x08, max_ts=999)
        (batch,) = read_batches(data)
        fields = batch.fields(min_offset)
        self.assertIsNone(batch._records)
        self.assertEqual([tuple(f) for f in fields], batch.records(min_offset))
        self.assertEqual([tuple(f) for f in batch.fields(min_offset)], batch.records(min_offset))

    def test_min_offset_with_gaps(self) -> None:
        """Offsets with gaps (as in compacted topics) are skipped by offset, not index."""
        data = build_batch([b"a", b"b", b"c"], timestamp=TS, base_offset=100)
        body = bytearray(data[BATCH_HEADER_SIZE:])
        # rewrite offset deltas 0, 1, 2 as 0, 5, 9 (1-byte zigzag varints)
        pos = 0
        for delta in (0, 5, 9):
            body[pos + 3] = delta * 2
            pos += 1 + body[pos] // 2
        data = patch_batch(with_body(data, bytes(body)), last_offset_delta=9)
        (batch,) = read_batches(data)
        self.assertEqual([r.offset for r in batch.records(104)], [105, 109])
        self.assertEqual(batch.next_offset, 110)

    def test_large_values_and_many_records(self) -> None:
        """Values and offsets past the lookup tables take the slow paths."""
        values = [b"x" * 20_000, b"", b"y" * 70_000] + [b"z"] * 20_000
        for c in [c for c in (codec.CODEC_NONE, codec.CODEC_LZ4) if c in CODECS]:
            keys = [b"k" * 17_000] * 3 + [b"k"] * (len(values) - 3)
            data = build_batch(values, keys, codec=c, timestamp=TS)
            records = all_records(data)
            self.assertEqual([r.value for r in records], values)
            self.assertEqual([r.key for r in records], keys)
            self.assertEqual(records[-1].offset, len(values) - 1)

    def test_negative_and_big_timestamp_deltas(self) -> None:
        timestamps = [TS, TS - 5, TS + 2**40, 0]
        data = build_batch([b"a"] * 4, timestamps=timestamps)
        (batch,) = read_batches(data)
        self.assertEqual([r.timestamp for r in batch.records()], timestamps)
        self.assertEqual((batch.base_timestamp, batch.max_timestamp), (TS, TS + 2**40))

    def test_log_append_time(self) -> None:
        data = build_batch([b"a", b"b"], timestamps=[5, 6])
        data = patch_batch(data, attributes=0x08, max_ts=999)
        (batch,) = read_batches(data)
        self.assertEqual(batch.timestamp_type, TimestampType.LOG_APPEND_TIME)
        self.assertEqual(
            [(r.timestamp, r.timestamp_type) for r in batch.records()],
            [(999, TimestampType.LOG_APPEND_TIME)] * 2,
        )

    def test_control_batches(self) -> None:
        for marker in (ControlType.COMMIT, ControlType.ABORT):
            data = build_control_batch(
                marker, producer_id=12, producer_epoch=3, coordinator_epoch=44, base_offset=9
            )
            (batch,) = read_batches(data)
            self.assertTrue(batch.is_control and batch.is_transactional)
            m = batch.control_marker
            assert m is not None
            self.assertEqual((m.type, m.version, m.coordinator_epoch), (marker, 0, 44))
            self.assertEqual(m.is_commit, marker == ControlType.COMMIT)
            self.assertEqual(m.is_abort, marker == ControlType.ABORT)
            self.assertEqual(
                (batch.producer_id, batch.producer_epoch, batch.base_offset), (12, 3, 9)
            )

    def test_control_batch_bad_key(self) -> None:
        data = build_batch([b""], [b"\x00"], is_control=True)
        (batch,) = read_batches(data)
        self.assertRaises(DecodeError, lambda: batch.control_marker)

    def test_several_batches(self) -> None:
        values = [b"%05d" % i * 20 for i in range(3000)]
        for c in CODECS:
            batches = build_batches(values, batch_size=16 * 1024, codec=c, base_sequence=2**31 - 10)
            self.assertGreater(len(batches), 4)
            if c == codec.CODEC_NONE:
                self.assertTrue(all(len(b) <= 16 * 1024 for b in batches))
            read = list(read_batches(b"".join(batches)))
            self.assertEqual([r.value for b in read for r in b.records()], values)
            self.assertEqual([r.offset for b in read for r in b.records()], list(range(3000)))
            self.assertEqual(read[0].base_sequence, 2**31 - 10)
            self.assertEqual(read[1].base_sequence, (2**31 - 10 + len(read[0])) % 2**31)

    def test_lazy_and_buffer_types(self) -> None:
        good = build_batch([b"a"], timestamp=TS)
        bad = bytearray(build_batch([b"b"], timestamp=TS, base_offset=1))
        bad[-1] ^= 0xFF
        for blob in (good + bad, bytearray(good + bad), memoryview(good + bad)):
            batches = read_batches(blob)
            self.assertEqual(next(batches).records()[0].value, b"a")
            self.assertRaises(ChecksumError, next, batches)

    def test_read_in_place_only_from_immutable_bytes(self) -> None:
        """Batches decode lazily: a view of bytes is read in place, a bytearray is copied first."""
        data = build_batch([b"abc"], timestamp=TS)
        (batch,) = read_batches(memoryview(data))
        self.assertIs(batch._payload.obj, data)
        mutable = bytearray(data)
        (batch,) = read_batches(mutable)
        mutable[-4:-1] = b"xyz"  # the value, changed after the batch was read
        self.assertEqual(batch.records()[0].value, b"abc")

    def test_record_type(self) -> None:
        r = Record(1, 2, TimestampType.CREATE_TIME, b"k", b"v", (("h", None),))
        self.assertEqual(
            (r.offset, r.timestamp, r.key, r.value, r.headers), (1, 2, b"k", b"v", (("h", None),))
        )
        self.assertEqual(r, (1, 2, 0, b"k", b"v", (("h", None),)))
        self.assertIn("offset=1", repr(r))
        self.assertEqual(Record(1, 2, TimestampType.CREATE_TIME, None, None).headers, ())


class BuilderTests(SynchronousTestCase):
    def test_batch_size(self) -> None:
        builder = RecordBatchBuilder(batch_size=1000)
        self.assertTrue(builder.append(b"x" * 2000))  # the first record always fits
        self.assertFalse(builder.append(b"x"))
        builder = RecordBatchBuilder(batch_size=1000)
        appended = 0
        while builder.append(b"v" * 100, b"key", timestamp=TS):
            appended += 1
        data = builder.build()
        self.assertEqual(len(list(read_batches(data))[0]), appended)
        self.assertLessEqual(len(data), 1000)
        self.assertGreater(len(data), 850)

    def test_default_timestamp(self) -> None:
        builder = RecordBatchBuilder()
        builder.append(b"x")
        (batch,) = read_batches(builder.build())
        self.assertGreater(batch.base_timestamp, TS)

    def test_types(self) -> None:
        builder = RecordBatchBuilder()
        self.assertRaises(TypeError, builder.append, "text")
        self.assertRaises(TypeError, builder.append, b"x", 5)
        self.assertRaises(TypeError, build_batch, [b"x"], headers=[[("k", "v")]])
        self.assertRaises(TypeError, build_batch, ["x"])

    def test_errors(self) -> None:
        self.assertRaises(EncodeError, build_batch, [])
        self.assertRaises(EncodeError, build_batch, [b"a"], [b"a", b"b"])
        self.assertRaises(EncodeError, build_batch, [b"a"], timestamps=[1, 2])
        self.assertRaises(UnsupportedCodecError, build_batch, [b"a"], codec=9)
        self.assertRaises(UnsupportedCodecError, RecordBatchBuilder, 5)

    def test_bytes_like(self) -> None:
        data = build_batch(
            [bytearray(b"ab"), memoryview(b"cd")], [b"k", bytearray(b"l")], timestamp=TS
        )
        self.assertEqual(
            [(r.key, r.value) for r in all_records(data)], [(b"k", b"ab"), (b"l", b"cd")]
        )
        data = build_batch(  # the per-record path (a null value, headers)
            [memoryview(b"ab"), None],
            [None, bytearray(b"k")],
            headers=[[("h", memoryview(b"v"))], []],
            timestamp=TS,
        )
        self.assertEqual(
            [(r.key, r.value, r.headers) for r in all_records(data)],
            [(None, b"ab", (("h", b"v"),)), (b"k", None, ())],
        )


class MalformedTests(SynchronousTestCase):
    def consume(
        self, data: bytes, *, min_offset: int | None = None, check_crc: bool = True
    ) -> None:
        """Read everything in *data*: only records or DecodeError may come out."""
        try:
            for batch in read_batches(data, check_crc=check_crc):
                records = batch.records(min_offset)
                self.assertTrue(all(type(r) is Record for r in records))
                self.assertIsInstance(batch.control_marker, (ControlMarker, type(None)))
        except DecodeError:
            pass

    def sample(self, c: int = codec.CODEC_NONE) -> bytes:
        return build_batch(
            [b"value-1", None, b"v" * 70],
            [None, b"key", b"k"],
            headers=[[("h", b"1"), ("n", None)], [], [("x", b"")]],
            timestamps=[TS, TS + 1, TS + 200],
            codec=c,
            base_offset=1000,
        )

    def test_truncated_anywhere(self) -> None:
        """A batch cut anywhere is a partial trailing batch: dropped silently."""
        for c in CODECS:
            data = self.sample(c)
            first = build_batch([b"first"], timestamp=TS, base_offset=5)
            for cut in range(len(data)):
                self.assertEqual(list(read_batches(data[:cut])), [])
                batches = list(read_batches(first + data[:cut]))
                self.assertEqual([b.base_offset for b in batches], [5])
            self.assertEqual(len(all_records(first + data)), 4)

    def test_inconsistent_length(self) -> None:
        """A batch whose declared length fits but cuts its records: DecodeError."""
        for c in CODECS:
            data = self.sample(c)
            for cut in range(26, len(data)):
                if cut < BATCH_HEADER_SIZE:
                    short = data[:8] + struct.pack(">i", cut - 12) + data[12:cut]
                else:
                    short = patch_batch(data[:cut], length=cut - 12)
                with self.assertRaises(DecodeError, msg=(c, cut)):
                    for batch in read_batches(short):
                        batch.records()

    def test_wrong_record_count(self) -> None:
        data = self.sample()
        for count in (0, 1, 2, 4, 1000, -1):
            with self.assertRaises(DecodeError, msg=count):
                for batch in read_batches(patch_batch(data, count=count)):
                    batch.records()

    def test_records_count_exceeding_data_with_min_offset(self) -> None:
        data = patch_batch(self.sample(), count=10)
        (batch,) = read_batches(data)
        self.assertRaises(DecodeError, batch.records, 1002)

    def test_flipped_bytes(self) -> None:
        """A flipped bit anywhere the CRC covers (or in the CRC) is a ChecksumError."""
        for c in (codec.CODEC_NONE, codec.CODEC_GZIP):
            data = self.sample(c)
            for pos in range(17, len(data)):
                for bit in (0x01, 0x80):
                    bad = bytearray(data)
                    bad[pos] ^= bit
                    with self.assertRaises(ChecksumError) as ctx:
                        list(read_batches(bytes(bad)))
                    self.assertEqual(ctx.exception.batch_offset, 1000)
                    self.assertIn("1000", str(ctx.exception))
                    # Without the check, only DecodeError may come out.
                    self.consume(bytes(bad), check_crc=False)

    def test_bad_header_fields(self) -> None:
        data = self.sample()
        self.assertRaises(DecodeError, list, read_batches(patch_batch(data, magic=3)))
        self.assertRaises(DecodeError, list, read_batches(patch_batch(data, length=5)))
        self.assertRaises(DecodeError, list, read_batches(patch_batch(data, length=-1)))
        self.assertRaises(DecodeError, list, read_batches(patch_batch(data, attributes=6)))
        self.assertRaises(
            DecodeError, list, read_batches(data[:8] + struct.pack(">i", 30) + data[12:42])
        )

    def test_bad_varints(self) -> None:
        data = self.sample()
        cases = [
            b"\xff" * 12,  # a varint longer than 10 bytes
            b"\x03" + b"\x00" * 10,  # negative record length
            b"\x0c\x00\x00\x00\x05abc\x01\x00",  # negative key length (-3)
            b"\x0c\x00\x00\x00\x01\x05abc\x00",  # negative value length (-3)
            b"\x0e\x00\x00\x00\x01\x01\x02\x02\xff\xfe\x01",  # a header key that is not UTF-8
            b"\x0c\x00\x00\x00\x01\x01\x03\x00\x00\x00\x00\x00",  # negative header count
            b"\x0c\x00\x00\x00\x01\x01\x02\x08ab\x01",  # header key past the end
            b"\x0c\x00\x00\x00\x01\x01\x02\x00\x08ab",  # header value past the end
            b"\x0a\x00\x00\x00\x01\x01\x00\x00\x00",  # record longer than its fields
            b"\x06\x00\x00\x00\x01\x01\x00\x00",  # record shorter than its fields
        ]
        for body in cases:
            bad = patch_batch(with_body(data, body), count=1)
            with self.assertRaises(DecodeError, msg=body):
                for batch in read_batches(bad):
                    batch.records()
            with self.assertRaises(DecodeError, msg=body):
                for batch in read_batches(bad):
                    batch.records(1005)

    def test_non_canonical_varints(self) -> None:
        """Lengths written with more bytes than needed mean what they say (81 00 is -1: null)."""
        data = self.sample()
        body = b"\x10\x00\x00\x00\x81\x00\x81\x00\x00"  # record length 8, null key and value
        (record,) = all_records(patch_batch(with_body(data, body), count=1))
        self.assertEqual((record.key, record.value, record.headers), (None, None, ()))

    def test_decompression_bomb(self) -> None:
        body = codec.compress(codec.CODEC_GZIP, bytes(8 << 20))
        data = patch_batch(
            with_body(self.sample(codec.CODEC_GZIP), body), attributes=codec.CODEC_GZIP
        )
        (batch,) = read_batches(data, max_size=1 << 20)
        with self.assertRaises(DecodeError) as ctx:
            batch.records()
        self.assertIn("max_size", str(ctx.exception))

    def test_corrupt_compressed_records(self) -> None:
        for c in CODECS[1:]:
            data = self.sample(c)
            bad = with_body(data, b"\x00" * 40)
            (batch,) = read_batches(bad)
            self.assertRaises(DecodeError, batch.records)

    @settings(max_examples=property_examples(300), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(st.binary(max_size=400), st.booleans())
    def test_random_bytes(self, data: bytes, check_crc: bool) -> None:
        self.consume(data, check_crc=check_crc)

    @needs_codecs(codec.CODEC_SNAPPY, codec.CODEC_LZ4, codec.CODEC_ZSTD)  # any codec bits
    @settings(max_examples=property_examples(500), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(
        body=st.binary(max_size=200),
        count=st.integers(-2, 20),
        attributes=st.integers(0, 0x3F),
        min_offset=st.one_of(st.none(), st.integers(0, 30)),
    )
    def test_random_records(
        self, body: bytes, count: int, attributes: int, min_offset: int | None
    ) -> None:
        """Garbage inside a batch with a valid header and CRC: DecodeError only."""
        data = patch_batch(with_body(self.sample(), body), count=count, attributes=attributes)
        self.consume(data, min_offset=min_offset)

    @settings(max_examples=property_examples(300), deadline=None, suppress_health_check=BOTH_PATHS)
    @given(
        pos=st.integers(min_value=0),
        value=st.integers(0, 255),
        codec_=st.sampled_from(CODECS),
    )
    def test_mutated_records(self, pos: int, value: int, codec_: int) -> None:
        """A changed byte in the records with a valid CRC: DecodeError or records."""
        data = self.sample(codec_)
        body = bytearray(data[BATCH_HEADER_SIZE:])
        body[pos % len(body)] = value
        try:
            for batch in read_batches(with_body(data, bytes(body))):
                for r in batch.records():
                    self.assertIsInstance(r, Record)
        except DecodeError:
            pass

    def test_empty(self) -> None:
        self.assertEqual(list(read_batches(b"")), [])
        self.assertEqual(list(read_batches(None)), [])
        self.assertEqual(list(read_batches(b"\x00" * 11)), [])


class _PurePython:
    """Run a test class's tests with the pure-Python record code (the reference)."""

    def setUp(self) -> None:
        self.patch(batch_module, "_compiled_decode", None)  # type: ignore[attr-defined]
        self.patch(builder_module, "_compiled_encode", None)  # type: ignore[attr-defined]


class PurePythonRoundTripTests(_PurePython, RoundTripTests):
    pass


class PurePythonMalformedTests(_PurePython, MalformedTests):
    pass


class PurePythonBuilderTests(_PurePython, BuilderTests):
    pass
