"""What a partition assignor is, and the helpers every assignor shares.

The group leader runs the assignor the coordinator chose (the first in the
members' preference order that every member supports) for every member of
the group, whatever client runs it.  An assignor is any object with:

- ``name``: the protocol name members advertise ("range", ...);
- ``supported_protocols``: the :class:`RebalanceProtocol` values it works
  with.  A member rebalances cooperatively only if all its assignors support
  it, as Kafka's Java consumer;
- ``assign(partitions, members) -> {member_id: [TopicAndPartition]}``, given
  each subscribed topic's partition count and each :class:`Member`, which must
  return an entry for every member.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from afkak.common import TopicAndPartition
from afkak.protocol.consumer_protocol import Subscription


class RebalanceProtocol(enum.IntEnum):
    """EAGER: revoke everything, then rejoin.  COOPERATIVE: revoke only what moves."""

    EAGER = 0
    COOPERATIVE = 1


@attrs.frozen
class Member:
    """One group member as the leader sees it."""

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None

    @property
    def sort_key(self) -> tuple[int, str]:
        """Kafka's member order: static members by instance id first, then by member id."""
        if self.group_instance_id is not None:
            return (0, self.group_instance_id)
        return (1, self.member_id)


Assignment = dict[str, list[TopicAndPartition]]


@runtime_checkable
class PartitionAssignor(Protocol):
    @property
    def name(self) -> str:
        """The protocol name the group agrees on ("range", ...)."""
        ...

    @property
    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        """The rebalance protocols (eager, cooperative) this assignor works with."""
        ...

    def assign(self, partitions: Mapping[str, int], members: Mapping[str, Member]) -> Assignment:
        """Partitions for every member, from topic partition counts and subscriptions."""
        ...


def sorted_members(members: Iterable[Member]) -> list[Member]:
    return sorted(members, key=lambda m: m.sort_key)


def all_partitions(partitions: Mapping[str, int], topics: Iterable[str]) -> list[TopicAndPartition]:
    """Every partition of ``topics`` that the cluster has, sorted by topic then partition."""
    return [
        TopicAndPartition(t, p) for t in sorted(set(topics)) for p in range(partitions.get(t, 0))
    ]


def subscribed_topics(members: Iterable[Member]) -> set[str]:
    return {t for m in members for t in m.subscription.topics}


def common_protocol(assignors: Sequence[PartitionAssignor]) -> RebalanceProtocol:
    """The rebalance protocol a member uses: the highest all its assignors support."""
    common = set(RebalanceProtocol)
    for a in assignors:
        common &= set(a.supported_protocols)
    if not common:
        raise ValueError("the assignors have no rebalance protocol in common")
    return max(common)
