"""Fetch request (api key 1) for afkak's ``FetchRequest`` payloads.

Responses keep their records undecoded: each :class:`FetchResponse` carries a
:class:`FetchedMessages`, which decodes the record batches only when iterated
and yields :class:`OffsetAndMessage` tuples, skipping the records before the
requested offset (a batch may start earlier) and control batches.  From v13
on, topics are named by id.  From v7 on a call may belong to a KIP-227 fetch
session: ``session_id``/``session_epoch`` name it, ``forgotten`` lists the
partitions it drops (the consumer's per-broker fetcher keeps the session).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from afkak.common import FetchRequest, FetchResponse, OffsetAndMessage, TopicAndPartition
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import FetchRequest as FetchMsg
from afkak.records.aborted import READ_UNCOMMITTED, committed_batches
from afkak.records.messages import fetched_messages
from afkak.records.reader import read_batches

from ._call import TopicIds, VersionedCall, group_by_topic

TOPIC_ID_VERSION = 13
#: The first version with fetch sessions (KIP-227).
SESSION_VERSION = 7
#: Session epoch of a sessionless full fetch; 0 asks for a new session.
FINAL_EPOCH = -1
RECORD_BATCH_MAGIC = 2


class FetchedMessages:
    """The messages of one partition's fetched records, decoded lazily on iteration.

    Iterating again decodes again.  A malformed batch raises
    :class:`~afkak.common.DecodeError` from the iteration.  Fetched with
    ``read_committed``, the records of aborted transactions are left out and
    ``last_stable_offset`` is the partition's (-1: unknown).
    """

    __slots__ = ("_records", "_offset", "_aborted", "last_stable_offset")

    def __init__(
        self,
        records: bytes | None,
        offset: int,
        aborted: Sequence[Any] | None = None,
        last_stable_offset: int = -1,
    ) -> None:
        self._records = records
        self._offset = offset
        self._aborted = aborted
        self.last_stable_offset = last_stable_offset

    def __iter__(self) -> Iterator[OffsetAndMessage]:
        batches = committed_batches(read_batches(self._records), self._aborted)
        return iter(fetched_messages(batches, self._offset, (), OffsetAndMessage))

    def __bool__(self) -> bool:
        return bool(self._records)

    def __repr__(self) -> str:
        size = len(self._records) if self._records else 0
        return f"<FetchedMessages from offset {self._offset}: {size} bytes>"


class FetchCall(VersionedCall):
    """Fetch each payload's partition from its offset, up to its ``max_bytes``.

    *isolation_level* 1 (``read_committed``) fetches up to the last stable
    offset and drops aborted transactions' records (Fetch v4+).
    *max_bytes* bounds the whole response (Kafka's default: no bound).  With a
    *session_id* (or *session_epoch* 0, which asks for a new session) the
    request belongs to a fetch session: *forgotten* partitions leave it, and
    *unchanged* ones, which the request does not name, are fetched as before
    (the response may name them).  Brokers before v7 get a plain full fetch.
    *leader_epochs* gives partitions' ``current_leader_epoch`` (v9+, KIP-320:
    a broker of another epoch fences the fetch); *rack_id* is the consumer's
    rack (v11+, KIP-392: the leader may name a closer replica to read from).
    """

    request_class = FetchMsg

    def __init__(
        self,
        payloads: Sequence[FetchRequest],
        max_wait_ms: int,
        min_bytes: int,
        topic_ids: Mapping[str, UUID],
        isolation_level: int = READ_UNCOMMITTED,
        *,
        max_bytes: int | None = None,
        session_id: int = 0,
        session_epoch: int = FINAL_EPOCH,
        forgotten: Sequence[TopicAndPartition] = (),
        unchanged: Sequence[TopicAndPartition] = (),
        leader_epochs: Mapping[TopicAndPartition, int] | None = None,
        rack_id: str = "",
    ) -> None:
        self.payloads = payloads
        self.leader_epochs = leader_epochs or {}
        self.rack_id = rack_id
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.session_id = session_id
        self.session_epoch = session_epoch
        self.forgotten = forgotten
        topics = {p.topic for p in payloads} | {tp.topic for tp in (*forgotten, *unchanged)}
        self.ids = TopicIds(topics, topic_ids, TOPIC_ID_VERSION - 1)
        self.max_version = self.ids.cap
        self.offsets = {(p.topic, p.partition): p.offset for p in payloads}

    def build(self, version: int) -> Any:
        by_id = version >= TOPIC_ID_VERSION
        topic = FetchMsg.FetchTopic
        part = FetchMsg.FetchPartition
        extra: dict[str, Any] = {}
        if version >= SESSION_VERSION:
            extra = {
                "session_id": self.session_id,
                "session_epoch": self.session_epoch,
                "forgotten_topics_data": [
                    FetchMsg.ForgottenTopic(
                        topic="" if by_id else name,
                        topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                        partitions=[tp.partition for tp in group],
                    )
                    for name, group in group_by_topic(self.forgotten).items()
                ],
            }
        if self.max_bytes is not None:
            extra["max_bytes"] = self.max_bytes
        epochs = self.leader_epochs
        return FetchMsg(
            rack_id=self.rack_id,
            max_wait_ms=self.max_wait_ms,
            min_bytes=self.min_bytes,
            isolation_level=self.isolation_level,
            topics=[
                topic(
                    topic="" if by_id else name,
                    topic_id=self.ids.by_name[name] if by_id else ZERO_UUID,
                    partitions=[
                        part(
                            partition=p.partition,
                            fetch_offset=p.offset,
                            partition_max_bytes=p.max_bytes,
                            current_leader_epoch=epochs.get(
                                TopicAndPartition(name, p.partition), -1
                            ),
                        )
                        for p in group
                    ],
                )
                for name, group in group_by_topic(self.payloads).items()
            ],
            **extra,
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
                        FetchedMessages(
                            p.records,
                            offset,
                            p.aborted_transactions if self.isolation_level else None,
                            p.last_stable_offset,
                        ),
                    )
                )
        return results
