"""Transactions on the fake cluster, with a Clock: the transactional Producer's state
machine and error classification, read_committed consumers, the fake transaction
coordinator, and the aborted-transaction filter.

Everything runs the real producer, consumer, client and connections against
afkak.testing's FakeKafkaCluster; nothing is mocked.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import (
    OFFSET_COMMITTED,
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    GroupAuthorizationFailed,
    IllegalGeneration,
    InvalidProducerEpoch,
    InvalidTxnState,
    NotCoordinator,
    OffsetFetchRequest,
    OffsetRequest,
    ProducerFenced,
    SourcedMessage,
    TopicAndPartition,
    TopicAuthorizationFailed,
    TransactionAbortable,
    TransactionAbortedError,
    TransactionalIdAuthorizationFailed,
    TransactionStateError,
    UnknownMemberId,
    UnknownProducerId,
    UnstableOffsetCommit,
)
from afkak.consumer import Consumer
from afkak.group import ConsumerGroup, TransactionalProcessor, group_lag
from afkak.producer import ConsumerGroupMetadata, Producer, TransactionState as State
from afkak.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from afkak.records import build_batch, build_control_batch, read_batches
from afkak.records.aborted import AbortedTransactions, committed_batches, isolation_level
from afkak.records.record import ControlType
from afkak.test.test_producer import ProducerTestCase

TID = "txn-1"


class IsolationLevelTests(SynchronousTestCase):
    def test_names_and_numbers(self) -> None:
        self.assertEqual(isolation_level("read_committed"), 1)
        self.assertEqual(isolation_level("READ_UNCOMMITTED"), 0)
        self.assertEqual(isolation_level(1), 1)
        self.assertRaises(ValueError, isolation_level, "committed")
        self.assertRaises(ValueError, isolation_level, 2)
        self.assertRaises(TypeError, isolation_level, None)
        self.assertRaises(TypeError, isolation_level, True)

    def test_consumer_refuses_bad_level(self) -> None:
        client = KafkaClient("broker:9092", reactor=Clock())
        self.assertRaises(
            ValueError, Consumer, client, "t", 0, lambda c, m: None, isolation_level="x"
        )


def _data(offset: int, pid: int, n: int = 1, txn: bool = True) -> bytes:
    return build_batch(
        [b"v%d" % (offset + i) for i in range(n)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=txn,
    )


def _marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_control_batch(
        ControlType.COMMIT if commit else ControlType.ABORT,
        producer_id=pid,
        producer_epoch=0,
        base_offset=offset,
    )


class AbortedFilterTests(SynchronousTestCase):
    def kept(self, data: bytes, aborted: Any) -> list[int]:
        return [
            b.base_offset
            for b in committed_batches(read_batches(data), aborted)
            if not b.is_control
        ]

    def test_interleaved_producers(self) -> None:
        # pid 1 aborts [0, 3), pid 2 commits, pid 1 then commits a second transaction.
        data = b"".join(
            [
                _data(0, 1),
                _data(1, 2),
                _data(2, 1),
                _marker(3, 1, commit=False),
                _marker(4, 2, commit=True),
                _data(5, 1),
                _data(6, 3, txn=False),
                _marker(7, 1, commit=True),
            ]
        )
        self.assertEqual(self.kept(data, [(1, 0)]), [1, 5, 6])
        self.assertEqual(self.kept(data, None), [0, 1, 2, 5, 6])

    def test_response_entries_and_unsorted_index(self) -> None:
        from afkak.protocol.messages import FetchResponse

        data = b"".join([_data(0, 1), _data(1, 2), _marker(2, 1, False), _marker(3, 2, False)])
        aborted = [FetchResponse.AbortedTransaction(2, 1), FetchResponse.AbortedTransaction(1, 0)]
        self.assertEqual(self.kept(data, aborted), [])

    def test_aborted_transaction_starting_before_the_fetch(self) -> None:
        data = b"".join([_data(10, 1, n=3), _marker(13, 1, False), _data(14, 1)])
        self.assertEqual(self.kept(data, [(1, 4)]), [14])

    @given(st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=12))
    def test_same_as_replaying_the_log(self, txns: list[tuple[int, bool]]) -> None:
        """Each transaction (pid, committed) writes two batches then its marker."""
        out, aborted, expected, offset = [], [], [], 0
        for pid, commit in txns:
            out += [_data(offset, pid), _data(offset + 1, pid), _marker(offset + 2, pid, commit)]
            if commit:
                expected += [offset, offset + 1]
            else:
                aborted.append((pid, offset))
            offset += 3
        self.assertEqual(self.kept(b"".join(out), aborted), expected)

    def test_filter_is_empty_without_aborted(self) -> None:
        self.assertFalse(AbortedTransactions(None))
        self.assertFalse(AbortedTransactions([]))


class TxnTestCase(ProducerTestCase):
    partitions = 3
    #: The cluster's finalized ``transaction.version`` (KIP-890).
    transaction_version = 1

    def setUp(self) -> None:
        super().setUp()
        features = self.cluster.state.features
        features.supported["transaction.version"] = (0, 2)
        features.finalized["transaction.version"] = self.transaction_version

    def requests(self, api_key: int) -> list[Any]:
        return [r for r in self.cluster.requests_seen if r.api_key == api_key]

    def txn_producer(self, tid: str = TID, **options: Any) -> Producer:
        producer = self.producer(transactional_id=tid, **options)
        return producer

    def ready(self, tid: str = TID, **options: Any) -> Producer:
        producer = self.txn_producer(tid, **options)
        self.succeed(producer.init_transactions())
        return producer

    def fail_with(self, d: Deferred[Any], error: type[BaseException]) -> Failure:
        result = self.run_until(d)
        self.assertIsInstance(result, Failure, result)
        self.assertTrue(result.check(error), result)
        return result

    def read(self, level: str, partition: int = 0, topic: str = "t") -> list[bytes | None]:
        """Every record a consumer with *level* reads of the partition, up to its end."""
        got: list[SourcedMessage] = []
        consumer = Consumer(
            self.client,
            topic,
            partition,
            lambda c, msgs: got.extend(msgs),
            isolation_level=level,
            fetch_max_wait_time=10,
        )
        d = consumer.start(OFFSET_EARLIEST)
        d.addErrback(lambda f: None)
        for _ in range(50):
            self.clock.advance(0.02)
        self.lso = consumer.last_stable_offset
        self.hwm = consumer.high_watermark
        consumer.stop()
        return [m.message.value for m in got]

    def send_all(self, producer: Producer, n: int, prefix: bytes, topic: str = "t") -> None:
        for i in range(n):
            producer.send(topic, prefix + b"%d" % i, partition=i % self.partitions)
        self.succeed(producer.flush())


class TransactionalProducerTests(TxnTestCase):
    def test_commit_and_abort_across_partitions(self) -> None:
        producer = self.ready()
        self.succeed(producer.begin_transaction())
        self.send_all(producer, 6, b"c")
        self.succeed(producer.commit_transaction())
        self.succeed(producer.begin_transaction())
        self.send_all(producer, 6, b"a")
        self.succeed(producer.abort_transaction())
        for p in range(3):
            self.assertEqual(self.read("read_committed", p), [b"c%d" % p, b"c%d" % (p + 3)])
            self.assertEqual(
                self.read("read_uncommitted", p),
                [b"c%d" % p, b"c%d" % (p + 3), b"a%d" % p, b"a%d" % (p + 3)],
            )
        batches = self.stored_batches("t", 0)
        self.assertTrue(all(b.is_transactional for b in batches))
        self.assertEqual(
            [b.control_marker.type for b in batches if b.is_control],
            [ControlType.COMMIT, ControlType.ABORT],
        )
        self.assertEqual(
            (self.cluster.state.transactions.committed, self.cluster.state.transactions.aborted),
            (1, 1),
        )
        added = [
            (t.name, p)
            for r in self.requests(24)
            for t in r.request.v3_and_below_topics
            for p in t.partitions
        ]
        if self.transaction_version >= 2:  # the Produce requests added them
            self.assertEqual(added, [])
            self.assertTrue(all(r.api_version >= 12 for r in self.produce_requests()))
        else:
            self.assertEqual(sorted(added), sorted([("t", p) for p in range(3)] * 2))
            self.assertTrue(all(r.api_version <= 11 for r in self.produce_requests()))
        finds = [r.request for r in self.cluster.requests_seen if r.api_key == 10]
        self.assertIn((1, [TID]), [(f.key_type, f.coordinator_keys) for f in finds])

    def test_open_transaction_holds_back_read_committed(self) -> None:
        self.cluster.append("t", 0, [b"plain"])
        producer = self.ready()
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"open", partition=0))
        self.assertEqual(self.read("read_committed"), [b"plain"])
        self.assertEqual((self.lso, self.hwm), (1, 2))
        self.assertEqual(self.read("read_uncommitted"), [b"plain", b"open"])
        self.assertEqual(self.lso, 1)
        lso = self.succeed(
            self.client.send_offset_request(
                [OffsetRequest("t", 0, OFFSET_LATEST, 1)], isolation_level="read_committed"
            )
        )
        self.assertEqual(lso[0].offsets[0], 1)
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed"), [b"plain", b"open"])
        self.assertEqual((self.lso, self.hwm), (3, 3))

    def test_client_fetch_read_committed(self) -> None:
        from afkak.common import FetchRequest

        producer = self.ready()
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"gone", partition=0))
        self.succeed(producer.abort_transaction())
        self.cluster.append("t", 0, [b"kept"])
        [resp] = self.succeed(
            self.client.send_fetch_request(
                [FetchRequest("t", 0, 0, 1 << 20)], isolation_level="read_committed"
            )
        )
        self.assertEqual([m.message.value for m in resp.messages], [b"kept"])
        self.assertEqual(resp.messages.last_stable_offset, 3)

    def test_sends_outside_a_transaction_fail(self) -> None:
        producer = self.txn_producer()
        self.fail_with(producer.send("t", b"x"), TransactionStateError)
        self.fail_with(producer.begin_transaction(), TransactionStateError)
        self.succeed(producer.init_transactions())
        self.fail_with(producer.send_messages("t", None, [b"x"]), TransactionStateError)
        self.fail_with(producer.commit_transaction(), TransactionStateError)
        self.fail_with(producer.abort_transaction(), TransactionStateError)
        self.fail_with(producer.init_transactions(), TransactionStateError)
        self.succeed(producer.begin_transaction())
        self.fail_with(producer.begin_transaction(), TransactionStateError)
        self.succeed(producer.commit_transaction())  # empty: no EndTxn needed
        self.assertEqual([r for r in self.cluster.requests_seen if r.api_key == 26], [])
        self.assertEqual(self.values(), [])

    def test_non_transactional_producer_has_no_transactions(self) -> None:
        self.fail_with(self.producer().init_transactions(), TransactionStateError)

    def test_constructor_checks(self) -> None:
        self.assertRaises(TypeError, Producer, self.client, transactional_id="")
        self.assertRaises(
            ValueError, Producer, self.client, transactional_id="x", enable_idempotence=False
        )
        self.assertRaises(
            ValueError, Producer, self.client, transactional_id="x", transaction_timeout_ms=0
        )
        self.assertTrue(Producer(self.client, transactional_id="x").options.idempotent)

    def test_send_offsets_commit_with_the_transaction(self) -> None:
        producer = self.ready()
        group = ConsumerGroupMetadata("g")
        tp = TopicAndPartition("t", 1)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send_offsets_to_transaction({tp: 7}, group))
        self.assertNotIn(("g", "t", 1), self.cluster.committed_offsets)
        self.succeed(producer.abort_transaction())
        self.assertNotIn(("g", "t", 1), self.cluster.committed_offsets)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"out", partition=0))
        self.succeed(producer.send_offsets_to_transaction({tp: 9}, group))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.cluster.committed_offsets["g", "t", 1].offset, 9)
        self.fail_with(producer.send_offsets_to_transaction({tp: 1}, group), TransactionStateError)
        self.succeed(producer.begin_transaction())
        self.fail_with(producer.send_offsets_to_transaction({("t", 1): 1}, group), TypeError)
        self.fail_with(producer.send_offsets_to_transaction({tp: 1}, "g"), TypeError)

    def test_staged_offsets_are_unstable_until_the_transaction_ends(self) -> None:
        producer = self.ready()
        self.cluster.commit("g", "t", 0, 3)
        self.succeed(producer.begin_transaction())
        self.succeed(
            producer.send_offsets_to_transaction(
                {TopicAndPartition("t", 0): 8}, ConsumerGroupMetadata("g")
            )
        )

        def lookup(stable: bool) -> Any:
            [answer] = self.succeed(
                self.client.send_offset_fetch_request(
                    "g", [OffsetFetchRequest("t", 0)], fail_on_error=False, require_stable=stable
                )
            )
            return answer.error, answer.offset

        self.assertEqual(lookup(True), (UnstableOffsetCommit.errno, -1))
        self.assertEqual(lookup(False), (0, 3))
        # A read_committed Consumer starting at the committed offset waits for it.
        got: list[int] = []
        consumer = Consumer(
            self.client,
            "t",
            0,
            lambda c, msgs: got.extend(m.offset for m in msgs),
            consumer_group="g",
            auto_commit_every_n=0,
            auto_commit_every_ms=0,
            isolation_level="read_committed",
            request_retry_init_delay=0.05,
            request_retry_max_delay=0.1,
        )
        self.cluster.append("t", 0, [b"v%d" % i for i in range(10)])
        consumer.start(OFFSET_COMMITTED)
        self.clock.advance(1)
        self.assertEqual(consumer.last_committed_offset, None)
        self.succeed(producer.commit_transaction())
        self.assertEqual(lookup(True), (0, 8))
        for _ in range(20):
            self.clock.advance(0.1)
        consumer.stop()
        self.assertEqual(got[:1], [8])

    def test_abort_fails_sends_waiting_for_buffer_space(self) -> None:
        producer = self.ready(buffer_memory=1000, linger_ms=50)
        self.succeed(producer.begin_transaction())
        sends = [producer.send("t", b"x" * 300, partition=0) for _ in range(6)]
        self.assertTrue(producer._accumulator.blocked, "some sends wait for buffer space")
        self.succeed(producer.abort_transaction())
        for d in sends:
            self.fail_with(d, TransactionAbortedError)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"next", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed"), [b"next"])
        self.assertEqual(self.read("read_uncommitted"), [b"next"])

    def test_cancel_commit(self) -> None:
        producer = self.ready()
        self.succeed(producer.begin_transaction())
        self.cluster.delay(EndTxnRequest, 1.0)
        self.succeed(producer.send("t", b"x", partition=0))
        d = producer.commit_transaction()
        self.clock.advance(0.1)
        d.cancel()
        self.assertTrue(self.run_until(d).check(Exception))
        self.assertEqual(producer.transaction_state, State.IN_TRANSACTION)
        self.cluster.delay(EndTxnRequest, 0)
        self.succeed(producer.commit_transaction())  # the retried EndTxn succeeds
        self.assertEqual(self.read("read_committed"), [b"x"])

    def test_a_batch_refused_as_too_large_is_split(self) -> None:
        """Issue 33: the halves keep the transaction's producer id, epoch and sequences."""
        self.cluster.state.max_message_bytes = 600
        producer = self.ready(linger_ms=100)
        self.succeed(producer.begin_transaction())
        for i in range(20):
            producer.send("t", b"%02d" % i + b"x" * 98, partition=1)
        self.succeed(producer.flush())
        self.succeed(producer.commit_transaction())
        self.assertEqual(
            [v[:2] for v in self.read("read_committed", 1)],  # type: ignore[index]
            [b"%02d" % i for i in range(20)],
        )
        data = [b for b in self.stored_batches("t", 1) if not b.is_control]
        self.assertGreater(len(data), 2)
        self.assertEqual(
            [b.base_sequence for b in data],
            [sum(c.record_count for c in data[:k]) for k in range(len(data))],
        )


class FencingTests(TxnTestCase):
    def test_second_producer_fences_the_first(self) -> None:
        first = self.ready()
        self.succeed(first.begin_transaction())
        self.succeed(first.send("t", b"zombie", partition=0))
        second = self.ready()  # aborts first's open transaction
        self.fail_with(first.send("t", b"more", partition=0), ProducerFenced)
        self.fail_with(first.commit_transaction(), ProducerFenced)
        self.fail_with(first.abort_transaction(), ProducerFenced)
        self.fail_with(first.begin_transaction(), ProducerFenced)
        self.succeed(second.begin_transaction())
        self.succeed(second.send("t", b"live", partition=0))
        self.succeed(second.commit_transaction())
        self.assertEqual(self.read("read_committed"), [b"live"])

    def test_fenced_while_committing(self) -> None:
        first = self.ready()
        self.succeed(first.begin_transaction())
        self.succeed(first.send("t", b"zombie", partition=0))
        self.ready()
        self.fail_with(first.commit_transaction(), ProducerFenced)
        self.fail_with(first.send("t", b"x"), ProducerFenced)
        self.assertEqual(self.read("read_committed"), [])

    def test_transaction_timeout_aborts_and_fences(self) -> None:
        producer = self.ready(transaction_timeout_ms=2000)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"slow", partition=0))
        self.clock.advance(3)
        self.assertEqual(self.cluster.state.transactions.aborted, 1)
        self.assertEqual(self.read("read_committed"), [])
        self.fail_with(producer.commit_transaction(), ProducerFenced)


class ErrorClassificationTests(TxnTestCase):
    """Every abortable, fatal and retriable error of each transactional API."""

    RETRIABLE = (NotCoordinator, CoordinatorNotAvailable, CoordinatorLoadInProgress)
    FATAL = (ProducerFenced, InvalidProducerEpoch, TransactionalIdAuthorizationFailed)

    def begun(self) -> Producer:
        producer = self.ready()
        self.succeed(producer.begin_transaction())
        return producer

    def assert_fatal(self, producer: Producer, error: type[BaseException]) -> None:
        self.assertEqual(producer.transaction_state, State.FATAL_ERROR)
        for d in (
            producer.send("t", b"x"),
            producer.begin_transaction(),
            producer.commit_transaction(),
            producer.abort_transaction(),
            producer.init_transactions(),
        ):
            self.fail_with(d, error)

    def assert_abortable(self, producer: Producer, error: type[BaseException]) -> None:
        self.assertEqual(producer.transaction_state, State.ABORTABLE_ERROR)
        self.fail_with(producer.send("t", b"x"), error)
        self.fail_with(producer.commit_transaction(), error)
        self.succeed(producer.abort_transaction())
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"after", partition=2))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed", 2)[-1:], [b"after"])
        self.assertNotIn(b"x", self.read("read_committed", 0))

    # InitProducerId

    def test_init_retriable(self) -> None:
        for error in (*self.RETRIABLE, ConcurrentTransactions):
            self.cluster.fail_next(InitProducerIdRequest, error)
        self.ready()

    def test_init_fatal(self) -> None:
        for error in (*self.FATAL, InvalidTxnState):
            producer = self.txn_producer(f"tid-{error.__name__}")
            self.cluster.fail_next(InitProducerIdRequest, error)
            self.fail_with(producer.init_transactions(), error)
            self.assert_fatal(producer, error)

    def test_init_authorization_from_the_coordinator(self) -> None:
        self.cluster.state.transactions.denied.add("secret")
        producer = self.txn_producer("secret")
        self.fail_with(producer.init_transactions(), TransactionalIdAuthorizationFailed)
        self.assert_fatal(producer, TransactionalIdAuthorizationFailed)

    # AddPartitionsToTxn

    def test_add_partitions_retriable(self) -> None:
        producer = self.begun()
        for error in (*self.RETRIABLE, ConcurrentTransactions):
            self.cluster.fail_next(AddPartitionsToTxnRequest, error)
        self.succeed(producer.send("t", b"x", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed"), [b"x"])

    def test_add_partitions_fatal(self) -> None:
        for error in self.FATAL:
            producer = self.begun()
            self.cluster.fail_next(AddPartitionsToTxnRequest, error)
            self.fail_with(producer.send("t", b"x", partition=0), error)
            self.assert_fatal(producer, error)

    def test_add_partitions_abortable(self) -> None:
        for error in (TopicAuthorizationFailed, TransactionAbortable):
            producer = self.begun()
            self.cluster.fail_next(AddPartitionsToTxnRequest, error)
            self.fail_with(producer.send("t", b"x", partition=0), error)
            self.assert_abortable(producer, error)
            producer.stop()

    # Produce inside a transaction

    def test_produce_fenced_is_fatal(self) -> None:
        producer = self.begun()
        self.cluster.fail_next(ProduceRequest, ProducerFenced)
        self.fail_with(producer.send("t", b"x", partition=0), ProducerFenced)
        self.assert_fatal(producer, ProducerFenced)

    def test_produce_failure_is_abortable_and_bumps_the_epoch(self) -> None:
        producer = self.begun()
        epoch = producer._transaction.epoch  # type: ignore[union-attr]
        self.cluster.fail_next(ProduceRequest, TopicAuthorizationFailed)
        self.fail_with(producer.send("t", b"x", partition=0), TopicAuthorizationFailed)
        self.assert_abortable(producer, TopicAuthorizationFailed)
        self.assertEqual(producer._transaction.epoch, epoch + 1)  # type: ignore[union-attr]

    def test_produce_unknown_producer_id_is_abortable_and_bumps_the_epoch(self) -> None:
        """The broker lost the producer: the transaction's epoch is the coordinator's, so
        the transaction fails (as for an epoch error) instead of the producer resetting."""
        producer = self.begun()
        epoch = producer._transaction.epoch  # type: ignore[union-attr]
        self.cluster.fail_next(ProduceRequest, UnknownProducerId)
        self.fail_with(producer.send("t", b"x", partition=0), UnknownProducerId)
        self.assert_abortable(producer, UnknownProducerId)
        self.assertEqual(producer._transaction.epoch, epoch + 1)  # type: ignore[union-attr]

    # AddOffsetsToTxn and TxnOffsetCommit

    def test_add_offsets(self) -> None:
        group, offsets = ConsumerGroupMetadata("g"), {TopicAndPartition("t", 0): 1}
        producer = self.begun()
        for error in (*self.RETRIABLE, ConcurrentTransactions):
            self.cluster.fail_next(AddOffsetsToTxnRequest, error)
        self.succeed(producer.send_offsets_to_transaction(offsets, group))
        self.succeed(producer.abort_transaction())
        self.succeed(producer.begin_transaction())
        self.cluster.fail_next(AddOffsetsToTxnRequest, GroupAuthorizationFailed)
        self.fail_with(
            producer.send_offsets_to_transaction(offsets, group), GroupAuthorizationFailed
        )
        self.assert_abortable(producer, GroupAuthorizationFailed)
        for error in self.FATAL:
            producer = self.begun()
            self.cluster.fail_next(AddOffsetsToTxnRequest, error)
            self.fail_with(producer.send_offsets_to_transaction(offsets, group), error)
            self.assert_fatal(producer, error)

    def test_txn_offset_commit(self) -> None:
        group, offsets = ConsumerGroupMetadata("g"), {TopicAndPartition("t", 0): 1}
        producer = self.begun()
        for error in (*self.RETRIABLE, ConcurrentTransactions):
            self.cluster.fail_next(TxnOffsetCommitRequest, error)
        self.succeed(producer.send_offsets_to_transaction(offsets, group))
        self.succeed(producer.abort_transaction())
        for error in (IllegalGeneration, UnknownMemberId, GroupAuthorizationFailed):
            self.succeed(producer.begin_transaction())
            self.cluster.fail_next(TxnOffsetCommitRequest, error)
            self.fail_with(producer.send_offsets_to_transaction(offsets, group), error)
            self.assertEqual(producer.transaction_state, State.ABORTABLE_ERROR)
            self.succeed(producer.abort_transaction())
        for error in self.FATAL:
            producer = self.begun()
            self.cluster.fail_next(TxnOffsetCommitRequest, error)
            self.fail_with(producer.send_offsets_to_transaction(offsets, group), error)
            self.assert_fatal(producer, error)

    # EndTxn

    def test_end_txn(self) -> None:
        producer = self.begun()
        self.succeed(producer.send("t", b"a", partition=0))
        for error in (*self.RETRIABLE, ConcurrentTransactions):
            self.cluster.fail_next(EndTxnRequest, error)
        self.succeed(producer.commit_transaction())
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"b", partition=0))
        self.cluster.fail_next(EndTxnRequest, TransactionAbortable)
        self.fail_with(producer.commit_transaction(), TransactionAbortable)
        self.assert_abortable(producer, TransactionAbortable)
        for error in (*self.FATAL, InvalidTxnState):
            producer = self.begun()
            self.succeed(producer.send("t", b"c", partition=1))
            self.cluster.fail_next(EndTxnRequest, error)
            self.fail_with(producer.commit_transaction(), error)
            self.assert_fatal(producer, error)
        self.assertEqual(self.read("read_committed", 0), [b"a"])


class GroupLagTests(TxnTestCase):
    def test_lag_against_the_last_stable_offset(self) -> None:
        self.cluster.append("t", 0, [b"a", b"b"])
        self.cluster.commit("g", "t", 0, 1)
        producer = self.ready()
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"open", partition=0))
        uncommitted = self.succeed(group_lag(self.client, "g", ["t"]))
        committed = self.succeed(
            group_lag(self.client, "g", ["t"], isolation_level="read_committed")
        )
        tp = TopicAndPartition("t", 0)
        self.assertEqual((uncommitted[tp].log_end, uncommitted[tp].lag), (3, 2))
        self.assertEqual((committed[tp].log_end, committed[tp].lag), (2, 1))
        self.assertRaises(ValueError, group_lag, self.client, "g", isolation_level="x")


class ConsumeTransformProduceTests(TxnTestCase):
    """TransactionalProcessor in a ConsumerGroup: output and input offsets commit together."""

    def pipeline(self, tid: str, client: Any = None) -> tuple[ConsumerGroup, Producer]:
        producer = self.ready(tid, linger_ms=1)
        group = ConsumerGroup(
            client or self.client,
            "ctp",
            ["in"],
            TransactionalProcessor(producer, upper),
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            auto_offset_reset=OFFSET_EARLIEST,
            auto_commit_every_n=0,
            auto_commit_every_ms=0,
            isolation_level="read_committed",
            fetch_max_wait_time=10,
        )
        return group, producer

    def setUp(self) -> None:
        super().setUp()
        self.cluster.create_topic("in", partitions=3)
        self.cluster.create_topic("out", partitions=3)
        for p in range(3):
            self.cluster.append("in", p, [b"r%d-%d" % (p, i) for i in range(50)])

    def outputs(self) -> list[bytes | None]:
        return sorted(v for p in range(3) for v in self.read("read_committed", p, topic="out"))

    def test_every_input_once(self) -> None:
        group, producer = self.pipeline("ctp-1")
        group.start()
        self.clock.advance(0)
        for _ in range(400):
            self.clock.advance(0.05)
        self.succeed(group.stop())
        expected = sorted(b"R%d-%d" % (p, i) for p in range(3) for i in range(50))
        self.assertEqual(self.outputs(), expected)
        for p in range(3):
            self.assertEqual(self.cluster.committed_offsets["ctp", "in", p].offset, 50)
        commits = [r.request for r in self.cluster.requests_seen if r.api_key == 28]
        self.assertTrue(commits)
        for c in commits:  # KIP-447: the member's generation and id
            self.assertEqual(c.group_id, "ctp")
            self.assertGreaterEqual(c.generation_id, 1)
            self.assertTrue(c.member_id)

    def test_stale_generation_aborts(self) -> None:
        group, producer = self.pipeline("ctp-1")
        group.start()
        self.clock.advance(0)
        for _ in range(100):
            self.clock.advance(0.05)
        current = group.group_metadata()
        self.assertGreaterEqual(current.generation_id, 1)
        other = self.ready("other")
        self.succeed(other.begin_transaction())
        stale = ConsumerGroupMetadata("ctp", current.generation_id - 1, current.member_id)
        self.fail_with(
            other.send_offsets_to_transaction({TopicAndPartition("in", 0): 1}, stale),
            IllegalGeneration,
        )
        self.assertEqual(other.transaction_state, State.ABORTABLE_ERROR)
        self.succeed(other.abort_transaction())
        self.succeed(group.stop())

    def test_aborted_block_is_redone_by_the_next_owner(self) -> None:
        group, producer = self.pipeline("ctp-1")
        self.cluster.fail_next(EndTxnRequest, TransactionAbortable)
        ended = group.start()
        self.clock.advance(0)
        # The failed transaction is aborted and its error ends the group...
        self.fail_with(ended, TransactionAbortable)
        self.assertEqual(producer.transaction_state, State.READY)
        self.assertEqual(self.cluster.state.transactions.aborted, 1)
        # ...and a new member (with a new producer) redoes the aborted block.
        group2, _ = self.pipeline("ctp-2")
        group2.start()
        self.clock.advance(0)
        for _ in range(400):
            self.clock.advance(0.05)
        self.succeed(group2.stop())
        expected = sorted(b"R%d-%d" % (p, i) for p in range(3) for i in range(50))
        self.assertEqual(self.outputs(), expected)
        self.assertGreaterEqual(self.cluster.state.transactions.aborted, 1)


def upper(messages: Any) -> list[tuple[str, bytes | None, bytes | None]]:
    return [("out", (m.message.value or b"").upper(), None) for m in messages]


class TransactionalProducerV2Tests(TransactionalProducerTests):
    transaction_version = 2


class FencingV2Tests(FencingTests):
    transaction_version = 2


class ConsumeTransformProduceV2Tests(ConsumeTransformProduceTests):
    transaction_version = 2


class TransactionsV2Tests(TxnTestCase):
    """KIP-890's protocol: implicit partitions and offsets, an epoch bump per EndTxn."""

    transaction_version = 2

    def epoch(self, producer: Producer) -> tuple[int, int]:
        txn = producer._transaction
        assert txn is not None
        return txn.producer_id, txn.epoch

    def test_every_end_txn_bumps_the_epoch(self) -> None:
        producer = self.ready()
        pid, epoch = self.epoch(producer)
        for n, end in enumerate(
            [producer.commit_transaction, producer.abort_transaction, producer.commit_transaction]
        ):
            self.succeed(producer.begin_transaction())
            self.succeed(producer.send("t", b"%d" % n, partition=0))
            self.succeed(end())
            self.assertEqual(self.epoch(producer), (pid, epoch + n + 1))
        self.assertEqual([r.api_version for r in self.requests(26)], [5, 5, 5])
        self.assertEqual(self.requests(24) + self.requests(25), [])
        # Sequences restart at each new epoch: every batch of each epoch starts at 0.
        data = [b for b in self.stored_batches("t", 0) if not b.is_control]
        self.assertEqual(
            [(b.producer_epoch, b.base_sequence) for b in data],
            [(epoch + n, 0) for n in range(3)],
        )
        self.assertEqual(self.read("read_committed"), [b"0", b"2"])

    def test_epoch_exhausted_gives_a_new_producer_id(self) -> None:
        producer = self.ready()
        pid, _ = self.epoch(producer)
        self.cluster.state.transactions.transactions[TID].epoch = 2**15 - 2
        producer._transaction.epoch = 2**15 - 2  # type: ignore[union-attr]
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"x", partition=1))
        self.succeed(producer.commit_transaction())
        new_pid, epoch = self.epoch(producer)
        self.assertNotEqual(new_pid, pid)
        self.assertEqual(epoch, 0)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"y", partition=1))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed", 1), [b"x", b"y"])

    def test_produce_while_the_last_transaction_completes_is_retried(self) -> None:
        """Issue 33: a partition's first Produce answered CONCURRENT_TRANSACTIONS (the last
        transaction's markers are still being written) is retried, as Java's producer does."""
        transactions = self.cluster.state.transactions
        transactions.completion_delay = 0.3
        producer = self.ready(retry_interval=0.05)
        for n in range(3):
            self.succeed(producer.begin_transaction())
            self.send_all(producer, 6, b"%d-" % n)
            self.succeed(producer.commit_transaction())
        self.assertGreater(transactions.concurrent_answers, 0)
        self.clock.advance(0.3)  # the last one's markers
        self.assertEqual(transactions.committed, 3)
        for p in range(3):
            self.assertEqual(
                self.read("read_committed", p),
                [b"%d-%d" % (n, i) for n in range(3) for i in (p, p + 3)],
            )

    def test_completing_transaction_answers_concurrent_transactions(self) -> None:
        """The fake coordinator's PrepareCommit: the producer's requests that would change
        the transaction are answered CONCURRENT_TRANSACTIONS until the markers are written."""
        transactions = self.cluster.state.transactions
        transactions.completion_delay = 1.0
        producer = self.ready(retry_interval=0.05)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"a", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual(transactions.transactions[TID].state, "PrepareCommit")
        self.succeed(producer.begin_transaction())
        group = ConsumerGroupMetadata("g")
        d = producer.send_offsets_to_transaction({TopicAndPartition("t", 0): 1}, group)
        self.assertNoResult(d)
        self.assertGreater(transactions.concurrent_answers, 0)
        self.clock.advance(1.0)
        self.succeed(d)
        self.assertEqual(transactions.transactions[TID].state, "Ongoing")
        self.succeed(producer.commit_transaction())
        self.clock.advance(1.0)
        self.assertEqual(self.cluster.committed_offsets["g", "t", 0].offset, 1)

    def test_offsets_without_add_offsets_to_txn(self) -> None:
        producer = self.ready()
        tp = TopicAndPartition("t", 1)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send_offsets_to_transaction({tp: 5}, ConsumerGroupMetadata("g")))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.cluster.committed_offsets["g", "t", 1].offset, 5)
        self.assertEqual(self.requests(25), [])
        self.assertEqual([r.api_version for r in self.requests(28)], [5])
        self.assertEqual([r.api_version for r in self.requests(26)], [5])

    def test_late_write_of_an_ended_transaction_is_fenced(self) -> None:
        """No hanging transaction: a batch at the ended transaction's epoch is refused."""
        producer = self.ready()
        pid, epoch = self.epoch(producer)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"in", partition=2))
        self.succeed(producer.commit_transaction())
        late = build_batch(
            [b"late"], producer_id=pid, producer_epoch=epoch, base_sequence=1, is_transactional=True
        )
        answer = self.succeed(
            self.client.send_request_to_broker(
                self.client.topics_to_brokers[TopicAndPartition("t", 2)],
                ProduceRequest(
                    transactional_id=TID,
                    acks=-1,
                    timeout_ms=1000,
                    topic_data=[
                        ProduceRequest.TopicProduceData(
                            name="t",
                            partition_data=[ProduceRequest.PartitionProduceData(2, late)],
                        )
                    ],
                ),
                max_version=12,
            )
        )
        [[p]] = [t.partition_responses for t in answer.responses]
        self.assertEqual(p.error_code, ProducerFenced.errno)
        self.assertEqual(self.cluster.state.transactions.transactions[TID].state, "CompleteCommit")

    def test_end_txn_retried_after_its_answer_was_lost(self) -> None:
        producer = self.ready()
        pid, epoch = self.epoch(producer)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"a", partition=0))
        self.cluster.drop_answer_next(EndTxnRequest)
        self.succeed(producer.commit_transaction(), seconds=60)
        self.assertEqual(self.epoch(producer), (pid, epoch + 1))
        self.assertEqual(self.cluster.state.transactions.committed, 1)

    def test_abortable_send_failure_needs_no_init_producer_id(self) -> None:
        producer = self.ready()
        pid, epoch = self.epoch(producer)
        self.succeed(producer.begin_transaction())
        self.cluster.fail_next(ProduceRequest, TopicAuthorizationFailed)
        self.fail_with(producer.send("t", b"x", partition=0), TopicAuthorizationFailed)
        self.succeed(producer.abort_transaction())
        self.assertEqual(self.epoch(producer), (pid, epoch + 1))  # EndTxn's bump
        self.assertEqual(len(self.requests(22)), 1)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"ok", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.read("read_committed"), [b"ok"])

    def test_upgrade_to_v2_between_transactions_fences_the_v1_epoch(self) -> None:
        self.cluster.state.features.finalized["transaction.version"] = 1
        producer = self.ready()
        pid, epoch = self.epoch(producer)
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"v1", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual(self.epoch(producer), (pid, epoch))
        self.assertEqual([r.api_version for r in self.requests(26)], [4])
        # The feature moves up; connections made from now on hear of it.
        self.cluster.state.features.update("transaction.version", 2, 1)
        self.cluster.drop_connections()
        self.succeed(self.client.load_metadata_for_topics("t"))  # a new negotiation
        self.succeed(producer.begin_transaction())
        self.succeed(producer.send("t", b"v2", partition=0))
        self.succeed(producer.commit_transaction())
        self.assertEqual([r.api_version for r in self.requests(26)], [4, 5])
        # EndTxn v5 bumped the epoch once, the InitProducerId after it once more.
        self.assertEqual(self.epoch(producer), (pid, epoch + 2))
        self.assertEqual(len(self.requests(22)), 2)
        self.assertEqual(self.read("read_committed"), [b"v1", b"v2"])
