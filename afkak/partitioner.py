"""Partitioners: which partition of a topic a producer writes a message to.

A partitioner is made per topic, as ``partitioner_class(topic, partitions)``,
and asked ``partition(key, partitions)`` for each send, *partitions* being the
topic's current sorted partition numbers.  :class:`HashedPartitioner` places
keys as Kafka's Java client (and kafka-python, librdkafka's
``murmur2_random``) do, so records with the same key land in the same
partition whichever of these clients wrote them.  :class:`DefaultPartitioner`,
the producer's default, places keyed records so and the others round robin.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator, Sequence
from itertools import cycle
from typing import Any

from afkak.records.batch import compiled_records

__all__ = [
    "DefaultPartitioner",
    "HashedPartitioner",
    "Partitioner",
    "RoundRobinPartitioner",
    "murmur2",
    "pure_murmur2",
]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def _murmur2(data: bytes, seed: int = _SEED) -> int:
    """MurmurHash2 of *data* as Kafka computes it (seed 0x9747b28c), as an unsigned 32-bit int.

    Kafka's ``Utils.murmur2`` returns the same bits as a signed Java int.
    The reference for the compiled ``_crecords.murmur2``, and what runs
    without it.
    """
    length = len(data)
    h = (seed ^ length) & _MASK
    whole = length & ~3
    for k in struct.unpack_from(f"<{length >> 2}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest:
        if rest == 3:
            h ^= data[whole + 2] << 16
        if rest >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


#: MurmurHash2 of *data* as Kafka computes it (seed 0x9747b28c), as an
#: unsigned 32-bit int: compiled when the record codec is (see setup.py).
murmur2: Callable[..., int] = getattr(compiled_records(), "murmur2", _murmur2)


def pure_murmur2(byte_array: bytes | bytearray, seed: int = _SEED) -> int:
    """afkak 21's name for :func:`murmur2`: the hash of a ``bytearray`` (or ``bytes``)."""
    if not isinstance(byte_array, (bytes, bytearray)):
        raise TypeError(f"byte_array must be a bytearray, not {type(byte_array).__name__}")
    return _murmur2(bytes(byte_array), seed)


def _key_bytes(key: str | bytes | bytearray | None) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    raise TypeError(f"partition key {key!r} must be str, bytes or bytearray")


def _by_key(key: str | bytes | bytearray | None, partitions: Sequence[int]) -> int:
    """Where Kafka's Java client puts a record with *key* (``Utils.toPositive`` of murmur2)."""
    if type(key) is not bytes:
        key = _key_bytes(key)
    return partitions[(murmur2(key) & 0x7FFFFFFF) % len(partitions)]


def _key_partitions(
    keys: Sequence[Any], partitions: Sequence[int], other: Callable[[Any], int]
) -> list[int]:
    """The reference for the compiled ``_crecords.key_partitions``."""
    return [_by_key(k, partitions) if type(k) is bytes else other(k) for k in keys]


_column = getattr(compiled_records(), "key_partitions", _key_partitions)


def key_partitions(
    keys: Sequence[Any], partitions: Sequence[int], unkeyed: Callable[[], int]
) -> list[int]:
    """Where :class:`HashedPartitioner` puts each of *keys* (a column, in one call);
    the ``None`` keys all go to ``unkeyed()``, asked once if there is one."""
    chosen: list[int] = []

    def other(key: Any) -> int:
        if key is not None:
            return _by_key(key, partitions)
        if not chosen:
            chosen.append(unkeyed())
        return chosen[0]

    return _column(keys, partitions, other)


class Partitioner:
    """Base class: chooses a partition of *topic* for each message.

    :param topic: the topic this partitioner serves.
    :param partitions: the topic's partition numbers when it was made.
    """

    def __init__(self, topic: str, partitions: Sequence[int]) -> None:
        self.topic = topic
        self.partitions = partitions

    def partition(self, key: bytes | None, partitions: Sequence[int]) -> int:
        """The partition (one of *partitions*) for a message with *key*."""
        raise NotImplementedError("subclasses choose the partition")


class RoundRobinPartitioner(Partitioner):
    """Cycles through the partitions, ignoring keys.

    Set :attr:`randomStart` (or call :meth:`set_random_start`) to start each
    new topic's cycle at a random partition, so that producers started
    together do not all write to the same partitions first.
    """

    randomStart = False

    def __init__(self, topic: str, partitions: Sequence[int]) -> None:
        super().__init__(topic, partitions)
        self._cycle = self._start(partitions)

    @classmethod
    def set_random_start(cls, randomStart: bool) -> None:
        cls.randomStart = randomStart

    def _start(self, partitions: Sequence[int]) -> Iterator[int]:
        self.partitions = partitions
        cycling = cycle(partitions)
        if self.randomStart and partitions:
            for _ in range(random.randrange(len(partitions))):
                next(cycling)
        return cycling

    def partition(self, key: bytes | None, partitions: Sequence[int]) -> int:
        if partitions is not self.partitions and list(partitions) != list(self.partitions):
            self._cycle = self._start(partitions)
        return next(self._cycle)


class HashedPartitioner(Partitioner):
    """Places each message by the murmur2 hash of its key, as Kafka's default partitioner.

    The partition is ``partitions[(murmur2(key) & 0x7fffffff) % len(partitions)]``.
    A key is required: ``partition()`` raises :exc:`TypeError` for ``None``.  A
    ``str`` key is hashed as its UTF-8 bytes, as afkak 21 did.
    """

    def partition(self, key: str | bytes | None, partitions: Sequence[int]) -> int:
        return _by_key(key, partitions)


class DefaultPartitioner(RoundRobinPartitioner):
    """The Producer's default: a keyed record by its key's hash, others round robin.

    A record with a key goes where Kafka's Java client puts it (as
    :class:`HashedPartitioner`), so one key keeps one partition and its
    order.  A record without one goes round robin, as afkak 21's default
    placed every record (:class:`RoundRobinPartitioner`, whose
    :meth:`~RoundRobinPartitioner.set_random_start` applies); keyed records
    do not move its cycle.  The Producer's ``send()`` asks it only when an
    unkeyed record cannot join the open batch of the one before (Java's
    KIP-480 placement).
    """

    def partition(self, key: str | bytes | None, partitions: Sequence[int]) -> int:
        if key is None:
            return RoundRobinPartitioner.partition(self, key, partitions)
        return _by_key(key, partitions)
