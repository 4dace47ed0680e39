"""The Produce request written without the generated encoder (issue 39).

Its bytes must be exactly the generated encoder's, at every version, and a
producer's requests must be written that way (no message built per request).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak._errors import EncodeError
from afkak.client._produce_call import ProduceCall
from afkak.common import ProduceRequest
from afkak.protocol import ZERO_UUID, encode_request
from afkak.protocol.header import encode_request_body
from afkak.protocol.messages import ProduceRequest as ProduceMsg
from afkak.protocol.produce_body import produce_body
from afkak.test.helpers import UTF8_CHARACTERS, calls_to
from afkak.test.test_producer import ProducerTestCase

names = st.text(alphabet="abcxyz-._0123456789", min_size=1, max_size=200)
partitions = st.lists(
    st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=300)), min_size=1, max_size=3
)
topics = st.lists(
    st.tuples(names, st.uuids(), partitions), min_size=1, max_size=3, unique_by=lambda t: t[0]
)


def message(
    version: int, transactional_id: str | None, acks: int, timeout_ms: int, topics: Any
) -> ProduceMsg:
    by_id = version >= 13
    return ProduceMsg(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceMsg.TopicProduceData(
                name="" if by_id else name,
                topic_id=topic_id if by_id else ZERO_UUID,
                partition_data=[
                    ProduceMsg.PartitionProduceData(index=index, records=records)
                    for index, records in parts
                ],
            )
            for name, topic_id, parts in topics
        ],
    )


class ProduceBodyTests(SynchronousTestCase):
    @given(
        version=st.integers(3, 13),
        transactional_id=st.none() | st.text(UTF8_CHARACTERS, max_size=20),
        acks=st.sampled_from([-1, 0, 1]),
        timeout_ms=st.integers(0, 2**31 - 1),
        topics=topics,
        client_id=st.none() | st.text(UTF8_CHARACTERS, max_size=20),
        correlation_id=st.integers(0, 2**31 - 1),
    )
    def test_equals_the_generated_encoder(
        self, version, transactional_id, acks, timeout_ms, topics, client_id, correlation_id
    ) -> None:  # fmt: skip
        expected = message(version, transactional_id, acks, timeout_ms, topics)
        body = produce_body(version, transactional_id, acks, timeout_ms, topics)
        self.assertEqual(body, expected.encode(version))
        self.assertEqual(
            encode_request_body(ProduceMsg, version, correlation_id, client_id, body),
            encode_request(expected, version, correlation_id, client_id),
        )

    def test_out_of_range_is_an_encode_error(self) -> None:
        for version in (3, 9, 13):
            with self.assertRaises(EncodeError):
                produce_body(version, None, 2**15, 1000, [("t", ZERO_UUID, [(0, b"")])])
            with self.assertRaises(EncodeError):
                produce_body(version, None, 1, 1000, [("t", ZERO_UUID, [(2**31, b"")])])

    def test_call_encodes_what_it_builds(self) -> None:
        """ProduceCall's body is its built message's, topics by id from version 13."""
        ids = {"t": UUID(int=1), "u": UUID(int=2)}
        payloads = [
            ProduceRequest("t", 0, ()),
            ProduceRequest("u", 1, ()),
            ProduceRequest("t", 2, ()),
        ]
        batches = {("t", 0): b"a" * 130, ("u", 1): b"b", ("t", 2): b"c"}
        for shown in (payloads, payloads[:1]):
            for version in range(3, 14):
                call = ProduceCall(shown, -1, 30000, batches, ids, "txn")
                self.assertEqual(call.encode_body(version), call(version).encode(version))
                self.assertEqual(call.version, version)  # its answer is read at it


class ProducerRequestTests(ProducerTestCase):
    def test_requests_are_written_without_building_the_message(self) -> None:
        producer = self.producer(req_acks=1, enable_idempotence=False)
        self.run_until(producer.send_messages("t", None, [b"warm-up"]))
        build: Callable[..., Any] = ProduceCall.build
        with calls_to(build.__code__) as calls:
            answer = self.run_until(producer.send_messages("t", None, [b"v"]))
        self.assertEqual(calls, [])
        self.assertEqual(answer.error, 0)
