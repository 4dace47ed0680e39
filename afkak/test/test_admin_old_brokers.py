"""What a broker too old for a call answers: one error, :class:`NoCommonVersionError`,
naming the API, both sides' versions and the broker, raised before anything is sent
(fake cluster with capped or missing APIs, on a Clock)."""

from __future__ import annotations

from typing import Any

from afkak.admin import (
    AlterOp,
    ConfigChange,
    ConfigResource,
    ItemResult,
    KafkaAdminClient,
    OffsetSpec,
    ScramMechanism,
    ScramUpsertion,
)
from afkak.client import KafkaClient
from afkak.common import NoCommonVersionError, TopicAndPartition, UnknownTopicOrPartitionError
from afkak.protocol.messages import (
    AlterConfigsRequest,
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.testing import FakeKafkaCluster

TP = TopicAndPartition
LIST_OFFSETS = ListOffsetsRequest.API_KEY


class OldBrokerCase(ClockTestCase):
    def admin(self, api_versions: dict[int, Any]) -> tuple[KafkaAdminClient, FakeKafkaCluster]:
        cluster = FakeKafkaCluster(brokers=1, reactor=self.clock, api_versions=api_versions)
        client = KafkaClient(
            cluster.bootstrap_hosts, reactor=self.clock, endpoint_factory=cluster.endpoint_factory
        )
        self.addCleanup(client.close)
        return KafkaAdminClient(client), cluster

    def settle(self, d: Any) -> None:
        for _ in range(20):
            if d.called:
                return
            self.clock.advance(1)

    def refused(self, d: Any) -> NoCommonVersionError:
        self.settle(d)
        error = self.failureResultOf(d, NoCommonVersionError).value
        assert isinstance(error, NoCommonVersionError)
        return error

    def sent(self, cluster: FakeKafkaCluster, api_key: int) -> int:
        return sum(1 for r in cluster.requests_seen if r.api_key == api_key)


class ListOffsetsSpecialTimesTests(OldBrokerCase):
    """Kafka before 3.0 (ListOffsets below v7) reads MAX_TIMESTAMP (-3) as a time in
    the past and answers offset 0 with no error: refused instead, as Java does."""

    def test_max_timestamp_refused_below_v7(self) -> None:
        admin, cluster = self.admin({LIST_OFFSETS: (0, 6)})  # Kafka 2.8
        cluster.create_topic("t", 1, 1)
        cluster.append("t", 0, [b"a", b"b"], timestamps=[2000, 1000])
        error = self.refused(admin.list_offsets({TP("t", 0): OffsetSpec.MAX_TIMESTAMP}))
        self.assertEqual(self.sent(cluster, LIST_OFFSETS), 0)
        self.assertEqual(error.api_name, "ListOffsets")
        self.assertEqual(error.broker_versions, (0, 6))
        self.assertEqual(error.broker, "broker-0:9092")
        self.assertIn("MAX_TIMESTAMP needs v7", str(error))
        self.assertIn("the broker at broker-0:9092 supports 0-6", str(error))

    def test_other_times_still_answered_below_v7(self) -> None:
        admin, cluster = self.admin({LIST_OFFSETS: (0, 6)})
        cluster.create_topic("t", 1, 1)
        cluster.append("t", 0, [b"a", b"b"], timestamps=[2000, 1000])
        d = admin.list_offsets({TP("t", 0): OffsetSpec.LATEST})
        self.settle(d)
        self.assertEqual(self.successResultOf(d)[TP("t", 0)].offset, 2)

    def test_max_timestamp_answered_from_v7(self) -> None:
        admin, cluster = self.admin({LIST_OFFSETS: (0, 7)})  # Kafka 3.0
        cluster.create_topic("t", 1, 1)
        cluster.append("t", 0, [b"a", b"b"], timestamps=[2000, 1000])
        d = admin.list_offsets({TP("t", 0): OffsetSpec.MAX_TIMESTAMP})
        self.settle(d)
        self.assertEqual(self.successResultOf(d)[TP("t", 0)].offset, 0)


class MissingApiTests(OldBrokerCase):
    """A call whose API the broker lacks fails with NoCommonVersionError (it used to
    fail with KafkaUnavailableError "no broker answered", which the broker did)."""

    def test_api_the_broker_lacks(self) -> None:
        admin, cluster = self.admin({AlterUserScramCredentialsRequest.API_KEY: None})  # < 2.7
        upsert = ScramUpsertion("alice", ScramMechanism.SCRAM_SHA_256, "secret")
        error = self.refused(admin.alter_user_scram_credentials([upsert]))
        self.assertEqual(error.api_key, AlterUserScramCredentialsRequest.API_KEY)
        self.assertIsNone(error.broker_versions)
        self.assertIn("AlterUserScramCredentials", str(error))
        self.assertIn("the broker at broker-0:9092 does not support it", str(error))

    def test_version_the_call_needs(self) -> None:
        admin, _ = self.admin({ApiVersionsRequest.API_KEY: (0, 2)})  # Kafka 2.1: no features
        error = self.refused(admin.describe_features())
        self.assertEqual(error.api_name, "ApiVersions")
        self.assertEqual(error.broker_versions, (0, 2))
        self.assertIn("feature levels need v3", str(error))


class AlterConfigsFallbackTests(OldBrokerCase):
    """Kafka before 2.3 has no IncrementalAlterConfigs: as ``kafka-configs`` did, afkak
    reads the dynamic configs and sends them, changed, through AlterConfigs."""

    def test_incremental_changes_through_alter_configs(self) -> None:
        admin, cluster = self.admin({IncrementalAlterConfigsRequest.API_KEY: None})  # 2.2
        cluster.create_topic("t", 1, 1)
        cluster.state.topics["t"].configs.update({"retention.ms": "1000", "segment.bytes": "99"})
        d = admin.incremental_alter_configs(
            {
                ConfigResource.topic("t"): [
                    ConfigChange("retention.ms", op=AlterOp.DELETE),
                    ConfigChange("max.message.bytes", "2000"),
                    ConfigChange("cleanup.policy", "compact", AlterOp.APPEND),
                ]
            }
        )
        self.settle(d)
        self.assertEqual(self.successResultOf(d), {ConfigResource.topic("t"): ItemResult()})
        self.assertEqual(
            cluster.state.topics["t"].configs,
            {
                "segment.bytes": "99",
                "max.message.bytes": "2000",
                "cleanup.policy": "delete,compact",
            },
        )
        self.assertEqual(self.sent(cluster, AlterConfigsRequest.API_KEY), 1)
        self.assertEqual(self.sent(cluster, IncrementalAlterConfigsRequest.API_KEY), 0)

    def test_subtract_through_alter_configs(self) -> None:
        admin, cluster = self.admin({IncrementalAlterConfigsRequest.API_KEY: None})  # 2.2
        cluster.create_topic("t", 1, 1)
        cluster.state.topics["t"].configs.update({"cleanup.policy": "delete,compact"})
        change = ConfigChange("cleanup.policy", "delete,none", AlterOp.SUBTRACT)
        d = admin.incremental_alter_configs({ConfigResource.topic("t"): [change]})
        self.settle(d)
        self.assertEqual(self.successResultOf(d), {ConfigResource.topic("t"): ItemResult()})
        self.assertEqual(cluster.state.topics["t"].configs, {"cleanup.policy": "compact"})

    def test_per_resource_errors(self) -> None:
        admin, cluster = self.admin({IncrementalAlterConfigsRequest.API_KEY: None})
        cluster.create_topic("t", 1, 1)
        d = admin.incremental_alter_configs(
            {
                ConfigResource.topic("t"): [ConfigChange("retention.ms", "5000")],
                ConfigResource.topic("missing"): [ConfigChange("retention.ms", "5000")],
            }
        )
        self.settle(d)
        results = self.successResultOf(d)
        self.assertTrue(results[ConfigResource.topic("t")].ok)
        self.assertIsInstance(
            results[ConfigResource.topic("missing")].error, UnknownTopicOrPartitionError
        )
        self.assertEqual(cluster.state.topics["t"].configs, {"retention.ms": "5000"})

    def test_validate_only_changes_nothing(self) -> None:
        admin, cluster = self.admin({IncrementalAlterConfigsRequest.API_KEY: None})
        cluster.create_topic("t", 1, 1)
        changes = {ConfigResource.topic("t"): [ConfigChange("retention.ms", "5000")]}
        d = admin.incremental_alter_configs(changes, validate_only=True)
        self.settle(d)
        self.assertTrue(self.successResultOf(d)[ConfigResource.topic("t")].ok)
        self.assertEqual(cluster.state.topics["t"].configs, {})
