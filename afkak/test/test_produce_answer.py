"""The one-partition Produce answer read without the general decoder (issue 39).

It must give exactly what the generated decoder gives, or None (then the
general decoder reads the frame, and reports what is malformed); a malformed
one-partition answer fails its request with a protocol error.
"""

from __future__ import annotations

import struct
from typing import Any
from uuid import UUID

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak._errors import DecodeError, ProtocolError
from afkak.client._produce_call import ProduceCall
from afkak.common import BrokerConnectionError, ProduceRequest
from afkak.connection import State
from afkak.protocol import ZERO_UUID, decode_response, encode_response
from afkak.protocol.messages import ProduceResponse
from afkak.protocol.produce_answer import one_partition_answer, topic_entry
from afkak.test.helpers import UTF8_CHARACTERS
from afkak.test.test_connection import DEFAULT_VERSIONS, PRODUCE, ConnectionTestCase

#: The highest Produce version the test broker of test_connection offers.
PRODUCE_VERSION = DEFAULT_VERSIONS[PRODUCE][1]
TOPIC_ID = UUID("6d1f6e2a-53c3-4a2b-9d3e-0b9c2f6a1e11")
OTHER_TOPIC_ID = UUID("0b9c2f6a-1e11-4a2b-9d3e-6d1f6e2a53c3")
Partition = ProduceResponse.PartitionProduceResponse
Topic = ProduceResponse.TopicProduceResponse


def answer(
    version: int, name: str = "t", partition: int = 0, topic_id: UUID = TOPIC_ID, **fields: Any
) -> ProduceResponse:
    by_id = version >= 13
    return ProduceResponse(
        responses=[
            Topic(
                name="" if by_id else name,
                topic_id=topic_id if by_id else ZERO_UUID,
                partition_responses=[Partition(index=partition, **fields)],
            )
        ],
    )


def frame_of(message: ProduceResponse, version: int, correlation_id: int = 7) -> bytes:
    return encode_response(message, version, correlation_id)[4:]


def read(
    frame: bytes, version: int, name: str = "t", partition: int = 0, topic_id: UUID = TOPIC_ID
) -> Any:
    entry = topic_entry(version, name, topic_id)
    if entry is None:
        return None
    return one_partition_answer(frame, entry, version, name, topic_id, partition)


names = st.text(alphabet="abcxyz-._0123456789", min_size=1, max_size=200)
int64 = st.integers(-(2**63), 2**63 - 1)


class OnePartitionAnswerTests(SynchronousTestCase):
    @given(
        version=st.integers(3, 13),
        name=names,
        partition=st.integers(0, 2**31 - 1),
        code=st.integers(-(2**15), 2**15 - 1),
        base=int64,
        append_time=int64,
        start=int64,
        throttle=st.integers(0, 2**31 - 1),
        message=st.none() | st.text(UTF8_CHARACTERS, max_size=5),
        record_errors=st.lists(st.builds(ProduceResponse.BatchIndexAndErrorMessage), max_size=1),
        leader=st.none() | st.integers(0, 5),
    )
    def test_equals_the_general_decoder_or_declines(
        self, version, name, partition, code, base, append_time, start, throttle, message,
        record_errors, leader,
    ) -> None:  # fmt: skip
        fields: dict[str, Any] = {
            "error_code": code,
            "base_offset": base,
            "log_append_time_ms": append_time,
        }
        if version >= 5:
            fields["log_start_offset"] = start
        if version >= 8:
            fields["error_message"] = message
            fields["record_errors"] = record_errors
        if version >= 10 and leader is not None:
            fields["current_leader"] = ProduceResponse.LeaderIdAndEpoch(leader, 3)
        message_ = answer(version, name, partition, **fields)
        message_.throttle_time_ms = throttle
        frame = frame_of(message_, version)
        fast = read(frame, version, name, partition)
        general = decode_response(frame, 0, version)[1]
        # (the current leader is on the wire from version 10)
        plain = message is None and not record_errors and (leader is None or version < 10)
        if version >= 9 and plain:
            self.assertEqual(fast, general)
        else:
            self.assertIsNone(fast)
        self.assertIsNone(read(frame, version, name, partition + 1))  # another partition
        # Another topic: by name, or from version 13 (topics named by id) by id.
        self.assertIsNone(read(frame, version, name + "x", partition, OTHER_TOPIC_ID))

    def test_the_usual_answer_at_each_flexible_version(self) -> None:
        for version in range(9, 14):
            frame = frame_of(answer(version, base_offset=41), version)
            self.assertEqual(
                read(frame, version).responses[0].partition_responses[0].base_offset, 41
            )

    def test_a_frame_a_byte_short_or_long_is_declined(self) -> None:
        frame = frame_of(answer(13, base_offset=41), 13)
        for bad in (frame[:-1], frame + b"\x00", frame[:4] + b"\x01" + frame[5:]):
            self.assertIsNone(read(bad, 13))
        self.assertRaises(DecodeError, decode_response, frame[:-1], 0, 13)
        self.assertRaises(DecodeError, decode_response, frame + b"\x00", 0, 13)


class MalformedAnswerTests(ConnectionTestCase):
    """A one-partition answer the fast reader declines and the decoder cannot read."""

    def produce(self, answer_frame: bytes) -> Any:
        self.net.serve(self.broker, ordered=False)

        def answer_with(header: Any, request: Any) -> bytes:
            body = answer_frame[4:]  # a correlation id of its own
            return struct.pack(">ii", len(body) + 4, header.correlation_id) + body

        self.broker.answer = answer_with  # type: ignore[method-assign]
        connection = self.ready()
        call = ProduceCall(
            [ProduceRequest("t", 0, ())], 1, 1000, {("t", 0): b"batch"}, {"t": TOPIC_ID}
        )
        d = connection.request(call, min_version=9)
        self.net.flush()
        return connection, call, d

    def test_the_usual_answer_is_read(self) -> None:
        version = PRODUCE_VERSION
        frame = frame_of(answer(version, base_offset=5), version)
        _, call, d = self.produce(frame)
        response = self.successResultOf(d)
        self.assertEqual(call.version, version)
        self.assertEqual(call.decode_frame(frame), response)  # read by the call itself
        self.assertEqual([p.offset for p in call.parse(response)], [5])

    def test_a_short_answer_fails_its_request_with_a_protocol_error(self) -> None:
        version = PRODUCE_VERSION
        frame = frame_of(answer(version, base_offset=5), version)
        connection, _, d = self.produce(frame[:-1])
        self.failureResultOf(d, ProtocolError)
        self.assertIs(connection.state, State.BACKING_OFF)

    def test_trailing_bytes_fail_the_request_with_a_protocol_error(self) -> None:
        version = PRODUCE_VERSION
        frame = frame_of(answer(version, base_offset=5), version)
        _, _, d = self.produce(frame + b"\x00")
        failure = self.failureResultOf(d, DecodeError)
        self.assertNotIsInstance(failure.value, BrokerConnectionError)
