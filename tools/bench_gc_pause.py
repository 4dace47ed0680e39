#!/usr/bin/env python3
"""Why the consumer pauses the cyclic GC while it decodes a fetch (afkak/consumer/_messages.py).

Decodes 1 MiB fetches (20 batches of 500 records of 100 bytes) into SourcedMessages, 30 per
round, with the collector running and with it paused around the decoding only, as the
consumer does; the processor keeps the last 3 fetches' messages alive.  Run with a live
application heap of N objects (default 0 and 1,000,000).  Bounded: 3 rounds of each.

Usage: python tools/bench_gc_pause.py [N ...]
"""

from __future__ import annotations

import gc
import sys
import time
from typing import Any

from afkak.consumer._messages import _sourced_messages
from afkak.records import build_batch, read_batches

FETCH = b"".join(
    build_batch([b"v" * 100] * 500, [b"k%d" % i for i in range(500)], base_offset=j * 500)
    for j in range(20)
)


def decode_fetches(pause: bool, kept: list[Any]) -> float:
    began = time.perf_counter()
    for _ in range(30):
        batches = read_batches(FETCH)
        if pause:
            gc.disable()
        try:
            messages = _sourced_messages("t", 0, batches, 0)
        finally:
            if pause:
                gc.enable()
        kept.append(messages)
        del kept[:-3]
    return time.perf_counter() - began


def main(argv: list[str]) -> None:
    for size in [int(a) for a in argv[1:]] or [0, 1_000_000]:
        heap = [{"x": [i]} for i in range(size)]
        kept: list[Any] = []
        for _ in range(3):
            running, paused = decode_fetches(False, kept), decode_fetches(True, kept)
            print(
                f"heap {len(heap):>9,} objects: GC running {running:.3f} s, paused "
                f"{paused:.3f} s, x{running / paused:.2f} ({30 * 10_000} records)"
            )
        del heap


if __name__ == "__main__":
    main(sys.argv)
