"""Tests for afkak.connection.framing: frames split anywhere, many per chunk, hostile sizes."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from hypothesis import given, strategies as st
from twisted.internet.testing import StringTransport
from twisted.logger import LogLevel, capturedLogs
from twisted.trial.unittest import SynchronousTestCase

from afkak.connection.framing import DEFAULT_MAX_FRAME_SIZE, FramedProtocol, FrameTooLargeError


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


class Recorder(FramedProtocol):
    """Collects frames; optionally stops framing after a given frame."""

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, stop_after: bytes | None = None
    ) -> None:
        super().__init__(max_frame_size)
        self.frames: list[bytes] = []
        self.errors: list[FrameTooLargeError] = []
        self.stop_after = stop_after

    def frameReceived(self, frame: bytes) -> None:
        self.frames.append(frame)
        if frame == self.stop_after:
            self.stopFraming()


def connected(protocol: FramedProtocol) -> StringTransport:
    transport = StringTransport()
    protocol.makeConnection(transport)
    return transport


BODIES = [b"", b"a", b"hello world", bytes(range(256)) * 3, b"\x00\x00\x00\x05", b"z" * 70000]
STREAM = b"".join(frame(body) for body in BODIES)


class FramingTests(SynchronousTestCase):
    def test_whole_stream_in_one_chunk(self) -> None:
        protocol = Recorder()
        protocol.dataReceived(STREAM)
        self.assertEqual(protocol.frames, BODIES)

    def test_split_at_every_byte(self) -> None:
        """Cut in two anywhere (the big frame near its edges), the stream gives the same frames."""
        big_start = len(STREAM) - len(BODIES[-1]) - 4
        cuts = [*range(big_start + 10), *range(len(STREAM) - 10, len(STREAM) + 1)]
        for cut in cuts:
            protocol = Recorder()
            protocol.dataReceived(STREAM[:cut])
            protocol.dataReceived(STREAM[cut:])
            self.assertEqual(protocol.frames, BODIES, f"cut at {cut}")

    def test_one_byte_at_a_time(self) -> None:
        protocol = Recorder()
        small = b"".join(frame(body) for body in BODIES[:5])
        for i in range(len(small)):
            protocol.dataReceived(small[i : i + 1])
        self.assertEqual(protocol.frames, BODIES[:5])

    def test_frame_delivered_only_when_complete(self) -> None:
        protocol = Recorder()
        data = frame(b"0123456789")
        protocol.dataReceived(data[:-1])
        self.assertEqual(protocol.frames, [])
        protocol.dataReceived(data[-1:])
        self.assertEqual(protocol.frames, [b"0123456789"])

    @given(
        st.lists(st.binary(max_size=300), max_size=20), st.lists(st.integers(1, 400), min_size=1)
    )
    def test_any_chunking(self, bodies: list[bytes], sizes: list[int]) -> None:
        data = b"".join(frame(body) for body in bodies)
        protocol = Recorder()
        offset = 0
        i = 0
        while offset < len(data):
            step = sizes[i % len(sizes)]
            protocol.dataReceived(data[offset : offset + step])
            offset += step
            i += 1
        self.assertEqual(protocol.frames, bodies)

    def test_many_frames_per_chunk(self) -> None:
        bodies = [str(i).encode() * (i % 7) for i in range(10000)]
        data = b"".join(frame(body) for body in bodies)
        protocol = Recorder()
        for offset in range(0, len(data), 65536):
            protocol.dataReceived(data[offset : offset + 65536])
        self.assertEqual(protocol.frames, bodies)

    def test_stop_framing_drops_remaining_frames(self) -> None:
        """Frames after the one that stopped framing are not delivered, even in the same chunk."""
        protocol = Recorder(stop_after=b"hello world")
        protocol.dataReceived(STREAM)
        self.assertEqual(protocol.frames, [b"", b"a", b"hello world"])
        protocol.dataReceived(frame(b"later"))
        self.assertEqual(protocol.frames, [b"", b"a", b"hello world"])

    def test_stop_framing_while_completing_a_split_frame(self) -> None:
        protocol = Recorder(stop_after=b"big" * 10)
        data = frame(b"big" * 10) + frame(b"next")
        protocol.dataReceived(data[:10])
        protocol.dataReceived(data[10:])
        self.assertEqual(protocol.frames, [b"big" * 10])


class MaxFrameSizeTests(SynchronousTestCase):
    def test_oversized_length_aborts_connection(self) -> None:
        protocol = Recorder(max_frame_size=1000)
        transport = connected(protocol)
        with capturedLogs() as events:
            protocol.dataReceived(frame(b"ok") + struct.pack(">i", 1001) + b"x" * 10)
        self.assertEqual(protocol.frames, [b"ok"])
        self.assertTrue(transport.disconnecting)
        [event] = events
        self.assertEqual(event["error"], str(FrameTooLargeError(1001, 1000)))
        self.assertEqual(event["log_level"], LogLevel.error)

    def test_frame_of_exactly_max_size_is_accepted(self) -> None:
        protocol = Recorder(max_frame_size=1000)
        connected(protocol)
        protocol.dataReceived(frame(b"x" * 1000))
        self.assertEqual(protocol.frames, [b"x" * 1000])

    def test_negative_length_is_too_large(self) -> None:
        class Capture(Recorder):
            def frameTooLarge(self, error: FrameTooLargeError) -> None:
                self.errors.append(error)

        protocol = Capture()
        protocol.dataReceived(struct.pack(">i", -1) + frame(b"after"))
        [error] = protocol.errors
        self.assertEqual(error.size, 2**32 - 1)
        self.assertEqual(error.max_frame_size, DEFAULT_MAX_FRAME_SIZE)
        self.assertIn("exceeds the maximum frame size", str(error))
        self.assertEqual(protocol.frames, [])

    def test_oversized_length_split_across_chunks(self) -> None:
        protocol = Recorder(max_frame_size=10)
        transport = connected(protocol)
        header = struct.pack(">i", 11)
        protocol.dataReceived(header[:2])
        self.assertFalse(transport.disconnecting)
        protocol.dataReceived(header[2:] + b"y" * 11 + frame(b"z"))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(protocol.frames, [])

    def test_default_is_kafka_socket_request_max_bytes(self) -> None:
        self.assertEqual(Recorder().max_frame_size, 104857600)


def _best_of(runs: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


class FramingSpeedTests(SynchronousTestCase):
    def test_large_frame_in_small_chunks_is_linear(self) -> None:
        """A 32 MiB frame in 64 KiB chunks costs about one join of its chunks.

        That is ~20 ms here (tools/bench_framing.py); quadratic buffering costs
        ~35 joins.  Measured against a join, so that a loaded machine does not
        fail the test.
        """
        data = frame(b"k" * (32 * 1024 * 1024))
        chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
        protocols: list[Recorder] = []

        def receive() -> None:
            protocols.append(Recorder())
            for chunk in chunks:
                protocols[-1].dataReceived(chunk)

        framing = _best_of(3, receive)
        join = _best_of(3, lambda: b"".join(chunks))
        self.assertEqual([len(p.frames[0]) for p in protocols], [len(data) - 4] * 3)
        self.assertLess(framing, 4 * join + 0.01)
