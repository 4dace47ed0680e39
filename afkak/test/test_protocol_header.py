"""Tests for afkak.protocol.header: framing, header versions, the ApiVersions exception."""

from __future__ import annotations

import struct
import unittest
import uuid

from afkak._errors import DecodeError, EncodeError
from afkak.protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
)
from afkak.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    RequestHeader,
)

try:
    from kafka.protocol import metadata as kp_metadata
except ImportError:  # pragma: no cover - kafka-python is a test dependency
    kp_metadata = None  # type: ignore[assignment]


def _metadata_request() -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="t1", topic_id=uuid.UUID(int=7))],
        allow_auto_topic_creation=True,
    )


class RequestFramingTests(unittest.TestCase):
    def test_non_flexible_uses_header_v1(self) -> None:
        frame = encode_request(_metadata_request(), 4, 42, "cli")
        (size,) = struct.unpack_from(">i", frame)
        self.assertEqual(size, len(frame) - 4)
        # api key, version, correlation id, int16-length client id, then the body
        self.assertEqual(frame[4:17], b"\x00\x03\x00\x04\x00\x00\x00\x2a\x00\x03cli")
        self.assertEqual(frame[17:], _metadata_request().encode(4))

    def test_flexible_uses_header_v2_with_classic_client_id(self) -> None:
        frame = encode_request(_metadata_request(), 12, 42, "cli")
        # client id keeps its int16 length; the header ends with an empty tag section
        self.assertEqual(frame[4:18], b"\x00\x03\x00\x0c\x00\x00\x00\x2a\x00\x03cli\x00")
        self.assertEqual(frame[18:], _metadata_request().encode(12))

    def test_null_client_id(self) -> None:
        frame = encode_request(ApiVersionsRequest(), 0, 1, None)
        self.assertEqual(frame, b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
        header, msg = decode_request(frame[4:])
        self.assertIsNone(header.client_id)
        self.assertEqual(msg, ApiVersionsRequest())

    def test_decode_request_roundtrip(self) -> None:
        for version in (4, 12, 13):
            header, msg = decode_request(encode_request(_metadata_request(), version, 9, "c")[4:])
            self.assertEqual(header, RequestHeader(3, version, 9, "c"))
            expected = _metadata_request()
            if version < 10:
                expected.topics[0].topic_id = uuid.UUID(int=0)  # ignorable, dropped
            self.assertEqual(msg, expected)

    def test_decode_request_accepts_memoryview(self) -> None:
        frame = encode_request(ApiVersionsRequest(client_software_name="x"), 3, 5, "c")
        header, msg = decode_request(memoryview(frame)[4:])
        self.assertEqual((header.correlation_id, msg.client_software_name), (5, "x"))

    def test_encode_request_rejects_responses(self) -> None:
        with self.assertRaises(EncodeError):
            encode_request(MetadataResponse(), 1, 1, "c")  # type: ignore[arg-type]

    def test_decode_request_unknown_api_key(self) -> None:
        with self.assertRaises(DecodeError) as cm:
            decode_request(b"\x7f\x00\x00\x00\x00\x00\x00\x01\xff\xff")
        self.assertEqual(cm.exception.api_key, 0x7F00)

    def test_decode_request_unsupported_version(self) -> None:
        with self.assertRaises(DecodeError) as cm:
            decode_request(b"\x00\x03\x7f\x00\x00\x00\x00\x01\xff\xff")
        self.assertEqual(cm.exception.version, 0x7F00)

    def test_decode_request_trailing_bytes(self) -> None:
        frame = encode_request(ApiVersionsRequest(), 2, 1, "c")[4:] + b"\x00"
        with self.assertRaises(DecodeError) as cm:
            decode_request(frame)
        self.assertEqual(cm.exception.offset, len(frame) - 1)


class ResponseFramingTests(unittest.TestCase):
    def test_flexible_response_header_v1(self) -> None:
        msg = MetadataResponse(controller_id=1)
        frame = encode_response(msg, 12, 9)
        self.assertEqual(frame[4:9], b"\x00\x00\x00\x09\x00")  # correlation id, tag section
        self.assertEqual(frame[9:], msg.encode(12))

    def test_non_flexible_response_header_v0(self) -> None:
        msg = MetadataResponse(controller_id=1)
        frame = encode_response(msg, 8, 9)
        self.assertEqual(frame[4:8], b"\x00\x00\x00\x09")
        self.assertEqual(frame[8:], msg.encode(8))

    def test_api_versions_response_always_header_v0(self) -> None:
        msg = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(3, 0, 13)])
        frame = encode_response(msg, 3, 9)
        self.assertEqual(frame[4:8], b"\x00\x00\x00\x09")
        self.assertEqual(frame[8:], msg.encode(3))
        self.assertEqual(decode_response(frame[4:], 18, 3), (9, msg))

    def test_decode_response_roundtrip(self) -> None:
        msg = FetchResponse(session_id=3)
        for version in (7, 11, 12, 18):
            frame = encode_response(msg, version, 77)
            self.assertEqual(peek_correlation_id(frame[4:]), 77)
            self.assertEqual(decode_response(frame[4:], 1, version), (77, msg))

    def test_decode_response_trailing_bytes(self) -> None:
        frame = encode_response(MetadataResponse(), 12, 1)[4:] + b"\x00\x00"
        with self.assertRaises(DecodeError) as cm:
            decode_response(frame, 3, 12)
        self.assertEqual((cm.exception.api_key, cm.exception.version), (3, 12))

    def test_encode_response_rejects_requests(self) -> None:
        with self.assertRaises(EncodeError):
            encode_response(MetadataRequest(), 1, 1)

    def test_peek_correlation_id_truncated(self) -> None:
        with self.assertRaises(DecodeError):
            peek_correlation_id(b"\x00\x01")


@unittest.skipIf(kp_metadata is None, "kafka-python is not installed")
class HeaderGoldenTests(unittest.TestCase):
    """Our frames match kafka-python's, headers included."""

    def test_request_frames(self) -> None:
        for version in (4, 9, 12):
            theirs = kp_metadata.MetadataRequest(
                topics=[kp_metadata.MetadataRequest.MetadataRequestTopic(name="t1")],
                allow_auto_topic_creation=False,
                version=version,
            )
            theirs.with_header(correlation_id=123, client_id="afkak")
            ours = MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="t1")],
                allow_auto_topic_creation=False,
            )
            self.assertEqual(
                encode_request(ours, version, 123, "afkak"),
                bytes(theirs.encode(header=True, framed=True)),
            )

    def test_response_frames(self) -> None:
        for version in (0, 3):
            theirs = kp_metadata.ApiVersionsResponse(
                error_code=0,
                api_keys=[
                    kp_metadata.ApiVersionsResponse.ApiVersion(
                        api_key=1, min_version=4, max_version=17
                    )
                ],
                throttle_time_ms=0,
                version=version,
            )
            theirs.with_header(correlation_id=5)
            data = bytes(theirs.encode(header=True, framed=True))
            ours = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(1, 4, 17)])
            self.assertEqual(encode_response(ours, version, 5), data)
            self.assertEqual(decode_response(data[4:], 18, version), (5, ours))
        theirs = kp_metadata.MetadataResponse(
            version=12, throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=1, topics=[]
        )
        theirs.with_header(correlation_id=9)
        data = bytes(theirs.encode(header=True, framed=True))
        self.assertEqual(encode_response(MetadataResponse(controller_id=1), 12, 9), data)
