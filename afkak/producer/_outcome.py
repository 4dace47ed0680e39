"""What to do with a batch after its Produce attempt: done, retry, or fail.

Kafka's Java producer is the model.  A broker error is retried when Kafka
marks it retriable; the idempotence errors are retried after fixing the
producer's sequence state (an epoch bump); an error that leaves it unknown
whether the batch was written (connection lost after sending, timeouts) is
retried only with idempotence, where the broker drops the duplicate, or when
the user accepts duplicates.  UNKNOWN_PRODUCER_ID (a broker restarted and
forgot the producer) is retried at a new epoch with the sequences restarted,
as Java's producer and librdkafka do (KIP-360); the sender takes a fresh
producer id instead when even the restarted sequence is refused.
CORRUPT_MESSAGE, retriable in Kafka's table, is not retried: the producer
built the batch and would resend the same bytes.
"""

from __future__ import annotations

import enum

from afkak._broker_errors import BrokerResponseError, ErrorCode
from afkak._errors import BrokerConnectionError, DecodeError, KafkaError
from afkak.client._interlayer import LEADER_MOVED, TOPIC_GONE

# Plain ints: each Produce response's partitions are compared with them.
CORRUPT_MESSAGE = int(ErrorCode.CORRUPT_MESSAGE)
OUT_OF_ORDER_SEQUENCE_NUMBER = int(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
DUPLICATE_SEQUENCE_NUMBER = int(ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
INVALID_PRODUCER_EPOCH = int(ErrorCode.INVALID_PRODUCER_EPOCH)
UNKNOWN_PRODUCER_ID = int(ErrorCode.UNKNOWN_PRODUCER_ID)
PRODUCER_FENCED = int(ErrorCode.PRODUCER_FENCED)
#: Errors after which the batch may or may not have been written.
UNKNOWN_OUTCOME = frozenset(
    {
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
)
#: A batch the broker refuses as too large: split, unless it holds one record.
TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})
#: Errors that mean the broker's metadata moved on: forget the partition's leader.
STALE_LEADER = LEADER_MOVED | TOPIC_GONE


class Action(enum.Enum):
    DONE = "done"  #: the batch is written
    RETRY = "retry"  #: send it again (after a back-off)
    BUMP = "bump"  #: send it again once the partition's sequences restart at a new epoch
    #: the broker refuses the producer id even at a new epoch: send it again
    #: under a fresh id from InitProducerId
    RESET = "reset"
    FAIL = "fail"  #: fail its sends


def for_error_code(code: int, *, idempotent: bool, retry_unknown_outcome: bool) -> Action:
    """The action for a partition's error code in a Produce response."""
    if not code:  # NONE
        return Action.DONE
    if idempotent:
        if code == DUPLICATE_SEQUENCE_NUMBER:
            return Action.DONE
        if code == OUT_OF_ORDER_SEQUENCE_NUMBER:
            return Action.RETRY  # the caller bumps when the gap is real
        if code in (UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED):
            return Action.BUMP
        if code in UNKNOWN_OUTCOME:
            return Action.RETRY
    elif code in UNKNOWN_OUTCOME:
        return Action.RETRY if retry_unknown_outcome else Action.FAIL
    if code == CORRUPT_MESSAGE:
        return Action.FAIL
    error_class = BrokerResponseError.errnos.get(code)
    return Action.RETRY if error_class is not None and error_class.retriable else Action.FAIL


def for_exception(error: BaseException, *, idempotent: bool, retry_unknown_outcome: bool) -> Action:
    """The action for a Produce request that failed as a whole with *error*."""
    if isinstance(error, (BrokerConnectionError, DecodeError)) or (
        isinstance(error, BrokerResponseError) and error.errno in UNKNOWN_OUTCOME
    ):
        # The request may have reached the broker and been written.
        return Action.RETRY if idempotent or retry_unknown_outcome else Action.FAIL
    if isinstance(error, KafkaError) and error.retriable:
        return Action.RETRY
    return Action.FAIL
