"""afkak: a Twisted, Deferred-based client for Apache Kafka.

The public surface: :mod:`afkak.common` (errors, structs, constants), the
compression constants, message construction, and (as layers land) the client,
producer and consumer.
"""

from afkak import common  # noqa: F401  (first: it fixes the public module of re-exported names)
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.message_set import MessageSet, create_message, create_message_set

__version__ = "30.0.0.dev0"

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "MessageSet",
    "create_message",
    "create_message_set",
]
