"""Errors, value types and constants shared by every part of afkak.

This is the public module to import them from; the definitions live in
:mod:`afkak._errors` (client-side errors), :mod:`afkak._broker_errors` (one
class per broker error code) and :mod:`afkak._structs` (request, response and
message tuples).
"""

from __future__ import annotations

from types import ModuleType
from typing import Final

from afkak import _broker_errors, _errors, _structs
from afkak._broker_errors import *  # noqa: F403 -- re-exported, listed in __all__
from afkak._errors import *  # noqa: F403
from afkak._errors import ConnectionError  # noqa: F401 -- importable, kept out of __all__
from afkak._structs import *  # noqa: F403

#: The port a Kafka broker listens on by default.
DefaultKafkaPort = 9092

#: ListOffsets time meaning "the earliest offset still in the log".
OFFSET_EARLIEST = -2
#: ListOffsets time meaning "the log end offset" (the next offset to be written).
OFFSET_LATEST = -1
#: afkak's own marker, not a Kafka value: start from the group's committed offset.
OFFSET_COMMITTED = -101
#: The offset OffsetFetch returns for a partition without a committed offset.
OFFSET_NOT_COMMITTED = -1
#: A timestamp of -1: none given (the broker or producer sets one).
TIMESTAMP_INVALID = -1

#: The error code of a successful response.
KAFKA_SUCCESS = 0

#: Produce ``acks``: the broker sends no response.
PRODUCER_ACK_NOT_REQUIRED = 0
#: Produce ``acks``: respond once the leader has written the records.
PRODUCER_ACK_LOCAL_WRITE = 1
#: Produce ``acks``: respond once all in-sync replicas have the records.
PRODUCER_ACK_ALL_REPLICAS = -1

#: Compression codecs (a record batch's attributes; see :mod:`afkak.codec`).
CODEC_NONE: Final = 0
CODEC_GZIP: Final = 1
CODEC_SNAPPY: Final = 2
CODEC_LZ4: Final = 3
CODEC_ZSTD: Final = 4

#: Record batch timestamp type: the producer set the timestamps.
TIMESTAMP_CREATE_TIME = 0
#: Record batch timestamp type: the broker stamped the time it appended the batch.
TIMESTAMP_LOG_APPEND_TIME = 1


def _defined_in(module: ModuleType) -> list[str]:
    """Public names that ``module`` defines (not those it imports)."""
    name = module.__name__
    return [
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and getattr(value, "__module__", None) == name
    ]


__all__ = sorted(
    {*_defined_in(_errors), *_defined_in(_broker_errors), *_defined_in(_structs)}
    - {"ConnectionError"}  # would shadow the built-in on ``import *``
) + [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "DefaultKafkaPort",
    "KAFKA_SUCCESS",
    "OFFSET_COMMITTED",
    "OFFSET_EARLIEST",
    "OFFSET_LATEST",
    "OFFSET_NOT_COMMITTED",
    "PRODUCER_ACK_ALL_REPLICAS",
    "PRODUCER_ACK_LOCAL_WRITE",
    "PRODUCER_ACK_NOT_REQUIRED",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_INVALID",
    "TIMESTAMP_LOG_APPEND_TIME",
]

# Present the re-exported classes as afkak.common's, as afkak always has: in
# reprs, tracebacks, pickles and the API reference.
for _name in [*__all__, "ConnectionError"]:
    _value = globals()[_name]
    if isinstance(_value, type):
        _value.__module__ = __name__
del _name, _value
