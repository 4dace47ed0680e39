"""afkak.admin.KafkaAdminClient against the fake cluster: every call, per-item errors,
routing (controller, coordinator, leaders) and its retries, bad arguments."""

from __future__ import annotations

import math
import random
import uuid
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak._retry import backoff_policy
from afkak.admin import (
    AlterOp,
    ConfigChange,
    ConfigResource,
    ConfigSource,
    IsolationLevel,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
    OffsetReset,
    OffsetSpec,
)
from afkak.client import KafkaClient
from afkak.common import (
    BrokerConnectionError,
    CancelledError,
    GroupIdNotFound,
    InvalidConfig,
    InvalidPartitions,
    NotController,
    NotCoordinator,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    TopicAlreadyExists,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.group import committed_offsets, describe_group, group_lag, list_groups
from afkak.protocol.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeGroupsRequest,
    OffsetFetchRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.testing import FakeKafkaCluster

TP = TopicAndPartition


def on_fake_cluster(
    case: SynchronousTestCase, seed: int = 0
) -> tuple[Clock, FakeKafkaCluster, KafkaClient]:
    """A Clock (the case's, for a ClockTestCase), a 3-broker fake cluster without
    auto-creation, and a client of it (its jitter seeded with *seed*)."""
    clock = getattr(case, "clock", None) or Clock()
    cluster = FakeKafkaCluster(brokers=3, reactor=clock, auto_create_topics=False)
    client = KafkaClient(
        cluster.bootstrap_hosts,
        reactor=clock,
        endpoint_factory=cluster.endpoint_factory,
        rng=random.Random(seed),
    )
    case.addCleanup(client.close)
    return clock, cluster, client


def resend_gaps(
    clock: Clock, cluster: FakeKafkaCluster, admin: KafkaAdminClient, seconds: float
) -> tuple[list[float], Any]:
    """Seconds between CreateTopics refused with NOT_CONTROLLER, over *seconds*."""
    cluster.fail_next(CreateTopicsRequest, NotController, count=20)
    before = len(cluster.requests_seen)
    d = admin.create_topics([NewTopic("c", 1, 1)])
    sent: list[float] = []
    for _ in range(round(seconds / 0.001)):
        seen = len([r for r in cluster.requests_seen[before:] if r.api_key == 19])
        sent.extend([clock.seconds()] * (seen - len(sent)))
        clock.advance(0.001)
    return [round(b - a, 3) for a, b in zip(sent, sent[1:], strict=False)], d


class AdminFakeClusterCase(ClockTestCase):
    """A 3-broker fake cluster on a Clock, and an admin client of it."""

    def setUp(self) -> None:
        super().setUp()
        self.clock, self.cluster, self.client = on_fake_cluster(self)
        self.admin = KafkaAdminClient(self.client)

    def result(self, d: Any) -> Any:
        for _ in range(50):
            if d.called:
                break
            self.clock.advance(1)
        return self.successResultOf(d)


class AdminFakeClusterTests(AdminFakeClusterCase):
    # topics

    def test_create_topics_per_item_errors(self) -> None:
        self.cluster.create_topic("there", 1)
        results = self.result(
            self.admin.create_topics(
                [NewTopic("t1", 3, 2, configs={"retention.ms": "1000"}), NewTopic("there", 1, 1)]
            )
        )
        self.assertIsNone(results["t1"].error)
        self.assertEqual((results["t1"].num_partitions, results["t1"].replication_factor), (3, 2))
        self.assertEqual(results["t1"].topic_id, self.cluster.topic_id("t1"))
        self.assertIsInstance(results["there"].error, TopicAlreadyExists)
        self.assertEqual(len(self.cluster.state.topics["t1"].partitions), 3)
        self.assertEqual(self.cluster.state.topics["t1"].configs, {"retention.ms": "1000"})

    def test_create_topics_validate_only_and_assignment(self) -> None:
        results = self.result(
            self.admin.create_topics(
                [NewTopic("v", replica_assignment=[[1, 2], [2, 0]])], validate_only=True
            )
        )
        self.assertIsNone(results["v"].error)
        self.assertNotIn("v", self.cluster.state.topics)
        self.result(self.admin.create_topics([NewTopic("v", replica_assignment=[[1, 2], [2, 0]])]))
        self.assertEqual(
            [p.replicas for p in self.cluster.state.topics["v"].partitions], [[1, 2], [2, 0]]
        )

    def test_create_topics_goes_to_controller_and_retries_not_controller(self) -> None:
        self.cluster.fail_next(CreateTopicsRequest, NotController)
        results = self.result(self.admin.create_topics([NewTopic("c", 1, 1)]))
        self.assertIsNone(results["c"].error)
        sent = [r for r in self.cluster.requests_seen if r.api_key == 19]
        self.assertEqual([r.broker for r in sent], [0, 0])

    def test_not_controller_resends_are_bounded_and_double(self) -> None:
        """``retries`` resends, ``retry_backoff`` apart and doubling (±20 %); then the
        refusal stays."""
        admin = KafkaAdminClient(self.client, retries=2, retry_backoff=1.0, retry_backoff_max=8)
        gaps, d = resend_gaps(self.clock, self.cluster, admin, 4)
        self.assertEqual(len(gaps), 2)
        self.assertTrue(0.8 <= gaps[0] <= 1.2 and 1.6 <= gaps[1] <= 2.4, gaps)
        self.assertIsInstance(self.successResultOf(d)["c"].error, NotController)
        # No resend is left pending (the connections' request timers go with them).
        self.successResultOf(self.client.close())
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_resends_are_capped_and_jittered_by_the_clients_rng(self) -> None:
        """As every other policy: doubling to ``retry_backoff_max`` (Kafka's 1 s), each
        wait jittered by ±20 % from the client's ``rng``: the same seed, the same waits."""

        def gaps(seed: int) -> list[float]:
            _, cluster, client = on_fake_cluster(self, seed)
            admin = KafkaAdminClient(client, retries=5, retry_backoff=0.5)
            return resend_gaps(self.clock, cluster, admin, 6)[0]

        first = gaps(1)
        self.assertEqual(len(first), 5)
        self.assertTrue(0.4 <= first[0] <= 0.6, first)
        self.assertTrue(all(0.8 <= gap <= 1.2 for gap in first[1:]), first)
        self.assertEqual(len(set(first[1:])), 4, first)  # jittered, not 1 s each time
        self.assertEqual(gaps(1), first)
        self.assertNotEqual(gaps(2), first)

    def test_delete_topics_by_name_and_id(self) -> None:
        self.cluster.create_topic("a", 1)
        b = self.cluster.create_topic("b", 1)
        missing = uuid.uuid4()
        results = self.result(self.admin.delete_topics(["a", b.topic_id, "nope", missing]))
        self.assertIsNone(results["a"].error)
        self.assertIsNone(results[b.topic_id].error)
        self.assertEqual(results[b.topic_id].name, "b")
        self.assertIsInstance(results["nope"].error, UnknownTopicOrPartitionError)
        self.assertIsNotNone(results[missing].error)
        self.assertEqual(self.cluster.state.topics, {})

    def test_delete_topics_retries_not_controller_per_topic(self) -> None:
        self.cluster.create_topic("a", 1)
        self.cluster.fail_next(DeleteTopicsRequest, NotController, count=2)
        results = self.result(self.admin.delete_topics(["a"]))
        self.assertIsNone(results["a"].error)
        self.assertEqual(len([r for r in self.cluster.requests_seen if r.api_key == 20]), 3)

    def test_create_partitions(self) -> None:
        self.cluster.create_topic("g", 1, 1)
        results = self.result(
            self.admin.create_partitions({"g": 3, "missing": 2}, validate_only=False)
        )
        self.assertIsNone(results["g"].error)
        self.assertIsInstance(results["missing"].error, UnknownTopicOrPartitionError)
        self.assertEqual(len(self.cluster.state.topics["g"].partitions), 3)
        shrink = self.result(self.admin.create_partitions({"g": NewPartitions(2)}))
        self.assertIsInstance(shrink["g"].error, InvalidPartitions)
        checked = self.result(self.admin.create_partitions({"g": 5}, validate_only=True))
        self.assertTrue(checked["g"].ok)
        self.assertEqual(len(self.cluster.state.topics["g"].partitions), 3)

    def test_list_topics_hides_internal(self) -> None:
        self.cluster.create_topic("b", 1)
        self.cluster.create_topic("a", 1)
        self.cluster.create_topic("__consumer_offsets", 1)
        self.cluster.create_topic("__mine", 1)  # a user's topic, not an internal one
        names = [t.name for t in self.result(self.admin.list_topics())]
        self.assertEqual(names, ["__mine", "a", "b"])
        everything = self.result(self.admin.list_topics(internal=True))
        self.assertEqual([t.name for t in everything], ["__consumer_offsets", "__mine", "a", "b"])
        self.assertEqual(everything[2].topic_id, self.cluster.topic_id("a"))

    def test_describe_topics(self) -> None:
        self.cluster.create_topic("d", 2, 2)
        results = self.result(self.admin.describe_topics(["d", "missing"]))
        d = results["d"]
        self.assertIsNone(d.error)
        self.assertEqual(d.topic_id, self.cluster.topic_id("d"))
        self.assertEqual(
            [(p.partition, p.leader, p.replicas) for p in d.partitions],
            [(0, 0, (0, 1)), (1, 1, (1, 2))],
        )
        self.assertEqual(d.partitions[0].isr, (0, 1))
        self.assertIsInstance(results["missing"].error, UnknownTopicOrPartitionError)
        self.assertNotIn("missing", self.cluster.state.topics)  # never auto-created
        # DescribeTopicPartitions (KIP-966) answered: ELR known (empty), epochs given.
        self.assertEqual(d.partitions[0].eligible_leader_replicas, ())
        self.assertEqual(
            d.partitions[0].leader_epoch, self.cluster.state.topics["d"].partitions[0].leader_epoch
        )
        self.assertIn(75, [r.api_key for r in self.cluster.requests_seen])

    def test_describe_topics_pages_through_the_partition_limit(self) -> None:
        self.cluster.create_topic("a", 3)
        self.cluster.create_topic("b", 2)
        self.cluster.create_topic("c", 4)
        results = self.result(self.admin.describe_topics(["c", "a", "b"], partition_limit=2))
        self.assertEqual(
            {n: [p.partition for p in t.partitions] for n, t in results.items()},
            {"c": [0, 1, 2, 3], "a": [0, 1, 2], "b": [0, 1]},
        )
        pages = [r for r in self.cluster.requests_seen if r.api_key == 75]
        self.assertEqual(len(pages), 5)  # 9 partitions, 2 a page

    def test_describe_topics_falls_back_to_metadata_before_kafka_3_8(self) -> None:
        clock = Clock()
        cluster = FakeKafkaCluster(brokers=3, reactor=clock, api_versions={75: None})
        client = KafkaClient(
            cluster.bootstrap_hosts, reactor=clock, endpoint_factory=cluster.endpoint_factory
        )
        self.addCleanup(client.close)
        cluster.create_topic("old", 2)
        d = KafkaAdminClient(client).describe_topics(["old", "gone"])
        clock.advance(1)
        results = self.successResultOf(d)
        self.assertEqual([p.partition for p in results["old"].partitions], [0, 1])
        self.assertIsNone(results["old"].partitions[0].eligible_leader_replicas)
        self.assertIsInstance(results["gone"].error, UnknownTopicOrPartitionError)

    def test_describe_cluster(self) -> None:
        c = self.result(self.admin.describe_cluster())
        self.assertEqual(c.cluster_id, "afkak-fake-cluster")
        self.assertEqual(c.controller_id, 0)
        self.assertEqual([b.node_id for b in c.brokers], [0, 1, 2])
        self.assertEqual(c.controller.host, "broker-0")

    # configs

    def test_describe_and_alter_topic_configs(self) -> None:
        self.cluster.create_topic("c", 1)
        res = ConfigResource.topic("c")
        changes = {
            res: [
                ConfigChange("retention.ms", "5000"),
                ConfigChange("cleanup.policy", "compact", AlterOp.APPEND),
            ]
        }
        self.assertTrue(self.result(self.admin.incremental_alter_configs(changes))[res].ok)
        described = self.result(self.admin.describe_configs([res], include_synonyms=True))[res]
        self.assertIsNone(described.error)
        entry = described.entries["retention.ms"]
        self.assertEqual((entry.value, entry.source), ("5000", ConfigSource.DYNAMIC_TOPIC_CONFIG))
        self.assertEqual(
            [s.source for s in entry.synonyms],
            [ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DEFAULT_CONFIG],
        )
        self.assertEqual(described.entries["cleanup.policy"].value, "delete,compact")
        self.assertTrue(described.entries["segment.bytes"].is_default)
        back = {res: [ConfigChange("retention.ms", op=AlterOp.DELETE)]}
        self.result(self.admin.incremental_alter_configs(back))
        only = self.result(self.admin.describe_configs([res], keys=["retention.ms"]))[res]
        self.assertEqual(list(only.entries), ["retention.ms"])
        self.assertTrue(only.entries["retention.ms"].is_default)

    def test_alter_configs_errors_per_resource(self) -> None:
        self.cluster.create_topic("c", 1)
        good, bad = ConfigResource.topic("c"), ConfigResource.topic("missing")
        results = self.result(
            self.admin.incremental_alter_configs(
                {good: [ConfigChange("no.such.key", "1")], bad: [ConfigChange("retention.ms", "1")]}
            )
        )
        self.assertIsInstance(results[good].error, InvalidConfig)
        self.assertIsInstance(results[bad].error, UnknownTopicOrPartitionError)

    def test_broker_configs_asked_of_that_broker(self) -> None:
        res = ConfigResource.broker(2)
        described = self.result(self.admin.describe_configs([res]))[res]
        self.assertIsNone(described.error)
        self.assertEqual(
            described.entries["num.partitions"].source, ConfigSource.STATIC_BROKER_CONFIG
        )
        self.assertEqual([r.broker for r in self.cluster.requests_seen if r.api_key == 32], [2])

    # groups and offsets

    def commit_some(self) -> None:
        self.cluster.create_topic("t", 2, 1)
        self.cluster.append("t", 0, [b"a", b"b", b"c", b"d"])
        self.cluster.append("t", 1, [b"x"])
        self.cluster.commit("g", "t", 0, 1)

    def test_group_offsets_list_alter_delete(self) -> None:
        self.commit_some()
        self.assertEqual(self.result(self.admin.list_consumer_group_offsets("g")), {TP("t", 0): 1})
        self.assertEqual(
            self.result(self.admin.list_consumer_group_offsets("g", ["t"])),
            {TP("t", 0): 1, TP("t", 1): -1},
        )
        altered = self.result(self.admin.alter_consumer_group_offsets("g", {TP("t", 1): 1}))
        self.assertTrue(altered[TP("t", 1)].ok)
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 1)].offset, 1)
        deleted = self.result(self.admin.delete_consumer_group_offsets("g", [TP("t", 0)]))
        self.assertTrue(deleted[TP("t", 0)].ok)
        self.assertNotIn(("g", "t", 0), self.cluster.committed_offsets)

    def test_all_committed_offsets_are_asked_for_by_name(self) -> None:
        """Tansu answers OffsetFetch's null topic list ("all") with a null array, which
        ``afkak groups lag GROUP`` printed as a DecodeError (issue 26): afkak names
        every partition instead, and keeps those the group committed."""
        self.commit_some()
        self.cluster.create_topic("other", 2)
        self.assertEqual(self.result(self.admin.group_lag("g"))[TP("t", 0)].log_end, 4)
        fetches = [r.request for r in self.cluster.requests_seen if r.api_key == 9]
        self.assertTrue(fetches)
        for request in fetches:
            self.assertEqual(
                sorted((t.name, list(t.partition_indexes)) for t in request.topics),
                [("other", [0, 1]), ("t", [0, 1])],
            )

    def test_coordinator_moves_are_retried(self) -> None:
        self.commit_some()
        self.cluster.fail_next(OffsetFetchRequest, NotCoordinator)
        self.cluster.fail_next(DescribeGroupsRequest, NotCoordinator)
        self.assertEqual(self.result(self.admin.list_consumer_group_offsets("g")), {TP("t", 0): 1})
        self.assertEqual(
            self.result(self.admin.describe_consumer_groups(["g"]))["g"].state, "Empty"
        )

    def test_lost_coordinator_connection_is_retried(self) -> None:
        self.commit_some()
        self.cluster.drop_next(OffsetFetchRequest)
        self.assertEqual(self.result(self.admin.list_consumer_group_offsets("g")), {TP("t", 0): 1})

    def test_list_describe_delete_groups(self) -> None:
        self.commit_some()
        self.cluster.commit("h", "t", 0, 0)
        self.assertEqual(
            [g.group_id for g in self.result(self.admin.list_consumer_groups())], ["g", "h"]
        )
        self.assertEqual(self.result(self.admin.list_consumer_groups(states=["Stable"])), [])
        self.assertEqual(len(self.result(self.admin.list_consumer_groups(states=["Empty"]))), 2)
        results = self.result(self.admin.delete_consumer_groups(["g", "unknown"]))
        self.assertTrue(results["g"].ok)
        self.assertIsInstance(results["unknown"].error, GroupIdNotFound)
        self.assertEqual(
            [g.group_id for g in self.result(self.admin.list_consumer_groups())], ["h"]
        )

    def test_old_group_functions_delegate(self) -> None:
        self.commit_some()
        self.assertEqual(self.result(committed_offsets(self.client, "g")), {TP("t", 0): 1})
        lag = self.result(group_lag(self.client, "g"))
        self.assertEqual(
            (lag[TP("t", 0)].committed, lag[TP("t", 0)].log_end, lag[TP("t", 0)].lag), (1, 4, 3)
        )
        self.assertEqual([g.group_id for g in self.result(list_groups(self.client))], ["g"])
        self.assertEqual(self.result(describe_group(self.client, "g")).state, "Empty")

    def test_reset_plans(self) -> None:
        self.commit_some()
        self.cluster.delete_records("t", 0, 1)
        plan = self.result(self.admin.plan_offset_reset("g", ["t"], to_earliest=True))
        self.assertEqual(plan, {TP("t", 0): OffsetReset(1, 1), TP("t", 1): OffsetReset(-1, 0)})
        plan = self.result(self.admin.plan_offset_reset("g", ["t"], to_latest=True))
        self.assertEqual([r.target for r in plan.values()], [4, 1])
        plan = self.result(self.admin.plan_offset_reset("g", [TP("t", 0)], shift_by=2))
        self.assertEqual(plan, {TP("t", 0): OffsetReset(1, 3)})
        plan = self.result(self.admin.plan_offset_reset("g", [TP("t", 0)], shift_by=-10))
        self.assertEqual(plan[TP("t", 0)].target, 1)  # clamped to earliest
        plan = self.result(self.admin.plan_offset_reset("g", [TP("t", 0)], to_offset=99))
        self.assertEqual(plan[TP("t", 0)].target, 4)  # clamped to latest
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, 1)  # a plan only
        self.result(self.admin.reset_offsets("g", {TP("t", 0): OffsetReset(1, 3)}))
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, 3)

    def test_reset_to_timestamp(self) -> None:
        self.cluster.create_topic("t", 1, 1)
        self.cluster.append("t", 0, [b"a", b"b"], timestamps=[1000, 2000])
        plan = self.result(self.admin.plan_offset_reset("g", ["t"], to_timestamp=1500))
        self.assertEqual(plan[TP("t", 0)].target, 1)
        plan = self.result(self.admin.plan_offset_reset("g", ["t"], to_timestamp=9000))
        self.assertEqual(plan[TP("t", 0)].target, 2)

    # records and offsets

    def test_list_offsets(self) -> None:
        self.cluster.create_topic("t", 2, 1)
        self.cluster.append("t", 0, [b"a", b"b", b"c"], timestamps=[1000, 3000, 2000])
        specs = {
            TP("t", 0): OffsetSpec.MAX_TIMESTAMP,
            TP("t", 1): OffsetSpec.LATEST,
            TP("missing", 0): OffsetSpec.EARLIEST,
        }
        results = self.result(self.admin.list_offsets(specs))
        self.assertEqual((results[TP("t", 0)].offset, results[TP("t", 0)].timestamp), (1, 3000))
        self.assertEqual(results[TP("t", 1)].offset, 0)
        self.assertIsInstance(results[TP("missing", 0)].error, UnknownTopicOrPartitionError)
        by_time = self.result(
            self.admin.list_offsets(
                {TP("t", 0): 1500}, isolation_level=IsolationLevel.READ_COMMITTED
            )
        )
        self.assertEqual((by_time[TP("t", 0)].offset, by_time[TP("t", 0)].timestamp), (1, 3000))

    def test_delete_records_at_leaders_retrying_moved_leaders(self) -> None:
        self.cluster.create_topic("t", 2, 1)
        self.cluster.append("t", 0, [b"a", b"b", b"c"])
        self.cluster.append("t", 1, [b"x", b"y"])
        self.cluster.fail_next(DeleteRecordsRequest, NotLeaderForPartitionError, broker=1)
        results = self.result(
            self.admin.delete_records({TP("t", 0): 2, TP("t", 1): -1, TP("t", 5): 0})
        )
        self.assertEqual(results[TP("t", 0)].low_watermark, 2)
        self.assertEqual(results[TP("t", 1)].low_watermark, 2)
        self.assertIsInstance(results[TP("t", 5)].error, UnknownTopicOrPartitionError)
        self.assertEqual(self.cluster.partition("t", 0).log_start_offset, 2)

    # the calls themselves

    def test_bad_arguments_raise_at_the_call(self) -> None:
        with self.assertRaises(TypeError):
            KafkaAdminClient("not a client")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            self.admin.create_topics(["t"])  # type: ignore[list-item]
        with self.assertRaises(ValueError):
            self.admin.create_topics([NewTopic("bad name!")])
        with self.assertRaises(ValueError):
            NewTopic("t", 3, replica_assignment=[[0]])
        with self.assertRaises(ValueError):
            self.admin.create_partitions({"t": 0})
        with self.assertRaises(ValueError):
            self.admin.plan_offset_reset("g", ["t"], to_earliest=True, to_latest=True)
        with self.assertRaises(ValueError):
            self.admin.list_offsets({TP("t", 0): -7})
        with self.assertRaises(ValueError):
            self.admin.describe_configs([ConfigResource.broker("x")])

    def test_cancel(self) -> None:
        self.cluster.create_topic("t", 1)
        self.cluster.delay(CreateTopicsRequest, 5)
        d = self.admin.create_topics([NewTopic("u", 1, 1)])
        d.cancel()
        self.failureResultOf(d, CancelledError)

    def test_items_a_response_leaves_out_get_an_error(self) -> None:
        """A broker answering for fewer topics than asked: those get UnknownError, the
        others their answers; nothing is left hanging."""
        from afkak._broker_errors import UnknownError
        from afkak.testing import _handlers

        honest = _handlers.SERVED_APIS[19]

        def forgetful(ctx: Any, request: Any, version: int) -> Any:
            response = honest(ctx, request, version)
            response.topics = response.topics[:1]
            return response

        _handlers.SERVED_APIS[19] = forgetful
        self.addCleanup(_handlers.SERVED_APIS.__setitem__, 19, honest)
        results = self.result(self.admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)]))
        self.assertIsNone(results["a"].error)
        self.assertIsInstance(results["b"].error, UnknownError)
        self.assertIn("left out", str(results["b"].error))

    def test_config_of_an_unknown_broker(self) -> None:
        from afkak.common import BrokerNotAvailableError

        self.cluster.create_topic("c", 1)
        topic, gone = ConfigResource.topic("c"), ConfigResource.broker(42)
        results = self.result(self.admin.describe_configs([topic, gone]))
        self.assertIsNone(results[topic].error)
        self.assertIsInstance(results[gone].error, BrokerNotAvailableError)

    def test_server_timeout_adds_to_the_client_timeout(self) -> None:
        """A controller that never answers fails the call after timeout_ms plus the
        client's own timeout, not before, and leaves nothing pending."""
        self.cluster.delay(CreateTopicsRequest, 3600)
        d = self.admin.create_topics([NewTopic("slow", 1, 1)], timeout_ms=20000)
        self.clock.advance(29)
        self.assertNoResult(d)
        self.clock.advance(2)
        self.failureResultOf(d, RequestTimedOutError)

    def test_client_close_cancels_admin_calls(self) -> None:
        self.cluster.delay(CreateTopicsRequest, 3600)
        d = self.admin.create_topics([NewTopic("slow", 1, 1)])
        self.client.close()
        self.failureResultOf(d, CancelledError)


def _acl() -> Any:
    from afkak.admin import AclBinding, AclOperation, AclPermission, ResourceType

    return AclBinding(
        ResourceType.TOPIC, "t", "User:alice", "*", AclOperation.READ, AclPermission.ALLOW
    )


_READ_ACL = _acl()


class SecurityCallTests(SynchronousTestCase):
    """ACL and SCRAM builders and parsers (no broker here implements them usably, and the
    fake cluster does not model them): each request encodes and decodes at every version,
    each response parses to per-item results."""

    def roundtrip(self, call: Any, version: int) -> Any:
        request = call(version)
        return type(request).decode(request.encode(version), version)

    def test_acl_requests(self) -> None:
        from afkak.admin import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
        from afkak.admin._security_calls import CreateAclsCall, DeleteAclsCall, DescribeAclsCall

        read = AclBinding(
            ResourceType.TOPIC, "t", "User:alice", "*", AclOperation.READ, AclPermission.ALLOW
        )
        anything = AclBinding(
            ResourceType.ANY, None, None, None, AclOperation.ANY, AclPermission.ANY, PatternType.ANY
        )
        for version in range(1, 4):
            created = self.roundtrip(CreateAclsCall([read]), version).creations[0]
            self.assertEqual(
                (
                    created.resource_type,
                    created.resource_name,
                    created.principal,
                    created.operation,
                ),
                (2, "t", "User:alice", 3),
            )
            self.assertEqual(created.resource_pattern_type, 3)
            deleted = self.roundtrip(DeleteAclsCall([anything]), version).filters[0]
            self.assertEqual((deleted.resource_name_filter, deleted.pattern_type_filter), (None, 1))
            described = self.roundtrip(DescribeAclsCall(anything), version)
            self.assertEqual(described.permission_type, 1)

    def test_acl_responses(self) -> None:
        from afkak._broker_errors import SecurityDisabled
        from afkak.admin import AclPermission, ResourceType
        from afkak.admin._security_calls import CreateAclsCall, DeleteAclsCall, DescribeAclsCall
        from afkak.protocol.messages import (
            CreateAclsResponse,
            DeleteAclsResponse,
            DescribeAclsResponse,
        )

        R = DescribeAclsResponse
        response = R(
            resources=[R.DescribeAclsResource(2, "t", 3, [R.AclDescription("User:bob", "*", 4, 3)])]
        )
        [binding] = DescribeAclsCall.parse(None, response)  # type: ignore[arg-type]
        self.assertEqual(
            (binding.resource_type, binding.principal, binding.permission),
            (ResourceType.TOPIC, "User:bob", AclPermission.ALLOW),
        )
        with self.assertRaises(SecurityDisabled):
            DescribeAclsCall.parse(None, R(error_code=54))  # type: ignore[arg-type]
        C = CreateAclsResponse
        bindings = [_READ_ACL] * 3
        results = CreateAclsCall(bindings).parse(
            C(results=[C.AclCreationResult(), C.AclCreationResult(54)])
        )
        self.assertEqual([r.ok for r in results], [True, False, False])  # the third: left out
        D = DeleteAclsResponse
        [deletion] = DeleteAclsCall.parse(  # type: ignore[arg-type]
            None,
            D(
                filter_results=[
                    D.DeleteAclsFilterResult(
                        matching_acls=[
                            D.DeleteAclsMatchingAcl(0, None, 2, "t", 3, "User:bob", "*", 4, 3)
                        ]
                    )
                ]
            ),
        )
        self.assertEqual([b.principal for b in deletion.deleted], ["User:bob"])

    def test_scram(self) -> None:
        import hashlib

        from afkak.admin import ScramDeletion, ScramMechanism, ScramUpsertion
        from afkak.admin._security_calls import AlterScramCall, DescribeScramCall

        upsert = ScramUpsertion("alice", ScramMechanism.SCRAM_SHA_512, "pw", 8192, salt=b"salt")
        call = AlterScramCall([upsert, ScramDeletion("bob", ScramMechanism.SCRAM_SHA_256)])
        request = self.roundtrip(call, 0)
        [sent] = request.upsertions
        self.assertEqual(
            (sent.name, sent.mechanism, sent.iterations, sent.salt), ("alice", 2, 8192, b"salt")
        )
        self.assertEqual(sent.salted_password, hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 8192))
        self.assertNotIn("pw", repr(upsert))
        self.assertEqual([(d.name, d.mechanism) for d in request.deletions], [("bob", 1)])
        fresh = AlterScramCall([ScramUpsertion("a", ScramMechanism.SCRAM_SHA_256, "pw")])(0)
        self.assertEqual(len(fresh.upsertions[0].salt), 32)
        with self.assertRaises(ValueError):
            AlterScramCall([ScramUpsertion("a", ScramMechanism.UNKNOWN, "pw")])
        # Every user: an empty array, not null.  Kafka 4.4 answers an unauthorized
        # principal's null with nothing (a NullPointerException building the error).
        self.assertEqual(self.roundtrip(DescribeScramCall(None), 0).users, [])


class CollectionArgumentTests(SynchronousTestCase):
    """A call taking a collection of names refuses one bare name (issue 20 item 7):
    ``delete_topics("or")`` deleted the topics ``o`` and ``r``."""

    def setUp(self) -> None:
        self.clock, self.cluster, self.client = on_fake_cluster(self)
        self.admin = KafkaAdminClient(self.client)
        for name in ("o", "r", "or"):
            self.cluster.create_topic(name, 1)

    def test_a_bare_name_is_refused_at_the_call(self) -> None:
        calls = {
            "delete_topics": lambda v: self.admin.delete_topics(v),
            "describe_topics": lambda v: self.admin.describe_topics(v),
            "create_topics": lambda v: self.admin.create_topics(v),
            "describe_configs": lambda v: self.admin.describe_configs(v),
            "describe_configs keys": lambda v: self.admin.describe_configs(
                [ConfigResource.topic("or")], keys=v
            ),
            "list_consumer_groups": lambda v: self.admin.list_consumer_groups(states=v),
            "describe_consumer_groups": lambda v: self.admin.describe_consumer_groups(v),
            "delete_consumer_groups": lambda v: self.admin.delete_consumer_groups(v),
            "list_consumer_group_offsets": lambda v: self.admin.list_consumer_group_offsets(
                "g", topics=v
            ),
            "delete_consumer_group_offsets": lambda v: self.admin.delete_consumer_group_offsets(
                "g", v
            ),
            "group_lag": lambda v: self.admin.group_lag("g", topics=v),
            "plan_offset_reset": lambda v: self.admin.plan_offset_reset("g", v, to_earliest=True),
            "create_acls": lambda v: self.admin.create_acls(v),
            "delete_acls": lambda v: self.admin.delete_acls(v),
            "describe_user_scram_credentials": lambda v: self.admin.describe_user_scram_credentials(
                v
            ),
            "alter_user_scram_credentials": lambda v: self.admin.alter_user_scram_credentials(v),
        }
        for name, call in calls.items():
            for bare in ("or", b"or", 7):
                with self.subTest(call=name, value=bare):
                    self.assertRaises(TypeError, call, bare)
        self.assertEqual(sorted(self.cluster.state.topics), ["o", "or", "r"])
        self.assertEqual(self.cluster.requests_seen, [])

    def test_mappings_must_be_mappings_keyed_by_partition(self) -> None:
        calls = {
            "list_offsets": lambda v: self.admin.list_offsets(v),
            "delete_records": lambda v: self.admin.delete_records(v),
            "alter_consumer_group_offsets": lambda v: self.admin.alter_consumer_group_offsets(
                "g", v
            ),
            "reset_offsets": lambda v: self.admin.reset_offsets("g", v),
        }
        for name, call in calls.items():
            for wrong in ("or", [TP("or", 0)], {("or", 0): 0}, {"or": 0}, {None: 0}):
                with self.subTest(call=name, value=wrong):
                    self.assertRaises(TypeError, call, wrong)
        for wrong in ("or", [("or", 3)], {3: 1}):
            with self.subTest(call="create_partitions", value=wrong):
                self.assertRaises(TypeError, self.admin.create_partitions, wrong)
        self.assertEqual(self.cluster.requests_seen, [])

    def test_collections_that_are_not_names_still_work(self) -> None:
        d = self.admin.describe_topics(t for t in ("o", "r"))
        self.clock.advance(1)
        self.assertEqual(sorted(self.successResultOf(d)), ["o", "r"])


class ConfigResourceTypeTests(SynchronousTestCase):
    """Config resource types are Kafka's ConfigResource.Type (issue 20 item 8):
    GROUP is 32 (afkak sent ACL's 3) and CLIENT_METRICS is 16."""

    def test_kafka_numbers(self) -> None:
        from afkak.admin import ConfigResourceType

        self.assertEqual(ConfigResourceType.GROUP, 32)
        self.assertEqual(ConfigResourceType.CLIENT_METRICS, 16)
        self.assertEqual(ConfigResourceType.BROKER_LOGGER, 8)
        self.assertEqual(ConfigResource.group("g"), ConfigResource(32, "g"))
        self.assertEqual(ConfigResource.client_metrics("m").type, 16)

    def test_group_config_request_carries_32(self) -> None:
        from afkak.admin._config_calls import DescribeConfigsCall

        request = DescribeConfigsCall([ConfigResource.group("g")], None, False).build(4)
        self.assertEqual([r.resource_type for r in request.resources], [32])

    def test_topic_and_broker_keep_their_numbers(self) -> None:
        self.assertEqual(ConfigResource.topic("t").type, 2)
        self.assertEqual(ConfigResource.broker(1).type, 4)

    def test_acl_group_is_not_a_config_resource_type(self) -> None:
        from afkak.admin import ResourceType

        self.assertRaises(ValueError, ConfigResource, ResourceType.GROUP, "g")

    def test_a_group_config_answer_is_keyed_by_its_resource(self) -> None:
        clock, _, client = on_fake_cluster(self)
        d = KafkaAdminClient(client).describe_configs([ConfigResource.group("g")])
        clock.advance(1)
        (resource,) = self.successResultOf(d)
        self.assertEqual(resource, ConfigResource.group("g"))


class ListConfigResourcesTests(SynchronousTestCase):
    """list_config_resources (KIP-1142) and list_client_metrics_resources (KIP-714)."""

    def admin(
        self, api_versions: dict[int, Any] | None = None
    ) -> tuple[Clock, KafkaAdminClient, FakeKafkaCluster]:
        clock = Clock()
        cluster = FakeKafkaCluster(brokers=3, reactor=clock, api_versions=api_versions)
        client = KafkaClient(
            cluster.bootstrap_hosts, reactor=clock, endpoint_factory=cluster.endpoint_factory
        )
        self.addCleanup(client.close)
        return clock, KafkaAdminClient(client), cluster

    def listed(self, clock: Clock, d: Any) -> Any:
        clock.advance(1)
        return self.successResultOf(d)

    def test_every_type_when_none_named(self) -> None:
        from afkak.admin import ConfigResourceType as T

        clock, admin, cluster = self.admin()
        cluster.create_topic("b", 1)
        cluster.create_topic("a", 1)
        listed = self.listed(clock, admin.list_config_resources())
        self.assertEqual(
            listed,
            [ConfigResource.topic("a"), ConfigResource.topic("b")]
            + [ConfigResource.broker(n) for n in (0, 1, 2)]
            + [ConfigResource(T.BROKER_LOGGER, str(n)) for n in (0, 1, 2)],
        )
        topics = self.listed(clock, admin.list_config_resources([T.TOPIC]))
        self.assertEqual(topics, [ConfigResource.topic("a"), ConfigResource.topic("b")])
        self.assertEqual(self.listed(clock, admin.list_client_metrics_resources()), [])

    def test_version_0_lists_client_metrics_only(self) -> None:
        from afkak.admin import ConfigResourceType as T
        from afkak.common import NoCommonVersionError

        clock, admin, _ = self.admin(api_versions={74: (0, 0)})
        self.assertEqual(self.listed(clock, admin.list_client_metrics_resources()), [])
        d = admin.list_config_resources([T.TOPIC])
        clock.advance(1)
        failure = self.failureResultOf(d, NoCommonVersionError)
        self.assertIn("no common version of ListConfigResources", str(failure.value))

    def test_bad_types_raise_at_the_call(self) -> None:
        _, admin, _ = self.admin()
        self.assertRaises(TypeError, admin.list_config_resources, 16)
        self.assertRaises(ValueError, admin.list_config_resources, [3])

    def test_request_versions(self) -> None:
        from afkak.admin import ConfigResourceType as T
        from afkak.admin._config_calls import ListConfigResourcesCall

        self.assertEqual(ListConfigResourcesCall([T.CLIENT_METRICS]).build(0).resource_types, [])
        self.assertEqual(
            ListConfigResourcesCall([T.TOPIC, T.GROUP]).build(1).resource_types, [2, 32]
        )
        self.assertEqual(ListConfigResourcesCall([T.TOPIC]).min_version, 1)


class AdminClientProtocolTests(SynchronousTestCase):
    """KafkaAdminClient takes any AdminClient (issue 21 item 7), not only a KafkaClient."""

    def test_a_wrapper_of_a_client_is_accepted_and_used(self) -> None:
        clock, cluster, client = on_fake_cluster(self)
        cluster.create_topic("t", 1)
        calls: list[str] = []

        class Recording:
            def __init__(self, wrapped: KafkaClient) -> None:
                self.wrapped = wrapped

            def __getattr__(self, name: str) -> Any:
                value = getattr(self.wrapped, name)
                if callable(value):
                    calls.append(name)
                return value

        admin = KafkaAdminClient(Recording(client))  # type: ignore[arg-type]
        d = admin.list_topics()
        clock.advance(1)
        self.assertEqual([t.name for t in self.successResultOf(d)], ["t"])
        self.assertIn("send_request_to_any_broker", calls)

    def test_what_is_missing_is_named(self) -> None:
        class Partial:
            reactor = Clock()
            timeout = 1.0

            def send_request_to_broker(self) -> None: ...

        with self.assertRaises(TypeError) as e:
            KafkaAdminClient(Partial())  # type: ignore[arg-type]
        self.assertIn("send_request_to_any_broker", str(e.exception))


class RouterResendTests(SynchronousTestCase):
    """The admin client's one retry loop (afkak.admin._routing.Router.resend)."""

    def test_bounded_by_retries_with_doubling_backoff(self) -> None:
        from afkak.admin._routing import Router, _left

        clock, _, client = on_fake_cluster(self)
        router = Router(client, retries=3, policy=backoff_policy(0.5, math.inf, jitter=0))
        seen: list[float] = []

        async def attempt() -> list[str]:
            seen.append(clock.seconds())
            return ["refused"]  # always something left to resend

        d = Deferred.fromCoroutine(router.resend(attempt, _left("refused"), "test"))
        clock.pump([0.25] * 40)
        self.assertEqual(self.successResultOf(d), ["refused"])
        self.assertEqual(seen, [0, 0.5, 1.5, 3.5])

    def test_stops_when_nothing_is_left(self) -> None:
        from afkak.admin._routing import Router, _left

        clock, _, client = on_fake_cluster(self)
        calls: list[float] = []

        async def attempt() -> list[str]:
            calls.append(clock.seconds())
            return ["refused"] if len(calls) < 2 else []

        d = Deferred.fromCoroutine(
            Router(client, 5, backoff_policy(0.1, math.inf, jitter=0)).resend(
                attempt, _left("refused"), "test"
            )
        )
        clock.advance(1)
        self.assertEqual(self.successResultOf(d), [])
        self.assertEqual(len(calls), 2)
        self.assertEqual(clock.getDelayedCalls(), [])

    def test_a_retriable_error_is_raised_once_retries_are_spent(self) -> None:
        from afkak.admin._routing import Router, _left

        clock, _, client = on_fake_cluster(self)
        calls: list[float] = []

        async def attempt() -> list[str]:
            calls.append(clock.seconds())
            raise BrokerConnectionError("the coordinator went away")

        d = Deferred.fromCoroutine(
            Router(client, 2, backoff_policy(0.5, math.inf, jitter=0)).resend(
                attempt,
                _left("refused"),
                "test",
                retriable=lambda e: isinstance(e, BrokerConnectionError),
            )
        )
        clock.pump([0.25] * 20)
        self.failureResultOf(d, BrokerConnectionError)
        self.assertEqual(calls, [0, 0.5, 1.5])
