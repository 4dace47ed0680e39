"""The client's cache of cluster metadata: brokers, partitions, leaders, coordinators.

The cache is plain data plus the rules for merging a Metadata response into it
and for forgetting exactly what an error proved stale.  It does no I/O; the
client decides when to ask a broker and hands the converted answer here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

import attrs

from afkak._broker_errors import ErrorCode
from afkak.common import BrokerMetadata, PartitionMetadata, TopicAndPartition, TopicMetadata

UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@attrs.frozen
class MetadataSnapshot:
    """One Metadata response converted to afkak's structs.

    ``topics`` maps each topic name to its :class:`TopicMetadata` (whose
    ``partition_metadata`` is a ``{partition: PartitionMetadata}`` dict);
    ``topic_ids`` holds the ids of the topics that have one (Metadata v10+),
    ``leader_epochs`` each topic's ``{partition: leader epoch}`` (Metadata v7+;
    KIP-320).
    """

    brokers: Mapping[int, BrokerMetadata]
    topics: Mapping[str, TopicMetadata]
    topic_ids: Mapping[str, UUID] = attrs.field(factory=dict)
    leader_epochs: Mapping[str, Mapping[int, int]] = attrs.field(factory=dict)


@attrs.frozen
class BrokerChanges:
    """What a merge did to the set of brokers: the client closes these connections."""

    removed: frozenset[int]
    moved: frozenset[int]


class MetadataCache:
    """Mutable cluster metadata, exposed through the client's documented attributes.

    The dicts are mutated in place, never replaced, so a reference taken from
    the client stays current.
    """

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topic_partitions: dict[str, list[int]] = {}
        self.topics_to_brokers: dict[TopicAndPartition, BrokerMetadata | None] = {}
        self.partition_meta: dict[TopicAndPartition, PartitionMetadata] = {}
        self.topic_errors: dict[str, int] = {}
        self.topic_ids: dict[str, UUID] = {}
        #: Each partition's leader epoch (KIP-320), where Metadata v7+ gave one.
        self.leader_epochs: dict[TopicAndPartition, int] = {}
        self.coordinators: dict[str, BrokerMetadata] = {}
        #: KIP-951: the leader an error response named, kept by the reset that follows.
        self.leader_hints: dict[TopicAndPartition, BrokerMetadata] = {}
        #: The leader epoch of the last hint taken per partition: an older or equal
        #: one (a broker that has not heard of the move yet) is not followed.
        self.hinted_epochs: dict[TopicAndPartition, int] = {}

    # -- merging ------------------------------------------------------------

    def merge(self, snapshot: MetadataSnapshot) -> BrokerChanges:
        """Merge a Metadata response; report brokers that left or changed address.

        Every Metadata response lists all live brokers, so a broker missing from
        a non-empty list has left the cluster: its leaderships and coordinator
        roles are forgotten.  What did not change keeps its objects (a topic's
        partition list, each partition's :class:`PartitionMetadata`, the
        brokers), so that a periodic refresh of an unchanged cluster writes
        nothing, and what holds a reference (the producer's partitioner) sees
        that nothing moved.
        """
        changes = self.update_brokers(snapshot.brokers.values(), complete=bool(snapshot.brokers))
        brokers = {node_id: self.brokers[node_id] for node_id in snapshot.brokers}
        if self.leader_hints:  # the metadata supersedes the hints about its topics
            for key in [k for k in self.leader_hints if k.topic in snapshot.topics]:
                del self.leader_hints[key]
        no_epochs: Mapping[int, int] = {}
        for topic, topic_meta in snapshot.topics.items():
            topic_id = snapshot.topic_ids.get(topic)
            if topic_id != self.topic_ids.get(topic):  # new, or deleted and created again
                self._forget_partitions(topic)
                self.topic_ids.pop(topic, None)
            self._merge_topic(
                topic, topic_meta, brokers, snapshot.leader_epochs.get(topic, no_epochs)
            )
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
        for node_id, broker in listed.items():
            if self.brokers.get(node_id) != broker:
                self.brokers[node_id] = broker
        for node_id in removed:
            del self.brokers[node_id]
        if moved or removed:
            self._repoint(moved, removed)
        return BrokerChanges(removed=removed, moved=moved)

    def _repoint(self, moved: frozenset[int], removed: frozenset[int]) -> None:
        for key, broker in self.topics_to_brokers.items():
            if broker is None:
                continue
            if broker.node_id in removed:
                self.topics_to_brokers[key] = None
            elif broker.node_id in moved:
                self.topics_to_brokers[key] = self.brokers[broker.node_id]
        for group, broker in list(self.coordinators.items()):
            if broker.node_id in removed:
                del self.coordinators[group]
            elif broker.node_id in moved:
                self.coordinators[group] = self.brokers[broker.node_id]

    def _merge_topic(
        self,
        topic: str,
        meta: TopicMetadata,
        brokers: Mapping[int, BrokerMetadata],
        epochs: Mapping[int, int],
    ) -> None:
        """Update the topic's partitions in place, keeping those the answer knows less of.

        As the Java client (KIP-320), a partition whose leader epoch in the
        answer is older than the cached one comes from a broker that has not
        heard of the new leader yet: the cached leader stays (a recreated
        topic was forgotten first: its epochs start again).  The dicts are
        looked up with plain ``(topic, partition)`` tuples, equal to their
        :class:`TopicAndPartition` keys: an update keeps the key it replaces.
        """
        self.topic_errors[topic] = meta.topic_error_code
        partitions = meta.partition_metadata
        known = self.topic_partitions.get(topic)
        if not partitions:
            self._forget_partitions(topic)
            return
        if (
            known is None
            or len(known) != len(partitions)
            or any(p not in partitions for p in known)
        ):
            for gone in set(known or ()) - set(partitions):
                self._forget_partition((topic, gone))
            self.topic_partitions[topic] = sorted(partitions)
        partition_meta, leaders, leader_epochs = (
            self.partition_meta,
            self.topics_to_brokers,
            self.leader_epochs,
        )
        key: Any
        for partition, part_meta in partitions.items():
            key = (topic, partition)
            epoch = epochs.get(partition, -1)
            cached = partition_meta.get(key)
            if cached is None:
                key = TopicAndPartition(topic, partition)
            elif 0 <= epoch < leader_epochs.get(key, -1):
                continue
            if cached != part_meta:
                partition_meta[key] = part_meta
            leader = brokers.get(part_meta.leader)
            if cached is None or leaders.get(key) is not leader:
                leaders[key] = leader
            if epoch >= 0:
                leader_epochs[key] = epoch
            elif cached is not None:
                leader_epochs.pop(key, None)

    def _forget_partitions(self, topic: str) -> None:
        for partition in self.topic_partitions.pop(topic, ()):
            self._forget_partition((topic, partition))

    def _forget_partition(self, key: Any) -> None:
        self.topics_to_brokers.pop(key, None)
        self.partition_meta.pop(key, None)
        self.leader_epochs.pop(key, None)
        self.leader_hints.pop(key, None)

    # -- queries ------------------------------------------------------------

    def leader(self, key: TopicAndPartition) -> BrokerMetadata | None:
        """The known leader of a partition, or ``None`` when it must be (re)loaded."""
        return self.topics_to_brokers.get(key)

    def leader_epoch(self, key: TopicAndPartition) -> int:
        """The partition's leader epoch as last loaded (-1: unknown)."""
        return self.leader_epochs.get(key, -1)

    def error_for_topic(self, topic: str) -> int:
        return self.topic_errors.get(topic, UNKNOWN_TOPIC_OR_PARTITION)

    def partition_fully_replicated(self, key: TopicAndPartition) -> bool:
        meta = self.partition_meta.get(key)
        return meta is not None and len(meta.replicas) == len(meta.isr)

    def topic_fully_replicated(self, topic: str) -> bool:
        partitions = self.topic_partitions.get(topic)
        if not partitions:
            return False
        return all(self.partition_fully_replicated(TopicAndPartition(topic, p)) for p in partitions)

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
        current = self.topics_to_brokers.get(key)
        if key not in self.topics_to_brokers or current == leader:
            return False
        if epoch <= max(self.hinted_epochs.get(key, -1), self.leader_epochs.get(key, -1)):
            return False
        self.hinted_epochs[key] = self.leader_epochs[key] = epoch
        self.topics_to_brokers[key] = self.leader_hints[key] = leader
        meta = self.partition_meta.get(key)
        if meta is not None:
            self.partition_meta[key] = meta._replace(leader=leader.node_id)
        return True

    def reset_leader(self, key: TopicAndPartition) -> None:
        """Forget one partition's leader: the next request for it reloads its topic
        (unless the error that proved it stale named the new one, :meth:`hint_leader`)."""
        if key in self.topics_to_brokers:
            self.topics_to_brokers[key] = self.leader_hints.pop(key, None)

    def reset_groups(self, *groups: str) -> None:
        for group in groups:
            self.coordinators.pop(group, None)

    def reset_all(self) -> None:
        """Forget topics and coordinators (brokers stay: they are how to reach the cluster)."""
        self.topic_partitions.clear()
        self.topics_to_brokers.clear()
        self.partition_meta.clear()
        self.topic_errors.clear()
        self.topic_ids.clear()
        self.leader_epochs.clear()
        self.coordinators.clear()
        self.leader_hints.clear()
        self.hinted_epochs.clear()
