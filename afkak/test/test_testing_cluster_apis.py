"""afkak.testing's ApiVersions, Metadata, FindCoordinator, CreateTopics, InitProducerId,
OffsetCommit and OffsetFetch handlers, through raw frames."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.common import (
    CoordinatorNotAvailable,
    GroupIdNotFound,
    IllegalGeneration,
    InvalidConfig,
    InvalidGroupId,
    InvalidPartitions,
    InvalidProducerEpoch,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    InvalidTransactionTimeout,
    LeaderNotAvailableError,
    NotCoordinator,
    OffsetMetadataTooLargeError,
    ProducerFenced,
    TopicAlreadyExists,
    UnknownMemberId,
    UnknownTopicId,
    UnknownTopicOrPartitionError,
    UnsupportedVersion,
)
from afkak.protocol.header import encode_request
from afkak.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from afkak.test.test_testing_transport import RawClient, connect
from afkak.testing import FakeKafkaCluster
from afkak.testing._cluster_state import java_string_hash

M, C, OC, OF = MetadataRequest, CreateTopicsRequest, OffsetCommitRequest, OffsetFetchRequest


class ApiVersionsTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=1, reactor=Clock())

    def test_every_version_advertises_served_apis(self) -> None:
        client = connect(self.cluster)
        for version in range(ApiVersionsRequest.MIN_VERSION, ApiVersionsRequest.MAX_VERSION + 1):
            response = self.successResultOf(
                client.request(ApiVersionsRequest("afkak", "1.0"), version)
            )
            ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            self.assertEqual(response.error_code, 0)
            self.assertEqual(
                sorted(ranges),
                [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23]
                + [
                    24,
                    25,
                    26,
                    27,
                    28,
                    32,
                    33,
                    35,
                    37,
                    42,
                    43,
                    44,
                    45,
                    46,
                    47,
                    48,
                    49,
                    55,
                    57,
                    61,
                    65,
                    66,
                    68,
                    69,
                    74,
                    75,
                    76,
                    77,
                    78,
                    79,
                    90,
                    91,
                    92,
                ],
                version,
            )
            self.assertEqual(ranges[1], (4, 18))

    def test_configured_ranges(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock(), api_versions={1: (4, 12), 19: None})
        response = self.successResultOf(connect(cluster).request(ApiVersionsRequest(), 2))
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        self.assertEqual(ranges[1], (4, 12))
        self.assertNotIn(19, ranges)

    def test_unadvertised_api_versions_version_answers_v0(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock(), api_versions={18: (0, 2)})
        client = connect(cluster)
        got: list[bytes] = []
        client.frameReceived = got.append  # type: ignore[method-assign]
        client.transport.write(encode_request(ApiVersionsRequest("afkak", "1.0"), 3, 5, "c"))
        (frame,) = got
        response = ApiVersionsResponse.decode(frame[4:], 0)  # v0 body after a v0 header
        self.assertEqual(response.error_code, UnsupportedVersion.errno)
        self.assertIn(
            (18, 0, 2), [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]
        )

    def test_invalid_software_name(self) -> None:
        response = self.successResultOf(
            connect(self.cluster).request(ApiVersionsRequest("-bad-", "1"), 3)
        )
        self.assertEqual(response.error_code, InvalidRequest.errno)

    def test_version_outside_advertised_range(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock(), api_versions={3: (0, 8)})
        response = self.successResultOf(
            connect(cluster).request(M(topics=[M.MetadataRequestTopic(name="t")]), 9)
        )
        self.assertEqual(response.topics[0].error_code, UnsupportedVersion.errno)

    def test_unserved_api_with_error_code(self) -> None:
        from afkak.protocol.messages import SaslHandshakeRequest

        response = self.successResultOf(
            connect(self.cluster).request(SaslHandshakeRequest("PLAIN"), 1)
        )
        self.assertEqual(response.error_code, UnsupportedVersion.errno)

    def test_unserved_api_without_error_code_drops(self) -> None:
        from afkak.protocol.messages import AlterReplicaLogDirsRequest

        client = connect(self.cluster)
        self.failureResultOf(client.request(AlterReplicaLogDirsRequest(), 2))
        self.assertIsNotNone(client.lost)


class MetadataTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=3, reactor=Clock())
        self.cluster.create_topic("t", partitions=3, replication_factor=2)
        self.client = connect(self.cluster, 1)

    def metadata(self, topics: Any, version: int = 12, allow: bool = True) -> Any:
        request = M(topics=topics, allow_auto_topic_creation=allow)
        return self.successResultOf(self.client.request(request, version))

    def test_every_version(self) -> None:
        for version in range(M.MIN_VERSION, M.MAX_VERSION + 1):
            response = self.metadata([M.MetadataRequestTopic(name="t")], version)
            self.assertEqual([b.node_id for b in response.brokers], [0, 1, 2])
            (topic,) = response.topics
            self.assertEqual((topic.error_code, topic.name), (0, "t"))
            self.assertEqual([p.leader_id for p in topic.partitions], [0, 1, 2])
            self.assertEqual([p.replica_nodes for p in topic.partitions], [[0, 1], [1, 2], [2, 0]])
            if version >= 10:
                self.assertEqual(topic.topic_id, self.cluster.topic_id("t"))
            if version >= 2:
                self.assertEqual(response.cluster_id, "afkak-fake-cluster")

    def test_all_and_no_topics(self) -> None:
        self.cluster.create_topic("a")
        self.assertEqual([t.name for t in self.metadata(None).topics], ["a", "t"])
        self.assertEqual(self.metadata([]).topics, [])
        self.assertEqual([t.name for t in self.metadata([], version=0).topics], ["a", "t"])

    def test_auto_create(self) -> None:
        (topic,) = self.metadata([M.MetadataRequestTopic(name="new")]).topics
        self.assertEqual((topic.error_code, len(topic.partitions)), (0, 1))
        self.assertIn("new", self.cluster.state.topics)

    def test_auto_create_refused_by_request_or_cluster(self) -> None:
        (topic,) = self.metadata([M.MetadataRequestTopic(name="new")], allow=False).topics
        self.assertEqual(topic.error_code, UnknownTopicOrPartitionError.errno)
        self.cluster.auto_create_topics = False
        (topic,) = self.metadata([M.MetadataRequestTopic(name="new")], version=3).topics
        self.assertEqual(topic.error_code, UnknownTopicOrPartitionError.errno)
        self.assertNotIn("new", self.cluster.state.topics)

    def test_invalid_name(self) -> None:
        (topic,) = self.metadata([M.MetadataRequestTopic(name="bad name")]).topics
        self.assertEqual(topic.error_code, InvalidTopic.errno)

    def test_by_topic_id(self) -> None:
        unknown = UUID(int=5)
        for version in (10, 11):
            (missing,) = self.metadata(
                [M.MetadataRequestTopic(topic_id=unknown, name=None)], version
            ).topics
            self.assertEqual((missing.error_code, missing.name), (UnknownTopicId.errno, ""))
        response = self.metadata(
            [
                M.MetadataRequestTopic(topic_id=self.cluster.topic_id("t"), name=None),
                M.MetadataRequestTopic(topic_id=unknown, name=None),
            ]
        )
        found, missing = response.topics
        self.assertEqual((found.name, found.error_code), ("t", 0))
        self.assertEqual(
            (missing.topic_id, missing.error_code, missing.name),
            (unknown, UnknownTopicId.errno, None),
        )

    def test_broker_down(self) -> None:
        self.cluster.set_broker_down(0)
        response = self.metadata([M.MetadataRequestTopic(name="t")])
        self.assertEqual([b.node_id for b in response.brokers], [1, 2])
        p0, _, p2 = response.topics[0].partitions
        self.assertEqual(
            (p0.leader_id, p0.leader_epoch, p0.isr_nodes, p0.offline_replicas), (1, 1, [1], [0])
        )
        self.assertEqual((p2.leader_id, p2.isr_nodes), (2, [2]))
        self.assertEqual(response.controller_id, 1)

    def test_no_leader_left(self) -> None:
        self.cluster.set_broker_down(0)
        self.cluster.set_broker_down(2)
        p2 = self.metadata([M.MetadataRequestTopic(name="t")]).topics[0].partitions[2]
        self.assertEqual((p2.error_code, p2.leader_id), (LeaderNotAvailableError.errno, -1))
        self.cluster.set_broker_up(2)
        p2 = self.metadata([M.MetadataRequestTopic(name="t")]).topics[0].partitions[2]
        self.assertEqual((p2.error_code, p2.leader_id, p2.leader_epoch), (0, 2, 2))


class FindCoordinatorTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=3, reactor=Clock())
        self.client = connect(self.cluster)

    def test_java_hash(self) -> None:
        self.assertEqual(java_string_hash("group"), 98629247)
        text = "a-much-longer-group-name"  # overflows: Java wraps at 32 bits, signed
        exact = sum(ord(c) * 31 ** (len(text) - 1 - i) for i, c in enumerate(text)) % 2**32
        self.assertEqual(java_string_hash(text), exact - 2**32 if exact >= 2**31 else exact)
        self.assertLess(java_string_hash(text), 0)
        self.assertEqual(java_string_hash("é€"), 0xE9 * 31 + 0x20AC)

    def test_every_version(self) -> None:
        expected = self.cluster.coordinator("g")
        for version in range(4):
            response = self.successResultOf(
                self.client.request(FindCoordinatorRequest(key="g"), version)
            )
            self.assertEqual((response.error_code, response.node_id), (0, expected))
            self.assertEqual(response.host, f"broker-{expected}")
        for version in range(4, FindCoordinatorRequest.MAX_VERSION + 1):
            request = FindCoordinatorRequest(coordinator_keys=["g", "h"])
            response = self.successResultOf(self.client.request(request, version))
            self.assertEqual(
                [(c.key, c.node_id, c.error_code) for c in response.coordinators],
                [("g", expected, 0), ("h", self.cluster.coordinator("h"), 0)],
            )

    def test_coordinator_moves_when_down(self) -> None:
        node = self.cluster.coordinator("g")
        self.cluster.set_broker_down(node)
        self.assertEqual(self.cluster.coordinator("g"), (node + 1) % 3)
        for n in self.cluster.state.brokers:
            self.cluster.set_broker_down(n)
        self.assertEqual(self.cluster.coordinator("g"), -1)

    def test_none_available_and_invalid(self) -> None:
        for n in (1, 2):
            self.cluster.set_broker_down(n)
        key = next(k for k in map(str, range(100)) if self.cluster.coordinator(k) == 0)
        self.cluster.set_broker_down(0)
        self.cluster.set_broker_up(1)
        self.assertEqual(self.cluster.coordinator(key), 1)
        response = self.successResultOf(
            connect(self.cluster, 1).request(
                FindCoordinatorRequest(key_type=2, coordinator_keys=["x"]), 4
            )
        )
        self.assertEqual(response.coordinators[0].error_code, InvalidRequest.errno)
        self.cluster.set_broker_down(1)
        self.assertEqual(self.cluster.coordinator(key), -1)

    def test_no_coordinator_up(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock())
        client = connect(cluster)
        # Down, but this connection stays (as a half-dead broker's).
        cluster.state.brokers[0].up = False
        response = self.successResultOf(client.request(FindCoordinatorRequest(key="g"), 3))
        self.assertEqual(
            (response.error_code, response.node_id), (CoordinatorNotAvailable.errno, -1)
        )


class CreateTopicsTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=3, reactor=Clock())
        self.client = connect(self.cluster)

    def create(self, *topics: Any, version: int = 7, validate_only: bool = False) -> list[Any]:
        request = C(topics=list(topics), timeout_ms=1000, validate_only=validate_only)
        return self.successResultOf(self.client.request(request, version)).topics  # type: ignore[no-any-return]

    def test_every_version(self) -> None:
        for version in range(C.MIN_VERSION, C.MAX_VERSION + 1):
            (result,) = self.create(C.CreatableTopic(f"t{version}", 2, 3), version=version)
            self.assertEqual(result.error_code, 0)
            self.assertEqual(len(self.cluster.state.topics[f"t{version}"].partitions), 2)
            if version >= 5:
                self.assertEqual((result.num_partitions, result.replication_factor), (2, 3))
            if version >= 7:
                self.assertEqual(result.topic_id, self.cluster.topic_id(f"t{version}"))

    def test_defaults_and_assignments(self) -> None:
        by_default, placed = self.create(
            C.CreatableTopic("d", -1, -1),
            C.CreatableTopic(
                "p",
                -1,
                -1,
                [C.CreatableReplicaAssignment(0, [2, 1]), C.CreatableReplicaAssignment(1, [1])],
            ),
        )
        self.assertEqual((by_default.num_partitions, by_default.replication_factor), (1, 3))
        self.assertEqual(placed.error_code, 0)
        self.assertEqual(
            [p.replicas for p in self.cluster.state.topics["p"].partitions], [[2, 1], [1]]
        )
        self.assertEqual(self.cluster.partition("p", 0).leader, 2)

    def test_errors(self) -> None:
        self.cluster.create_topic("exists")
        results = self.create(
            C.CreatableTopic("exists", 1, 1),
            C.CreatableTopic("zero", 0, 1),
            C.CreatableTopic("rf", 1, 4),
            C.CreatableTopic("bad/name", 1, 1),
            C.CreatableTopic("dup", 1, 1),
            C.CreatableTopic("dup", 1, 1),
            C.CreatableTopic("assign", -1, -1, [C.CreatableReplicaAssignment(0, [9])]),
            C.CreatableTopic("mixed", 2, -1, [C.CreatableReplicaAssignment(0, [0])]),
            C.CreatableTopic("null", 1, 1, [], [C.CreatableTopicConfig("retention.ms", None)]),
        )
        self.assertEqual(
            [r.error_code for r in results],
            [
                TopicAlreadyExists.errno,
                InvalidPartitions.errno,
                InvalidReplicationFactor.errno,
                InvalidTopic.errno,
                InvalidRequest.errno,
                InvalidRequest.errno,
                InvalidReplicaAssignment.errno,
                InvalidRequest.errno,
                InvalidConfig.errno,
            ],
        )
        self.assertTrue(all(r.error_message for r in results))
        self.assertEqual(sorted(self.cluster.state.topics), ["exists"])

    def test_validate_only(self) -> None:
        (result,) = self.create(C.CreatableTopic("v", 2, 1), validate_only=True)
        self.assertEqual((result.error_code, result.num_partitions), (0, 2))
        self.assertNotIn("v", self.cluster.state.topics)

    def test_configs(self) -> None:
        (result,) = self.create(
            C.CreatableTopic("c", 1, 1, [], [C.CreatableTopicConfig("retention.ms", "5")])
        )
        self.assertEqual(result.error_code, 0)
        self.assertEqual(self.cluster.state.topics["c"].configs, {"retention.ms": "5"})


class InitProducerIdTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=2, reactor=Clock())
        self.clients = [connect(self.cluster, n) for n in range(2)]

    def init(
        self, version: int = 4, transactional_id: str | None = None, node: int = 0, **kwargs: Any
    ) -> Any:
        request = InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=60000, **kwargs
        )
        return self.successResultOf(self.clients[node].request(request, version))

    def test_idempotent_every_version_gets_new_ids(self) -> None:
        ids = []
        for version in range(
            InitProducerIdRequest.MIN_VERSION, InitProducerIdRequest.MAX_VERSION + 1
        ):
            response = self.init(version)
            self.assertEqual((response.error_code, response.producer_epoch), (0, 0))
            ids.append(response.producer_id)
        self.assertEqual(len(set(ids)), len(ids))

    def test_transactional_epoch_bumps(self) -> None:
        node = self.cluster.coordinator("txn")
        first = self.init(transactional_id="txn", node=node)
        again = self.init(transactional_id="txn", node=node)
        self.assertEqual((again.producer_id, again.producer_epoch), (first.producer_id, 1))
        resumed = self.init(
            transactional_id="txn", node=node, producer_id=first.producer_id, producer_epoch=1
        )
        self.assertEqual(resumed.producer_epoch, 2)
        fenced = self.init(
            transactional_id="txn", node=node, producer_id=first.producer_id, producer_epoch=1
        )
        self.assertEqual(fenced.error_code, ProducerFenced.errno)
        old = self.init(
            3, transactional_id="txn", node=node, producer_id=first.producer_id, producer_epoch=1
        )
        self.assertEqual(old.error_code, InvalidProducerEpoch.errno)  # v3 has no PRODUCER_FENCED

    def test_transactional_errors(self) -> None:
        node = self.cluster.coordinator("txn")
        self.assertEqual(
            self.init(transactional_id="txn", node=1 - node).error_code, NotCoordinator.errno
        )
        request = InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=0)
        response = self.successResultOf(self.clients[node].request(request, 4))
        self.assertEqual(response.error_code, InvalidTransactionTimeout.errno)


class OffsetCommitFetchTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=3, reactor=Clock())
        self.cluster.create_topic("t", partitions=2)
        self.node = self.cluster.coordinator("g")
        self.client = connect(self.cluster, self.node)

    def commit(
        self,
        version: int,
        offset: int = 5,
        group: str = "g",
        generation: int = -1,
        member: str = "",
        topic: str = "t",
        partition: int = 0,
        metadata: str | None = "meta",
        client: RawClient | None = None,
    ) -> int:
        topic_id = (
            self.cluster.topic_id(topic) if topic in self.cluster.state.topics else UUID(int=1)
        )
        request = OC(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member,
            topics=[
                OC.OffsetCommitRequestTopic(
                    name=topic,
                    topic_id=topic_id,
                    partitions=[
                        OC.OffsetCommitRequestPartition(
                            partition, offset, committed_metadata=metadata
                        )
                    ],
                )
            ],
        )
        response = self.successResultOf((client or self.client).request(request, version))
        return response.topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    def fetch_v7(
        self, version: int, topics: Any = None, group: str = "g", client: RawClient | None = None
    ) -> Any:
        return self.successResultOf(
            (client or self.client).request(OF(group_id=group, topics=topics), version)
        )

    def test_commit_every_version(self) -> None:
        for version in range(OC.MIN_VERSION, OC.MAX_VERSION + 1):
            self.assertEqual(self.commit(version, offset=version), 0, version)
            self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, version)
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].metadata, "meta")

    def test_fetch_every_old_version(self) -> None:
        self.cluster.commit("g", "t", 1, 42, "m", leader_epoch=3)
        for version in range(OF.MIN_VERSION, 8):
            response = self.fetch_v7(version, [OF.OffsetFetchRequestTopic("t", [0, 1])])
            (topic,) = response.topics
            self.assertEqual(
                [
                    (p.partition_index, p.committed_offset, p.metadata, p.error_code)
                    for p in topic.partitions
                ],
                [(0, -1, "", 0), (1, 42, "m", 0)],
                version,
            )
            if version >= 5:
                self.assertEqual(topic.partitions[1].committed_leader_epoch, 3)

    def test_fetch_all_topics(self) -> None:
        self.cluster.commit("g", "t", 1, 42)
        self.cluster.commit("other", "t", 0, 1)
        (topic,) = self.fetch_v7(7).topics
        self.assertEqual(
            [(p.partition_index, p.committed_offset) for p in topic.partitions], [(1, 42)]
        )

    def test_fetch_groups_every_new_version(self) -> None:
        self.cluster.commit("g", "t", 0, 7)
        other = next(g for g in map(str, range(100)) if self.cluster.coordinator(g) != self.node)
        for version in range(8, OF.MAX_VERSION + 1):
            request = OF(
                groups=[
                    OF.OffsetFetchRequestGroup(
                        group_id="g",
                        topics=[
                            OF.OffsetFetchRequestTopics(
                                name="t", topic_id=self.cluster.topic_id("t"), partition_indexes=[0]
                            )
                        ],
                    ),
                    OF.OffsetFetchRequestGroup(group_id="g", topics=None),
                    OF.OffsetFetchRequestGroup(group_id=other, topics=None),
                ]
            )
            named, every, elsewhere = self.successResultOf(
                self.client.request(request, version)
            ).groups
            self.assertEqual(named.topics[0].partitions[0].committed_offset, 7, version)
            self.assertEqual(every.topics[0].partitions[0].committed_offset, 7, version)
            self.assertEqual(elsewhere.error_code, NotCoordinator.errno)
            if version >= 10:
                self.assertEqual(every.topics[0].topic_id, self.cluster.topic_id("t"))

    def test_fetch_unknown_topic_id(self) -> None:
        request = OF(
            groups=[
                OF.OffsetFetchRequestGroup(
                    group_id="g",
                    topics=[
                        OF.OffsetFetchRequestTopics(topic_id=UUID(int=9), partition_indexes=[0])
                    ],
                )
            ]
        )
        (group,) = self.successResultOf(self.client.request(request, 10)).groups
        self.assertEqual(group.topics[0].partitions[0].error_code, UnknownTopicId.errno)

    def test_not_coordinator(self) -> None:
        elsewhere = connect(self.cluster, (self.node + 1) % 3)
        self.assertEqual(self.commit(8, client=elsewhere), NotCoordinator.errno)
        self.assertEqual(self.fetch_v7(7, client=elsewhere).error_code, NotCoordinator.errno)
        response = self.fetch_v7(1, [OF.OffsetFetchRequestTopic("t", [0])], client=elsewhere)
        self.assertEqual(response.topics[0].partitions[0].error_code, NotCoordinator.errno)
        self.assertEqual(self.cluster.committed_offsets, {})

    def test_commit_errors(self) -> None:
        self.assertEqual(self.commit(8, topic="nope"), UnknownTopicOrPartitionError.errno)
        self.assertEqual(self.commit(10, topic="nope"), UnknownTopicId.errno)
        self.assertEqual(self.commit(8, partition=9), UnknownTopicOrPartitionError.errno)
        self.assertEqual(self.commit(8, metadata="x" * 5000), OffsetMetadataTooLargeError.errno)
        empty = connect(self.cluster, self.cluster.coordinator(""))
        self.assertEqual(self.commit(8, group="", client=empty), InvalidGroupId.errno)
        self.assertEqual(self.cluster.committed_offsets, {})

    def test_null_metadata_is_stored_empty(self) -> None:
        self.assertEqual(self.commit(8, metadata=None), 0)
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].metadata, "")

    def test_generation_rules(self) -> None:
        """Without group membership: unknown group -> ILLEGAL_GENERATION (<v9) or
        GROUP_ID_NOT_FOUND; known simple group -> UNKNOWN_MEMBER_ID."""
        self.assertEqual(self.commit(8, generation=1, member="m"), IllegalGeneration.errno)
        self.assertEqual(self.commit(9, generation=1, member="m"), GroupIdNotFound.errno)
        self.assertEqual(self.commit(8), 0)
        self.assertEqual(self.commit(8, generation=1, member="m"), UnknownMemberId.errno)
