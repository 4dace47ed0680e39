"""The value types of a fake cluster: brokers, topics, partitions, what it saw."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import attrs

from afkak.testing._log import PartitionLog


@attrs.define(eq=False)
class FakeBroker:
    """One broker node: its address, and whether it is up and accepting connections."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    up: bool = True
    refusing: bool = False


@attrs.define(eq=False)
class FakePartition:
    """One partition: its replicas, leader (-1 for none), leader epoch and log."""

    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    log: PartitionLog = attrs.field(factory=PartitionLog, repr=False)

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset


@attrs.define(eq=False)
class FakeTopic:
    name: str
    topic_id: UUID
    partitions: list[FakePartition]
    #: Configs set on the topic (CreateTopics, IncrementalAlterConfigs); the rest are defaults.
    configs: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class SeenRequest:
    """A request a fake broker received (before any injected fault applied)."""

    broker: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any = attrs.field(repr=False, eq=False)


@attrs.frozen
class CommittedOffset:
    """A group's committed position in a partition."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
