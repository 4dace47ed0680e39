"""afkak.testing's Produce, Fetch and ListOffsets handlers, through raw frames."""

from __future__ import annotations

from typing import Any

from twisted.internet.error import ConnectionLost
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import (
    OFFSET_EARLIEST as EARLIEST,
    OFFSET_LATEST as LATEST,
    CorruptMessage,
    FencedLeaderEpoch,
    FetchSessionIdNotFound,
    InvalidProducerEpoch,
    InvalidRecord,
    InvalidRequiredAcks,
    MessageSizeTooLargeError,
    NotLeaderForPartitionError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumber,
    UnknownLeaderEpoch,
    UnknownTopicId,
    UnknownTopicOrPartitionError,
)
from afkak.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from afkak.records import build_batch, read_batches
from afkak.test.helpers import needs_codecs
from afkak.test.test_testing_transport import RawClient, connect
from afkak.testing import FakeKafkaCluster
from afkak.testing._log_apis import MAX_TIMESTAMP

P, F, L = ProduceRequest, FetchRequest, ListOffsetsRequest


def produce_request(
    cluster: FakeKafkaCluster, topic: str, partition: int, records: bytes | None, acks: int = 1
) -> Any:
    topic_id = (
        cluster.topic_id(topic) if topic in cluster.state.topics else P.TopicProduceData().topic_id
    )
    return P(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            P.TopicProduceData(
                name=topic,
                topic_id=topic_id,
                partition_data=[P.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    cluster: FakeKafkaCluster,
    offsets: dict[tuple[str, int], int],
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 0x7FFFFFFF,
    partition_max_bytes: int = 1 << 20,
    current_leader_epoch: int = -1,
) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            F.FetchPartition(
                partition=partition,
                fetch_offset=offset,
                partition_max_bytes=partition_max_bytes,
                current_leader_epoch=current_leader_epoch,
            )
        )
    return F(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[
            F.FetchTopic(
                topic=topic,
                topic_id=cluster.state.topics[topic].topic_id
                if topic in cluster.state.topics
                else F.FetchTopic().topic_id,
                partitions=parts,
            )
            for topic, parts in by_topic.items()
        ],
    )


def values_of(records: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for batch in read_batches(records) for r in batch.records()]


class ProduceTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic("t", partitions=3)
        self.leader = connect(self.cluster, 0)  # leads t/0

    def produce(
        self,
        records: bytes | None,
        version: int = 9,
        partition: int = 0,
        client: RawClient | None = None,
        topic: str = "t",
        acks: int = 1,
    ) -> Any:
        request = produce_request(self.cluster, topic, partition, records, acks)
        response = self.successResultOf((client or self.leader).request(request, version))
        return response.responses[0].partition_responses[0]

    def test_every_version_assigns_offsets(self) -> None:
        expected = 0
        for version in range(P.MIN_VERSION, P.MAX_VERSION + 1):
            answer = self.produce(build_batch([b"a", b"b"]), version)
            self.assertEqual((answer.error_code, answer.base_offset), (0, expected), version)
            expected += 2
        self.assertEqual(self.cluster.partition("t", 0).high_watermark, expected)
        records = self.cluster.records("t", 0)
        self.assertEqual([r.offset for r in records], list(range(expected)))
        self.assertEqual({r.value for r in records}, {b"a", b"b"})

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_compressed_batches(self) -> None:
        for codec in (CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            batch = build_batch(
                [b"v" * 50, b"w"], [b"k", None], headers=[[("h", b"1")], []], codec=codec
            )
            self.assertEqual(self.produce(batch).error_code, 0, codec)
        records = self.cluster.records("t", 0)
        self.assertEqual(len(records), 8)
        self.assertEqual(
            (records[6].key, records[6].value, records[6].headers),
            (b"k", b"v" * 50, (("h", b"1"),)),
        )

    def test_stored_batch_has_broker_offset_and_leader_epoch(self) -> None:
        self.cluster.append("t", 0, [b"x"])
        self.produce(build_batch([b"y"], base_offset=77))
        stored = self.cluster.partition("t", 0).log.batches[-1]
        (batch,) = read_batches(stored.data)  # the CRC still holds
        self.assertEqual((batch.base_offset, batch.partition_leader_epoch), (1, 0))

    def test_acks_all_and_none(self) -> None:
        answer = self.produce(build_batch([b"a"]), acks=-1)
        self.assertEqual(answer.error_code, 0)
        self.leader.send_only(produce_request(self.cluster, "t", 0, build_batch([b"b"]), acks=0), 9)
        self.assertEqual(self.leader.waiting, {})
        self.assertIsNone(self.leader.lost)
        self.assertEqual([r.value for r in self.cluster.records("t", 0)], [b"a", b"b"])

    def test_invalid_acks(self) -> None:
        answer = self.produce(build_batch([b"a"]), acks=2)
        self.assertEqual(answer.error_code, InvalidRequiredAcks.errno)

    def test_failed_acks_zero_produce_closes_connection(self) -> None:
        follower = connect(self.cluster, 1)
        follower.send_only(produce_request(self.cluster, "t", 0, build_batch([b"a"]), acks=0), 9)
        self.assertIsNotNone(follower.lost)
        self.assertEqual(self.cluster.records("t", 0), [])

    def test_not_leader(self) -> None:
        answer = self.produce(build_batch([b"a"]), version=10, client=connect(self.cluster, 1))
        self.assertEqual(answer.error_code, NotLeaderForPartitionError.errno)
        self.assertEqual(
            (answer.current_leader.leader_id, answer.current_leader.leader_epoch), (0, 0)
        )

    def test_not_leader_v10_points_to_leader(self) -> None:
        client = connect(self.cluster, 1)
        request = produce_request(self.cluster, "t", 0, build_batch([b"a"]))
        response = self.successResultOf(client.request(request, 10))
        self.assertEqual(
            [(e.node_id, e.host, e.port) for e in response.node_endpoints], [(0, "broker-0", 9092)]
        )

    def test_unknown_topic_partition_and_id(self) -> None:
        self.assertEqual(
            self.produce(build_batch([b"a"]), topic="nope").error_code,
            UnknownTopicOrPartitionError.errno,
        )
        self.assertEqual(
            self.produce(build_batch([b"a"]), partition=7).error_code,
            UnknownTopicOrPartitionError.errno,
        )
        self.assertEqual(
            self.produce(build_batch([b"a"]), topic="nope", version=13).error_code,
            UnknownTopicId.errno,
        )

    def test_corrupt_batch(self) -> None:
        data = bytearray(build_batch([b"abc"]))
        data[-1] ^= 0xFF
        self.assertEqual(self.produce(bytes(data)).error_code, CorruptMessage.errno)
        self.assertEqual(self.produce(build_batch([b"abc"])[:-1]).error_code, CorruptMessage.errno)
        self.assertEqual(self.cluster.partition("t", 0).high_watermark, 0)

    def test_invalid_records(self) -> None:
        two = build_batch([b"a"]) + build_batch([b"b"])
        answer = self.produce(two, version=8)
        self.assertEqual(answer.error_code, InvalidRecord.errno)
        self.assertEqual([e.batch_index for e in answer.record_errors], [0])
        self.assertEqual(self.produce(None).error_code, InvalidRecord.errno)
        self.assertEqual(
            self.produce(build_batch([b"c"], is_control=True)).error_code, InvalidRecord.errno
        )

    def test_message_too_large(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=self.clock, max_message_bytes=100)
        cluster.create_topic("t")
        answer = self.produce(build_batch([b"x" * 200]), client=connect(cluster))
        self.assertEqual(answer.error_code, MessageSizeTooLargeError.errno)

    def test_idempotent_duplicate_is_deduplicated(self) -> None:
        first = build_batch([b"a", b"b"], producer_id=5, producer_epoch=0, base_sequence=0)
        second = build_batch([b"c"], producer_id=5, producer_epoch=0, base_sequence=2)
        self.assertEqual(self.produce(first).base_offset, 0)
        self.assertEqual(self.produce(second).base_offset, 2)
        retried = self.produce(first)
        self.assertEqual((retried.error_code, retried.base_offset), (0, 0))
        self.assertEqual([r.value for r in self.cluster.records("t", 0)], [b"a", b"b", b"c"])

    def test_idempotent_gap_is_out_of_order(self) -> None:
        self.produce(build_batch([b"a"], producer_id=5, producer_epoch=0, base_sequence=0))
        gap = self.produce(build_batch([b"c"], producer_id=5, producer_epoch=0, base_sequence=2))
        self.assertEqual(gap.error_code, OutOfOrderSequenceNumber.errno)
        self.assertEqual(len(self.cluster.records("t", 0)), 1)

    def test_idempotent_epochs(self) -> None:
        self.produce(build_batch([b"a"], producer_id=5, producer_epoch=1, base_sequence=0))
        old = self.produce(build_batch([b"b"], producer_id=5, producer_epoch=0, base_sequence=1))
        self.assertEqual(old.error_code, InvalidProducerEpoch.errno)
        bumped_late = self.produce(
            build_batch([b"b"], producer_id=5, producer_epoch=2, base_sequence=3)
        )
        self.assertEqual(bumped_late.error_code, OutOfOrderSequenceNumber.errno)
        bumped = self.produce(build_batch([b"b"], producer_id=5, producer_epoch=2, base_sequence=0))
        self.assertEqual((bumped.error_code, bumped.base_offset), (0, 1))

    def test_sequence_wraps(self) -> None:
        top = 2**31 - 1
        self.produce(build_batch([b"a"], producer_id=5, producer_epoch=0, base_sequence=top))
        wrapped = self.produce(
            build_batch([b"b"], producer_id=5, producer_epoch=0, base_sequence=0)
        )
        self.assertEqual((wrapped.error_code, wrapped.base_offset), (0, 1))


class FetchTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)
        # t/0 led by 0, t/1 by 1; node 0 is no replica of t/1.
        self.cluster.create_topic("t", partitions=2, replication_factor=1)
        self.client = connect(self.cluster, 0)

    def fetch(self, version: int = 12, **kwargs: Any) -> Any:
        offsets = kwargs.pop("offsets", {("t", 0): 0})
        response = self.successResultOf(
            self.client.request(fetch_request(self.cluster, offsets, **kwargs), version)
        )
        return response.responses[0].partitions[0]

    def test_every_version_by_name_or_id(self) -> None:
        self.cluster.append("t", 0, [b"a", b"b"])
        for version in range(F.MIN_VERSION, F.MAX_VERSION + 1):
            answer = self.fetch(version)
            self.assertEqual((answer.error_code, answer.high_watermark), (0, 2), version)
            self.assertEqual(values_of(answer.records), [(0, b"a"), (1, b"b")], version)
            if version >= 5:
                self.assertEqual(answer.log_start_offset, 0)

    def test_fetch_from_middle_of_batch(self) -> None:
        self.cluster.append("t", 0, [b"a", b"b", b"c"])
        answer = self.fetch(offsets={("t", 0): 1})
        self.assertEqual(values_of(answer.records)[0], (0, b"a"))  # the whole batch, as Kafka

    def test_offset_out_of_range(self) -> None:
        self.cluster.append("t", 0, [b"a"])
        self.assertEqual(self.fetch(offsets={("t", 0): 2}).error_code, OffsetOutOfRangeError.errno)
        self.cluster.append("t", 0, [b"b"])
        self.cluster.delete_records("t", 0, 1)
        self.assertEqual(self.fetch(offsets={("t", 0): 0}).error_code, OffsetOutOfRangeError.errno)
        answer = self.fetch(offsets={("t", 0): 1})
        self.assertEqual((answer.error_code, answer.log_start_offset), (0, 1))
        self.assertEqual(values_of(answer.records), [(1, b"b")])

    def test_not_leader_and_unknown(self) -> None:
        answer = self.fetch(offsets={("t", 1): 0})
        self.assertEqual(answer.error_code, NotLeaderForPartitionError.errno)
        self.assertEqual(answer.current_leader.leader_id, 1)
        self.assertEqual(
            self.fetch(offsets={("t", 5): 0}).error_code, UnknownTopicOrPartitionError.errno
        )
        self.assertEqual(
            self.fetch(offsets={("u", 0): 0}).error_code, UnknownTopicOrPartitionError.errno
        )
        self.assertEqual(self.fetch(13, offsets={("u", 0): 0}).error_code, UnknownTopicId.errno)

    def test_not_leader_v16_node_endpoints(self) -> None:
        request = fetch_request(self.cluster, {("t", 1): 0})
        response = self.successResultOf(self.client.request(request, 16))
        self.assertEqual([e.host for e in response.node_endpoints], ["broker-1"])

    def test_leader_epoch_fencing(self) -> None:
        self.cluster.move_leader("t", 0, 0)  # epoch 1
        self.assertEqual(self.fetch(current_leader_epoch=0).error_code, FencedLeaderEpoch.errno)
        self.assertEqual(self.fetch(current_leader_epoch=2).error_code, UnknownLeaderEpoch.errno)
        self.assertEqual(self.fetch(current_leader_epoch=1).error_code, 0)

    def test_partition_max_bytes_cuts_inside_a_batch(self) -> None:
        for value in (b"a" * 100, b"b" * 100):
            self.cluster.append("t", 0, [value])
        first = len(self.cluster.partition("t", 0).log.batches[0].data)
        answer = self.fetch(partition_max_bytes=first + 10)
        self.assertEqual(len(answer.records), first + 10)
        self.assertEqual(values_of(answer.records), [(0, b"a" * 100)])

    def test_first_batch_returned_whole_even_if_too_large(self) -> None:
        self.cluster.append("t", 0, [b"a" * 100])
        answer = self.fetch(partition_max_bytes=10)
        self.assertEqual(values_of(answer.records), [(0, b"a" * 100)])

    def test_max_bytes_limits_the_response(self) -> None:
        self.cluster.create_topic("u", partitions=1)
        self.cluster.append("t", 0, [b"a" * 100])
        self.cluster.append("u", 0, [b"b" * 100])
        request = fetch_request(self.cluster, {("t", 0): 0, ("u", 0): 0}, max_bytes=50)
        response = self.successResultOf(self.client.request(request, 12))
        t0, u0 = (topic.partitions[0] for topic in response.responses)
        self.assertEqual(values_of(t0.records), [(0, b"a" * 100)])
        self.assertEqual(u0.records, b"")

    def test_long_poll_wakes_on_append(self) -> None:
        d = self.client.request(
            fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500, min_bytes=1), 12
        )
        self.assertNoResult(d)
        self.cluster.append("t", 0, [b"late"])
        answer = self.successResultOf(d).responses[0].partitions[0]
        self.assertEqual(values_of(answer.records), [(0, b"late")])
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_long_poll_waits_for_min_bytes_then_times_out(self) -> None:
        d = self.client.request(
            fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500, min_bytes=10_000), 12
        )
        self.cluster.append("t", 0, [b"small"])
        self.assertNoResult(d)
        self.clock.advance(0.499)
        self.assertNoResult(d)
        self.clock.advance(0.001)
        answer = self.successResultOf(d).responses[0].partitions[0]
        self.assertEqual(values_of(answer.records), [(0, b"small")])

    def test_long_poll_ends_on_leader_change(self) -> None:
        # Before v11 (KIP-392) only the leader serves consumers.
        d = self.client.request(fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500), 10)
        self.cluster.move_leader("t", 0, 1)
        answer = self.successResultOf(d).responses[0].partitions[0]
        self.assertEqual(answer.error_code, NotLeaderForPartitionError.errno)

    def test_long_poll_fenced_on_leader_change(self) -> None:
        request = fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500)
        request.topics[0].partitions[0].current_leader_epoch = 0
        d = self.client.request(request, 12)
        self.cluster.move_leader("t", 0, 1)
        answer = self.successResultOf(d).responses[0].partitions[0]
        self.assertEqual(answer.error_code, FencedLeaderEpoch.errno)

    def test_long_poll_holds_later_responses(self) -> None:
        held = self.client.request(fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500), 12)
        quick = self.client.request(fetch_request(self.cluster, {("t", 0): 0}), 12)
        self.assertNoResult(quick)  # a connection answers in order, as Kafka's
        self.clock.advance(0.5)
        self.successResultOf(held)
        self.successResultOf(quick)

    def test_long_poll_cancelled_by_disconnect(self) -> None:
        d = self.client.request(fetch_request(self.cluster, {("t", 0): 0}, max_wait_ms=500), 12)
        self.client.transport.loseConnection()
        self.failureResultOf(d)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertEqual(self.cluster.state.fetch_waiters, set())
        self.cluster.append("t", 0, [b"after"])  # no waiter left to answer

    def test_incremental_fetch_session_not_found(self) -> None:
        request = fetch_request(self.cluster, {("t", 0): 0})
        request.session_id, request.session_epoch = 7, 1
        response = self.successResultOf(self.client.request(request, 12))
        self.assertEqual(response.error_code, FetchSessionIdNotFound.errno)
        request.session_id, request.session_epoch = 0, 0
        response = self.successResultOf(self.client.request(request, 12))
        self.assertEqual((response.error_code, response.session_id), (0, 0))

    def test_read_committed(self) -> None:
        self.cluster.append("t", 0, [b"a"])
        request = fetch_request(self.cluster, {("t", 0): 0})
        request.isolation_level = 1
        answer = self.successResultOf(self.client.request(request, 12)).responses[0].partitions[0]
        self.assertEqual((answer.last_stable_offset, answer.aborted_transactions), (1, []))


class ListOffsetsTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=2, reactor=Clock())
        self.cluster.create_topic("t", partitions=2)
        self.cluster.append("t", 0, [b"a", b"b"], timestamps=[100, 300])
        self.cluster.append("t", 0, [b"c"], timestamp=200)
        self.client = connect(self.cluster, 0)

    def list_offset(
        self, timestamp: int, version: int = 7, partition: int = 0, topic: str = "t"
    ) -> Any:
        request = L(
            replica_id=-1,
            topics=[
                L.ListOffsetsTopic(
                    topic, [L.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)]
                )
            ],
        )
        return self.successResultOf(self.client.request(request, version)).topics[0].partitions[0]

    def test_every_version(self) -> None:
        for version in range(L.MIN_VERSION, L.MAX_VERSION + 1):
            latest = self.list_offset(LATEST, version)
            self.assertEqual((latest.error_code, latest.offset), (0, 3), version)
            self.assertEqual(self.list_offset(EARLIEST, version).offset, 0, version)

    def test_by_timestamp(self) -> None:
        self.assertEqual((self.list_offset(150).offset, self.list_offset(150).timestamp), (1, 300))
        self.assertEqual(self.list_offset(0).offset, 0)
        self.assertEqual((self.list_offset(301).offset, self.list_offset(301).timestamp), (-1, -1))

    def test_max_timestamp(self) -> None:
        answer = self.list_offset(MAX_TIMESTAMP)
        self.assertEqual((answer.offset, answer.timestamp), (1, 300))

    def test_earliest_after_delete_records(self) -> None:
        self.cluster.delete_records("t", 0, 2)
        self.assertEqual(self.list_offset(EARLIEST).offset, 2)
        self.assertEqual(self.list_offset(0).offset, 2)

    def test_errors(self) -> None:
        self.assertEqual(
            self.list_offset(LATEST, partition=1).error_code, NotLeaderForPartitionError.errno
        )
        self.assertEqual(
            self.list_offset(LATEST, topic="u").error_code, UnknownTopicOrPartitionError.errno
        )

    def test_leader_epoch(self) -> None:
        self.cluster.move_leader("t", 0, 0)
        self.assertEqual(self.list_offset(LATEST, version=4).leader_epoch, 1)

    def test_dropped_connection_fails_request(self) -> None:
        self.cluster.drop_next(ListOffsetsRequest)
        d = self.client.request(L(topics=[]), 7)
        self.failureResultOf(d, ConnectionLost)
