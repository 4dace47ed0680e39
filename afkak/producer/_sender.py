"""Turning ready batches into Produce requests, and their answers into results.

A drain runs when a batch may have become sendable (linger expired, batch
full, a response freed an in-flight slot, a back-off ended).  It seals the
open batches that may go, finds the leaders, and sends one Produce request
per broker carrying the next batch of each of its ready partitions, then
another round while partitions still have batches and in-flight room.  Each
answer is applied per partition: success fires the sends, errors are
classified by :mod:`._outcome` (retry after a back-off, restart the
sequences at a new epoch, or fail).  Retries wait by the producer's
:mod:`afkak._retry` policy (Kafka's ``retry.backoff.ms`` doubling to
``retry.backoff.max.ms``); a batch not acknowledged within the delivery
timeout (``delivery.timeout.ms``, counted from when it was opened) fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError
from afkak._errors import CancelledError, DeliveryTimeoutError
from afkak.client import ProduceCall, ProducerClient
from afkak.common import ProduceRequest
from afkak.metrics import ProducerSensors, registry_of

from ._batch import ProducerBatch
from ._identity import ProducerIdentity
from ._options import Options
from ._outcome import (
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    STALE_LEADER,
    Action,
    for_error_code,
    for_exception,
)
from ._partition import PartitionState
from ._transaction import TransactionManager

log = Logger()

#: Produce v3 is the first with record batches v2.
MIN_PRODUCE_VERSION = 3
_NEVER = float("inf")


class Sender:
    """Sends the batches of a producer's partitions and settles them.

    :param release: called with each batch that is settled (written or
        failed), after its sends fired, to free its buffer space.
    """

    def __init__(
        self,
        client: ProducerClient,
        options: Options,
        release: Callable[[ProducerBatch], None],
        transaction: TransactionManager | None = None,
    ) -> None:
        self._client = client
        self._reactor = client.reactor
        self._options = options
        self._release = release
        self._limit = options.max_in_flight
        #: Partitions with an open or ready batch.
        self.active: set[PartitionState] = set()
        self._timer: Any = None
        self._draining = False
        self._again = False
        self._expire_all = False
        #: While a flush waits, every drain sends every open batch.
        self.flushing = False
        self._unsent_count = 0
        self._unsent_bytes = 0
        self._requests: set[Deferred[Any]] = set()
        self._routing: Deferred[Any] | None = None
        self._stopped = False
        self._backoff = options.retry_policy()
        self._delivery_timeout = options.delivery_timeout
        self.identity: ProducerIdentity | TransactionManager | None = None
        #: A transactional producer's transaction: its identity too.
        self.transaction = transaction
        if transaction is not None:
            self.identity = transaction
            transaction.wake = self.wake
        elif options.idempotent:
            self.identity = ProducerIdentity(
                client,
                self._reactor,
                self._backoff,
                options.max_attempts,
                self.wake,
                self._identity_failed,
            )
        self._request_timeout = client.timeout + options.ack_timeout_ms / 1000.0
        #: Recorded per request and per batch (``producer-metrics``).
        self.sensors = registry_of(client).shared(ProducerSensors)

    # -- scheduling ----------------------------------------------------------

    def wake(self, delay: float = 0.0) -> None:
        """Drain in *delay* seconds (or sooner, if a drain is already due)."""
        if self._stopped:
            return
        timer = self._timer
        if timer is not None:
            if timer.getTime() <= self._reactor.seconds() + delay:
                return
            timer.cancel()
        self._timer = self._reactor.callLater(delay, self._timer_fired)

    def activate(self, part: PartitionState) -> None:
        """A partition has a new batch; get a producer id soon if one is needed."""
        self.active.add(part)
        if self.identity is not None and not self.identity.ready:
            self.wake()  # the drain asks for it (not now: this is inside an append)

    def expire_lingers(self) -> None:
        """Let every open batch go at the next drain (flush, batch triggers)."""
        self._expire_all = True
        self.wake()

    def count_unsent(self, n: int, size: int) -> None:
        """Batch mode: count appended records; send everything once a trigger is reached."""
        self._unsent_count += n
        self._unsent_bytes += size
        options = self._options
        if (options.batch_every_n and self._unsent_count >= options.batch_every_n) or (
            options.batch_every_b and self._unsent_bytes >= options.batch_every_b
        ):
            self.expire_lingers()

    def _timer_fired(self) -> None:
        self._timer = None
        self.drain()

    # -- draining ------------------------------------------------------------

    def drain(self) -> None:
        if self._stopped:
            return
        if self._draining:
            self._again = True
            return
        self._draining = True
        try:
            self._again = True
            while self._again:
                self._again = False
                self._drain_once()
        finally:
            self._draining = False

    def _drain_once(self) -> None:
        now = self._reactor.seconds()
        options = self._options
        linger = options.linger
        identity = self.identity
        expires_at = self._expire(now)
        if expires_at < _NEVER:
            self.wake(expires_at - now)
        if identity is not None and not identity.ready:
            identity.ensure()
            return
        expire_all = self._expire_all or self.flushing
        self._expire_all = False
        batch_mode = options.batch_send
        if batch_mode:
            # afkak's batch mode sends nothing until a trigger fires (count, bytes,
            # or its timer), then everything: full batches sealed meanwhile wait too.
            if not expire_all and linger is not None:
                expire_all = any(_first_created(p) + linger <= now for p in self.active if _held(p))
            if expire_all:
                self._unsent_count = self._unsent_bytes = 0
                for part in self.active:
                    for waiting in part.ready:
                        waiting.created = -_NEVER
        wake_at = _NEVER
        sendable: list[PartitionState] = []
        for part in list(self.active):
            batch = part.open
            if batch is not None:
                if expire_all:
                    batch.created = -_NEVER
                if part.retry_at > now:
                    wake_at = min(wake_at, part.retry_at)
                elif not part.ready and part.in_flight < self._limit:
                    if batch.created == -_NEVER:
                        part.seal()
                    elif linger is not None:
                        due = batch.created + linger
                        if due <= now:
                            part.seal()
                        else:
                            wake_at = min(wake_at, due)
            if not part.ready:
                if part.open is None:
                    self.active.discard(part)
                continue
            if part.retry_at > now:
                wake_at = min(wake_at, part.retry_at)
                continue
            if batch_mode and _held(part):
                if linger is not None:
                    wake_at = min(wake_at, _first_created(part) + linger)
                continue
            sendable.append(part)
        if wake_at < _NEVER:
            self.wake(max(0.0, wake_at - now))
        if sendable:
            self._send_rounds(sendable)

    def _expire(self, now: float) -> float:
        """Fail the batches whose delivery timeout passed; when the next one expires."""
        timeout = self._delivery_timeout
        next_expiry = _NEVER
        for part in list(self.active):
            oldest = part.oldest()
            if oldest is None:
                continue
            if oldest + timeout <= now:
                expired = part.expire(now - timeout)
                for batch in expired:
                    if batch.data is not None and self.identity is not None:
                        part.bump = True  # later sequences must not wait for this batch's
                    self._settle(batch, self._timed_out(batch))
                oldest = part.oldest()
                if oldest is None:
                    if not part.in_flight:
                        self.active.discard(part)
                    continue
            next_expiry = min(next_expiry, oldest + timeout)
        return next_expiry

    def _timed_out(self, batch: ProducerBatch) -> Failure:
        reason = "" if batch.last_error is None else f"; last error: {batch.last_error}"
        return Failure(
            DeliveryTimeoutError(
                f"{batch.count or len(batch.values)} record(s) for {batch.topic}/{batch.partition}"
                f" not acknowledged within the delivery timeout ({self._delivery_timeout:g} s,"
                f" {batch.attempts} attempt(s)){reason}"
            )
        )

    def _send_rounds(self, parts: list[PartitionState]) -> None:
        leaders = self._client.topics_to_brokers
        routed = []
        missing = []
        for part in parts:
            broker = leaders.get(part.key)
            if broker is None:
                missing.append(part)
            else:
                routed.append((part, broker))
        if missing:
            self._find_leaders(missing)
        while routed:
            requests: dict[Any, list[ProducerBatch]] = {}
            still = []
            for part, broker in routed:
                batch = self._take(part)
                if batch is not None:
                    requests.setdefault(broker, []).append(batch)
                    if part.ready:
                        still.append((part, broker))
            routed = still
            for broker, batches in requests.items():
                self._send(broker, batches)
            if not requests or self._stopped:
                break

    def _take(self, part: PartitionState) -> ProducerBatch | None:
        """The partition's next batch to send now, if any may go."""
        if not part.ready or part.in_flight >= self._limit:
            return None
        head = part.ready[0]
        if head.attempts and part.in_flight:
            return None  # a retry goes alone, after what is in flight settled
        identity = self.identity
        txn = self.transaction
        if txn is not None:
            if not txn.partition_added(part.key):
                return None  # wakes the sender once the partition joined
            if (part.producer_id, part.producer_epoch) != (txn.producer_id, txn.epoch):
                if part.in_flight:
                    return None
                # A new epoch (KIP-360, after an abort): sequences restart.
                part.restart_sequences(txn.producer_id, txn.epoch)
        if identity is not None:
            if part.bump or part.producer_id != identity.producer_id:
                if part.in_flight:
                    return None
                if part.bump and part.producer_id == identity.producer_id:
                    fresh = identity.bump()
                    if fresh is None:
                        return None
                    part.restart_sequences(*fresh)
                else:
                    part.restart_sequences(identity.producer_id, identity.epoch)
            part.ready.popleft()
            if head.data is None:
                head.encode(
                    self._options.codec,
                    part.producer_id,
                    part.producer_epoch,
                    part.take_sequence(len(head.values)),
                    txn is not None,
                )
        else:
            part.ready.popleft()
            if head.data is None:
                head.encode(self._options.codec, -1, -1, -1)
        part.in_flight += 1
        head.attempts += 1
        return head

    def _find_leaders(self, parts: list[PartitionState]) -> None:
        if self._routing is not None:
            return
        d = self._routing = self._client.leaders_for([p.key for p in parts])
        d.addBoth(self._leaders_found, parts)

    def _leaders_found(self, result: Any, parts: list[PartitionState]) -> None:
        self._routing = None
        if self._stopped:
            return
        if isinstance(result, Failure):
            # The metadata was reloaded: partitions that have a leader now go on.
            leaders = self._client.topics_to_brokers
            now = self._reactor.seconds()
            for part in parts:
                if leaders.get(part.key) is not None:
                    continue
                part.route_failures += 1
                if part.route_failures >= self._options.max_attempts:
                    part.route_failures = 0
                    self._fail_waiting(part, result)
                else:
                    part.retry_at = now + self._backoff(part.route_failures)
        else:
            for part in parts:
                part.route_failures = 0
        self.wake()

    # -- requests --------------------------------------------------------------

    def _send(self, broker: Any, batches: list[ProducerBatch]) -> None:
        options = self._options
        encoded: dict[tuple[str, int], bytes] = {}
        for b in batches:
            assert b.data is not None  # batches are encoded before they are sent
            encoded[b.topic, b.partition] = b.data
        call = ProduceCall(
            [ProduceRequest(b.topic, b.partition, ()) for b in batches],
            options.acks,
            options.ack_timeout_ms,
            encoded,
            self._client.topic_ids,
            None if self.transaction is None else self.transaction.transactional_id,
        )
        d = self._client.send_request_to_broker(
            broker,
            call,
            min_version=MIN_PRODUCE_VERSION,
            expect_response=options.acks != 0,
            timeout=self._request_timeout,
        )
        self.sensors.request(batches)
        if not d.called:
            self._requests.add(d)
        d.addBoth(self._answered, d, batches, call)

    def _answered(
        self, result: Any, d: Deferred[Any], batches: list[ProducerBatch], call: ProduceCall
    ) -> None:
        self._requests.discard(d)
        for batch in batches:
            batch.part.in_flight -= 1
        if self._stopped:
            failure = Failure(CancelledError(request_sent=True, message="the producer stopped"))
            for batch in batches:
                self._settle(batch, failure)
            return
        if isinstance(result, Failure):
            self._request_failed(result, batches)
        elif self._options.acks == 0:
            for batch in batches:
                batch.part.route_failures = 0
                self.sensors.written(batch.topic, batch.count, len(batch.data or b""))
                batch.succeed_unacknowledged()
                self._release(batch)
        else:
            self.sensors.answered(result.throttle_time_ms)
            self._apply_response(result, batches, call)
        self.drain()

    def _request_failed(self, failure: Failure, batches: list[ProducerBatch]) -> None:
        options = self._options
        action = for_exception(
            failure.value,
            idempotent=options.idempotent,
            retry_unknown_outcome=options.retry_unknown_outcome,
        )
        if action is Action.RETRY:
            # The broker may be gone: look its partitions' leaders up again.
            self._client.note_stale_leaders([b.part.key for b in batches])
        for batch in batches:
            self._after(batch, action, failure)

    def _apply_response(
        self, response: Any, batches: list[ProducerBatch], call: ProduceCall
    ) -> None:
        answers = {}
        for t in response.responses:
            try:
                name = call.topic_of(t)
            except BrokerResponseError:
                continue  # an id we did not send: its batches count as omitted
            for p in t.partition_responses:
                answers[name, p.index] = p
        options = self._options
        for batch in batches:
            answer = answers.get((batch.topic, batch.partition))
            if answer is None:
                error = BrokerResponseError.from_errno(13, "the response omitted the partition")
                self._after(
                    batch,
                    for_exception(
                        error,
                        idempotent=options.idempotent,
                        retry_unknown_outcome=options.retry_unknown_outcome,
                    ),
                    Failure(error),
                )
                continue
            code = answer.error_code
            if not code:
                self._succeeded(batch, answer.base_offset, answer.log_append_time_ms)
                continue
            action = for_error_code(
                code,
                idempotent=options.idempotent,
                retry_unknown_outcome=options.retry_unknown_outcome,
            )
            if action is Action.DONE:  # a duplicate of a batch written before
                self._succeeded(batch, answer.base_offset, answer.log_append_time_ms)
                continue
            part = batch.part
            if code in STALE_LEADER:
                self._client.note_stale_leaders([part.key])
            if code == OUT_OF_ORDER_SEQUENCE_NUMBER and self._is_gap(part, batch):
                action = Action.BUMP
            error = BrokerResponseError.from_errno(
                code, answer.error_message or f"producing to {batch.topic}/{batch.partition}"
            )
            self._after(batch, action, Failure(error))

    def _is_gap(self, part: PartitionState, batch: ProducerBatch) -> bool:
        """Whether OUT_OF_ORDER_SEQUENCE_NUMBER means the broker lost our sequence.

        It does when the batch is the next one the broker should expect; for a
        later batch, an earlier one is still unsettled (being retried).
        """
        return (
            batch.producer_epoch == part.producer_epoch and batch.base_sequence == part.acked_next
        )

    def _succeeded(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        part = batch.part
        part.route_failures = 0
        if batch.producer_epoch == part.producer_epoch and batch.base_sequence >= 0:
            part.acked_next = (batch.last_sequence + 1) % (2**31)
        self.sensors.written(batch.topic, batch.count, len(batch.data or b""))
        batch.succeed(base_offset, log_append_time)
        self._release(batch)

    def _after(self, batch: ProducerBatch, action: Action, failure: Failure) -> None:
        part = batch.part
        if action in (Action.BUMP, Action.RESET) and self.transaction is not None:
            # A transaction's producer id and epoch are the coordinator's: the
            # transaction fails instead (fatal when fenced, else abortable and
            # re-epoched), as Kafka's producer does.
            action = Action.FAIL
        if action is Action.FAIL or batch.attempts >= self._options.max_attempts:
            if batch.attempts > 1 or action is not Action.FAIL:
                log.warn(
                    "Producing to {topic}/{partition} failed after {n} attempts: {error}",
                    topic=batch.topic,
                    partition=batch.partition,
                    n=batch.attempts,
                    error=failure.getErrorMessage(),
                )
            if self.identity is not None:
                part.bump = True  # later sequences must not wait for this batch's
            self._settle(batch, failure)
            return
        delay = self._backoff(batch.attempts)
        now = self._reactor.seconds()
        batch.last_error = failure.getErrorMessage()
        if now >= batch.opened + self._delivery_timeout:
            if self.identity is not None:
                part.bump = True
            self._settle(batch, self._timed_out(batch))
            return
        if action is Action.BUMP:
            part.bump = True
        elif action is Action.RESET and isinstance(self.identity, ProducerIdentity):
            self.identity.reset(batch.producer_id)
        self.sensors.retried(batch.topic, batch.count)
        part.requeue(batch)
        self.active.add(part)
        part.retry_at = max(part.retry_at, now + delay)
        self.wake(delay)

    def _settle(self, batch: ProducerBatch, failure: Failure) -> None:
        self.sensors.failed(batch.topic, batch.count or len(batch.values or ()))
        batch.fail(failure)
        self._release(batch)
        if self.transaction is not None:
            self.transaction.send_failed(failure)

    # -- failures of everything waiting ------------------------------------------

    def _fail_waiting(self, part: PartitionState, failure: Failure) -> None:
        for batch in part.drop_all():
            self._settle(batch, failure)
        self.active.discard(part)

    def _identity_failed(self, failure: Failure) -> None:
        log.error(
            "No producer id for the idempotent producer: {error}", error=failure.getErrorMessage()
        )
        for part in list(self.active):
            self._fail_waiting(part, failure)

    def fail_unsent(self, failure: Failure) -> None:
        """Fail every batch not in flight (an aborted or failed transaction's)."""
        for part in list(self.active):
            self._fail_waiting(part, failure)

    def stop(self, failure: Failure) -> list[ProducerBatch]:
        """Stop sending; fail what is in flight with *failure*; return the waiting batches."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.identity is not None:
            self.identity.stop()
        if self._routing is not None:
            self._routing.cancel()
        for d in list(self._requests):
            d.cancel()
        waiting: list[ProducerBatch] = []
        for part in self.active:
            waiting.extend(part.drop_all())
        self.active.clear()
        return waiting


def _held(part: PartitionState) -> bool:
    """Batch mode: the partition's next batch waits for a trigger (never sent, not released)."""
    if part.ready:
        head = part.ready[0]
        return head.attempts == 0 and head.created != -_NEVER
    return part.open is not None and part.open.created != -_NEVER


def _first_created(part: PartitionState) -> float:
    """When the partition's oldest unsent batch started."""
    return part.ready[0].created if part.ready else part.open.created  # type: ignore[union-attr]
