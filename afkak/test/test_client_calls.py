"""Per-API request builders and response converters of afkak.client.

Each request is built at every version the client may negotiate and must
encode; responses are built as messages, encoded, decoded and converted.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from twisted.trial.unittest import SynchronousTestCase

from afkak.client._commit_calls import OffsetCommitCall, OffsetFetchCall
from afkak.client._coordinator_call import FindCoordinatorCall
from afkak.client._fetch_call import FetchCall, FetchedMessages
from afkak.client._list_offsets_call import ListOffsetsCall
from afkak.client._produce_call import ProduceCall, encode_messages
from afkak.codec import CODEC_GZIP
from afkak.common import (
    BrokerMetadata,
    CoordinatorNotAvailable,
    DecodeError,
    FetchRequest,
    Message,
    NotCoordinator,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetRequest,
    OffsetResponse,
    ProduceRequest,
    ProduceResponse,
    TopicAndPartition,
    UnknownTopicId,
)
from afkak.message_set import MessageSet
from afkak.protocol.messages import (
    FetchResponse as FetchRespMsg,
    FindCoordinatorResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitResponse as CommitRespMsg,
    OffsetFetchResponse as OffsetFetchRespMsg,
    ProduceResponse as ProduceRespMsg,
)
from afkak.records import ControlType, build_batch, build_control_batch, read_batches

TID_A = UUID(int=0xA)
TID_B = UUID(int=0xB)


def round_trip(message: Any, version: int) -> Any:
    """The message as a broker would read it at ``version``."""
    return type(message).decode(message.encode(version), version)


def all_versions(call: Any) -> range:
    low = max(call.request_class.MIN_VERSION, call.min_version or 0)
    high = call.request_class.MAX_VERSION if call.max_version is None else call.max_version
    return range(low, high + 1)


class FindCoordinatorCallTests(SynchronousTestCase):
    def test_single_key_form_before_v4(self) -> None:
        call = FindCoordinatorCall("g")
        for version in range(0, 4):
            request = round_trip(call(version), version)
            self.assertEqual(request.key, "g")
            self.assertEqual(
                call.parse(FindCoordinatorResponse(node_id=2, host="h", port=9)),
                [BrokerMetadata(2, "h", 9)],
            )

    def test_batched_form_from_v4(self) -> None:
        call = FindCoordinatorCall("g")
        r = FindCoordinatorResponse
        for version in range(4, 7):
            request = round_trip(call(version), version)
            self.assertEqual(request.coordinator_keys, ["g"])
            response = r(
                coordinators=[
                    r.Coordinator(key="other", node_id=9),
                    r.Coordinator(key="g", node_id=3, host="h", port=1),
                ]
            )
            self.assertEqual(call.parse(round_trip(response, version)), [BrokerMetadata(3, "h", 1)])

    def test_errors(self) -> None:
        call = FindCoordinatorCall("g")
        call(3)
        self.assertRaises(
            CoordinatorNotAvailable, call.parse, FindCoordinatorResponse(error_code=15)
        )
        call(6)
        r = FindCoordinatorResponse
        self.assertRaises(
            NotCoordinator, call.parse, r(coordinators=[r.Coordinator(key="g", error_code=16)])
        )
        self.assertRaises(CoordinatorNotAvailable, call.parse, r(coordinators=[]))


class ListOffsetsCallTests(SynchronousTestCase):
    def test_request_groups_topics_as_a_consumer(self) -> None:
        payloads = [
            OffsetRequest("a", 0, -1, 1),
            OffsetRequest("b", 1, -2, 1),
            OffsetRequest("a", 2, 1234, 1),
        ]
        call = ListOffsetsCall(payloads, timeout_ms=500)
        for version in all_versions(call):
            request = round_trip(call(version), version)
            self.assertEqual(request.replica_id, -1)
            self.assertEqual(
                [
                    (t.name, [(p.partition_index, p.timestamp) for p in t.partitions])
                    for t in request.topics
                ],
                [("a", [(0, -1), (2, 1234)]), ("b", [(1, -2)])],
            )
        self.assertEqual(ListOffsetsRequest.decode(call(11).encode(11), 11).timeout_ms, 500)

    def test_response_offsets_are_one_tuples(self) -> None:
        r = ListOffsetsResponse
        response = r(
            topics=[
                r.ListOffsetsTopicResponse(
                    name="a",
                    partitions=[
                        r.ListOffsetsPartitionResponse(partition_index=0, offset=42),
                        r.ListOffsetsPartitionResponse(partition_index=2, error_code=6),
                    ],
                )
            ]
        )
        call = ListOffsetsCall([OffsetRequest("a", 0, -1, 1)], 1)
        call(7)
        self.assertEqual(
            call.parse(round_trip(response, 7)),
            [OffsetResponse("a", 0, 0, (42,)), OffsetResponse("a", 2, 6, (-1,))],
        )


class OffsetCommitCallTests(SynchronousTestCase):
    payloads = [
        OffsetCommitRequest("a", 0, 10, -1, "meta"),
        OffsetCommitRequest("b", 3, 20, -1, b"bytes-meta"),
        OffsetCommitRequest("a", 1, 11, -1, None),
    ]

    def test_by_name_before_v10(self) -> None:
        call = OffsetCommitCall("g", self.payloads, 5, "member", {})
        self.assertEqual(call.max_version, 9)
        for version in all_versions(call):
            request = round_trip(call(version), version)
            self.assertEqual(
                (request.group_id, request.generation_id_or_member_epoch, request.member_id),
                ("g", 5, "member"),
            )
            self.assertEqual(
                [
                    (
                        t.name,
                        [
                            (p.partition_index, p.committed_offset, p.committed_metadata)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
                [("a", [(0, 10, "meta"), (1, 11, None)]), ("b", [(3, 20, "bytes-meta")])],
            )

    def test_by_id_at_v10_when_ids_known(self) -> None:
        call = OffsetCommitCall("g", self.payloads, -1, "", {"a": TID_A, "b": TID_B})
        self.assertIsNone(call.max_version)
        request = round_trip(call(10), 10)
        self.assertEqual([t.topic_id for t in request.topics], [TID_A, TID_B])
        r = CommitRespMsg
        response = r(
            topics=[
                r.OffsetCommitResponseTopic(
                    topic_id=TID_B,
                    partitions=[r.OffsetCommitResponsePartition(partition_index=3, error_code=16)],
                ),
            ]
        )
        self.assertEqual(call.parse(round_trip(response, 10)), [OffsetCommitResponse("b", 3, 16)])
        unknown = r(
            topics=[
                r.OffsetCommitResponseTopic(
                    topic_id=UUID(int=99), partitions=[r.OffsetCommitResponsePartition()]
                )
            ]
        )
        self.assertRaises(UnknownTopicId, call.parse, unknown)

    def test_response_by_name(self) -> None:
        call = OffsetCommitCall("g", self.payloads, -1, "", {})
        call(9)
        r = CommitRespMsg
        response = r(
            topics=[
                r.OffsetCommitResponseTopic(
                    name="a", partitions=[r.OffsetCommitResponsePartition(partition_index=0)]
                )
            ]
        )
        self.assertEqual(call.parse(round_trip(response, 9)), [OffsetCommitResponse("a", 0, 0)])

    def test_bad_metadata_fails_at_construction(self) -> None:
        self.assertRaises(
            TypeError, OffsetCommitCall, "g", [OffsetCommitRequest("a", 0, 1, -1, 5)], -1, "", {}
        )
        self.assertRaises(
            ValueError,
            OffsetCommitCall,
            "g",
            [OffsetCommitRequest("a", 0, 1, -1, b"\xff")],
            -1,
            "",
            {},
        )


class OffsetFetchCallTests(SynchronousTestCase):
    payloads = [OffsetFetchRequest("a", 0), OffsetFetchRequest("b", 1)]

    def test_request_forms(self) -> None:
        call = OffsetFetchCall("g", self.payloads, {"a": TID_A, "b": TID_B})
        for version in all_versions(call):
            request = round_trip(call(version), version)
            if version < 8:
                self.assertEqual(request.group_id, "g")
                self.assertEqual(
                    [(t.name, t.partition_indexes) for t in request.topics],
                    [("a", [0]), ("b", [1])],
                )
            else:
                [group] = request.groups
                self.assertEqual(group.group_id, "g")
                keys = [t.topic_id if version >= 10 else t.name for t in group.topics]
                self.assertEqual(keys, [TID_A, TID_B] if version >= 10 else ["a", "b"])

    def test_unknown_ids_cap_the_version(self) -> None:
        self.assertEqual(OffsetFetchCall("g", self.payloads, {"a": TID_A}).max_version, 9)

    def test_parse_old_form(self) -> None:
        r = OffsetFetchRespMsg
        response = r(
            topics=[
                r.OffsetFetchResponseTopic(
                    name="a",
                    partitions=[
                        r.OffsetFetchResponsePartition(
                            partition_index=0, committed_offset=7, metadata="m"
                        )
                    ],
                ),
                r.OffsetFetchResponseTopic(
                    name="b",
                    partitions=[
                        r.OffsetFetchResponsePartition(
                            partition_index=1, committed_offset=-1, metadata=None
                        )
                    ],
                ),
            ]
        )
        call = OffsetFetchCall("g", self.payloads, {})
        call(7)
        self.assertEqual(
            call.parse(round_trip(response, 7)),
            [OffsetFetchResponse("a", 0, 7, b"m", 0), OffsetFetchResponse("b", 1, -1, None, 0)],
        )

    def test_parse_group_form_by_id(self) -> None:
        r = OffsetFetchRespMsg
        response = r(
            groups=[
                r.OffsetFetchResponseGroup(
                    group_id="g",
                    topics=[
                        r.OffsetFetchResponseTopics(
                            topic_id=TID_B,
                            partitions=[
                                r.OffsetFetchResponsePartitions(
                                    partition_index=1, committed_offset=3, metadata=""
                                )
                            ],
                        )
                    ],
                )
            ]
        )
        call = OffsetFetchCall("g", self.payloads, {"a": TID_A, "b": TID_B})
        call(10)
        self.assertEqual(
            call.parse(round_trip(response, 10)), [OffsetFetchResponse("b", 1, 3, b"", 0)]
        )

    def test_group_error_answers_every_payload(self) -> None:
        r = OffsetFetchRespMsg
        call = OffsetFetchCall("g", self.payloads, {})
        call(9)
        response = r(groups=[r.OffsetFetchResponseGroup(group_id="g", error_code=16)])
        self.assertEqual(
            call.parse(round_trip(response, 9)),
            [OffsetFetchResponse("a", 0, -1, None, 16), OffsetFetchResponse("b", 1, -1, None, 16)],
        )
        call(5)
        self.assertEqual([x.error for x in call.parse(round_trip(r(error_code=14), 5))], [14, 14])


class ProduceCallTests(SynchronousTestCase):
    def test_batches_carry_messages_codec_timestamps_and_headers(self) -> None:
        messages = MessageSet(
            [
                Message(0, 0, b"k", b"v1", timestamp=5, headers=(("h", b"x"),)),
                Message(0, 0, None, None),
            ],
            codec=CODEC_GZIP,
        )
        [batch] = read_batches(encode_messages(messages, now_ms=1000))
        self.assertEqual(batch.codec, CODEC_GZIP)
        self.assertEqual(
            [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()],
            [(0, 5, b"k", b"v1", (("h", b"x"),)), (1, 1000, None, None, ())],
        )

    def test_unstamped_messages_get_now(self) -> None:
        [batch] = read_batches(encode_messages([Message(0, 0, None, b"a")], now_ms=77))
        self.assertEqual([r.timestamp for r in batch.records()], [77])
        self.assertEqual(batch.codec, 0)

    def test_bad_messages(self) -> None:
        self.assertRaises(ValueError, encode_messages, [], 0)
        self.assertRaises(TypeError, encode_messages, b"raw", 0)
        self.assertRaises(TypeError, encode_messages, [b"not a message"], 0)
        self.assertRaises(TypeError, encode_messages, [Message(0, 0, None, "text")], 0)
        self.assertRaises(TypeError, encode_messages, [Message(0, 0, 1, b"v")], 0)

    def test_request_by_name_and_by_id(self) -> None:
        payloads = [
            ProduceRequest("a", 0, None),
            ProduceRequest("b", 2, None),
            ProduceRequest("a", 1, None),
        ]
        batches = {
            (p.topic, p.partition): encode_messages([Message(0, 0, None, b"x")], 0)
            for p in payloads
        }
        call = ProduceCall(payloads, -1, 1500, batches, {"a": TID_A})
        self.assertEqual(call.max_version, 12)
        for version in all_versions(call):
            request = round_trip(call(version), version)
            self.assertEqual((request.acks, request.timeout_ms), (-1, 1500))
            self.assertEqual(
                [(t.name, [p.index for p in t.partition_data]) for t in request.topic_data],
                [("a", [0, 1]), ("b", [2])],
            )
            self.assertEqual(request.topic_data[0].partition_data[0].records, batches["a", 0])
        call = ProduceCall(payloads, 1, 10, batches, {"a": TID_A, "b": TID_B})
        request = round_trip(call(13), 13)
        self.assertEqual([t.topic_id for t in request.topic_data], [TID_A, TID_B])
        r = ProduceRespMsg
        response = r(
            responses=[
                r.TopicProduceResponse(
                    topic_id=TID_B,
                    partition_responses=[r.PartitionProduceResponse(index=2, base_offset=40)],
                ),
                r.TopicProduceResponse(
                    topic_id=TID_A,
                    partition_responses=[
                        r.PartitionProduceResponse(index=0, error_code=6, base_offset=-1)
                    ],
                ),
            ]
        )
        self.assertEqual(
            call.parse(round_trip(response, 13)),
            [ProduceResponse("b", 2, 0, 40), ProduceResponse("a", 0, 6, -1)],
        )


class FetchCallTests(SynchronousTestCase):
    def test_request_by_name_and_by_id(self) -> None:
        payloads = [FetchRequest("a", 0, 5, 100), FetchRequest("b", 1, 0, 200)]
        call = FetchCall(payloads, max_wait_ms=250, min_bytes=1, topic_ids={"a": TID_A})
        self.assertEqual(call.max_version, 12)
        for version in all_versions(call):
            request = round_trip(call(version), version)
            self.assertEqual(
                (request.max_wait_ms, request.min_bytes, request.replica_id), (250, 1, -1)
            )
            self.assertEqual(
                [
                    (
                        t.topic,
                        [
                            (p.partition, p.fetch_offset, p.partition_max_bytes)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
                [("a", [(0, 5, 100)]), ("b", [(1, 0, 200)])],
            )
        call = FetchCall(payloads, 250, 1, {"a": TID_A, "b": TID_B})
        self.assertEqual([t.topic_id for t in round_trip(call(17), 17).topics], [TID_A, TID_B])

    def test_session_fields_forgotten_partitions_and_response_bound(self) -> None:
        """From v7 a call belongs to its fetch session; before, it is a plain full fetch."""
        ids = {"a": TID_A, "b": TID_B}
        call = FetchCall(
            [FetchRequest("a", 0, 5, 100)],
            100,
            1,
            ids,
            max_bytes=300,
            session_id=42,
            session_epoch=3,
            forgotten=[TopicAndPartition("b", 1), TopicAndPartition("b", 2)],
            unchanged=[TopicAndPartition("a", 1)],
        )
        for version in all_versions(call):
            request = round_trip(call(version), version)
            self.assertEqual(request.max_bytes, 300)
            forgotten = [
                (t.topic_id if version >= 13 else t.topic, t.partitions)
                for t in request.forgotten_topics_data
            ]
            if version >= 7:
                self.assertEqual((request.session_id, request.session_epoch), (42, 3))
                self.assertEqual(forgotten, [(TID_B if version >= 13 else "b", [1, 2])])
            else:
                self.assertEqual(forgotten, [])
        # A topic known only through the session or the forgotten partitions
        # counts for the topic-id version cap too.
        capped = FetchCall([], 100, 1, {"a": TID_A}, unchanged=[TopicAndPartition("b", 0)])
        self.assertEqual(capped.max_version, 12)
        self.assertEqual(FetchCall([], 100, 1, {}).max_version, None)

    def test_response_messages_decode_lazily_from_the_requested_offset(self) -> None:
        data = (
            build_batch([b"m0", b"m1", b"m2"], [None, b"k1", None], timestamp=9)
            + build_control_batch(
                ControlType.COMMIT, base_offset=3, producer_id=7, producer_epoch=0
            )
            + build_batch([b"m4"], base_offset=4, timestamp=10, headers=[[("h", None)]])
        )
        r = FetchRespMsg
        response = r(
            responses=[
                r.FetchableTopicResponse(
                    topic_id=TID_A,
                    partitions=[r.PartitionData(partition_index=0, high_watermark=5, records=data)],
                )
            ]
        )
        call = FetchCall([FetchRequest("a", 0, 1, 1000)], 0, 0, {"a": TID_A})
        call(16)
        [result] = call.parse(round_trip(response, 16))
        self.assertEqual(
            (result.topic, result.partition, result.error, result.highwaterMark), ("a", 0, 0, 5)
        )
        messages = list(result.messages)
        self.assertEqual([m.offset for m in messages], [1, 2, 4])
        self.assertEqual(messages[0].message, Message(2, 0, b"k1", b"m1", timestamp=9))
        self.assertEqual(messages[2].message.headers, (("h", None),))
        self.assertEqual(list(result.messages), messages)

    def test_empty_and_error_partitions(self) -> None:
        r = FetchRespMsg
        response = r(
            responses=[
                r.FetchableTopicResponse(
                    topic="a",
                    partitions=[r.PartitionData(partition_index=0, error_code=1, records=None)],
                )
            ]
        )
        call = FetchCall([FetchRequest("a", 0, 0, 1)], 0, 0, {})
        call(12)
        [result] = call.parse(round_trip(response, 12))
        self.assertEqual((result.error, list(result.messages)), (1, []))
        self.assertFalse(result.messages)

    def test_corrupt_records_raise_decode_error_when_iterated(self) -> None:
        data = bytearray(build_batch([b"x"], timestamp=1))
        data[-1] ^= 0xFF
        messages = FetchedMessages(bytes(data), 0)
        self.assertRaises(DecodeError, list, messages)

    def test_top_level_error_without_partitions_answers_every_payload(self) -> None:
        call = FetchCall([FetchRequest("a", 0, 0, 1), FetchRequest("b", 3, 0, 1)], 0, 0, {})
        call(12)
        results = call.parse(FetchRespMsg(error_code=70))
        self.assertEqual(
            [(r.topic, r.partition, r.error, list(r.messages)) for r in results],
            [("a", 0, 70, []), ("b", 3, 70, [])],
        )
