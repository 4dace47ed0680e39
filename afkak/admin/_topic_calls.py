"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37): sent to the controller.

Each parse returns ``{key: result}`` with the broker's error per topic, so the
admin client can resend just the topics a broker refused with NOT_CONTROLLER.
Like every admin call, each has ``failed(error)``: that error for every item
asked (also what a topic the response left out gets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from afkak.client._interlayer import VersionedCall
from afkak.protocol import ZERO_UUID
from afkak.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)

from ._types import (
    CreatedTopic,
    DeletedTopic,
    ItemResult,
    NewPartitions,
    NewTopic,
    _error_or_none,
    left_out,
)

#: DeleteTopics names topics by id (or name) from this version on.
DELETE_BY_ID_VERSION = 6


class CreateTopicsCall(VersionedCall):
    request_class = CreateTopicsRequest

    def __init__(self, topics: Sequence[NewTopic], timeout_ms: int, validate_only: bool) -> None:
        self.topics = topics
        self.timeout_ms = timeout_ms
        self.validate_only = validate_only

    def build(self, version: int) -> Any:
        R = CreateTopicsRequest
        return R(
            topics=[
                R.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    assignments=[
                        R.CreatableReplicaAssignment(i, list(ids))
                        for i, ids in enumerate(t.replica_assignment or ())
                    ],
                    configs=[R.CreatableTopicConfig(k, v) for k, v in t.configs.items()],
                )
                for t in self.topics
            ],
            timeout_ms=self.timeout_ms,
            validate_only=self.validate_only,
        )

    def failed(self, error: Any) -> dict[str, CreatedTopic]:
        return {t.name: CreatedTopic(t.name, error) for t in self.topics}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the topic")),
                **{
                    t.name: CreatedTopic(
                        name=t.name,
                        error=_error_or_none(t.error_code, t.error_message),
                        topic_id=None if t.topic_id in (None, ZERO_UUID) else t.topic_id,
                        num_partitions=t.num_partitions,
                        replication_factor=t.replication_factor,
                    )
                    for t in response.topics
                },
            }
        ]


class DeleteTopicsCall(VersionedCall):
    """Delete topics by name or by id (ids need v6, which also takes names)."""

    request_class = DeleteTopicsRequest

    def __init__(self, topics: Sequence[str | UUID], timeout_ms: int) -> None:
        self.topics = topics
        self.timeout_ms = timeout_ms
        if any(isinstance(t, UUID) for t in topics):
            self.min_version = DELETE_BY_ID_VERSION

    def build(self, version: int) -> Any:
        R = DeleteTopicsRequest
        if version >= DELETE_BY_ID_VERSION:
            states = [
                R.DeleteTopicState(topic_id=t)
                if isinstance(t, UUID)
                else R.DeleteTopicState(name=t)
                for t in self.topics
            ]
            return R(topics=states, timeout_ms=self.timeout_ms)
        return R(topic_names=[str(t) for t in self.topics], timeout_ms=self.timeout_ms)

    def failed(self, error: Any) -> dict[Any, DeletedTopic]:
        return {
            t: DeletedTopic(
                None if isinstance(t, UUID) else t, t if isinstance(t, UUID) else None, error
            )
            for t in self.topics
        }

    def parse(self, response: Any) -> list[Any]:
        results = self.failed(left_out("the topic"))
        for r in response.responses:
            topic_id = None if r.topic_id in (None, ZERO_UUID) else r.topic_id
            key: Any = topic_id if topic_id in self.topics else r.name
            results[key] = DeletedTopic(
                r.name, topic_id, _error_or_none(r.error_code, r.error_message)
            )
        return [results]


class CreatePartitionsCall(VersionedCall):
    request_class = CreatePartitionsRequest

    def __init__(
        self, counts: Mapping[str, NewPartitions], timeout_ms: int, validate_only: bool
    ) -> None:
        self.counts = counts
        self.timeout_ms = timeout_ms
        self.validate_only = validate_only

    def build(self, version: int) -> Any:
        R = CreatePartitionsRequest
        topic = R.CreatePartitionsTopic
        return R(
            topics=[
                topic(
                    name=name,
                    count=new.total_count,
                    assignments=None
                    if new.assignments is None
                    else [R.CreatePartitionsAssignment(list(ids)) for ids in new.assignments],
                )
                for name, new in self.counts.items()
            ],
            timeout_ms=self.timeout_ms,
            validate_only=self.validate_only,
        )

    def failed(self, error: Any) -> dict[str, ItemResult]:
        return {name: ItemResult(error) for name in self.counts}

    def parse(self, response: Any) -> list[Any]:
        return [
            {
                **self.failed(left_out("the topic")),
                **{
                    **{
                        r.name: ItemResult(_error_or_none(r.error_code, r.error_message))
                        for r in response.results
                    },
                },
            }
        ]
