"""The operator's transaction calls of KafkaAdminClient on the fake cluster:
describe_producers, list_transactions, describe_transactions, abort_transaction and
find_hanging_transactions, with the real transactional Producer making the transactions."""

from __future__ import annotations

import io
import json
from typing import Any

from twisted.internet.defer import Deferred

from afkak.admin import (
    AbortTransactionSpec,
    KafkaAdminClient,
    ProducerState,
    TransactionDescription,
)
from afkak.cli._output import CommandError, Output, error_of
from afkak.cli._parser import build_parser
from afkak.cli._session import Session
from afkak.common import (
    InvalidProducerEpoch,
    NotCoordinator,
    TopicAndPartition,
    TransactionalIdNotFound,
    UnknownTopicOrPartitionError,
)
from afkak.protocol.messages import DescribeTransactionsRequest
from afkak.test.test_transactions import TID, TxnTestCase

TP = TopicAndPartition


class TxnAdminCase(TxnTestCase):
    """A fake cluster with an admin client, and producers making transactions."""

    def setUp(self) -> None:
        super().setUp()
        self.admin = KafkaAdminClient(self.client)

    def open_transaction(self, tid: str = TID, partitions: int = 2) -> Any:
        """A producer with an ongoing transaction that wrote into partitions 0..n-1 of "t"."""
        producer = self.ready(tid)
        self.succeed(producer.begin_transaction())
        for p in range(partitions):
            producer.send("t", b"v%d" % p, partition=p)
        self.succeed(producer.flush())
        return producer


class TransactionAdminTests(TxnAdminCase):
    def test_describe_producers_shows_the_open_transaction(self) -> None:
        producer = self.open_transaction()
        self.clock.advance(3)
        found = self.succeed(self.admin.describe_producers([TP("t", 0), TP("t", 2), TP("x", 0)]))
        (state,) = found[TP("t", 0)].active_producers
        self.assertEqual(
            (state.producer_id, state.producer_epoch, state.current_txn_start_offset),
            (producer._transaction.producer_id, producer._transaction.epoch, 0),
        )
        self.assertEqual(state.last_sequence, 0)
        self.assertEqual(found[TP("t", 2)].active_producers, ())
        self.assertIsInstance(found[TP("x", 0)].error, UnknownTopicOrPartitionError)
        # A follower answers too, when asked by broker id.
        follower = next(
            n for n in self.cluster.partition("t", 0).replicas
            if n != self.cluster.partition("t", 0).leader
        )  # fmt: skip
        at_follower = self.succeed(self.admin.describe_producers([TP("t", 0)], broker_id=follower))
        self.assertEqual(at_follower[TP("t", 0)].active_producers, (state,))

    def test_list_and_describe_transactions(self) -> None:
        producer = self.open_transaction()
        self.ready("other")
        self.clock.advance(2)
        listed = self.succeed(self.admin.list_transactions())
        self.assertEqual(
            [(t.transactional_id, t.state) for t in listed], [("other", "Empty"), (TID, "Ongoing")]
        )
        ongoing = self.succeed(self.admin.list_transactions(states=["Ongoing"]))
        self.assertEqual([t.transactional_id for t in ongoing], [TID])
        by_pid = self.succeed(
            self.admin.list_transactions(producer_ids=[producer._transaction.producer_id])
        )
        self.assertEqual([t.transactional_id for t in by_pid], [TID])
        self.assertEqual(self.succeed(self.admin.list_transactions(pattern="^oth")), [listed[0]])
        old = self.succeed(self.admin.list_transactions(min_duration_ms=1000))
        self.assertEqual([t.transactional_id for t in old], [TID])
        described = self.succeed(self.admin.describe_transactions([TID, "nobody"]))
        d = described[TID]
        self.assertEqual(
            (d.state, d.producer_id, d.partitions, d.coordinator_id, d.error),
            (
                "Ongoing",
                producer._transaction.producer_id,
                (TP("t", 0), TP("t", 1)),
                self.cluster.state.coordinator(TID),
                None,
            ),
        )
        self.assertIsInstance(described["nobody"].error, TransactionalIdNotFound)

    def test_describe_transactions_follows_a_moved_coordinator(self) -> None:
        self.ready()
        self.cluster.fail_next(DescribeTransactionsRequest, NotCoordinator)
        described = self.succeed(self.admin.describe_transactions([TID]))
        self.assertIsInstance(described[TID], TransactionDescription)
        self.assertIsNone(described[TID].error)
        self.assertEqual(described[TID].state, "Empty")

    def test_nothing_hangs_while_the_coordinator_holds_it(self) -> None:
        self.open_transaction()
        self.clock.advance(1000)
        self.assertEqual(
            self.succeed(
                self.admin.find_hanging_transactions(partitions=["t"], max_transaction_timeout_ms=0)
            ),
            [],
        )

    def test_find_hanging_and_abort_it(self) -> None:
        producer = self.open_transaction(partitions=1)
        pid = producer._transaction.producer_id
        # The coordinator loses the transaction: partition 0 keeps it open for ever.
        self.cluster.state.transactions.forget(TID)
        self.assertEqual(self.cluster.partition("t", 0).last_stable_offset, 0)
        young = self.admin.find_hanging_transactions(partitions=["t"])
        self.assertEqual(self.succeed(young), [])  # not older than the 15-minute bound yet
        self.clock.advance(901)
        (found,) = self.succeed(self.admin.find_hanging_transactions(partitions=[TP("t", 0)]))
        self.assertEqual((found.partition, found.producer.producer_id), (TP("t", 0), pid))
        self.assertIsNone(found.transactional_id)
        leader = self.cluster.partition("t", 0).leader
        by_broker = self.succeed(self.admin.find_hanging_transactions(broker_id=leader))
        self.assertEqual(by_broker, [found])
        result = self.succeed(self.admin.abort_transaction(found.abort_spec))
        self.assertIsNone(result.error)
        self.assertEqual(self.cluster.partition("t", 0).last_stable_offset, 2)
        self.assertEqual(self.read("read_committed", 0), [])
        self.assertEqual(self.succeed(self.admin.find_hanging_transactions(partitions=["t"])), [])

    def test_abort_with_an_older_epoch_is_refused(self) -> None:
        producer = self.open_transaction(partitions=1)
        spec = AbortTransactionSpec(TP("t", 0), producer._transaction.producer_id, 0, 0)
        self.ready()  # a new session of the id: aborted under epoch 1, the old one fenced
        result = self.succeed(self.admin.abort_transaction(spec))
        self.assertIsInstance(result.error, InvalidProducerEpoch)

    def test_abort_of_a_missing_partition(self) -> None:
        spec = AbortTransactionSpec.of(TP("x", 0), ProducerState(5, 0))
        result = self.succeed(self.admin.abort_transaction(spec))
        self.assertIsInstance(result.error, UnknownTopicOrPartitionError)


class TransactionsCommandTests(TxnAdminCase):
    """``afkak transactions ...`` on the same fake cluster."""

    def run_command(self, *argv: str) -> Any:
        args = build_parser().parse_args(["--json", "transactions", *argv])
        session = Session(args, self.clock, self.client)
        session.out = Output(True, io.StringIO())
        self.assertEqual(self.succeed(Deferred.fromCoroutine(args.run(session))), 0)
        (out,) = [json.loads(line) for line in session.out.stream.getvalue().splitlines()]
        return out

    def test_list_describe_find_hanging_abort(self) -> None:
        producer = self.open_transaction(partitions=1)
        pid = producer._transaction.producer_id
        self.assertEqual(
            self.run_command("list", "--state", "Ongoing"),
            [{"transactional_id": TID, "producer_id": pid, "state": "Ongoing"}],
        )
        (described,) = self.run_command("describe", TID)
        self.assertEqual((described["state"], described["partitions"]), ("Ongoing", ["t-0"]))
        (state,) = self.run_command("describe-producers", "--topic", "t", "--partition", "0")
        self.assertEqual((state["producer_id"], state["txn_start_offset"]), (pid, 0))
        self.cluster.state.transactions.forget(TID)
        self.clock.advance(61)
        self.assertEqual(self.run_command("find-hanging", "--topic", "t"), [])
        (hanging,) = self.run_command(
            "find-hanging", "--topic", "t:0", "--max-transaction-timeout", "1"
        )
        self.assertEqual((hanging["producer_id"], hanging["start_offset"]), (pid, 0))
        done = self.run_command("abort", "--topic", "t", "--partition", "0", "--start-offset", "0")
        self.assertEqual(done["producer_id"], pid)
        self.assertEqual(self.cluster.partition("t", 0).last_stable_offset, 2)

    def test_abort_without_such_a_transaction(self) -> None:
        args = build_parser().parse_args(
            ["transactions", "abort", "--topic", "t", "--partition", "0", "--start-offset", "5"]
        )
        d = Deferred.fromCoroutine(args.run(Session(args, self.clock, self.client)))
        self.assertIsInstance(error_of(self.run_until(d).value), CommandError)
