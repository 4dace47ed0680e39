"""Tests of afkak.codec: round trips, interoperability, bounds and errors."""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from unittest import skipUnless

from hypothesis import given, settings, strategies as st
from kafka import codec as kafka_codec
from twisted.trial.unittest import SynchronousTestCase

from afkak import codec
from afkak._errors import DecodeError, UnsupportedCodecError
from afkak.test.helpers import FULL_PROPERTY_RUNS, optional_module, property_examples

# The optional codecs (afkak's extras): their tests skip where one is not installed.
snappy = optional_module("snappy")
lz4_frame = optional_module("lz4.frame")
zstandard = optional_module("zstandard")
INSTALLED = {
    codec.CODEC_NONE: True,
    codec.CODEC_GZIP: True,
    codec.CODEC_SNAPPY: snappy is not None,
    codec.CODEC_LZ4: lz4_frame is not None,
    codec.CODEC_ZSTD: zstandard is not None,
}
ALL_CODECS = [c for c, installed in INSTALLED.items() if installed]
COMPRESSING = ALL_CODECS[1:]
SAMPLE = b"".join(b"record %d with some text; " % i for i in range(5000))
#: What every compression level round trips: SAMPLE under the "ci" hypothesis profile,
#: its first 20 KB in the quick suite (zstd's top levels take a second on all of it).
LEVEL_SAMPLE = SAMPLE if FULL_PROPERTY_RUNS else SAMPLE[:20_000]


class CompressionLevelTests(SynchronousTestCase):
    """Issue 24: KIP-390's compression levels (Java's ranges) for gzip, lz4 and zstd."""

    def test_every_level_round_trips(self) -> None:
        for c, (low, high) in codec.COMPRESSION_LEVELS.items():
            if not INSTALLED[c]:
                continue
            levels = range(low, high + 1) if high - low < 30 else (low, -5, -1, 1, 3, 10, 19, high)
            for level in levels:
                compressed = codec.compress(c, LEVEL_SAMPLE, level)
                self.assertEqual(codec.decompress(c, compressed), LEVEL_SAMPLE, (c, level))

    def test_levels_change_the_output(self) -> None:
        for c, fast, small in (
            (codec.CODEC_GZIP, 1, 9),
            (codec.CODEC_LZ4, 1, 12),
            (codec.CODEC_ZSTD, -5, 19),
        ):
            if not INSTALLED[c]:
                continue
            self.assertGreater(
                len(codec.compress(c, SAMPLE, fast)), len(codec.compress(c, SAMPLE, small)), c
            )

    def test_the_default_is_kafkas(self) -> None:
        """gzip 6 and zstd 3 as Kafka's defaults; lz4 keeps afkak's fast mode."""
        self.assertEqual(
            codec.compress(codec.CODEC_GZIP, SAMPLE), codec.compress(codec.CODEC_GZIP, SAMPLE, 6)
        )
        if INSTALLED[codec.CODEC_ZSTD]:
            self.assertEqual(
                codec.compress(codec.CODEC_ZSTD, SAMPLE),
                codec.compress(codec.CODEC_ZSTD, SAMPLE, 3),
            )

    def test_bad_levels(self) -> None:
        for c, level, error in (
            (codec.CODEC_GZIP, 0, ValueError),
            (codec.CODEC_GZIP, 10, ValueError),
            (codec.CODEC_LZ4, 18, ValueError),
            (codec.CODEC_ZSTD, 23, ValueError),
            (codec.CODEC_SNAPPY, 1, ValueError),
            (codec.CODEC_NONE, 1, ValueError),
            (codec.CODEC_GZIP, 1.5, TypeError),
            (codec.CODEC_GZIP, True, TypeError),
        ):
            with self.assertRaises(error, msg=(c, level)):
                codec.check_compression_level(c, level)


class RoundTripTests(SynchronousTestCase):
    @settings(max_examples=property_examples(60), deadline=None)
    @given(codec_=st.sampled_from(ALL_CODECS), data=st.binary(max_size=100_000))
    def test_round_trip(self, codec_: int, data: bytes) -> None:
        self.assertEqual(codec.decompress(codec_, codec.compress(codec_, data)), data)

    def test_large_round_trip(self) -> None:
        """Data over several snappy blocks and lz4 blocks."""
        data = SAMPLE * 4
        for c in COMPRESSING:
            compressed = codec.compress(c, data)
            self.assertLess(len(compressed), len(data), c)
            self.assertEqual(codec.decompress(c, compressed), data)

    def test_has(self) -> None:
        self.assertTrue(codec.has_gzip())
        self.assertEqual(codec.has_snappy(), INSTALLED[codec.CODEC_SNAPPY])
        self.assertEqual(codec.has_lz4(), INSTALLED[codec.CODEC_LZ4])
        self.assertEqual(codec.has_zstd(), INSTALLED[codec.CODEC_ZSTD])

    @skipUnless(snappy, "python-snappy is not installed")
    def test_xerial_framing(self) -> None:
        compressed = codec.compress(codec.CODEC_SNAPPY, SAMPLE)
        self.assertEqual(compressed[:16], b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))

    @skipUnless(lz4_frame, "lz4 is not installed")
    def test_lz4_independent_blocks(self) -> None:
        assert lz4_frame is not None
        info = lz4_frame.get_frame_info(codec.compress(codec.CODEC_LZ4, SAMPLE))
        self.assertFalse(info["block_linked"])
        self.assertEqual(info["block_size"], 64 * 1024)


class InteropTests(SynchronousTestCase):
    """Data compressed by kafka-python decompresses here, and vice versa."""

    def test_theirs_to_ours(self) -> None:
        cases = [
            (codec.CODEC_GZIP, kafka_codec.gzip_encode, {}),
            (codec.CODEC_SNAPPY, kafka_codec.snappy_encode, {}),
            (codec.CODEC_SNAPPY, kafka_codec.snappy_encode, {"xerial_compatible": False}),
            (codec.CODEC_LZ4, kafka_codec.lz4_encode, {}),
            (codec.CODEC_ZSTD, kafka_codec.zstd_encode, {}),
        ]
        for c, encode, options in cases:
            if INSTALLED[c]:
                self.assertEqual(codec.decompress(c, encode(SAMPLE, **options)), SAMPLE, c)

    def test_ours_to_theirs(self) -> None:
        decoders = {
            codec.CODEC_GZIP: kafka_codec.gzip_decode,
            codec.CODEC_SNAPPY: kafka_codec.snappy_decode,
            codec.CODEC_LZ4: kafka_codec.lz4_decode,
            codec.CODEC_ZSTD: kafka_codec.zstd_decode,
        }
        for c, decode in decoders.items():
            if not INSTALLED[c]:
                continue
            self.assertEqual(decode(codec.compress(c, SAMPLE)), SAMPLE, c)

    def test_gzip_concatenated_members(self) -> None:
        data = codec.compress(codec.CODEC_GZIP, b"abc") + codec.compress(codec.CODEC_GZIP, b"def")
        self.assertEqual(codec.decompress(codec.CODEC_GZIP, data), b"abcdef")


def _broken_lz4_header(frame: bytes) -> bytes:
    """Recompute the frame's header checksum the KAFKA-1493 way: over the magic too."""
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    checksum = (codec._xxh32_short(frame[0:end]) >> 8) & 0xFF
    return frame[:end] + bytes((checksum,)) + frame[end + 1 :]


@skipUnless(lz4_frame, "lz4 is not installed")
class LegacyLz4Tests(SynchronousTestCase):
    def test_xxh32(self) -> None:
        self.assertEqual(codec._xxh32_short(b""), 0x02CC5D05)
        self.assertEqual(codec._xxh32_short(b"abc"), 0x32D153FF)

    def test_xxh32_matches_lz4_header_checksums(self) -> None:
        for size in (1, 300, 70_000):
            for store_size in (False, True):
                frame = lz4_frame.compress(SAMPLE[:size], store_size=store_size)
                end = 14 if store_size else 6
                self.assertEqual(bool(frame[4] & 0x08), store_size)
                checksum = (codec._xxh32_short(frame[4:end]) >> 8) & 0xFF
                self.assertEqual(checksum, frame[end], size)

    def test_broken_header_checksum(self) -> None:
        for store_size in (False, True):
            frame = lz4_frame.compress(SAMPLE, store_size=store_size)
            broken = _broken_lz4_header(frame)
            self.assertNotEqual(broken, frame)
            self.assertRaises(DecodeError, codec.decompress, codec.CODEC_LZ4, broken)
            self.assertEqual(codec.decompress_lz4_legacy(broken), SAMPLE)

    def test_truncated_header(self) -> None:
        self.assertRaises(DecodeError, codec.decompress_lz4_legacy, b"\x04\x22\x4d\x18\x60")


class BoundTests(SynchronousTestCase):
    """Decompression stops at max_size without allocating the whole output."""

    LIMIT = 1 << 20
    #: The bomb's decompressed size: 256 MiB under the "ci" profile, 64 MiB (still 16
    #: times what the decompressor may hold) in the quick suite, where making it costs.
    SIZE = (256 if FULL_PROPERTY_RUNS else 64) << 20

    def bomb(self, c: int) -> bytes:
        if c == codec.CODEC_ZSTD:
            # Streamed without a content size and with a small window, so that
            # only the output size can stop it.
            cctx = zstandard.ZstdCompressor(
                compression_params=zstandard.ZstdCompressionParameters(window_log=20)
            )
            obj = cctx.compressobj()
            return obj.compress(bytes(self.SIZE)) + obj.flush()
        return codec.compress(c, bytes(self.SIZE))

    def test_bombs(self) -> None:
        for c in COMPRESSING:
            data = self.bomb(c)
            self.assertLess(len(data), 16 << 20)
            tracemalloc.start()
            try:
                with self.assertRaises(DecodeError) as ctx:
                    codec.decompress(c, data, max_size=self.LIMIT)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            self.assertIn("max_size", str(ctx.exception))
            self.assertLess(peak, 4 * self.LIMIT + len(data), c)

    def test_exact_limit(self) -> None:
        for c in ALL_CODECS:
            data = codec.compress(c, SAMPLE)
            self.assertEqual(codec.decompress(c, data, max_size=len(SAMPLE)), SAMPLE)
            self.assertRaises(DecodeError, codec.decompress, c, data, max_size=len(SAMPLE) - 1)

    @skipUnless(snappy, "python-snappy is not installed")
    def test_snappy_declared_length(self) -> None:
        """A raw snappy block declaring a huge length is refused before decoding."""
        block = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10
        with self.assertRaises(DecodeError) as ctx:
            codec.decompress(codec.CODEC_SNAPPY, block, max_size=self.LIMIT)
        self.assertIn("max_size", str(ctx.exception))


class CorruptTests(SynchronousTestCase):
    def test_truncated(self) -> None:
        for c in COMPRESSING:
            data = codec.compress(c, SAMPLE)
            for cut in (0, 1, 5, len(data) // 2, len(data) - 1):
                with self.assertRaises(DecodeError, msg=(c, cut)):
                    codec.decompress(c, data[:cut])

    def test_trailing_garbage(self) -> None:
        for c in COMPRESSING:
            with self.assertRaises(DecodeError, msg=c):
                codec.decompress(c, codec.compress(c, SAMPLE) + b"garbage!")

    def test_garbage(self) -> None:
        for c in COMPRESSING:
            for data in (b"\x00" * 64, b"\xff" * 64, b"\x82SNAPPY\x00" + b"\xff" * 20):
                with self.assertRaises(DecodeError, msg=(c, data)):
                    codec.decompress(c, data)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(c=st.sampled_from(COMPRESSING), data=st.binary(max_size=200))
    def test_random_input(self, c: int, data: bytes) -> None:
        try:
            out = codec.decompress(c, data, max_size=1 << 16)
        except DecodeError:
            return
        self.assertLessEqual(len(out), 1 << 16)

    @settings(max_examples=property_examples(100), deadline=None)
    @given(
        c=st.sampled_from(COMPRESSING),
        pos=st.integers(min_value=0),
        byte=st.integers(min_value=0, max_value=255),
    )
    def test_flipped_byte(self, c: int, pos: int, byte: int) -> None:
        data = bytearray(codec.compress(c, SAMPLE[:3000]))
        data[pos % len(data)] = byte
        try:
            codec.decompress(c, bytes(data), max_size=1 << 16)
        except DecodeError:
            pass


class UnsupportedTests(SynchronousTestCase):
    def test_unknown_codec(self) -> None:
        for c in (5, 7, -1, 99):
            self.assertRaises(UnsupportedCodecError, codec.compress, c, b"x")
            self.assertRaises(UnsupportedCodecError, codec.decompress, c, b"x")

    def test_missing_library(self) -> None:
        for c, attr, extra in (
            (codec.CODEC_SNAPPY, "_snappy", "snappy"),
            (codec.CODEC_LZ4, "_lz4", "lz4"),
            (codec.CODEC_ZSTD, "_zstd", "zstd"),
        ):
            self.patch(codec, attr, None)
            for call in (codec.compress, codec.decompress):
                with self.assertRaises(UnsupportedCodecError) as ctx:
                    call(c, b"x")
                self.assertIn(f"pip install afkak[{extra}]", str(ctx.exception))
        self.assertFalse(codec.has_snappy() or codec.has_lz4() or codec.has_zstd())

    def test_none_codec(self) -> None:
        self.assertEqual(codec.compress(codec.CODEC_NONE, bytearray(b"ab")), b"ab")
        self.assertEqual(codec.decompress(codec.CODEC_NONE, b"ab"), b"ab")
        self.assertRaises(DecodeError, codec.decompress, codec.CODEC_NONE, b"abc", 2)
        self.assertEqual(zlib.crc32(b""), 0)  # sanity: zlib is importable
