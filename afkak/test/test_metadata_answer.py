"""The Metadata answer read without the general decoder agrees with it."""

from __future__ import annotations

import itertools
from typing import Any
from uuid import UUID

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak._errors import DecodeError
from afkak.client._metadata_call import MetadataCall
from afkak.connection._request import PendingRequest
from afkak.protocol import decode_response
from afkak.protocol.messages import MetadataResponse as R
from afkak.protocol.metadata_answer import (
    FLEXIBLE_VERSION,
    MetadataAnswer,
    TopicMemo,
    read_answer,
)

VERSIONS = range(R.MIN_VERSION, R.MAX_VERSION + 1)
_nodes = st.lists(st.integers(-1, 5), max_size=4)
_partition = st.builds(
    R.MetadataResponsePartition,
    error_code=st.sampled_from([0, 0, 0, 5, 9]),
    partition_index=st.integers(0, 6),
    leader_id=st.integers(-1, 5),
    leader_epoch=st.integers(-1, 2**31 - 1),
    replica_nodes=_nodes,
    isr_nodes=_nodes,
    offline_replicas=st.lists(st.integers(0, 5), max_size=2),
)


@st.composite
def _partitions(draw: Any) -> list[R.MetadataResponsePartition]:
    """Partitions of one shape (a healthy topic, numbered in order) or of any."""
    if draw(st.booleans()):
        return draw(st.lists(_partition, max_size=5))
    n = draw(st.integers(1, 40))
    r = draw(st.integers(1, 4))
    i = draw(st.integers(1, r))
    node = st.integers(0, 2**31 - 1)
    return [
        R.MetadataResponsePartition(
            error_code=0,
            partition_index=p,
            leader_id=draw(node),
            leader_epoch=draw(st.integers(-1, 9)),
            replica_nodes=draw(st.lists(node, min_size=r, max_size=r)),
            isr_nodes=draw(st.lists(node, min_size=i, max_size=i)),
        )
        for p in range(n)
    ]


_topic = st.builds(
    R.MetadataResponseTopic,
    error_code=st.sampled_from([0, 0, 3, 29]),
    name=st.one_of(st.none(), st.sampled_from(["a", "b", "c", "t" * 130, "é"])),
    topic_id=st.sampled_from([UUID(int=0), UUID(int=1), UUID(int=2**128 - 1)]),
    is_internal=st.booleans(),
    partitions=_partitions(),
)
_broker = st.builds(
    R.MetadataResponseBroker,
    node_id=st.integers(-1, 5),
    host=st.text(max_size=5),
    port=st.integers(0, 65535),
    rack=st.one_of(st.none(), st.text(max_size=3)),
)
_response = st.builds(
    R,
    throttle_time_ms=st.integers(0, 100),
    brokers=st.lists(_broker, max_size=3),
    cluster_id=st.one_of(st.none(), st.text(max_size=5)),
    controller_id=st.integers(-1, 5),
    topics=st.lists(_topic, max_size=4),
    error_code=st.sampled_from([0, 0, 0, 74]),
)


def frame(response: R, version: int) -> bytes:
    """*response* at *version* as a connection hands it over: the header, no size prefix."""
    if version < 12:  # no null names before v12
        for t in response.topics:
            t.name = t.name or ""
    header = b"\x00\x00\x00\x07" + (b"\x00" if version >= FLEXIBLE_VERSION else b"")
    return header + response.encode(version)


def generated(data: bytes, version: int) -> Any:
    return decode_response(data, R.API_KEY, version)[1]


def parsed(call: MetadataCall, response: Any) -> Any:
    try:
        return call.parse(response)
    except Exception as e:
        return type(e), getattr(e, "errno", None)


class ReadAnswerTests(SynchronousTestCase):
    @given(_response, st.sampled_from(VERSIONS))
    def test_equals_the_generated_decoder_and_parse(self, response: R, version: int) -> None:
        """For every version: what the client makes of the answer (through
        :meth:`PendingRequest.decode`) is what it makes of the generated decoder's."""
        data = frame(response, version)
        call = MetadataCall(["a"])
        request = PendingRequest(call, None, None, True)
        request.message(version)
        answer = read_answer(data, version)
        expected = parsed(call, generated(data, version))
        self.assertEqual(parsed(call, request.decode(data)), expected)
        if answer is not None:
            self.assertEqual(parsed(call, answer), expected)
            self.assertEqual(answer.throttle_time_ms, response.throttle_time_ms)
        elif version >= FLEXIBLE_VERSION and not (version >= 13 and response.error_code):
            self.fail("the usual shape fell back to the generated decoder")

    @given(_response, st.integers(FLEXIBLE_VERSION, R.MAX_VERSION), st.data(), st.integers(0, 255))
    def test_accepts_no_bytes_the_generated_decoder_refuses(
        self, response: R, version: int, data: Any, byte: int
    ) -> None:
        """A byte changed or the frame cut short: read as the generated decoder reads
        it, or left to it (which raises DecodeError for a malformed answer)."""
        good = frame(response, version)
        at = data.draw(st.integers(0, len(good) - 1))
        warm = TopicMemo()  # holding the good answer's topics
        read_answer(good, version, warm)
        for bad, memo in itertools.product(
            (good[:at] + bytes([byte]) + good[at + 1 :], good[:at]), (None, warm)
        ):
            answer = read_answer(bad, version, memo)
            try:
                expected = generated(bad, version)
            except DecodeError:
                self.assertIsNone(answer)
                continue
            if answer is not None:
                call = MetadataCall(["a"])
                self.assertEqual(parsed(call, answer), parsed(call, expected))

    @given(_response, _response, st.integers(FLEXIBLE_VERSION, R.MAX_VERSION))
    def test_an_answer_read_after_another_reads_the_same(
        self, before: R, after: R, version: int
    ) -> None:
        """Topics the memo holds from the answer before are taken from it only when
        their bytes are the same."""
        after.topics += before.topics[: len(before.topics) // 2]  # some the same
        memo = TopicMemo()
        read_answer(frame(before, version), version, memo)
        data = frame(after, version)
        call = MetadataCall(["a"])
        self.assertEqual(
            parsed(call, read_answer(data, version, memo) or generated(data, version)),
            parsed(call, generated(data, version)),
        )

    def test_an_unchanged_topic_is_not_read_again(self) -> None:
        response = R(
            topics=[
                R.MetadataResponseTopic(
                    name=n,
                    partitions=[
                        R.MetadataResponsePartition(0, p, 1, 3, [1], [1], []) for p in range(3)
                    ],
                )
                for n in "ab"
            ]
        )
        memo = TopicMemo()
        first = read_answer(frame(response, 12), 12, memo)
        response.topics[1].partitions[2].leader_epoch = 4
        again = read_answer(frame(response, 12), 12, memo)
        assert first is not None and again is not None
        self.assertIs(again.topics[0], first.topics[0])
        self.assertEqual(again.topics[1][5], [3, 3, 4])
        self.assertEqual(set(memo.entries), {"a", "b"})
        memo.retain({"b"})
        self.assertEqual(set(memo.entries), {"b"})
        read_answer(frame(response, 11), 11, memo)  # another version: none of those
        self.assertIsNot(memo.entries["b"][2], again.topics[1])

    def test_malformed_bytes_fail_the_request_with_a_decode_error(self) -> None:
        response = R(
            brokers=[R.MetadataResponseBroker(1, "h", 9092)],
            topics=[
                R.MetadataResponseTopic(
                    name="t", partitions=[R.MetadataResponsePartition(0, 0, 1, 0, [1], [1])]
                )
            ],
        )
        good = frame(response, 13)
        call = MetadataCall(["t"])
        request = PendingRequest(call, None, None, True)
        request.message(13)
        self.assertIsInstance(request.decode(good), MetadataAnswer)
        for bad in (good[:-3], good + b"\x00", good[:20] + b"\xff" + good[21:]):
            self.assertRaises(DecodeError, request.decode, bad)

    def test_one_shape_read_at_once(self) -> None:
        """A healthy topic's equal rows are one tuple, as the generated path's."""
        parts = [R.MetadataResponsePartition(0, p, 1, 3, [1, 2], [1, 2], []) for p in range(3)]
        response = R(topics=[R.MetadataResponseTopic(name=n, partitions=parts) for n in "ab"])
        answer = read_answer(frame(response, 12), 12)
        assert answer is not None
        rows = [row for t in answer.topics for row in t[4]]
        self.assertEqual(rows, [(0, 1, (1, 2), (1, 2))] * 6)
        self.assertEqual(len({id(row) for row in rows}), 1)
        self.assertEqual([t[3] for t in answer.topics], [[0, 1, 2]] * 2)

    def test_partitions_of_mixed_shapes_read_one_by_one(self) -> None:
        parts = [
            R.MetadataResponsePartition(0, 1, 1, 3, [1, 2], [1, 2], []),
            R.MetadataResponsePartition(0, 0, 2, 3, [2, 1], [2], []),
            R.MetadataResponsePartition(0, 2, 1, 3, [1, 2], [1, 2], [2]),
        ]
        response = R(topics=[R.MetadataResponseTopic(name="t", partitions=parts)])
        answer = read_answer(frame(response, 12), 12)
        assert answer is not None
        [(_, _, _, numbers, rows, epochs)] = answer.topics
        self.assertEqual(numbers, [1, 0, 2])
        self.assertEqual(
            rows, [(0, 1, (1, 2), (1, 2)), (0, 2, (2, 1), (2,)), (0, 1, (1, 2), (1, 2))]
        )
        self.assertIs(rows[0], rows[2])

    def test_a_null_array_is_malformed(self) -> None:
        """Compact length 0 (null) where the schema has no null: the generated decoder's error."""
        response = R(topics=[R.MetadataResponseTopic(name="t")])
        good = frame(response, 12)
        bad = good[:-7] + b"\x00" + good[-6:]  # the partitions' length (1: empty) made null
        self.assertEqual(good[-7], 1)
        self.assertIsNone(read_answer(bad, 12))
        self.assertRaises(DecodeError, generated, bad, 12)

    def test_tagged_fields_are_left_to_the_generated_decoder(self) -> None:
        data = frame(R(), 12)
        tagged = data[:-1] + b"\x01\x00\x00"  # one unknown tagged field, empty
        self.assertIsNone(read_answer(tagged, 12))
        self.assertEqual(generated(tagged, 12).topics, [])

    def test_older_versions_are_left_to_the_generated_decoder(self) -> None:
        self.assertIsNone(read_answer(frame(R(), 8), 8))

    def test_a_truncated_answer_is_left_to_the_generated_decoder(self) -> None:
        self.assertIsNone(read_answer(b"\x00\x00\x00\x07\x00\x00", 12))
