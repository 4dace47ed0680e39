"""Produce request (api key 0) for afkak's ``ProduceRequest`` payloads.

Each payload's messages become one record batch v2, compressed with the
payload's ``MessageSet.codec`` (or its afkak 21 wrappers' codec) when it has
one.  Batches are encoded when the
call is made, so bad messages fail before anything is sent.  Messages without
a timestamp get the reactor's current time.  From v13 on, topics are named by
id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from uuid import UUID

from afkak.common import ProduceResponse
from afkak.message_set import flatten
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import ProduceRequest as ProduceMsg
from afkak.protocol.produce_answer import one_partition_answer, topic_entry
from afkak.protocol.produce_body import produce_body
from afkak.records.builder import build_batch

from ._call import TopicIds, VersionedCall, group_by_topic

TOPIC_ID_VERSION = 13
_BYTES_OR_NONE = frozenset({bytes, type(None)})


class Destination(Protocol):
    """What a Produce call needs of each payload: its partition (a
    ``ProduceRequest``, or the producer's batch itself, so that no payload
    object is built per batch and request)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


def encode_messages(messages: Any, now_ms: int) -> bytes:
    """One record batch holding *messages* (a list of Message, or a MessageSet).

    afkak 21's compressed wrapper messages among them are replaced by their
    inner messages, and the batch gets their codec (see :func:`flatten`).

    :raises TypeError: a message is not a 4-tuple, or its key or value is not
        ``bytes`` or ``None``.
    :raises ValueError: there are no messages, or a wrapper holds no message set.
    """
    return encode_records(*records_of(messages), now_ms)


def records_of(messages: Any) -> tuple[list[Any], int]:
    """The checked messages to write as records (wrappers opened), and their batch's codec.

    :raises TypeError: a message is not a 4-tuple, or its key or value is not
        ``bytes`` or ``None``.
    :raises ValueError: there are no messages, or a wrapper holds no message set.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a list of Message, not {messages!r}")
    if not messages:
        raise ValueError("a produce payload needs at least one message")
    try:
        records, codec = flatten(messages)
        keys = [m[2] for m in records]
        values = [m[3] for m in records]
    except (TypeError, IndexError):
        raise TypeError(f"messages must be afkak.common.Message tuples: {messages!r}") from None
    types = set(map(type, values))
    types.update(map(type, keys))
    if not types <= _BYTES_OR_NONE:
        bad = next(x for x in (*keys, *values) if type(x) not in _BYTES_OR_NONE)
        raise TypeError(f"message keys and values must be bytes or None, not {bad!r}")
    return records, codec


def encode_records(records: Sequence[Any], codec: int, now_ms: int) -> bytes:
    """One record batch of checked *records* (see :func:`records_of`)."""
    keys = [m[2] for m in records]
    stamps = [getattr(m, "timestamp", None) for m in records]
    headers = [getattr(m, "headers", ()) for m in records]
    return build_batch(
        [m[3] for m in records],
        None if all(k is None for k in keys) else keys,
        headers=headers if any(headers) else None,
        timestamps=None
        if all(s is None for s in stamps)
        else [now_ms if s is None else s for s in stamps],
        timestamp=now_ms,
        codec=codec,
    )


class ProduceCall(VersionedCall):
    """Write each payload's messages as one batch to its partition.

    A transactional producer's batches carry its *transactional_id*; under
    transactions v1 *max_version* keeps them below v12 (KIP-890).
    """

    request_class = ProduceMsg

    def __init__(
        self,
        payloads: Sequence[Destination],
        acks: int,
        timeout_ms: int,
        batches: Mapping[tuple[str, int], bytes],
        topic_ids: Mapping[str, UUID],
        transactional_id: str | None = None,
        max_version: int | None = None,
    ) -> None:
        self.payloads = payloads
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.batches = batches
        self.ids = TopicIds({p.topic for p in payloads}, topic_ids, TOPIC_ID_VERSION - 1)
        caps = [c for c in (self.ids.cap, max_version) if c is not None]
        self.max_version = min(caps, default=None)

    def build(self, version: int) -> Any:
        by_id = version >= TOPIC_ID_VERSION
        topic = ProduceMsg.TopicProduceData
        part = ProduceMsg.PartitionProduceData
        return ProduceMsg(
            transactional_id=self.transactional_id,
            acks=self.acks,
            timeout_ms=self.timeout_ms,
            topic_data=[
                topic(
                    name="" if by_id else name,
                    topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                    partition_data=[
                        part(index=p.partition, records=self.batches[name, p.partition])
                        for p in group
                    ],
                )
                for name, group in group_by_topic(self.payloads).items()
            ],
        )

    def encode_body(self, version: int) -> bytes:
        """The request's body at *version*, as ``self(version).encode(version)``, written
        straight from the batches (no message built)."""
        self.version = version
        batches = self.batches
        payloads = self.payloads
        if len(payloads) == 1:  # a lone batch: an awaited send's
            p = payloads[0]
            groups: Any = ((p.topic, (p,)),)
        else:
            groups = group_by_topic(payloads).items()
        by_id = version >= TOPIC_ID_VERSION
        ids = self.ids.by_name
        return produce_body(
            version,
            self.transactional_id,
            self.acks,
            self.timeout_ms,
            [
                (
                    name,
                    ids[name] if by_id else ZERO_UUID,
                    [(p.partition, batches[name, p.partition]) for p in group],
                )
                for name, group in groups
            ],
        )

    def decode_frame(self, frame: bytes) -> Any | None:
        """The response in *frame* when it answers a request for one partition in the
        usual shape (read without the general decoder); None otherwise."""
        if len(self.payloads) != 1:
            return None
        payload = self.payloads[0]
        version = self.version
        topic_id = self.ids.by_name.get(payload.topic)
        entry = topic_entry(version, payload.topic, topic_id)
        if entry is None:
            return None
        return one_partition_answer(
            frame, entry, version, payload.topic, topic_id, payload.partition
        )

    def topic_of(self, entry: Any) -> str:
        """The topic a response's topic entry names (by id from v13 on)."""
        return self.ids.name_of(entry.topic_id if self.version >= TOPIC_ID_VERSION else entry.name)

    def parse(self, response: Any) -> list[ProduceResponse]:
        return [
            ProduceResponse(
                self.topic_of(t),
                p.index,
                p.error_code,
                p.base_offset,
            )
            for t in response.responses
            for p in t.partition_responses
        ]
