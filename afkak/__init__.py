"""afkak: a Twisted, Deferred-based client for Apache Kafka.

The public surface: :class:`KafkaClient`, :class:`Producer`, :class:`Consumer`,
:class:`ConsumerGroup`, :class:`KafkaConsumer`, :class:`ShareConsumer`, the
partitioners, message construction, the compression constants, and :mod:`afkak.common`
(errors, structs, constants).
"""

from afkak import common  # noqa: F401  (first: it fixes the public module of re-exported names)
from afkak._lazy import lazy_names
from afkak._version import __version__
from afkak.common import OFFSET_COMMITTED, OFFSET_EARLIEST, OFFSET_LATEST

#: Where each public name lives, imported on first use (PEP 562): ``import afkak``
#: then costs what the application uses, not the whole library (a Spark planner
#: or a command-line start pays for the client alone).
_LAZY = {
    "KafkaClient": "afkak.client",
    "CODEC_GZIP": "afkak.codec",
    "CODEC_LZ4": "afkak.codec",
    "CODEC_NONE": "afkak.codec",
    "CODEC_SNAPPY": "afkak.codec",
    "CODEC_ZSTD": "afkak.codec",
    "GSSAPI": "afkak.connection",
    "TLS": "afkak.connection",
    "KeyStore": "afkak.connection",
    "OAuthBearer": "afkak.connection",
    "OAuthBearerToken": "afkak.connection",
    "Plain": "afkak.connection",
    "Scram": "afkak.connection",
    "ScramSha256": "afkak.connection",
    "ScramSha512": "afkak.connection",
    "TrustStore": "afkak.connection",
    "Consumer": "afkak.consumer",
    "AcknowledgeType": "afkak.group",
    "ConsumerGroup": "afkak.group",
    "KafkaConsumer": "afkak.group",
    "ShareConsumer": "afkak.group",
    "MessageSet": "afkak.message_set",
    "create_message": "afkak.message_set",
    "create_message_set": "afkak.message_set",
    "HashedPartitioner": "afkak.partitioner",
    "RoundRobinPartitioner": "afkak.partitioner",
    "Producer": "afkak.producer",
}


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

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
