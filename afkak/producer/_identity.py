"""The idempotent producer's identity: a producer id from the cluster, and its epoch.

The id comes from InitProducerId (any broker answers it for a producer
without a transactional id).  The epoch is bumped locally when a
partition's sequence numbers must restart, as Kafka's Java producer and
librdkafka do for an idempotent producer (KIP-360): after a sequence gap
(OUT_OF_ORDER_SEQUENCE_NUMBER) or when a broker lost the producer's state
(UNKNOWN_PRODUCER_ID).  When a bump cannot help (the epoch would overflow,
or the broker refuses even a restarted sequence) a fresh id is fetched.
InitProducerId never carries the current id: brokers that lost it refuse
it (Tansu answers UNKNOWN_SERVER_ERROR), so asking again never loops.

Two refusals fail the sends at once, saying how to turn idempotence off: a
broker without InitProducerId (Kafka before 0.11), and a principal without
IDEMPOTENT_WRITE on the cluster (which Kafka before 2.8 requires; later
brokers accept WRITE on a topic), as confluent-kafka reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak._broker_errors import BrokerResponseError, ErrorCode
from afkak._errors import CancelledError, KafkaError, NoCommonVersionError
from afkak._retry import retrying
from afkak.client import BrokerRequests
from afkak.protocol.messages import InitProducerIdRequest

log = Logger()

MAX_EPOCH = 2**15 - 1
#: Sent for a non-transactional producer, which the broker ignores (Kafka's default).
_TRANSACTION_TIMEOUT_MS = 60_000
#: How a refused idempotent producer can do without.
TURN_OFF = "Producer(..., enable_idempotence=False) turns idempotence off"


class ProducerIdentity:
    """Producer id and epoch, and getting them from the cluster.

    :param on_ready: called once an id has arrived.
    :param on_fatal: called with the failure after a non-retriable error or
        *max_attempts* failed attempts; the next :meth:`ensure` starts over.
    """

    def __init__(
        self,
        client: BrokerRequests,
        reactor: Any,
        backoff: Callable[[int], float],
        max_attempts: int,
        on_ready: Callable[[], None],
        on_fatal: Callable[[Failure], None],
    ) -> None:
        self.producer_id = -1
        self.epoch = -1
        #: How many ids arrived: a fresh id restarts every partition's sequences,
        #: even when a restarted broker hands out the same number again.
        self.generation = 0
        self._client = client
        self._reactor = reactor
        self._backoff = backoff
        self._max_attempts = max_attempts
        self._on_ready = on_ready
        self._on_fatal = on_fatal
        #: InitProducerId and its retries, while they run.
        self._request: Deferred[Any] | None = None

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0

    def ensure(self) -> None:
        """Get a producer id unless there is one or it is being fetched."""
        if self.ready or self._request is not None:
            return
        d = self._request = Deferred.fromCoroutine(
            retrying(
                self._reactor,
                self._init_producer_id,
                self._backoff,
                max_attempts=self._max_attempts,
                what="InitProducerId",
            )
        )
        d.addCallbacks(self._answered, self._failed)

    async def _init_producer_id(self) -> Any:
        try:
            response = await self._client.send_request_to_any_broker(
                InitProducerIdRequest(
                    transactional_id=None,
                    transaction_timeout_ms=_TRANSACTION_TIMEOUT_MS,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
        except KafkaError as e:
            # Each broker tried had no InitProducerId (the cause of "no broker answered").
            if isinstance(e, NoCommonVersionError) or isinstance(e.__cause__, NoCommonVersionError):
                raise NoCommonVersionError(
                    f"the idempotent producer needs Kafka 0.11 or later (InitProducerId): {e};"
                    f" {TURN_OFF}"
                ) from e
            raise
        if response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            raise BrokerResponseError.from_errno(
                response.error_code,
                "the idempotent producer needs IDEMPOTENT_WRITE on the cluster (Kafka before"
                f" 2.8; later brokers accept WRITE on a topic); {TURN_OFF}",
            )
        if response.error_code:
            raise BrokerResponseError.from_errno(response.error_code)
        return response

    def bump(self) -> tuple[int, int] | None:
        """A new epoch, or None while a new id is fetched (the epoch overflowed)."""
        if not self.ready:
            self.ensure()
            return None
        if self.epoch >= MAX_EPOCH - 1:
            self.producer_id = self.epoch = -1
            self.ensure()
            return None
        self.epoch += 1
        return self.producer_id, self.epoch

    def reset(self, producer_id: int) -> None:
        """The broker refuses *producer_id* even at a new epoch: get a fresh id.

        Ignored unless *producer_id* is the current one (batches in flight
        under an id given up report it too).
        """
        if producer_id != self.producer_id or not self.ready:
            return
        log.warn(
            "The broker lost producer id {pid} (epoch {epoch}); asking for a new one",
            pid=producer_id,
            epoch=self.epoch,
        )
        self.producer_id = self.epoch = -1
        self.ensure()

    def stop(self) -> None:
        if self._request is not None:
            self._request.cancel()

    def _answered(self, response: Any) -> None:
        self._request = None
        self.generation += 1
        self.producer_id, self.epoch = response.producer_id, response.producer_epoch
        log.debug("Producer id {pid}, epoch {epoch}", pid=self.producer_id, epoch=self.epoch)
        self._on_ready()

    def _failed(self, failure: Failure) -> None:
        self._request = None
        if not failure.check(CancelledError, defer.CancelledError):  # not stopped
            self._on_fatal(failure)
