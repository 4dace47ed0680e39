"""Benchmark afkak's frame splitter against Twisted's Int32StringReceiver.

Two cases: one 32 MiB frame arriving in 64 KiB chunks (where
Int32StringReceiver's re-concatenation is quadratic), and 32 MiB of 100-byte
frames arriving in 64 KiB chunks (many frames per chunk).  Prints the best of
a few runs in ms and MB/s.

    PYTHONPATH=. python tools/bench_framing.py
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from twisted.protocols.basic import Int32StringReceiver

from afkak.connection.framing import FramedProtocol

CHUNK = 64 * 1024
TOTAL = 32 * 1024 * 1024


class _CountingFramer(FramedProtocol):
    def __init__(self) -> None:
        super().__init__(max_frame_size=TOTAL)
        self.frames = 0

    def frameReceived(self, frame: bytes) -> None:
        self.frames += 1


class _CountingReceiver(Int32StringReceiver):
    MAX_LENGTH = TOTAL

    def __init__(self) -> None:
        self.frames = 0

    def stringReceived(self, string: bytes) -> None:
        self.frames += 1


def _stream(frame_size: int) -> tuple[list[bytes], int]:
    frame = struct.pack(">i", frame_size) + b"x" * frame_size
    count = max(1, TOTAL // len(frame))
    data = frame * count
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)], count


def _run(
    make: Callable[[], _CountingFramer | _CountingReceiver], chunks: list[bytes], expected: int
) -> float:
    best = float("inf")
    for _ in range(3):
        protocol = make()
        started = time.perf_counter()
        for chunk in chunks:
            protocol.dataReceived(chunk)
        best = min(best, time.perf_counter() - started)
        assert protocol.frames == expected, (protocol.frames, expected)
    return best


def main() -> None:
    for title, frame_size in [
        ("one 32 MiB frame in 64 KiB chunks", TOTAL - 4),
        ("100-byte frames, 32 MiB in 64 KiB chunks", 100),
    ]:
        chunks, count = _stream(frame_size)
        size_mb = sum(map(len, chunks)) / 1e6
        print(f"{title} ({count} frames):")
        for name, make in [
            ("FramedProtocol", _CountingFramer),
            ("Int32StringReceiver", _CountingReceiver),
        ]:
            seconds = _run(make, chunks, count)
            print(f"  {name:20} {seconds * 1e3:9.1f} ms {size_mb / seconds:9.0f} MB/s")


if __name__ == "__main__":
    main()
