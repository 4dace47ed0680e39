"""The transactional producer's state machine and its requests to the coordinators.

As Kafka's Java producer: the transaction coordinator is looked up with
FindCoordinator (key type 1); InitProducerId with the transactional id gives
the producer id and a bumped epoch (fencing older producers of the id and
aborting what they left open); a partition joins the transaction with
AddPartitionsToTxn before its first batch is sent; offsets join with
AddOffsetsToTxn, then TxnOffsetCommit at the group coordinator; EndTxn
commits or aborts.

Transactions v2 (KIP-890), when the cluster's finalized ``transaction.version``
is 2 (read from the brokers' ApiVersions at init_transactions and at each
begin_transaction, as Java's producer): a partition joins implicitly with its
first Produce (v12+, no AddPartitionsToTxn), offsets with TxnOffsetCommit v5 (no
AddOffsetsToTxn), and EndTxn v5 bumps the epoch every transaction, so a late
write of an ended transaction is fenced instead of opening a hanging one.  Under
v1, Produce stays at v11 and EndTxn / TxnOffsetCommit at v4, so the broker knows
the partitions were added explicitly (and verifies them, KIP-890 part 1).

States (:class:`State`) and the calls allowed in each::

    UNINITIALIZED --init_transactions--> INITIALIZING --> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING --> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction--> ABORTING --> READY
    any --abortable error--> ABORTABLE_ERROR (only abort_transaction works)
    any --fatal error--> FATAL_ERROR (every call fails with that error)

Errors are classified per :func:`classify`: retried (with the producer's
back-off), the coordinator looked up again, abortable (the transaction must
be aborted, the producer goes on), or fatal (ProducerFenced,
InvalidProducerEpoch, TransactionalIdAuthorizationFailed and the like: the
producer is done).  This object is also the Sender's producer identity.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

import attrs
from twisted.internet import defer
from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, ErrorCode
from afkak._errors import (
    CancelledError,
    KafkaError,
    KafkaUnavailableError,
    TransactionAbortedError,
    TransactionStateError,
)
from afkak._retry import RetryPolicy, retrying
from afkak.client._interlayer import COORDINATOR_MOVED, TRANSACTION_KEY_TYPE, FindCoordinatorCall
from afkak.common import TopicAndPartition
from afkak.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

log = Logger()
T = TypeVar("T")

#: The client side of AddPartitionsToTxn ends at v3 (v4+ is broker-to-broker).
_ADD_PARTITIONS_MAX = 3
#: EndTxn v5, TxnOffsetCommit v5 and Produce v12 are transaction version 2 (KIP-890)
#: only; under version 1 the requests stay below them (as Java's producer).
_V1_END_TXN_MAX = 4
_V1_TXN_OFFSET_COMMIT_MAX = 4
_V1_PRODUCE_MAX = 11
#: InitProducerId v6 is KIP-939 (two-phase commit).
_INIT_PRODUCER_ID_MAX = 5


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


class Kind(enum.Enum):
    RETRY = "retry"
    FIND_COORDINATOR = "find coordinator"
    ABORTABLE = "abortable"
    FATAL = "fatal"


_RETRY = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # metadata not there yet
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.OPERATION_NOT_ATTEMPTED,  # another partition of the request failed
    }
)
#: The producer cannot go on: it was fenced, or may not use its transactional id.
FATAL = frozenset(
    {
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.PRODUCER_FENCED,
    }
)
#: The transaction must be aborted; the producer may then go on.
ABORTABLE = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,  # TxnOffsetCommit: the group rebalanced
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.TRANSACTION_ABORTABLE,
    }
)


def classify(error: BaseException) -> Kind:
    """What a transactional request's *error* means (see the module docstring)."""
    if isinstance(error, BrokerResponseError):
        errno = error.errno
        if errno in COORDINATOR_MOVED:
            return Kind.FIND_COORDINATOR
        if errno in _RETRY:
            return Kind.RETRY
        if errno in FATAL:
            return Kind.FATAL
        if errno in ABORTABLE:
            return Kind.ABORTABLE
        return Kind.RETRY if error.retriable else Kind.FATAL
    if isinstance(error, KafkaUnavailableError) or getattr(error, "retriable", False):
        return Kind.FIND_COORDINATOR  # a lost connection: the coordinator may have moved
    return Kind.FATAL


@attrs.frozen
class ConsumerGroupMetadata:
    """Who commits offsets in a transaction: the group, and (KIP-447) the member.

    With the generation and member id, the group coordinator refuses the
    commit of a member that a rebalance has replaced (ILLEGAL_GENERATION):
    the transaction is then aborted, so its output never duplicates the new
    owner's.  :meth:`afkak.group.ConsumerGroup.group_metadata` gives it.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class Sends(Protocol):
    """The producer's accepted sends, as a transaction needs them (its accumulator)."""

    def flush(self) -> Deferred[None]:
        """Fires once every send accepted so far is settled."""

    def drop_unsent(self, failure: Failure) -> None:
        """Fails every send not yet in flight with *failure*."""

    def wake(self, delay: float = 0.0) -> None:
        """Has the sender drain (a partition joined the transaction)."""


class TransactionManager:
    """A transactional producer's state, transaction coordinator and producer identity.

    :param backoff: the producer's retry policy; a retriable error is retried
        for at most *give_up_after* seconds (the delivery timeout) or
        *max_attempts* attempts.
    :param sends: the producer's accumulator, flushed before a commit, its
        unsent records dropped by an abort.
    """

    def __init__(
        self,
        client: Any,
        transactional_id: str,
        timeout_ms: int,
        backoff: RetryPolicy,
        max_attempts: int,
        give_up_after: float,
        sends: Sends,
    ) -> None:
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.producer_id = -1
        self.epoch = -1
        #: How many ids (or epochs) the coordinator gave.
        self.generation = 0
        self.state = State.UNINITIALIZED
        #: The transaction protocol in use: 1, or 2 (KIP-890) once the cluster finalized it.
        self.version = 1
        #: The error of ABORTABLE_ERROR / FATAL_ERROR.
        self.error: Failure | None = None
        self._client = client
        self._reactor = client.reactor
        self._backoff = backoff
        self._max_attempts = max_attempts
        self._give_up_after = give_up_after
        self._sends = sends
        self._coordinator: Any = None
        self._partitions: set[TopicAndPartition] = set()
        self._new_partitions: set[TopicAndPartition] = set()
        self._adding: Deferred[None] | None = None
        self._offsets_added = False
        self._operation: Deferred[Any] | None = None
        #: The epoch must be bumped with InitProducerId once this transaction ends:
        #: under v1 a send failed (sequences may be out of step), or the cluster just
        #: moved to v2 (as Java's producer, which fences the v1 epoch then).
        self._needs_bump = False

    def __repr__(self) -> str:
        return f"<Transaction {self.transactional_id!r} {self.state.value}>"

    # -- the producer's identity, for the Sender --------------------------------

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0

    def ensure(self) -> None:
        """Nothing to do: the id comes from :meth:`init_transactions`."""

    @property
    def produce_max_version(self) -> int | None:
        """The highest Produce version of this transaction's batches (v1: below v12)."""
        return None if self.version >= 2 else _V1_PRODUCE_MAX

    def bump(self) -> tuple[int, int] | None:
        """A partition's sequences must restart: abort, then bump the epoch (KIP-360;
        under v2 the EndTxn of the abort bumps it)."""
        self._needs_bump = self._needs_bump or self.version == 1
        self.abortable(
            Failure(KafkaError("a batch's sequence was lost: the transaction must be aborted"))
        )
        return None

    def stop(self) -> None:
        for d in (self._operation, self._adding):
            if d is not None:
                d.cancel()

    # -- hooks of the producer and sender -------------------------------------------

    def check_send(self) -> None:
        """Raise unless records may be sent now (in a begun transaction)."""
        if self.state is State.IN_TRANSACTION:
            return
        if self.state is State.FATAL_ERROR or self.state is State.ABORTABLE_ERROR:
            assert self.error is not None
            self.error.raiseException()
        raise TransactionStateError(
            f"{self!r}: sends need a begun transaction (call begin_transaction())"
        )

    def partition_added(self, key: TopicAndPartition) -> bool:
        """Whether *key* is in the transaction; if not, have it added (then wake the sender)."""
        if key in self._partitions:
            return True
        if self.state in (State.IN_TRANSACTION, State.COMMITTING):
            if self.version >= 2:
                self._partitions.add(key)  # its Produce adds it (KIP-890)
                return True
            self._new_partitions.add(key)
            if self._adding is None:
                d = Deferred.fromCoroutine(self._add_partitions())
                if not d.called:
                    self._adding = d
                d.addBoth(self._added, d)
        return False

    def _added(self, result: Any, d: Deferred[None]) -> None:
        if self._adding is d:
            self._adding = None
        if isinstance(result, Failure):
            self._failed(result, "AddPartitionsToTxn")
        self._sends.wake()

    def send_failed(self, failure: Failure) -> None:
        """A send of this transaction failed: it cannot commit any more."""
        if self.state is State.ABORTING or failure.check(TransactionAbortedError):
            return
        self._needs_bump = self._needs_bump or self.version == 1
        error = failure.value
        if isinstance(error, BrokerResponseError) and error.errno in FATAL:
            self.fatal(failure)
        else:
            self.abortable(failure)

    def abortable(self, failure: Failure) -> None:
        if self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR, State.ABORTING):
            return
        log.warn("{txn}: abortable error: {e}", txn=repr(self), e=failure.getErrorMessage())
        self.state, self.error = State.ABORTABLE_ERROR, failure
        self._sends.drop_unsent(failure)

    def fatal(self, failure: Failure) -> None:
        if self.state is State.FATAL_ERROR:
            return
        log.error("{txn}: fatal error: {e}", txn=repr(self), e=failure.getErrorMessage())
        self.state, self.error = State.FATAL_ERROR, failure
        self._sends.drop_unsent(failure)

    # -- the API ------------------------------------------------------------------

    def init_transactions(self) -> Deferred[None]:
        if self.state is State.FATAL_ERROR:
            return self._refuse("init_transactions")
        if self.state is not State.UNINITIALIZED:
            return self._refuse("init_transactions", "it was called before")
        self.state = State.INITIALIZING
        return self._run(self._init(), "InitProducerId")

    def begin_transaction(self) -> Deferred[None]:
        if self.state is not State.READY:
            return self._refuse("begin_transaction")
        self._read_version(initializing=False)
        self.state = State.IN_TRANSACTION
        return succeed(None)

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicAndPartition, int], group: ConsumerGroupMetadata
    ) -> Deferred[None]:
        if self.state is not State.IN_TRANSACTION or self._operation is not None:
            return self._refuse("send_offsets_to_transaction")
        return self._run(self._send_offsets(dict(offsets), group), "offsets")

    def commit_transaction(self) -> Deferred[None]:
        if self.state is not State.IN_TRANSACTION or self._operation is not None:
            return self._refuse("commit_transaction")
        self.state = State.COMMITTING
        return self._run(self._complete(commit=True), "EndTxn")

    def abort_transaction(self) -> Deferred[None]:
        if self.state not in (State.IN_TRANSACTION, State.ABORTABLE_ERROR):
            return self._refuse("abort_transaction")
        if self._operation is not None:
            self._operation.cancel()
        self.state, self.error = State.ABORTING, None
        self._sends.drop_unsent(Failure(TransactionAbortedError(f"{self!r} was aborted")))
        return self._run(self._complete(commit=False), "EndTxn")

    def _read_version(self, initializing: bool) -> None:
        """Take the cluster's finalized ``transaction.version``; a move up to v2 between
        transactions fences the v1 epoch after the next one (as Java's producer)."""
        version = 2 if self._client.finalized_feature("transaction.version") >= 2 else 1
        if version > self.version and not initializing:
            self._needs_bump = True
        if version != self.version:
            log.info("{txn}: transaction protocol v{v}", txn=repr(self), v=version)
        self.version = version

    # -- running the steps ----------------------------------------------------------

    def _refuse(self, call: str, why: str | None = None) -> Deferred[None]:
        """Fail *call*: with the fatal or abortable error, else TransactionStateError."""
        d: Deferred[None] = Deferred()
        if self.error is not None and self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
            d.errback(self.error)
        else:
            d.errback(
                TransactionStateError(f"{self!r}: {call}() not allowed: {why or 'wrong state'}")
            )
        return d

    def _run(self, steps: Any, what: str) -> Deferred[Any]:
        d = self._operation = Deferred.fromCoroutine(steps)

        def done(result: Any) -> Any:
            if self._operation is d:
                self._operation = None
            if isinstance(result, Failure):
                return self._failed(result, what)
            return result

        d.addBoth(done)
        return d

    def _failed(self, failure: Failure, what: str) -> Failure:
        """Move to the state *failure* calls for; return it for the caller."""
        if self.state is State.FATAL_ERROR:
            return failure
        cancelled = failure.check(CancelledError, defer.CancelledError) is not None
        if not cancelled and classify(failure.value) is Kind.FATAL:
            self.fatal(failure)
        elif self.state is State.INITIALIZING:
            self.state = State.UNINITIALIZED  # init_transactions() may be called again
        elif self.state is State.ABORTING:
            self.state, self.error = State.ABORTABLE_ERROR, failure  # abort again
        elif cancelled:
            if self.state is State.COMMITTING:
                self.state = State.IN_TRANSACTION  # commit (or abort) again
        else:
            self.abortable(failure)
        return failure

    async def _attempts(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """``await attempt()``, retried (afkak._retry) while :func:`classify` says so."""
        return await retrying(
            self._reactor,
            attempt,
            self._backoff,
            retriable=_retriable,
            max_attempts=self._max_attempts,
            deadline=self._reactor.seconds() + self._give_up_after,
            on_retry=self._on_retry,
            what=f"{self!r}: {what}",
        )

    def _on_retry(self, error: BaseException) -> None:
        if classify(error) is Kind.FIND_COORDINATOR:
            self._coordinator = None

    async def _request(self, request: Any, coordinator: str | None = None, **bounds: Any) -> Any:
        """Send *request* to the transaction coordinator (or *coordinator* group's)."""
        if coordinator is not None:
            return await self._client.send_request_to_coordinator(coordinator, request, **bounds)
        if self._coordinator is None:
            call = FindCoordinatorCall(self.transactional_id, TRANSACTION_KEY_TYPE)
            [self._coordinator] = call.parse(await self._client.send_request_to_any_broker(call))
        return await self._client.send_request_to_broker(self._coordinator, request, **bounds)

    async def _init_producer_id(self, current: tuple[int, int] = (-1, -1)) -> None:
        response = await self._request(
            InitProducerIdRequest(
                transactional_id=self.transactional_id,
                transaction_timeout_ms=self.timeout_ms,
                producer_id=current[0],
                producer_epoch=current[1],
            ),
            max_version=_INIT_PRODUCER_ID_MAX,
        )
        _check_code(response.error_code, "InitProducerId")
        self.generation += 1
        self.producer_id, self.epoch = response.producer_id, response.producer_epoch

    async def _bump_epoch(self) -> None:
        """KIP-360: a new epoch for this producer id, so sequences restart at 0."""
        await self._init_producer_id((self.producer_id, self.epoch))
        self._needs_bump = False

    async def _init(self) -> None:
        await self._attempts(self._init_producer_id, "InitProducerId")
        self._read_version(initializing=True)
        log.info(
            "{txn}: producer id {pid}, epoch {epoch}",
            txn=repr(self),
            pid=self.producer_id,
            epoch=self.epoch,
        )
        self.state = State.READY

    async def _add_partitions(self) -> None:
        while self._new_partitions and self.state in (State.IN_TRANSACTION, State.COMMITTING):
            adding = sorted(self._new_partitions)
            await self._attempts(partial(self._add, adding), "AddPartitionsToTxn")
            self._partitions.update(adding)
            self._new_partitions.difference_update(adding)

    async def _add(self, partitions: list[TopicAndPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        R = AddPartitionsToTxnRequest
        response = await self._request(
            R(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=[R.AddPartitionsToTxnTopic(t, p) for t, p in by_topic.items()],
            ),
            max_version=_ADD_PARTITIONS_MAX,
        )
        _check_code(response.error_code, "AddPartitionsToTxn")
        codes = [
            (t.name, p.partition_index, p.partition_error_code)
            for t in response.results_by_topic_v3_and_below
            for p in t.results_by_partition
        ]
        # The error that is not OPERATION_NOT_ATTEMPTED says what went wrong.
        for topic, index, code in sorted(
            codes, key=lambda c: c[2] == ErrorCode.OPERATION_NOT_ATTEMPTED
        ):
            _check_code(code, f"adding {topic}/{index} to the transaction")

    async def _send_offsets(
        self, offsets: dict[TopicAndPartition, int], group: ConsumerGroupMetadata
    ) -> None:
        if not isinstance(group, ConsumerGroupMetadata):
            raise TypeError(f"group must be a ConsumerGroupMetadata, not {group!r}")

        async def add() -> None:
            response = await self._request(
                AddOffsetsToTxnRequest(
                    transactional_id=self.transactional_id,
                    producer_id=self.producer_id,
                    producer_epoch=self.epoch,
                    group_id=group.group_id,
                )
            )
            _check_code(response.error_code, "AddOffsetsToTxn")

        if self.version >= 2:
            self._offsets_added = True  # TxnOffsetCommit v5 adds them (KIP-890)
        else:
            await self._attempts(add, "AddOffsetsToTxn")
            self._offsets_added = True
        by_topic: dict[str, list[Any]] = {}
        R = TxnOffsetCommitRequest
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                R.TxnOffsetCommitRequestPartition(tp.partition, offset, -1, "")
            )

        async def commit() -> None:
            response = await self._request(
                R(
                    transactional_id=self.transactional_id,
                    group_id=group.group_id,
                    producer_id=self.producer_id,
                    producer_epoch=self.epoch,
                    generation_id=group.generation_id,
                    member_id=group.member_id,
                    group_instance_id=group.group_instance_id,
                    topics=[R.TxnOffsetCommitRequestTopic(t, p) for t, p in by_topic.items()],
                ),
                coordinator=group.group_id,
                max_version=None if self.version >= 2 else _V1_TXN_OFFSET_COMMIT_MAX,
            )
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code in COORDINATOR_MOVED:
                        self._client.reset_consumer_group_metadata(group.group_id)
                    _check_code(p.error_code, f"TxnOffsetCommit of {t.name}/{p.partition_index}")

        await self._attempts(commit, "TxnOffsetCommit")

    async def _complete(self, commit: bool) -> None:
        await self._sends.flush()
        if self._adding is not None:
            await self._adding
        if commit and self.state is not State.COMMITTING:
            assert self.error is not None  # a send failed while flushing
            self.error.raiseException()
        if self._partitions or self._offsets_added:

            async def end() -> None:
                response = await self._request(
                    EndTxnRequest(
                        transactional_id=self.transactional_id,
                        producer_id=self.producer_id,
                        producer_epoch=self.epoch,
                        committed=commit,
                    ),
                    max_version=None if self.version >= 2 else _V1_END_TXN_MAX,
                )
                _check_code(response.error_code, "EndTxn")
                if response.producer_id >= 0:
                    # v5 (KIP-890): the coordinator bumped the epoch (or, at its
                    # end, gave a new id); sequences restart under it.
                    self.generation += 1
                    self.producer_id, self.epoch = response.producer_id, response.producer_epoch

            await self._attempts(end, "EndTxn")
        if self._needs_bump:
            await self._attempts(self._bump_epoch, "InitProducerId")
        self._partitions.clear()
        self._new_partitions.clear()
        self._offsets_added = False
        self.state = State.READY


def _retriable(error: BaseException) -> bool:
    return classify(error) in (Kind.RETRY, Kind.FIND_COORDINATOR)


def _check_code(code: int, what: str) -> None:
    if code:
        raise BrokerResponseError.from_errno(code, what)
