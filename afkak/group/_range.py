"""The "range" assignor: each topic's partitions in contiguous ranges, topic by topic.

Kafka's algorithm: for each topic, the members subscribed to it in member
order; the first ``n % m`` get ``n // m + 1`` partitions, the rest ``n // m``.
"""

from __future__ import annotations

from collections.abc import Mapping

from afkak.common import TopicAndPartition

from ._assignor import Assignment, Member, RebalanceProtocol, sorted_members, subscribed_topics


class RangeAssignor:
    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(self, partitions: Mapping[str, int], members: Mapping[str, Member]) -> Assignment:
        result: Assignment = {m: [] for m in members}
        ordered = sorted_members(members.values())
        for topic in sorted(subscribed_topics(ordered)):
            count = partitions.get(topic, 0)
            consumers = [m.member_id for m in ordered if topic in m.subscription.topics]
            per, extra = divmod(count, len(consumers))
            start = 0
            for i, member_id in enumerate(consumers):
                length = per + (1 if i < extra else 0)
                result[member_id].extend(
                    TopicAndPartition(topic, p) for p in range(start, start + length)
                )
                start += length
        return result
