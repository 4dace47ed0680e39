"""The client's metadata cache and the Metadata request/response conversion."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from hypothesis import given, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from afkak.client._metadata import MetadataCache, MetadataSnapshot, TopicLayout
from afkak.client._metadata_call import MetadataCall
from afkak.common import (
    BrokerMetadata,
    LeaderNotAvailableError,
    PartitionMetadata,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.protocol.messages import MetadataRequest, MetadataResponse
from afkak.protocol.metadata_answer import Row

B1 = BrokerMetadata(1, "h1", 9092)
B2 = BrokerMetadata(2, "h2", 9092)
B3 = BrokerMetadata(3, "h3", 9092)
TID = UUID(int=7)


def topic(
    name: str,
    leaders: list[int],
    error: int = 0,
    isr_short: bool = False,
    epochs: list[int] | None = None,
) -> tuple[str, TopicLayout]:
    isr = (1,) if isr_short else (1, 2)
    rows: list[Row] = [(0, leader, (1, 2), isr) for leader in leaders]
    layout = TopicLayout(error, list(range(len(leaders))), rows, epochs or [-1] * len(leaders))
    return name, layout


def snapshot(
    brokers: list[BrokerMetadata],
    *topics: tuple[str, TopicLayout],
    ids: dict[str, UUID] | None = None,
) -> MetadataSnapshot:
    return MetadataSnapshot(
        brokers={b.node_id: b for b in brokers}, topics=dict(topics), topic_ids=ids or {}
    )


class MetadataCacheTests(SynchronousTestCase):
    def test_merge_fills_documented_maps(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [2, 1, -1]), ids={"t": TID}))
        self.assertEqual(cache.brokers, {1: B1, 2: B2})
        self.assertEqual(cache.topic_partitions, {"t": [0, 1, 2]})
        self.assertEqual(cache.topics_to_brokers[TopicAndPartition("t", 0)], B2)
        self.assertEqual(cache.topics_to_brokers[TopicAndPartition("t", 1)], B1)
        self.assertIsNone(cache.topics_to_brokers[TopicAndPartition("t", 2)])
        self.assertEqual(cache.partition_meta[TopicAndPartition("t", 1)].leader, 1)
        self.assertEqual(cache.topic_ids, {"t": TID})
        self.assertEqual(cache.error_for_topic("t"), 0)
        self.assertEqual(cache.error_for_topic("unknown"), 3)

    def test_topic_error_without_partitions(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1], ("t", TopicLayout(LeaderNotAvailableError.errno))))
        self.assertEqual(cache.error_for_topic("t"), 5)
        self.assertNotIn("t", cache.topic_partitions)

    def test_merge_replaces_stale_partitions(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2, 1])))
        cache.merge(snapshot([B1, B2], topic("t", [2])))
        self.assertEqual(cache.topic_partitions["t"], [0])
        self.assertEqual(set(cache.topics_to_brokers), {TopicAndPartition("t", 0)})
        self.assertEqual(set(cache.partition_meta), {TopicAndPartition("t", 0)})

    def test_departed_broker_is_forgotten_everywhere(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), topic("u", [2])))
        cache.coordinators["g"] = B2
        cache.coordinators["h"] = B1
        changes = cache.merge(snapshot([B1, B3], topic("t", [1, 3])))
        self.assertEqual(changes.removed, frozenset({2}))
        self.assertEqual(cache.brokers, {1: B1, 3: B3})
        self.assertIsNone(cache.leader(TopicAndPartition("u", 0)))
        self.assertEqual(cache.leader(TopicAndPartition("t", 1)), B3)
        self.assertEqual(cache.coordinators, {"h": B1})

    def test_moved_broker_is_repointed(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [2])))
        cache.coordinators["g"] = B2
        moved = BrokerMetadata(2, "elsewhere", 1234)
        changes = cache.merge(snapshot([B1, moved]))
        self.assertEqual(changes.moved, frozenset({2}))
        self.assertEqual(cache.leader(TopicAndPartition("t", 0)), moved)
        self.assertEqual(cache.coordinators["g"], moved)

    def test_partial_broker_update_removes_nothing(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2]))
        changes = cache.update_brokers([B3], complete=False)
        self.assertEqual(changes.removed, frozenset())
        self.assertEqual(set(cache.brokers), {1, 2, 3})

    def test_reset_topic_and_leader(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), topic("u", [2]), ids={"t": TID}))
        cache.reset_leader(TopicAndPartition("t", 0))
        self.assertIsNone(cache.leader(TopicAndPartition("t", 0)))
        self.assertEqual(cache.leader(TopicAndPartition("t", 1)), B2)
        cache.reset_topics("t", "nonexistent")
        self.assertNotIn("t", cache.topic_partitions)
        self.assertNotIn("t", cache.topic_ids)
        self.assertNotIn(TopicAndPartition("t", 1), cache.partition_meta)
        self.assertEqual(cache.error_for_topic("t"), 3)
        self.assertIn("u", cache.topic_partitions)

    def test_reset_all_keeps_brokers(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1], topic("t", [1])))
        cache.coordinators["g"] = B1
        topics_to_brokers = cache.topics_to_brokers
        cache.reset_all()
        self.assertEqual(cache.brokers, {1: B1})
        self.assertEqual(
            (cache.topic_partitions, cache.coordinators, topics_to_brokers), ({}, {}, {})
        )
        self.assertIs(cache.topics_to_brokers, topics_to_brokers)

    def test_replication(self) -> None:
        cache = MetadataCache()
        cache.merge(
            snapshot([B1, B2], topic("full", [1, 2]), topic("short", [1, 2], isr_short=True))
        )
        cache.merge(snapshot([B1, B2], ("empty", TopicLayout(0))))
        self.assertTrue(cache.topic_fully_replicated("full"))
        self.assertFalse(cache.topic_fully_replicated("short"))
        self.assertFalse(cache.topic_fully_replicated("empty"))
        self.assertFalse(cache.topic_fully_replicated("unknown"))
        self.assertTrue(cache.partition_fully_replicated(TopicAndPartition("full", 1)))
        self.assertFalse(cache.partition_fully_replicated(TopicAndPartition("short", 0)))
        self.assertFalse(cache.partition_fully_replicated(TopicAndPartition("nope", 0)))


class InPlaceRefreshTests(SynchronousTestCase):
    """A refresh updates what changed and keeps the objects of what did not."""

    def test_unchanged_topic_keeps_its_state_objects(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), ids={"t": TID}))
        key = TopicAndPartition("t", 1)
        state, partitions, leader = (
            cache._topics["t"],
            cache.topic_partitions["t"],
            cache.topics_to_brokers[key],
        )
        rows = list(state.rows)
        again = [BrokerMetadata(1, "h1", 9092), BrokerMetadata(2, "h2", 9092)]
        cache.merge(snapshot(again, topic("t", [1, 2]), ids={"t": TID}))
        self.assertIs(cache._topics["t"], state)
        self.assertIs(cache.topic_partitions["t"], partitions)
        self.assertTrue(all(a is b for a, b in zip(state.rows, rows, strict=True)))
        self.assertIs(cache.topics_to_brokers[key], leader)
        self.assertIs(cache.brokers[2], leader)

    def test_partitions_placed_alike_share_their_row(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2, 1]), topic("u", [1])))
        rows = cache._topics["t"].rows + cache._topics["u"].rows
        self.assertIs(rows[0], rows[2])
        self.assertIs(rows[0], rows[3])
        self.assertEqual(
            cache.partition_meta[TopicAndPartition("u", 0)],
            PartitionMetadata("u", 0, 0, 1, (1, 2), (1, 2)),
        )

    def test_changed_leader_updates_only_its_partition(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2])))
        state = cache._topics["t"]
        still = state.rows[0]
        partitions = cache.topic_partitions["t"]
        cache.merge(snapshot([B1, B2], topic("t", [1, 1])))
        key = TopicAndPartition("t", 1)
        self.assertEqual(cache.topics_to_brokers[key], B1)
        self.assertEqual(cache.partition_meta[key].leader, 1)
        self.assertIs(cache._topics["t"], state)
        self.assertIs(state.rows[0], still)
        self.assertIs(cache.topic_partitions["t"], partitions)

    def test_changed_leader_epoch_updates(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        cache.merge(snapshot([B1, B2], topic("t", [1], epochs=[3])))
        cache.merge(snapshot([B1, B2], topic("t", [2], epochs=[4])))
        self.assertEqual((cache.leader(key), cache.leader_epoch(key)), (B2, 4))
        cache.merge(snapshot([B1, B2], topic("t", [2])))  # no epochs (Metadata v6-)
        self.assertEqual((cache.leader(key), cache.leader_epoch(key)), (B2, -1))

    def test_removed_topic_goes(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), topic("u", [2, 1])))
        kept = cache._topics["t"]
        gone = ("u", TopicLayout(UnknownTopicOrPartitionError.errno))
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), gone))
        self.assertEqual(cache.topic_partitions, {"t": [0, 1]})
        self.assertEqual(
            set(cache.topics_to_brokers), {TopicAndPartition("t", 0), TopicAndPartition("t", 1)}
        )
        self.assertEqual(set(cache.partition_meta), set(cache.topics_to_brokers))
        self.assertEqual(cache.error_for_topic("u"), UnknownTopicOrPartitionError.errno)
        self.assertIs(cache._topics["t"], kept)
        self.assertNotIn("u", cache._topics)

    def test_recreated_topic_is_replaced(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2]), ids={"t": TID}))
        cache.reset_leader(TopicAndPartition("t", 0))
        cache.merge(snapshot([B1, B2], topic("t", [2]), ids={"t": UUID(int=8)}))
        self.assertEqual(cache.topic_partitions, {"t": [0]})
        self.assertEqual(cache.topics_to_brokers, {TopicAndPartition("t", 0): B2})
        self.assertEqual(cache.topic_ids, {"t": UUID(int=8)})

    def test_recreated_topic_of_as_many_partitions_starts_its_epochs_again(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        cache.merge(snapshot([B1, B2], topic("t", [1], epochs=[5]), ids={"t": TID}))
        cache.merge(snapshot([B1, B2], topic("t", [2], epochs=[0]), ids={"t": UUID(int=8)}))
        self.assertEqual((cache.leader(key), cache.leader_epoch(key)), (B2, 0))
        self.assertEqual(cache.topic_ids, {"t": UUID(int=8)})

    def test_refresh_restores_a_forgotten_leader(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2])))
        key = TopicAndPartition("t", 1)
        cache.reset_leader(key)
        cache.merge(snapshot([B1, B2], topic("t", [1, 2])))
        self.assertIs(cache.topics_to_brokers[key], cache.brokers[2])

    def test_brokers_back_after_a_rebootstrap_lead_an_unchanged_topic_again(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1, 2])))
        cache.update_brokers((), complete=True)
        self.assertIsNone(cache.leader(TopicAndPartition("t", 0)))
        cache.merge(snapshot([B1, B2], topic("t", [1, 2])))
        self.assertEqual(cache.leader(TopicAndPartition("t", 0)), B1)
        self.assertEqual(cache.leader(TopicAndPartition("t", 1)), B2)

    def test_an_answer_naming_the_hinted_leader_gives_the_listed_broker(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        cache.merge(snapshot([B1, B2], topic("t", [1], epochs=[1])))
        self.assertTrue(cache.hint_leader(key, B3, 2))
        cache.merge(snapshot([B1, B2], topic("t", [3], epochs=[2])))  # B3 is not listed
        self.assertIsNone(cache.leader(key))

    def test_a_partition_kept_for_its_newer_epoch_is_merged_again(self) -> None:
        cache = MetadataCache()
        key = TopicAndPartition("t", 0)
        cache.merge(snapshot([B1, B2], topic("t", [1, 1], epochs=[1, 1])))
        self.assertTrue(cache.hint_leader(key, B3, 5))
        cache.merge(snapshot([B1, B2], topic("t", [2, 1], epochs=[4, 1])))  # behind the hint
        self.assertEqual(cache.leader(key), B3)
        cache.merge(snapshot([B1, B2], topic("t", [3, 1], epochs=[5, 1])))  # B3 is not listed
        self.assertIsNone(cache.leader(key))

    def test_a_hint_is_superseded_by_the_metadata(self) -> None:
        cache = MetadataCache()
        cache.merge(snapshot([B1, B2], topic("t", [1], epochs=[1])))
        key = TopicAndPartition("t", 0)
        self.assertTrue(cache.hint_leader(key, B2, 2))
        cache.reset_leader(key)
        self.assertEqual(cache.leader(key), B2)  # the hint survives a reset...
        cache.merge(snapshot([B1, B2], topic("t", [1], epochs=[3])))
        self.assertEqual((cache.leader(key), cache.partition_meta[key].leader), (B1, 1))
        cache.reset_leader(key)
        self.assertIsNone(cache.leader(key))  # ...not a refresh


class MetadataCallTests(SynchronousTestCase):
    def test_named_topics_request_allows_auto_creation(self) -> None:
        call = MetadataCall(("a", "b"))
        request = call(12)
        self.assertEqual([t.name for t in request.topics], ["a", "b"])
        self.assertTrue(request.allow_auto_topic_creation)
        self.assertIsNone(call.min_version)
        request.encode(12)

    def test_all_topics_is_a_null_list(self) -> None:
        call = MetadataCall(None)
        self.assertEqual(call.min_version, 1)
        request = call(1)
        self.assertIsNone(request.topics)
        self.assertEqual(MetadataRequest.decode(request.encode(1), 1).topics, None)

    def test_brokers_only_is_an_empty_list(self) -> None:
        self.assertEqual(MetadataCall(()).build(9).topics, [])

    def test_parse(self) -> None:
        r = MetadataResponse
        response = r(
            brokers=[r.MetadataResponseBroker(node_id=1, host="h1", port=9092)],
            topics=[
                r.MetadataResponseTopic(
                    name="t",
                    topic_id=TID,
                    partitions=[
                        r.MetadataResponsePartition(
                            partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                        )
                    ],
                ),
                r.MetadataResponseTopic(name="gone", error_code=3),
            ],
        )
        call = MetadataCall(("t", "gone"))
        call(12)
        [snap] = call.parse(MetadataResponse.decode(response.encode(12), 12))
        self.assertEqual(snap.brokers, {1: B1})
        self.assertEqual(snap.topics["t"], TopicLayout(0, [0], [(0, 1, (1,), (1,))], [-1]))
        self.assertEqual(snap.topics["gone"], TopicLayout(3))
        self.assertEqual(snap.topic_ids, {"t": TID})

    def test_parse_shares_equal_rows(self) -> None:
        r = MetadataResponse
        parts = [
            r.MetadataResponsePartition(
                partition_index=p,
                leader_id=1,
                replica_nodes=[1, 2],
                isr_nodes=[1, 2],
                leader_epoch=p,
            )
            for p in range(3)
        ]
        response = r(topics=[r.MetadataResponseTopic(name=n, partitions=parts) for n in "ab"])
        call = MetadataCall(("a", "b"))
        [snap] = call.parse(MetadataResponse.decode(response.encode(12), 12))
        rows = [row for t in snap.topics.values() for row in t.rows]
        self.assertEqual(len({id(row) for row in rows}), 1)
        self.assertEqual([t.epochs for t in snap.topics.values()], [[0, 1, 2], [0, 1, 2]])

    def test_parse_orders_partitions_by_number(self) -> None:
        r = MetadataResponse
        parts = [
            r.MetadataResponsePartition(partition_index=p, leader_id=leader, leader_epoch=p)
            for p, leader in ((2, 1), (0, 2), (2, 3))
        ]
        response = r(topics=[r.MetadataResponseTopic(name="t", partitions=parts)])
        [snap] = MetadataCall(("t",)).parse(MetadataResponse.decode(response.encode(12), 12))
        self.assertEqual(
            snap.topics["t"], TopicLayout(0, [0, 2], [(0, 2, (), ()), (0, 3, (), ())], [0, 2])
        )

    def test_parse_top_level_error(self) -> None:
        call = MetadataCall(())
        call(13)
        with self.assertRaises(Exception) as cm:
            call.parse(MetadataResponse(error_code=31))
        self.assertEqual(cm.exception.errno, 31)


_brokers = st.lists(st.integers(0, 4), unique=True, max_size=4).map(
    lambda ids: [BrokerMetadata(i, f"h{i}", 9092) for i in ids]
)
_topics = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.lists(st.integers(-1, 4), max_size=3),
    max_size=3,
)
#: A few topic layouts, so that the same one is merged again: ``(name, [(leader, epoch)])``.
_layouts = st.sampled_from(
    [
        (("a", [(1, -1), (2, -1)]),),
        (("a", [(1, -1), (2, -1)]), ("b", [(9, 1)])),
        (("a", [(2, -1), (1, -1)]), ("b", [(9, 1), (1, 1)])),
        (("a", [(1, 0)]), ("b", [(9, 2)])),
    ]
)


class MetadataCachePropertyTests(SynchronousTestCase):
    @given(st.lists(st.tuples(_brokers, _topics), min_size=1, max_size=5))
    def test_merges_keep_the_maps_consistent(self, rounds: list[Any]) -> None:
        cache = MetadataCache()
        for brokers, topics in rounds:
            cache.merge(
                snapshot(brokers, *(topic(name, leaders) for name, leaders in topics.items()))
            )
            self.assertEqual(set(cache.topics_to_brokers), set(cache.partition_meta))
            for key, leader in cache.topics_to_brokers.items():
                self.assertIn(key.partition, cache.topic_partitions[key.topic])
                if leader is not None:
                    self.assertEqual(cache.brokers[leader.node_id], leader)
            for name, partitions in cache.topic_partitions.items():
                self.assertEqual(partitions, sorted(partitions))
                self.assertIn(name, cache.topic_errors)

    @given(
        st.lists(
            st.one_of(
                st.tuples(st.just("merge"), st.sampled_from([(1, 2), (1,), (2, 9), ()]), _layouts),
                st.tuples(st.just("reset"), st.sampled_from("ab"), st.integers(0, 1)),
                st.tuples(st.just("hint"), st.sampled_from("ab"), st.integers(0, 1)),
                st.tuples(st.just("rebootstrap")),
            ),
            max_size=12,
        )
    )
    def test_a_merge_leaves_the_leaders_it_names(self, steps: list[Any]) -> None:
        """Whatever happened since (resets, hints, brokers gone and back), a merge
        leaves each partition it lists led by the listed broker of its row (unless
        the partition's cached leader epoch is newer), also when the topic is
        unchanged and no partition is looked at."""
        cache = MetadataCache()
        hint = BrokerMetadata(9, "h9-hint", 9092)
        for step in steps:
            if step[0] == "merge":
                _, ids, topics = step
                brokers = [BrokerMetadata(i, f"h{i}", 9092) for i in ids]
                listed = {b.node_id: b for b in brokers}
                keys = [
                    (TopicAndPartition(name, partition), leader, epoch)
                    for name, parts in topics
                    for partition, (leader, epoch) in enumerate(parts)
                ]
                before = {key: (cache.leader(key), cache.leader_epoch(key)) for key, _, _ in keys}
                # An answer listing no brokers drops none (it is not the cluster's list).
                dropped = set(cache.brokers) - set(listed) if listed else set()
                cache.merge(
                    snapshot(
                        brokers,
                        *(
                            topic(name, [p[0] for p in parts], epochs=[p[1] for p in parts])
                            for name, parts in topics
                        ),
                    )
                )
                for key, leader, epoch in keys:
                    old_leader, old_epoch = before[key]
                    if 0 <= epoch < old_epoch:
                        # The cached leader stays, unless this answer drops its broker.
                        kept = old_leader is not None and old_leader.node_id not in dropped
                        self.assertEqual(cache.leader(key), old_leader if kept else None)
                    else:
                        self.assertEqual(cache.leader(key), listed.get(leader))
                        self.assertEqual(cache.partition_meta[key].leader, leader)
            elif step[0] == "reset":
                cache.reset_leader(TopicAndPartition(step[1], step[2]))
            elif step[0] == "hint":
                cache.hint_leader(TopicAndPartition(step[1], step[2]), hint, 1)
            else:
                cache.update_brokers((), complete=True)
