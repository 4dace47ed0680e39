"""The transaction coordinator's state: each transactional id's producer and transaction.

Timeouts run on the cluster's reactor; the wire handlers are in :mod:`._txn_coordinator`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from afkak._broker_errors import (
    ConcurrentTransactions,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
)
from afkak.records import RecordBatch
from afkak.testing._lookup import code
from afkak.testing._state import CommittedOffset

if TYPE_CHECKING:
    from afkak.testing._state import FakePartition

MAX_EPOCH = 2**15 - 1


class TransactionState(enum.StrEnum):
    """A transaction's state; the values are Kafka's TransactionState names."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


#: The states of a transaction whose markers are being written.
COMPLETING = frozenset({TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT})


class _Cluster(Protocol):
    """What the coordinator uses of the cluster's state."""

    reactor: Any

    def partition(self, topic: str, partition: int) -> FakePartition: ...
    def commit(
        self, group: str, topic: str, partition: int, committed: CommittedOffset
    ) -> None: ...
    def wake_fetches(self) -> None: ...
    def new_producer_id(self) -> int: ...


@attrs.define(eq=False)
class FakeTransaction:
    """One transactional id's producer and its ongoing transaction."""

    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: set[tuple[str, int]] = attrs.field(factory=set)
    groups: set[str] = attrs.field(factory=set)
    #: group -> {(topic, partition): offset} staged by TxnOffsetCommit.
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = attrs.field(factory=dict)
    #: When the ongoing transaction began (ms on the cluster's reactor); -1 when none is.
    started_ms: int = -1
    timer: Any = attrs.field(default=None, repr=False)
    #: The id and epoch of the last EndTxn v5, which bumped them (its retry is answered).
    last_producer_id: int = -1
    last_epoch: int = -1


class TransactionCoordinatorState:
    """Every transactional id of a fake cluster, and the transaction timeouts."""

    def __init__(self, cluster: _Cluster) -> None:
        self._cluster = cluster
        self.transactions: dict[str, FakeTransaction] = {}
        #: Transactional ids refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
        self.denied: set[str] = set()
        #: How many transactions were committed / aborted (for tests).
        self.committed = 0
        self.aborted = 0
        #: Seconds (on the cluster's reactor) an EndTxn's markers take to be written.
        #: Meanwhile the transaction is PrepareCommit / PrepareAbort and the
        #: coordinator answers CONCURRENT_TRANSACTIONS to its producer's requests
        #: that would change it (a Produce adding a partition under transactions v2
        #: included), as Kafka's does.
        self.completion_delay = 0.0
        #: How many requests were answered CONCURRENT_TRANSACTIONS (for tests).
        self.concurrent_answers = 0

    def check_produce(
        self, batch: RecordBatch, part: FakePartition, implicit: bool = False
    ) -> tuple[int, str | None]:
        """The error for a transactional batch: its producer must have added the partition
        (or, *implicit* (Produce v12+ under transactions v2), the batch adds it)."""
        for txn in self.transactions.values():
            if txn.producer_id != batch.producer_id:
                continue
            if batch.producer_epoch < txn.epoch:
                return code(ProducerFenced), "a newer producer epoch exists"
            if implicit and batch.producer_epoch == txn.epoch:
                if self.busy(txn):
                    return code(ConcurrentTransactions), "the last transaction is completing"
                self._begin(txn)
                txn.partitions.add((part.topic, part.index))
                return 0, None
            if txn.state == TransactionState.ONGOING and (part.topic, part.index) in txn.partitions:
                return 0, None
        return code(InvalidTxnState), "the partition is not in an ongoing transaction"

    def staged(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction staged an offset of *group* for the partition."""
        return any(
            (topic, partition) in txn.offsets.get(group, ())
            for txn in self.transactions.values()
            if txn.state == TransactionState.ONGOING
        )

    def busy(self, txn: FakeTransaction) -> bool:
        """Whether *txn*'s markers are being written; if so, count a CONCURRENT_TRANSACTIONS."""
        if txn.state in COMPLETING:
            self.concurrent_answers += 1
            return True
        return False

    def end(self, txn: FakeTransaction, commit: bool, delay: float = 0.0) -> None:
        """Complete *txn*: markers in its partitions, its staged offsets committed or dropped;
        after *delay* seconds (meanwhile it is PrepareCommit / PrepareAbort)."""
        if txn.timer is not None and txn.timer.active():
            txn.timer.cancel()
        txn.timer = None
        partitions, offsets = sorted(txn.partitions), txn.offsets
        txn.partitions, txn.groups, txn.offsets = set(), set(), {}
        txn.started_ms = -1
        marker = (txn.producer_id, txn.epoch, commit)
        if delay > 0:
            txn.state = (
                TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
            )
            txn.timer = self._cluster.reactor.callLater(
                delay, self._complete, txn, partitions, offsets, marker
            )
        else:
            self._complete(txn, partitions, offsets, marker)

    def _complete(
        self,
        txn: FakeTransaction,
        partitions: list[tuple[str, int]],
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]],
        marker: tuple[int, int, bool],
    ) -> None:
        txn.timer = None
        cluster = self._cluster
        pid, epoch, commit = marker
        for topic, index in partitions:
            cluster.partition(topic, index).log.write_marker(pid, epoch, commit)
        if commit:
            for group, staged in offsets.items():
                for (topic, index), committed in staged.items():
                    cluster.commit(group, topic, index, committed)
            self.committed += 1
        else:
            self.aborted += 1
        txn.state = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
        cluster.wake_fetches()

    def forget(self, tid: str) -> None:
        """Drop *tid*'s state without writing markers, as a coordinator that lost it:
        the partitions of its open transaction are left hanging (for tests)."""
        txn = self.transactions.pop(tid)
        if txn.timer is not None and txn.timer.active():
            txn.timer.cancel()

    def _begin(self, txn: FakeTransaction) -> None:
        if txn.state != TransactionState.ONGOING:
            txn.state = TransactionState.ONGOING
            txn.started_ms = int(self._cluster.reactor.seconds() * 1000)
            txn.timer = self._cluster.reactor.callLater(
                txn.timeout_ms / 1000.0, self._expire, txn, txn.epoch
            )

    def _expire(self, txn: FakeTransaction, epoch: int) -> None:
        """The transaction timed out: abort it under a bumped epoch, fencing its producer."""
        txn.timer = None
        if txn.state == TransactionState.ONGOING and txn.epoch == epoch:
            self._bump(txn)
            self.end(txn, commit=False)

    def _bump(self, txn: FakeTransaction) -> None:
        if txn.epoch + 1 >= MAX_EPOCH:
            txn.producer_id, txn.epoch = self._cluster.new_producer_id(), 0
        else:
            txn.epoch += 1

    def current(self, tid: str, pid: int, epoch: int) -> tuple[FakeTransaction | None, int]:
        """The transaction of a request from (*pid*, *epoch*), or the error Kafka answers."""
        if tid in self.denied:
            return None, code(TransactionalIdAuthorizationFailed)
        txn = self.transactions.get(tid)
        if txn is None or txn.producer_id != pid:
            return None, code(InvalidProducerIdMapping)
        if epoch < txn.epoch:
            return None, code(ProducerFenced)
        if epoch > txn.epoch:
            return None, code(InvalidProducerEpoch)
        return txn, 0
