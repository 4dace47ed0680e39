"""afkak: a Twisted, Deferred-based client for Apache Kafka.

The public surface: :class:`KafkaClient`, :class:`Producer`, :class:`Consumer`,
:class:`ConsumerGroup`, :class:`KafkaConsumer`, :class:`ShareConsumer`, the
partitioners, message construction, the compression constants, and :mod:`afkak.common`
(errors, structs, constants).
"""

from afkak import common  # noqa: F401  (first: it fixes the public module of re-exported names)
from afkak._version import __version__
from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import OFFSET_COMMITTED, OFFSET_EARLIEST, OFFSET_LATEST
from afkak.connection import (
    GSSAPI,
    TLS,
    KeyStore,
    OAuthBearer,
    OAuthBearerToken,
    Plain,
    Scram,
    ScramSha256,
    ScramSha512,
    TrustStore,
)
from afkak.consumer import Consumer
from afkak.group import AcknowledgeType, ConsumerGroup, KafkaConsumer, ShareConsumer
from afkak.message_set import MessageSet, create_message, create_message_set
from afkak.partitioner import HashedPartitioner, RoundRobinPartitioner
from afkak.producer import Producer

__title__ = "afkak"
__author__ = "Robert Thille and the afkak contributors"
__license__ = "Apache License 2.0"

__all__ = [
    "AcknowledgeType",
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "Consumer",
    "ConsumerGroup",
    "GSSAPI",
    "HashedPartitioner",
    "KafkaConsumer",
    "KafkaClient",
    "KeyStore",
    "MessageSet",
    "OFFSET_COMMITTED",
    "OFFSET_EARLIEST",
    "OFFSET_LATEST",
    "OAuthBearer",
    "OAuthBearerToken",
    "Plain",
    "Producer",
    "RoundRobinPartitioner",
    "Scram",
    "ScramSha256",
    "ScramSha512",
    "ShareConsumer",
    "TLS",
    "TrustStore",
    "__version__",
    "create_message",
    "create_message_set",
]
