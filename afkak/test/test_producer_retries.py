"""Producer errors, retries and idempotence against the FakeKafkaCluster.

Faults come from the fake cluster (fail_next, drop_next, drop_answer_next,
drop_connections, move_leader); the log contents (cluster.records) show that
nothing was lost or written twice.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from afkak.codec import CODEC_GZIP
from afkak.common import (
    BrokerConnectionError,
    ClusterAuthorizationFailed,
    CoordinatorNotAvailable,
    CorruptMessage,
    DeliveryTimeoutError,
    DuplicateSequenceNumber,
    InvalidProducerEpoch,
    InvalidRecord,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NoCommonVersionError,
    NotEnoughReplicas,
    NotLeaderForPartitionError,
    OutOfOrderSequenceNumber,
    RequestTimedOutError,
    TopicAndPartition,
    TopicAuthorizationFailed,
    UnknownError,
    UnknownProducerId,
)
from afkak.producer import Producer
from afkak.producer._batch import SEQUENCE_MODULUS
from afkak.producer._outcome import Action, for_error_code, for_exception
from afkak.producer._partition import PartitionState
from afkak.records import read_batches

from .test_producer import INIT_PRODUCER_ID, PRODUCE, ProducerTestCase


class RetryTests(ProducerTestCase):
    def test_leader_moved(self) -> None:
        producer = self.producer()
        self.succeed(producer.send("t", b"before", partition=0))
        self.cluster.move_leader("t", 0, 2)
        result = self.succeed(producer.send("t", b"after", partition=0))
        self.assertEqual(result.offset, 1)
        self.assertEqual(self.values(partition=0), [b"before", b"after"])
        brokers = [r.broker for r in self.produce_requests()]
        self.assertEqual(brokers, [0, 0, 2])  # NOT_LEADER from 0, then the new leader

    def test_leader_moved_follows_the_hint_without_metadata(self) -> None:
        """KIP-951: NOT_LEADER_OR_FOLLOWER names the new leader; no Metadata round trip."""
        producer = self.producer()
        self.succeed(producer.send("t", b"before", partition=0))
        metadata = sum(r.api_key == 3 for r in self.cluster.requests_seen)
        self.cluster.move_leader("t", 0, 2)
        self.succeed(producer.send("t", b"after", partition=0))
        self.assertEqual(sum(r.api_key == 3 for r in self.cluster.requests_seen), metadata)
        self.assertEqual(self.client.topics_to_brokers[TopicAndPartition("t", 0)].node_id, 2)
        self.assertEqual(self.client.partition_meta[TopicAndPartition("t", 0)].leader, 2)

    def test_not_leader_error_refreshes_the_leader(self) -> None:
        producer = self.producer()
        self.succeed(producer.send("t", b"v", partition=1))
        metadata_before = sum(r.api_key == 3 for r in self.cluster.requests_seen)
        self.cluster.fail_next(PRODUCE, NotLeaderForPartitionError)
        self.succeed(producer.send("t", b"w", partition=1))
        metadata_after = sum(r.api_key == 3 for r in self.cluster.requests_seen)
        self.assertEqual(metadata_after, metadata_before + 1)
        self.assertEqual(self.values(partition=1), [b"v", b"w"])

    def test_retriable_errors_with_backoff(self) -> None:
        """Waits double from retry_interval, jittered by ±20 % (Kafka's retry.backoff.ms)."""
        producer = self.producer(retry_interval=0.5)
        self.succeed(producer.send("t", b"first", partition=0))
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=2)
        d = producer.send("t", b"v", partition=0)
        self.clock.advance(0)
        self.assertEqual(len(self.produce_requests()), 2)
        self.clock.advance(0.39)
        self.assertEqual(len(self.produce_requests()), 2)
        self.clock.advance(0.22)  # first back-off: retry_interval ± 20 %
        self.assertEqual(len(self.produce_requests()), 3)
        self.clock.advance(0.79 - 0.22)
        self.assertNoResult(d)
        self.clock.advance(0.42 + 0.22)  # second back-off: doubled ± 20 %
        self.assertEqual(self.successResultOf(d).offset, 1)
        self.assertEqual(self.values(partition=0), [b"first", b"v"])

    def test_retry_interval_factor_is_the_backoff_factor(self) -> None:
        """Issue 20, 10: documented as the backoff factor, never read."""

        class Slower(Producer):
            RETRY_INTERVAL_FACTOR = 3.0

        producer = Slower(self.client, retry_interval=0.5, retry_backoff_max_ms=10_000)
        self.addCleanup(producer.stop)
        self.succeed(producer.send("t", b"first", partition=0))
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=2)
        d = producer.send("t", b"v", partition=0)
        self.clock.advance(0)
        self.clock.advance(0.61)  # first back-off: retry_interval ± 20 %
        self.assertEqual(len(self.produce_requests()), 3)
        self.clock.advance(1.19)  # not yet: tripled ± 20 % is at least 1.2 s
        self.assertEqual(len(self.produce_requests()), 3)
        self.clock.advance(0.61)
        self.assertEqual(len(self.produce_requests()), 4)
        self.assertEqual(self.successResultOf(d).offset, 1)
        with self.assertRaises(ValueError):

            class Shrinking(Producer):
                RETRY_INTERVAL_FACTOR = 0.5

            Shrinking(self.client)

    def test_backoff_is_capped_at_retry_backoff_max_ms(self) -> None:
        """Backoff doubled to 30 s; Kafka's retry.backoff.max.ms is 1 s (issue 10, 7)."""
        producer = self.producer(retry_interval=0.1)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=12)
        d = producer.send("t", b"v", partition=0)
        self.run_until(d, seconds=12 * 1.2 + 1)
        self.assertEqual(len(self.produce_requests()), 13)

    def test_delivery_timeout_fails_a_send_retried_until_then(self) -> None:
        producer = self.producer(retry_interval=0.1, delivery_timeout_ms=5000)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=1000)
        d = producer.send("t", b"v", partition=0)
        for _ in range(450):
            self.clock.advance(0.01)
        self.assertNoResult(d)
        failure = self.run_until(d, seconds=0.6)
        failure.trap(DeliveryTimeoutError)
        self.assertIsInstance(failure.value, KafkaTimeoutError)  # what the docstring names
        self.assertIn("NOT_ENOUGH_REPLICAS", failure.getErrorMessage())
        self.assertGreater(len(self.produce_requests()), 5)

    def test_delivery_timeout_without_a_leader(self) -> None:
        """A batch in flight gets its request's answer (or timeout) first, then expires."""
        producer = self.producer(delivery_timeout_ms=15000)
        self.succeed(producer.send("t", b"a", partition=0))
        for broker in range(3):
            self.cluster.set_broker_down(broker)
        d = producer.send("t", b"v", partition=0)
        for _ in range(1490):
            self.clock.advance(0.01)
        self.assertNoResult(d)
        request_timeout = self.client.timeout + 1.0
        self.run_until(d, seconds=request_timeout).trap(DeliveryTimeoutError)
        self.assertEqual(producer._accumulator.outstanding, 0)

    def test_gives_up_after_max_req_attempts(self) -> None:
        producer = self.producer(max_req_attempts=3, retry_interval=0.1)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=10)
        d = producer.send("t", b"v", partition=0)
        self.run_until(d).trap(NotEnoughReplicas)
        self.assertEqual(len(self.produce_requests()), 3)
        self.assertEqual(self.values(), [])
        # The producer goes on: later sends are written.
        self.cluster.state.faults = type(self.cluster.state.faults)()
        self.assertEqual(self.succeed(producer.send("t", b"w", partition=0)).offset, 0)

    def test_non_retriable_errors_fail_at_once(self) -> None:
        for error in (TopicAuthorizationFailed, InvalidRecord, CorruptMessage):
            producer = self.producer()
            self.cluster.fail_next(PRODUCE, error)
            before = len(self.produce_requests())
            self.run_until(producer.send("t", b"v", partition=0)).trap(error)
            self.assertEqual(len(self.produce_requests()), before + 1)
        self.assertEqual(self.values(), [])

    def test_message_too_large_fails_only_the_record_too_large_alone(self) -> None:
        self.cluster.create_topic("one", partitions=2, replicas=[[0], [0]])
        self.cluster.state.max_message_bytes = 500
        producer = self.producer(linger_ms=10)
        big = producer.send("one", b"x" * 600, partition=0)
        small = producer.send("one", b"small", partition=1)
        small2 = producer.send_messages("one", None, [b"small2"])  # round robin: partition 0
        self.clock.advance(0.01)
        [seen] = self.produce_requests()[:1]
        self.assertEqual(len(seen.request.topic_data[0].partition_data), 2)
        self.failureResultOf(big, MessageSizeTooLargeError)
        # In the same batch: split from it and written alone.
        self.assertEqual(self.successResultOf(small2).offset, 0)
        self.assertEqual(self.successResultOf(small).offset, 0)
        self.assertEqual([r.value for r in self.cluster.records("one", 1)], [b"small"])
        # The partition's next batch is written (at a new epoch).
        self.assertEqual(self.succeed(producer.send("one", b"later", partition=0)).offset, 1)
        self.assertEqual([r.value for r in self.cluster.records("one", 0)], [b"small2", b"later"])

    def send_to_a_dead_leader(self) -> Any:
        """Send b"a" to t/0, kill its leader, broker 0 (-9: connections dropped, new
        ones refused), and send b"b": its Deferred, waiting half a second."""
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_connections(0)
        self.cluster.refuse_connections(0)
        d = producer.send("t", b"b", partition=0)
        self.clock.pump([0.1] * 5)
        self.assertNoResult(d)
        return d

    def test_connection_refused_then_back(self) -> None:
        d = self.send_to_a_dead_leader()
        self.cluster.refuse_connections(0, False)
        self.assertEqual(self.succeed(d).offset, 1)
        self.assertEqual(self.values(partition=0), [b"a", b"b"])

    def test_killed_leader_moved_without_waiting_for_the_request_timeout(self) -> None:
        """Issue 33: a produce queued for a leader whose broker died waited there for
        its request timeout (30 s) after the cluster had moved the partition; it fails
        at the connection's refusal, and its retry goes to the new leader."""
        d = self.send_to_a_dead_leader()
        self.cluster.move_leader("t", 0, 2)
        self.assertEqual(self.succeed(d, seconds=3).offset, 1)
        self.assertEqual(self.values(partition=0), [b"a", b"b"])
        self.assertEqual(self.produce_requests()[-1].broker, 2)


class SplitTests(ProducerTestCase):
    """Issue 33: a batch the topic refuses as too large is halved until it fits."""

    def send_many(self, producer: Producer, n: int) -> list[Any]:
        """*n* records of 100 bytes to t/0: by ``send``, and ``send_messages`` of three."""
        sends = []
        i = 0
        while i < n:
            if i % 7 == 3 and i + 3 <= n:
                values = [b"%03d" % j + b"m" * 97 for j in range(i, i + 3)]
                sends.append((i, producer.send_messages("t", None, values)))
                i += 3
            else:
                sends.append((i, producer.send("t", b"%03d" % i + b"s" * 97, partition=0)))
                i += 1
        return sends

    def check(self, producer: Producer, n: int = 60) -> None:
        self.cluster.state.max_message_bytes = 1000  # about 8 records
        self.succeed(producer.send("t", b"first", partition=0))
        sends = self.send_many(producer, n)
        self.succeed(producer.flush(), seconds=10)
        for i, d in sends:
            self.assertEqual(self.successResultOf(d).offset, i + 1)
        values = self.values(partition=0)[1:]
        self.assertEqual([v[:3] for v in values], [b"%03d" % i for i in range(n)])  # type: ignore[index]
        self.assertTrue(all(b.size_in_bytes <= 1000 for b in self.stored_batches("t", 0)))
        accumulator = producer._accumulator
        self.assertEqual((accumulator.buffered, accumulator.outstanding), (0, 0))

    def assert_one_epoch_consecutive(self) -> None:
        """t/0's batches: one epoch, consecutive sequences (nothing written twice)."""
        batches = self.stored_batches("t", 0)
        self.assertEqual(len({b.producer_epoch for b in batches}), 1)
        self.assertEqual(
            [b.base_sequence for b in batches],
            [sum(c.record_count for c in batches[:k]) for k in range(len(batches))],
        )

    def test_batches_are_halved_until_they_fit(self) -> None:
        producer = self.producer(linger_ms=100, partitioner_class=_Zero)
        self.check(producer)
        self.assert_one_epoch_consecutive()

    def test_without_idempotence(self) -> None:
        self.check(self.producer(linger_ms=100, enable_idempotence=False, partitioner_class=_Zero))

    def test_later_batches_in_flight_keep_their_place(self) -> None:
        """A batch sent after a refused one, in flight with it, is answered
        OUT_OF_ORDER_SEQUENCE_NUMBER (the refused sequences never arrived) and goes again
        after its halves, unchanged: one epoch, consecutive sequences, in order."""
        self.cluster.state.max_message_bytes = 1000
        producer = self.producer(batch_size=2500)
        # The broker knows the producer (it accepts any sequence of one it does not).
        self.succeed(producer.send("t", b"first", partition=0))
        self.cluster.delay(PRODUCE, 0.05)  # answers arrive after the next batch went
        big = [producer.send("t", b"%03d" % i + b"b" * 97, partition=0) for i in range(30)]
        self.clock.advance(0)  # the first batch (about 22 records) goes
        small = [producer.send("t", b"%03d" % i + b"s" * 7, partition=0) for i in range(30, 33)]
        self.succeed(producer.flush())
        offsets = [self.successResultOf(d).offset for d in big + small]
        self.assertEqual(offsets, list(range(1, 34)))
        self.assertEqual(
            [v[:3] for v in self.values(partition=0)[1:]],  # type: ignore[index]
            [b"%03d" % i for i in range(33)],
        )
        sent = Counter(
            (b.base_sequence, b.record_count)
            for r in self.produce_requests()
            for pd in r.request.topic_data[0].partition_data
            for b in read_batches(pd.records)
        )
        self.assertGreater(max(sent.values()), 1)  # sent again, unchanged
        self.assert_one_epoch_consecutive()

    def test_a_send_messages_call_cut_in_two_fires_once_written(self) -> None:
        self.cluster.state.max_message_bytes = 500
        producer = self.producer(linger_ms=100)
        values = [b"%d" % i + b"v" * 99 for i in range(8)]
        d = producer.send_messages("t", None, values)
        self.assertEqual(self.succeed(d).offset, 0)
        [partition] = [p for p in range(3) if self.cluster.records("t", p)]
        self.assertEqual(self.values(partition=partition), values)
        accumulator = producer._accumulator
        self.assertEqual((accumulator.buffered, accumulator.outstanding), (0, 0))

    def test_keys_headers_timestamps_and_compression_survive(self) -> None:
        self.cluster.state.max_message_bytes = 600
        producer = self.producer(linger_ms=100, codec=CODEC_GZIP)
        sends = [
            producer.send(
                "t",
                random.Random(i).randbytes(100),  # incompressible
                b"k%d" % i,
                headers=[("h", b"%d" % i)],
                timestamp=1000 + i,
                partition=1,
            )
            for i in range(20)
        ]
        self.succeed(producer.flush())
        self.assertEqual(
            [self.successResultOf(d).timestamp for d in sends], [1000 + i for i in range(20)]
        )
        records = self.cluster.records("t", 1)
        self.assertEqual(
            [(r.key, r.headers, r.timestamp) for r in records],
            [(b"k%d" % i, (("h", b"%d" % i),), 1000 + i) for i in range(20)],
        )
        self.assertGreater(len(self.stored_batches("t", 1)), 2)

    def test_a_record_too_large_alone_fails_alone(self) -> None:
        self.cluster.state.max_message_bytes = 500
        producer = self.producer(linger_ms=100)
        before = [producer.send("t", b"a%d" % i + b"x" * 100, partition=0) for i in range(3)]
        big = producer.send("t", b"x" * 600, partition=0)
        after = [producer.send("t", b"b%d" % i + b"x" * 100, partition=0) for i in range(3)]
        self.run_until(big).trap(MessageSizeTooLargeError)
        self.succeed(producer.flush())
        offsets = [self.successResultOf(d).offset for d in before + after]
        self.assertEqual(offsets, list(range(6)))
        self.assertEqual(
            [v[:2] for v in self.values(partition=0)],  # type: ignore[index]
            [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"],
        )


class _Zero:
    """Every send_messages call to partition 0."""

    def __init__(self, topic: str, partitions: list[int]) -> None:
        pass

    def partition(self, key: Any, partitions: list[int]) -> int:
        return 0


class IdempotenceTests(ProducerTestCase):
    def producer_id(self) -> tuple[int, int, int]:
        [batch] = self.stored_batches("t", 0)[-1:]
        return batch.producer_id, batch.producer_epoch, batch.base_sequence

    def test_batches_carry_producer_id_epoch_and_sequences(self) -> None:
        producer = self.producer(batch_size=200)
        ds = [producer.send("t", b"x" * 100, partition=0) for _ in range(3)]
        ds.append(producer.send_messages("t", None, [b"a", b"b"]))  # a batch of two
        self.succeed(producer.flush())
        self.succeed(producer.send("t", b"c", partition=0))
        batches = self.stored_batches("t", 0)
        self.assertEqual([b.base_sequence for b in batches], [0, 1, 2, 3, 5])
        self.assertEqual({(b.producer_id, b.producer_epoch) for b in batches}, {(1001, 0)})
        [init] = [r for r in self.cluster.requests_seen if r.api_key == INIT_PRODUCER_ID]
        self.assertIsNone(init.request.transactional_id)
        self.assertTrue(all(r.request.acks == -1 for r in self.produce_requests()))

    def test_lost_connection_before_the_broker_read_the_request(self) -> None:
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_next(PRODUCE)
        d = producer.send("t", b"b", partition=0)
        self.assertEqual(self.succeed(d).offset, 1)
        self.assertEqual(self.values(partition=0), [b"a", b"b"])

    def test_lost_answer_is_retried_and_deduplicated(self) -> None:
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_answer_next(PRODUCE)
        ds = [producer.send("t", b"%d" % i, partition=0) for i in range(3)]
        results = [self.succeed(d) for d in ds]
        self.assertEqual([r.offset for r in results], [1, 2, 3])
        self.assertEqual(self.values(partition=0), [b"a", b"0", b"1", b"2"])
        # a, the lost one ("0", written at once: the producer was idle), its retry, "1" and "2"
        self.assertEqual(len(self.produce_requests()), 4)

    def test_dropped_connections_with_requests_in_flight(self) -> None:
        self.cluster.delay(PRODUCE, 0.5)
        producer = self.producer(batch_size=120, retry_interval=0.1)
        ds = [producer.send("t", b"%03d" % i + b"x" * 100, partition=0) for i in range(12)]
        self.clock.pump([0, 0.2])
        self.cluster.drop_connections()  # five in flight, written but unanswered
        self.clock.pump([0.1] * 60)
        offsets = [self.successResultOf(d).offset for d in ds]
        self.assertEqual(offsets, list(range(12)))
        self.assertEqual(
            [v[:3] for v in self.values(partition=0)], [b"%03d" % i for i in range(12)]
        )

    def test_broker_down_with_requests_in_flight(self) -> None:
        self.cluster.delay(PRODUCE, 0.5)
        producer = self.producer(batch_size=120, retry_interval=0.1)
        ds = [producer.send("t", b"%03d" % i + b"x" * 100, partition=0) for i in range(8)]
        self.clock.pump([0, 0.2])
        self.cluster.set_broker_down(0)  # partition 0 moves to broker 1
        self.clock.pump([0.1] * 60)
        self.assertEqual([self.successResultOf(d).offset for d in ds], list(range(8)))
        self.assertEqual([v[:3] for v in self.values(partition=0)], [b"%03d" % i for i in range(8)])
        self.assertEqual(self.produce_requests()[-1].broker, 1)

    def test_retriable_error_with_batches_in_flight_keeps_order(self) -> None:
        self.cluster.delay(PRODUCE, 0.5)
        producer = self.producer(batch_size=120, retry_interval=0.1)
        self.succeed(producer.send("t", b"first", partition=0))
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas)
        ds = [producer.send("t", b"%03d" % i + b"x" * 100, partition=0) for i in range(6)]
        self.clock.pump([0] + [0.1] * 80)
        self.assertEqual([self.successResultOf(d).offset for d in ds], list(range(1, 7)))
        self.assertEqual(
            [v[:3] for v in self.values(partition=0)[1:]], [b"%03d" % i for i in range(6)]
        )
        # Later batches answered OUT_OF_ORDER_SEQUENCE_NUMBER while the first was retried:
        # that is no gap, the epoch stays.
        self.assertEqual({b.producer_epoch for b in self.stored_batches("t", 0)}, {0})

    def test_first_batch_refused_with_later_ones_ready_keeps_order(self) -> None:
        """Issue 33: a new producer's first batch to a partition refused retriably while
        later ones were in flight: the broker, which did not know the producer, took
        their sequences, and the first one's retry got OUT_OF_ORDER_SEQUENCE_NUMBER
        until its delivery timeout.  Until a sequence is acknowledged at its epoch, a
        partition has one batch in flight: nothing is lost or reordered."""
        self.cluster.delay(PRODUCE, 0.5)
        producer = self.producer(batch_size=120, retry_interval=0.1)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas)
        ds = [producer.send("t", b"%03d" % i + b"x" * 100, partition=0) for i in range(6)]
        self.clock.pump([0] + [0.1] * 80)
        self.assertEqual([self.successResultOf(d).offset for d in ds], list(range(6)))
        self.assertEqual([v[:3] for v in self.values(partition=0)], [b"%03d" % i for i in range(6)])
        self.assertEqual({b.producer_epoch for b in self.stored_batches("t", 0)}, {0})

    def test_out_of_order_sequence_bumps_the_epoch(self) -> None:
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.fail_next(PRODUCE, OutOfOrderSequenceNumber)
        self.assertEqual(self.succeed(producer.send("t", b"b", partition=0)).offset, 1)
        self.assertEqual(self.producer_id(), (1001, 1, 0))
        self.assertEqual(self.values(partition=0), [b"a", b"b"])

    def test_invalid_epoch_bumps_the_epoch(self) -> None:
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.fail_next(PRODUCE, InvalidProducerEpoch)
        self.succeed(producer.send("t", b"b", partition=0))
        self.assertEqual(self.producer_id(), (1001, 1, 0))
        self.succeed(producer.send("t", b"c", partition=0))
        self.assertEqual(self.producer_id(), (1001, 1, 1))
        self.assertEqual(self.values(partition=0), [b"a", b"b", b"c"])

    def init_requests(self) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == INIT_PRODUCER_ID]

    def test_unknown_producer_id_bumps_the_epoch_locally(self) -> None:
        """As Java's producer and librdkafka (KIP-360): no InitProducerId, sequences restart."""
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.fail_next(PRODUCE, UnknownProducerId)
        self.succeed(producer.send("t", b"b", partition=0))
        self.assertEqual(self.producer_id(), (1001, 1, 0))
        self.assertEqual(len(self.init_requests()), 1)
        self.assertEqual(self.values(partition=0), [b"a", b"b"])

    def test_recovers_when_the_brokers_forget_the_producer(self) -> None:
        """A broker restart lost the producer: sends failed until a new Producer (issue 10, 5).

        The fake refuses the id at any epoch, so after the bump (sequences
        restarted, refused again) the producer takes a fresh id.
        """
        producer = self.producer(retry_interval=0.1)
        for p in range(3):
            self.succeed(producer.send("t", b"a", partition=p))
        self.cluster.forget_producers()
        ds = [producer.send("t", b"b%d" % i, partition=i % 3) for i in range(9)]
        self.succeed(producer.flush())
        for d in ds:
            self.successResultOf(d)
        self.assertEqual(self.producer_id()[:2], (1002, 0))
        for p in range(3):
            self.assertEqual(
                self.values(partition=p), [b"a"] + [b"b%d" % i for i in range(p, 9, 3)]
            )
        self.assertEqual(len(self.init_requests()), 2)  # one new id for all partitions

    def test_init_producer_id_never_carries_the_lost_id(self) -> None:
        """Issue 20, 4: Tansu refuses InitProducerId naming an id it lost, and afkak
        asked with it for ever; a fresh id (-1, -1) is asked for instead."""
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.forget_producers()
        self.succeed(producer.send("t", b"b", partition=0))
        self.assertEqual(
            [(r.request.producer_id, r.request.producer_epoch) for r in self.init_requests()],
            [(-1, -1), (-1, -1)],
        )

    def test_a_refused_producer_id_lookup_falls_back_to_a_fresh_id(self) -> None:
        """Tansu answers UNKNOWN_SERVER_ERROR; the lookup is asked again, for a fresh id,
        and the send is written; nothing loops afterwards."""
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.fail_next(INIT_PRODUCER_ID, UnknownError)
        self.cluster.forget_producers()
        self.assertEqual(self.succeed(producer.send("t", b"b", partition=0)).offset, 1)
        self.assertEqual(self.producer_id(), (1002, 0, 0))
        self.clock.advance(60)
        self.assertEqual(self.succeed(producer.send("t", b"c", partition=0)).offset, 2)
        self.assertEqual(
            [(r.request.producer_id, r.request.producer_epoch) for r in self.init_requests()],
            [(-1, -1)] * 3,  # the first, the refused one, the fresh one
        )

    def test_duplicate_sequence_is_success(self) -> None:
        producer = self.producer()
        self.cluster.fail_next(PRODUCE, DuplicateSequenceNumber)
        result = self.succeed(producer.send("t", b"a", partition=0))
        self.assertEqual(result.offset, -1)  # the broker did not say where the original is

    def test_epoch_overflow_gets_a_new_producer_id(self) -> None:
        producer = self.producer(retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        assert producer._accumulator.identity is not None
        producer._accumulator.identity.epoch = 2**15 - 2
        self.cluster.fail_next(PRODUCE, InvalidProducerEpoch)
        self.succeed(producer.send("t", b"b", partition=0))
        self.assertEqual(self.producer_id(), (1002, 0, 0))

    def test_producer_id_lookup_is_retried(self) -> None:
        self.cluster.fail_next(INIT_PRODUCER_ID, CoordinatorNotAvailable, count=2)
        producer = self.producer(retry_interval=0.1)
        self.assertEqual(self.succeed(producer.send("t", b"a", partition=0)).offset, 0)
        inits = [r for r in self.cluster.requests_seen if r.api_key == INIT_PRODUCER_ID]
        self.assertEqual(len(inits), 3)

    def test_producer_id_lookup_stops_after_the_attempts_and_on_stop(self) -> None:
        self.cluster.fail_next(INIT_PRODUCER_ID, CoordinatorNotAvailable, count=5)
        producer = self.producer(retry_interval=0.1, max_req_attempts=3)
        self.run_until(producer.send("t", b"a", partition=0)).trap(CoordinatorNotAvailable)
        inits = [r for r in self.cluster.requests_seen if r.api_key == INIT_PRODUCER_ID]
        self.assertEqual(len(inits), 3)
        producer.send("t", b"b", partition=0).addErrback(lambda f: None)
        self.clock.advance(0.01)  # the fourth lookup failed: its retry waits
        self.successResultOf(producer.stop())
        self.successResultOf(self.client.close())
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_producer_id_refused(self) -> None:
        self.cluster.fail_next(INIT_PRODUCER_ID, ClusterAuthorizationFailed)
        producer = self.producer()
        self.run_until(producer.send("t", b"a", partition=0)).trap(ClusterAuthorizationFailed)
        self.assertEqual(self.produce_requests(), [])
        # The next send asks again.
        self.assertEqual(self.succeed(producer.send("t", b"b", partition=0)).offset, 0)

    def test_cluster_authorization_says_idempotence_needs_idempotent_write(self) -> None:
        """Issue 33: the refusal names IDEMPOTENT_WRITE and how to turn idempotence off."""
        self.cluster.fail_next(INIT_PRODUCER_ID, ClusterAuthorizationFailed)
        producer = self.producer()
        failure = self.run_until(producer.send("t", b"a", partition=0))
        failure.trap(ClusterAuthorizationFailed)
        self.assertIn("IDEMPOTENT_WRITE", str(failure.value))
        self.assertIn("enable_idempotence=False", str(failure.value))


class BrokerWithoutIdempotenceTests(ProducerTestCase):
    """A broker too old for idempotence (Kafka before 0.11: no InitProducerId)."""

    def setUp(self) -> None:
        super().setUp()
        self.cluster.state.api_versions.pop(INIT_PRODUCER_ID)

    def test_sends_fail_at_once_saying_why(self) -> None:
        """Issue 33: not after the delivery timeout, with "0 attempt(s)"."""
        producer = self.producer(retry_interval=0.1)
        d = producer.send("t", b"a", partition=0)
        failure = self.run_until(d, seconds=1.0)
        failure.trap(NoCommonVersionError)
        self.assertIn("Kafka 0.11", str(failure.value))
        self.assertIn("enable_idempotence=False", str(failure.value))
        inits = [r for r in self.cluster.requests_seen if r.api_key == INIT_PRODUCER_ID]
        self.assertEqual((inits, self.produce_requests()), ([], []))

    def test_without_idempotence_the_sends_go(self) -> None:
        producer = self.producer(enable_idempotence=False)
        self.assertEqual(self.succeed(producer.send("t", b"a", partition=0)).offset, 0)


class WithoutIdempotenceTests(ProducerTestCase):
    def test_lost_answer_fails_by_default(self) -> None:
        producer = self.producer(req_acks=1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_answer_next(PRODUCE)
        self.run_until(producer.send("t", b"b", partition=0)).trap(BrokerConnectionError)
        self.assertEqual(self.values(partition=0), [b"a", b"b"])  # it was written, once

    def test_lost_answer_retried_when_allowed_may_duplicate(self) -> None:
        producer = self.producer(req_acks=1, retry_unknown_outcome=True, retry_interval=0.1)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_answer_next(PRODUCE)
        self.assertEqual(self.succeed(producer.send("t", b"b", partition=0)).offset, 2)
        self.assertEqual(self.values(partition=0), [b"a", b"b", b"b"])

    def test_errors_before_writing_are_retried(self) -> None:
        producer = self.producer(req_acks=1, retry_interval=0.1)
        self.cluster.fail_next(PRODUCE, NotLeaderForPartitionError)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas)
        self.assertEqual(self.succeed(producer.send("t", b"a", partition=0)).offset, 0)
        self.assertEqual(self.values(partition=0), [b"a"])
        self.assertEqual(len(self.produce_requests()), 3)

    def test_a_lost_connection_is_an_unknown_outcome(self) -> None:
        producer = self.producer(req_acks=1)
        self.cluster.drop_next(PRODUCE)  # not written, but the client cannot know
        self.run_until(producer.send("t", b"a", partition=0)).trap(BrokerConnectionError)

    def test_timeouts_are_unknown_outcomes(self) -> None:
        self.cluster.delay(PRODUCE, 60)
        producer = self.producer(req_acks=1)
        d = producer.send("t", b"a", partition=0)
        self.clock.pump([0, 5, 5, 5])  # the client's 10 s timeout plus the 1 s ack timeout
        self.failureResultOf(d, RequestTimedOutError)

    def test_acks_0_send_with_lost_connection(self) -> None:
        producer = self.producer(req_acks=0)
        self.assertIsNone(self.succeed(producer.send_messages("t", None, [b"a"])))
        self.cluster.drop_connections()
        self.assertIsNone(self.succeed(producer.send_messages("t", None, [b"b"])))
        self.assertEqual(sorted(self.values()), [b"a", b"b"])


class OutcomeTests(ProducerTestCase):
    def test_error_codes(self) -> None:
        idem = {"idempotent": True, "retry_unknown_outcome": False}
        plain = {"idempotent": False, "retry_unknown_outcome": False}
        allow = {"idempotent": False, "retry_unknown_outcome": True}
        self.assertIs(for_error_code(0, **plain), Action.DONE)
        self.assertIs(for_error_code(46, **idem), Action.DONE)
        self.assertIs(for_error_code(46, **plain), Action.FAIL)
        self.assertIs(for_error_code(45, **idem), Action.RETRY)
        for code in (47, 90):
            self.assertIs(for_error_code(code, **idem), Action.BUMP)
        self.assertIs(for_error_code(59, **idem), Action.BUMP)
        for code in (7, 13, 20):  # written or not: unknown
            self.assertIs(for_error_code(code, **idem), Action.RETRY)
            self.assertIs(for_error_code(code, **plain), Action.FAIL)
            self.assertIs(for_error_code(code, **allow), Action.RETRY)
        for code in (3, 5, 6, 19, 56):
            self.assertIs(for_error_code(code, **plain), Action.RETRY)
        for code in (2, 10, 18, 29, 31, 87, 9999):
            self.assertIs(for_error_code(code, **idem), Action.FAIL)

    def test_exceptions(self) -> None:
        idem = {"idempotent": True, "retry_unknown_outcome": False}
        plain = {"idempotent": False, "retry_unknown_outcome": False}
        lost = BrokerConnectionError("lost")
        self.assertIs(for_exception(lost, **idem), Action.RETRY)
        self.assertIs(for_exception(lost, **plain), Action.FAIL)
        self.assertIs(for_exception(RequestTimedOutError(), **plain), Action.FAIL)
        self.assertIs(for_exception(NotEnoughReplicas(), **plain), Action.RETRY)
        self.assertIs(for_exception(ValueError(), **idem), Action.FAIL)


class SequenceTests(ProducerTestCase):
    def test_sequences_wrap(self) -> None:
        part = PartitionState("t", 0)
        part.next_sequence = SEQUENCE_MODULUS - 2
        self.assertEqual(part.take_sequence(5), 2**31 - 2)
        self.assertEqual(part.take_sequence(1), 3)

    def test_wrapping_sequences_are_accepted(self) -> None:
        producer = self.producer()
        self.succeed(producer.send("t", b"a", partition=0))
        part = producer._routes["t"].parts[0]
        # As if 2**31 - 2 records had been sent: the broker expects what follows.
        part.next_sequence = part.acked_next = SEQUENCE_MODULUS - 1
        log = self.cluster.partition("t", 0).log
        state = next(iter(log._producers.values()))
        state.batches[-1] = type(state.batches[-1])(0, SEQUENCE_MODULUS - 2, 0)
        self.succeed(producer.send_messages("t", None, [b"b", b"c", b"d"]))
        self.succeed(producer.send("t", b"e", partition=0))
        self.assertEqual(
            [b.base_sequence for b in self.stored_batches("t", 0)], [0, SEQUENCE_MODULUS - 1, 2]
        )
        self.assertEqual(self.values(partition=0), [b"a", b"b", b"c", b"d", b"e"])


class ProducerIsolationTests(ProducerTestCase):
    def test_two_producers_get_their_own_ids(self) -> None:
        first, second = Producer(self.client), Producer(self.client)
        self.addCleanup(first.stop)
        self.addCleanup(second.stop)
        self.succeed(first.send("t", b"a", partition=0))
        self.succeed(second.send("t", b"b", partition=0))
        self.assertEqual([b.producer_id for b in self.stored_batches("t", 0)], [1001, 1002])
