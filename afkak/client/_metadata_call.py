"""Metadata request (api key 3): ask any broker for brokers and topic layouts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from afkak.common import BrokerMetadata
from afkak.protocol.messages import MetadataRequest
from afkak.protocol.metadata_answer import (
    MetadataAnswer,
    Row,
    TopicAnswer,
    TopicMemo,
    read_answer,
)

from ._call import VersionedCall, check_top_level_error
from ._metadata import MetadataSnapshot, topic_layout


class MetadataCall(VersionedCall):
    """Metadata for *topics*; ``None`` asks for every topic, ``()`` for brokers only.

    Asking for named topics may auto-create them (if the broker allows it);
    asking for all topics never does.  "All topics" is a null list, which
    exists from v1 on.
    """

    request_class = MetadataRequest

    def __init__(self, topics: Sequence[str] | None, memo: TopicMemo | None = None) -> None:
        self.topics = None if topics is None else tuple(topics)
        self.min_version = 1 if topics is None else None
        #: The client's topics as earlier answers had them (not read again if unchanged).
        self.memo = memo

    def build(self, version: int) -> Any:
        if self.topics is None:
            return MetadataRequest(topics=None)
        topic = MetadataRequest.MetadataRequestTopic
        return MetadataRequest(topics=[topic(name=t) for t in self.topics])

    def decode_frame(self, frame: bytes) -> MetadataAnswer | None:
        """The answer in *frame* read without the general decoder when it has the
        usual shape (:func:`~afkak.protocol.metadata_answer.read_answer`); else None."""
        return read_answer(frame, self.version, self.memo)

    def parse(self, response: Any) -> list[MetadataSnapshot]:
        """The response (generated or a :class:`MetadataAnswer`) as a snapshot."""
        if not isinstance(response, MetadataAnswer):
            check_top_level_error(response.error_code)
            response = _answer(response)
        brokers = {b[0]: BrokerMetadata(*b) for b in response.brokers}
        topics = {}
        topic_ids = {}
        for error, name, topic_id, numbers, rows, epochs in response.topics:
            if name is None:
                continue
            topics[name] = topic_layout(error, numbers, rows, epochs)
            if topic_id.int:  # not the zero UUID (no id: before v10)
                topic_ids[name] = topic_id
        return [MetadataSnapshot(brokers=brokers, topics=topics, topic_ids=topic_ids)]


def _answer(response: Any) -> MetadataAnswer:
    """The generated decoder's *response* as a :class:`MetadataAnswer` (equal rows
    sharing one tuple)."""
    shared: dict[Row, Row] = {}
    share = shared.setdefault
    topics: list[TopicAnswer] = []
    for t in response.topics:
        numbers = []
        rows: list[Row] = []
        epochs = []
        for p in t.partitions:
            numbers.append(p.partition_index)
            row = (p.error_code, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            rows.append(share(row, row))
            epochs.append(p.leader_epoch)
        topics.append((t.error_code, t.name, t.topic_id, numbers, rows, epochs))
    brokers = [(b.node_id, b.host, b.port) for b in response.brokers]
    return MetadataAnswer(brokers, topics, response.throttle_time_ms, response.error_code)
