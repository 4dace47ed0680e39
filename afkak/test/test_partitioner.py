"""afkak.partitioner: round robin, and murmur2 hashing compatible with Kafka's clients."""

from __future__ import annotations

import random
import unittest

from hypothesis import given, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from afkak import partitioner as partitioner_module
from afkak.partitioner import (
    DefaultPartitioner,
    HashedPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    _key_partitions,
    _murmur2,
    key_partitions,
    murmur2,
)
from afkak.records.batch import compiled_records

_crecords = compiled_records()

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


#: Kafka's Java client: Utils.murmur2 of these UTF-8 strings (as signed ints).
KNOWN = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


class Murmur2Tests(unittest.TestCase):
    def test_known_values(self) -> None:
        for data, signed in KNOWN.items():
            self.assertEqual(murmur2(data), signed & 0xFFFFFFFF, data)
            self.assertEqual(_murmur2(data), signed & 0xFFFFFFFF, data)

    def test_matches_kafka_python_for_many_keys(self) -> None:
        rng = random.Random(7)
        for length in range(0, 130):
            for _ in range(30):
                key = rng.randbytes(length)
                self.assertEqual(murmur2(key), kafka_python_murmur2(key) & 0xFFFFFFFF, key)

    @given(st.binary(max_size=300))
    def test_matches_kafka_python(self, key: bytes) -> None:
        self.assertEqual(murmur2(key), kafka_python_murmur2(key) & 0xFFFFFFFF)


class CompiledMurmur2Tests(unittest.TestCase):
    """The compiled murmur2 and key column placement against the pure-Python reference."""

    def setUp(self) -> None:
        if _crecords is None:
            raise unittest.SkipTest("the compiled record codec is not built")

    def test_murmur2_is_the_compiled_one(self) -> None:
        self.assertIs(murmur2, _crecords.murmur2)

    def test_known_values(self) -> None:
        for data, signed in KNOWN.items():
            self.assertEqual(_crecords.murmur2(data), signed & 0xFFFFFFFF, data)

    @given(st.binary(max_size=300), st.integers(min_value=-(2**40), max_value=2**40))
    def test_matches_the_reference(self, data: bytes, seed: int) -> None:
        self.assertEqual(_crecords.murmur2(data), _murmur2(data))
        self.assertEqual(_crecords.murmur2(data, seed), _murmur2(data, seed))

    @given(st.binary(max_size=40))
    def test_takes_any_buffer_as_the_reference(self, data: bytes) -> None:
        for buffer in (bytearray(data), memoryview(data)):
            self.assertEqual(_crecords.murmur2(buffer), _murmur2(buffer))  # type: ignore[arg-type]

    def test_refuses_what_the_reference_refuses(self) -> None:
        for bad in ("text", None, 5):
            with self.assertRaises(TypeError):
                _murmur2(bad)  # type: ignore[arg-type]
            with self.assertRaises(TypeError):
                _crecords.murmur2(bad)

    @given(
        st.lists(st.one_of(st.none(), st.binary(max_size=30), st.text(max_size=5)), max_size=40),
        st.lists(st.integers(0, 99), min_size=1, max_size=12),
    )
    def test_key_partitions_match_the_reference(
        self, keys: list[bytes | str | None], partitions: list[int]
    ) -> None:
        def other(key: bytes | str | None) -> int:
            asked.append(key)
            return (
                -1 if key is None else HashedPartitioner("t", partitions).partition(key, partitions)
            )

        asked: list[bytes | str | None] = []
        reference = _key_partitions(keys, partitions, other)
        reference_asked, asked = asked, []
        self.assertEqual(_crecords.key_partitions(keys, partitions, other), reference)
        self.assertEqual(asked, reference_asked)  # the others, in order
        self.assertEqual(reference_asked, [k for k in keys if type(k) is not bytes])

    def test_key_partitions_of_no_partitions(self) -> None:
        for column in (_key_partitions, _crecords.key_partitions):
            with self.assertRaises(ZeroDivisionError):
                column([b"k"], [], lambda key: 0)


class KeyPartitionsTests(unittest.TestCase):
    """``key_partitions``: a column of keys placed as ``HashedPartitioner`` places each."""

    def test_each_key_where_the_partitioner_puts_it(self) -> None:
        partitions = [3, 5, 8]
        keys: list[bytes | str | None] = [k.encode() for k in JAVA_PLACEMENTS] + ["user:7"]
        expected = [HashedPartitioner("t", partitions).partition(k, partitions) for k in keys]
        self.assertEqual(key_partitions(keys, partitions, lambda: 1 // 0), expected)

    def test_unkeyed_records_share_one_choice_asked_once(self) -> None:
        choices = iter([8, 3])
        got = key_partitions([None, b"a", None], [3, 5, 8], lambda: next(choices))
        self.assertEqual(got, [8, DefaultPartitioner("t", [3, 5, 8]).partition(b"a", [3, 5, 8]), 8])
        self.assertEqual(next(choices), 3)

    def test_pure_python_placement(self) -> None:
        """Without the compiled code the reference places the column."""
        saved = partitioner_module._column
        partitioner_module._column = _key_partitions
        try:
            got = key_partitions([b"21", None, "foobar"], list(range(12)), lambda: 7)
        finally:
            partitioner_module._column = saved
        self.assertEqual(got, [JAVA_PLACEMENTS["21"][3], 7, JAVA_PLACEMENTS["foobar"][3]])

    def test_a_bad_key_raises_as_the_partitioner(self) -> None:
        for bad in (5, memoryview(b"k")):
            with self.assertRaises(TypeError):
                key_partitions([b"a", bad], [0, 1], lambda: 0)


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
