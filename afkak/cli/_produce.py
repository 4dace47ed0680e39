"""``afkak produce TOPIC``: one record per input line, as kcat -P does."""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.task import deferLater
from twisted.python.failure import Failure

from afkak.codec import CODEC_NAMES
from afkak.partitioner import HashedPartitioner, RoundRobinPartitioner
from afkak.producer import Producer

from ._admin_commands import key_values
from ._format import console_producer_separator
from ._output import OK, CommandError, item_error, progress
from ._session import Session

#: Sends awaiting their acknowledgement at most (the producer batches them).
WINDOW = 20000
CODECS = {name: codec for codec, name in CODEC_NAMES.items()}


class KeyOrRoundRobin:
    """Kafka's default placement: by the key's murmur2 hash, round robin without a key."""

    def __init__(self, topic: str, partitions: Sequence[int]) -> None:
        self.hashed = HashedPartitioner(topic, partitions)
        self.round_robin = RoundRobinPartitioner(topic, partitions)

    def partition(self, key: bytes | None, partitions: Sequence[int]) -> int:
        if key is None:
            return self.round_robin.partition(key, partitions)
        return self.hashed.partition(key, partitions)


class LineReader:
    """Lines of a binary stream, each read in a daemon thread: a pipe never blocks the
    reactor, and a read left waiting on a terminal after Ctrl-C does not hold up the
    exit (the reactor's thread pool is joined at shutdown; a daemon thread is not).
    The file descriptor is read with ``os.read``: a buffered stream's lock, held by
    that thread, would stop the interpreter at exit."""

    def __init__(self, reactor: Any, stream: BinaryIO) -> None:
        self._reactor = reactor
        self._fd = stream.fileno()
        self._rest = b""
        self.done = False

    def _read(self) -> Deferred[bytes]:
        d: Deferred[bytes] = Deferred()

        def read() -> None:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError:
                self._reactor.callFromThread(d.errback, Failure())
            else:
                self._reactor.callFromThread(d.callback, chunk)

        threading.Thread(target=read, name="afkak produce: input", daemon=True).start()
        return d

    async def lines(self) -> list[bytes]:
        """The next complete lines (without their newline); the last one at EOF."""
        while True:
            chunk = await self._read()
            if not chunk:
                self.done = True
                rest, self._rest = self._rest, b""
                return [rest] if rest else []
            data = self._rest + chunk
            *lines, self._rest = data.split(b"\n")
            if lines:
                return lines


async def produce(s: Session) -> int:
    a = s.args
    headers = [(k, v.encode()) for k, v in key_values(a.header, "--header").items()]
    await _check_partition(s)
    stream: BinaryIO = open(a.file, "rb") if a.file else sys.stdin.buffer
    producer = Producer(
        s.client,
        partitioner_class=KeyOrRoundRobin,
        codec=CODECS[a.codec],
        req_acks=a.acks,
        linger_ms=a.linger_ms,
    )
    record_of = await _line_records(s)
    total = _count_lines(a.file) if a.file and s.interactive else None
    window = _Window(s.reactor, a.rate)
    try:
        with progress(f"produce {a.topic}", total, s.interactive, "msg") as bar:
            reader = LineReader(s.reactor, stream)
            while not reader.done and not window.errors:
                for line in await reader.lines():
                    key, value = record_of(line)
                    d = producer.send(a.topic, value, key, headers=headers, partition=a.partition)
                    bar.advance()
                    await window.sent(d)
            await producer.flush()
    except CancelledError:  # Ctrl-C: what the broker has, then the runner's "interrupted"
        if s.interactive:
            unacknowledged = window.count - window.acknowledged
            more = f" ({unacknowledged} sent, not acknowledged)" if unacknowledged else ""
            sys.stderr.write(f"afkak: produced {window.acknowledged} records to {a.topic}{more}\n")
        raise
    finally:
        if a.file:
            stream.close()
        await producer.stop()
    if window.errors:
        raise window.errors[0].value
    if s.out.as_json:
        s.out.json({"topic": a.topic, "produced": window.count})
    if s.interactive:
        sys.stderr.write(f"afkak: produced {window.count} records to {a.topic}\n")
    return OK


async def _check_partition(s: Session) -> None:
    """The topic exists, and so does the partition asked for."""
    a = s.args
    described = (await s.admin.describe_topics([a.topic]))[a.topic]
    if described.error is not None:
        raise item_error(f"topic {a.topic}", described.error)
    if a.partition is not None and a.partition not in [p.partition for p in described.partitions]:
        raise CommandError(f"topic {a.topic} has no partition {a.partition}", 4)


Record = tuple[Any, Any]


async def _line_records(s: Session) -> Callable[[bytes], Record]:
    """``line -> (key, value)``: split at the key separator, then serialized per the formats."""
    a = s.args
    key_separator = a.key_separator or console_producer_separator(a.property)
    separator = key_separator.encode() if key_separator else None

    def split(line: bytes) -> Record:
        if separator is None:
            return None, line
        key, found, rest = line.partition(separator)
        return (key, rest) if found else (None, line)

    if a.key_format is None and a.value_format is None:
        return split
    from ._schema_formats import from_json_line, serializer

    key_serializer = await serializer(s, a.key_format, True)
    value_serializer = await serializer(s, a.value_format, False)

    def serialized(line: bytes) -> Record:
        key, value = split(line)
        if key_serializer is not None and key is not None:
            key = from_json_line(key_serializer, key)
        if value_serializer is not None:
            value = from_json_line(value_serializer, value)
        return key, value

    return serialized


class _Window:
    """The sends awaiting their acknowledgement (at most :data:`WINDOW`), paced at *rate*."""

    def __init__(self, reactor: Any, rate: float | None) -> None:
        self._reactor = reactor
        self._rate = rate
        self._start = reactor.seconds()
        self._pending: deque[Deferred[Any]] = deque()
        self.errors: list[Any] = []
        self.count = self.acknowledged = 0

    def _acknowledge(self, _: Any) -> None:
        self.acknowledged += 1

    async def sent(self, d: Deferred[Any]) -> None:
        """Count *d*; wait for the oldest send if the window is full, then for the pace."""
        d.addCallbacks(self._acknowledge, self.errors.append)
        self._pending.append(d)
        self.count += 1
        if len(self._pending) >= WINDOW:
            await self._pending.popleft()
        if self._rate:
            ahead = self._start + self.count / self._rate - self._reactor.seconds()
            if ahead > 0:
                await deferLater(self._reactor, ahead)


def _count_lines(path: str) -> int | None:
    if os.path.getsize(path) > 1 << 30:
        return None
    with open(path, "rb") as f:
        return sum(1 for _ in f)
