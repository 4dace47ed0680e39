"""KafkaAdminClient on real brokers (Tansu, noida-db), cross-checked both ways with
confluent-kafka's AdminClient on the same broker.

What each broker lacks is in its ``quirks`` (afkak/test/brokers); a test of
an API a broker does not implement skips with the quirk's reason.  The
librdkafka mock cluster has none of these APIs (no CreateTopics, no group
listing) and is left out.
"""

from __future__ import annotations

import itertools
import time
import unittest
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import (
    ConfigChange,
    ConfigResource,
    IsolationLevel,
    KafkaAdminClient,
    NewTopic,
    OffsetSpec,
    ScramMechanism,
    ScramUpsertion,
)
from afkak.client import KafkaClient
from afkak.common import (
    TopicAlreadyExists,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.test.brokers import Broker, client_config, shared_broker, wait_for_partitions
from afkak.test.helpers import wait

TP = TopicAndPartition
_names = itertools.count()


def _ck() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError as e:  # pragma: no cover - the test extra installs it
        raise unittest.SkipTest(f"confluent-kafka is not installed: {e}") from e
    return confluent_kafka


class AdminBrokerTests:
    """Mixed into one SynchronousTestCase per broker kind."""

    broker_name: ClassVar[str]
    broker: Broker

    def setUp(self: Any) -> None:
        self.broker = shared_broker(self.broker_name)
        self.quirks = self.broker.quirks
        n = next(_names)
        self.topic = f"admin-{self.broker_name}-{n}-{int(time.time() * 1000)}"
        self.group = f"admin-group-{self.broker_name}-{n}-{int(time.time() * 1000)}"
        self.client = KafkaClient(
            self.broker.bootstrap, timeout=10000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))
        self.admin = KafkaAdminClient(self.client)
        ck = _ck()
        self.ck = ck
        self.peer = ck.admin.AdminClient(client_config(self.broker.bootstrap))

    def peer_result(self, futures: Any) -> Any:
        if isinstance(futures, dict):
            return {k: f.result(15) for k, f in futures.items()}
        return futures.result(15)

    def create(self: Any, partitions: int = 1, **configs: str) -> None:
        results = wait(
            self.admin.create_topics([NewTopic(self.topic, partitions, 1, configs=configs)])
        )
        self.assertIsNone(results[self.topic].error)
        wait_for_partitions(self.broker.bootstrap, self.topic, partitions)

    # topics

    def test_create_topic_seen_by_confluent(self: Any) -> None:
        self.create(2, **{"retention.ms": "3600000"})
        meta = self.peer.list_topics(timeout=10)
        self.assertEqual(len(meta.topics[self.topic].partitions), 2)
        resource = self.ck.admin.ConfigResource("topic", self.topic)
        configs = self.peer_result(self.peer.describe_configs([resource]))[resource]
        self.assertEqual(configs["retention.ms"].value, "3600000")
        again = wait(self.admin.create_topics([NewTopic(self.topic, 2, 1)]))
        self.assertIsInstance(again[self.topic].error, TopicAlreadyExists)

    def test_confluent_topic_seen_by_afkak_and_deleted(self: Any) -> None:
        NT = self.ck.admin.NewTopic
        self.peer_result(
            self.peer.create_topics(
                [
                    NT(
                        self.topic,
                        num_partitions=3,
                        replication_factor=1,
                        config={"retention.ms": "7200000"},
                    )
                ]
            )
        )
        wait_for_partitions(self.broker.bootstrap, self.topic, 3)
        described = wait(self.admin.describe_topics([self.topic, self.topic + "-missing"]))
        self.assertEqual([p.partition for p in described[self.topic].partitions], [0, 1, 2])
        self.assertTrue(all(p.leader >= 0 and p.isr for p in described[self.topic].partitions))
        self.assertIsNotNone(described[self.topic + "-missing"].error)
        self.assertIn(self.topic, [t.name for t in wait(self.admin.list_topics())])
        res = ConfigResource.topic(self.topic)
        self.assertEqual(
            wait(self.admin.describe_configs([res]))[res].entries["retention.ms"].value, "7200000"
        )
        deleted = wait(self.admin.delete_topics([self.topic]))
        self.assertIsNone(deleted[self.topic].error)
        deadline = time.monotonic() + 10
        while self.topic in self.peer.list_topics(timeout=10).topics:
            self.assertLess(time.monotonic(), deadline, "the deleted topic stays")
            time.sleep(0.1)
        self.assertNotIn(self.topic, [t.name for t in wait(self.admin.list_topics())])

    def test_delete_by_topic_id(self: Any) -> None:
        self.quirks.skip_if("no_topic_ids")
        self.create()
        topic_id = wait(self.admin.describe_topics([self.topic]))[self.topic].topic_id
        self.assertIsNotNone(topic_id)
        deleted = wait(self.admin.delete_topics([topic_id]))
        self.assertIsNone(deleted[topic_id].error)
        self.assertNotIn(self.topic, [t.name for t in wait(self.admin.list_topics())])

    def test_validate_only(self: Any) -> None:
        self.quirks.skip_if("validate_only_creates_topics")
        checked = wait(self.admin.create_topics([NewTopic(self.topic, 1, 1)], validate_only=True))
        self.assertIsNone(checked[self.topic].error)
        self.assertNotIn(self.topic, self.peer.list_topics(timeout=10).topics)

    def test_create_partitions(self: Any) -> None:
        self.quirks.skip_if("no_create_partitions")
        self.create(1)
        grown = wait(self.admin.create_partitions({self.topic: 3, self.topic + "-x": 2}))
        self.assertIsNone(grown[self.topic].error)
        self.assertIsNotNone(grown[self.topic + "-x"].error)
        wait_for_partitions(self.broker.bootstrap, self.topic, 3)
        self.peer_result(self.peer.create_partitions([self.ck.admin.NewPartitions(self.topic, 4)]))
        wait_for_partitions(self.broker.bootstrap, self.topic, 4)
        described = wait(self.admin.describe_topics([self.topic]))[self.topic]
        self.assertEqual(len(described.partitions), 4)

    # cluster and configs

    def test_describe_cluster(self: Any) -> None:
        cluster = wait(self.admin.describe_cluster())
        peer = self.peer_result(self.peer.describe_cluster())
        self.assertEqual(cluster.cluster_id, peer.cluster_id)
        self.assertEqual(cluster.controller_id, peer.controller.id)
        self.assertEqual(
            sorted((b.node_id, b.port) for b in cluster.brokers),
            sorted((n.id, n.port) for n in peer.nodes),
        )

    def test_alter_configs_both_ways(self: Any) -> None:
        self.create()
        res = ConfigResource.topic(self.topic)
        altered = wait(
            self.admin.incremental_alter_configs({res: [ConfigChange("retention.ms", "123456")]})
        )
        self.assertIsNone(altered[res].error)
        resource = self.ck.admin.ConfigResource("topic", self.topic)
        configs = self.peer_result(self.peer.describe_configs([resource]))[resource]
        self.assertEqual(configs["retention.ms"].value, "123456")
        entry = wait(self.admin.describe_configs([res], include_synonyms=True))[res].entries[
            "retention.ms"
        ]
        self.assertEqual(entry.value, "123456")
        if not self.quirks.config_source_not_reported:
            self.assertEqual(entry.source.name, "DYNAMIC_TOPIC_CONFIG")
        Entry, Op = self.ck.admin.ConfigEntry, self.ck.admin.AlterConfigOpType
        change = self.ck.admin.ConfigResource(
            "topic",
            self.topic,
            incremental_configs=[Entry("retention.ms", "654321", incremental_operation=Op.SET)],
        )
        self.peer_result(self.peer.incremental_alter_configs([change]))
        entry = wait(self.admin.describe_configs([res]))[res].entries["retention.ms"]
        self.assertEqual(entry.value, "654321")

    def test_describe_config_keys_and_broker(self: Any) -> None:
        self.quirks.skip_if("describe_config_keys_close_connection")
        self.create()
        res = ConfigResource.topic(self.topic)
        only = wait(self.admin.describe_configs([res], keys=["retention.ms"]))[res]
        self.assertEqual(list(only.entries), ["retention.ms"])
        node = wait(self.admin.describe_cluster()).brokers[0].node_id
        broker = ConfigResource.broker(node)
        described = wait(self.admin.describe_configs([broker]))[broker]
        self.assertIsNone(described.error)

    # offsets, records, groups

    def produce(self: Any, count: int, partition: int = 0) -> None:
        """``count`` records v0, v1 ... with confluent-kafka, record i at ``base_ts + i`` s,
        one batch each (so that Tansu's ListOffsets(LATEST) is the log end)."""
        self.base_ts = int(time.time() * 1000) - count * 1000
        producer = self.ck.Producer(client_config(self.broker.bootstrap, acks="all"))
        for i in range(count):
            producer.produce(
                self.topic, b"v%d" % i, b"k%d" % i, partition, timestamp=self.base_ts + i * 1000
            )
            self.assertEqual(producer.flush(15), 0)

    def test_list_offsets(self: Any) -> None:
        self.create()
        self.produce(5)
        latest = OffsetSpec.LATEST
        got = wait(
            self.admin.list_offsets(
                {TP(self.topic, 0): OffsetSpec.EARLIEST, TP(self.topic + "-x", 0): latest}
            )
        )
        self.assertEqual(got[TP(self.topic, 0)].offset, 0)
        self.assertIsInstance(got[TP(self.topic + "-x", 0)].error, UnknownTopicOrPartitionError)
        end = wait(self.admin.list_offsets({TP(self.topic, 0): latest}))[TP(self.topic, 0)]
        lo, hi = self.peer_consumer().get_watermark_offsets(
            self.ck.TopicPartition(self.topic, 0), 10
        )
        self.assertEqual(lo, 0)
        if not self.quirks.list_offsets_latest_is_last_batch_base_plus_one:
            self.assertEqual((end.offset, hi), (5, 5))
        if not self.quirks.list_offsets_max_timestamp_closes_connection:
            top = wait(self.admin.list_offsets({TP(self.topic, 0): OffsetSpec.MAX_TIMESTAMP}))
            self.assertEqual(top[TP(self.topic, 0)].offset, 4)
        if not self.quirks.list_offsets_by_timestamp_returns_zero:
            at = wait(self.admin.list_offsets({TP(self.topic, 0): self.base_ts + 2500}))
            self.assertEqual(at[TP(self.topic, 0)].offset, 3)

    def test_list_offsets_isolation_level(self: Any) -> None:
        """An open transaction: READ_COMMITTED's LATEST (the last stable offset) stays
        before it, READ_UNCOMMITTED's moves past it."""
        self.quirks.skip_if("read_committed_returns_aborted")
        self.create()
        producer = self.ck.Producer(
            client_config(self.broker.bootstrap, **{"transactional.id": self.topic})
        )
        producer.init_transactions(15)
        producer.begin_transaction()
        for i in range(3):
            producer.produce(self.topic, b"t%d" % i, partition=0)
        self.assertEqual(producer.flush(15), 0)
        tp = TP(self.topic, 0)

        def latest(level: IsolationLevel) -> int:
            found = wait(self.admin.list_offsets({tp: OffsetSpec.LATEST}, isolation_level=level))
            return found[tp].offset  # type: ignore[no-any-return]

        self.assertEqual(latest(IsolationLevel.READ_UNCOMMITTED), 3)
        self.assertEqual(latest(IsolationLevel.READ_COMMITTED), 0)
        producer.commit_transaction(15)
        deadline = time.monotonic() + 10
        while latest(IsolationLevel.READ_COMMITTED) < 4:  # 3 records and the commit marker
            self.assertLess(time.monotonic(), deadline, "the last stable offset did not move")
            time.sleep(0.1)

    def peer_consumer(self: Any, **config: Any) -> Any:
        consumer = self.ck.Consumer(
            client_config(self.broker.bootstrap, **{"group.id": self.group, **config})
        )
        self.addCleanup(consumer.close)
        return consumer

    def test_delete_records(self: Any) -> None:
        self.quirks.skip_if("delete_records_closes_connection")
        self.create()
        self.produce(6)
        deleted = wait(self.admin.delete_records({TP(self.topic, 0): 4}))
        self.assertEqual(deleted[TP(self.topic, 0)].low_watermark, 4)
        lo, _ = self.peer_consumer().get_watermark_offsets(
            self.ck.TopicPartition(self.topic, 0), 10
        )
        self.assertEqual(lo, 4)
        earliest = wait(self.admin.list_offsets({TP(self.topic, 0): OffsetSpec.EARLIEST}))
        self.assertEqual(earliest[TP(self.topic, 0)].offset, 4)

    def test_group_offsets_both_ways(self: Any) -> None:
        self.create(2)
        self.produce(5)
        altered = wait(
            self.admin.alter_consumer_group_offsets(
                self.group, {TP(self.topic, 0): 3, TP(self.topic, 1): 0}
            )
        )
        self.assertTrue(all(r.ok for r in altered.values()))
        CGTP = self.ck.ConsumerGroupTopicPartitions
        TPc = self.ck.TopicPartition
        seen = self.peer_result(
            self.peer.list_consumer_group_offsets(
                [CGTP(self.group, [TPc(self.topic, 0), TPc(self.topic, 1)])]
            )
        )[self.group]
        self.assertEqual(
            sorted((p.partition, p.offset) for p in seen.topic_partitions), [(0, 3), (1, 0)]
        )
        self.peer_result(
            self.peer.alter_consumer_group_offsets([CGTP(self.group, [TPc(self.topic, 0, 1)])])
        )
        mine = wait(self.admin.list_consumer_group_offsets(self.group, [self.topic]))
        self.assertEqual(mine, {TP(self.topic, 0): 1, TP(self.topic, 1): 0})
        if not self.quirks.list_offsets_latest_is_last_batch_base_plus_one:
            lag = wait(self.admin.group_lag(self.group, [self.topic]))
            self.assertEqual(lag[TP(self.topic, 0)].lag, 4)
        listed = [g.group_id for g in wait(self.admin.list_consumer_groups())]
        self.assertIn(self.group, listed)
        peer_listed = self.peer_result(self.peer.list_consumer_groups())
        self.assertIn(self.group, [g.group_id for g in peer_listed.valid])
        described = wait(self.admin.describe_consumer_groups([self.group]))[self.group]
        self.assertEqual((described.state, described.members), ("Empty", ()))

    def test_offset_delete_and_group_delete(self: Any) -> None:
        self.quirks.skip_if("no_offset_delete")
        self.create(2)
        wait(
            self.admin.alter_consumer_group_offsets(
                self.group, {TP(self.topic, 0): 1, TP(self.topic, 1): 1}
            )
        )
        gone = wait(self.admin.delete_consumer_group_offsets(self.group, [TP(self.topic, 0)]))
        self.assertTrue(gone[TP(self.topic, 0)].ok)
        mine = wait(self.admin.list_consumer_group_offsets(self.group, [self.topic]))
        self.assertEqual(mine, {TP(self.topic, 0): -1, TP(self.topic, 1): 1})
        deleted = wait(self.admin.delete_consumer_groups([self.group]))
        self.assertTrue(deleted[self.group].ok)
        self.assertNotIn(self.group, [g.group_id for g in wait(self.admin.list_consumer_groups())])

    def test_reset_then_confluent_consumer_starts_there(self: Any) -> None:
        """afkak's reset plan, applied, is where a librdkafka group member starts."""
        self.create()
        self.produce(10)
        wait(self.admin.alter_consumer_group_offsets(self.group, {TP(self.topic, 0): 8}))
        plan = wait(self.admin.plan_offset_reset(self.group, [self.topic], shift_by=-5))
        self.assertEqual((plan[TP(self.topic, 0)].current, plan[TP(self.topic, 0)].target), (8, 3))
        self.assertEqual(
            wait(self.admin.list_consumer_group_offsets(self.group, [self.topic]))[
                TP(self.topic, 0)
            ],
            8,
        )
        results = wait(self.admin.reset_offsets(self.group, plan))
        self.assertTrue(results[TP(self.topic, 0)].ok)
        consumer = self.peer_consumer(
            **{"auto.offset.reset": "earliest", "session.timeout.ms": 6000}
        )
        consumer.subscribe([self.topic])
        deadline = time.monotonic() + 30
        message = None
        while message is None or message.error():
            self.assertLess(time.monotonic(), deadline, "the confluent consumer read nothing")
            message = consumer.poll(0.5)
        self.assertEqual((message.offset(), message.value()), (3, b"v3"))

    def test_scram_upsert(self: Any) -> None:
        user = f"user-{self.broker_name}-{next(_names)}"
        try:
            results = wait(
                self.admin.alter_user_scram_credentials(
                    [ScramUpsertion(user, ScramMechanism.SCRAM_SHA_256, "secret", 8192)]
                )
            )
        except Exception:
            self.quirks.skip_if("scram_unusable")
            raise
        self.assertTrue(results[user].ok)
        self.quirks.skip_if("scram_unusable")
        described = wait(self.admin.describe_user_scram_credentials([user]))[user]
        self.assertEqual(
            [(c.mechanism, c.iterations) for c in described.credentials],
            [(ScramMechanism.SCRAM_SHA_256, 8192)],
        )


class KafkaAdminTests(AdminBrokerTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuAdminTests(AdminBrokerTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaAdminTests(AdminBrokerTests, SynchronousTestCase):
    broker_name = "noida"
