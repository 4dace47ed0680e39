"""The consumer protocol payloads: versioned subscription and assignment bytes."""

from __future__ import annotations

import struct
import unittest

from hypothesis import given, settings, strategies as st

from afkak._errors import DecodeError
from afkak.common import TopicAndPartition as TP
from afkak.group import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from afkak.test.helpers import property_examples

topics = st.lists(st.text("abcxyz-._", min_size=1, max_size=8), unique=True, max_size=4)
partitions = st.lists(
    st.builds(TP, st.sampled_from(["a", "b", "long.topic"]), st.integers(0, 500)),
    unique=True,
    max_size=12,
)


class PayloadTests(unittest.TestCase):
    def test_subscription_v3_layout(self) -> None:
        data = encode_subscription(Subscription(("t",), (TP("t", 1),), 7, None, "rack"))
        version, n_topics = struct.unpack_from(">hi", data)
        self.assertEqual((version, n_topics), (3, 1))
        self.assertTrue(data.endswith(struct.pack(">i", 7) + b"\x00\x04rack"))

    def test_kafka_v0_subscription_reads(self) -> None:
        # What a Kafka 0.10 consumer sent: version 0, topics, null user data.
        data = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)
        self.assertEqual(decode_subscription(data), Subscription(("t",)))

    def test_newer_version_reads_as_newest_known_ignoring_the_rest(self) -> None:
        body = encode_subscription(Subscription(("t",), (TP("t", 0),), 3, b"u", None))[2:]
        data = struct.pack(">h", 9) + body + b"future fields"
        self.assertEqual(
            decode_subscription(data), Subscription(("t",), (TP("t", 0),), 3, b"u", None)
        )

    def test_empty_assignment_is_no_partitions(self) -> None:
        self.assertEqual(decode_assignment(b""), ())

    def test_malformed(self) -> None:
        for data in (b"\x00", b"\xff\xff\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05ab"):
            with self.assertRaises(DecodeError):
                decode_subscription(data)
            with self.assertRaises(DecodeError):
                decode_assignment(data)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(
        topics,
        partitions,
        st.integers(-1, 2**31 - 1),
        st.none() | st.binary(max_size=8),
        st.integers(0, 3),
    )
    def test_subscription_round_trip(
        self, ts: list[str], owned: list[TP], gen: int, user: bytes | None, version: int
    ) -> None:
        sub = Subscription(tuple(sorted(ts)), tuple(sorted(owned)), gen, user, None)
        back = decode_subscription(encode_subscription(sub, version))
        self.assertEqual(back.topics, sub.topics)
        self.assertEqual(back.user_data, user)
        self.assertEqual(sorted(back.owned), sorted(owned) if version >= 1 else [])
        self.assertEqual(back.generation_id, gen if version >= 2 else -1)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(partitions, st.integers(0, 3))
    def test_assignment_round_trip(self, parts: list[TP], version: int) -> None:
        self.assertEqual(
            sorted(decode_assignment(encode_assignment(parts, version=version))), sorted(parts)
        )

    @settings(max_examples=property_examples(500), deadline=None)
    @given(st.binary(max_size=64))
    def test_garbage_raises_decode_error_only(self, data: bytes) -> None:
        for decode in (decode_subscription, decode_assignment):
            try:
                decode(data)
            except DecodeError:
                pass


if __name__ == "__main__":
    unittest.main()
