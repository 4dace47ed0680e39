"""afkak's Producer: batching, retries and idempotence on Kafka's modern protocol.

:class:`Producer` is the public class (also :class:`afkak.Producer`);
:class:`RecordMetadata` is what :meth:`Producer.send` fires with.  The
modules behind them are private: ``_options`` (settings), ``_accumulator``
(what was accepted: batches per partition, the buffer bound, what may be sent
when; Kafka's ``RecordAccumulator``), ``_routes`` (topic routes, and where
sends that waited are placed), ``_batch`` and ``_partition`` (one batch,
one partition's batches and sequences), ``_sender`` (requests and retries),
``_outcome`` (error classification), ``_identity`` (producer id and epoch),
``_transaction`` (the transactional producer's state machine).
"""

from afkak.producer._producer import (
    BATCH_SEND_MSG_BYTES,
    BATCH_SEND_MSG_COUNT,
    BATCH_SEND_SECS_COUNT,
    Producer,
)
from afkak.producer._result import RecordMetadata
from afkak.producer._transaction import ConsumerGroupMetadata, State as TransactionState

__all__ = [
    "BATCH_SEND_MSG_BYTES",
    "BATCH_SEND_MSG_COUNT",
    "BATCH_SEND_SECS_COUNT",
    "ConsumerGroupMetadata",
    "Producer",
    "RecordMetadata",
    "TransactionState",
]
