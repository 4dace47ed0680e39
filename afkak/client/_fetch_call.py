"""Fetch request (api key 1) for afkak's ``FetchRequest`` payloads.

Responses keep their records undecoded: each :class:`FetchResponse` carries a
:class:`FetchedMessages`, which decodes the record batches only when iterated
and yields :class:`OffsetAndMessage` tuples, skipping the records before the
requested offset (a batch may start earlier) and control batches.  From v13
on, topics are named by id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from afkak.common import FetchRequest, FetchResponse, OffsetAndMessage
from afkak.message_set import offset_messages
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import FetchRequest as FetchMsg
from afkak.records.reader import read_batches

from ._call import TopicIds, VersionedCall, group_by_topic

TOPIC_ID_VERSION = 13
READ_UNCOMMITTED = 0
RECORD_BATCH_MAGIC = 2


class FetchedMessages:
    """The messages of one partition's fetched records, decoded lazily on iteration.

    Iterating again decodes again.  A malformed batch raises
    :class:`~afkak.common.DecodeError` from the iteration.
    """

    __slots__ = ("_records", "_offset")

    def __init__(self, records: bytes | None, offset: int) -> None:
        self._records = records
        self._offset = offset

    def __iter__(self) -> Iterator[OffsetAndMessage]:
        new = tuple.__new__
        for item in offset_messages(read_batches(self._records), self._offset):
            yield new(OffsetAndMessage, item)

    def __bool__(self) -> bool:
        return bool(self._records)

    def __repr__(self) -> str:
        size = len(self._records) if self._records else 0
        return f"<FetchedMessages from offset {self._offset}: {size} bytes>"


class FetchCall(VersionedCall):
    """Fetch each payload's partition from its offset, up to its ``max_bytes``."""

    request_class = FetchMsg

    def __init__(
        self,
        payloads: Sequence[FetchRequest],
        max_wait_ms: int,
        min_bytes: int,
        topic_ids: Mapping[str, UUID],
    ) -> None:
        self.payloads = payloads
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.ids = TopicIds({p.topic for p in payloads}, topic_ids, TOPIC_ID_VERSION - 1)
        self.max_version = self.ids.cap
        self.offsets = {(p.topic, p.partition): p.offset for p in payloads}

    def build(self, version: int) -> Any:
        by_id = version >= TOPIC_ID_VERSION
        topic = FetchMsg.FetchTopic
        part = FetchMsg.FetchPartition
        return FetchMsg(
            max_wait_ms=self.max_wait_ms,
            min_bytes=self.min_bytes,
            isolation_level=READ_UNCOMMITTED,
            topics=[
                topic(
                    topic="" if by_id else name,
                    topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                    partitions=[
                        part(
                            partition=p.partition,
                            fetch_offset=p.offset,
                            partition_max_bytes=p.max_bytes,
                        )
                        for p in group
                    ],
                )
                for name, group in group_by_topic(self.payloads).items()
            ],
        )

    def parse(self, response: Any) -> list[FetchResponse]:
        """One FetchResponse per partition; a top-level error is every partition's.

        A top-level error comes without partitions from v13 on (and in fetch
        session errors): then every requested partition gets it.
        """
        top_error = response.error_code
        if top_error and not response.responses:
            return [
                FetchResponse(p.topic, p.partition, top_error, -1, FetchedMessages(None, p.offset))
                for p in self.payloads
            ]
        by_id = self.version >= TOPIC_ID_VERSION
        results = []
        for t in response.responses:
            name = self.ids.name_of(t.topic_id if by_id else t.topic)
            for p in t.partitions:
                offset = self.offsets.get((name, p.partition_index), 0)
                results.append(
                    FetchResponse(
                        name,
                        p.partition_index,
                        p.error_code or top_error,
                        p.high_watermark,
                        FetchedMessages(p.records, offset),
                    )
                )
        return results
