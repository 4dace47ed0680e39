"""Consumer against afkak.testing's in-memory FakeKafkaCluster, on a Clock.

Nothing of afkak is mocked: the real consumer, client, connections and
protocol run against fake brokers.
"""

from __future__ import annotations

import gc
import inspect
from typing import Any

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock, LoopingCall
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak._retry import is_retriable
from afkak.client import KafkaClient
from afkak.codec import CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    BrokerConnectionError,
    CancelledError,
    ChecksumError,
    ConsumerFetchSizeTooSmall,
    DecodeError,
    FailedPayloadsError,
    GroupAuthorizationFailed,
    GroupIdNotFound,
    InvalidConsumerGroupError,
    KafkaUnavailableError,
    Message,
    NotCoordinator,
    NotLeaderForPartitionError,
    OffsetOutOfRangeError,
    OperationInProgress,
    RestartError,
    RestopError,
    SourcedMessage,
    TopicAuthorizationFailed,
    UnknownTopicOrPartitionError,
)
from afkak.consumer import (
    AUTO_COMMIT_INTERVAL,
    AUTO_COMMIT_MSG_COUNT,
    FETCH_BUFFER_SIZE_BYTES,
    REQUEST_RETRY_FACTOR,
    Consumer,
)
from afkak.consumer._broker_fetch import FETCH_MAX_BYTES
from afkak.consumer._messages import read_fetched
from afkak.consumer._options import ARGUMENT_OF, resolve
from afkak.protocol.messages import (
    FetchRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from afkak.records import ControlType, build_batch, build_control_batch
from afkak.test.helpers import ClockTestCase, needs_codecs
from afkak.testing import FakeKafkaCluster

FETCH, LIST_OFFSETS, OFFSET_COMMIT = 1, 2, 8


class Recorder:
    """A processor that records what it is given; it may hand out Deferreds to block."""

    def __init__(self, block: bool = False, clock: Clock | None = None) -> None:
        self.clock = clock
        self.calls: list[list[SourcedMessage]] = []
        self.block = block
        self.pending: list[Deferred[None]] = []
        self.cancelled = 0

    def __call__(self, consumer: Consumer, messages: list[SourcedMessage]) -> Any:
        self.calls.append(messages)
        if not self.block:
            return None
        d: Deferred[None] = Deferred(lambda _: self._cancelled())
        self.pending.append(d)
        return d

    def _cancelled(self) -> None:
        self.cancelled += 1

    def release(self, index: int) -> None:
        """Fire the Deferred of call *index*; the next delivery follows a reactor turn."""
        self.pending[index].callback(None)
        if self.clock is not None:
            self.clock.advance(0)

    @property
    def messages(self) -> list[SourcedMessage]:
        return [m for call in self.calls for m in call]

    @property
    def values(self) -> list[bytes | None]:
        return [m.message.value for m in self.messages]

    @property
    def offsets(self) -> list[int]:
        return [m.offset for m in self.messages]


class ConsumerTestCase(ClockTestCase):
    """A 3-broker fake cluster with topic "t" (2 partitions) and a client, on a Clock."""

    #: Whether the fake brokers grant fetch sessions (test_consumer_fetching runs them so).
    fetch_sessions = False

    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.state.fetch_sessions = self.fetch_sessions
        self.cluster.create_topic("t", partitions=2)
        self.client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            retry_policy=lambda failures: 0.5,
        )
        self.addCleanup(self._close_client)
        # A broker answers each connection's requests in order, so a
        # coordinator lookup sent to the broker where the consumer's fetch
        # long-polls waits for the fetch: look group "g" up (broker 0, not
        # t/1's leader) beforehand.
        self.successResultOf(self.client.load_coordinator_for_group("g"))

    def _close_client(self) -> None:
        d = self.client.close()
        self.clock.advance(1)
        self.successResultOf(d)

    def consumer(self, processor: Any = None, **options: Any) -> Consumer:
        """A consumer of t/1 answered as soon as any data is there (fetch_size_bytes=1)."""
        options.setdefault("fetch_size_bytes", 1)
        return Consumer(self.client, "t", 1, processor or Recorder(), **options)

    def start(self, consumer: Consumer, offset: int) -> Deferred[int | None]:
        """Start *consumer*; what it fetches at once is delivered after a reactor turn."""
        d = consumer.start(offset)
        self.clock.advance(0)
        return d

    def stop(self, consumer: Consumer) -> None:
        """Stop a running consumer at the end of a test."""
        self.addCleanup(lambda: consumer.stop() if consumer._start_d is not None else None)

    def assert_stops_once_after_failure(self, consumer: Consumer, offset: int | None) -> None:
        """As in afkak 21.5: after start() failed, stop() is still called once.

        It returns the last processed offset and leaves nothing running (no
        timed call, no request); a second stop() raises RestopError.
        """
        self.assertEqual(consumer.stop(), offset)
        timed = [call.func for call in self.clock.getDelayedCalls()]
        called = [f.f if isinstance(f, LoopingCall) else f for f in timed]
        self.assertEqual([f for f in called if f.__module__.startswith("afkak.consumer")], [])
        requests = len(self.cluster.requests_seen)
        self.append(b"after")
        self.run_for(10)
        self.assertEqual(len(self.cluster.requests_seen), requests)
        self.assertRaises(RestopError, consumer.stop)
        self.failureResultOf(consumer.shutdown(), RestopError)

    def append(self, *values: bytes, partition: int = 1, **options: Any) -> int:
        """Append a batch (answering a waiting fetch) and let the consumer take it."""
        base = self.cluster.append("t", partition, list(values), **options)
        self.clock.advance(0)
        return base

    def run_for(self, seconds: float) -> None:
        """Advance the clock in small steps, running what each step schedules."""
        self.clock.pump([0.01] * round(seconds / 0.01))

    def fetch_sizes(self) -> list[int]:
        """The partition_max_bytes of each Fetch so far."""
        return [r.request.topics[0].partitions[0].partition_max_bytes for r in self.requests(FETCH)]

    def requests(self, api_key: int) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == api_key]

    def committed(self, group: str = "g") -> int | None:
        entry = self.cluster.committed_offsets.get((group, "t", 1))
        return None if entry is None else entry.offset


class ConstructionTests(ConsumerTestCase):
    def test_defaults(self) -> None:
        c = Consumer(self.client, "t", 1, Recorder())
        self.assertEqual((c.auto_commit_every_n, c.auto_commit_every_ms), (0, 0))
        self.assertEqual(
            (c.fetch_min_bytes, c.fetch_max_wait_time, c.buffer_size, c.max_buffer_size),
            (65536, 100, 1048576, None),
        )
        self.assertEqual((c.last_processed_offset, c.last_committed_offset), (None, None))
        grouped = Consumer(self.client, "t", 1, Recorder(), consumer_group="g")
        self.assertEqual(
            (grouped.auto_commit_every_n, grouped.auto_commit_every_ms),
            (AUTO_COMMIT_MSG_COUNT, AUTO_COMMIT_INTERVAL),
        )
        disabled = Consumer(
            self.client, "t", 1, Recorder(), "g", auto_commit_every_n=0, auto_commit_every_ms=0
        )
        self.assertEqual((disabled.auto_commit_every_n, disabled.auto_commit_every_ms), (0, 0))
        self.assertIn("t/1 group=g stopped", repr(grouped))

    def test_bad_arguments(self) -> None:
        p = Recorder()
        bad: list[tuple[type[Exception], tuple[Any, ...], dict[str, Any]]] = [
            (ValueError, ("", 0, p), {}),
            (ValueError, ("a topic", 0, p), {}),  # the Producer refuses it too
            (TypeError, (b"t", 0, p), {}),
            (TypeError, ("t", "0", p), {}),
            (ValueError, ("t", -1, p), {}),
            (TypeError, ("t", 0, None), {}),
            (InvalidConsumerGroupError, ("t", 0, p, ""), {}),
            (TypeError, ("t", 0, p), {"commit_metadata": 5}),
            (UnicodeDecodeError, ("t", 0, p), {"commit_metadata": b"\xff"}),
            (ValueError, ("t", 0, p), {"buffer_size": 10, "max_buffer_size": 5}),
            (ValueError, ("t", 0, p), {"buffer_size": 0}),
            (ValueError, ("t", 0, p), {"auto_offset_reset": 0}),
            (ValueError, ("t", 0, p), {"request_retry_init_delay": 0}),
            (ValueError, ("t", 0, p), {"request_retry_max_delay": 0.01}),
            (ValueError, ("t", 0, p), {"request_retry_max_attempts": -1}),
            (TypeError, ("t", 0, p), {"fetch_max_wait_time": 1.5}),
            (TypeError, ("t", 0, p), {"commit_consumer_id": None}),
            (ValueError, ("t", 0, p), {"auto_commit_every_n": -1}),
        ]
        for error, args, kwargs in bad:
            with self.subTest(args=args, kwargs=kwargs):
                self.assertRaises(error, Consumer, self.client, *args, **kwargs)
        self.assertRaises(TypeError, Consumer, None, "t", 0, p)  # was an AttributeError
        self.assertRaises(TypeError, Consumer, self.client, "t", 0, p, no_such_option=1)

    def test_bad_start_offsets(self) -> None:
        c = self.consumer()
        self.assertRaises(ValueError, c.start, -5)
        self.assertRaises(TypeError, c.start, "0")
        self.assertRaises(ValueError, c.start, OFFSET_COMMITTED)  # no consumer group
        self.assertIsNone(c._start_d)


class DeliveryTests(ConsumerTestCase):
    def test_messages_from_earliest(self) -> None:
        self.append(b"a", b"b", keys=[b"k1", None], timestamp=1234, headers=[[("h", b"v")], []])
        self.append(b"c", timestamp=1235)
        p = Recorder()
        c = self.consumer(p)
        d = self.start(c, OFFSET_EARLIEST)
        self.stop(c)
        self.assertNoResult(d)
        first = p.messages[0]
        self.assertIsInstance(first, SourcedMessage)
        self.assertEqual(tuple(first[:3]), ("t", 1, 0))
        self.assertIsInstance(first.message, Message)
        self.assertEqual(tuple(first.message), (2, 0, b"k1", b"a"))
        self.assertEqual(first.message.timestamp, 1234)
        self.assertEqual(first.message.headers, (("h", b"v"),))
        self.assertEqual(
            [
                (m.offset, m.message.key, m.message.value, m.message.timestamp, m.message.headers)
                for m in p.messages[1:]
            ],
            [(1, None, b"b", 1234, ()), (2, None, b"c", 1235, ())],
        )
        self.assertEqual(c.last_processed_offset, 2)
        self.assertEqual(c.stop(), 2)
        self.assertEqual(self.successResultOf(d), 2)

    def test_start_inside_a_batch_skips_earlier_records(self) -> None:
        self.append(b"0", b"1", b"2", b"3")
        self.append(b"4", b"5")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 2)
        self.assertEqual(p.offsets, [2, 3, 4, 5])
        self.assertEqual(p.values, [b"2", b"3", b"4", b"5"])

    def test_waits_for_new_records(self) -> None:
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.calls, [])
        self.clock.advance(0.05)
        self.append(b"late")
        self.assertEqual(p.values, [b"late"])

    def test_latest_only_delivers_new_records(self) -> None:
        self.append(b"old", b"older")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, OFFSET_LATEST)
        self.clock.advance(0.5)
        self.assertEqual(p.calls, [])
        self.append(b"new")
        self.assertEqual((p.offsets, p.values), ([2], [b"new"]))

    def test_control_batches_are_skipped(self) -> None:
        txn = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
        self.append(b"plain")
        self.append(b"t1", b"t2", base_sequence=0, **txn)
        self.append(b"\0\0\0\0\0\0", keys=[b"\0\0\0\1"], is_control=True, base_sequence=2, **txn)
        self.append(b"after")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.values, [b"plain", b"t1", b"t2", b"after"])
        self.assertEqual(p.offsets, [0, 1, 2, 4])
        self.assertEqual(c._fetch_offset, 5)

    def test_partial_trailing_batch_is_fetched_again(self) -> None:
        for i in range(5):
            self.append(*[b"%d-%d" % (i, j) for j in range(10)])
        p = Recorder()
        c = self.consumer(p, buffer_size=250)  # about one and a half batches
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.offsets, list(range(50)))
        self.assertGreater(len(p.calls), 1)
        self.assertEqual(c.buffer_size, 250)

    def test_one_processor_call_per_fetch(self) -> None:
        self.append(b"a", b"b")
        self.append(b"c")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual([[m.offset for m in call] for call in p.calls], [[0, 1, 2]])

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_compressed_batches(self) -> None:
        for codec in (1, 2, 3, 4):
            self.append(b"v%d" % codec, b"w%d" % codec, codec=codec, keys=[b"k", None])
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.values, [b"v1", b"w1", b"v2", b"w2", b"v3", b"w3", b"v4", b"w4"])
        self.assertEqual({m.message.attributes for m in p.messages}, {0})

    def test_fetch_requests_name_topic_by_id_and_honour_settings(self) -> None:
        c = self.consumer(fetch_max_wait_time=250, buffer_size=4096, fetch_size_bytes=10)
        self.stop(c)
        self.start(c, 0)
        [seen] = self.requests(FETCH)
        request = seen.request
        self.assertIsInstance(request, FetchRequest)
        self.assertGreaterEqual(seen.api_version, 13)
        self.assertEqual(request.topics[0].topic_id, self.cluster.topic_id("t"))
        self.assertEqual(
            (request.max_wait_ms, request.min_bytes, request.max_bytes),
            (250, 10, FETCH_MAX_BYTES),  # the response's bound: Java's fetch.max.bytes
        )
        part = request.topics[0].partitions[0]
        self.assertEqual(
            (part.partition, part.fetch_offset, part.partition_max_bytes), (1, 0, 4096)
        )
        self.assertEqual(seen.broker, self.cluster.partition("t", 1).leader)


class BackpressureTests(ConsumerTestCase):
    def test_next_fetch_is_sent_before_the_response_is_decoded(self) -> None:
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(len(self.requests(FETCH)), 1)
        self.cluster.append("t", 1, [b"a"])  # answers the waiting fetch
        self.assertEqual(p.calls, [])
        [_, ahead] = self.requests(FETCH)
        self.assertEqual(ahead.request.topics[0].partitions[0].fetch_offset, 1)
        self.clock.advance(0)  # Twisted has written that fetch: now decode and deliver
        self.assertEqual(p.values, [b"a"])

    def test_processor_deferred_holds_further_calls_and_one_response_is_buffered(self) -> None:
        self.append(b"a")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(len(p.calls), 1)
        self.assertEqual(len(self.requests(FETCH)), 2)  # the first, and one fetch ahead
        self.append(b"b")  # answers the fetch ahead: buffered
        self.append(b"c")
        self.clock.advance(5)
        self.assertEqual(len(p.calls), 1)
        self.assertEqual(len(self.requests(FETCH)), 2)  # nothing fetched past the buffer
        self.assertIsNone(c.last_processed_offset)
        p.release(0)
        self.assertEqual(c.last_processed_offset, 0)
        self.assertEqual(len(p.calls), 2)
        self.assertEqual(p.calls[1][0].offset, 1)  # the buffered response, exactly
        self.assertEqual(len(self.requests(FETCH)), 3)
        p.release(1)
        self.assertEqual(p.offsets, [0, 1, 2])
        self.assertEqual(c.last_processed_offset, 1)
        p.release(2)
        self.assertEqual(c.last_processed_offset, 2)

    def test_synchronous_processing_of_many_responses_keeps_the_stack_flat(self) -> None:
        for i in range(300):
            self.append(b"%d" % i)
        p = Recorder()
        c = self.consumer(p, buffer_size=80)  # one batch per fetch
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.offsets, list(range(300)))
        self.assertEqual(len(p.calls), 300)


class ProcessorErrorTests(ConsumerTestCase):
    def test_processor_exception_fails_start(self) -> None:
        self.append(b"a")

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            raise ZeroDivisionError("boom")

        c = self.consumer(processor)
        d = self.start(c, 0)
        self.failureResultOf(d, ZeroDivisionError)
        self.assertIsNone(c.last_processed_offset)
        self.assert_stops_once_after_failure(c, None)
        # A failed consumer may be started again.
        p = Recorder()
        c.processor = p
        self.start(c, 0)
        self.stop(c)
        self.assertEqual(p.values, [b"a", b"after"])

    def test_processor_deferred_failure_fails_start(self) -> None:
        self.append(b"a")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p)
        d = self.start(c, 0)
        self.assertNoResult(d)
        p.pending[0].errback(KeyError("bad"))
        self.failureResultOf(d, KeyError)


class CommitTests(ConsumerTestCase):
    def test_commit_stores_the_next_offset_to_consume(self) -> None:
        self.append(b"a", b"b", b"c")
        p = Recorder()
        c = self.consumer(p, consumer_group="g", commit_metadata="meta", auto_commit_every_n=0)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(c.last_processed_offset, 2)
        self.assertEqual(self.successResultOf(c.commit()), 2)
        self.assertEqual(c.last_committed_offset, 2)
        self.assertEqual(self.committed(), 3)
        self.assertEqual(self.cluster.committed_offsets["g", "t", 1].metadata, "meta")
        [seen] = self.requests(OFFSET_COMMIT)
        self.assertIsInstance(seen.request, OffsetCommitRequest)
        self.assertEqual(seen.request.generation_id_or_member_epoch, -1)
        self.assertEqual(seen.request.member_id, "")

    def test_restart_from_committed_resumes_after_the_last_processed_record(self) -> None:
        self.append(b"a", b"b", b"c")
        self.append(b"d", b"e")
        first = Recorder()
        c = self.consumer(first, consumer_group="g", auto_commit_every_n=0)
        self.start(c, 1)
        self.successResultOf(c.commit())
        self.assertEqual(c.stop(), 4)
        self.append(b"f")
        second = Recorder()
        c2 = self.consumer(second, consumer_group="g")
        self.stop(c2)
        self.start(c2, OFFSET_COMMITTED)
        self.assertEqual(c2.last_committed_offset, 4)
        self.assertEqual((second.offsets, second.values), ([5], [b"f"]))

    def test_committed_offset_written_by_another_client(self) -> None:
        self.append(b"a", b"b", b"c")
        self.cluster.commit("g", "t", 1, 2)
        p = Recorder()
        c = self.consumer(p, consumer_group="g")
        self.stop(c)
        self.start(c, OFFSET_COMMITTED)
        self.assertEqual(p.values, [b"c"])
        self.assertEqual(c.last_committed_offset, 1)

    def test_no_committed_offset_without_reset_starts_at_earliest(self) -> None:
        """afkak 21's rule: with ``auto_offset_reset=None`` a new group reads the backlog."""
        self.append(b"a", b"b")
        p = Recorder()
        c = self.consumer(p, consumer_group="g")
        self.stop(c)
        self.start(c, OFFSET_COMMITTED)
        self.assertEqual(p.values, [b"a", b"b"])

    def test_no_committed_offset_follows_auto_offset_reset(self) -> None:
        self.append(b"a", b"b")
        early = Recorder()
        c = self.consumer(early, consumer_group="g", auto_offset_reset=OFFSET_EARLIEST)
        self.stop(c)
        self.start(c, OFFSET_COMMITTED)
        self.assertEqual(early.values, [b"a", b"b"])
        self.assertIsNone(c.last_committed_offset)
        late = Recorder()
        c2 = Consumer(
            self.client, "t", 1, late, "g2", fetch_size_bytes=1, auto_offset_reset=OFFSET_LATEST
        )
        self.stop(c2)
        self.start(c2, OFFSET_COMMITTED)
        self.run_for(0.5)  # g2's coordinator is t/1's leader: each request waits for a fetch
        self.append(b"c")
        self.assertEqual(late.values, [b"c"])

    def test_commit_with_nothing_new_sends_nothing(self) -> None:
        c = self.consumer(consumer_group="g")
        self.assertIsNone(self.successResultOf(c.commit()))
        self.append(b"a")
        self.stop(c)
        self.start(c, 0)
        self.successResultOf(c.commit())
        self.assertEqual(self.successResultOf(c.commit()), 0)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 1)

    def test_commit_needs_a_group(self) -> None:
        self.failureResultOf(self.consumer().commit(), InvalidConsumerGroupError)

    def test_commit_while_one_is_in_flight(self) -> None:
        self.append(b"a")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p, consumer_group="g", auto_commit_every_n=0, auto_commit_every_ms=0)
        self.stop(c)
        self.start(c, 0)
        p.release(0)
        self.cluster.delay(OffsetCommitRequest, 1.0)
        first = c.commit()
        same = c.commit()  # nothing processed since: shares the commit in flight
        self.assertNoResult(first)
        self.assertNoResult(same)
        self.append(b"b")
        p.release(1)
        in_progress = self.failureResultOf(c.commit(), OperationInProgress)
        waiter = in_progress.value.deferred
        self.assertNoResult(waiter)
        self.clock.advance(1.0)
        self.assertEqual(self.successResultOf(first), 0)
        self.assertEqual(self.successResultOf(same), 0)
        self.assertEqual(self.successResultOf(waiter), 0)
        self.assertEqual(c.last_committed_offset, 0)
        later = c.commit()
        self.clock.advance(1.0)
        self.assertEqual(self.successResultOf(later), 1)
        self.assertEqual(self.committed(), 2)

    def test_commit_retries_retriable_errors(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", auto_commit_every_n=0)
        self.stop(c)
        self.start(c, 0)
        self.cluster.fail_next(OffsetCommitRequest, NotCoordinator, count=2)
        d = c.commit()
        self.assertNoResult(d)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 1)
        self.run_for(0.1 + 0.1 * REQUEST_RETRY_FACTOR + 0.2)  # and coordinator lookups
        self.assertEqual(self.successResultOf(d), 0)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 3)
        self.assertEqual(self.committed(), 1)

    def test_commit_gives_up_on_non_retriable_errors(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", auto_commit_every_n=0)
        self.stop(c)
        self.start(c, 0)
        self.cluster.fail_next(OffsetCommitRequest, GroupAuthorizationFailed)
        self.failureResultOf(c.commit(), GroupAuthorizationFailed)
        self.assertIsNone(c.last_committed_offset)

    def test_commit_attempts_are_limited(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", auto_commit_every_n=0, request_retry_max_attempts=2)
        self.stop(c)
        self.start(c, 0)
        self.cluster.fail_next(OffsetCommitRequest, NotCoordinator, count=5)
        d = c.commit()
        self.run_for(1)
        self.failureResultOf(d, NotCoordinator)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 2)

    def test_commit_with_member_id_and_generation(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", commit_consumer_id="member-1", commit_generation_id=4)
        self.stop(c)
        self.start(c, 0)
        # The fake's group "g" has no such member: the commit is refused.
        self.failureResultOf(c.commit(), GroupIdNotFound)
        seen = self.requests(OFFSET_COMMIT)[0].request
        self.assertEqual((seen.member_id, seen.generation_id_or_member_epoch), ("member-1", 4))

    def test_set_generation_changes_what_later_commits_send(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", commit_consumer_id="member-1", commit_generation_id=4)
        self.assertRaises(TypeError, c.set_generation, "5", "member-2")
        self.assertRaises(ValueError, c.set_generation, 2**31, "member-2")
        self.assertRaises(TypeError, c.set_generation, 5, None)
        c.set_generation(5, "member-2")
        self.assertEqual((c.commit_consumer_id, c.commit_generation_id), ("member-2", 5))
        self.stop(c)
        self.start(c, 0)
        self.failureResultOf(c.commit(), GroupIdNotFound)
        seen = self.requests(OFFSET_COMMIT)[0].request
        self.assertEqual((seen.member_id, seen.generation_id_or_member_epoch), ("member-2", 5))

    def test_options_name_every_constructor_argument_they_resolve_from(self) -> None:
        """Setting an attribute re-resolves the options from their declared arguments."""
        self.assertEqual(set(ARGUMENT_OF.values()), set(inspect.signature(resolve).parameters))
        for c in (
            self.consumer(),
            self.consumer(consumer_group="g", buffer_size=4096, client_rack="r1"),
            self.consumer(isolation_level="read_committed", max_buffer_size=8192),
        ):
            options = c._options
            self.assertEqual(resolve(**options.arguments()), options)

    def test_settings_are_attributes_an_application_may_set(self) -> None:
        """As in afkak 21: set between runs, checked as the constructor checks them."""
        self.append(b"a")
        c = self.consumer(consumer_group="g", commit_consumer_id="member-1", commit_generation_id=4)
        c.buffer_size = 4096
        c.fetch_max_wait_time = 250
        c.fetch_min_bytes = 10
        c.commit_metadata = "meta"
        c.auto_commit_every_s = 2
        c.retry_init_delay = 0.5
        c.commit_generation_id = 5
        self.assertEqual(
            (c.buffer_size, c.fetch_max_wait_time, c.fetch_min_bytes, c.commit_metadata),
            (4096, 250, 10, "meta"),
        )
        self.assertEqual((c.auto_commit_every_ms, c.retry_init_delay), (2000, 0.5))
        for name, bad, error in [
            ("buffer_size", 0, ValueError),
            ("buffer_size", "1", TypeError),
            ("max_buffer_size", 100, ValueError),  # below buffer_size
            ("fetch_max_wait_time", -1, ValueError),
            ("commit_metadata", 5, TypeError),
            ("auto_offset_reset", 7, ValueError),
            ("auto_commit_every_s", "2", TypeError),
            ("auto_commit_every_s", float("inf"), ValueError),  # was an OverflowError
            ("retry_max_delay", 0.1, ValueError),  # below retry_init_delay
            ("commit_consumer_id", None, TypeError),
        ]:
            with self.assertRaises(error, msg=name):
                setattr(c, name, bad)
        self.assertEqual(
            (c.buffer_size, c.max_buffer_size, c.commit_consumer_id), (4096, None, "member-1")
        )
        for fixed in ("consumer_group", "isolation_level"):
            with self.assertRaises(AttributeError, msg=fixed):
                setattr(c, fixed, "read_committed")
        self.assertEqual((c.consumer_group, c.isolation_level), ("g", "read_uncommitted"))
        self.assertEqual(
            (c.retry_max_delay, c.request_retry_max_attempts, c.auto_commit_every_n),
            (30.0, 0, 100),
        )
        self.stop(c)
        self.start(c, 0)
        fetch = self.requests(FETCH)[0]
        part = fetch.request.topics[0].partitions[0]
        self.assertEqual(
            (fetch.request.max_wait_ms, fetch.request.min_bytes, part.partition_max_bytes),
            (250, 10, 4096),
        )
        self.failureResultOf(c.commit(), GroupIdNotFound)
        seen = self.requests(OFFSET_COMMIT)[0].request
        self.assertEqual(seen.generation_id_or_member_epoch, 5)
        self.assertEqual(seen.topics[0].partitions[0].committed_metadata, "meta")


class AutoCommitTests(ConsumerTestCase):
    def test_every_n_messages(self) -> None:
        p = Recorder()
        c = self.consumer(p, consumer_group="g", auto_commit_every_n=4, auto_commit_every_ms=0)
        self.stop(c)
        self.start(c, 0)
        self.append(b"a", b"b")
        self.append(b"c")
        self.assertIsNone(self.committed())
        self.append(b"d")
        self.assertEqual(self.committed(), 4)
        self.append(b"e", b"f", b"g")
        self.assertEqual(self.committed(), 4)
        self.append(b"h", b"i")
        self.assertEqual(self.committed(), 9)
        self.assertEqual(c.last_committed_offset, 8)

    def test_every_n_waits_for_a_commit_in_flight(self) -> None:
        c = self.consumer(consumer_group="g", auto_commit_every_n=1, auto_commit_every_ms=0)
        self.stop(c)
        self.start(c, 0)
        self.cluster.delay(OffsetCommitRequest, 1.0)
        self.append(b"a")
        self.append(b"b")  # processed while the first commit is in flight
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 1)
        self.clock.advance(1.0)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), 2)
        self.clock.advance(1.0)
        self.assertEqual(self.committed(), 2)

    def test_every_ms_on_the_clients_reactor(self) -> None:
        c = self.consumer(consumer_group="g", auto_commit_every_n=0, auto_commit_every_ms=1000)
        self.stop(c)
        self.start(c, 0)
        self.append(b"a")
        self.clock.advance(0.9)
        self.assertIsNone(self.committed())
        self.clock.advance(0.1)
        self.assertEqual(self.committed(), 1)
        self.append(b"b")
        self.clock.advance(0.5)
        self.successResultOf(c.commit())  # a manual commit restarts the period
        self.append(b"c")
        self.clock.advance(0.9)
        self.assertEqual(self.committed(), 2)
        self.clock.advance(0.1)
        self.assertEqual(self.committed(), 3)

    def test_auto_commit_needs_a_group(self) -> None:
        self.assertRaises(ValueError, self.consumer, auto_commit_every_n=1)
        self.assertRaises(ValueError, self.consumer, auto_commit_every_ms=10)
        c = self.consumer(auto_commit_every_n=0, auto_commit_every_ms=0)
        self.stop(c)
        self.start(c, 0)
        self.append(b"a")
        self.clock.advance(10)
        self.assertEqual(self.requests(OFFSET_COMMIT), [])

    def test_processor_gets_blocks_of_at_most_n_messages(self) -> None:
        self.append(*[b"%d" % i for i in range(7)])
        self.append(b"7")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p, consumer_group="g", auto_commit_every_n=3, auto_commit_every_ms=0)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual([[m.offset for m in call] for call in p.calls], [[0, 1, 2]])
        self.append(b"8")  # fetched ahead while the blocks are processed
        p.release(0)
        self.assertEqual(self.committed(), 3)
        p.release(1)
        p.release(2)
        self.assertEqual(
            [[m.offset for m in call] for call in p.calls], [[0, 1, 2], [3, 4, 5], [6, 7], [8]]
        )
        self.assertEqual(self.committed(), 6)
        self.assertEqual(len(self.requests(FETCH)), 3)

    def failed_commit(self) -> Consumer:
        """A consumer that processed offset 0 and failed on its auto-commit."""
        c = self.consumer(consumer_group="g", auto_commit_every_n=1)
        d = self.start(c, 0)
        self.cluster.fail_next(OffsetCommitRequest, GroupAuthorizationFailed)
        self.append(b"a")
        self.failureResultOf(d, GroupAuthorizationFailed)
        return c

    def test_auto_commit_failure_stops_the_consumer(self) -> None:
        self.assert_stops_once_after_failure(self.failed_commit(), 0)

    def test_shutdown_after_a_failure_stops_without_committing(self) -> None:
        c = self.failed_commit()
        commits = len(self.requests(OFFSET_COMMIT))
        self.assertEqual(self.successResultOf(c.shutdown()), 0)
        self.assertEqual(len(self.requests(OFFSET_COMMIT)), commits)
        self.assertRaises(RestopError, c.stop)


class LifecycleTests(ConsumerTestCase):
    def test_restart_and_restop_errors(self) -> None:
        c = self.consumer()
        self.assertRaises(RestopError, c.stop)
        self.failureResultOf(c.shutdown(), RestopError)
        d = self.start(c, 0)
        self.assertRaises(RestartError, c.start, 0)
        self.assertIsNone(c.stop())
        self.assertIsNone(self.successResultOf(d))
        self.assertRaises(RestopError, c.stop)

    def test_stop_after_a_failed_start_as_in_afkak21(self) -> None:
        # afkak 21.5's applications (and its test_huge_messages) call stop()
        # after start()'s Deferred failed: it returns the last processed offset.
        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            if any(m.message.value == b"boom" for m in messages):
                raise ZeroDivisionError("boom")

        c = self.consumer(processor)
        d = self.start(c, 0)
        self.append(b"a", b"b")
        self.assertNoResult(d)
        self.append(b"boom")
        self.failureResultOf(d, ZeroDivisionError)
        self.assertIn("failed", repr(c))
        self.assertEqual(c.stop(), 1)
        self.assertIn("stopped", repr(c))
        self.assertRaises(RestopError, c.stop)

    def test_stopped_consumer_can_start_again(self) -> None:
        self.append(b"a", b"b")
        p = Recorder()
        c = self.consumer(p)
        self.start(c, 0)
        self.assertEqual(c.stop(), 1)
        fetches = len(self.requests(FETCH))
        self.append(b"c")
        self.clock.advance(1)
        self.assertEqual(len(self.requests(FETCH)), fetches)
        self.start(c, 1)
        self.stop(c)
        self.assertEqual(p.offsets, [0, 1, 1, 2])

    def test_stop_cancels_processing(self) -> None:
        self.append(b"a")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p)
        d = self.start(c, 0)
        self.assertIsNone(c.stop())
        self.assertEqual(p.cancelled, 1)
        self.assertIsNone(self.successResultOf(d))
        self.assertIsNone(c.last_processed_offset)

    def test_stop_from_within_the_processor(self) -> None:
        self.append(b"a")
        self.append(b"b")
        calls = []

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            calls.append(messages)
            consumer.stop()

        c = self.consumer(processor, buffer_size=80)
        d = self.start(c, 0)
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(len(calls), 1)

    def test_shutdown_from_within_the_processor(self) -> None:
        self.append(b"a", b"b")
        results: list[Any] = []

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            consumer.shutdown().addBoth(results.append)

        c = self.consumer(processor, consumer_group="g", auto_commit_every_n=0)
        start_d = self.start(c, 0)
        self.assertEqual(results, [1])  # the processor's messages count as processed
        self.assertEqual(self.successResultOf(start_d), 1)
        self.assertEqual(self.committed(), 2)

    def test_processor_may_commit(self) -> None:
        self.append(b"a")
        self.append(b"b")
        commits: list[Any] = []

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            consumer.commit().addBoth(commits.append)  # commits what was processed before

        c = self.consumer(processor, consumer_group="g", auto_commit_every_n=0, buffer_size=80)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(commits, [None, 0])
        self.assertEqual(self.committed(), 1)

    def test_shutdown_finishes_processing_then_commits(self) -> None:
        self.append(b"a", b"b")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p, consumer_group="g", auto_commit_every_n=0)
        start_d = self.start(c, 0)
        self.append(b"c")  # buffered: dropped by the shutdown
        shutdown_d = c.shutdown()
        self.failureResultOf(c.shutdown(), RestopError)
        self.assertNoResult(shutdown_d)
        self.assertNoResult(start_d)
        self.assertIsNone(self.committed())
        p.release(0)
        self.assertEqual(self.successResultOf(shutdown_d), 1)
        self.assertEqual(self.successResultOf(start_d), 1)
        self.assertEqual(self.committed(), 2)
        self.assertEqual(len(p.calls), 1)
        self.assertRaises(RestopError, c.stop)

    def test_shutdown_while_fetching(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g")
        start_d = self.start(c, 0)  # processed; a fetch is waiting for more
        shutdown_d = c.shutdown()
        # Kafka answers a connection's requests in order: the commit waits
        # for the long-polling fetch that the shutdown abandoned.
        self.clock.advance(0.1)
        self.assertEqual(self.successResultOf(shutdown_d), 0)
        self.assertEqual(self.successResultOf(start_d), 0)
        self.assertEqual(self.committed(), 1)

    def test_shutdown_without_group(self) -> None:
        self.append(b"a")
        c = self.consumer()
        start_d = self.start(c, 0)
        self.assertEqual(self.successResultOf(c.shutdown()), 0)
        self.assertEqual(self.successResultOf(start_d), 0)
        self.assertEqual(self.requests(OFFSET_COMMIT), [])

    def test_shutdown_fails_when_the_commit_fails(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", auto_commit_every_n=0)
        start_d = self.start(c, 0)
        self.cluster.fail_next(OffsetCommitRequest, GroupAuthorizationFailed)
        self.failureResultOf(c.shutdown(), GroupAuthorizationFailed)
        self.assertEqual(self.successResultOf(start_d), 0)
        self.assertRaises(RestopError, c.stop)

    def test_stop_during_shutdown_cancels_it(self) -> None:
        self.append(b"a")
        p = Recorder(block=True, clock=self.clock)
        c = self.consumer(p, consumer_group="g")
        start_d = self.start(c, 0)
        shutdown_d = c.shutdown()
        self.assertIsNone(c.stop())
        self.failureResultOf(shutdown_d, CancelledError)
        self.assertIsNone(self.successResultOf(start_d))
        self.assertIsNone(self.committed())

    def test_stop_cancels_a_commit_in_flight(self) -> None:
        self.append(b"a")
        c = self.consumer(consumer_group="g", auto_commit_every_n=0)
        self.start(c, 0)
        self.cluster.delay(OffsetCommitRequest, 1.0)
        d = c.commit()
        c.stop()
        self.failureResultOf(d, CancelledError)
        self.assertIsNone(c.last_committed_offset)


class FetchSizeTests(ConsumerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster.state.fetch_whole_first_batch = False  # cut oversized batches, as old brokers

    def test_grows_x16_until_the_batch_fits(self) -> None:
        self.append(b"x" * 2000)
        p = Recorder()
        c = self.consumer(p, buffer_size=64)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.values, [b"x" * 2000])
        self.assertEqual(c.buffer_size, 64 * 16 * 16)
        sizes = self.fetch_sizes()
        self.assertEqual(sizes[:3], [64, 1024, 16384])

    def test_grows_to_1_mib_then_doubles(self) -> None:
        self.append(b"x" * (2 * 1024 * 1024))
        p = Recorder()
        c = self.consumer(p, buffer_size=256 * 1024)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(len(p.values), 1)
        sizes = self.fetch_sizes()
        self.assertEqual(sizes[:4], [256 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024])

    def test_max_buffer_size_caps_growth_then_fails(self) -> None:
        self.append(b"x" * 3000)
        c = self.consumer(buffer_size=100, max_buffer_size=2000)
        d = self.start(c, 0)
        failure = self.failureResultOf(d, ConsumerFetchSizeTooSmall)
        self.assertIn("max_buffer_size=2000", str(failure.value))
        sizes = self.fetch_sizes()
        self.assertEqual(sizes, [100, 1600, 2000])


class MaxBufferSizeTests(ConsumerTestCase):
    """afkak 21: a record that cannot be delivered within max_buffer_size fails start().

    Brokers since Kafka 0.10.1 (KIP-74, as the fake cluster by default) return
    an oversized first batch whole; the consumer still refuses it, after
    delivering the records before it.
    """

    def test_records_before_then_fails(self) -> None:
        self.append(b"a", b"b")
        self.append(b"c")
        self.append(b"x" * (256 * 1024))
        self.append(b"after")
        p = Recorder()
        c = self.consumer(p, buffer_size=64 * 1024, max_buffer_size=256 * 1024)
        d = self.start(c, 0)
        self.run_for(1)
        failure = self.failureResultOf(d, ConsumerFetchSizeTooSmall)
        self.assertIn("max_buffer_size=262144", str(failure.value))
        self.assertEqual(p.values, [b"a", b"b", b"c"])
        self.assertEqual(c.last_processed_offset, 2)

    def test_first_batch_too_large(self) -> None:
        self.append(b"x" * 5000)
        p = Recorder()
        c = self.consumer(p, buffer_size=1000, max_buffer_size=4096)
        d = self.start(c, 0)
        self.run_for(1)
        self.failureResultOf(d, ConsumerFetchSizeTooSmall)
        self.assertEqual(p.values, [])

    def test_without_max_buffer_size_the_whole_batch_is_delivered(self) -> None:
        self.append(b"x" * 5000)
        p = Recorder()
        c = self.consumer(p, buffer_size=1000)
        self.stop(c)
        self.start(c, 0)
        self.run_for(1)
        self.assertEqual(p.values, [b"x" * 5000])


class Afkak21FetchSizeTests(ConsumerTestCase):
    """afkak 21.5's fetch-size constants and arguments keep their meaning (issue 20 item 2),
    and an application that asks nothing gets 1 MiB fetches."""

    def test_constant_keeps_afkak21_value(self) -> None:
        self.assertEqual(FETCH_BUFFER_SIZE_BYTES, 128 * 1024)

    def test_default_fetch_size_follows_max_buffer_size(self) -> None:
        self.assertEqual(self.consumer().buffer_size, 1024 * 1024)
        small = self.consumer(max_buffer_size=256 * 1024 - 10)
        self.assertEqual(
            (small.buffer_size, small.max_buffer_size), (256 * 1024 - 10, 256 * 1024 - 10)
        )
        self.assertEqual(self.consumer(max_buffer_size=8 * 1024 * 1024).buffer_size, 1024 * 1024)
        c = self.consumer()
        c.max_buffer_size = 4096  # the default fetch size adapts to a limit set later too
        self.assertEqual(c.buffer_size, 4096)
        c.max_buffer_size = None
        self.assertEqual(c.buffer_size, 1024 * 1024)
        given = self.consumer(buffer_size=FETCH_BUFFER_SIZE_BYTES)
        self.assertEqual(given.buffer_size, 128 * 1024)
        with self.assertRaises(ValueError):
            given.max_buffer_size = 4096  # an explicit buffer_size above it is still refused
        with self.assertRaises(TypeError):
            given.buffer_size = None  # type: ignore[assignment]

    def test_huge_messages(self) -> None:
        """afkak 21.5's test_huge_messages: ``max_buffer_size`` below 1 MiB, no buffer_size."""
        self.append(*[b"%d" % i for i in range(10)])
        max_size = 256 * 1024 - 10
        huge = b"h" * (max_size + 10)
        self.append(huge)
        p = Recorder()
        c = self.consumer(p, max_buffer_size=max_size)
        d = self.start(c, OFFSET_EARLIEST)
        self.run_for(1)
        self.failureResultOf(d, ConsumerFetchSizeTooSmall)
        self.assertEqual(len(p.values), 10)
        last_offset = c.last_processed_offset
        assert last_offset is not None
        big = Recorder()
        big_consumer = self.consumer(big)
        self.stop(big_consumer)
        self.start(big_consumer, last_offset + 1)
        self.run_for(1)
        self.assertEqual(big.values, [huge])

    def test_large_messages(self) -> None:
        """afkak 21.5's test_large_messages: records three times the constant, which a
        broker with Kafka's default 1 MiB ``message.max.bytes`` accepts, all consumed."""
        self.assertLess(FETCH_BUFFER_SIZE_BYTES * 3, 1024 * 1024)
        small = [b"%d" % i for i in range(10)]
        self.append(*small)
        large = [b"%d" % i * (FETCH_BUFFER_SIZE_BYTES * 3) for i in range(10)]
        for value in large:
            self.append(value)
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, OFFSET_EARLIEST)
        self.run_for(2)
        self.assertEqual(set(p.values), set(small + large))
        self.assertEqual(len(p.values), 20)


class OffsetResetTests(ConsumerTestCase):
    def test_out_of_range_without_reset_fails(self) -> None:
        self.append(b"a")
        c = self.consumer()
        self.failureResultOf(self.start(c, 5), OffsetOutOfRangeError)

    def test_out_of_range_resets_to_earliest(self) -> None:
        self.append(b"a", b"b", b"c")
        self.cluster.delete_records("t", 1, 2)
        p = Recorder()
        c = self.consumer(p, auto_offset_reset=OFFSET_EARLIEST)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.offsets, [2])

    def test_out_of_range_resets_to_latest(self) -> None:
        self.append(b"a", b"b", b"c")
        p = Recorder()
        c = self.consumer(p, auto_offset_reset=OFFSET_LATEST)
        self.stop(c)
        self.start(c, 99)
        self.assertEqual(p.calls, [])
        self.assertEqual(len(self.requests(LIST_OFFSETS)), 1)
        self.append(b"d")
        self.assertEqual(p.offsets, [3])

    def test_records_deleted_while_consuming(self) -> None:
        p = Recorder(block=True, clock=self.clock)
        self.append(b"a")
        c = self.consumer(p, auto_offset_reset=OFFSET_EARLIEST, buffer_size=80)
        self.stop(c)
        self.start(c, 0)
        self.append(b"b")  # buffered
        self.append(b"c", b"d", b"e")
        self.cluster.delete_records("t", 1, 3)
        p.release(0)  # delivers b, fetches at 2: out of range
        p.release(1)
        self.assertEqual(p.offsets, [0, 1, 3, 4])


class RetryTests(ConsumerTestCase):
    def test_leader_moves(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        old = self.cluster.partition("t", 1).leader
        new = (old + 1) % 3
        metadata = len(self.requests(3))
        self.cluster.move_leader("t", 1, new)  # the waiting fetch gets NOT_LEADER
        self.append(b"b")
        self.assertEqual(p.values, [b"a"])
        self.clock.advance(0.1)
        self.assertEqual(p.values, [b"a", b"b"])
        self.assertEqual(self.requests(FETCH)[-1].broker, new)
        # KIP-951: the error named the new leader: no Metadata round trip.
        self.assertEqual(len(self.requests(3)), metadata)

    def test_leader_killed_is_left_once_the_cluster_moves_it(self) -> None:
        """Issue 33: the leader's broker is killed (-9: connections dropped and refused)
        and the cluster moves leadership 6 s later.  A fetch for the dead broker fails
        at its first refused connection attempt (not at its 10 s timeout), so the
        consumer, backing off, finds the new leader soon after the move."""
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        old = self.cluster.partition("t", 1).leader
        self.cluster.refuse_connections(old)
        self.cluster.drop_connections(old)
        self.run_for(6)
        self.cluster.set_broker_down(old)
        self.append(b"b")
        self.run_for(2)
        self.assertEqual(p.values, [b"a", b"b"])

    def test_retriable_errors_back_off(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p, request_retry_init_delay=1.0, request_retry_max_delay=1.5)
        self.stop(c)
        self.cluster.fail_next(FetchRequest, NotLeaderForPartitionError, count=3)
        self.start(c, 0)
        self.assertEqual(len(self.requests(FETCH)), 1)
        self.clock.advance(0.99)
        self.assertEqual(len(self.requests(FETCH)), 1)
        self.clock.advance(0.01)
        self.assertEqual(len(self.requests(FETCH)), 2)
        # Not 1.2 s: a fetch's retries, each looking the leader up again, are at most
        # 1 s apart (or request_retry_init_delay, if longer), below request_retry_max_delay.
        self.clock.advance(0.99)
        self.assertEqual(len(self.requests(FETCH)), 2)
        self.clock.advance(0.01)
        self.assertEqual(len(self.requests(FETCH)), 3)
        self.clock.advance(1.0)
        self.assertEqual(p.values, [b"a"])
        self.clock.advance(3)
        self.cluster.fail_next(FetchRequest, UnknownTopicOrPartitionError)
        self.append(b"b")
        self.clock.advance(1.0)  # back to the initial delay after a success
        self.assertEqual(p.values, [b"a", b"b"])

    def test_attempts_are_limited(self) -> None:
        self.cluster.fail_next(FetchRequest, NotLeaderForPartitionError, count=5)
        c = self.consumer(request_retry_max_attempts=3)
        d = self.start(c, 0)
        self.clock.advance(0.1)
        self.assertNoResult(d)
        self.clock.advance(0.1 * REQUEST_RETRY_FACTOR)
        self.failureResultOf(d, NotLeaderForPartitionError)
        self.assertEqual(len(self.requests(FETCH)), 3)

    def test_non_retriable_error_fails_at_once(self) -> None:
        self.cluster.fail_next(FetchRequest, TopicAuthorizationFailed)
        c = self.consumer()
        self.failureResultOf(self.start(c, 0), TopicAuthorizationFailed)

    def test_dropped_connection(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.cluster.drop_connections()  # the waiting fetch is lost
        self.append(b"b")
        self.clock.advance(0.1)
        self.clock.advance(0.5)  # the client reconnects
        self.assertEqual(p.values, [b"a", b"b"])

    def test_dropped_request_is_retried(self) -> None:
        self.append(b"a")
        self.cluster.drop_next(FetchRequest)
        p = Recorder()
        c = self.consumer(p, max_buffer_size=None)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.values, [])
        self.clock.advance(0.1)
        self.clock.advance(0.5)
        self.assertEqual(p.values, [b"a"])

    def test_broker_down_and_back(self) -> None:
        self.append(b"a")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        leader = self.cluster.partition("t", 1).leader
        self.cluster.set_broker_down(leader)
        self.append(b"b")
        for _ in range(20):
            self.clock.advance(0.5)
        self.assertEqual(p.values, [b"a", b"b"])
        self.assertNotEqual(self.requests(FETCH)[-1].broker, leader)

    def test_offset_lookups_are_retried(self) -> None:
        self.append(b"a")
        self.cluster.commit("g", "t", 1, 0)
        self.cluster.fail_next(OffsetFetchRequest, NotCoordinator)
        p = Recorder()
        c = self.consumer(p, consumer_group="g")
        self.stop(c)
        self.start(c, OFFSET_COMMITTED)
        self.assertEqual(p.values, [])
        self.clock.advance(0.1)
        self.assertEqual(p.values, [b"a"])

    def test_connection_errors_are_retriable(self) -> None:
        self.assertTrue(BrokerConnectionError.retriable)


class StartTests(ConsumerTestCase):
    def test_earliest_after_deletion(self) -> None:
        self.append(b"a", b"b", b"c")
        self.cluster.delete_records("t", 1, 1)
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, OFFSET_EARLIEST)
        self.assertEqual(p.offsets, [1, 2])

    def test_a_partition_the_topic_does_not_have_fails_the_start(self) -> None:
        """Issue 33: not retried forever, but failed with the error Producer.send gives."""
        for offset in (OFFSET_EARLIEST, OFFSET_COMMITTED, 0):
            c = Consumer(self.client, "t", 7, Recorder(), consumer_group="g")
            d = self.start(c, offset)
            self.run_for(1)
            failure = self.failureResultOf(d, ValueError)
            self.assertEqual(failure.getErrorMessage(), "topic t has no partition 7 (it has 2)")
            self.assert_stops_once_after_failure(c, None)

    def test_other_partition_is_not_read(self) -> None:
        self.append(b"zero", partition=0)
        self.append(b"one")
        p = Recorder()
        c = self.consumer(p)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(p.values, [b"one"])

    def test_processor_may_return_a_fired_deferred(self) -> None:
        self.append(b"a")
        self.append(b"b")
        seen = []

        def processor(consumer: Consumer, messages: list[SourcedMessage]) -> Deferred[None]:
            seen.extend(m.offset for m in messages)
            return succeed(None)

        c = self.consumer(processor, buffer_size=80)
        self.stop(c)
        self.start(c, 0)
        self.assertEqual(seen, [0, 1])
        self.assertEqual(c.last_processed_offset, 1)


class BrokenDataTests(ConsumerTestCase):
    def test_corrupt_batch_fails_start(self) -> None:
        self.append(b"good")
        self.append(b"bad")
        log = self.cluster.partition("t", 1).log
        stored = log.batches[1]
        data = bytearray(stored.data)
        data[-1] ^= 0xFF  # inside the CRC-checked part
        log.batches[1] = attrs.evolve(stored, data=bytes(data))
        p = Recorder()
        c = self.consumer(p, buffer_size=80)
        d = self.start(c, 0)
        self.failureResultOf(d, ChecksumError)
        self.assertEqual(p.values, [b"good"])
        self.assertEqual(c.last_processed_offset, 0)

    def test_closing_the_client_fails_the_consumer(self) -> None:
        c = self.consumer()
        d = self.start(c, 0)
        self.assertNoResult(d)
        self.client.close()
        self.failureResultOf(d, CancelledError)
        self.assertIsNone(c.stop())
        self.assertRaises(RestopError, c.stop)


class ReadFetchedTests(SynchronousTestCase):
    """Splitting one partition's fetched records (afkak.consumer._messages)."""

    def test_skips_what_ends_before_the_offset_and_control_batches(self) -> None:
        data = (
            build_batch([b"0", b"1"], base_offset=0)
            + build_batch([b"2", b"3", b"4"], base_offset=2)
            + build_control_batch(
                ControlType.COMMIT, producer_id=1, producer_epoch=0, base_offset=5
            )
            + build_batch([b"6"], base_offset=6)
        )
        fetched = read_fetched(data, 3)
        self.assertEqual((fetched.next_offset, fetched.truncated), (7, False))
        self.assertEqual([b.base_offset for b in fetched.batches], [2, 6])
        messages = fetched.messages("t", 4)
        self.assertEqual(
            [(m.topic, m.partition, m.offset) for m in messages],
            [("t", 4, 3), ("t", 4, 4), ("t", 4, 6)],
        )
        self.assertEqual(fetched.batches, [])  # released once delivered

    def test_partial_trailing_batch(self) -> None:
        whole = build_batch([b"a"], base_offset=0)
        cut = build_batch([b"b" * 50], base_offset=1)[:30]
        fetched = read_fetched(whole + cut, 0)
        self.assertEqual((fetched.next_offset, fetched.truncated), (1, False))
        only_cut = read_fetched(cut, 1)
        self.assertEqual((only_cut.next_offset, only_cut.truncated), (1, True))
        empty = read_fetched(None, 1)
        self.assertEqual((empty.next_offset, empty.truncated, empty.batches), (1, False, []))

    def test_gc_state_is_restored(self) -> None:
        fetched = read_fetched(build_batch([b"x"]), 0)
        gc.disable()
        try:
            fetched.messages("t", 0)
            self.assertFalse(gc.isenabled())
        finally:
            gc.enable()
        broken = read_fetched(build_batch([b"x"]), 0)
        broken.batches[0]._payload = b"\xff"  # a record that runs past the end
        self.assertRaises(DecodeError, broken.messages, "t", 0)
        self.assertTrue(gc.isenabled())

    def test_decoded_records_go_before_the_pause_ends(self) -> None:
        """The collection that may run when the GC pause ends must not scan them."""
        import weakref
        from contextlib import contextmanager

        import afkak.consumer._messages as messages_module

        fetched = read_fetched(build_batch([b"x", b"y"]), 0)
        batch = weakref.ref(fetched.batches[0])
        alive_at_the_end = []

        @contextmanager
        def watched() -> Any:
            yield
            alive_at_the_end.append(batch() is not None)

        self.patch(messages_module, "gc_paused", watched)
        self.assertEqual(len(fetched.messages("t", 0)), 2)
        self.assertEqual(alive_at_the_end, [False])


class RetriableTests(SynchronousTestCase):
    def test_classification(self) -> None:
        self.assertTrue(is_retriable(NotLeaderForPartitionError()))
        self.assertTrue(is_retriable(BrokerConnectionError()))
        self.assertTrue(is_retriable(KafkaUnavailableError()))
        self.assertFalse(is_retriable(TopicAuthorizationFailed()))
        self.assertFalse(is_retriable(OffsetOutOfRangeError()))
        self.assertFalse(is_retriable(CancelledError()))
        self.assertFalse(is_retriable(ZeroDivisionError()))
        lost = Failure(BrokerConnectionError())
        denied = Failure(TopicAuthorizationFailed())
        self.assertTrue(is_retriable(FailedPayloadsError([], [("p", lost)])))
        self.assertFalse(is_retriable(FailedPayloadsError([], [("p", lost), ("q", denied)])))
        self.assertFalse(is_retriable(FailedPayloadsError([], [])))
