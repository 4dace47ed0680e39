"""The Confluent wire format's header and Protobuf message indexes (hypothesis)."""

from __future__ import annotations

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak.schema_registry import DeserializationError, frame, schema_id_of
from afkak.schema_registry._wire import HEADER_SIZE, message_indexes, read_message_indexes

ids = st.integers(0, 2**32 - 1)


class WireTests(SynchronousTestCase):
    @given(ids, st.binary())
    def test_frame_round_trip(self, schema_id: int, payload: bytes) -> None:
        data = frame(schema_id, payload)
        self.assertEqual((schema_id_of(data), data[HEADER_SIZE:]), (schema_id, payload))

    @given(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=20), st.binary(max_size=8))
    def test_message_indexes_round_trip(self, indexes: list[int], rest: bytes) -> None:
        data = b"\x00\x00\x00\x00\x01" + message_indexes(indexes) + rest
        self.assertEqual(read_message_indexes(data, HEADER_SIZE), (indexes, len(data) - len(rest)))

    def test_the_first_message_is_one_zero_byte(self) -> None:
        self.assertEqual(message_indexes([0]), b"\x00")
        self.assertEqual(message_indexes([1, 0]), b"\x04\x02\x00")

    @given(st.binary(max_size=40))
    def test_garbage_is_a_deserialization_error_or_parses(self, data: bytes) -> None:
        for read in (schema_id_of, lambda d: read_message_indexes(d, 0)):
            try:
                read(data)
            except DeserializationError as e:
                self.assertEqual(e.data, data)
