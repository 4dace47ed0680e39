"""Benchmark afkak's record batch encoding and decoding against kafka-python's.

Encodes and decodes (with CRC checks) N records of 100 bytes in batches of
about 64 KiB, uncompressed and with each codec, and prints records per second
for afkak and kafka-python 3's pure-Python record classes, measured in the
same run, and their ratio.  Each figure is the best of several repeats.

Usage: python tools/bench_records.py [--records N] [--repeat R] [--codec NAME ...]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from afkak.codec import CODEC_NAMES, has_lz4, has_snappy, has_zstd
from afkak.records import build_batches, read_batches

BATCH_SIZE = 64 * 1024
VALUE_SIZE = 100
TIMESTAMP = 1_700_000_000_000


def make_values(n: int) -> list[bytes]:
    """JSON-like values of VALUE_SIZE bytes: compressible, but not trivially."""
    rng = random.Random(42)
    out = []
    for i in range(n):
        head = b'{"id":%d,"user":"user-%d","score":%d,"tag":"' % (
            i,
            rng.randrange(10_000),
            rng.randrange(1_000_000),
        )
        pad = bytes(rng.choice(b"abcdefghijklmnop") for _ in range(VALUE_SIZE - len(head) - 2))
        out.append(head + pad + b'"}')
    return out


def best_rate(fn: Callable[[], object], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def afkak_encode(values: list[bytes], codec: int) -> bytes:
    return b"".join(build_batches(values, batch_size=BATCH_SIZE, codec=codec, timestamp=TIMESTAMP))


def afkak_decode(data: bytes) -> int:
    n = 0
    for batch in read_batches(data):
        n += len(batch.records())
    return n


def kafka_python_encode(values: list[bytes], codec: int) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    out = []
    i = 0
    while i < len(values):
        builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, BATCH_SIZE)
        offset = 0
        while i < len(values):
            if builder.append(offset, TIMESTAMP, None, values[i], []) is None:
                break
            offset += 1
            i += 1
        out.append(bytes(builder.build()))
    return b"".join(out)


def kafka_python_decode(data: bytes) -> int:
    from kafka.record import MemoryRecords

    records = MemoryRecords(data)
    n = 0
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise AssertionError("CRC mismatch")
        n += len(list(batch))
    return n


def available(codec: int) -> bool:
    return {2: has_snappy, 3: has_lz4, 4: has_zstd}.get(codec, lambda: True)()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--codec", action="append", choices=list(CODEC_NAMES.values()))
    args = parser.parse_args()
    names = args.codec or list(CODEC_NAMES.values())
    codecs = [c for c, name in CODEC_NAMES.items() if name in names and available(c)]
    values = make_values(args.records)
    n = args.records

    print(f"{n} records of {VALUE_SIZE} B in batches of ~{BATCH_SIZE // 1024} KiB", end="")
    print(f", best of {args.repeat} runs")
    print(f"{'codec':<8}{'op':<8}{'afkak rec/s':>14}{'kafka-python':>14}{'ratio':>8}")
    for codec in codecs:
        ours = afkak_encode(values, codec)
        theirs = kafka_python_encode(values, codec)
        assert afkak_decode(ours) == n and kafka_python_decode(ours) == n
        assert afkak_decode(theirs) == n
        rows = [
            (
                "encode",
                best_rate(partial(afkak_encode, values, codec), n, args.repeat),
                best_rate(partial(kafka_python_encode, values, codec), n, args.repeat),
            ),
            (
                "decode",
                best_rate(partial(afkak_decode, ours), n, args.repeat),
                best_rate(partial(kafka_python_decode, theirs), n, args.repeat),
            ),
        ]
        for op, a, k in rows:
            print(f"{CODEC_NAMES[codec]:<8}{op:<8}{a:>14,.0f}{k:>14,.0f}{a / k:>7.1f}x")


if __name__ == "__main__":
    main()
