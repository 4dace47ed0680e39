"""Metadata request (api key 3): ask any broker for brokers and topic layouts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from afkak.common import BrokerMetadata, PartitionMetadata, TopicMetadata
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import MetadataRequest

from ._call import VersionedCall, check_top_level_error
from ._metadata import MetadataSnapshot

#: What ``PartitionMetadata(...)`` calls through a Python-level ``__new__``: called
#: directly, a thousand partitions parse in a third of the time.
_new_tuple = tuple.__new__


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
        epochs = {}
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        for t in response.topics:
            name = t.name
            if name is None:
                continue
            partitions = {}
            for p in t.partitions:
                replicas = tuple(p.replica_nodes)
                isr = tuple(p.isr_nodes)
                partitions[p.partition_index] = _new_tuple(
                    PartitionMetadata,
                    (
                        name,
                        p.partition_index,
                        p.error_code,
                        p.leader_id,
                        shared.setdefault(replicas, replicas),
                        shared.setdefault(isr, isr),
                    ),
                )
            topics[name] = TopicMetadata(name, t.error_code, partitions)
            leader_epochs = {
                p.partition_index: p.leader_epoch for p in t.partitions if p.leader_epoch >= 0
            }
            if leader_epochs:  # v7+
                epochs[name] = leader_epochs
            if t.topic_id != ZERO_UUID:
                topic_ids[name] = t.topic_id
        return [
            MetadataSnapshot(
                brokers=brokers, topics=topics, topic_ids=topic_ids, leader_epochs=epochs
            )
        ]
