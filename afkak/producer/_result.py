"""What :meth:`afkak.producer.Producer.send` fires with."""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class RecordMetadata:
    """Where and when one record was written.

    :ivar topic: the topic.
    :ivar partition: the partition.
    :ivar offset: the record's offset (its batch's base offset plus its index
        in the batch); ``-1`` when unknown (``acks=0``, or a retry that the
        broker recognised as a duplicate without knowing the original offset).
    :ivar timestamp: the broker's LogAppendTime when the topic uses it, else
        the record's CreateTime, in milliseconds since the epoch.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int


_new = object.__new__
_SLOTS = RecordMetadata.__dict__  # the slots' member descriptors
_set_topic = _SLOTS["topic"].__set__
_set_partition = _SLOTS["partition"].__set__
_set_offset = _SLOTS["offset"].__set__
_set_timestamp = _SLOTS["timestamp"].__set__


def record_metadata(topic: str, partition: int, offset: int, timestamp: int) -> RecordMetadata:
    """``RecordMetadata(topic, partition, offset, timestamp)``, built one per acknowledged
    send: the same object, its slots set directly (attrs' frozen ``__init__`` goes
    through ``object.__setattr__`` per field, a third slower)."""
    metadata = _new(RecordMetadata)
    _set_topic(metadata, topic)
    _set_partition(metadata, partition)
    _set_offset(metadata, offset)
    _set_timestamp(metadata, timestamp)
    return metadata
