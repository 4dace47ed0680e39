"""KIP-320 against the fake cluster on a Clock: leader epochs, fencing, truncation detection.

The consumer fetches with the partition's leader epoch, refreshes its
metadata when fenced, and after a leader change validates its position with
OffsetForLeaderEpoch: an unclean election that truncated the log below it is
detected (carrying on from the divergence, or LogTruncationError).
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred

from afkak.client._metadata import MetadataCache, MetadataSnapshot, TopicLayout
from afkak.common import (
    OFFSET_EARLIEST,
    BrokerMetadata,
    FencedLeaderEpoch,
    LogTruncationError,
    TopicAndPartition,
    UnknownLeaderEpoch,
)
from afkak.consumer import Consumer
from afkak.protocol.messages import FetchRequest, OffsetForLeaderEpochRequest
from afkak.test.helpers import ClockTestCase
from afkak.test.test_consumer import ConsumerTestCase, Recorder
from afkak.test.test_testing_transport import connect
from afkak.testing import FakeKafkaCluster
from afkak.testing._epoch_apis import epoch_end

FETCH, METADATA, OFFSET_FOR_LEADER_EPOCH = 1, 3, 23
T1 = TopicAndPartition("t", 1)


def epochs_of(requests: list[Any]) -> list[int]:
    """The current_leader_epoch of t/1 in each Fetch (those naming it)."""
    return [
        p.current_leader_epoch
        for r in requests
        for t in r.request.topics
        for p in t.partitions
        if p.partition == 1
    ]


class LeaderEpochFetchTests(ConsumerTestCase):
    def test_fetches_carry_the_leader_epoch(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(self.client.leader_epoch(T1), 0)
        self.cluster.move_leader("t", 1, 2)
        self.append(b"b")
        self.run_for(1)
        self.assertEqual(p.values, [b"a", b"b"])
        self.assertEqual(self.client.leader_epoch(T1), 1)
        epochs = epochs_of(self.requests(FETCH))
        self.assertEqual((epochs[0], epochs[-1]), (0, 1))

    def test_fenced_fetch_reloads_metadata(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        loads = len(self.requests(METADATA))
        self.cluster.fail_next(FetchRequest, FencedLeaderEpoch)
        self.cluster.fail_next(FetchRequest, UnknownLeaderEpoch)
        self.start(c, 0)
        self.run_for(2)
        self.assertEqual(p.values, [b"a"])
        self.assertGreaterEqual(len(self.requests(METADATA)) - loads, 2)


class TruncationTests(ConsumerTestCase):
    def consumed_four(self, **options: Any) -> tuple[Recorder, Consumer, Deferred[Any]]:
        """A consumer that read a, b, c, d (offsets 0-3) at leader epoch 0."""
        p = Recorder()
        c = self.consumer(p, **options)
        self.stop(c)
        self.append(b"a", b"b")
        self.append(b"c", b"d")
        start_d = self.start(c, 0)
        self.run_for(0.5)
        self.assertEqual(p.offsets, [0, 1, 2, 3])
        return p, c, start_d

    def test_clean_leader_change_is_validated(self) -> None:
        p, _, _ = self.consumed_four()
        self.cluster.move_leader("t", 1, 2)
        self.append(b"e")
        self.run_for(1)
        self.assertEqual(p.offsets, [0, 1, 2, 3, 4])
        [check] = self.requests(OFFSET_FOR_LEADER_EPOCH)
        asked = check.request.topics[0].partitions[0]
        self.assertEqual((check.broker, asked.leader_epoch, asked.current_leader_epoch), (2, 0, 1))

    def test_fenced_validation_is_retried(self) -> None:
        p, _, start_d = self.consumed_four()
        self.cluster.fail_next(OffsetForLeaderEpochRequest, FencedLeaderEpoch)
        self.cluster.move_leader("t", 1, 2)
        self.append(b"e")
        self.run_for(2)
        self.assertNoResult(start_d)
        self.assertEqual(p.offsets, [0, 1, 2, 3, 4])
        self.assertEqual(len(self.requests(OFFSET_FOR_LEADER_EPOCH)), 2)

    def test_truncation_carries_on_from_the_divergence(self) -> None:
        # c and d (offsets 2, 3) are lost; the new leader writes x, y, z at 2-4.
        # Without validation the consumer would fetch from 4: x and y skipped.
        p, _, _ = self.consumed_four(auto_offset_reset=OFFSET_EARLIEST)
        self.cluster.unclean_election("t", 1, 2, truncate_to=2)
        self.append(b"x", b"y", b"z")
        self.run_for(1)
        self.assertEqual(p.values[4:], [b"x", b"y", b"z"])
        self.assertEqual(p.offsets[4:], [2, 3, 4])

    def test_truncation_without_reset_policy_fails(self) -> None:
        p, _, start_d = self.consumed_four()
        self.cluster.unclean_election("t", 1, 2, truncate_to=2)
        self.append(b"x", b"y", b"z")
        self.run_for(1)
        error = self.failureResultOf(start_d, LogTruncationError).value
        self.assertEqual((error.topic, error.partition), ("t", 1))
        self.assertEqual((error.position, error.divergent_offset), (4, 2))
        self.assertIn("truncated below the consumer's position 4", str(error))
        self.assertEqual(p.offsets, [0, 1, 2, 3])

    def test_truncation_above_the_position_is_no_error(self) -> None:
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.append(b"a", b"b")
        start_d = self.start(c, 0)
        self.run_for(0.5)
        self.cluster.unclean_election("t", 1, 2, truncate_to=2)  # nothing read is lost
        self.append(b"x")
        self.run_for(1)
        self.assertNoResult(start_d)
        self.assertEqual(p.values, [b"a", b"b", b"x"])
        self.assertEqual(len(self.requests(OFFSET_FOR_LEADER_EPOCH)), 1)


class MetadataEpochTests(ClockTestCase):
    def snapshot(self, leader: int, epoch: int) -> MetadataSnapshot:
        brokers = {n: BrokerMetadata(n, f"b{n}", 9092) for n in (0, 1)}
        layout = TopicLayout(0, [0], [(0, leader, (0, 1), (0, 1))], [epoch])
        return MetadataSnapshot(brokers=brokers, topics={"t": layout})

    def test_older_epoch_keeps_the_cached_leader(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        cache.merge(self.snapshot(leader=1, epoch=5))
        cache.merge(self.snapshot(leader=0, epoch=4))  # a broker behind the controller
        self.assertEqual((cache.leader(key).node_id, cache.leader_epoch(key)), (1, 5))
        cache.merge(self.snapshot(leader=0, epoch=6))
        self.assertEqual((cache.leader(key).node_id, cache.leader_epoch(key)), (0, 6))

    def test_recreated_topic_starts_its_epochs_again(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        old = self.snapshot(leader=1, epoch=5)
        cache.merge(old)
        cache.reset_topics("t")
        cache.merge(self.snapshot(leader=0, epoch=0))
        self.assertEqual((cache.leader(key).node_id, cache.leader_epoch(key)), (0, 0))


class FakeOffsetForLeaderEpochTests(ClockTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)
        self.cluster.create_topic("t", partitions=1, replicas=[[0, 1]])

    def ask(self, node: int, epoch: int, current: int = -1) -> Any:
        R = OffsetForLeaderEpochRequest
        request = R(
            replica_id=-1,
            topics=[R.OffsetForLeaderTopic("t", [R.OffsetForLeaderPartition(0, current, epoch)])],
        )
        response = self.successResultOf(connect(self.cluster, node).request(request, 4))
        return response.topics[0].partitions[0]

    def test_epoch_ends(self) -> None:
        self.cluster.append("t", 0, [b"a", b"b"])  # epoch 0: 0-1
        self.cluster.move_leader("t", 0, 1)
        self.cluster.append("t", 0, [b"c"])  # epoch 1: 2
        self.cluster.move_leader("t", 0, 0)  # epoch 2, no records yet
        part = self.cluster.partition("t", 0)
        self.assertEqual(epoch_end(part, 0), (0, 2))
        self.assertEqual(epoch_end(part, 1), (1, 3))
        self.assertEqual(epoch_end(part, 2), (2, 3))
        self.assertEqual(epoch_end(part, 3), (-1, -1))
        answer = self.ask(0, 0, current=2)
        self.assertEqual((answer.error_code, answer.leader_epoch, answer.end_offset), (0, 0, 2))

    def test_truncated_epoch_ends_where_the_new_one_starts(self) -> None:
        self.cluster.append("t", 0, [b"a", b"b"])
        self.cluster.append("t", 0, [b"c", b"d"])
        self.cluster.unclean_election("t", 0, 1, truncate_to=2)
        self.assertEqual(self.cluster.partition("t", 0).high_watermark, 2)
        answer = self.ask(1, 0, current=1)
        self.assertEqual((answer.leader_epoch, answer.end_offset), (0, 2))

    def test_fenced_and_not_leader(self) -> None:
        self.cluster.move_leader("t", 0, 0)  # epoch 1
        self.assertEqual(self.ask(0, 0, current=0).error_code, FencedLeaderEpoch.errno)
        self.assertEqual(self.ask(0, 0, current=2).error_code, UnknownLeaderEpoch.errno)
        self.assertNotEqual(self.ask(1, 0, current=1).error_code, 0)
