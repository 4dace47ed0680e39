"""Malformed input raises DecodeError only; bad values raise EncodeError naming the field."""

from __future__ import annotations

import struct
import unittest
import uuid

from hypothesis import HealthCheck, given, settings, strategies as st

from afkak._errors import DecodeError, EncodeError
from afkak.protocol import (
    _primitives as _p,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from afkak.protocol.messages import (
    ApiVersionsRequest,
    ConsumerProtocolSubscription,
    FetchRequest,
    FetchResponse,
    JoinGroupRequest,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    ProduceRequest,
)
from afkak.test.helpers import property_examples
from afkak.test.test_protocol_roundtrip import all_message_classes

_P = FetchResponse.PartitionData


def _metadata(version: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(1, "host", 9092, None)],
        cluster_id="c",
        controller_id=1,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name="t",
                topic_id=uuid.UUID(int=5 if version >= 10 else 0),
                partitions=[MetadataResponse.MetadataResponsePartition(0, 1, 2, 3, [1, 2], [1])],
            )
        ],
    )


def _fetch(version: int) -> FetchResponse:
    diverging = (
        FetchResponse.EpochEndOffset(1, 2) if version >= 12 else FetchResponse.EpochEndOffset()
    )
    partition = _P(
        partition_index=1,
        high_watermark=10,
        diverging_epoch=diverging,
        aborted_transactions=[FetchResponse.AbortedTransaction(1, 2)],
        records=b"\x01\x02\x03",
    )
    return FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])]
    )


def _valid_messages() -> list[tuple[object, int]]:
    """(message, version) pairs covering strings, arrays, tags, nulls, uuids, records."""
    return [(_metadata(9), 9), (_metadata(12), 12), (_fetch(11), 11), (_fetch(12), 12)]


class MalformedInputTests(unittest.TestCase):
    def test_truncation_at_every_byte(self) -> None:
        for msg, version in _valid_messages():
            data = msg.encode(version)  # type: ignore[attr-defined]
            self.assertEqual(type(msg).decode(data, version), msg)
            for cut in range(len(data)):
                with self.assertRaises(DecodeError) as cm:
                    type(msg).decode(data[:cut], version)
                self.assertEqual(cm.exception.api_key, type(msg).API_KEY)
                self.assertEqual(cm.exception.version, version)
                self.assertLessEqual(cm.exception.offset, cut)

    def test_truncated_frames(self) -> None:
        for msg, version in _valid_messages():
            frame = encode_response(msg, version, 1)[4:]  # type: ignore[arg-type]
            for cut in range(len(frame)):
                with self.assertRaises(DecodeError):
                    decode_response(frame[:cut], msg.API_KEY, version)  # type: ignore[attr-defined]
        frame = encode_request(FetchRequest(topics=[FetchRequest.FetchTopic("t")]), 12, 1, "c")[4:]
        for cut in range(len(frame)):
            with self.assertRaises(DecodeError):
                decode_request(frame[:cut])

    def test_trailing_bytes(self) -> None:
        with self.assertRaises(DecodeError) as cm:
            MetadataRequest.decode(MetadataRequest().encode(12) + b"\x00", 12)
        self.assertEqual(cm.exception.offset, len(MetadataRequest().encode(12)))

    def test_negative_lengths(self) -> None:
        # MetadataResponse v1: throttle absent; brokers array length -2
        with self.assertRaises(DecodeError) as cm:
            MetadataResponse.decode(b"\xff\xff\xff\xfe", 1)
        self.assertEqual(cm.exception.offset, 0)
        # -1 is null, but Brokers is not nullable
        with self.assertRaises(DecodeError):
            MetadataResponse.decode(b"\xff\xff\xff\xff", 1)
        # non-nullable string (broker host) with length -1, at offset 8
        with self.assertRaises(DecodeError) as cm:
            MetadataResponse.decode(b"\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff" + bytes(12), 1)
        self.assertEqual(cm.exception.offset, 8)
        # compact string with length 0 (null) in a non-nullable rack-less field
        with self.assertRaises(DecodeError):
            ApiVersionsRequest.decode(b"\x00\x01\x00", 3)

    def test_lengths_past_the_end(self) -> None:
        with self.assertRaises(DecodeError) as cm:
            ApiVersionsRequest.decode(b"\x09ab\x01\x00", 3)
        self.assertEqual(cm.exception.offset, 0)
        with self.assertRaises(DecodeError):
            MetadataResponse.decode(b"\x7f\xff\xff\xff", 1)

    def test_invalid_utf8(self) -> None:
        with self.assertRaises(DecodeError) as cm:
            ApiVersionsRequest.decode(b"\x03\xff\xfe\x01\x00", 3)
        self.assertIn("UTF-8", cm.exception.reason)

    def test_bad_varints(self) -> None:
        for bad in (b"\x80", b"\xff\xff\xff\xff\xff\x01", b"\xff\xff\xff\xff\x7f"):
            with self.assertRaises(DecodeError):
                ApiVersionsRequest.decode(bad, 3)

    def test_unknown_tags_are_skipped(self) -> None:
        body = ApiVersionsRequest(client_software_name="a").encode(3)
        # replace the empty tag section with one unknown tag 7 of 2 bytes
        tagged = body[:-1] + b"\x01\x07\x02xy"
        self.assertEqual(ApiVersionsRequest.decode(tagged, 3).client_software_name, "a")
        with self.assertRaises(DecodeError):
            ApiVersionsRequest.decode(body[:-1] + b"\x01\x07\x05xy", 3)

    def test_unknown_tags_in_array_elements_are_skipped(self) -> None:
        """Elements decoded in their array's loop (no call each) skip unknown tags too."""
        msg = _metadata(12)
        body = msg.encode(12)
        # the partition's empty offline replicas and tag section, then the topic's fields
        end = b"\x02\x00\x00\x00\x01\x01\x00\x80"
        self.assertEqual(body.count(end), 1)
        tagged = body.replace(end, b"\x02\x00\x00\x00\x01\x01\x01\x07\x02xy\x80")
        self.assertEqual(MetadataResponse.decode(tagged, 12), msg)
        with self.assertRaises(DecodeError):
            MetadataResponse.decode(tagged.replace(b"\x07\x02xy", b"\x07\x09xy"), 12)

    def test_known_tag_overrunning_its_size(self) -> None:
        good = FetchRequest(cluster_id="abc").encode(12)
        self.assertIn(b"\x01\x00\x04\x04abc", good)
        with self.assertRaises(DecodeError):
            FetchRequest.decode(good.replace(b"\x01\x00\x04\x04abc", b"\x01\x00\x02\x04abc"), 12)

    def test_unknown_version(self) -> None:
        with self.assertRaises(DecodeError):
            FetchRequest.decode(b"", 99)

    @settings(
        max_examples=property_examples(300),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def test_random_bytes_raise_decode_error_only(self, data: st.DataObject) -> None:
        cls = data.draw(st.sampled_from(all_message_classes()))
        version = data.draw(st.integers(cls.MIN_VERSION, cls.MAX_VERSION))
        raw = data.draw(st.binary(max_size=64))
        try:
            cls.decode(raw, version)
        except DecodeError:
            pass

    @settings(
        max_examples=property_examples(200),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def test_mutated_frames_raise_decode_error_only(self, data: st.DataObject) -> None:
        msg, version = data.draw(st.sampled_from(_valid_messages()))
        raw = bytearray(msg.encode(version))  # type: ignore[attr-defined]
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        try:
            type(msg).decode(bytes(raw), version)
        except DecodeError:
            pass


class EncodeErrorTests(unittest.TestCase):
    def test_non_ignorable_field_missing_in_version(self) -> None:
        with self.assertRaises(EncodeError) as cm:
            FetchResponse(session_id=3).encode(4)
        self.assertIn("FetchResponse.session_id", str(cm.exception))
        self.assertIn("version 4", str(cm.exception))

    def test_nested_non_ignorable_field(self) -> None:
        msg = FetchRequest(
            topics=[
                FetchRequest.FetchTopic(
                    "t", partitions=[FetchRequest.FetchPartition(last_fetched_epoch=5)]
                )
            ]
        )
        with self.assertRaises(EncodeError) as cm:
            msg.encode(11)
        self.assertIn("FetchPartition.last_fetched_epoch", str(cm.exception))
        self.assertEqual(len(msg.encode(12)), len(msg.encode(12)))

    def test_ignorable_field_is_dropped(self) -> None:
        msg = FetchRequest(rack_id="r1", max_wait_ms=5)
        self.assertEqual(FetchRequest.decode(msg.encode(10), 10), FetchRequest(max_wait_ms=5))
        self.assertEqual(FetchRequest.decode(msg.encode(11), 11), msg)

    def test_none_in_non_nullable(self) -> None:
        msg = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None)])
        with self.assertRaises(EncodeError) as cm:
            msg.encode(9)
        self.assertIn("MetadataRequestTopic.name at version 9", str(cm.exception))
        self.assertIn("None", str(cm.exception))
        # nullable from v10 on
        self.assertEqual(MetadataRequest.decode(msg.encode(10), 10), msg)

    def test_none_in_non_nullable_array(self) -> None:
        with self.assertRaises(EncodeError) as cm:
            MetadataRequest(topics=None).encode(0)
        self.assertIn("topics", str(cm.exception))
        self.assertIsNone(MetadataRequest.decode(MetadataRequest(topics=None).encode(1), 1).topics)

    def test_out_of_range_int(self) -> None:
        for value in (2**31, -(2**31) - 1):
            with self.assertRaises(EncodeError) as cm:
                FetchRequest(max_wait_ms=value).encode(12)
            self.assertIn("FetchRequest.max_wait_ms at version 12", str(cm.exception))
            self.assertIn("out of range", str(cm.exception))
        with self.assertRaises(EncodeError) as cm:
            JoinGroupRequest(
                session_timeout_ms=1,
                protocol_type="consumer",
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(
                        "p",
                        b"",
                    )
                ],
            ).encode(99)
        self.assertIn("no version 99", str(cm.exception))

    def test_wrong_types(self) -> None:
        cases = [
            (FetchRequest(max_wait_ms="5"), 12, "max_wait_ms"),  # type: ignore[arg-type]
            (FetchRequest(topics=[FetchRequest.FetchTopic(topic_id="x")]), 13, "topic_id"),  # type: ignore[arg-type]
            (
                ProduceRequest(
                    topic_data=[
                        ProduceRequest.TopicProduceData(
                            partition_data=[ProduceRequest.PartitionProduceData(records="x")]
                        )
                    ]
                ),
                9,
                "records",
            ),  # type: ignore[arg-type]
            (
                OffsetCommitRequest(
                    topics=[OffsetCommitRequest.OffsetCommitRequestTopic("t", partitions=[1])]
                ),
                8,
                "partitions[0]",
            ),  # type: ignore[list-item]
            (MetadataRequest(allow_auto_topic_creation=None), 9, "allow_auto_topic_creation"),  # type: ignore[arg-type]
            (ConsumerProtocolSubscription(topics=["a", 5]), 0, "topics[1]"),  # type: ignore[list-item]
        ]
        for msg, version, field in cases:
            with self.assertRaises(EncodeError) as cm:
                msg.encode(version)
            self.assertIn(field, str(cm.exception))

    def test_string_too_long_for_classic_encoding(self) -> None:
        msg = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="x" * 40000)])
        with self.assertRaises(EncodeError) as cm:
            msg.encode(8)
        self.assertIn("too long", str(cm.exception))
        self.assertEqual(MetadataRequest.decode(msg.encode(9), 9), msg)


class PrimitiveTests(unittest.TestCase):
    def test_uvarint_roundtrip(self) -> None:
        for n in (0, 1, 127, 128, 300, 2**21, 2**32 - 1):
            b = _p.uvarint(n)
            self.assertEqual(_p.read_uvarint(memoryview(b + b"z"), 0), (n, len(b)))
        self.assertEqual(_p.uvarint(300), b"\xac\x02")

    def test_uvarint_range(self) -> None:
        for n in (-1, 2**32):
            with self.assertRaises(struct.error):
                _p.uvarint(n)

    def test_zigzag(self) -> None:
        for n, z in (
            (0, 0),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (2**63 - 1, 2**64 - 2),
            (-(2**63), 2**64 - 1),
        ):
            self.assertEqual(_p.zigzag(n), z)
            self.assertEqual(_p.unzigzag(z), n)

    def test_compact_lengths(self) -> None:
        self.assertEqual(_p.compact_len(None), b"\x00")
        self.assertEqual(_p.compact_len(0), b"\x01")
        self.assertEqual(_p.compact_nstring(None), b"\x00")
        self.assertEqual(_p.compact_string("ab"), b"\x03ab")
        self.assertEqual(_p.read_compact_bytes(memoryview(b"\x00"), 0, True), (None, 1))


class RecordsViewTests(unittest.TestCase):
    def test_fetched_records_are_a_view_of_the_response(self) -> None:
        """A Fetch response's records are not copied: the record reader reads them in place."""
        for version in (11, 12):
            data = _fetch(version).encode(version)
            records = FetchResponse.decode(data, version).responses[0].partitions[0].records
            self.assertIsInstance(records, memoryview)
            self.assertIs(records.obj, data)
            self.assertEqual(records, b"\x01\x02\x03")
