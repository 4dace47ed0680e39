"""Metadata request (api key 3): ask any broker for brokers and topic layouts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from afkak.common import BrokerMetadata
from afkak.protocol.messages import MetadataRequest

from ._call import VersionedCall, check_top_level_error
from ._metadata import MetadataSnapshot, TopicLayout
from ._partition_state import Row


class MetadataCall(VersionedCall):
    """Metadata for *topics*; ``None`` asks for every topic, ``()`` for brokers only.

    Asking for named topics may auto-create them (if the broker allows it);
    asking for all topics never does.  "All topics" is a null list, which
    exists from v1 on.
    """

    request_class = MetadataRequest

    def __init__(self, topics: Sequence[str] | None) -> None:
        self.topics = None if topics is None else tuple(topics)
        self.min_version = 1 if topics is None else None

    def build(self, version: int) -> Any:
        if self.topics is None:
            return MetadataRequest(topics=None)
        topic = MetadataRequest.MetadataRequestTopic
        return MetadataRequest(topics=[topic(name=t) for t in self.topics])

    def parse(self, response: Any) -> list[MetadataSnapshot]:
        """The response as a snapshot; equal replica lists share one tuple."""
        check_top_level_error(response.error_code)
        brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers}
        topics = {}
        topic_ids = {}
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        share = shared.setdefault
        for t in response.topics:
            name = t.name
            if name is None:
                continue
            numbers = []
            rows: list[Row] = []
            epochs = []
            for p in t.partitions:
                numbers.append(p.partition_index)
                replicas = tuple(p.replica_nodes)
                isr = tuple(p.isr_nodes)
                rows.append((p.error_code, p.leader_id, share(replicas, replicas), share(isr, isr)))
                epochs.append(p.leader_epoch)
            if numbers != list(range(len(numbers))):  # not Kafka's usual 0, 1, ... n - 1
                numbers, rows, epochs = _sorted(numbers, rows, epochs)
            topics[name] = TopicLayout(t.error_code, numbers, rows, epochs)
            if t.topic_id.int:  # not the zero UUID (no id: before v10)
                topic_ids[name] = t.topic_id
        return [MetadataSnapshot(brokers=brokers, topics=topics, topic_ids=topic_ids)]


def _sorted(
    numbers: list[int], rows: list[Row], epochs: list[int]
) -> tuple[list[int], list[Row], list[int]]:
    """The partitions in order of their numbers; of one listed twice, the last."""
    by_number = {n: (row, epoch) for n, row, epoch in zip(numbers, rows, epochs, strict=True)}
    ordered = sorted(by_number)
    return (
        ordered,
        [by_number[n][0] for n in ordered],
        [by_number[n][1] for n in ordered],
    )
