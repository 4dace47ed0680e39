"""The client's cache of cluster metadata: brokers, partitions, leaders, coordinators.

The cache is plain data plus the rules for merging a Metadata response into it
and for forgetting exactly what an error proved stale.  It does no I/O; the
client decides when to ask a broker and hands the converted answer here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from uuid import UUID

import attrs

from afkak._broker_errors import ErrorCode
from afkak.common import BrokerMetadata, TopicAndPartition
from afkak.protocol.metadata_answer import Row

from ._partition_state import LeaderView, PartitionMetaView, TopicState, locate

UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@attrs.define
class TopicLayout:
    """One topic of a Metadata response, laid out as the cache keeps it.

    ``partitions`` sorted; ``rows`` (``(error, leader, replicas, isr)``) and
    ``epochs`` (leader epochs, KIP-320; negative: unknown, as before Metadata
    v7) aligned with them, so that an unchanged topic is recognised by
    comparing whole lists.  Not frozen: a frozen class's ``__init__`` costs
    four times as much, once per topic of every refresh.
    """

    error_code: int
    partitions: list[int] = attrs.field(factory=list)
    rows: list[Row] = attrs.field(factory=list)
    epochs: list[int] = attrs.field(factory=list)


def topic_layout(
    error_code: int, numbers: list[int], rows: list[Row], epochs: list[int]
) -> TopicLayout:
    """The :class:`TopicLayout` of partitions listed in any order (of one listed
    twice, the last)."""
    if numbers != list(range(len(numbers))):  # not Kafka's usual 0, 1, ... n - 1
        by_number = {n: (row, epoch) for n, row, epoch in zip(numbers, rows, epochs, strict=True)}
        numbers = sorted(by_number)
        rows = [by_number[n][0] for n in numbers]
        epochs = [by_number[n][1] for n in numbers]
    return TopicLayout(error_code, numbers, rows, epochs)


@attrs.frozen
class MetadataSnapshot:
    """One Metadata response converted for the cache.

    ``topics`` maps each topic name to its :class:`TopicLayout`; ``topic_ids``
    holds the ids of the topics that have one (Metadata v10+).
    """

    brokers: Mapping[int, BrokerMetadata]
    topics: Mapping[str, TopicLayout]
    topic_ids: Mapping[str, UUID] = attrs.field(factory=dict)


@attrs.frozen
class BrokerChanges:
    """What a merge did to the set of brokers: the client closes these connections."""

    removed: frozenset[int]
    moved: frozenset[int]


class MetadataCache:
    """Mutable cluster metadata, exposed through the client's documented attributes.

    The dicts and views are updated in place, never replaced, so a reference
    taken from the client stays current.  Per-partition state is kept per
    topic (:mod:`._partition_state`); ``topics_to_brokers`` and
    ``partition_meta`` are read-only views of it.
    """

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topic_partitions: dict[str, list[int]] = {}
        self._topics: dict[str, TopicState] = {}
        self.topics_to_brokers = LeaderView(self._topics)
        self.partition_meta = PartitionMetaView(self._topics)
        self.topic_errors: dict[str, int] = {}
        self.topic_ids: dict[str, UUID] = {}
        self.coordinators: dict[str, BrokerMetadata] = {}
        #: KIP-951: the leader an error response named, kept by the reset that follows.
        self.leader_hints: dict[TopicAndPartition, BrokerMetadata] = {}
        #: The leader epoch of the last hint taken per partition: an older or equal
        #: one (a broker that has not heard of the move yet) is not followed.
        self.hinted_epochs: dict[TopicAndPartition, int] = {}
        #: Every distinct partition row, shared by the partitions that have it.
        self._rows: dict[Row, Row] = {}

    # -- merging ------------------------------------------------------------

    def merge(self, snapshot: MetadataSnapshot) -> BrokerChanges:
        """Merge a Metadata response; report brokers that left or changed address.

        Every Metadata response lists all live brokers, so a broker missing from
        a non-empty list has left the cluster: its leaderships and coordinator
        roles are forgotten.  What did not change keeps its objects (a topic's
        partition list, the brokers), so that a periodic refresh of an
        unchanged cluster writes next to nothing, and what holds a reference
        (the producer's partitioner) sees that nothing moved.
        """
        changes = self.update_brokers(snapshot.brokers.values(), complete=bool(snapshot.brokers))
        brokers = {node_id: self.brokers[node_id] for node_id in snapshot.brokers}
        if self.leader_hints:  # the metadata supersedes the hints about its topics
            for key in [k for k in self.leader_hints if k.topic in snapshot.topics]:
                del self.leader_hints[key]
        for topic, layout in snapshot.topics.items():
            topic_id = snapshot.topic_ids.get(topic)
            cached_id = self.topic_ids.get(topic)
            # new, or deleted and created again (ints: UUID.__eq__ is Python code)
            if (topic_id and topic_id.int) != (cached_id and cached_id.int):
                self._forget_partitions(topic)
                self.topic_ids.pop(topic, None)
            self._merge_topic(topic, layout, brokers)
            if topic_id is not None:
                self.topic_ids[topic] = topic_id
        return changes

    def update_brokers(self, brokers: Iterable[BrokerMetadata], complete: bool) -> BrokerChanges:
        """Record broker addresses; with *complete*, drop brokers not listed.

        A broker listed as it was keeps its cached object.
        """
        listed = {b.node_id: b for b in brokers}
        moved = frozenset(
            node_id
            for node_id, b in listed.items()
            if node_id in self.brokers and self.brokers[node_id] != b
        )
        removed = frozenset(set(self.brokers) - set(listed)) if complete else frozenset()
        added = False
        for node_id, broker in listed.items():
            if self.brokers.get(node_id) != broker:
                self.brokers[node_id] = broker
                added = True
        for node_id in removed:
            del self.brokers[node_id]
        if added or removed:  # leaders resolve to other brokers now
            for state in self._topics.values():
                state.current = False
        if moved or removed:
            self._repoint(moved, removed)
        return BrokerChanges(removed=removed, moved=moved)

    def _repoint(self, moved: frozenset[int], removed: frozenset[int]) -> None:
        for state in self._topics.values():
            leaders = state.leaders
            for i, broker in enumerate(leaders):
                if broker is None:
                    continue
                if broker.node_id in removed:
                    leaders[i] = None
                elif broker.node_id in moved:
                    leaders[i] = self.brokers[broker.node_id]
        for group, broker in list(self.coordinators.items()):
            if broker.node_id in removed:
                del self.coordinators[group]
            elif broker.node_id in moved:
                self.coordinators[group] = self.brokers[broker.node_id]

    def _merge_topic(
        self, topic: str, layout: TopicLayout, brokers: Mapping[int, BrokerMetadata]
    ) -> None:
        """Update the topic's partitions in place, keeping those the answer knows less of.

        A topic whose partitions, rows and epochs equal the cached ones, and
        whose leaders nothing changed since they were merged, is left as it
        is without a look at each partition.  As the Java client (KIP-320), a
        partition whose leader epoch in the answer is older than the cached
        one comes from a broker that has not heard of the new leader yet: the
        cached leader stays (a recreated topic was forgotten first: its epochs
        start again).
        """
        self.topic_errors[topic] = layout.error_code
        if not layout.partitions:
            self._forget_partitions(topic)
            return
        state = self._topics.get(topic)
        if state is None or state.partitions != layout.partitions:
            state = self._renumbered(topic, state, layout.partitions)
        elif (
            state.current
            and brokers  # an answer without brokers leaves every partition leaderless
            and state.rows == layout.rows
            and state.epochs == layout.epochs
        ):
            return
        rows, leaders, cached_epochs, shared = state.rows, state.leaders, state.epochs, self._rows
        current = bool(brokers)
        for i, (row, epoch) in enumerate(zip(layout.rows, layout.epochs, strict=True)):
            if epoch < 0:
                epoch = -1
            elif epoch < cached_epochs[i]:
                current = False
                continue
            if rows[i] != row:
                rows[i] = shared.setdefault(row, row)
            leaders[i] = brokers.get(row[1])
            cached_epochs[i] = epoch
        state.current = current

    def _renumbered(self, topic: str, old: TopicState | None, partitions: list[int]) -> TopicState:
        """A new state for *topic*'s *partitions*, keeping what *old* knew of them."""
        state = TopicState(partitions, [_NO_ROW] * len(partitions))
        if old is not None:
            for i, partition in enumerate(old.partitions):
                j = state.index(partition)
                if j < 0:
                    self.leader_hints.pop(TopicAndPartition(topic, partition), None)
                    continue
                state.rows[j], state.leaders[j], state.epochs[j] = (
                    old.rows[i],
                    old.leaders[i],
                    old.epochs[i],
                )
        self._topics[topic] = state
        self.topic_partitions[topic] = partitions
        return state

    def _forget_partitions(self, topic: str) -> None:
        state = self._topics.pop(topic, None)
        self.topic_partitions.pop(topic, None)
        if state is not None and self.leader_hints:
            for partition in state.partitions:
                self.leader_hints.pop(TopicAndPartition(topic, partition), None)

    # -- queries ------------------------------------------------------------

    def leader(self, key: TopicAndPartition) -> BrokerMetadata | None:
        """The known leader of a partition, or ``None`` when it must be (re)loaded."""
        found = locate(self._topics, key)
        return None if found is None else found[0].leaders[found[1]]

    def leader_epoch(self, key: TopicAndPartition) -> int:
        """The partition's leader epoch as last loaded (-1: unknown)."""
        found = locate(self._topics, key)
        return -1 if found is None else found[0].epochs[found[1]]

    def error_for_topic(self, topic: str) -> int:
        return self.topic_errors.get(topic, UNKNOWN_TOPIC_OR_PARTITION)

    def partition_fully_replicated(self, key: TopicAndPartition) -> bool:
        found = locate(self._topics, key)
        return found is not None and _fully_replicated(found[0].rows[found[1]])

    def topic_fully_replicated(self, topic: str) -> bool:
        state = self._topics.get(topic)
        return state is not None and all(_fully_replicated(row) for row in state.rows)

    # -- invalidation -------------------------------------------------------

    def reset_topics(self, *topics: str) -> None:
        """Forget everything about these topics."""
        for topic in topics:
            self._forget_partitions(topic)
            self.topic_errors.pop(topic, None)
            self.topic_ids.pop(topic, None)

    def hint_leader(self, key: TopicAndPartition, leader: BrokerMetadata, epoch: int) -> bool:
        """KIP-951: an error response named the partition's new *leader* (at leader
        *epoch*): route to it now.

        False (nothing changed) for a partition not in the cache, when *leader* is
        already the cached leader (it just refused to lead), or when *epoch* is not
        newer than the last hint's or the metadata's (a broker behind the move,
        pointing back): the metadata must tell.  A hint taken moves the partition's
        leader epoch too, so fetches carry the new leader's (KIP-320).
        """
        found = locate(self._topics, key)
        if found is None:
            return False
        state, i = found
        if state.leaders[i] == leader:
            return False
        if epoch <= max(self.hinted_epochs.get(key, -1), state.epochs[i]):
            return False
        self.hinted_epochs[key] = state.epochs[i] = epoch
        state.leaders[i] = self.leader_hints[key] = leader
        state.current = False
        error, _, replicas, isr = state.rows[i]
        row = (error, leader.node_id, replicas, isr)
        state.rows[i] = self._rows.setdefault(row, row)
        return True

    def reset_leader(self, key: TopicAndPartition) -> None:
        """Forget one partition's leader: the next request for it reloads its topic
        (unless the error that proved it stale named the new one, :meth:`hint_leader`)."""
        found = locate(self._topics, key)
        if found is not None:
            found[0].leaders[found[1]] = self.leader_hints.pop(key, None)
            found[0].current = False

    def reset_groups(self, *groups: str) -> None:
        for group in groups:
            self.coordinators.pop(group, None)

    def reset_all(self) -> None:
        """Forget topics and coordinators (brokers stay: they are how to reach the cluster)."""
        self.topic_partitions.clear()
        self._topics.clear()
        self._rows.clear()
        self.topic_errors.clear()
        self.topic_ids.clear()
        self.coordinators.clear()
        self.leader_hints.clear()
        self.hinted_epochs.clear()


#: The row of a partition not merged yet (every merge overwrites it).
_NO_ROW: Row = (-1, -1, (), ())


def _fully_replicated(row: Row) -> bool:
    return len(row[2]) == len(row[3])
