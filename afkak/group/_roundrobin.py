"""The "roundrobin" assignor: all partitions dealt to the members in turn.

Kafka's algorithm: every partition of every subscribed topic, sorted by
topic then partition, goes to the next member (in member order, cycling)
that subscribes to its topic.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._assignor import (
    Assignment,
    Member,
    RebalanceProtocol,
    all_partitions,
    sorted_members,
    subscribed_topics,
)


class RoundRobinAssignor:
    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(self, partitions: Mapping[str, int], members: Mapping[str, Member]) -> Assignment:
        result: Assignment = {m: [] for m in members}
        ordered = sorted_members(members.values())
        if not ordered:
            return result
        turn = 0
        for tp in all_partitions(partitions, subscribed_topics(ordered)):
            for step in range(len(ordered)):
                member = ordered[(turn + step) % len(ordered)]
                if tp.topic in member.subscription.topics:
                    result[member.member_id].append(tp)
                    turn = (turn + step + 1) % len(ordered)
                    break
        return result
