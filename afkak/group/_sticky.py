"""The "cooperative-sticky" assignor: balanced, moving as few partitions as possible.

1. Each member keeps the partitions it owned (as its subscription claims),
   if it still subscribes to their topic; when two members claim one
   partition, the claim from the later generation wins (equal ones: neither).
2. Unowned partitions go, most constrained first, to the eligible member
   with the fewest partitions.
3. While some member has at least two more partitions than an eligible
   member, one partition moves from the fuller to the emptier.  A member
   that received a partition never gives one away, so partitions move only
   as far as balance needs.
4. Cooperative step (Kafka's incremental rebalancing): a partition that
   changes owner is left out of this round, so its old owner revokes it and
   rejoins; the next rebalance gives it to the new owner.
"""

from __future__ import annotations

from collections.abc import Mapping

from afkak.common import TopicAndPartition

from ._assignor import (
    Assignment,
    Member,
    RebalanceProtocol,
    all_partitions,
    sorted_members,
    subscribed_topics,
)


class CooperativeStickyAssignor:
    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)

    def assign(self, partitions: Mapping[str, int], members: Mapping[str, Member]) -> Assignment:
        ordered = [m.member_id for m in sorted_members(members.values())]
        topics_of = {m: set(members[m].subscription.topics) for m in ordered}
        eligible = {
            t: [m for m in ordered if t in topics_of[m]]
            for t in subscribed_topics(members.values())
        }
        previous = _previous_owners(partitions, members, ordered, topics_of)
        owned: dict[str, set[TopicAndPartition]] = {m: set() for m in ordered}
        for tp, m in previous.items():
            owned[m].add(tp)
        unowned = [tp for tp in all_partitions(partitions, eligible) if tp not in previous]
        unowned.sort(key=lambda tp: len(eligible[tp.topic]))
        for tp in unowned:
            target = min(eligible[tp.topic], key=lambda m: len(owned[m]))
            owned[target].add(tp)
        _balance(owned, ordered, topics_of, eligible)
        return {m: sorted(tp for tp in owned[m] if previous.get(tp, m) == m) for m in ordered}


def _previous_owners(
    partitions: Mapping[str, int],
    members: Mapping[str, Member],
    ordered: list[str],
    topics_of: Mapping[str, set[str]],
) -> dict[TopicAndPartition, str]:
    owner: dict[TopicAndPartition, tuple[int, str | None]] = {}
    for m in ordered:
        sub = members[m].subscription
        for tp in sub.owned:
            if tp.topic not in topics_of[m] or not 0 <= tp.partition < partitions.get(tp.topic, 0):
                continue
            claim = owner.get(tp)
            if claim is None or sub.generation_id > claim[0]:
                owner[tp] = (sub.generation_id, m)
            elif sub.generation_id == claim[0]:
                owner[tp] = (claim[0], None)
    return {tp: m for tp, (_, m) in owner.items() if m is not None}


def _balance(
    owned: dict[str, set[TopicAndPartition]],
    ordered: list[str],
    topics_of: Mapping[str, set[str]],
    eligible: Mapping[str, list[str]],
) -> None:
    """Move partitions from fuller to emptier eligible members until no move helps."""
    while True:
        for giver in sorted(ordered, key=lambda m: -len(owned[m])):
            move = _best_move(owned, giver, topics_of, eligible)
            if move is not None:
                tp, taker = move
                owned[giver].discard(tp)
                owned[taker].add(tp)
                break
        else:
            return


def _best_move(
    owned: dict[str, set[TopicAndPartition]],
    giver: str,
    topics_of: Mapping[str, set[str]],
    eligible: Mapping[str, list[str]],
) -> tuple[TopicAndPartition, str] | None:
    have = len(owned[giver])
    best: tuple[int, str, str] | None = None
    for topic in sorted({tp.topic for tp in owned[giver]}):
        taker = min(eligible[topic], key=lambda m: len(owned[m]))
        if len(owned[taker]) + 1 < have and (best is None or len(owned[taker]) < best[0]):
            best = (len(owned[taker]), taker, topic)
    if best is None:
        return None
    _, taker, topic = best
    tp = max(tp for tp in owned[giver] if tp.topic == topic)
    return tp, taker
