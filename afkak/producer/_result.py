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
