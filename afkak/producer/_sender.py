"""Turning ready batches into Produce requests, and their answers into results.

A drain runs when a batch may have become sendable (linger expired, batch
full, a response freed an in-flight slot, a back-off ended).  The
:class:`~._accumulator.RecordAccumulator` says which partitions may go and
hands over their next batches; the sender finds missing leaders and sends
one Produce request per broker per round, while partitions still have
batches and in-flight room.  Each
answer is applied per partition: success fires the sends, errors are
classified by :mod:`._outcome` (retry after a back-off, restart the
sequences at a new epoch, or fail); a batch refused as too large is split in
two (:func:`._split.split_batch`) and sent again at once.  Retries wait by the
producer's :mod:`afkak._retry` policy (Kafka's ``retry.backoff.ms`` doubling to
``retry.backoff.max.ms``); a batch not acknowledged within the delivery
timeout (``delivery.timeout.ms``, counted from when it was opened) fails.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, ErrorCode
from afkak._errors import CancelledError, DeliveryTimeoutError
from afkak._retry import is_retriable
from afkak.client import ProducerClient
from afkak.client._interlayer import ProduceCall
from afkak.records import gc_paused

from ._accumulator import NEVER as _NEVER, RecordAccumulator
from ._batch import ProducerBatch
from ._identity import ProducerIdentity
from ._options import Options
from ._outcome import (
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    STALE_LEADER,
    TOO_LARGE,
    Action,
    for_error_code,
    for_exception,
)
from ._partition import PartitionState

log = Logger()

#: Produce v3 is the first with record batches v2.
MIN_PRODUCE_VERSION = 3


class Sender:
    """Sends the accumulator's batches and settles them.

    Drains when woken (a batch became sendable, linger expired, a response
    freed an in-flight slot, a back-off ended): expired batches fail, the
    producer id is fetched if needed, then each round of
    :meth:`RecordAccumulator.drain <._accumulator.RecordAccumulator.drain>`
    becomes one Produce request per broker.
    """

    def __init__(
        self, client: ProducerClient, options: Options, accumulator: RecordAccumulator
    ) -> None:
        self._client = client
        self._reactor = client.reactor
        self._options = options
        self._accumulator = accumulator
        self._timer: Any = None
        self._draining = False
        self._again = False
        #: A response's batches are being settled (their sends fire): the
        #: drain that follows sends what their callbacks appended.
        self._settling = False
        self._requests: set[Deferred[Any]] = set()
        self._routing: Deferred[Any] | None = None
        self._stopped = False
        self._backoff = options.retry_policy(client.rng.uniform)
        self._delivery_timeout = options.delivery_timeout
        self.transaction = accumulator.transaction
        self._request_timeout = client.timeout + options.ack_timeout_ms / 1000.0
        self.sensors = accumulator.sensors

    # -- scheduling ----------------------------------------------------------

    def wake(self, delay: float = 0.0) -> None:
        """Drain in *delay* seconds (or sooner, if a drain is already due)."""
        if self._stopped:
            return
        if not delay and self._settling:
            return  # the drain that follows the settling is due anyway
        timer = self._timer
        if timer is not None:
            if timer.getTime() <= self._reactor.seconds() + delay:
                return
            timer.cancel()
        self._timer = self._reactor.callLater(delay, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer = None
        self.drain()

    def appended(self) -> None:
        """A send appended records outside the open batches' fast path (a new batch).

        When that made a drain due at once (lingering 0 ms) and nothing is in
        flight, drain now: an idle producer writes a lone record in the
        reactor turn of its ``send()``, not the next one, as Java's sender
        wakes for a new batch.  With requests in flight the drain stays at the
        next turn (or the next response), where the sends made meanwhile join
        the batch.
        """
        timer = self._timer
        if (
            timer is None
            or self._requests
            or self._settling
            or self._draining
            or timer.getTime() > self._reactor.seconds()
        ):
            return
        self.drain()

    # -- draining ------------------------------------------------------------

    def drain(self) -> None:
        if self._stopped:
            return
        if self._draining:
            self._again = True
            return
        timer = self._timer
        if timer is not None and timer.getTime() <= self._reactor.seconds():
            # Due now: this drain does its work (and arms what it still needs).
            timer.cancel()
            self._timer = None
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
        accumulator = self._accumulator
        expired, expires_at = accumulator.expired(now)
        for batch in expired:
            accumulator.fail(batch, self._timed_out(batch))
        if expires_at < _NEVER:
            self.wake(expires_at - now)
        identity = accumulator.identity
        if identity is not None and not identity.ready:
            identity.ensure()
            return
        wake_at = accumulator.ready(now)
        if wake_at < _NEVER:
            self.wake(max(0.0, wake_at - now))
        leaders = self._client.topics_to_brokers
        requests, leaderless = accumulator.drain(leaders)
        if leaderless:
            self._find_leaders(leaderless)
        while requests:
            for broker, batches in requests.items():
                self._send(broker, batches)
            if self._stopped:
                break
            requests, _ = accumulator.drain(leaders)

    def _timed_out(self, batch: ProducerBatch) -> Failure:
        reason = "" if batch.last_error is None else f"; last error: {batch.last_error}"
        return Failure(
            DeliveryTimeoutError(
                f"{batch.count or len(batch.values)} record(s) for {batch.topic}/{batch.partition}"
                f" not acknowledged within the delivery timeout ({self._delivery_timeout:g} s,"
                f" {batch.attempts} attempt(s)){reason}"
            )
        )

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
                if part.route_failures >= self._options.max_attempts or not is_retriable(
                    result.value
                ):
                    part.route_failures = 0
                    self._accumulator.fail_partition(part, result)
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
        txn = self.transaction
        call = ProduceCall(
            batches,  # each names its partition: no payload per batch
            options.acks,
            options.ack_timeout_ms,
            encoded,
            self._client.topic_ids,
            None if txn is None else txn.transactional_id,
            None if txn is None else txn.produce_max_version,
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
                self._accumulator.fail(batch, failure)
            return
        settling, self._settling = self._settling, True
        try:
            if isinstance(result, Failure):
                self._request_failed(result, batches)
            elif self._options.acks == 0:
                for batch in batches:
                    batch.part.route_failures = 0
                    self.sensors.written(batch.topic, batch.count, len(batch.data or b""))
                    batch.succeed_unacknowledged()
                    self._accumulator.release(batch)
            else:
                self.sensors.answered(result.throttle_time_ms)
                self._apply_response(result, batches, call)
        finally:
            self._settling = settling
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
                error = BrokerResponseError.from_errno(
                    ErrorCode.NETWORK_EXCEPTION, "the response omitted the partition"
                )
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
            if code in TOO_LARGE and batch.count > 1:
                log.info(
                    "{n} records to {topic}/{partition} are too large for one batch ({error}):"
                    " sending them in two",
                    n=batch.count,
                    topic=batch.topic,
                    partition=batch.partition,
                    error=ErrorCode(code).name,
                )
                self._accumulator.split(batch)
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
                self._client.note_new_leader(
                    part.key, answer.current_leader, response.node_endpoints
                )
                self._client.note_stale_leaders([part.key])
            if code == OUT_OF_ORDER_SEQUENCE_NUMBER and self._is_gap(part, batch):
                action = Action.BUMP
            elif action is Action.BUMP and batch.base_sequence == 0:
                # Refused although its sequence (re)started: a new epoch cannot
                # help (a broker that lost the id, or fences local bumps).
                action = Action.RESET
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
        # Firing a batch's sends (thousands, each making the objects its
        # callbacks make) would set off collections that mostly scan what the
        # application keeps (gathered Deferreds and their results); one at
        # the end instead (issue 28).  A lone send (an awaited one) fires as is.
        if len(batch.waiters) + len(batch.record_waiters) > 1:
            with gc_paused():
                batch.succeed(base_offset, log_append_time, self._options.batch_send)
        else:
            batch.succeed(base_offset, log_append_time, self._options.batch_send)
        self._accumulator.release(batch)

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
            if self._accumulator.identity is not None:
                part.bump = True  # later sequences must not wait for this batch's
            self._accumulator.fail(batch, failure)
            return
        delay = self._backoff(batch.attempts)
        now = self._reactor.seconds()
        batch.last_error = failure.getErrorMessage()
        if now >= batch.opened + self._delivery_timeout:
            if self._accumulator.identity is not None:
                part.bump = True
            self._accumulator.fail(batch, self._timed_out(batch))
            return
        identity = self._accumulator.identity
        if action is Action.BUMP:
            part.bump = True
        elif action is Action.RESET and isinstance(identity, ProducerIdentity):
            identity.reset(batch.producer_id)
        self.sensors.retried(batch.topic, batch.count)
        self._accumulator.requeue(batch, now + delay)
        self.wake(delay)

    def stop(self) -> None:
        """Stop sending: requests in flight are cancelled (their batches fail)."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        identity = self._accumulator.identity
        if identity is not None:
            identity.stop()
        if self._routing is not None:
            self._routing.cancel()
        for d in list(self._requests):
            d.cancel()
