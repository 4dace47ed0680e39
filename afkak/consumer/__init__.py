"""afkak's single-partition :class:`Consumer`.

``from afkak.consumer import Consumer``; the default settings are module
constants, as in afkak 21.
"""

from afkak.consumer._consumer import Consumer
from afkak.consumer._options import (
    AUTO_COMMIT_INTERVAL,
    AUTO_COMMIT_MSG_COUNT,
    FETCH_BUFFER_SIZE_BYTES,
    FETCH_MAX_WAIT_TIME,
    FETCH_MIN_BYTES,
    REQUEST_RETRY_MAX_DELAY,
    REQUEST_RETRY_MIN_DELAY,
)
from afkak.consumer._retry import REQUEST_RETRY_FACTOR
from afkak.consumer.deserialize import PreparingDeserializer
from afkak.consumer.positions import OffsetAndMetadata

__all__ = [
    "AUTO_COMMIT_INTERVAL",
    "AUTO_COMMIT_MSG_COUNT",
    "FETCH_BUFFER_SIZE_BYTES",
    "FETCH_MAX_WAIT_TIME",
    "FETCH_MIN_BYTES",
    "REQUEST_RETRY_FACTOR",
    "REQUEST_RETRY_MAX_DELAY",
    "REQUEST_RETRY_MIN_DELAY",
    "Consumer",
    "OffsetAndMetadata",
    "PreparingDeserializer",
]
