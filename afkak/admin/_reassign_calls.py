"""Replica placement at the controller: AlterPartitionReassignments (45),
ListPartitionReassignments (46) and ElectLeaders (43), as ``kafka-reassign-partitions``
and ``kafka-leader-election`` use them."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from afkak.client._interlayer import VersionedCall
from afkak.common import BrokerResponseError, TopicAndPartition
from afkak.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)

from ._types import ItemResult, _error_or_none, left_out


class ElectionType(enum.IntEnum):
    """PREFERRED moves leadership to each partition's first replica when it is in sync;
    UNCLEAN elects an out-of-sync replica of a partition that has no leader (data may
    be lost)."""

    PREFERRED = 0
    UNCLEAN = 1


@attrs.frozen
class PartitionReassignment:
    """An ongoing reassignment: the replicas now, and those being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def _by_topic(partitions: Sequence[TopicAndPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


def _answered(
    unanswered: dict[TopicAndPartition, ItemResult], answers: Iterable[tuple[str, int, Any]]
) -> list[Any]:
    """Each partition's ``(topic, index, entry)`` answer (an error code and message) over
    *unanswered*, the results of partitions the response left out."""
    return [
        {
            **unanswered,
            **{
                TopicAndPartition(topic, index): ItemResult(
                    _error_or_none(entry.error_code, entry.error_message)
                )
                for topic, index, entry in answers
            },
        }
    ]


class AlterReassignmentsCall(VersionedCall):
    """Move partitions to new replica lists (``None``: cancel an ongoing move)."""

    request_class = AlterPartitionReassignmentsRequest

    def __init__(
        self, targets: Mapping[TopicAndPartition, tuple[int, ...] | None], timeout_ms: int
    ) -> None:
        self.targets = targets
        self.timeout_ms = timeout_ms

    def build(self, version: int) -> Any:
        R = AlterPartitionReassignmentsRequest
        topics: dict[str, list[Any]] = {}
        for tp, replicas in self.targets.items():
            topics.setdefault(tp.topic, []).append(
                R.ReassignablePartition(tp.partition, None if replicas is None else list(replicas))
            )
        return R(
            timeout_ms=self.timeout_ms,
            topics=[R.ReassignableTopic(name, parts) for name, parts in topics.items()],
        )

    def failed(self, error: Any) -> dict[TopicAndPartition, ItemResult]:
        return {tp: ItemResult(error) for tp in self.targets}

    def parse(self, response: Any) -> list[Any]:
        top = _error_or_none(response.error_code, response.error_message)
        if top is not None:
            return [self.failed(top)]
        return _answered(
            self.failed(left_out("the partition")),
            ((t.name, p.partition_index, p) for t in response.responses for p in t.partitions),
        )


class ListReassignmentsCall(VersionedCall):
    """The ongoing reassignments (of *partitions*, or all when None)."""

    request_class = ListPartitionReassignmentsRequest

    def __init__(self, partitions: Sequence[TopicAndPartition] | None, timeout_ms: int) -> None:
        self.partitions = partitions
        self.timeout_ms = timeout_ms

    def build(self, version: int) -> Any:
        R = ListPartitionReassignmentsRequest
        topics = (
            None
            if self.partitions is None
            else [
                R.ListPartitionReassignmentsTopics(name, parts)
                for name, parts in _by_topic(self.partitions).items()
            ]
        )
        return R(timeout_ms=self.timeout_ms, topics=topics)

    def parse(self, response: Any) -> list[Any]:
        BrokerResponseError.raise_for_errno(
            response.error_code, *([response.error_message] if response.error_message else [])
        )
        return [
            {
                TopicAndPartition(t.name, p.partition_index): PartitionReassignment(
                    tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
                )
                for t in response.topics
                for p in t.partitions
            }
        ]


class ElectLeadersCall(VersionedCall):
    """Elect leaders of *partitions* (every partition when None)."""

    request_class = ElectLeadersRequest

    def __init__(
        self,
        election: ElectionType,
        partitions: Sequence[TopicAndPartition] | None,
        timeout_ms: int,
    ) -> None:
        self.election = election
        self.partitions = partitions
        self.timeout_ms = timeout_ms
        if election != ElectionType.PREFERRED:
            self.min_version = 1  # v0 elects the preferred leader only

    def build(self, version: int) -> Any:
        R = ElectLeadersRequest
        topics = (
            None
            if self.partitions is None
            else [R.TopicPartitions(t, parts) for t, parts in _by_topic(self.partitions).items()]
        )
        return R(
            election_type=int(self.election), topic_partitions=topics, timeout_ms=self.timeout_ms
        )

    def failed(self, error: Any) -> dict[TopicAndPartition, ItemResult]:
        return {tp: ItemResult(error) for tp in self.partitions or ()}

    def parse(self, response: Any) -> list[Any]:
        top = _error_or_none(response.error_code)
        if top is not None:
            if self.partitions is None:
                raise top
            return [self.failed(top)]
        return _answered(
            self.failed(left_out("the partition")),
            (
                (r.topic, p.partition_id, p)
                for r in response.replica_election_results
                for p in r.partition_result
            ),
        )
