"""A Metadata answer read straight into the client's shapes, without the general decoder.

A refresh of many partitions spent most of its CPU building the generated
decoder's message per partition, which the client then took apart again.
:func:`read_answer` reads the flexible versions (9 and later) straight into
the lists the client's cache keeps per topic (partition numbers, ``(error,
leader, replicas, isr)`` rows, equal rows sharing one tuple, leader epochs)
and the brokers' addresses: a topic whose partitions all have one shape
(replica and in-sync counts, no offline replicas, no tagged fields: every
partition of a healthy topic) is unpacked by one ``struct`` call, others
partition by partition.  Anything it does not
read (an older version, tagged fields, a top-level error, a length that does
not fit, malformed bytes) returns None: the general decoder then reads the
answer, and reports what is malformed.

A periodic refresh mostly hears again what it heard last time: a
:class:`TopicMemo` kept between answers holds, per topic, the length and
digest (BLAKE2b, 128 bits) of its entry's bytes and what they were read as;
an entry of the same bytes is not read again.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Container
from functools import lru_cache
from hashlib import blake2b
from uuid import UUID

import attrs

from afkak._errors import DecodeError
from afkak.protocol._primitives import (
    ZERO_UUID,
    read_compact_array_len,
    read_compact_string,
    uuid_from,
)

__all__ = ["MetadataAnswer", "Row", "TopicAnswer", "TopicMemo", "read_answer"]

#: The first version with a flexible (compact, tagged) response.
FLEXIBLE_VERSION = 9

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
# A partition's error code, index, leader, leader epoch and replicas' compact length.
_HEAD = struct.Struct(">hiiiB")
#: Partitions of one topic as :func:`_same_shape` reads them at most (a longer
#: topic is read partition by partition: its format would be large).
_MAX_SAME_SHAPE = 4096


#: ``(error_code, leader, replicas, isr)`` of one partition.
Row = tuple[int, int, tuple[int, ...], tuple[int, ...]]
#: One topic: its error code, name (None: unknown id), id (the zero UUID before
#: v10), and its partitions' numbers, rows and leader epochs, in the answer's order.
TopicAnswer = tuple[int, str | None, UUID, list[int], list[Row], list[int]]


@attrs.frozen
class MetadataAnswer:
    """What the client uses of a Metadata response, as :func:`read_answer` read it.

    ``brokers`` as ``(node_id, host, port)``; ``throttle_time_ms`` (KIP-219)
    and ``error_code`` as on the generated response.
    """

    brokers: list[tuple[int, str, int]]
    topics: list[TopicAnswer]
    throttle_time_ms: int
    error_code: int = 0


class TopicMemo:
    """Topic entries of earlier answers, by topic name: ``(length, digest, topic)``.

    Equal digests stand for equal bytes (a collision of 128-bit BLAKE2b is not
    found by chance or on purpose); equal bytes at one version read the same.
    """

    __slots__ = ("version", "entries")

    def __init__(self) -> None:
        self.version = -1
        self.entries: dict[str, tuple[int, bytes, TopicAnswer]] = {}

    def retain(self, names: Container[str]) -> None:
        """Forget the topics not in *names* (those the client no longer knows)."""
        entries = self.entries
        for name in [n for n in entries if n not in names]:
            del entries[name]


def read_answer(frame: bytes, version: int, memo: TopicMemo | None = None) -> MetadataAnswer | None:
    """The answer in *frame* (without size prefix) at *version*; None when this
    module does not read it (the general decoder does, and reports malformed bytes).

    With *memo*, topics whose bytes it holds are not read again, and the topics
    read are added to it.
    """
    if version < FLEXIBLE_VERSION:
        return None
    if memo is None:
        memo = TopicMemo()
    elif memo.version != version:
        memo.entries.clear()
        memo.version = version
    try:
        return _read(memoryview(frame), version, memo.entries)
    except (struct.error, IndexError, DecodeError):  # malformed
        return None


def _digest(entry: memoryview) -> bytes:
    return blake2b(entry, digest_size=16).digest()


def _read(
    mv: memoryview, version: int, known: dict[str, tuple[int, bytes, TopicAnswer]]
) -> MetadataAnswer | None:
    if mv[4]:  # the response header's tagged fields
        return None
    throttle = _INT32.unpack_from(mv, 5)[0]
    count, pos = read_compact_array_len(mv, 9, False, 11)
    brokers = []
    for _ in range(count):
        node_id = _INT32.unpack_from(mv, pos)[0]
        host, pos = read_compact_string(mv, pos + 4, False)
        assert host is not None  # (not nullable)
        port = _INT32.unpack_from(mv, pos)[0]
        _, pos = read_compact_string(mv, pos + 4, True)  # rack
        if mv[pos]:
            return None
        pos += 1
        brokers.append((node_id, host, port))
    _, pos = read_compact_string(mv, pos, True)  # cluster id
    count, pos = read_compact_array_len(mv, pos + 4, False, 26)  # after the controller id
    topics: list[TopicAnswer] = []
    shared: dict[Row, Row] = {}  # equal rows: one tuple
    share = shared.setdefault
    by_id = version >= 10
    topic_id = ZERO_UUID
    new = []
    for _ in range(count):
        start = pos
        error = _INT16.unpack_from(mv, pos)[0]
        name, pos = read_compact_string(mv, pos + 2, version >= 12)
        if name in known:
            length, digest, topic = known[name]
            end = start + length
            if end <= len(mv) and _digest(mv[start:end]) == digest:
                topics.append(topic)
                pos = end
                continue
        if by_id:
            topic_id = uuid_from(bytes(mv[pos : pos + 16]))
            pos += 16
        pos += 1  # is_internal
        n, pos = read_compact_array_len(mv, pos, False, 18)
        partitions = _same_shape(mv, pos, n, share) or _one_by_one(mv, pos, n, share)
        if partitions is None:
            return None
        numbers, rows, epochs, pos = partitions
        pos += 4  # topic_authorized_operations
        if mv[pos]:
            return None
        pos += 1
        topic = (error, name, topic_id, numbers, rows, epochs)
        topics.append(topic)
        if name is not None:
            new.append((name, start, pos, topic))
    if version <= 10:
        pos += 4  # cluster_authorized_operations
    if version >= 13 and _INT16.unpack_from(mv, pos)[0]:
        return None  # a top-level error: the general decoder's response carries it
    pos += 2 if version >= 13 else 0
    if mv[pos] or pos + 1 != len(mv):
        return None
    for name, start, end, topic in new:
        known[name] = (end - start, _digest(mv[start:end]), topic)
    return MetadataAnswer(brokers, topics, throttle)


_Partitions = tuple[list[int], list[Row], list[int], int]
_Share = Callable[[Row, Row], Row]


def _same_shape(mv: memoryview, pos: int, n: int, share: _Share) -> _Partitions | None:
    """The *n* partitions at *pos* if they all have the first one's shape (None otherwise)."""
    if n <= 0 or n > _MAX_SAME_SHAPE:
        return None
    r = mv[pos + 14] - 1
    if not 0 < r < 127:
        return None
    i = mv[pos + 15 + 4 * r] - 1
    if not 0 < i < 127:
        return None
    shape = _shape(n, r, i)
    end = pos + shape.size
    if end > len(mv):
        return None
    values = shape.unpack_from(mv, pos)
    for at, count in shape.counts:  # the lengths and tags in each partition as assumed
        if values[at].count(count) != n:
            return None
    get = values.__getitem__
    replicas = list(zip(*map(get, shape.replicas), strict=True))
    isr = list(zip(*map(get, shape.isr), strict=True))
    errors, numbers, leaders, epochs = map(get, shape.fields)
    rows = list(zip(errors, leaders, replicas, isr, strict=True))
    return list(numbers), list(map(share, rows, rows)), list(epochs), end


class _Shape(struct.Struct):
    """*n* partitions of *r* replicas and *i* in sync, none offline, no tagged fields,
    and where their values are in what it unpacks."""

    def __init__(self, n: int, r: int, i: int) -> None:
        super().__init__(">" + f"hiiiB{r}iB{i}iBB" * n)
        stride = 8 + r + i
        #: Error codes, partition numbers, leaders, leader epochs.
        self.fields = tuple(slice(j, None, stride) for j in range(4))
        self.replicas = tuple(slice(j, None, stride) for j in range(5, 5 + r))
        self.isr = tuple(slice(j, None, stride) for j in range(6 + r, 6 + r + i))
        #: The compact lengths (replicas, in sync, offline) and the tagged fields' count.
        self.counts = tuple(
            (slice(j, None, stride), count)
            for j, count in ((4, r + 1), (5 + r, i + 1), (6 + r + i, 1), (7 + r + i, 0))
        )


@lru_cache(maxsize=64)
def _shape(n: int, r: int, i: int) -> _Shape:
    return _Shape(n, r, i)


@lru_cache(maxsize=128)
def _ints(n: int) -> struct.Struct:
    return struct.Struct(f">{n}i")


def _one_by_one(mv: memoryview, pos: int, n: int, share: _Share) -> _Partitions | None:
    """The *n* partitions at *pos*, of any shape but tagged fields (None: some has them)."""
    numbers = []
    rows = []
    epochs = []
    for _ in range(n):
        error, number, leader, epoch, r = _HEAD.unpack_from(mv, pos)
        pos += 15
        if not 0 < r < 128:
            return None
        replicas = _ints(r - 1).unpack_from(mv, pos)
        pos += 4 * (r - 1)
        i = mv[pos]
        if not 0 < i < 128:
            return None
        isr = _ints(i - 1).unpack_from(mv, pos + 1)
        pos += 1 + 4 * (i - 1)
        offline = mv[pos]
        if not 0 < offline < 128:
            return None
        pos += 1 + 4 * (offline - 1)
        if mv[pos]:
            return None
        pos += 1
        numbers.append(number)
        row = (error, leader, replicas, isr)
        rows.append(share(row, row))
        epochs.append(epoch)
    return numbers, rows, epochs, pos
