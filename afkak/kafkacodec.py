"""afkak 21's ``afkak.kafkacodec``: message construction under its old import path.

afkak 21 encoded every request here by hand for the 2015 wire format.  afkak
now builds requests from Kafka's schemas (:mod:`afkak.protocol`) and writes
record batches v2 (:mod:`afkak.records`), so only what applications used is
kept: the message constructors, the API key numbers of :class:`KafkaCodec`
and the module's constants.  The request encoders and response decoders are
gone (see ``docs/changes-from-afkak-21.rst``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from afkak.common import CODEC_GZIP, CODEC_SNAPPY, Message
from afkak.message_set import create_message, create_message_set, wrap_messages
from afkak.protocol.messages import request_class

__all__ = [
    "ATTRIBUTE_CODEC_MASK",
    "DEFAULT_REPLICAS_ACK_TIMEOUT_MSECS",
    "MAX_BROKERS",
    "KafkaCodec",
    "create_gzip_message",
    "create_message",
    "create_message_set",
    "create_snappy_message",
]

#: The codec bits of a legacy message's attributes, as afkak 21 read them.
ATTRIBUTE_CODEC_MASK = 0x03
#: afkak 21 refused Metadata responses listing more brokers than this; inert now
#: (not applied).
MAX_BROKERS = 1024
#: Milliseconds the leader waits for replicas' acks by default.
DEFAULT_REPLICAS_ACK_TIMEOUT_MSECS = 1000


class KafkaCodec:
    """The Kafka API keys afkak 21 named, and :meth:`key_name`."""

    PRODUCE_KEY: ClassVar[int] = 0
    FETCH_KEY: ClassVar[int] = 1
    OFFSET_KEY: ClassVar[int] = 2
    METADATA_KEY: ClassVar[int] = 3
    OFFSET_COMMIT_KEY: ClassVar[int] = 8
    OFFSET_FETCH_KEY: ClassVar[int] = 9
    CONSUMER_METADATA_KEY: ClassVar[int] = 10
    FIND_COORDINATOR_KEY: ClassVar[int] = 10
    JOIN_GROUP_KEY: ClassVar[int] = 11
    HEARTBEAT_KEY: ClassVar[int] = 12
    LEAVE_GROUP_KEY: ClassVar[int] = 13
    SYNC_GROUP_KEY: ClassVar[int] = 14
    DESCRIBE_GROUP_KEY: ClassVar[int] = 15
    LIST_GROUPS_KEY: ClassVar[int] = 16
    SASL_HANDSHAKE_KEY: ClassVar[int] = 17
    API_VERSIONS_KEY: ClassVar[int] = 18
    CREATE_TOPICS_KEY: ClassVar[int] = 19
    DELETE_TOPICS_KEY: ClassVar[int] = 20

    @classmethod
    def key_name(cls, key: int) -> str:
        """Kafka's name of API *key*, e.g. ``"Produce"`` (KeyError if unknown)."""
        return request_class(key).__name__.removesuffix("Request")


def create_gzip_message(message_set: Iterable[Message]) -> Message:
    """afkak 21's gzip wrapper message holding *message_set* (see :func:`create_message_set`)."""
    return wrap_messages(message_set, CODEC_GZIP)


def create_snappy_message(message_set: Iterable[Message]) -> Message:
    """afkak 21's snappy wrapper message holding *message_set* (see :func:`create_message_set`)."""
    return wrap_messages(message_set, CODEC_SNAPPY)
