"""The operator's admin calls (issue 24) on Apache Kafka, cross-checked both ways against
Kafka's own Java tool doing the same (``kafka-transactions`` ...): what afkak reads
matches what the tool prints, and what one of them changes the other sees."""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
import time
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import (
    AbortTransactionSpec,
    ConfigChange,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    KafkaAdminClient,
    NewTopic,
    QuotaEntity,
    QuotaFilter,
)
from afkak.client import KafkaClient
from afkak.common import ElectionNotNeeded, InvalidUpdateVersion, TopicAndPartition
from afkak.producer import Producer
from afkak.protocol.messages import InitProducerIdRequest, ProduceRequest
from afkak.records import build_batch
from afkak.test.brokers import shared_broker
from afkak.test.brokers.java_tools import run_tool, table, transactions_tool
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.helpers import wait
from afkak.test.test_cli_brokers import cli

TP = TopicAndPartition
_names = itertools.count()


class KafkaAdminCase(SynchronousTestCase):
    """An admin client of the shared Apache Kafka broker (or cluster) *broker_name*."""

    broker_name = "kafka"

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        self.client = KafkaClient(
            self.broker.bootstrap, timeout=15000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))
        self.admin = KafkaAdminClient(self.client)


class KafkaTransactionAdminTests(KafkaAdminCase):
    """describe_producers, list/describe_transactions, abort_transaction and
    find_hanging_transactions against ``kafka-transactions`` on one Kafka node."""

    def setUp(self) -> None:
        super().setUp()
        stamp = f"{next(_names)}-{int(time.time() * 1000)}"
        self.topic = f"admin4-txn-{stamp}"
        self.tid = f"admin4-tid-{stamp}"
        self.broker.create_topic(self.topic, 2)

    def tool(self, *args: str) -> str:
        return transactions_tool(self.broker.bootstrap, *args)

    def open_transaction(self) -> Producer:
        """An afkak transactional producer with an ongoing transaction in partition 0."""
        producer = Producer(self.client, transactional_id=self.tid)
        self.addCleanup(lambda: wait(producer.stop().addErrback(lambda _: None)))
        wait(producer.init_transactions())
        wait(producer.begin_transaction())
        wait(producer.send(self.topic, b"open", partition=0))
        return producer

    def test_transactions_seen_alike_kafka(self) -> None:
        self.open_transaction()
        listed = {t.transactional_id: t for t in wait(self.admin.list_transactions())}
        java_listed = {r["TransactionalId"]: r for r in table(self.tool("list"))}
        mine = listed[self.tid]
        self.assertEqual(mine.state, "Ongoing")
        self.assertEqual(
            (str(mine.producer_id), mine.state),
            (
                java_listed[self.tid]["ProducerId"],
                java_listed[self.tid]["TransactionState"],
            ),
        )
        described = wait(self.admin.describe_transactions([self.tid]))[self.tid]
        (java,) = table(self.tool("describe", "--transactional-id", self.tid))
        self.assertIsNone(described.error)
        self.assertEqual(
            (
                str(described.coordinator_id),
                str(described.producer_id),
                str(described.producer_epoch),
                described.state,
                str(described.timeout_ms),
                str(described.start_time_ms),
                ",".join(f"{tp.topic}-{tp.partition}" for tp in described.partitions),
            ),
            (
                java["CoordinatorId"],
                java["ProducerId"],
                java["ProducerEpoch"],
                java["TransactionState"],
                java["TransactionTimeoutMs"],
                java["CurrentTransactionStartTimeMs"],
                java["TopicPartitions"],
            ),
        )
        producers = wait(self.admin.describe_producers([TP(self.topic, 0)]))[TP(self.topic, 0)]
        (state,) = producers.active_producers
        (java_state,) = table(
            self.tool("describe-producers", "--topic", self.topic, "--partition", "0")
        )
        self.assertEqual(
            (
                str(state.producer_id),
                str(state.producer_epoch),
                str(state.coordinator_epoch),
                str(state.last_sequence),
                str(state.last_timestamp),
                str(state.current_txn_start_offset),
            ),
            (
                java_state["ProducerId"],
                java_state["ProducerEpoch"],
                java_state["LatestCoordinatorEpoch"],
                java_state["LastSequence"],
                java_state["LastTimestamp"],
                java_state["CurrentTransactionStartOffset"],
            ),
        )
        # The coordinator holds it: neither finds it hanging, even with a zero age bound.
        self.assertEqual(
            wait(
                self.admin.find_hanging_transactions(
                    partitions=[self.topic], max_transaction_timeout_ms=0
                )
            ),
            [],
        )
        self.assertEqual(table(self.tool("find-hanging", "--topic", self.topic)), [])

    def test_abort_by_afkak_seen_by_kafka(self) -> None:
        self.open_transaction()
        tp = TP(self.topic, 0)
        (state,) = wait(self.admin.describe_producers([tp]))[tp].active_producers
        self.assertEqual(state.current_txn_start_offset, 0)
        result = wait(self.admin.abort_transaction(AbortTransactionSpec.of(tp, state)))
        self.assertIsNone(result.error)
        (java_state,) = table(
            self.tool("describe-producers", "--topic", self.topic, "--partition", "0")
        )
        self.assertEqual(java_state["CurrentTransactionStartOffset"], "None")

    def test_abort_by_kafka_seen_by_afkak(self) -> None:
        self.open_transaction()
        tp = TP(self.topic, 0)
        self.tool(
            "abort", "--topic", self.topic, "--partition", "0", "--start-offset", "0"
        )  # fmt: skip
        (state,) = wait(self.admin.describe_producers([tp]))[tp].active_producers
        self.assertEqual(state.current_txn_start_offset, -1)


class KafkaClusterAdminTests(KafkaAdminCase):
    """describe_log_dirs, describe/update_features and describe_metadata_quorum against
    ``kafka-log-dirs``, ``kafka-features`` and ``kafka-metadata-quorum`` on one node."""

    def tool(self, main: str, *args: str) -> str:
        return run_tool(
            f"org.apache.kafka.tools.{main}", "--bootstrap-server", self.broker.bootstrap, *args
        )

    def test_log_dirs_alike_kafka(self) -> None:
        topic = f"admin4-dirs-{next(_names)}-{int(time.time() * 1000)}"
        self.broker.create_topic(topic, 2)
        producer = Producer(self.client)
        self.addCleanup(lambda: wait(producer.stop()))
        wait(producer.send(topic, b"x" * 1000, partition=1))
        described = wait(self.admin.describe_log_dirs())
        (node,) = described
        out = self.tool("LogDirsCommand", "--describe", "--topic-list", topic)
        java = json.loads(out.strip().splitlines()[-1])
        (java_broker,) = java["brokers"]
        self.assertEqual(java_broker["broker"], node)
        mine = {
            (path, f"{tp.topic}-{tp.partition}", r.size, r.offset_lag, r.is_future)
            for path, d in described[node].items()
            for tp, r in d.replicas.items()
            if tp.topic == topic
        }
        theirs = {
            (d["logDir"], p["partition"], p["size"], p["offsetLag"], p["isFuture"])
            for d in java_broker["logDirs"]
            for p in d["partitions"]
        }
        self.assertEqual(mine, theirs)
        self.assertEqual(len(mine), 2)
        self.assertGreater(max(size for _, _, size, _, _ in mine), 1000)
        only = wait(self.admin.describe_log_dirs([node], partitions=[TP(topic, 0)]))
        self.assertEqual([tp for d in only[node].values() for tp in d.replicas], [TP(topic, 0)])
        for d in described[node].values():
            self.assertIsNone(d.error)
            self.assertGreater(d.total_bytes, d.usable_bytes)

    def test_features_alike_kafka(self) -> None:
        features = wait(self.admin.describe_features())
        java = {}
        for line in self.tool("FeatureCommand", "describe").splitlines():
            fields = dict(re.findall(r"(\w+): (\S+)", line))
            java[fields["Feature"]] = fields
        self.assertEqual(set(features.supported), set(java))
        for name, fields in java.items():
            if name == "metadata.version":  # the tool prints its levels by release name
                self.assertEqual(features.finalized[name].max_version > 0, True)
                continue
            self.assertEqual(
                (
                    str(features.supported[name].min_version),
                    str(features.supported[name].max_version),
                    str(features.finalized[name].max_version if name in features.finalized else 0),
                ),
                (
                    fields["SupportedMinVersion"],
                    fields["SupportedMaxVersion"],
                    fields["FinalizedVersionLevel"],
                ),
            )
            # The epoch is the metadata offset of the broker's image, which grows (the
            # quorum writes no-op records); the tool asked later.
            self.assertLessEqual(features.finalized_epoch, int(fields["Epoch"]))

    def test_feature_update_validated_alike_kafka(self) -> None:
        current = wait(self.admin.describe_features()).finalized["transaction.version"].max_version
        same = wait(
            self.admin.update_features({"transaction.version": current}, validate_only=True)
        )
        self.assertIsNone(same["transaction.version"].error)
        self.tool(
            "FeatureCommand", "upgrade", "--feature", f"transaction.version={current}", "--dry-run"
        )
        too_high = wait(self.admin.update_features({"transaction.version": 99}, validate_only=True))
        self.assertIsInstance(too_high["transaction.version"].error, InvalidUpdateVersion)
        with self.assertRaises(RuntimeError):
            self.tool(
                "FeatureCommand", "upgrade", "--feature", "transaction.version=99", "--dry-run"
            )
        after = wait(self.admin.describe_features()).finalized["transaction.version"]
        self.assertEqual(after.max_version, current)

    def test_quorum_alike_kafka(self) -> None:
        quorum = wait(self.admin.describe_metadata_quorum())
        java = dict(
            (part.strip() for part in line.split(": ", 1))
            for line in self.tool("MetadataQuorumCommand", "describe", "--status").splitlines()
            if ": " in line
        )
        self.assertEqual(
            (str(quorum.leader_id), str(quorum.leader_epoch)),
            (java["LeaderId"], java["LeaderEpoch"]),
        )
        self.assertLessEqual(quorum.high_watermark, int(java["HighWatermark"]))
        voters = [v["id"] for v in json.loads(java["CurrentVoters"])]
        self.assertEqual([v.replica_id for v in quorum.voters], voters)


class KafkaQuotaAdminTests(KafkaAdminCase):
    """describe/alter_client_quotas against ``kafka-configs --entity-type clients``."""

    def setUp(self) -> None:
        super().setUp()
        self.name = f"admin4-client-{next(_names)}-{int(time.time() * 1000)}"

    def configs(self, *args: str) -> str:
        return run_tool(
            "org.apache.kafka.tools.ConfigCommand",
            "--bootstrap-server",
            self.broker.bootstrap,
            "--entity-type",
            "clients",
            "--entity-name",
            self.name,
            *args,
        )

    def test_quotas_both_ways_kafka(self) -> None:
        entity = QuotaEntity({"client-id": self.name})
        set_by_afkak = wait(self.admin.alter_client_quotas({entity: {"producer_byte_rate": 1024}}))
        self.assertIsNone(set_by_afkak[entity].error)
        out = self.configs("--describe")
        self.assertIn(f"client-id '{self.name}'", out)
        self.assertIn("producer_byte_rate=1024.0", out)
        self.configs("--alter", "--add-config", "consumer_byte_rate=2048")
        found = wait(self.admin.describe_client_quotas([QuotaFilter.exact("client-id", self.name)]))
        self.assertEqual(
            found, {entity: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}}
        )
        wait(self.admin.alter_client_quotas({entity: {"producer_byte_rate": None}}))
        self.assertNotIn("producer_byte_rate", self.configs("--describe"))
        bad = wait(self.admin.alter_client_quotas({entity: {"no_such_quota": 1.0}}))
        self.assertIsNotNone(bad[entity].error)


class KafkaConfigResourceAdminTests(KafkaAdminCase):
    """Client metrics subscriptions (KIP-714's config resources) and list_config_resources
    (KIP-1142) against ``kafka-configs --entity-type client-metrics``, both ways."""

    def configs(self, *args: str) -> str:
        return run_tool(
            "org.apache.kafka.tools.ConfigCommand",
            "--bootstrap-server",
            self.broker.bootstrap,
            "--entity-type",
            "client-metrics",
            *args,
        )

    def test_client_metrics_resources_both_ways_kafka(self) -> None:
        stamp = f"{next(_names)}-{int(time.time() * 1000)}"
        mine, javas = f"afkak-sub-{stamp}", f"java-sub-{stamp}"
        resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, mine)
        changes = [
            ConfigChange("metrics", "org.apache.kafka.producer."),
            ConfigChange("interval.ms", "5000"),
        ]
        done = wait(self.admin.incremental_alter_configs({resource: changes}))
        self.assertIsNone(done[resource].error)
        out = self.configs("--describe", "--entity-name", mine)
        self.assertIn("metrics=org.apache.kafka.producer.", out)
        self.assertIn("interval.ms=5000", out)

        subscription = "metrics=[org.apache.kafka.consumer.]"
        self.configs("--alter", "--entity-name", javas, "--add-config", subscription)
        listed = wait(self.admin.list_client_metrics_resources())
        names = {r.name for r in listed}
        self.assertLessEqual({mine, javas}, names)
        self.assertEqual({r.type for r in listed}, {ConfigResourceType.CLIENT_METRICS})
        java = ConfigResource(ConfigResourceType.CLIENT_METRICS, javas)
        described = wait(self.admin.describe_configs([java]))
        self.assertEqual(described[java].entries["metrics"].value, "org.apache.kafka.consumer.")
        # Kafka's tool lists every subscription through the same API.
        listing = self.configs("--describe")
        for name in (mine, javas):
            self.assertIn(f"Dynamic configs for client-metric {name} are", listing)

    def test_list_config_resources_of_several_types_kafka(self) -> None:
        topic = f"admin4-cfg-{next(_names)}-{int(time.time() * 1000)}"
        self.broker.create_topic(topic, 1)
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        wait(
            self.admin.incremental_alter_configs(
                {resource: [ConfigChange("retention.ms", "600000")]}
            )
        )
        listed = wait(self.admin.list_config_resources([ConfigResourceType.TOPIC]))
        self.assertIn(resource, listed)
        self.assertEqual({r.type for r in listed}, {ConfigResourceType.TOPIC})


class KafkaDescribeTopicPartitionsTests(KafkaAdminCase):
    """describe_topics through DescribeTopicPartitions (KIP-966) against ``kafka-topics
    --describe``, which uses the same API: leaders, replicas, ISR and ELR alike."""

    def test_describe_topics_alike_kafka_topics_kafka(self) -> None:
        topic = f"admin4-dtp-{next(_names)}-{int(time.time() * 1000)}"
        self.broker.create_topic(topic, 5)
        mine = wait(self.admin.describe_topics([topic], partition_limit=2))[topic]
        out = run_tool(
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            self.broker.bootstrap,
            "--describe",
            "--topic",
            topic,
        )
        rows = []
        for line in out.splitlines():
            fields = dict(
                part.split(": ", 1) if ": " in part else (part.rstrip(":"), "")
                for part in line.strip().split("\t")
            )
            if "Partition" in fields:
                rows.append(fields)

        def nodes(text: str) -> tuple[int, ...]:
            return tuple(int(n) for n in text.split(",") if n.strip())

        self.assertEqual(
            [
                (p.partition, p.leader, p.replicas, p.isr, p.eligible_leader_replicas)
                for p in mine.partitions
            ],
            [
                (
                    int(r["Partition"]),
                    int(r["Leader"]),
                    nodes(r["Replicas"]),
                    nodes(r["Isr"]),
                    nodes(r.get("Elr", "")),
                )
                for r in rows
            ],
        )
        self.assertEqual(len(mine.partitions), 5)
        self.assertTrue(all(p.leader_epoch >= 0 for p in mine.partitions))


class KafkaReassignmentAdminTests(KafkaAdminCase):
    """alter/list_partition_reassignments and elect_leaders on the 3-node cluster, against
    ``kafka-reassign-partitions`` and ``kafka-leader-election``."""

    broker_name = "kafka-cluster"

    def setUp(self) -> None:
        super().setUp()
        self.topic = f"admin4-move-{next(_names)}-{int(time.time() * 1000)}"
        self.tp = TP(self.topic, 0)
        created = wait(
            self.admin.create_topics([NewTopic(self.topic, replica_assignment=[[1, 2]])])
        )
        self.assertIsNone(created[self.topic].error)

    def tool(self, main: str, *args: str) -> str:
        return run_tool(main, "--bootstrap-server", self.broker.bootstrap, *args)

    def placement(self, replicas: list[int], timeout: float = 60.0) -> Any:
        """Wait until the partition's replicas (and ISR) are *replicas*; its description."""
        deadline = time.monotonic() + timeout
        while True:
            (p,) = wait(self.admin.describe_topics([self.topic]))[self.topic].partitions
            done = not wait(self.admin.list_partition_reassignments([self.tp]))
            if done and list(p.replicas) == replicas and sorted(p.isr) == sorted(replicas):
                return p
            self.assertLess(time.monotonic(), deadline, f"still {p} ")
            time.sleep(0.5)

    def leader_becomes(self, node: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            (p,) = wait(self.admin.describe_topics([self.topic]))[self.topic].partitions
            if p.leader == node:
                return
            self.assertLess(time.monotonic(), deadline, f"leader still {p.leader}")
            time.sleep(0.2)

    def test_reassign_both_ways_and_elect_kafka(self) -> None:
        self.placement([1, 2])
        moved = wait(self.admin.alter_partition_reassignments({self.tp: [3, 1]}))
        self.assertIsNone(moved[self.tp].error)
        self.placement([3, 1])
        plan = {
            "version": 1,
            "partitions": [{"topic": self.topic, "partition": 0, "replicas": [3, 1]}],
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(plan, f)
        self.addCleanup(os.unlink, f.name)
        verified = self.tool(
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--verify", "--reassignment-json-file", f.name,
        )  # fmt: skip
        self.assertIn(f"Reassignment of partition {self.topic}-0 is completed", verified)
        # The preferred replica (3) leads after a preferred election (if it did not already).
        elected = wait(self.admin.elect_leaders(ElectionType.PREFERRED, [self.tp]))
        error = elected[self.tp].error
        self.assertTrue(error is None or isinstance(error, ElectionNotNeeded), error)
        self.leader_becomes(3)  # the brokers' metadata follows the controller shortly
        again = wait(self.admin.elect_leaders(ElectionType.PREFERRED, [self.tp]))
        self.assertIsInstance(again[self.tp].error, ElectionNotNeeded)
        out = self.tool(
            "org.apache.kafka.tools.LeaderElectionCommand",
            "--election-type", "preferred", "--topic", self.topic, "--partition", "0",
        )  # fmt: skip
        self.assertIn("Valid replica already elected for partitions", out)
        unclean = wait(self.admin.elect_leaders(ElectionType.UNCLEAN, [self.tp]))
        self.assertIsInstance(unclean[self.tp].error, ElectionNotNeeded)
        out = self.tool(
            "org.apache.kafka.tools.LeaderElectionCommand",
            "--election-type", "unclean", "--topic", self.topic, "--partition", "0",
        )  # fmt: skip
        self.assertIn("Valid replica already elected for partitions", out)
        # Kafka's tool moves it back; afkak sees the move and the new placement.
        plan["partitions"][0]["replicas"] = [2, 3]
        with open(f.name, "w") as g:
            json.dump(plan, g)
        self.tool(
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--execute", "--reassignment-json-file", f.name,
        )  # fmt: skip
        self.placement([2, 3])
        self.assertEqual(wait(self.admin.list_partition_reassignments()), {})


class KafkaOperatorCommandTests(KafkaAdminCase):
    """``afkak transactions|features|quotas|cluster quorum`` (``python -m afkak``) on Apache
    Kafka, agreeing with the admin calls checked against the Java tools above."""

    def afkak(self, *argv: str) -> Any:
        done = cli("--json", *argv, bootstrap=self.broker.bootstrap)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return json.loads(done.stdout)

    def test_operator_commands_kafka(self) -> None:
        topic = f"admin4-cli-{next(_names)}-{int(time.time() * 1000)}"
        tid = f"admin4-cli-tid-{next(_names)}"
        self.broker.create_topic(topic, 1)
        producer = Producer(self.client, transactional_id=tid)
        self.addCleanup(lambda: wait(producer.stop().addErrback(lambda _: None)))
        wait(producer.init_transactions())
        wait(producer.begin_transaction())
        wait(producer.send(topic, b"open", partition=0))
        listed = self.afkak("transactions", "list", "--state", "Ongoing")
        self.assertIn(tid, [t["transactional_id"] for t in listed])
        (described,) = self.afkak("transactions", "describe", tid)
        self.assertEqual(described["partitions"], [f"{topic}-0"])
        (state,) = self.afkak(
            "transactions", "describe-producers", "--topic", topic, "--partition", "0"
        )
        self.assertEqual(state["txn_start_offset"], 0)
        self.assertEqual(self.afkak("transactions", "find-hanging", "--topic", topic), [])
        features = {f["feature"]: f for f in self.afkak("features", "describe")}
        expected = wait(self.admin.describe_features()).finalized["transaction.version"]
        self.assertEqual(features["transaction.version"]["finalized"], expected.max_version)
        quorum = self.afkak("cluster", "quorum")
        self.assertEqual(quorum["leader"], wait(self.admin.describe_metadata_quorum()).leader_id)
        client = f"admin4-cli-client-{next(_names)}"
        self.afkak("quotas", "alter", "--client-id", client, "--add", "producer_byte_rate=4096")
        self.assertEqual(
            self.afkak("quotas", "describe", "--client-id", client),
            [{"entity": f"client-id={client}", "quotas": "producer_byte_rate=4096.0"}],
        )
        self.afkak(
            "transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"
        )
        (after,) = wait(self.admin.describe_producers([TP(topic, 0)]))[
            TP(topic, 0)
        ].active_producers
        self.assertEqual(after.current_txn_start_offset, -1)


class KafkaHangingTransactionTests(SynchronousTestCase):
    """A real hanging transaction on its own Kafka node (transactions v1, partition
    verification off, Produce v11: a transactional batch no coordinator knows of is
    accepted, as after a lost marker): kafka-transactions find-hanging and afkak find
    the same one, and after either aborts it neither does."""

    def setUp(self) -> None:
        self.broker = KafkaBroker(
            config={"transaction.partition.verification.enable": "false"},
            format_args=["--feature", "transaction.version=1"],
        ).start()
        self.addCleanup(self.broker.stop)
        self.client = KafkaClient(
            self.broker.bootstrap, timeout=15000, endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))
        self.admin = KafkaAdminClient(self.client)
        self.topic = "hanging"
        self.broker.create_topic(self.topic, 1)

    def tool(self, *args: str) -> str:
        return transactions_tool(self.broker.bootstrap, *args)

    def leave_hanging(self) -> int:
        """Write a transactional batch, 20 minutes old, that no coordinator knows; its pid."""
        for _ in range(100):  # COORDINATOR_LOAD_IN_PROGRESS while the node starts
            init = wait(
                self.client.send_request_to_any_broker(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
                )
            )
            if not init.error_code:
                break
            time.sleep(0.2)
        self.assertEqual(init.error_code, 0)
        old = int(time.time() * 1000) - 20 * 60_000
        batch = build_batch(
            [b"lost"],
            timestamp=old,
            producer_id=init.producer_id,
            producer_epoch=init.producer_epoch,
            base_sequence=0,
            is_transactional=True,
        )
        P = ProduceRequest
        request = P(
            transactional_id="afkak-ghost",
            acks=1,
            timeout_ms=10000,
            topic_data=[
                P.TopicProduceData(self.topic, partition_data=[P.PartitionProduceData(0, batch)])
            ],
        )
        (leader,) = wait(self.admin.describe_cluster()).brokers
        response = wait(self.client.send_request_to_broker(leader, request, max_version=11))
        (part,) = response.responses[0].partition_responses
        self.assertEqual(part.error_code, 0, part.error_message)
        return int(init.producer_id)

    def java_hanging(self) -> list[dict[str, str]]:
        return table(self.tool("find-hanging", "--topic", self.topic))

    def test_found_alike_and_aborted_by_afkak(self) -> None:
        pid = self.leave_hanging()
        (found,) = wait(self.admin.find_hanging_transactions(partitions=[self.topic]))
        self.assertEqual(
            (found.producer.producer_id, found.producer.current_txn_start_offset), (pid, 0)
        )
        self.assertIsNone(found.transactional_id)
        (java,) = self.java_hanging()
        self.assertEqual(
            (java["Topic"], java["Partition"], java["ProducerId"], java["StartOffset"]),
            (self.topic, "0", str(pid), "0"),
        )
        by_broker = wait(self.admin.find_hanging_transactions(broker_id=1))
        self.assertEqual(by_broker, [found])
        self.assertIsNone(wait(self.admin.abort_transaction(found.abort_spec)).error)
        self.assertEqual(self.java_hanging(), [])
        self.assertEqual(wait(self.admin.find_hanging_transactions(partitions=[self.topic])), [])

    def test_aborted_by_kafka_seen_by_afkak(self) -> None:
        self.leave_hanging()
        self.assertEqual(
            len(wait(self.admin.find_hanging_transactions(partitions=[self.topic]))), 1
        )
        self.tool("abort", "--topic", self.topic, "--partition", "0", "--start-offset", "0")
        self.assertEqual(wait(self.admin.find_hanging_transactions(partitions=[self.topic])), [])
