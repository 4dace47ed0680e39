"""afkak's Producer: batching, retries and idempotence on Kafka's modern protocol.

:class:`Producer` is the public class (also :class:`afkak.Producer`);
:class:`RecordMetadata` is what :meth:`Producer.send` fires with.  The
modules behind them are private: ``_options`` (settings), ``_batch`` and
``_partition`` (per-partition accumulation), ``_sender`` (requests and
retries), ``_outcome`` (error classification), ``_identity`` (producer id and
epoch).
"""

from afkak.producer._producer import (
    BATCH_SEND_MSG_BYTES,
    BATCH_SEND_MSG_COUNT,
    BATCH_SEND_SECS_COUNT,
    Producer,
)
from afkak.producer._result import RecordMetadata

__all__ = [
    "BATCH_SEND_MSG_BYTES",
    "BATCH_SEND_MSG_COUNT",
    "BATCH_SEND_SECS_COUNT",
    "Producer",
    "RecordMetadata",
]
