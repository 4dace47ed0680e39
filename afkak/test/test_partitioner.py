"""afkak.partitioner: round robin, and murmur2 hashing compatible with Kafka's clients."""

from __future__ import annotations

import random
import unittest

from hypothesis import given, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from afkak.partitioner import HashedPartitioner, Partitioner, RoundRobinPartitioner, murmur2


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
