"""Compression ratio and speed of each codec level afkak offers (KIP-390).

Builds uncompressed v2 record batches of about ``--batch-kib`` KiB from
``tools/bench_records.py``'s JSON-like 100-byte values, then for every level
of gzip, lz4 and zstd (``afkak.codec.COMPRESSION_LEVELS``; zstd from -5, the
range its fast levels are useful in, plus its default) compresses each batch
body with :func:`afkak.codec.compress` and decompresses it back.  It prints
the ratio (uncompressed / compressed bytes) and the compression and
decompression speed in MB of uncompressed data per CPU second (process time,
so a busy machine changes the figures less than wall time would; the best of
``--repeat`` runs).

Usage: python tools/bench_levels.py [--records N] [--batch-kib K] [--repeat R] [--rst]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_records import make_values  # noqa: E402

from afkak.codec import (  # noqa: E402
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    COMPRESSION_LEVELS,
    compress,
    decompress,
)
from afkak.records.builder import BATCH_HEADER_SIZE, build_batch  # noqa: E402


def batch_bodies(n: int, batch_kib: int) -> list[bytes]:
    """The uncompressed record sections of batches holding *n* values."""
    values = make_values(n)
    per_batch = max(1, batch_kib * 1024 // 110)
    return [
        build_batch(values[i : i + per_batch], timestamp=1_700_000_000_000)[BATCH_HEADER_SIZE:]
        for i in range(0, n, per_batch)
    ]


def cpu_best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return max(best, 1e-9)


def _compress_all(codec: int, level: int | None, bodies: list[bytes]) -> list[bytes]:
    return [compress(codec, body, level) for body in bodies]


def _decompress_all(codec: int, packed: list[bytes]) -> list[bytes]:
    return [decompress(codec, p) for p in packed]


def rows(bodies: list[bytes], repeat: int) -> list[tuple[str, str, float, float, float]]:
    raw = sum(map(len, bodies))
    settings: list[tuple[int, int | None]] = [(CODEC_SNAPPY, None)]
    for codec in (CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD):
        low, high = COMPRESSION_LEVELS[codec]
        settings.append((codec, None))
        settings += [(codec, level) for level in range(max(low, -5), high + 1)]
    out = []
    for codec, level in settings:
        packed = _compress_all(codec, level, bodies)
        ratio = raw / sum(map(len, packed))
        c = cpu_best(partial(_compress_all, codec, level, bodies), repeat)
        d = cpu_best(partial(_decompress_all, codec, packed), repeat)
        name = "default" if level is None else str(level)
        out.append((CODEC_NAMES[codec], name, ratio, raw / c / 1e6, raw / d / 1e6))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch-kib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rst", action="store_true", help="print an RST table")
    args = parser.parse_args()
    table = rows(batch_bodies(args.records, args.batch_kib), args.repeat)
    header = ("codec", "level", "ratio", "compress MB/s", "decompress MB/s")
    lines = [f"{c:<7} {lv:>8} {r:6.2f} {cs:14.0f} {ds:16.0f}" for c, lv, r, cs, ds in table]
    if args.rst:
        rule = "======= ======== ====== ============== ================"
        print(rule)
        print(f"{header[0]:<7} {header[1]:>8} {header[2]:>6} {header[3]:>14} {header[4]:>16}")
        print(rule)
        print("\n".join(lines))
        print(rule)
    else:
        print(f"{header[0]:<7} {header[1]:>8} {header[2]:>6} {header[3]:>14} {header[4]:>16}")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
