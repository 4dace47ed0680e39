"""A share group consumer (KIP-932, Kafka's queues): records, not partitions, are handed out.

:class:`ShareConsumer` joins a share group (:mod:`._share_member`), fetches
with ShareFetch from the leader of each assigned partition in a share
session per broker, and acknowledges each delivered record: ACCEPT (done),
RELEASE (deliver again, to any member) or REJECT (never again).
Acknowledgements ride on the next ShareFetch to the same broker, or go at once
with ShareAcknowledge on :meth:`ShareConsumer.commit` and :meth:`~ShareConsumer.close`.
In the default implicit mode every record of a batch is accepted when the next
batch is asked for; in explicit mode each must be acknowledged first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from twisted.internet.defer import (
    CancelledError,
    Deferred,
    DeferredList,
    FirstError,
    maybeDeferred,
)
from twisted.internet.task import deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._retry import backoff_policy, retrying
from afkak.client import ConsumerClient
from afkak.client._interlayer import LEADER_MOVED, TOPIC_GONE
from afkak.common import (
    BrokerMetadata,
    BrokerResponseError,
    CancelledError as KafkaCancelled,
    KafkaError,
    TopicAndPartition,
)
from afkak.consumer.deserialize import Deserializing, checked, deserializing
from afkak.protocol.messages import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
)

from ._membership_loop import retriable
from ._share_acks import Acknowledgements, AcknowledgeType, ShareRecord
from ._share_member import ShareMember

log = Logger()

MODES = ("implicit", "explicit")
#: Share session epochs: 0 opens a session, -1 closes it.
OPEN_EPOCH, FINAL_EPOCH = 0, -1
#: A partition's error in a ShareFetch that says the client's metadata is stale.
_STALE_LEADER = LEADER_MOVED | TOPIC_GONE


@attrs.define
class _Session:
    """A share session with one broker: its next epoch and the partitions it holds."""

    broker: BrokerMetadata
    epoch: int = OPEN_EPOCH
    partitions: set[TopicAndPartition] = attrs.field(factory=set)

    def advance(self) -> None:
        self.epoch = 1 if self.epoch == 2**31 - 1 else self.epoch + 1


class ShareConsumer:
    """Consume *topics* as a member of share group *group_id*.

    Two ways to use it: give a *processor* ``(consumer, records) -> None or
    Deferred`` and call :meth:`start` (it runs until :meth:`close`), or call
    :meth:`getmany` yourself.  Each :class:`ShareRecord` carries its
    ``delivery_count``.  *acknowledgement_mode* ``"implicit"`` (the default)
    accepts a whole batch when the next one is asked for (a processor that
    fails has its unacknowledged records released instead); ``"explicit"``
    requires :meth:`acknowledge` for every record first.  *max_records* bounds a
    batch per broker; *max_wait_ms* is how long a ShareFetch waits for records.
    *heartbeat_interval_ms* is used until the coordinator gives its own.
    *key_deserializer* and *value_deserializer* (as :class:`~afkak.consumer.Consumer`'s)
    turn each record's key and value into the application's objects before a
    batch is handed out; one that must look something up first (a
    :class:`~afkak.consumer.PreparingDeserializer`, such as a Schema Registry
    deserializer meeting a new schema id) is waited for without blocking the
    reactor.  A deserializer's error fails the call and releases the batch.
    """

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str] = (),
        processor: Callable[[ShareConsumer, list[ShareRecord]], Any] | None = None,
        *,
        acknowledgement_mode: str = "implicit",
        max_records: int = 500,
        max_wait_ms: int = 500,
        heartbeat_interval_ms: int = 5000,
        member_id: str | None = None,
        key_deserializer: Callable[[bytes], Any] | None = None,
        value_deserializer: Callable[[bytes], Any] | None = None,
    ) -> None:
        if not isinstance(group_id, str) or not group_id:
            raise ValueError("group_id must be a non-empty string")
        if isinstance(topics, str):
            raise TypeError("topics must be a sequence of topic names, not a string")
        if acknowledgement_mode not in MODES:
            raise ValueError(f"acknowledgement_mode must be one of {MODES}")
        if max_records <= 0 or max_wait_ms < 0:
            raise ValueError("max_records must be positive and max_wait_ms not negative")
        if processor is not None and not callable(processor):
            raise TypeError("processor must be callable")
        self.client = client
        self.group_id = group_id
        self.processor = processor
        self.acknowledgement_mode = acknowledgement_mode
        self.max_records = max_records
        self.max_wait_ms = max_wait_ms
        self._deserialize = deserializing(
            checked("key_deserializer", key_deserializer),
            checked("value_deserializer", value_deserializer),
        )
        self.member = ShareMember(
            client,
            group_id,
            topics,
            self._assigned,
            heartbeat_interval_ms=heartbeat_interval_ms,
            member_id=member_id,
        )
        self._backoff = backoff_policy(0.1, 1.0, uniform=client.rng.uniform)
        self._acks = Acknowledgements()
        self._sessions: dict[int, _Session] = {}
        #: The broker each partition's records came from: their acknowledgements go there.
        self._source: dict[TopicAndPartition, int] = {}
        self._membership: Deferred[None] | None = None
        self._fatal: Any = None
        self._assignment_waiter: Deferred[None] | None = None
        self._polling: Deferred[list[ShareRecord]] | None = None
        self._inner: Deferred[list[ShareRecord]] | None = None
        self._running: Deferred[None] | None = None
        self._closing: Deferred[None] | None = None

    def __repr__(self) -> str:
        return f"<ShareConsumer group={self.group_id!r} member={self.member.member_id!r}>"

    @property
    def member_id(self) -> str:
        return self.member.member_id

    def assignment(self) -> list[TopicAndPartition]:
        """The partitions the coordinator assigned to this member (shared with others, maybe)."""
        return sorted(self.member.assigned)

    def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to *topics* (replacing the subscription); joins the group if not yet."""
        if isinstance(topics, str):
            raise TypeError("topics must be a sequence of topic names, not a string")
        self._check_open()
        self.member.subscribe(topics)
        self._join()

    # -- membership --------------------------------------------------------------

    def _join(self) -> None:
        if self._membership is None and self.member.topics:
            self._membership = self.member.start()
            self._membership.addErrback(self._membership_failed)

    def _membership_failed(self, failure: Any) -> None:
        failure.cleanFailure()  # a logged event keeps no frames
        log.failure("{consumer}: membership failed", failure, consumer=repr(self))
        self._fatal = failure
        self._wake_assignment_waiter()
        if self._inner is not None:
            self._inner.cancel()

    def _assigned(self, assigned: frozenset[TopicAndPartition]) -> None:
        self._wake_assignment_waiter()

    def _wake_assignment_waiter(self) -> None:
        waiter, self._assignment_waiter = self._assignment_waiter, None
        if waiter is not None:
            waiter.callback(None)

    def _check_open(self) -> None:
        if self._closing is not None:
            raise RuntimeError(f"{self!r} is closed")

    # -- pulling records -------------------------------------------------------------

    def getmany(
        self, timeout_ms: int | None = None, max_records: int | None = None
    ) -> Deferred[list[ShareRecord]]:
        """The next records acquired for this member (``[]`` after *timeout_ms* without any).

        Settles the previous batch first: implicit mode accepts what was not
        acknowledged; explicit mode raises RuntimeError if a record is left.
        The Deferred is cancellable; records a cancelled call acquired come back
        after the broker's acquisition lock times out.
        """
        self._check_open()
        if self._polling is not None:
            raise RuntimeError("getmany() is already running")
        timeout = self.max_wait_ms if timeout_ms is None else timeout_ms
        limit = self.max_records if max_records is None else max_records
        if timeout < 0 or limit <= 0:
            raise ValueError("timeout_ms must not be negative, max_records must be positive")
        self._settle_previous()
        self._join()
        polling = Deferred.fromCoroutine(self._poll(timeout / 1000.0, limit))
        cancelled: list[bool] = []

        def cancel(_: Deferred[list[ShareRecord]]) -> None:
            cancelled.append(True)
            polling.cancel()

        def done(result: Any) -> Any:
            self._polling = self._inner = None
            if isinstance(result, Failure):
                if cancelled:
                    return Failure(CancelledError())
                if self._fatal is not None:
                    return self._fatal
                if result.check(FirstError):
                    return result.value.subFailure  # a fetch failed: its own failure
            return result

        self._inner = polling
        outer = self._polling = Deferred(cancel)
        polling.addBoth(done).chainDeferred(outer)
        return outer

    def _settle_previous(self) -> None:
        if self.acknowledgement_mode == "implicit":
            self._acks.settle_all(AcknowledgeType.ACCEPT)
        elif self._acks.unsettled():
            raise RuntimeError(
                f"explicit acknowledgement: {self._acks.unsettled()} delivered records "
                "are not acknowledged yet"
            )

    async def _poll(self, timeout: float, limit: int) -> list[ShareRecord]:
        reactor = self.client.reactor
        deadline = reactor.seconds() + timeout
        while True:
            if self._fatal is not None:
                self._fatal.raiseException()
            left = max(0.0, deadline - reactor.seconds())
            if not self.member.assigned and not self._acks.pending:
                if left <= 0:
                    return []
                await self._until_assigned(left)
                continue
            try:
                records = await retrying(
                    reactor,
                    lambda: self._fetch_round(
                        int(max(0.0, deadline - reactor.seconds()) * 1000), limit
                    ),
                    self._backoff,
                    retriable=self._refetchable,
                    deadline=deadline,
                    what=f"{self!r}: ShareFetch",
                )
            except KafkaError as e:
                if not self._refetchable(e):
                    raise
                # Failing still, and the next attempt would come after the poll's time.
                await deferLater(reactor, max(0.0, deadline - reactor.seconds()), lambda: None)
                return []
            if records and self._deserialize is not None:
                return await self._deserialized(self._deserialize, records)
            if records or reactor.seconds() >= deadline:
                return records

    async def _deserialized(
        self, deserialize: Deserializing, records: list[ShareRecord]
    ) -> list[ShareRecord]:
        """*records* with their keys and values deserialized; if that fails or
        is cancelled, they are released (the batch is all that is delivered)."""
        try:
            ready = deserialize.prepare_fields(
                lambda field: (r.value if field else r.key for r in records)
            )
            if ready is not None:
                await ready
            records = deserialize.evolved(records)
        except BaseException:
            self._acks.settle_all(AcknowledgeType.RELEASE)
            raise
        self._acks.handed_out(records)
        return records

    def _refetchable(self, error: BaseException) -> bool:
        """A failed fetch round is tried again unless cancelled, fatal, or the group failed."""
        return self._fatal is None and not isinstance(error, KafkaCancelled) and retriable(error)

    def _until_assigned(self, seconds: float) -> Deferred[None]:
        waiter = self._assignment_waiter = Deferred(lambda _: timer.cancel())
        timer = self.client.reactor.callLater(seconds, self._wake_assignment_waiter)
        return waiter.addBoth(lambda result: (timer.active() and timer.cancel(), result)[1])

    async def _fetch_round(self, wait_ms: int, limit: int) -> list[ShareRecord]:
        """One ShareFetch to each broker leading an assigned partition (with its acks)."""
        assigned = set(self.member.assigned)
        leaders = await self.client.leaders_for(assigned) if assigned else {}
        by_node: dict[int, set[TopicAndPartition]] = {}
        for tp, broker in leaders.items():
            by_node.setdefault(broker.node_id, set()).add(tp)
            if broker.node_id not in self._sessions:
                self._sessions[broker.node_id] = _Session(broker)
        for tp in self._acks.pending:
            node = self._source.get(tp)
            if node is not None and node in self._sessions:
                by_node.setdefault(node, set()).add(tp)
        sends = []
        for node, tps in sorted(by_node.items()):
            session = self._sessions[node]
            acks = {} if session.epoch == OPEN_EPOCH else self._take_acks(node, tps)
            request = self._share_fetch(session, tps, acks, wait_ms, limit)
            session.partitions = set(tps)
            session.advance()
            d = self.client.send_request_to_broker(
                session.broker, request, timeout=self.client.timeout + wait_ms / 1000.0
            )
            sends.append(
                d.addCallbacks(self._fetched, self._lost, callbackArgs=(node,), errbackArgs=(node,))
            )
        results = await DeferredList(sends, fireOnOneErrback=True, consumeErrors=True)
        return [record for _, records in results for record in records]

    def _take_acks(self, node: int, tps: set[TopicAndPartition]) -> dict[Any, list[Any]]:
        return self._acks.take(tp for tp in tps if self._source.get(tp) == node)

    def _share_fetch(
        self,
        session: _Session,
        tps: set[TopicAndPartition],
        acks: dict[TopicAndPartition, list[Any]],
        wait_ms: int,
        limit: int,
    ) -> ShareFetchRequest:
        R = ShareFetchRequest
        ids = self.client.topic_ids
        topics: dict[str, list[Any]] = {}
        for tp in sorted(tps):
            batches = [R.AcknowledgementBatch(f, last, t) for f, last, t in acks.get(tp, ())]
            topics.setdefault(tp.topic, []).append(
                R.FetchPartition(partition_index=tp.partition, acknowledgement_batches=batches)
            )
        forgotten: dict[str, list[int]] = {}
        for tp in sorted(session.partitions - tps):
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return R(
            group_id=self.group_id,
            member_id=self.member.member_id,
            share_session_epoch=session.epoch,
            max_wait_ms=wait_ms,
            min_bytes=1,
            max_records=limit,
            batch_size=limit,
            topics=[R.FetchTopic(ids[t], ps) for t, ps in topics.items() if t in ids],
            forgotten_topics_data=[
                R.ForgottenTopic(ids[t], ps) for t, ps in forgotten.items() if t in ids
            ],
        )

    def _fetched(self, response: Any, node: int) -> list[ShareRecord]:
        if response.error_code:
            self._session_lost(node, BrokerResponseError.from_errno(response.error_code))
            return []
        names = {tid: name for name, tid in self.client.topic_ids.items()}
        records: list[ShareRecord] = []
        for topic in response.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for p in topic.partitions:
                tp = TopicAndPartition(name, p.partition_index)
                if p.acknowledge_error_code:
                    log.warn(
                        "{consumer}: acknowledgements of {tp} refused: {error}",
                        consumer=repr(self),
                        tp=tp,
                        error=BrokerResponseError.from_errno(p.acknowledge_error_code),
                    )
                if p.error_code in _STALE_LEADER:
                    self.client.note_stale_leaders([tp])
                elif p.error_code:
                    log.warn("{consumer}: ShareFetch of {tp}: {e}", consumer=repr(self), tp=tp,
                             e=BrokerResponseError.from_errno(p.error_code))  # fmt: skip
                if p.acquired_records:
                    self._source[tp] = node
                    records.extend(self._acks.deliver(tp, p.records, p.acquired_records))
        return records

    def _lost(self, failure: Any, node: int) -> Any:
        """The ShareFetch failed: its epoch and acknowledgements are unknown, start anew."""
        self._session_lost(node, failure.value)
        if failure.check(KafkaError) and not failure.check(KafkaCancelled):
            return []
        return failure

    def _session_lost(self, node: int, error: Any) -> None:
        log.info("{consumer}: share session with broker {node} reset: {error}",
                 consumer=repr(self), node=node, error=str(error))  # fmt: skip
        session = self._sessions.pop(node, None)
        gone = [tp for tp, n in self._source.items() if n == node]
        for tp in gone:
            del self._source[tp]
        self._acks.forget(gone)
        if session is not None:
            self.client.note_stale_leaders(session.partitions)

    # -- acknowledging -------------------------------------------------------------------

    def acknowledge(
        self, record: ShareRecord, kind: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Settle *record*: sent with the next ShareFetch to its broker, or by :meth:`commit`.

        :raises ValueError: the record was not delivered to this consumer, or was settled.
        """
        if not isinstance(record, ShareRecord):
            raise TypeError("acknowledge() takes a ShareRecord")
        self._acks.acknowledge(record, AcknowledgeType(kind))

    def commit(self) -> Deferred[dict[TopicAndPartition, KafkaError | None]]:
        """Send the acknowledgements now (ShareAcknowledge); fires with each partition's result.

        In implicit mode every delivered record is accepted first.  A result
        is None, or the error that refused that partition's acknowledgements.
        """
        self._check_open()
        if self.acknowledgement_mode == "implicit":
            self._acks.settle_all(AcknowledgeType.ACCEPT)
        return self._send_acks(final=False)

    def _send_acks(self, final: bool) -> Deferred[dict[TopicAndPartition, KafkaError | None]]:
        sends = []
        for node, session in sorted(self._sessions.items()):
            if session.epoch == OPEN_EPOCH:
                continue
            acks = self._take_acks(node, set(self._acks.pending))
            if not acks and not final:
                continue
            request = self._share_acknowledge(FINAL_EPOCH if final else session.epoch, acks)
            session.advance()
            d = self.client.send_request_to_broker(session.broker, request)
            sends.append(d.addBoth(self._acknowledged, sorted(acks)))
        results: dict[TopicAndPartition, KafkaError | None] = {}
        done = DeferredList(sends, consumeErrors=True)
        return done.addCallback(lambda outcomes: _merge(results, outcomes))

    def _share_acknowledge(
        self, epoch: int, acks: dict[TopicAndPartition, list[Any]]
    ) -> ShareAcknowledgeRequest:
        R = ShareAcknowledgeRequest
        ids = self.client.topic_ids
        topics: dict[str, list[Any]] = {}
        for tp, batches in sorted(acks.items()):
            topics.setdefault(tp.topic, []).append(
                R.AcknowledgePartition(
                    tp.partition, [R.AcknowledgementBatch(f, last, t) for f, last, t in batches]
                )
            )
        return R(
            group_id=self.group_id,
            member_id=self.member.member_id,
            share_session_epoch=epoch,
            topics=[R.AcknowledgeTopic(ids[t], ps) for t, ps in topics.items() if t in ids],
        )

    def _acknowledged(
        self, response: Any, sent: list[TopicAndPartition]
    ) -> dict[TopicAndPartition, KafkaError | None]:
        if not isinstance(response, ShareAcknowledgeResponse):
            if not isinstance(response.value, KafkaError):
                response.raiseException()
            return dict.fromkeys(sent, response.value)
        if response.error_code:
            top = BrokerResponseError.from_errno(response.error_code)
            return dict.fromkeys(sent, top)
        names = {tid: name for name, tid in self.client.topic_ids.items()}
        results: dict[TopicAndPartition, KafkaError | None] = dict.fromkeys(sent)
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicAndPartition(names.get(topic.topic_id, ""), p.partition_index)
                results[tp] = BrokerResponseError.from_errno(p.error_code) if p.error_code else None
        return results

    # -- the processor form, and closing -----------------------------------------------------

    def start(self) -> Deferred[None]:
        """Run the processor on each batch until :meth:`close`; fires then (or fails, fatally)."""
        self._check_open()
        if self.processor is None:
            raise ValueError("start() needs a processor; call getmany() instead")
        if self._running is not None:
            raise RuntimeError("already started")
        self._join()
        self._running = Deferred.fromCoroutine(self._process())
        return self._running

    async def _process(self) -> None:
        assert self.processor is not None
        while self._closing is None:
            try:
                records = await self.getmany()
            except Exception:
                if self._closing is not None:
                    return
                raise
            if not records:
                continue
            try:
                await maybeDeferred(self.processor, self, records)
            except Exception:
                failure = Failure()
                failure.cleanFailure()
                log.failure(
                    "{consumer}: the processor failed; releasing", failure, consumer=repr(self)
                )
                self._acks.settle_all(AcknowledgeType.RELEASE)

    def close(self) -> Deferred[None]:
        """Settle and send the acknowledgements, close the share sessions, leave the group.

        Implicit mode accepts the last batch; explicit mode releases what was
        not acknowledged.  Fires when done (idempotent).
        """
        if self._closing is None:
            self._closing = Deferred()
            Deferred.fromCoroutine(self._close()).chainDeferred(self._closing)
        d: Deferred[None] = Deferred()

        def fire(result: Any) -> Any:
            d.callback(None)
            return result

        self._closing.addBoth(fire)
        return d

    def _running_failed(self, failure: Failure) -> None:
        failure.cleanFailure()  # a logged event keeps no frames
        log.failure("{consumer}", failure, consumer=repr(self))

    async def _close(self) -> None:
        if self._polling is not None:
            self._polling.cancel()
        if self._running is not None:
            self._running.addErrback(self._running_failed)
        last = AcknowledgeType.ACCEPT if self.acknowledgement_mode == "implicit" else None
        self._acks.settle_all(last or AcknowledgeType.RELEASE)
        await self._send_acks(final=True)
        self._sessions.clear()
        if self._membership is not None:
            self.member.stop()
            await self._membership.addErrback(lambda _: None)


def _merge(
    results: dict[TopicAndPartition, KafkaError | None], outcomes: list[Any]
) -> dict[TopicAndPartition, KafkaError | None]:
    for ok, value in outcomes:
        if ok:
            results.update(value)
    return results
