"""The compiled record decoder against the pure-Python reference: same records, same errors.

afkak/test/test_records.py runs every record test on both paths; this module
feeds both decoders the same bytes, valid and hostile, and compares what comes
out, value for value and type for type.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from hypothesis import example, given, settings, strategies as st
from twisted.trial.unittest import SkipTest, SynchronousTestCase

import afkak
from afkak import codec
from afkak._errors import DecodeError
from afkak.codec import CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from afkak.records import TimestampType, batch as batch_module, build_batch, read_batches
from afkak.test.helpers import needs_codecs, property_examples
from afkak.test.test_records import (
    BATCH_HEADER_SIZE,
    CODECS,
    TS,
    patch_batch,
    record_sets,
    with_body,
)

try:
    from afkak.records import _crecords
except ImportError:
    _crecords = None  # type: ignore[assignment]


def _zigzag(n: int) -> bytes:
    """A zigzag varint of any size (the reference encoder stops at 64 bits)."""
    u = 2 * n if n >= 0 else -2 * n - 1
    groups = [(u >> shift) & 0x7F for shift in range(0, max(u.bit_length(), 1), 7)]
    return bytes([g | 0x80 for g in groups[:-1]] + groups[-1:])


def outcome(data: bytes, compiled: bool, min_offset: int | None = None) -> object:
    """The records of *data* read on one path, or the error that reading raised."""
    decode = _crecords.decode_records if compiled else None
    saved = batch_module._compiled_decode
    batch_module._compiled_decode = decode
    try:
        return [
            [(type(r), tuple(map(type, r)), r) for r in b.records(min_offset)]
            for b in read_batches(data)
        ]
    except DecodeError:
        return DecodeError
    finally:
        batch_module._compiled_decode = saved


#: Random records sections, record counts and base offsets/timestamps (see garbage_batch).
GARBAGE = {
    "body": st.binary(max_size=120),
    "count": st.integers(0, 12),
    "base": st.sampled_from([0, 2**63 - 1, -(2**63), 1000]),
}


def garbage_batch(body: bytes, count: int, base: int) -> bytes:
    """A valid batch header announcing *count* records, then *body* as its records."""
    data = build_batch([b"x"], timestamp=base, base_offset=base)
    return patch_batch(with_body(data, body), count=count)


def mutated_batch(pos: int, value: int, codec_: int) -> bytes:
    """A batch of four varied records, its records section (decompressed) with one byte changed."""
    data = build_batch(
        [b"value-1", None, b"v" * 70, b"w" * 300],
        [None, b"key", b"k", b""],
        headers=[[("h", b"1"), ("n", None)], [], [("x", b"")], [("\u00e9", b"z" * 200)]],
        timestamps=[TS, TS + 1, TS + 200, TS - 70_000],
        codec=codec_,
        base_offset=1000,
    )
    body = bytearray(codec.decompress(codec_, data[BATCH_HEADER_SIZE:]))
    body[pos % len(body)] = value
    return patch_batch(with_body(data, bytes(body)), attributes=0)


class ExtensionBuildTests(SynchronousTestCase):
    def test_built_where_required(self) -> None:
        """tools/test.sh sets AFKAK_REQUIRE_EXTENSIONS: CI fails if the build silently fell back."""
        if os.environ.get("AFKAK_NO_EXTENSIONS"):
            self.assertFalse(batch_module.COMPILED)  # the pure-Python run, by request
            return
        if not os.environ.get("AFKAK_REQUIRE_EXTENSIONS"):
            raise SkipTest("AFKAK_REQUIRE_EXTENSIONS is not set")
        self.assertIsNotNone(_crecords, "afkak.records._crecords was not built")
        self.assertTrue(batch_module.COMPILED)

    def test_imported_from_this_tree(self) -> None:
        if _crecords is None:
            raise SkipTest("the compiled record codec is not built")
        root = os.path.dirname(afkak.__file__)
        self.assertTrue(_crecords.__file__.startswith(root), (_crecords.__file__, root))

    def test_disabled_by_environment(self) -> None:
        self.patch(os, "environ", {**os.environ, "AFKAK_NO_EXTENSIONS": "1"})
        self.assertIsNone(batch_module.compiled_records())


class CompiledCase(SynchronousTestCase):
    """Tests of the compiled record code: skipped where it is not built."""

    def setUp(self) -> None:
        if _crecords is None:
            raise SkipTest("the compiled record codec is not built")


class SamePathsTests(CompiledCase):
    """Byte for byte, the compiled decoder returns what the reference returns."""

    def assertSame(self, data: bytes, min_offset: int | None = None) -> object:
        expected = outcome(data, False, min_offset)
        self.assertEqual(outcome(data, True, min_offset), expected)
        return expected

    @settings(max_examples=property_examples(300), deadline=None)
    @given(
        records=record_sets(),
        codec_=st.sampled_from(CODECS),
        base_offset=st.integers(0, 2**62),
        log_append=st.booleans(),
        min_offset=st.one_of(st.none(), st.integers(0, 40)),
    )
    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_valid_batches(self, records, codec_, base_offset, log_append, min_offset):  # type: ignore[no-untyped-def]
        values, keys, headers, timestamps = records
        data = build_batch(
            values, keys, headers=headers, timestamps=timestamps, timestamp=TS,
            codec=codec_, base_offset=base_offset,
        )  # fmt: skip
        if log_append:
            data = patch_batch(data, attributes=codec_ | 0x08)
        result = self.assertSame(data, None if min_offset is None else base_offset + min_offset)
        self.assertIsInstance(result, list)

    @settings(max_examples=property_examples(1000), deadline=None)
    @given(**GARBAGE)
    def test_random_records(self, body: bytes, count: int, base: int) -> None:
        """Garbage records: the same records or the same DecodeError."""
        self.assertSame(garbage_batch(body, count, base))

    @settings(max_examples=property_examples(1000), deadline=None)
    @given(
        pos=st.integers(min_value=0),
        value=st.integers(0, 255),
        codec_=st.sampled_from([codec.CODEC_NONE, codec.CODEC_GZIP]),
    )
    # a null value written as the two-byte varint 81 00: the reference read b""
    @example(pos=29, value=0x81, codec_=codec.CODEC_NONE)
    def test_mutated_records(self, pos: int, value: int, codec_: int) -> None:
        self.assertSame(mutated_batch(pos, value, codec_))

    @settings(max_examples=property_examples(500), deadline=None)
    @given(
        fields=st.lists(
            st.one_of(
                st.integers(-(2**70), 2**70).map(_zigzag),
                st.integers(-3, 20).map(_zigzag),
                st.binary(max_size=8),
            ),
            max_size=14,
        ),
        count=st.integers(1, 3),
    )
    def test_varint_fields(self, fields: list[bytes], count: int) -> None:
        """Records made of varints of every size, 10-byte ones beyond 64 bits included."""
        data = build_batch([b"x"], timestamp=TS, base_offset=7)
        self.assertSame(patch_batch(with_body(data, b"".join(fields)), count=count))

    def test_numbers_beyond_64_bits(self) -> None:
        """Offsets and timestamps past int64 are left to the reference, which keeps them."""
        data = build_batch([b"a"], timestamp=2**63 - 1, base_offset=2**63 - 1)
        record = b"\x00" + _zigzag(5) + _zigzag(5) + b"\x01\x02a\x00"
        body = _zigzag(len(record)) + record
        (expected,) = self.assertSame(patch_batch(with_body(data, body), count=1))
        record = expected[0][2]
        self.assertEqual((record.offset, record.timestamp), (2**63 + 4, 2**63 + 4))
        self.assertIs(record.timestamp_type, TimestampType.CREATE_TIME)
        self.assertIsNone(
            _crecords.decode_records(body, 0, 1, 2**63 - 1, 2**63 - 1, TimestampType.CREATE_TIME)
        )

    def test_buffer_types(self) -> None:
        body = build_batch([b"ab"], timestamp=TS)[BATCH_HEADER_SIZE:]
        for buf in (body, bytearray(body), memoryview(body)):
            (r,) = _crecords.decode_records(buf, 0, 1, 0, TS, TimestampType.CREATE_TIME)
            self.assertEqual(r, (0, TS, TimestampType.CREATE_TIME, None, b"ab", ()))


class SameMessagesTests(CompiledCase):
    """The compiled wrapping of records into afkak's message tuples matches the reference."""

    @settings(max_examples=property_examples(200), deadline=None)
    @given(
        records=record_sets(),
        magic=st.sampled_from([0, 1, 2]),
        prefix=st.sampled_from([(), ("topic", 3)]),
    )
    def test_wrapped_records(self, records, magic, prefix):  # type: ignore[no-untyped-def]
        from afkak.common import Message, OffsetAndMessage, SourcedMessage
        from afkak.records.messages import _wrap_records

        values, keys, headers, timestamps = records
        data = build_batch(values, keys, headers=headers, timestamps=timestamps, timestamp=TS)
        (batch,) = read_batches(data)
        cls = SourcedMessage if prefix else OffsetAndMessage
        expected = _wrap_records(batch.records(), magic, prefix, cls, Message)
        got = _crecords.wrap_records(batch.records(), magic, prefix, cls, Message)
        self.assertEqual(got, expected)
        for g, e in zip(got, expected, strict=True):
            self.assertIs(type(g), cls)
            self.assertIs(type(g[-1]), Message)
            self.assertEqual(vars(g[-1]), vars(e[-1]))  # timestamp, and headers when set
            self.assertEqual((g[-1].timestamp, g[-1].headers), (e[-1].timestamp, e[-1].headers))

    def test_not_tracked_by_the_cyclic_gc(self) -> None:
        """Fetched tuples hold only bytes, ints, str and such tuples: no cycle can go through them.

        Tuple subclasses are never untracked by CPython itself, and with a
        million fetched messages its collections cost as much as decoding
        them; the compiled code untracks what it builds.
        """
        import gc

        from afkak.common import Message, SourcedMessage

        # The compiled decoder even when AFKAK_NO_EXTENSIONS turned it off.
        self.patch(batch_module, "_compiled_decode", _crecords.decode_records)
        data = build_batch([b"v", None], [b"k", None], headers=[[("h", b"x")], []], timestamp=TS)
        body = data[BATCH_HEADER_SIZE:]
        records = _crecords.decode_records(body, 0, 2, 0, TS, TimestampType.CREATE_TIME)
        assert records is not None
        wrapped = _crecords.wrap_records(records, 2, ("t", 0), SourcedMessage, Message)
        tracked = [
            gc.is_tracked(o)
            for r, w in zip(records, wrapped, strict=True)
            for o in (r, w, w.message)
        ]
        self.assertEqual(tracked, [False] * 6)
        self.assertEqual(wrapped[0].message.headers, (("h", b"x"),))


class SameEncodingTests(CompiledCase):
    """The compiled encoder writes the reference's bytes, or leaves the batch to it."""

    def both(self, *args: object, **kwargs: object) -> bytes:
        """build_batch's result on the compiled path, checked against the reference's."""
        from afkak.records import builder

        compiled = build_batch(*args, **kwargs)
        saved = builder._compiled_encode
        builder._compiled_encode = None
        try:
            reference = build_batch(*args, **kwargs)
        finally:
            builder._compiled_encode = saved
        self.assertEqual(compiled, reference)
        return compiled

    @settings(max_examples=property_examples(300), deadline=None)
    @given(records=record_sets(), base_offset=st.integers(0, 2**40))
    def test_same_bytes(self, records, base_offset):  # type: ignore[no-untyped-def]
        values, keys, headers, timestamps = records
        self.both(values, keys, headers=headers, timestamps=timestamps, timestamp=TS)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(
        values=st.lists(st.one_of(st.none(), st.binary(max_size=20_000)), min_size=1, max_size=4),
        deltas=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=4, max_size=4),
    )
    def test_long_values_and_extreme_timestamps(self, values, deltas):  # type: ignore[no-untyped-def]
        base = 2**62
        stamps = [base + d // 2 for d in deltas[: len(values)]]
        self.both(values, [b"k"] * len(values), timestamps=stamps)

    def test_other_buffers_and_bad_types_go_to_the_reference(self) -> None:
        data = self.both([bytearray(b"ab"), memoryview(b"cd")], timestamp=TS)
        self.assertEqual([r.value for r in read_batches(data).__next__()], [b"ab", b"cd"])
        self.assertIsNone(_crecords.encode_records([bytearray(b"x")], None, None, 0))
        self.assertIsNone(_crecords.encode_records([b"x"], None, [2**64], 0))
        self.assertIsNone(_crecords.encode_records([b"x"], None, [0], 2**64))
        self.assertIsNone(_crecords.encode_records([b"x"], None, [-(2**63)], 1))  # delta overflows
        with self.assertRaises(TypeError):
            build_batch(["text"], timestamp=TS)  # type: ignore[list-item]

    def test_plain_headers(self) -> None:
        plain = _crecords.plain_headers
        self.assertTrue(plain([(("h", b"v"), ("\u00e9", None)), (), (("", b""),)]))
        self.assertTrue(plain([]))
        for odd in ([("h", b"v")], (["h", b"v"],), (("h",),), (("h", bytearray(b"v")),)):
            self.assertFalse(plain([(), odd]), odd)
        self.assertFalse(plain([(("\ud800", b"v"),)]))
        self.assertFalse(plain([((b"h", b"v"),)]))

    def test_headers(self) -> None:
        """Headers are encoded compiled; other shapes of them go to the reference."""
        encode = _crecords.encode_records
        headers = [(("h", b"v"), ("\u00e9", None)), (), [("", b"")]]
        body = encode([b"a", None, b"c"], [b"k", None, b"l"], [TS, TS + 1, TS - 1], TS, headers)
        self.assertIsNotNone(body)
        data = self.both(
            [b"a", None, b"c"], [b"k", None, b"l"], headers=headers, timestamps=[TS, TS + 1, TS - 1]
        )
        records = next(read_batches(data)).records()
        self.assertEqual(
            [r.headers for r in records], [(("h", b"v"), ("\u00e9", None)), (), (("", b""),)]
        )
        for odd in (
            [("h", bytearray(b"v"))],
            [["h", b"v"]],
            [("h",)],
            ("x",),
            [(b"h", b"v")],
            [("\ud800", b"v")],
        ):
            self.assertIsNone(encode([b"a"], None, None, 0, [odd]), odd)
        self.both([b"a"], headers=[[("h", bytearray(b"v"))]], timestamp=TS)
        with self.assertRaises(UnicodeEncodeError):
            build_batch([b"a"], headers=[[("\ud800", b"v")]], timestamp=TS)


def _blobs(
    n: int, valid: bytearray | None, offsets: bytearray, data: bytearray
) -> list[bytes | None]:
    """Arrow's binary layout read back: *n* items, null where *valid*'s bit is clear."""
    ends = struct.unpack_from(f"<{n + 1}i", offsets)
    return [
        bytes(data[ends[i] : ends[i + 1]])
        if valid is None or valid[i >> 3] >> (i & 7) & 1
        else None
        for i in range(n)
    ]


def column_rows(c: Any) -> list[tuple[object, ...]]:
    """The rows held by a RecordColumns, read back from its buffers in Arrow's layout.

    As the reference's records: (offset, timestamp, type, key, value[, headers]).
    """
    n = c.rows
    keys = _blobs(n, c.key_valid, c.key_offsets, c.key_data)
    values = _blobs(n, c.value_valid, c.value_offsets, c.value_data)
    assert (c.key_nulls, c.value_nulls) == (keys.count(None), values.count(None))
    assert (c.key_size, c.value_size) == (
        sum(len(k or b"") for k in keys),
        sum(len(v or b"") for v in values),
    )
    columns: list[list[Any]] = [
        list(struct.unpack_from(f"<{n}q", c.offsets)),
        list(struct.unpack_from(f"<{n}q", c.timestamps)),
        list(struct.unpack_from(f"<{n}i", c.types)),
        keys,
        values,
    ]
    if c.headers:
        h = c.header_count
        names = [k.decode() for k in _blobs(h, None, c.header_key_offsets, c.header_key_data)]
        found = _blobs(h, c.header_value_valid, c.header_value_offsets, c.header_value_data)
        assert c.header_value_nulls == found.count(None)
        pairs = list(zip(names, found, strict=True))
        ends = struct.unpack_from(f"<{n + 1}i", c.header_offsets)
        columns.append([tuple(pairs[ends[i] : ends[i + 1]]) for i in range(n)])
    return list(zip(*columns, strict=True))


def columns_outcome(data: bytes, start: int, end: int, hint: int, headers: bool = False) -> object:
    """The rows of *data* at offsets [start, end) through RecordColumns (None: left to the
    reference), or DecodeError."""
    columns = _crecords.RecordColumns(hint, hint, headers)
    try:
        for batch in read_batches(data):
            if not batch.add_to(columns, start, end):
                return None
    except DecodeError:
        return DecodeError
    return column_rows(columns)


def reference_outcome(data: bytes, start: int, end: int, headers: bool = False) -> object:
    try:
        return [
            (r[0], r[1], int(r[2]), r[3], r[4], *([r[5]] if headers else []))
            for b in read_batches(data)
            for r in b.records()
            if start <= r[0] < end
        ]
    except DecodeError:
        return DecodeError


class SameColumnsTests(CompiledCase):
    """Records decoded into column buffers (RecordColumns) are the reference's records."""

    @settings(max_examples=property_examples(300), deadline=None)
    @given(
        sets=st.lists(record_sets(), min_size=1, max_size=3),
        codec_=st.sampled_from(CODECS),
        base_offset=st.integers(0, 2**62),
        log_append=st.booleans(),
        window=st.tuples(st.integers(0, 40), st.integers(0, 100)),
        hint=st.integers(0, 64),
        headers=st.booleans(),
    )
    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_valid_batches(self, sets, codec_, base_offset, log_append, window, hint, headers):  # type: ignore[no-untyped-def]
        """Several batches, any window of offsets, buffers grown from any size."""
        data = b""
        offset = base_offset
        for values, keys, headers, timestamps in sets:
            batch = build_batch(
                values, keys, headers=headers, timestamps=timestamps, timestamp=TS,
                codec=codec_, base_offset=offset,
            )  # fmt: skip
            if log_append:
                batch = patch_batch(batch, attributes=codec_ | 0x08)
            data += batch
            offset += len(values)
        start, end = base_offset + window[0], base_offset + window[0] + window[1]
        expected = reference_outcome(data, start, end, headers)
        self.assertIsInstance(expected, list)
        self.assertEqual(columns_outcome(data, start, end, hint, headers), expected)

    @settings(max_examples=property_examples(1000), deadline=None)
    @given(
        pos=st.integers(min_value=0),
        value=st.integers(0, 255),
        codec_=st.sampled_from([codec.CODEC_NONE, codec.CODEC_GZIP]),
        headers=st.booleans(),
    )
    def test_mutated_records(self, pos: int, value: int, codec_: int, headers: bool) -> None:
        """Damaged records: the same rows or a DecodeError, as the reference."""
        data = mutated_batch(pos, value, codec_)
        got = columns_outcome(data, 0, 2**63 - 1, 1, headers)
        if got is not None:
            self.assertEqual(got, reference_outcome(data, 0, 2**63 - 1, headers))

    @settings(max_examples=property_examples(500), deadline=None)
    @given(**GARBAGE)
    def test_random_records(self, body: bytes, count: int, base: int) -> None:
        """Garbage: the same rows, the same DecodeError, or left to the reference."""
        data = garbage_batch(body, count, base)
        got = columns_outcome(data, -(2**63), 2**63 - 1, 4, True)
        if got is not None:
            self.assertEqual(got, reference_outcome(data, -(2**63), 2**63 - 1, True))

    def test_numbers_beyond_64_bits_are_left_to_the_reference(self) -> None:
        data = build_batch([b"a"], timestamp=2**63 - 1, base_offset=2**63 - 1)
        record = b"\x00" + _zigzag(5) + _zigzag(5) + b"\x01\x02a\x00"
        data = patch_batch(with_body(data, _zigzag(len(record)) + record), count=1)
        self.assertIsNone(columns_outcome(data, 0, 2**63 - 1, 1))

    def test_legacy_messages_are_left_to_the_reference(self) -> None:
        (batch,) = read_batches(build_batch([b"a"], timestamp=TS))
        batch.magic = 1
        self.assertFalse(batch.add_to(_crecords.RecordColumns(1, 1), 0, 10))
