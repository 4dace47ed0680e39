"""Producer against afkak.testing's FakeKafkaCluster: API, options, batching, buffering.

Retries, errors and idempotence are in test_producer_retries.py.  Everything
runs the real producer, client and connections against fake brokers on a
Clock; nothing is mocked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import (
    BufferExhaustedError,
    CancelledError,
    ClientError,
    DeliveryTimeoutError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotEnoughReplicas,
    ProduceResponse,
    UnknownTopicOrPartitionError,
)
from afkak.partitioner import DefaultPartitioner, HashedPartitioner, RoundRobinPartitioner, murmur2
from afkak.producer import Producer, RecordMetadata
from afkak.records import read_batches
from afkak.test.helpers import ClockTestCase, needs_codecs
from afkak.testing import FakeKafkaCluster

PRODUCE, METADATA, INIT_PRODUCER_ID = 0, 3, 22
#: Each codec's lowest and highest compression level (zstd's fast -5, not -131072).
LEVEL_EXTREMES = (
    (CODEC_GZIP, 1),
    (CODEC_GZIP, 9),
    (CODEC_LZ4, 1),
    (CODEC_LZ4, 17),
    (CODEC_ZSTD, -5),
    (CODEC_ZSTD, 22),
)


class ProducerTestCase(ClockTestCase):
    """A 3-broker fake cluster on a Clock with topic "t" (3 partitions), a client, producers."""

    partitions = 3

    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic("t", partitions=self.partitions)
        self.client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            rng=self.rng,
        )
        self.addCleanup(self.client.close)

    def producer(self, **options: Any) -> Producer:
        producer = Producer(self.client, **options)
        self.addCleanup(producer.stop)
        return producer

    def run_until(self, d: Deferred[Any], seconds: float = 5.0, step: float = 0.01) -> Any:
        """Advance the clock in steps until *d* fires; its result (a Failure stays one)."""
        results: list[Any] = []
        d.addBoth(results.append)
        waited = 0.0
        self.clock.advance(0)
        while not results and waited < seconds:
            self.clock.advance(step)
            waited += step
        self.assertTrue(results, f"{d!r} did not fire within {seconds} s")
        return results[0]

    def succeed(self, d: Deferred[Any], seconds: float = 5.0) -> Any:
        result = self.run_until(d, seconds)
        if isinstance(result, Failure):
            result.raiseException()
        return result

    def values(self, topic: str = "t", partition: int | None = None) -> list[bytes | None]:
        parts = range(self.partitions) if partition is None else [partition]
        return [r.value for p in parts for r in self.cluster.records(topic, p)]

    def produce_requests(self) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == PRODUCE]

    def stored_batches(self, topic: str, partition: int) -> list[Any]:
        log = self.cluster.partition(topic, partition).log
        return [b for stored in log.batches for b in read_batches(stored.data)]


class ConstructorTests(ProducerTestCase):
    def test_retry_interval_factor_is_read(self) -> None:
        """Producer.RETRY_INTERVAL_FACTOR was documented as the backoff factor, never read."""

        class Patient(Producer):
            RETRY_INTERVAL_FACTOR = 3.0

        options = {"retry_interval": 0.1, "retry_backoff_max_ms": 100_000}
        for cls, low, high in ((Producer, 0.32, 0.48), (Patient, 0.72, 1.08)):
            policy = cls(self.client, **options).options.retry_policy(self.client.rng.uniform)
            self.assertTrue(low - 1e-9 <= policy(3) <= high + 1e-9, (cls, policy(3)))

        class Shrinking(Producer):
            RETRY_INTERVAL_FACTOR = 0.5

        self.assertRaises(ValueError, Shrinking, self.client)

    def test_defaults_are_idempotent_with_acks_all(self) -> None:
        options = Producer(self.client).options
        self.assertEqual((options.acks, options.idempotent), (-1, True))
        self.assertEqual((options.ack_timeout_ms, options.max_attempts), (1000, 2**31 - 1))
        self.assertEqual((options.retry_interval, options.codec), (0.1, CODEC_NONE))
        self.assertEqual((options.retry_backoff_max, options.delivery_timeout), (1.0, 120.0))
        self.assertEqual((options.batch_send, options.linger), (False, 0.0))
        self.assertEqual((options.batch_size, options.max_in_flight), (1_000_000, 5))
        self.assertEqual(options.buffer_memory, 32 * 1024 * 1024)
        self.assertFalse(options.retry_unknown_outcome)

    def test_explicit_req_acks_other_than_all_turns_idempotence_off(self) -> None:
        for acks in (0, 1):
            options = Producer(self.client, req_acks=acks).options
            self.assertEqual((options.acks, options.idempotent), (acks, False))
        options = Producer(self.client, req_acks=-1).options
        self.assertEqual((options.acks, options.idempotent), (-1, True))

    def test_idempotence_off_defaults_to_leader_acks(self) -> None:
        options = Producer(self.client, enable_idempotence=False).options
        self.assertEqual((options.acks, options.idempotent), (1, False))
        options = Producer(self.client, req_acks=-1, enable_idempotence=False).options
        self.assertEqual((options.acks, options.idempotent), (-1, False))

    def test_idempotence_needs_acks_all(self) -> None:
        for acks in (0, 1):
            with self.assertRaises(ValueError):
                Producer(self.client, req_acks=acks, enable_idempotence=True)

    def test_idempotence_allows_five_in_flight_at_most(self) -> None:
        with self.assertRaises(ValueError):
            Producer(self.client, max_in_flight_per_partition=6)
        options = Producer(
            self.client, enable_idempotence=False, max_in_flight_per_partition=6
        ).options
        self.assertEqual(options.max_in_flight, 6)

    def test_batch_send_uses_afkaks_triggers(self) -> None:
        options = Producer(
            self.client, batch_send=True, batch_every_n=3, batch_every_b=100, batch_every_t=2
        ).options
        self.assertEqual((options.batch_every_n, options.batch_every_b), (3, 100))
        self.assertEqual(options.linger, 2.0)
        options = Producer(self.client, linger_ms=20).options
        self.assertEqual(options.linger, 0.02)

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_codecs(self) -> None:
        for codec in (None, CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            self.assertEqual(Producer(self.client, codec=codec).options.codec, codec or 0)

    def test_bad_arguments(self) -> None:
        bad: list[tuple[type[Exception], dict[str, Any]]] = [
            (TypeError, {"partitioner_class": "HashedPartitioner"}),
            (ValueError, {"req_acks": 2}),
            (ValueError, {"req_acks": True}),
            (TypeError, {"ack_timeout": "1000"}),
            (ValueError, {"ack_timeout": -1}),
            (ValueError, {"max_req_attempts": 0}),
            (TypeError, {"retry_interval": "soon"}),
            (ValueError, {"retry_interval": -0.5}),
            (ValueError, {"codec": 7}),
            (
                ValueError,
                {"batch_send": True, "batch_every_n": 0, "batch_every_b": 0, "batch_every_t": 0},
            ),
            (ValueError, {"batch_every_n": -1}),
            (TypeError, {"enable_idempotence": "yes"}),
            (ValueError, {"linger_ms": -1}),
            (TypeError, {"linger_ms": 0.5}),
            (ValueError, {"batch_size": 0}),
            (ValueError, {"max_in_flight_per_partition": 0}),
            (ValueError, {"buffer_memory": 0}),
            (ValueError, {"delivery_timeout_ms": 0}),
            (TypeError, {"delivery_timeout_ms": 1.5}),
            (ValueError, {"retry_backoff_max_ms": -1}),
        ]
        for error, options in bad:
            with self.assertRaises(error, msg=repr(options)):
                Producer(self.client, **options)
        with self.assertRaises(TypeError):
            Producer(None)  # was an AttributeError
        with self.assertRaises(TypeError):
            Producer(self.client, no_such_option=1)  # type: ignore[call-arg]


class SendMessagesTests(ProducerTestCase):
    def test_fires_with_a_produce_response_for_the_first_message(self) -> None:
        producer = self.producer()
        self.clock.advance(1.5)
        first = producer.send_messages("t", msgs=[b"a", b"b"])
        second = producer.send_messages("t", msgs=[b"c"])
        fourth = producer.send_messages("t", msgs=[b"d", None])
        self.assertEqual(self.succeed(first), ProduceResponse("t", 0, 0, 0))
        self.assertEqual(self.succeed(second), ProduceResponse("t", 1, 0, 0))
        self.assertEqual(self.succeed(fourth), ProduceResponse("t", 2, 0, 0))
        self.assertEqual(self.values(partition=0), [b"a", b"b"])
        self.assertEqual(self.values(partition=2), [b"d", None])
        [record] = self.cluster.records("t", 1)
        self.assertEqual((record.key, record.timestamp, record.headers), (None, 1500, ()))

    def test_produce_names_topics_by_id_at_the_newest_version(self) -> None:
        """The producer's requests are the client's ProduceCall: v13+ (ids) where spoken."""
        producer = self.producer()
        self.succeed(producer.send_messages("t", msgs=[b"a"]))
        [seen] = self.produce_requests()
        self.assertGreaterEqual(seen.api_version, 13)
        [topic] = seen.request.topic_data
        self.assertEqual((topic.name, topic.topic_id), ("", self.cluster.topic_id("t")))
        self.assertEqual(self.values(), [b"a"])

    def test_offsets_follow_earlier_messages(self) -> None:
        producer = self.producer(partitioner_class=HashedPartitioner)
        ds = [producer.send_messages("t", b"k", [b"%d" % i] * i) for i in (1, 2, 3)]
        responses = [self.succeed(d) for d in ds]
        partition = (murmur2(b"k") & 0x7FFFFFFF) % 3
        self.assertEqual(responses, [ProduceResponse("t", partition, 0, o) for o in (0, 1, 3)])
        records = self.cluster.records("t", partition)
        self.assertEqual([r.key for r in records], [b"k"] * 6)

    def test_round_robin_spreads_calls_over_partitions(self) -> None:
        producer = self.producer()
        for i in range(9):
            producer.send_messages("t", None, [b"%d" % i])
        self.succeed(producer.flush())
        self.assertEqual(self.values(partition=1), [b"1", b"4", b"7"])

    def test_a_partitioner_subclass_is_asked_even_for_one_partition(self) -> None:
        asked: list[list[int]] = []

        class Recording(RoundRobinPartitioner):
            def partition(self, key: bytes | None, partitions: Sequence[int]) -> int:
                asked.append(list(partitions))
                return super().partition(key, partitions)

        self.cluster.create_topic("one", partitions=1)
        producer = self.producer(partitioner_class=Recording)
        self.succeed(producer.send_messages("one", None, [b"a"]))
        self.succeed(producer.send("one", b"b"))
        self.assertEqual(asked, [[0], [0]])
        self.assertEqual(self.values("one", 0), [b"a", b"b"])

    def test_argument_errors_raise_at_the_call(self) -> None:
        """Issue 20, 9: they were failed Deferreds, unlike KafkaClient's and the admin's."""
        producer = self.producer()
        cases: list[tuple[type[Exception], tuple[Any, ...]]] = [
            (TypeError, (b"t", None, [b"m"])),
            (TypeError, (None, None, [b"m"])),
            (ValueError, ("no spaces allowed", None, [b"m"])),
            (TypeError, ("t", "key", [b"m"])),
            (TypeError, ("t", 1, [b"m"])),
            (TypeError, ("t", None, b"m")),
            (TypeError, ("t", None, "m")),
            (TypeError, ("t", None, None)),
            (TypeError, ("t", None, [b"m", "text"])),
            (TypeError, ("t", None, [1])),
            (ValueError, ("t", None, [])),
            (ValueError, ("t", None, ())),
        ]
        for error, args in cases:
            with self.assertRaises(error, msg=repr(args)):
                producer.send_messages(*args)
        with self.assertRaises(ValueError):
            producer.send_messages("t")
        self.succeed(producer.send_messages("t", None, [b"routed"]))
        for error, args in cases:
            with self.assertRaises(error, msg=repr(args)):
                producer.send_messages(*args)
        self.assertEqual(self.values(), [b"routed"])

    def test_hashed_partitioner_needs_a_key(self) -> None:
        producer = self.producer(partitioner_class=HashedPartitioner)
        self.succeed(producer.send_messages("t", b"k", [b"x"]))
        self.failureResultOf(producer.send_messages("t", None, [b"m"]), TypeError)

    def test_partitioner_is_made_per_topic(self) -> None:
        made: list[tuple[str, list[int]]] = []

        class Recording(HashedPartitioner):
            def __init__(self, topic: str, partitions: list[int]) -> None:
                made.append((topic, list(partitions)))
                super().__init__(topic, partitions)

        self.cluster.create_topic("u", partitions=2)
        producer = self.producer(partitioner_class=Recording)
        self.succeed(producer.send_messages("t", b"a", [b"1"]))
        self.succeed(producer.send_messages("u", b"a", [b"1"]))
        self.succeed(producer.send_messages("t", b"b", [b"1"]))
        self.assertEqual(made, [("t", [0, 1, 2]), ("u", [0, 1])])

    def test_accepts_tuples_and_other_sequences(self) -> None:
        producer = self.producer()
        self.succeed(producer.send_messages("t", None, (b"a",)))
        self.succeed(producer.send_messages("t", None, [bytearray(b"b")]))
        self.assertEqual(sorted(self.values()), [b"a", b"b"])

    def test_auto_created_topic(self) -> None:
        producer = self.producer()
        response = self.succeed(producer.send_messages("new-topic", None, [b"v"]))
        self.assertEqual(response, ProduceResponse("new-topic", 0, 0, 0))
        self.assertEqual([r.value for r in self.cluster.records("new-topic", 0)], [b"v"])

    def test_unknown_topic_fails_after_the_attempts(self) -> None:
        self.cluster.auto_create_topics = False
        producer = self.producer(max_req_attempts=3, retry_interval=0.1)
        d = producer.send_messages("missing", None, [b"v"])
        failure = self.run_until(d)
        failure.trap(UnknownTopicOrPartitionError)
        metadata = [r for r in self.cluster.requests_seen if r.api_key == 3]
        self.assertEqual(len(metadata), 3)

    def test_unknown_topic_fails_within_the_delivery_timeout(self) -> None:
        """Without an attempt limit the lookups stop within ``delivery_timeout_ms`` (at
        its end at the latest: the jittered backoff may reach it)."""
        self.cluster.auto_create_topics = False
        producer = self.producer(delivery_timeout_ms=2000, retry_backoff_max_ms=400)
        start = self.clock.seconds()
        failure = self.run_until(producer.send_messages("missing", None, [b"v"]))
        failure.trap(UnknownTopicOrPartitionError)
        self.assertLessEqual(round(self.clock.seconds() - start, 6), 2.0)
        self.assertGreater(len([r for r in self.cluster.requests_seen if r.api_key == 3]), 3)

    def test_acks_0_fires_with_none_when_written(self) -> None:
        producer = self.producer(req_acks=0)
        self.assertIsNone(self.succeed(producer.send_messages("t", None, [b"v"])))
        self.assertEqual(self.values(), [b"v"])
        [seen] = self.produce_requests()
        self.assertEqual(seen.request.acks, 0)

    def test_acks_1_without_idempotence(self) -> None:
        producer = self.producer(req_acks=1)
        self.succeed(producer.send_messages("t", None, [b"v"]))
        [seen] = self.produce_requests()
        self.assertEqual(seen.request.acks, 1)
        [batch] = self.stored_batches("t", 0)
        self.assertEqual((batch.producer_id, batch.base_sequence), (-1, -1))
        self.assertFalse(any(r.api_key == INIT_PRODUCER_ID for r in self.cluster.requests_seen))

    def test_ack_timeout_is_sent(self) -> None:
        producer = self.producer(ack_timeout=2500)
        self.succeed(producer.send_messages("t", None, [b"v"]))
        self.assertEqual(self.produce_requests()[0].request.timeout_ms, 2500)

    def test_cancelling_a_send_stops_the_wait_only(self) -> None:
        producer = self.producer()
        d = producer.send_messages("t", None, [b"v"])
        d.cancel()
        self.failureResultOf(d)
        self.succeed(producer.flush())
        self.assertEqual(self.values(), [b"v"])


class SendTests(ProducerTestCase):
    def test_record_with_headers_timestamp_and_partition(self) -> None:
        producer = self.producer()
        d = producer.send(
            "t", b"value", b"key", headers=[("a", b"1"), ("b", None)], timestamp=1234, partition=2
        )
        self.assertEqual(self.succeed(d), RecordMetadata("t", 2, 0, 1234))
        [record] = self.cluster.records("t", 2)
        self.assertEqual(
            (record.key, record.value, record.headers, record.timestamp),
            (b"key", b"value", (("a", b"1"), ("b", None)), 1234),
        )

    def test_offsets_and_default_timestamps(self) -> None:
        producer = self.producer()
        self.clock.advance(7)
        ds = [producer.send("t", b"%d" % i, partition=1) for i in range(3)]
        ds.append(producer.send("t", None, b"tombstone", partition=1))
        results = [self.succeed(d) for d in ds]
        self.assertEqual([r.offset for r in results], [0, 1, 2, 3])
        self.assertEqual({r.timestamp for r in results}, {7000})
        self.assertEqual(self.values(partition=1), [b"0", b"1", b"2", None])

    def test_mixes_with_send_messages_in_one_batch(self) -> None:
        producer = self.producer(linger_ms=10)
        a = producer.send_messages("t", None, [b"a", b"b"])  # partition 0
        b = producer.send("t", b"c", headers=[("h", b"v")], partition=0)
        c = producer.send_messages("t", None, [b"d"])  # partition 1
        c2 = producer.send_messages("t", None, [b"e"])  # partition 2
        c3 = producer.send_messages("t", None, [b"f", b"g"])  # partition 0
        self.assertEqual(self.succeed(a).offset, 0)
        self.assertEqual(self.succeed(b).offset, 2)
        self.assertEqual(self.succeed(c3).offset, 3)
        self.succeed(c)
        self.succeed(c2)
        [batch] = self.stored_batches("t", 0)
        self.assertEqual([r.headers for r in batch], [(), (), (("h", b"v"),), (), ()])

    def test_uses_the_partitioner_without_partition(self) -> None:
        producer = self.producer(partitioner_class=HashedPartitioner)
        result = self.succeed(producer.send("t", b"v", b"key"))
        self.assertEqual(result.partition, (murmur2(b"key") & 0x7FFFFFFF) % 3)

    def test_argument_errors_raise_at_the_call(self) -> None:
        """Issue 20, 9: they were failed Deferreds, unlike KafkaClient's and the admin's."""
        producer = self.producer()
        cases: list[tuple[type[Exception], tuple[Any, ...], dict[str, Any]]] = [
            (TypeError, (1, b"v"), {}),
            (TypeError, ("t", "v"), {}),
            (TypeError, ("t", b"v", "k"), {}),
            (TypeError, ("t", b"v"), {"headers": [("a", "text")]}),
            (TypeError, ("t", b"v"), {"headers": [(b"a", b"v")]}),
            (TypeError, ("t", b"v"), {"headers": "a"}),
            (TypeError, ("t", b"v"), {"timestamp": 1.5}),
            (TypeError, ("t", b"v"), {"timestamp": -1}),
            (TypeError, ("t", b"v"), {"partition": -1}),
            (TypeError, ("t", b"v"), {"partition": "0"}),
            (ValueError, ("t", b"v"), {"timestamp": 2**63}),
            (ValueError, ("t", b"v"), {"headers": [("\ud800", b"v")]}),
            (TypeError, ("t", b"v"), {"headers": 5}),
            (TypeError, ("t", b"v"), {"headers": None}),
        ]
        for error, args, kwargs in cases:
            with self.assertRaises(error, msg=repr((args, kwargs))):
                producer.send(*args, **kwargs)
        # A partition the topic lacks is known from its metadata: the Deferred fails.
        self.run_until(producer.send("t", b"v", partition=3)).trap(ValueError)
        self.assertEqual(self.produce_requests(), [])
        # Once the topic is routed, sends take the shorter path: the same checks.
        self.succeed(producer.send("t", b"v", headers=[]))
        for error, args, kwargs in cases:
            with self.assertRaises(error, msg=repr((args, kwargs))):
                producer.send(*args, **kwargs)
        self.failureResultOf(producer.send("t", b"v", partition=3), ValueError)

    def test_unencodable_record_fails_alone(self) -> None:
        """timestamp=2**63 once broke its whole batch and the partition's sequence (issue 10, 2)."""
        producer = self.producer()
        before = producer.send("t", b"a", partition=0)
        with self.assertRaises(ValueError):
            producer.send("t", b"b", partition=0, timestamp=2**63)
        after = producer.send("t", b"c", partition=0)
        self.succeed(producer.flush())
        self.assertEqual([self.successResultOf(d).offset for d in (before, after)], [0, 1])
        self.succeed(producer.send("t", b"d", partition=0))
        self.assertEqual(self.values("t", 0), [b"a", b"c", b"d"])


class SendRecordsTests(ProducerTestCase):
    """``send_records``: many records, each with its own key, headers, timestamp and partition."""

    def test_placed_as_send_places_them_batched_per_partition(self) -> None:
        producer = self.producer()
        keys: list[bytes | None] = [b"k%d" % i for i in range(300)]
        values: list[bytes | None] = [b"v%d" % i for i in range(300)]
        self.assertIsNone(self.succeed(producer.send_records("t", values, keys)))
        for p in range(3):
            records = self.cluster.records("t", p)
            self.assertTrue(records)
            for r in records:
                self.assertEqual(DefaultPartitioner("t", [0, 1, 2]).partition(r.key, [0, 1, 2]), p)
            # in call order within each partition, one batch per partition
            self.assertEqual([r.value for r in records], [b"v" + r.key[1:] for r in records])
            self.assertEqual(len(self.stored_batches("t", p)), 1)
        self.assertEqual(sorted(self.values(), key=lambda v: int(v[1:])), values)

    def test_each_partition_gets_what_send_gives_it_in_batches_within_the_size(self) -> None:
        """The records go per partition in runs (compiled when built): each partition
        holds the records one ``send()`` each would put there, in the same order, and
        a call larger than ``batch_size`` is cut into batches that fit it."""
        self.cluster.create_topic("u", partitions=self.partitions)
        n = 200
        keys: list[bytes | None] = [None if i % 7 == 3 else b"key-%d" % i for i in range(n)]
        values: list[bytes | None] = [b"v" * (i % 50) if i % 11 else None for i in range(n)]
        headers = [(("h", b"%d" % i),) if i % 3 else () for i in range(n)]
        stamps = [1000 + i if i % 5 else None for i in range(n)]
        given = [2 if i % 13 == 0 else None for i in range(n)]
        bulk = self.producer(batch_size=1024, linger_ms=0)
        self.succeed(bulk.send("t", b"route"))
        self.succeed(
            bulk.send_records(
                "t", values, keys, headers=headers, timestamps=stamps, partitions=given
            )
        )
        one = self.producer(linger_ms=0)
        self.succeed(one.send("u", b"route"))
        sent = [
            one.send("u", v, k, headers=h, timestamp=t, partition=p)
            for k, v, h, t, p in zip(keys, values, headers, stamps, given, strict=True)
        ]
        for d in sent:
            self.succeed(d)

        def records(topic: str, p: int) -> list[tuple[Any, ...]]:
            found = [r for r in self.cluster.records(topic, p) if r.value != b"route"]
            return [(r.key, r.value, r.headers, r.timestamp) for r in found if r.key is not None]

        for p in range(self.partitions):
            self.assertEqual(records("t", p), records("u", p))
            batches = self.stored_batches("t", p)
            self.assertGreater(len(batches), 1)
            for batch in batches:
                self.assertLessEqual(batch.size_in_bytes, 1024)
        got = sorted(v or b"" for v in self.values("t") if v != b"route")
        self.assertEqual(got, sorted(v or b"" for v in values))

    def test_headers_timestamps_partitions_and_unkeyed_records(self) -> None:
        producer = self.producer()
        self.succeed(producer.send("t", b"route"))
        d = producer.send_records(
            "t",
            [b"a", b"b", b"c", None],
            [None, b"k", None, b"t"],
            headers=[(), (("h", b"1"),), (("h", None),), ()],
            timestamps=[5, None, 7, 8],
            partitions=[None, 2, None, 1],
        )
        self.succeed(d)
        b = [r for r in self.cluster.records("t", 2) if r.value == b"b"]
        self.assertEqual([(r.key, r.headers) for r in b], [(b"k", (("h", b"1"),))])
        tombstone = [r for r in self.cluster.records("t", 1) if r.key == b"t"]
        self.assertEqual([(r.value, r.timestamp) for r in tombstone], [(None, 8)])
        unkeyed = [
            r for p in range(3) for r in self.cluster.records("t", p) if r.value in (b"a", b"c")
        ]
        self.assertEqual([r.timestamp for r in unkeyed], [5, 7])  # together, on one partition
        self.assertEqual(unkeyed[1].headers, (("h", None),))

    def test_unkeyed_records_among_keyed_ones_go_together(self) -> None:
        producer = self.producer(partitioner_class=HashedPartitioner)
        self.succeed(producer.send("t", b"route", b"r"))
        self.failureResultOf(producer.send_records("t", [b"a", b"b"], [b"k", None]), TypeError)
        producer = self.producer()
        self.succeed(producer.send_records("t", [b"a", b"b", b"c"], [None, b"k", None]))
        unkeyed = [p for p in range(3) for r in self.cluster.records("t", p) if r.key is None]
        self.assertEqual(len(unkeyed), 2)
        self.assertEqual(len(set(unkeyed)), 1)

    def test_a_partitioner_of_its_own_is_asked_for_each_key(self) -> None:
        """A subclass choosing otherwise is asked per record (no column shortcut)."""

        class Last(HashedPartitioner):
            def partition(self, key: Any, partitions: Sequence[int]) -> int:
                return partitions[-1]

        producer = self.producer(partitioner_class=Last)
        self.succeed(producer.send_records("t", [b"a", b"b"], [b"k", b"l"]))
        self.assertEqual(sorted(self.values("t", 2)), [b"a", b"b"])

    def test_waits_for_metadata_and_buffer_space(self) -> None:
        producer = self.producer(buffer_memory=200)
        first = producer.send_records("t", [b"x" * 150], [b"a"])  # before the metadata
        second = producer.send_records("t", [b"y" * 150], [b"b"])  # no room yet
        self.succeed(first)
        self.succeed(second)
        self.assertEqual(sorted(self.values()), [b"x" * 150, b"y" * 150])

    def test_bad_arguments_raise_at_the_call(self) -> None:
        producer = self.producer()
        for args, kwargs, error in (
            (([],), {}, ValueError),
            ((b"ab",), {}, TypeError),
            (([b"a"], [b"k", b"l"]), {}, ValueError),
            (([1],), {}, TypeError),
            (([b"a"], [1]), {}, TypeError),
            (([b"a"],), {"headers": [[("h", 1)]]}, TypeError),
            (([b"a"],), {"timestamps": [-1]}, TypeError),
            (([b"a"],), {"partitions": [True]}, TypeError),
        ):
            with self.assertRaises(error, msg=(args, kwargs)):
                producer.send_records("t", *args, **kwargs)

    def test_headers_of_any_accepted_shape(self) -> None:
        """A column of plain headers is checked at once (compiled), any other shape
        pair by pair: lists of pairs become tuples, bad pairs raise at the call."""
        producer = self.producer()
        headers: list[Any] = [[("h", b"1")], (("h", None),), [("\u00e9", bytearray(b"2"))], ()]
        self.succeed(producer.send_records("t", [b"a", b"b", b"c", b"d"], headers=headers))
        got = sorted((r.value, r.headers) for p in range(3) for r in self.cluster.records("t", p))
        expected = [(b"a", (("h", b"1"),)), (b"b", (("h", None),)), (b"c", (("\u00e9", b"2"),))]
        self.assertEqual(got, [*expected, (b"d", ())])
        for bad, error in (
            ((("\ud800", b"v"),), ValueError),
            ((("h", "v"),), TypeError),
            ((("h", b"v", b"w"),), TypeError),
            (((b"h", b"v"),), TypeError),
        ):
            with self.assertRaises(error, msg=bad):
                producer.send_records("t", [b"a", b"b"], headers=[(("h", b"v"),), bad])

    def test_a_partition_the_topic_lacks_fails_the_call(self) -> None:
        producer = self.producer()
        self.succeed(producer.send("t", b"route"))
        self.failureResultOf(producer.send_records("t", [b"a"], partitions=[7]), ValueError)

    def test_serializers(self) -> None:
        producer = self.producer(key_serializer=str.encode, value_serializer=str.encode)
        self.succeed(producer.send_records("t", ["v"], ["k"]))
        self.assertEqual(
            [(r.key, r.value) for p in range(3) for r in self.cluster.records("t", p)],
            [(b"k", b"v")],
        )


class BatchingTests(ProducerTestCase):
    def test_sends_of_one_reactor_turn_share_a_request(self) -> None:
        """While a request is in flight (an idle producer writes a send at once)."""
        producer = self.producer()
        self.succeed(producer.send("t", b"warm-up", partition=0))
        self.cluster.delay(PRODUCE, 1.0)
        busy = producer.send("t", b"busy", partition=0)
        ds = [producer.send_messages("t", None, [b"%d" % i]) for i in range(30)]
        self.assertEqual(len(self.produce_requests()), 2)
        self.clock.advance(0)
        requests = self.produce_requests()[2:]
        self.assertEqual(sorted(r.broker for r in requests), [0, 1, 2])  # one per leader
        for seen in requests:
            [partition] = seen.request.topic_data[0].partition_data
            [batch] = read_batches(partition.records)
            self.assertEqual(len(batch), 10)
        self.clock.advance(1.0)
        for d in [busy, *ds]:
            self.successResultOf(d)

    def test_one_request_per_broker_carries_all_its_partitions(self) -> None:
        self.cluster.create_topic("two", partitions=2, replicas=[[0], [0]])
        producer = self.producer()
        ds = [producer.send_messages("two", None, [b"x"]) for _ in range(4)]
        self.clock.advance(0)
        [seen] = self.produce_requests()
        self.assertEqual(sorted(p.index for p in seen.request.topic_data[0].partition_data), [0, 1])
        for d in ds:
            self.successResultOf(d)

    def test_idle_producer_writes_in_the_turn_of_the_send(self) -> None:
        """Nothing in flight, lingering 0 ms: a send is written before send() returns
        (the fake cluster answers at once), not at the next reactor turn (issue 39)."""
        producer = self.producer()
        self.succeed(producer.send("t", b"warm-up", partition=0))  # metadata, producer id
        for send in (
            lambda: producer.send("t", b"one", partition=0),
            lambda: producer.send_messages("t", None, [b"two"]),
        ):
            before = len(self.produce_requests())
            d = send()
            self.assertEqual(len(self.produce_requests()), before + 1)
            self.successResultOf(d)
        self.assertEqual(self.values(partition=0)[:2], [b"warm-up", b"one"])
        self.assertIn(b"two", self.values())

    def test_sends_while_a_request_is_in_flight_wait_for_the_turn(self) -> None:
        """With a request in flight, later sends gather into one batch at the next turn."""
        producer = self.producer()
        self.succeed(producer.send("t", b"warm-up", partition=0))
        self.cluster.delay(PRODUCE, 1.0)
        first = producer.send("t", b"first", partition=0)
        self.assertEqual(len(self.produce_requests()), 2)  # written at once: the producer was idle
        later = [producer.send("t", b"%d" % i, partition=0) for i in range(3)]
        self.assertEqual(len(self.produce_requests()), 2)
        self.clock.advance(0)
        requests = self.produce_requests()
        self.assertEqual(len(requests), 3)
        [batch] = read_batches(requests[-1].request.topic_data[0].partition_data[0].records)
        self.assertEqual(len(batch), 3)
        self.clock.advance(1.0)
        self.assertEqual(self.successResultOf(first).offset, 1)
        self.assertEqual([self.successResultOf(d).offset for d in later], [2, 3, 4])

    def test_a_lingering_producer_waits_even_when_idle(self) -> None:
        producer = self.producer(linger_ms=5)
        self.succeed(producer.send("t", b"warm-up", partition=0))
        before = len(self.produce_requests())
        d = producer.send("t", b"v", partition=0)
        self.clock.advance(0.004)
        self.assertEqual(len(self.produce_requests()), before)
        self.clock.advance(0.001)
        self.assertEqual(len(self.produce_requests()), before + 1)
        self.successResultOf(d)

    def test_linger(self) -> None:
        producer = self.producer(linger_ms=50)
        d = producer.send_messages("t", None, [b"v"])
        self.clock.advance(0.049)
        self.assertEqual(self.produce_requests(), [])
        self.clock.advance(0.001)
        self.assertEqual(len(self.produce_requests()), 1)
        self.successResultOf(d)

    def test_full_batch_goes_without_lingering(self) -> None:
        producer = self.producer(linger_ms=1000, batch_size=300)
        ds = [producer.send("t", b"x" * 100, partition=0) for _ in range(2)]
        self.clock.advance(0)
        self.assertEqual(self.produce_requests(), [])
        ds.append(producer.send("t", b"x" * 100, partition=0))
        self.clock.advance(0)
        [seen] = self.produce_requests()
        [batch] = read_batches(seen.request.topic_data[0].partition_data[0].records)
        self.assertEqual(len(batch), 2)
        self.clock.advance(1)
        for d in ds:
            self.successResultOf(d)

    def test_batch_size_cuts_batches(self) -> None:
        producer = self.producer(batch_size=500, partitioner_class=HashedPartitioner)
        ds = [producer.send_messages("t", b"k", [b"x" * 100]) for _ in range(12)]
        self.succeed(producer.flush())
        partition = ds[0].result.partition
        batches = self.stored_batches("t", partition)
        self.assertGreater(len(batches), 2)
        self.assertTrue(all(len(b) <= 4 for b in batches))
        self.assertEqual(sum(len(b) for b in batches), 12)

    def test_one_call_is_never_split(self) -> None:
        producer = self.producer(batch_size=200)
        d = producer.send_messages("t", None, [b"x" * 100] * 5)
        self.succeed(d)
        [batch] = self.stored_batches("t", 0)
        self.assertEqual(len(batch), 5)

    def test_batch_every_n(self) -> None:
        producer = self.producer(batch_send=True, batch_every_n=3, batch_every_b=0, batch_every_t=0)
        ds = [producer.send_messages("t", None, [b"v"]) for _ in range(2)]
        self.clock.advance(100)
        self.assertEqual(self.produce_requests(), [])
        ds.append(producer.send_messages("t", None, [b"v"]))
        self.clock.advance(0)
        self.assertEqual(len(self.produce_requests()), 3)
        for d in ds:
            self.successResultOf(d)

    def test_batch_every_b(self) -> None:
        producer = self.producer(
            batch_send=True, batch_every_n=0, batch_every_b=250, batch_every_t=0
        )
        first = producer.send_messages("t", None, [b"x" * 100])
        self.clock.advance(100)
        self.assertNoResult(first)
        second = producer.send_messages("t", None, [b"x" * 100, b"x" * 100])
        self.clock.advance(0)
        self.successResultOf(first)
        self.successResultOf(second)

    def test_batch_every_t(self) -> None:
        producer = self.producer(batch_send=True, batch_every_n=100, batch_every_t=2)
        first = producer.send_messages("t", None, [b"v"])
        self.clock.advance(1)
        second = producer.send_messages("t", None, [b"v"])
        self.clock.advance(0.99)
        self.assertEqual(self.produce_requests(), [])
        self.clock.advance(0.01)  # the first batch's time is up: everything goes
        self.assertEqual(len(self.produce_requests()), 2)
        self.successResultOf(first)
        self.successResultOf(second)

    def test_batch_mode_calls_get_their_batchs_offset_as_in_afkak_21(self) -> None:
        # afkak 21.5 sent a batch as one request and fired each of its send_messages
        # calls with the partition's response: the batch's first offset (21.5's
        # test_producer_batched_by_messages).  A send() record keeps its own.
        producer = self.producer(
            batch_send=True, batch_every_n=7, batch_every_t=0, partitioner_class=HashedPartitioner
        )
        for base in (0, 7):
            calls = [producer.send_messages("t", b"k", [b"%d" % i, b"x"]) for i in range(3)]
            record = producer.send("t", b"r", b"k")
            self.clock.advance(0)
            results = [self.succeed(d) for d in calls]
            metadata = self.succeed(record)
            self.assertEqual([r.offset for r in results], [base] * 3)
            self.assertEqual({r.partition for r in results}, {metadata.partition})
            self.assertEqual(metadata.offset, base + 6)

    def test_without_batch_mode_each_call_gets_its_own_offset(self) -> None:
        # afkak 21.5 sent each call as a request of its own: its own first offset,
        # also when calls of one reactor turn now share a batch.
        producer = self.producer(partitioner_class=HashedPartitioner)
        calls = [producer.send_messages("t", b"k", [b"%d" % i, b"x"]) for i in range(3)]
        self.clock.advance(0)
        self.assertEqual([self.succeed(d).offset for d in calls], [0, 2, 4])
        self.assertEqual(len(self.produce_requests()), 1)

    def test_afkak_21_batching_scenario(self) -> None:
        # afkak 21.5's documented batching as its users wrote it: nothing is sent before a
        # trigger fires, then each call's messages are together on one partition, round
        # robin starting at the first partition.  A trigger of 0 or None is off.
        first_and_third = [b"0-%d" % i for i in range(4)] + [b"2-%d" % i for i in range(4)]
        for every_n, every_t in ((0, 0), (10, 0), (None, None), (0, 600)):
            with self.subTest(every_n=every_n, every_t=every_t):
                topic = f"b{every_n}-{every_t}"
                self.cluster.create_topic(topic, partitions=2)
                sent_before = len(self.produce_requests())
                producer = self.producer(
                    batch_send=True,
                    batch_every_b=4096,
                    batch_every_n=every_n,
                    batch_every_t=every_t,
                    batch_size=100,  # full batches are cut, and wait for the trigger too
                )
                calls = [
                    producer.send_messages(topic, None, [b"%d-%d" % (c, i) for i in range(4)])
                    for c in range(2 if every_n == 10 else 4)
                ]
                self.clock.advance(60)
                self.assertEqual(len(self.produce_requests()), sent_before)
                if every_n == 10:
                    # The third call makes 12 messages waiting: the count trigger fires.
                    calls.append(
                        producer.send_messages(topic, None, [b"2-%d" % i for i in range(4)])
                    )
                    self.clock.advance(0)
                    self.assertEqual(self.values(topic, 0), first_and_third)
                    calls.append(
                        producer.send_messages(topic, None, [b"3-%d" % i for i in range(4)])
                    )
                calls.append(producer.send_messages(topic, None, [b"x" * 4096]))
                self.clock.advance(0)
                self.clock.advance(0.1)
                results = [self.successResultOf(d) for d in calls]
                self.assertEqual(self.values(topic, 0), [*first_and_third, b"x" * 4096])
                self.assertEqual(
                    self.values(topic, 1),
                    [b"1-%d" % i for i in range(4)] + [b"3-%d" % i for i in range(4)],
                )
                self.assertEqual([r.partition for r in results], [0, 1, 0, 1, 0])
                producer.stop()

    def test_batch_every_t_holds_full_batches_until_the_timer(self) -> None:
        producer = self.producer(
            batch_send=True, batch_every_n=0, batch_every_b=0, batch_every_t=5, batch_size=100
        )
        ds = [producer.send_messages("t", None, [b"x" * 60]) for _ in range(6)]
        self.clock.advance(4.9)
        self.assertEqual(self.produce_requests(), [])
        self.clock.advance(0.1)
        self.clock.advance(0)
        self.assertTrue(self.produce_requests())
        self.clock.advance(1)
        for d in ds:
            self.successResultOf(d)

    def test_call_over_the_limit_is_written_as_several_batches_in_order(self) -> None:
        producer = self.producer()
        values = [bytes([65 + i]) * (384 * 1024) for i in range(10)]
        first = producer.send_messages("t", None, values)
        after = producer.send_messages("t", None, [b"after"])
        result = self.succeed(first)
        self.assertEqual((result.partition, result.offset), (0, 0))
        self.assertEqual(self.succeed(after).partition, 1)
        self.assertEqual(self.values("t", 0), values)
        batches = self.stored_batches("t", 0)
        self.assertEqual([len(b) for b in batches], [2, 2, 2, 2, 2])
        self.assertEqual(producer._accumulator.buffered, 0)
        self.assertEqual(producer._accumulator.outstanding, 0)
        self.assertIsNone(self.succeed(producer.flush()))

    def test_record_over_the_limit_fails_only_its_send(self) -> None:
        producer = self.producer(partitioner_class=HashedPartitioner)
        before = producer.send_messages("t", b"k", [b"before"])
        huge = producer.send_messages("t", b"k", [b"small", b"x" * (1024 * 1024)])
        record = producer.send("t", b"y" * (1024 * 1024), partition=0)
        after = producer.send_messages("t", b"k", [b"after"])
        self.assertEqual(self.succeed(after).offset, 1)
        self.assertEqual(self.successResultOf(before).offset, 0)
        self.failureResultOf(huge, MessageSizeTooLargeError)
        self.failureResultOf(record, MessageSizeTooLargeError)
        self.assertEqual(self.values(), [b"before", b"after"])
        self.assertEqual(
            (producer._accumulator.buffered, producer._accumulator.outstanding), (0, 0)
        )

    def test_max_request_size(self) -> None:
        producer = self.producer(max_request_size=100 * 1024)
        d = producer.send_messages("t", None, [b"v" * (30 * 1024)] * 7)
        self.succeed(d)
        self.assertEqual([len(b) for b in self.stored_batches("t", 0)], [3, 3, 1])
        self.failureResultOf(producer.send("t", b"x" * (100 * 1024)), MessageSizeTooLargeError)

    def test_flush_sends_at_once(self) -> None:
        producer = self.producer(linger_ms=60_000)
        d = producer.send_messages("t", None, [b"v"])
        flushed = producer.flush()
        self.clock.advance(0)
        self.successResultOf(d)
        self.assertIsNone(self.successResultOf(flushed))
        self.assertIsNone(self.successResultOf(producer.flush()))


class CodecTests(ProducerTestCase):
    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_each_codec(self) -> None:
        for codec in (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            topic = f"codec-{codec}"
            self.cluster.create_topic(topic, partitions=1)
            producer = self.producer(codec=codec)
            values = [b"value %d " % i * 20 for i in range(50)]
            for value in values:
                producer.send_messages(topic, b"key", [value])
            producer.send(topic, b"last", headers=[("h", b"x")])
            self.succeed(producer.flush())
            [batch] = self.stored_batches(topic, 0)
            self.assertEqual(batch.codec, codec)
            records = list(batch)
            self.assertEqual([r.value for r in records], [*values, b"last"])
            self.assertEqual(records[-1].headers, (("h", b"x"),))
            if codec != CODEC_NONE:
                raw = sum(len(v) for v in values)
                self.assertLess(len(self.cluster.partition(topic, 0).log.batches[0].data), raw)

    @needs_codecs(CODEC_LZ4, CODEC_ZSTD)
    def test_compression_levels(self) -> None:
        """Issue 24 (KIP-390): each codec's level reaches the batch; the records read back."""
        values = [b"value %d " % i * 20 for i in range(50)]
        sizes = {}
        for codec, level in LEVEL_EXTREMES:
            topic = f"level-{codec}-{level}"
            self.cluster.create_topic(topic, partitions=1)
            producer = self.producer(codec=codec, compression_level=level)
            for value in values:
                producer.send_messages(topic, None, [value])
            self.succeed(producer.flush())
            [batch] = self.stored_batches(topic, 0)
            self.assertEqual([r.value for r in batch], values)
            sizes[codec, level] = len(self.cluster.partition(topic, 0).log.batches[0].data)
        self.assertLess(sizes[CODEC_GZIP, 9], sizes[CODEC_GZIP, 1])
        self.assertLess(sizes[CODEC_ZSTD, 22], sizes[CODEC_ZSTD, -5])

    @needs_codecs(CODEC_SNAPPY, CODEC_ZSTD)
    def test_bad_compression_levels_raise_at_the_constructor(self) -> None:
        for options, error in (
            ({"codec": CODEC_GZIP, "compression_level": 10}, ValueError),
            ({"codec": CODEC_SNAPPY, "compression_level": 1}, ValueError),
            ({"compression_level": 1}, ValueError),
            ({"codec": CODEC_ZSTD, "compression_level": "3"}, TypeError),
        ):
            with self.assertRaises(error, msg=repr(options)):
                Producer(self.client, **options)


class InFlightTests(ProducerTestCase):
    def test_in_flight_bound_and_order(self) -> None:
        producer = self.producer(batch_size=150, max_in_flight_per_partition=2)
        # Its first batch goes alone, until the broker knows the producer.
        self.succeed(producer.send("t", b"first", partition=0))
        self.cluster.delay(PRODUCE, 1.0)
        ds = [producer.send("t", b"%03d" % i + b"x" * 100, partition=0) for i in range(8)]
        self.clock.advance(0)
        self.assertEqual(len(self.produce_requests()), 3)
        self.clock.advance(1.0)
        self.assertEqual(len(self.produce_requests()), 5)
        self.assertEqual(len(self.values(partition=0)), 5)
        self.clock.pump([1.0] * 3)
        offsets = [self.successResultOf(d).offset for d in ds]
        self.assertEqual(offsets, list(range(1, 9)))
        self.assertEqual(
            [v[:3] for v in self.values(partition=0)[1:]],  # type: ignore[index]
            [b"%03d" % i for i in range(8)],
        )

    def test_accumulates_while_in_flight_limit_is_reached(self) -> None:
        self.cluster.delay(PRODUCE, 1.0)
        producer = self.producer(max_in_flight_per_partition=1)
        first = producer.send("t", b"first", partition=0)
        self.clock.advance(0)
        later = [producer.send("t", b"%d" % i, partition=0) for i in range(5)]
        self.clock.advance(0.5)
        self.assertEqual(len(self.produce_requests()), 1)
        self.clock.advance(0.5)
        self.successResultOf(first)
        [_, second] = self.produce_requests()
        [records] = [p.records for p in second.request.topic_data[0].partition_data]
        [batch] = read_batches(records)
        self.assertEqual(len(batch), 5)
        self.clock.advance(1.0)
        self.assertEqual([self.successResultOf(d).offset for d in later], [1, 2, 3, 4, 5])


class BufferTests(ProducerTestCase):
    def test_a_send_beyond_the_buffer_waits(self) -> None:
        producer = self.producer(buffer_memory=350, batch_size=100)
        self.succeed(producer.send("t", b"first", partition=0))  # then several go at once
        self.cluster.delay(PRODUCE, 1.0)
        ds = [producer.send("t", b"x" * 100, partition=0) for _ in range(5)]
        self.clock.advance(0)
        self.assertEqual(len(self.produce_requests()), 4)  # 3 x 110 estimated bytes fit
        self.assertEqual(len(self.values(partition=0)), 4)
        self.clock.advance(1.0)
        self.assertEqual(len(self.produce_requests()), 6)
        self.clock.advance(1.0)
        self.assertEqual([self.successResultOf(d).offset for d in ds], [1, 2, 3, 4, 5])

    def test_a_send_larger_than_the_buffer_goes_alone(self) -> None:
        producer = self.producer(buffer_memory=50)
        d1 = producer.send_messages("t", None, [b"x" * 100])
        d2 = producer.send_messages("t", None, [b"y" * 100])
        self.succeed(d1)
        self.succeed(d2)
        self.assertEqual(len(self.produce_requests()), 2)

    def test_waiting_sends_keep_their_order(self) -> None:
        self.cluster.delay(PRODUCE, 1.0)
        producer = self.producer(buffer_memory=120)
        ds = [producer.send("t", b"%d" % i * 50, partition=1) for i in range(4)]
        self.clock.pump([0] + [1.0] * 5)
        self.assertEqual([self.successResultOf(d).offset for d in ds], [0, 1, 2, 3])
        self.assertEqual(self.values(partition=1), [b"%d" % i * 50 for i in range(4)])


class SerializerTests(ProducerTestCase):
    """Issue 22: key_serializer / value_serializer, as aiokafka's."""

    def test_send_and_send_messages_serialize_keys_and_values(self) -> None:
        producer = self.producer(
            key_serializer=lambda k: k.encode(),
            value_serializer=lambda v: json.dumps(v).encode(),
        )
        one = self.succeed(producer.send("t", {"n": 1}, "user-7"))
        many = self.succeed(producer.send_messages("t", "user-7", [{"n": 2}, None]))
        self.assertEqual(many.partition, one.partition)  # the serialized key placed both
        records = self.cluster.records("t", one.partition)
        self.assertEqual(
            [(r.key, r.value) for r in records],
            [(b"user-7", b'{"n": 1}'), (b"user-7", b'{"n": 2}'), (b"user-7", None)],
        )

    def test_none_is_not_serialized(self) -> None:
        """A null key stays unkeyed, a null value a tombstone."""
        seen: list[Any] = []

        def serializer(x: Any) -> bytes:
            seen.append(x)
            return b"s"

        producer = self.producer(key_serializer=serializer, value_serializer=serializer)
        self.succeed(producer.send("t", None, partition=0))
        self.succeed(producer.send_messages("t", None, [None]))
        self.assertEqual(seen, [])
        records = [r for p in range(self.partitions) for r in self.cluster.records("t", p)]
        self.assertEqual([(r.key, r.value) for r in records], [(None, None), (None, None)])

    def test_wrong_types_raise_at_the_call(self) -> None:
        def refuse(key: Any) -> bytes:
            raise ValueError(f"no key {key!r}")

        producer = self.producer(value_serializer=lambda v: v, key_serializer=refuse)
        with self.assertRaises(TypeError):
            producer.send("t", "not bytes")
        with self.assertRaises(TypeError):
            producer.send_messages("t", None, [b"ok", 5])
        with self.assertRaises(ValueError):  # what the serializer raised
            producer.send("t", b"v", key=5)
        with self.assertRaises(TypeError):
            Producer(self.client, key_serializer="utf-8")
        with self.assertRaises(TypeError):
            Producer(self.client, value_serializer=b"json")
        self.assertEqual(self.produce_requests(), [])


class DefaultPlacementTests(ProducerTestCase):
    """Issue 20, 6: Producer(client) spread one key over every partition."""

    partitions = 4

    def test_keyed_sends_go_where_the_java_client_puts_them(self) -> None:
        producer = self.producer()
        self.assertIs(producer.partitioner_class, DefaultPartitioner)
        # Kafka 4.1.1's BuiltInPartitioner.partitionForKey over 4 partitions.
        java = {b"foobar": 2, b"key-0": 1, b"key-42": 3, b"user:7": 0}
        for key, partition in java.items():
            for d in (producer.send("t", b"v", key), producer.send_messages("t", key, [b"v"])):
                self.assertEqual(self.succeed(d).partition, partition, key)

    def test_unkeyed_sends_go_round_robin(self) -> None:
        producer = self.producer()
        got = [self.succeed(producer.send("t", b"v")).partition for _ in range(5)]
        self.assertEqual(got, [0, 1, 2, 3, 0])

    def test_unkeyed_sends_share_the_open_batch(self) -> None:
        """Issue 28: unkeyed ``send()`` records made before their batch is sent join it
        (Java's KIP-480 placement), then the next batch goes to the next partition.
        Round robin per record gave 1,000 partitions one batch per record: 13-18 us
        of CPU a record against confluent-kafka's 2.5-2.9 (it sticks, too)."""
        producer = self.producer()
        self.succeed(producer.send("t", b"warm-up"))  # partition 0
        # A request in flight: an idle producer would write the first record at once.
        self.cluster.delay(PRODUCE, 1.0)
        busy = producer.send("t", b"busy", partition=0)  # (a partition given: not sticky)
        first = [producer.send("t", b"v") for _ in range(6)]
        self.assertEqual({self.succeed(d).partition for d in first}, {1})
        self.succeed(busy)
        busy = producer.send("t", b"busy", partition=0)
        second = [producer.send("t", b"v") for _ in range(3)]
        self.assertEqual({self.succeed(d).partition for d in second}, {2})
        # send_messages keeps afkak 21's round robin: one call, one partition, the next.
        self.assertEqual(self.succeed(producer.send_messages("t", None, [b"v"])).partition, 3)


class MaxBlockTests(ProducerTestCase):
    """Issue 20, 5: sends waiting for buffer space waited for ever (broker down)."""

    def brokers_down(self) -> None:
        # (The cluster answered once: a refusal before that fails sends at once.)
        self.successResultOf(self.client.load_metadata_for_topics())
        for broker in range(3):
            self.cluster.set_broker_down(broker)

    def test_a_send_waiting_for_buffer_space_fails_after_max_block_ms(self) -> None:
        producer = self.producer(buffer_memory=200, max_block_ms=5000)
        self.succeed(producer.send("t", b"a", partition=0))
        self.brokers_down()
        held = producer.send("t", b"x" * 150, partition=0)
        waiting = [producer.send("t", b"y" * 100, partition=0) for _ in range(3)]
        self.clock.advance(4.99)
        for d in waiting:
            self.assertNoResult(d)
        self.clock.advance(0.02)
        for d in waiting:
            failure = self.failureResultOf(d, BufferExhaustedError)
            self.assertIsInstance(failure.value, KafkaTimeoutError)
            self.assertIn("max_block_ms", failure.getErrorMessage())
        self.assertNoResult(held)  # in the buffer: the delivery timeout bounds it
        self.assertEqual(producer._accumulator.blocked, 0)
        held.addErrback(lambda f: None)

    def test_max_block_ms_defaults_to_javas_60_s(self) -> None:
        producer = self.producer(buffer_memory=200)
        self.assertEqual(producer.options.max_block, 60.0)
        self.brokers_down()
        producer.send("t", b"x" * 150, partition=0).addErrback(lambda f: None)
        d = producer.send_messages("t", None, [b"y" * 100])
        self.clock.advance(59.9)
        self.assertNoResult(d)
        self.clock.advance(0.2)
        self.failureResultOf(d, BufferExhaustedError)

    def test_the_delivery_timeout_covers_the_wait(self) -> None:
        """A send that waited for space is acknowledged within delivery_timeout_ms of the call."""
        producer = self.producer(
            buffer_memory=200, max_block_ms=10_000, delivery_timeout_ms=5000, retry_interval=0.1
        )
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.delay(PRODUCE, 3.0)
        first = producer.send("t", b"x" * 150, partition=0)
        late = producer.send("t", b"y" * 100, partition=0)
        self.clock.advance(0)
        self.cluster.delay(PRODUCE, 0)
        self.cluster.fail_next(PRODUCE, NotEnoughReplicas, count=1000)
        self.clock.advance(3.0)
        self.successResultOf(first)
        self.clock.pump([0.1] * 19)
        self.assertNoResult(late)  # 4.9 s after the call
        self.clock.pump([0.1] * 3)
        self.failureResultOf(late, DeliveryTimeoutError)

    def test_a_wait_longer_than_the_delivery_timeout_is_a_delivery_timeout(self) -> None:
        producer = self.producer(buffer_memory=200, delivery_timeout_ms=2000)
        self.succeed(producer.send("t", b"a", partition=0))
        self.brokers_down()
        producer.send("t", b"x" * 150, partition=0).addErrback(lambda f: None)
        d = producer.send("t", b"y" * 100, partition=0)
        self.clock.advance(1.99)
        self.assertNoResult(d)
        self.clock.advance(0.02)
        self.assertIn(
            "buffer space", self.failureResultOf(d, DeliveryTimeoutError).getErrorMessage()
        )

    def test_stop_leaves_no_timer(self) -> None:
        producer = self.producer(buffer_memory=200)
        self.brokers_down()
        producer.send("t", b"x" * 150, partition=0).addErrback(lambda f: None)
        producer.send("t", b"y" * 100, partition=0).addErrback(lambda f: None)
        self.succeed(producer.stop())
        self.assertEqual(
            [c for c in self.clock.getDelayedCalls() if "_block_expired" in repr(c)], []
        )

    def test_bad_max_block_ms(self) -> None:
        for bad, error in (("1", TypeError), (-1, ValueError), (1.5, TypeError)):
            with self.assertRaises(error):
                Producer(self.client, max_block_ms=bad)


class StopTests(ProducerTestCase):
    def test_stop_with_sends_in_flight_and_waiting_for_space(self) -> None:
        """Space freed by the cancelled requests admits nothing: no send is routed after stop."""
        producer = self.producer(buffer_memory=300)
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.delay(PRODUCE, 5.0)
        in_flight = producer.send("t", b"x" * 200, partition=0)
        self.clock.advance(0)
        waiting = [producer.send("other", b"y" * 150) for _ in range(3)]
        requests = len(self.cluster.requests_seen)
        self.succeed(producer.stop())
        self.failureResultOf(in_flight, CancelledError)
        for d in waiting:
            self.failureResultOf(d, CancelledError)
        self.clock.advance(10)
        self.assertEqual(len(self.cluster.requests_seen), requests)  # no metadata load
        self.assertEqual(producer._accumulator.buffered, 0)
        self.assertEqual(producer._accumulator.outstanding, 0)

    def test_stop_cancels_outstanding_sends(self) -> None:
        self.cluster.delay(PRODUCE, 1.0)
        producer = Producer(self.client, linger_ms=0, buffer_memory=200)
        in_flight = producer.send("t", b"a", partition=0)
        self.clock.advance(0)
        lingering = producer.send("t", b"b", partition=1)
        blocked = producer.send("t", b"c" * 300, partition=2)
        unrouted = producer.send("other", b"d")
        flushed = producer.flush()
        self.assertIsNone(self.successResultOf(producer.stop()))
        for d in (in_flight, lingering, blocked):
            self.failureResultOf(d, CancelledError)
        self.failureResultOf(unrouted, CancelledError)
        self.successResultOf(flushed)
        self.failureResultOf(producer.send_messages("t", None, [b"x"]), ClientError)
        self.failureResultOf(producer.send("t", b"x"), ClientError)
        self.successResultOf(producer.stop())
        self.clock.advance(2)
        self.assertEqual(len(self.produce_requests()), 1)

    def test_stop_when_idle(self) -> None:
        # Lingering: without it, an idle producer writes a send at once.
        producer = Producer(self.client, linger_ms=10)
        self.succeed(producer.send_messages("t", None, [b"v"]))
        later = producer.send_messages("t", None, [b"w"])
        self.successResultOf(producer.stop())
        self.failureResultOf(later, CancelledError)
        self.clock.advance(1)
        self.assertEqual(len(self.produce_requests()), 1)

    def test_stop_while_metadata_loads(self) -> None:
        """stop() raised RuntimeError while a topic's metadata was loading (issue 10, 3)."""
        producer = Producer(self.client)
        self.succeed(producer.send("t", b"a"))
        self.cluster.delay(METADATA, 1.0)
        pending = [producer.send("new", b"b"), producer.send_messages("u", None, [b"c"])]
        self.clock.advance(0.01)
        self.successResultOf(producer.stop())
        for d in pending:
            self.failureResultOf(d, CancelledError)
        # The stopped producer looks nothing up again.
        soon = [c for c in self.clock.getDelayedCalls() if c.getTime() < self.clock.seconds() + 0.5]
        self.assertEqual(soon, [])  # no retry backoff runs
        self.successResultOf(self.client.close())
        self.clock.advance(1.0)  # the fake broker's held answer goes nowhere

    def test_stop_with_brokers_unreachable(self) -> None:
        # (The cluster answered once: a refusal before that fails sends at once.)
        self.successResultOf(self.client.load_metadata_for_topics())
        for broker in range(3):
            self.cluster.refuse_connections(broker)
        producer = Producer(self.client)
        pending = [producer.send("t", b"a"), producer.send_messages("u", None, [b"b"])]
        for _ in range(5):
            self.clock.advance(0.5)
        self.successResultOf(producer.stop())
        for d in pending:
            self.failureResultOf(d, CancelledError)

    def test_stop_while_a_retry_of_the_metadata_waits(self) -> None:
        self.cluster.fail_next(METADATA, 5, count=1)
        producer = Producer(self.client)
        d = producer.send("new", b"a")
        self.clock.advance(0.01)
        self.successResultOf(producer.stop())
        self.failureResultOf(d, CancelledError)


class BatchTests(SynchronousTestCase):
    """ProducerBatch on its own: results, LogAppendTime, firing Deferreds."""

    def batch(self) -> Any:
        from afkak.producer._partition import PartitionState

        part = PartitionState("t", 4)
        batch = part.new_batch(0.0)
        for i in range(3):
            batch.values.append(b"%d" % i)
            batch.timestamps.append(100 + i)
        return batch

    def test_log_append_time_replaces_record_timestamps(self) -> None:
        batch = self.batch()
        d1: Deferred[Any] = Deferred()
        d2: Deferred[Any] = Deferred()
        batch.record_waiters.extend([d1, d2])
        batch.record_indexes.extend([0, 2])
        batch.encode(CODEC_NONE, -1, -1, -1)
        batch.succeed(10, 999)
        self.assertEqual(self.successResultOf(d1), RecordMetadata("t", 4, 10, 999))
        self.assertEqual(self.successResultOf(d2), RecordMetadata("t", 4, 12, 999))

    def test_create_time_without_log_append_time(self) -> None:
        batch = self.batch()
        d: Deferred[Any] = Deferred()
        batch.record_waiters.append(d)
        batch.record_indexes.append(1)
        batch.encode(CODEC_NONE, -1, -1, -1)
        batch.succeed(10, -1)
        self.assertEqual(self.successResultOf(d), RecordMetadata("t", 4, 11, 101))

    def test_waiters_of_several_messages(self) -> None:
        batch = self.batch()
        first: Deferred[Any] = Deferred()
        second: Deferred[Any] = Deferred()
        batch.add_waiter(first, 0)
        batch.add_waiter(second, 2)  # the first send had two messages
        batch.encode(CODEC_NONE, -1, -1, -1)
        batch.succeed(7, -1)
        self.assertEqual(self.successResultOf(first), ProduceResponse("t", 4, 0, 7))
        self.assertEqual(self.successResultOf(second), ProduceResponse("t", 4, 0, 9))

    def test_resequence_patches_the_encoded_batch(self) -> None:
        batch = self.batch()
        batch.encode(CODEC_GZIP, 5, 0, 10)
        batch.resequence(5, 1, 0)
        [decoded] = read_batches(batch.data)
        self.assertEqual(
            (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence), (5, 1, 0)
        )
        self.assertEqual([r.value for r in decoded], [b"0", b"1", b"2"])  # the CRC checks
        self.assertEqual(batch.last_sequence, 2)

    def test_firing_deferreds(self) -> None:
        """Held, listened-to and cancelled waiters: each gets its result, none raises."""
        batch = self.batch()
        quiet: Deferred[Any] = Deferred()
        listened: Deferred[Any] = Deferred()
        seen: list[Any] = []
        listened.addCallback(seen.append)
        cancelled: Deferred[Any] = Deferred()
        cancelled.cancel()
        self.failureResultOf(cancelled)
        batch.waiters = [quiet, listened, cancelled]
        batch.encode(CODEC_NONE, -1, -1, -1)
        batch.succeed(7, -1)
        self.assertEqual(seen, [ProduceResponse("t", 4, 0, 8)])
        late: list[Any] = []
        quiet.addCallback(late.append)  # runs at once, with the stored result
        self.assertEqual(late, [ProduceResponse("t", 4, 0, 7)])


class ClientClosedTests(ProducerTestCase):
    def test_sends_fail_once_the_client_is_closed(self) -> None:
        producer = self.producer(max_req_attempts=3)
        self.succeed(producer.send("t", b"a", partition=0))
        self.successResultOf(self.client.close())
        self.run_until(producer.send("t", b"b", partition=0)).trap(ClientError)
        self.run_until(producer.send("other", b"c")).trap(ClientError)
