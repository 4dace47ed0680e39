"""The partition assignors: Kafka's layouts, and properties that hold for any group."""

from __future__ import annotations

import unittest
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings, strategies as st

from afkak.common import TopicAndPartition as TP
from afkak.group import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    Member,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    Subscription,
)
from afkak.group._assignor import common_protocol
from afkak.group._consumer_group import resolve_assignors
from afkak.test.helpers import property_examples

TOPICS = ("a", "b", "c")


def members(
    subs: dict[str, tuple[str, ...]], owned: dict[str, list[TP]] | None = None, generation: int = 1
) -> dict[str, Member]:
    owned = owned or {}
    return {
        m: Member(m, Subscription(tuple(t), tuple(owned.get(m, ())), generation))
        for m, t in subs.items()
    }


def flatten(assignment: dict[str, list[TP]]) -> list[TP]:
    return [tp for parts in assignment.values() for tp in parts]


class KnownLayoutTests(unittest.TestCase):
    """The exact layouts Kafka's Java assignors produce."""

    def test_range_per_topic_ranges(self) -> None:
        result = RangeAssignor().assign(
            {"a": 7, "b": 2}, members({"m1": ("a", "b"), "m2": ("a", "b"), "m3": ("a",)})
        )
        self.assertEqual(result["m1"], [TP("a", 0), TP("a", 1), TP("a", 2), TP("b", 0)])
        self.assertEqual(result["m2"], [TP("a", 3), TP("a", 4), TP("b", 1)])
        self.assertEqual(result["m3"], [TP("a", 5), TP("a", 6)])

    def test_range_orders_static_members_by_instance_id(self) -> None:
        subs = {
            "z": Member("z", Subscription(("a",)), "instance-1"),
            "a": Member("a", Subscription(("a",)), "instance-2"),
        }
        result = RangeAssignor().assign({"a": 2}, subs)
        self.assertEqual(result, {"z": [TP("a", 0)], "a": [TP("a", 1)]})

    def test_roundrobin_deals_in_turn_skipping_unsubscribed(self) -> None:
        result = RoundRobinAssignor().assign(
            {"a": 3, "b": 2}, members({"m1": ("a",), "m2": ("a", "b"), "m3": ("b",)})
        )
        self.assertEqual(result["m1"], [TP("a", 0), TP("a", 2)])
        self.assertEqual(result["m2"], [TP("a", 1), TP("b", 0)])
        self.assertEqual(result["m3"], [TP("b", 1)])

    def test_members_without_partitions_get_empty_lists(self) -> None:
        subs = members({"m1": ("a",), "m2": ("a",), "m3": ("a",)})
        for assignor in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor()):
            result = assignor.assign({"a": 1}, subs)
            self.assertEqual(sorted(result), ["m1", "m2", "m3"], assignor.name)
            self.assertEqual(sum(map(len, result.values())), 1, assignor.name)

    def test_sticky_keeps_owners_when_a_member_joins(self) -> None:
        before = {"m1": [TP("a", p) for p in (0, 1, 2)], "m2": [TP("a", p) for p in (3, 4, 5)]}
        subs = members({"m1": ("a",), "m2": ("a",), "m3": ("a",)}, before)
        result = CooperativeStickyAssignor().assign({"a": 6}, subs)
        # One partition leaves each old member; the cooperative round leaves them
        # unassigned until their owners revoked them.
        self.assertEqual(len(result["m1"]), 2)
        self.assertEqual(len(result["m2"]), 2)
        self.assertEqual(result["m3"], [])
        self.assertTrue(set(result["m1"]) < set(before["m1"]))
        self.assertTrue(set(result["m2"]) < set(before["m2"]))
        # Next round: the revoked partitions are unowned and go to m3.
        again = members({"m1": ("a",), "m2": ("a",), "m3": ("a",)}, result, generation=2)
        second = CooperativeStickyAssignor().assign({"a": 6}, again)
        self.assertEqual(second["m1"], result["m1"])
        self.assertEqual(second["m2"], result["m2"])
        self.assertEqual(len(second["m3"]), 2)

    def test_sticky_later_generation_wins_a_conflicting_claim(self) -> None:
        subs = {
            "m1": Member("m1", Subscription(("a",), (TP("a", 0),), 3)),
            "m2": Member("m2", Subscription(("a",), (TP("a", 0),), 4)),
        }
        result = CooperativeStickyAssignor().assign({"a": 2}, subs)
        self.assertEqual(result, {"m1": [TP("a", 1)], "m2": [TP("a", 0)]})

    def test_sticky_drops_claims_on_partitions_that_no_longer_exist(self) -> None:
        subs = members({"m1": ("a",)}, {"m1": [TP("a", 5), TP("b", 0)]})
        self.assertEqual(
            CooperativeStickyAssignor().assign({"a": 2}, subs), {"m1": [TP("a", 0), TP("a", 1)]}
        )

    def test_protocols(self) -> None:
        self.assertEqual(
            common_protocol([CooperativeStickyAssignor()]), RebalanceProtocol.COOPERATIVE
        )
        self.assertEqual(
            common_protocol([RangeAssignor(), CooperativeStickyAssignor()]), RebalanceProtocol.EAGER
        )
        self.assertEqual(sorted(ASSIGNORS), ["cooperative-sticky", "range", "roundrobin"])

    def test_resolve_assignors(self) -> None:
        custom = RangeAssignor()
        resolved = resolve_assignors(["roundrobin", custom])
        self.assertIsInstance(resolved[0], RoundRobinAssignor)
        self.assertIs(resolved[1], custom)
        with self.assertRaises(ValueError):
            resolve_assignors(["sticky"])
        with self.assertRaises(TypeError):
            resolve_assignors([object()])


@st.composite
def groups(draw: Any, identical: bool = False) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    partitions = {t: draw(st.integers(0, 12)) for t in TOPICS}
    names = draw(
        st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    if identical:
        topics = tuple(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)))
        return partitions, {m: topics for m in names}
    return partitions, {
        m: tuple(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))) for m in names
    }


@st.composite
def previous_ownership(
    draw: Any, partitions: dict[str, int], subs: dict[str, tuple[str, ...]]
) -> dict[str, list[TP]]:
    """Some earlier owners: each partition owned by at most one member subscribed to it."""
    owned: dict[str, list[TP]] = {m: [] for m in subs}
    for t, count in partitions.items():
        eligible = sorted(m for m, ts in subs.items() if t in ts)
        for p in range(count):
            owner = draw(st.sampled_from([None, *eligible]))
            if owner is not None:
                owned[owner].append(TP(t, p))
    return owned


class AssignorPropertyTests(unittest.TestCase):
    def check_exactly_once(
        self,
        partitions: dict[str, int],
        subs: dict[str, tuple[str, ...]],
        result: dict[str, list[TP]],
        complete: bool = True,
    ) -> None:
        self.assertEqual(set(result), set(subs))
        assigned = flatten(result)
        self.assertEqual(len(assigned), len(set(assigned)), "a partition assigned twice")
        for m, parts in result.items():
            for tp in parts:
                self.assertIn(tp.topic, subs[m], f"{tp} given to {m}, not subscribed")
        if complete:
            wanted = {TP(t, p) for m in subs for t in subs[m] for p in range(partitions[t])}
            self.assertEqual(set(assigned), wanted)

    def check_balanced(self, result: dict[str, list[TP]]) -> None:
        counts = [len(p) for p in result.values()]
        self.assertLessEqual(max(counts) - min(counts), 1, result)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(groups())
    def test_every_partition_once_to_a_subscriber(self, group: Any) -> None:
        partitions, subs = group
        for assignor in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor()):
            self.check_exactly_once(partitions, subs, assignor.assign(partitions, members(subs)))

    @settings(max_examples=property_examples(200), deadline=None)
    @given(groups())
    def test_range_matches_kafka_python(self, group: Any) -> None:
        """Golden: kafka-python's RangePartitionAssignor lays out the same ranges."""
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        partitions, subs = group
        cluster = SimpleNamespace(
            partitions_for_topic=lambda t: set(range(partitions[t])) if t in partitions else None
        )
        peers = [
            SimpleNamespace(
                member_id=m, group_instance_id=None, metadata=SimpleNamespace(topics=list(t))
            )
            for m, t in subs.items()
        ]
        theirs = {
            m: sorted(TP(t, p) for t, ps in a.assigned_partitions for p in ps)
            for m, a in RangePartitionAssignor.assign(cluster, peers).items()
        }
        ours = RangeAssignor().assign(partitions, members(subs))
        self.assertEqual({m: sorted(ps) for m, ps in ours.items()}, theirs)

    @settings(max_examples=property_examples(200), deadline=None)
    @given(groups(identical=True))
    def test_balanced_within_one_for_identical_subscriptions(self, group: Any) -> None:
        partitions, subs = group
        for assignor in (RoundRobinAssignor(), CooperativeStickyAssignor()):
            self.check_balanced(assignor.assign(partitions, members(subs)))
        if len(set(partitions.values()) | {0}) <= 2 and len(next(iter(subs.values()))) == 1:
            self.check_balanced(RangeAssignor().assign(partitions, members(subs)))

    @settings(max_examples=property_examples(300), deadline=None)
    @given(groups(identical=True).flatmap(lambda g: st.tuples(st.just(g), previous_ownership(*g))))
    def test_sticky_moves_only_what_balance_needs(self, drawn: Any) -> None:
        (partitions, subs), before = drawn
        assignor = CooperativeStickyAssignor()
        result = assignor.assign(partitions, members(subs, before))
        # Cooperative round: nothing is handed straight from one owner to another.
        self.check_exactly_once(partitions, subs, result, complete=False)
        previous = {tp: m for m, parts in before.items() for tp in parts}
        for m, parts in result.items():
            for tp in parts:
                self.assertIn(
                    previous.get(tp, m), (m,), f"{tp} moved straight from {previous.get(tp)} to {m}"
                )
        # Second round (the revocations done): complete, balanced, and a member either
        # kept all it owned or gave some up without taking anything new.
        second = assignor.assign(partitions, members(subs, result, generation=2))
        self.check_exactly_once(partitions, subs, second)
        self.check_balanced(second)
        for m, parts in second.items():
            kept = set(parts) & set(before[m])
            gained = set(parts) - set(before[m])
            lost = set(before[m]) - set(parts)
            self.assertFalse(gained and lost, f"{m} both gained {gained} and lost {lost}")
            self.assertEqual(len(kept), min(len(before[m]), len(parts)))

    @settings(max_examples=property_examples(200), deadline=None)
    @given(groups().flatmap(lambda g: st.tuples(st.just(g), previous_ownership(*g))))
    def test_sticky_with_mixed_subscriptions_converges(self, drawn: Any) -> None:
        """Cooperative rounds never double-assign and settle on a complete assignment."""
        (partitions, subs), before = drawn
        assignor = CooperativeStickyAssignor()
        current = before
        for generation in range(1, 7):
            result = assignor.assign(partitions, members(subs, current, generation))
            self.check_exactly_once(partitions, subs, result, complete=False)
            if result == current:
                break
            current = result
        else:
            self.fail(f"no stable assignment after 6 rounds: {current}")
        self.check_exactly_once(partitions, subs, current)

    @settings(max_examples=property_examples(100), deadline=None)
    @given(groups(identical=True))
    def test_sticky_is_stable_once_balanced(self, group: Any) -> None:
        partitions, subs = group
        assignor = CooperativeStickyAssignor()
        first = assignor.assign(partitions, members(subs))
        self.assertEqual(assignor.assign(partitions, members(subs, first, generation=2)), first)


if __name__ == "__main__":
    unittest.main()
