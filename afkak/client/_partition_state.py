"""Each topic's partitions as parallel lists, and the per-partition views over them.

At 1,000 partitions a dict entry, a ``TopicAndPartition`` key and a
``PartitionMetadata`` per partition and per map were most of a client's
memory; a topic's partitions instead sit in lists indexed like its sorted
partition numbers, their ``(error, leader, replicas, isr)`` rows shared
across partitions that are placed alike.  :class:`LeaderView` and
:class:`PartitionMetaView` show them as afkak 21's ``topics_to_brokers`` and
``partition_meta`` mappings, keyed by :class:`TopicAndPartition` (or any
equal ``(topic, partition)`` tuple), building their values on access.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from afkak.common import BrokerMetadata, PartitionMetadata, TopicAndPartition
from afkak.protocol.metadata_answer import Row  # a PartitionMetadata less topic and number

V = TypeVar("V")


class TopicState:
    """One topic's partitions: ``partitions`` sorted, the other lists aligned with it."""

    __slots__ = ("partitions", "rows", "leaders", "epochs", "current")

    def __init__(self, partitions: list[int], rows: list[Row]) -> None:
        #: The partition numbers, sorted: the list ``topic_partitions`` shows.
        self.partitions = partitions
        self.rows = rows
        #: Each partition's leader (``None``: unknown, to be reloaded).
        self.leaders: list[BrokerMetadata | None] = [None] * len(partitions)
        #: Each partition's leader epoch (KIP-320; -1: unknown).
        self.epochs = [-1] * len(partitions)
        #: Whether each leader is still the broker that the last merge found
        #: for its row (no reset, hint or change of brokers since).
        self.current = False

    def index(self, partition: Any) -> int:
        """Where *partition* is in the lists; -1 if the topic has no such partition."""
        parts = self.partitions
        if not isinstance(partition, int):
            return -1
        if 0 <= partition < len(parts) and parts[partition] == partition:
            return partition  # partitions are numbered 0 to n - 1 (Kafka's)
        i = bisect_left(parts, partition)
        return i if i < len(parts) and parts[i] == partition else -1


def locate(topics: Mapping[str, TopicState], key: Any) -> tuple[TopicState, int] | None:
    """The topic state and index of *key*, a ``(topic, partition)`` pair, if known."""
    try:
        topic, partition = key
    except (TypeError, ValueError):
        return None
    state = topics.get(topic)
    if state is None:
        return None
    i = state.index(partition)
    return None if i < 0 else (state, i)


class _PartitionView(Mapping[TopicAndPartition, V]):
    """A read-only ``{TopicAndPartition: value}`` over the topics' states."""

    __slots__ = ("_topics",)

    def __init__(self, topics: Mapping[str, TopicState]) -> None:
        self._topics = topics

    def _value(self, state: TopicState, i: int, key: Any) -> V:
        raise NotImplementedError

    def __getitem__(self, key: Any) -> V:
        found = locate(self._topics, key)
        if found is None:
            raise KeyError(key)
        return self._value(found[0], found[1], key)

    def get(self, key: Any, default: Any = None) -> Any:
        found = locate(self._topics, key)
        return default if found is None else self._value(found[0], found[1], key)

    def __contains__(self, key: object) -> bool:
        return locate(self._topics, key) is not None

    def __iter__(self) -> Iterator[TopicAndPartition]:
        for topic, state in self._topics.items():
            for partition in state.partitions:
                yield TopicAndPartition(topic, partition)

    def __len__(self) -> int:
        return sum(len(state.partitions) for state in self._topics.values())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class LeaderView(_PartitionView[BrokerMetadata | None]):
    """``topics_to_brokers``: each partition's leader (``None``: no leader known)."""

    __slots__ = ()

    def _value(self, state: TopicState, i: int, key: Any) -> BrokerMetadata | None:
        return state.leaders[i]


class PartitionMetaView(_PartitionView[PartitionMetadata]):
    """``partition_meta``: each partition's :class:`PartitionMetadata`."""

    __slots__ = ()

    def _value(self, state: TopicState, i: int, key: Any) -> PartitionMetadata:
        return PartitionMetadata(key[0], state.partitions[i], *state.rows[i])
