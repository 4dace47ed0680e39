"""afkak.partitioner: round robin, and murmur2 hashing compatible with Kafka's clients."""

from __future__ import annotations

import random
import unittest

from hypothesis import given, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from afkak.partitioner import (
    DefaultPartitioner,
    HashedPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    murmur2,
)

#: Kafka 4.1.1's BuiltInPartitioner.partitionForKey(key's UTF-8, n) for n in
#: PARTITION_COUNTS (the Java client's default partitioner for keyed records).
PARTITION_COUNTS = (1, 3, 4, 12, 50)
JAVA_PLACEMENTS = {
    "": (0, 0, 1, 9, 31),
    "a": (0, 1, 0, 4, 24),
    "21": (0, 0, 0, 0, 40),
    "foobar": (0, 0, 2, 6, 16),
    "key-0": (0, 1, 1, 1, 41),
    "key-1": (0, 0, 0, 0, 40),
    "key-42": (0, 0, 3, 3, 27),
    "order-1001": (0, 0, 2, 6, 28),
    "user:7": (0, 1, 0, 4, 6),
    "\u00e9t\u00e9": (0, 1, 1, 1, 23),
    "a-little-bit-longer-string": (0, 2, 3, 11, 19),
}


class Murmur2Tests(unittest.TestCase):
    def test_known_values(self) -> None:
        # Kafka's Java client: Utils.murmur2 of these UTF-8 strings (as signed ints).
        known = {
            b"21": -973932308,
            b"foobar": -790332482,
            b"a-little-bit-long-string": -985981536,
            b"a-little-bit-longer-string": -1486304829,
            b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
            b"abc": 479470107,
        }
        for data, signed in known.items():
            self.assertEqual(murmur2(data), signed & 0xFFFFFFFF, data)

    def test_matches_kafka_python_for_many_keys(self) -> None:
        rng = random.Random(7)
        for length in range(0, 130):
            for _ in range(30):
                key = rng.randbytes(length)
                self.assertEqual(murmur2(key), kafka_python_murmur2(key) & 0xFFFFFFFF, key)

    @given(st.binary(max_size=300))
    def test_matches_kafka_python(self, key: bytes) -> None:
        self.assertEqual(murmur2(key), kafka_python_murmur2(key) & 0xFFFFFFFF)


class HashedPartitionerTests(unittest.TestCase):
    def test_places_keys_as_kafkas_default_partitioner(self) -> None:
        partitions = list(range(12))
        partitioner = HashedPartitioner("t", partitions)
        rng = random.Random(3)
        for _ in range(2000):
            key = rng.randbytes(rng.randrange(1, 40))
            expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % len(partitions)
            self.assertEqual(partitioner.partition(key, partitions), expected)

    def test_uses_the_partition_list_given(self) -> None:
        partitioner = HashedPartitioner("t", [0, 1])
        index = (murmur2(b"key") & 0x7FFFFFFF) % 3
        self.assertEqual(partitioner.partition(b"key", [10, 20, 30]), [10, 20, 30][index])

    def test_requires_a_key(self) -> None:
        with self.assertRaises(TypeError):
            HashedPartitioner("t", [0]).partition(None, [0])


class DefaultPartitionerTests(unittest.TestCase):
    """Issue 20, 6: keyed records go where Java's default partitioner puts them."""

    def tearDown(self) -> None:
        RoundRobinPartitioner.set_random_start(False)

    def test_keyed_records_as_the_java_client_places_them(self) -> None:
        for key, placements in JAVA_PLACEMENTS.items():
            for n, expected in zip(PARTITION_COUNTS, placements, strict=True):
                partitions = list(range(n))
                for partitioner_class in (DefaultPartitioner, HashedPartitioner):
                    partitioner = partitioner_class("t", partitions)
                    got = partitioner.partition(key.encode(), partitions)
                    self.assertEqual(got, expected, (partitioner_class, key, n))

    def test_unkeyed_records_go_round_robin(self) -> None:
        """afkak 21's documented placement of records without a key."""
        partitioner = DefaultPartitioner("t", [0, 1, 2])
        got = [partitioner.partition(None, [0, 1, 2]) for _ in range(7)]
        self.assertEqual(got, [0, 1, 2, 0, 1, 2, 0])
        self.assertEqual(partitioner.partition(b"key-42", [0, 1, 2, 3]), 3)
        self.assertEqual(partitioner.partition(None, [0, 1, 2, 3]), 0)  # a new list restarts

    def test_keys_do_not_move_the_round_robin(self) -> None:
        partitioner = DefaultPartitioner("t", [0, 1, 2])
        got = [partitioner.partition(k, [0, 1, 2]) for k in (None, b"a", None, b"a", None)]
        self.assertEqual(got, [0, 1, 1, 1, 2])

    def test_random_start_applies_to_unkeyed_records(self) -> None:
        RoundRobinPartitioner.set_random_start(True)
        firsts = {
            DefaultPartitioner("t", list(range(8))).partition(None, list(range(8)))
            for _ in range(200)
        }
        self.assertGreater(len(firsts), 1)


class RoundRobinPartitionerTests(unittest.TestCase):
    def tearDown(self) -> None:
        RoundRobinPartitioner.set_random_start(False)

    def test_cycles(self) -> None:
        partitioner = RoundRobinPartitioner("t", [0, 1, 2])
        got = [partitioner.partition(None, [0, 1, 2]) for _ in range(7)]
        self.assertEqual(got, [0, 1, 2, 0, 1, 2, 0])

    def test_ignores_keys(self) -> None:
        partitioner = RoundRobinPartitioner("t", [0, 1])
        self.assertEqual([partitioner.partition(b"k", [0, 1]) for _ in range(3)], [0, 1, 0])

    def test_restarts_on_a_new_partition_list(self) -> None:
        partitioner = RoundRobinPartitioner("t", [0, 1])
        partitioner.partition(None, [0, 1])
        self.assertEqual([partitioner.partition(None, [5, 6, 7]) for _ in range(4)], [5, 6, 7, 5])

    def test_random_start(self) -> None:
        RoundRobinPartitioner.set_random_start(True)
        firsts = {
            RoundRobinPartitioner("t", list(range(8))).partition(None, list(range(8)))
            for _ in range(200)
        }
        self.assertGreater(len(firsts), 1)

    def test_base_class_does_not_choose(self) -> None:
        partitioner = Partitioner("t", [0])
        self.assertEqual((partitioner.topic, partitioner.partitions), ("t", [0]))
        with self.assertRaises(NotImplementedError):
            partitioner.partition(None, [0])
