"""afkak.testing's fault injection and inspection API."""

from __future__ import annotations

from typing import Any

from twisted.internet.error import ConnectionLost, ConnectionRefusedError
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.common import (
    CoordinatorNotAvailable,
    LeaderNotAvailableError,
    NotCoordinator,
    NotLeaderForPartitionError,
    RequestTimedOutError,
)
from afkak.protocol import messages
from afkak.protocol.messages import (
    REQUESTS,
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterConfigsRequest,
    ApiVersionsRequest,
    ConsumerGroupHeartbeatRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from afkak.records import build_batch
from afkak.test.test_testing_log_apis import fetch_request, produce_request
from afkak.test.test_testing_transport import connect
from afkak.testing import FakeKafkaCluster, SeenRequest

METADATA_T = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])


def sample_request(cluster: FakeKafkaCluster, api_key: int, version: int) -> Any:
    """A request of each served API at ``version``, naming topic t, partition 0, group g."""
    OC, OF = OffsetCommitRequest, OffsetFetchRequest
    topic_id = cluster.topic_id("t")
    return {
        0: produce_request(cluster, "t", 0, build_batch([b"v"])),
        1: fetch_request(cluster, {("t", 0): 0}),
        2: ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    "t", [ListOffsetsRequest.ListOffsetsPartition(0)]
                )
            ]
        ),
        3: METADATA_T,
        23: OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    "t", [OffsetForLeaderEpochRequest.OffsetForLeaderPartition(0, -1, 0)]
                )
            ]
        ),
        8: OC(
            group_id="g",
            topics=[
                OC.OffsetCommitRequestTopic("t", topic_id, [OC.OffsetCommitRequestPartition(0, 1)])
            ],
        ),
        9: (
            OF(
                groups=[
                    OF.OffsetFetchRequestGroup(
                        "g", topics=[OF.OffsetFetchRequestTopics("t", topic_id, [0])]
                    )
                ]
            )
            if version >= 8
            else OF(group_id="g", topics=[OF.OffsetFetchRequestTopic("t", [0])])
        ),
        10: FindCoordinatorRequest(coordinator_keys=["g"])
        if version >= 4
        else FindCoordinatorRequest(key="g"),
        11: JoinGroupRequest(
            "g",
            10000,
            10000,
            "",
            None,
            "consumer",
            [JoinGroupRequest.JoinGroupRequestProtocol("range", b"")],
        ),
        12: HeartbeatRequest("g", 1, "m"),
        13: LeaveGroupRequest("g", "m")
        if version < 3
        else LeaveGroupRequest("g", members=[LeaveGroupRequest.MemberIdentity("m")]),
        14: SyncGroupRequest("g", 1, "m"),
        15: DescribeGroupsRequest(groups=["g"]),
        16: ListGroupsRequest(),
        18: ApiVersionsRequest(),
        19: CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic("u", 1, 1)]),
        22: InitProducerIdRequest(transaction_timeout_ms=1000),
        **_admin_samples(version),
        **_share_samples(topic_id),
        24: AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="x",
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic("t", [0])],
        )
        if version <= 3
        else AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                    "x", topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic("t", [0])]
                )
            ],
        ),
        25: AddOffsetsToTxnRequest("x", 1, 0, "g"),
        26: EndTxnRequest("x", 1, 0, True),
        28: TxnOffsetCommitRequest(
            "x",
            "g",
            1,
            0,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                    "t", [TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(0, 1)]
                )
            ],
        ),
    }[api_key]


def _admin_samples(version: int) -> dict[int, Any]:
    """Requests of the admin APIs (naming topic t, partition 0, group g)."""
    DT, DR, DC = DeleteTopicsRequest, DeleteRecordsRequest, DescribeConfigsRequest
    IA, CP, OD = IncrementalAlterConfigsRequest, CreatePartitionsRequest, OffsetDeleteRequest
    return {
        20: DT(topics=[DT.DeleteTopicState("t")]) if version >= 6 else DT(topic_names=["t"]),
        21: DR(topics=[DR.DeleteRecordsTopic("t", [DR.DeleteRecordsPartition(0, 0)])]),
        32: DC(resources=[DC.DescribeConfigsResource(2, "t")]),
        37: CP(topics=[CP.CreatePartitionsTopic("t", 2)]),
        42: DeleteGroupsRequest(groups_names=["g"]),
        44: IA(resources=[IA.AlterConfigsResource(2, "t", [IA.AlterableConfig("x", 0, "1")])]),
        33: AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    2, "t", [AlterConfigsRequest.AlterableConfig("x", "1")]
                )
            ]
        ),
        47: OD("g", [OD.OffsetDeleteRequestTopic("t", [OD.OffsetDeleteRequestPartition(0)])]),
        68: ConsumerGroupHeartbeatRequest(
            group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1000
        ),
        69: messages.ConsumerGroupDescribeRequest(group_ids=["g"]),
        74: messages.ListConfigResourcesRequest(),
        75: messages.DescribeTopicPartitionsRequest(
            topics=[messages.DescribeTopicPartitionsRequest.TopicRequest("t")]
        ),
        **_operator_samples(),
    }


def _share_samples(topic_id: Any) -> dict[int, Any]:
    """Requests of the share group APIs (KIP-932), naming topic t, partition 0, group g."""
    M = messages
    F, A = M.ShareFetchRequest, M.ShareAcknowledgeRequest
    D, AL = M.DescribeShareGroupOffsetsRequest, M.AlterShareGroupOffsetsRequest
    return {
        76: M.ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0),
        77: M.ShareGroupDescribeRequest(group_ids=["g"]),
        78: F(group_id="g", member_id="m", topics=[F.FetchTopic(topic_id, [F.FetchPartition(0)])]),
        79: A(
            group_id="g",
            member_id="m",
            share_session_epoch=1,
            topics=[A.AcknowledgeTopic(topic_id)],
        ),
        90: D(groups=[D.DescribeShareGroupOffsetsRequestGroup("g", None)]),
        91: AL(group_id="g", topics=[AL.AlterShareGroupOffsetsRequestTopic("t", [])]),
        92: M.DeleteShareGroupOffsetsRequest(group_id="g"),
    }


def _operator_samples() -> dict[int, Any]:
    """Requests of the operator's APIs (issue 24), naming topic t, partition 0."""
    M = messages
    W, Q = M.WriteTxnMarkersRequest, M.AlterClientQuotasRequest
    return {
        27: W(markers=[W.WritableTxnMarker(5, 0, False, [W.WritableTxnMarkerTopic("t", [0])])]),
        35: M.DescribeLogDirsRequest(topics=None),
        43: M.ElectLeadersRequest(
            topic_partitions=[M.ElectLeadersRequest.TopicPartitions("t", [0])]
        ),
        45: M.AlterPartitionReassignmentsRequest(
            topics=[
                M.AlterPartitionReassignmentsRequest.ReassignableTopic(
                    "t", [M.AlterPartitionReassignmentsRequest.ReassignablePartition(0, [0])]
                )
            ]
        ),
        46: M.ListPartitionReassignmentsRequest(topics=None),
        48: M.DescribeClientQuotasRequest(),
        49: Q(entries=[Q.EntryData([Q.EntityData("client-id", "c")], [Q.OpData("x", 1.0)])]),
        55: M.DescribeQuorumRequest(),
        57: M.UpdateFeaturesRequest(),
        61: M.DescribeProducersRequest(topics=[M.DescribeProducersRequest.TopicRequest("t", [0])]),
        65: M.DescribeTransactionsRequest(transactional_ids=["x"]),
        66: M.ListTransactionsRequest(),
    }


def error_codes(message: Any) -> list[int]:
    """Every error_code in a response, depth first."""
    found = []
    for spec in message.SCHEMA:
        value = getattr(message, spec.name)
        if spec.name.endswith("error_code"):
            found.append(value)
        elif spec.struct is not None and isinstance(value, list):
            for item in value:
                found.extend(error_codes(item))
    return found


class FailNextTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        self.cluster.create_topic("t")
        self.client = connect(self.cluster)

    def test_every_api_and_version_gets_the_error(self) -> None:
        """The error response of each served API encodes at each version and carries the code."""
        for api_key, (low, high) in self.cluster.state.api_versions.items():
            for version in range(low, high + 1):
                request = sample_request(self.cluster, api_key, version)
                self.cluster.fail_next(api_key, RequestTimedOutError.errno)
                response = self.successResultOf(self.client.request(request, version))
                codes = error_codes(response)
                self.assertIn(RequestTimedOutError.errno, codes, (api_key, version))
                self.assertEqual(
                    set(codes) - {0, RequestTimedOutError.errno}, set(), (api_key, version)
                )
        self.assertEqual(self.cluster.records("t", 0), [])
        self.assertNotIn("u", self.cluster.state.topics)

    def test_count_and_classes(self) -> None:
        self.cluster.fail_next(MetadataRequest, LeaderNotAvailableError, count=2)
        for _ in range(2):
            response = self.successResultOf(self.client.request(METADATA_T, 12))
            self.assertEqual(response.topics[0].error_code, LeaderNotAvailableError.errno)
        response = self.successResultOf(self.client.request(METADATA_T, 12))
        self.assertEqual(response.topics[0].error_code, 0)

    def test_broker_filter(self) -> None:
        cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)
        cluster.fail_next(FindCoordinatorRequest, CoordinatorNotAvailable, broker=1)
        request = FindCoordinatorRequest(key="g")
        self.assertEqual(
            self.successResultOf(connect(cluster, 0).request(request, 3)).error_code, 0
        )
        response = self.successResultOf(connect(cluster, 1).request(request, 3))
        self.assertEqual(response.error_code, CoordinatorNotAvailable.errno)

    def test_failed_acks_zero_produce_drops_connection(self) -> None:
        self.cluster.fail_next(ProduceRequest, NotLeaderForPartitionError)
        self.client.send_only(produce_request(self.cluster, "t", 0, build_batch([b"v"]), acks=0), 9)
        self.assertIsNotNone(self.client.lost)
        self.assertEqual(self.cluster.records("t", 0), [])

    def test_fetch_v13_error_is_top_level_only(self) -> None:
        self.cluster.fail_next(FetchRequest, NotCoordinator)
        response = self.successResultOf(
            self.client.request(fetch_request(self.cluster, {("t", 0): 0}), 13)
        )
        self.assertEqual((response.error_code, response.responses), (NotCoordinator.errno, []))


class ConnectionFaultTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=2, reactor=self.clock)
        self.cluster.create_topic("t", partitions=2)

    def test_drop_next(self) -> None:
        client = connect(self.cluster)
        self.cluster.drop_next(MetadataRequest, broker=0)
        self.failureResultOf(client.request(METADATA_T, 12), ConnectionLost)
        again = connect(self.cluster)
        self.successResultOf(again.request(METADATA_T, 12))

    def test_drop_next_any_broker_hits_once(self) -> None:
        self.cluster.drop_next(MetadataRequest)
        first, second = connect(self.cluster, 1), connect(self.cluster, 0)
        self.failureResultOf(first.request(METADATA_T, 12), ConnectionLost)
        self.successResultOf(second.request(METADATA_T, 12))

    def test_delay(self) -> None:
        client = connect(self.cluster)
        self.cluster.delay(MetadataRequest, 2.0)
        d = client.request(METADATA_T, 12)
        self.clock.advance(1.9)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.successResultOf(d)
        self.cluster.delay(MetadataRequest, 0)
        self.successResultOf(client.request(METADATA_T, 12))

    def test_delay_one_broker(self) -> None:
        self.cluster.delay(MetadataRequest, 2.0, broker=1)
        self.successResultOf(connect(self.cluster, 0).request(METADATA_T, 12))
        self.assertNoResult(connect(self.cluster, 1).request(METADATA_T, 12))

    def test_drop_connections(self) -> None:
        clients = [connect(self.cluster, n) for n in (0, 0, 1)]
        self.cluster.drop_connections(0)
        self.assertEqual([c.lost is not None for c in clients], [True, True, False])
        self.cluster.drop_connections()
        self.assertIsNotNone(clients[2].lost)
        self.assertEqual(self.cluster.open_connections(1), 0)

    def refused(self, node: int) -> bool:
        """Whether connecting to broker ``node`` fails at once with ConnectionRefusedError."""
        d = self.cluster.endpoint_factory(self.clock, f"broker-{node}", 9092).connect(
            Factory.forProtocol(Protocol)
        )
        results: list[Any] = []
        d.addBoth(results.append)
        return (
            isinstance(results[0], Failure) and results[0].check(ConnectionRefusedError) is not None
        )

    def test_refuse_connections(self) -> None:
        open_one = connect(self.cluster, 0)
        self.cluster.refuse_connections(0)
        self.assertTrue(self.refused(0))
        self.assertFalse(self.refused(1))
        self.assertIsNone(open_one.lost)
        self.cluster.refuse_connections(0, False)
        self.assertFalse(self.refused(0))

    def test_broker_down_and_up(self) -> None:
        client = connect(self.cluster, 0)
        self.cluster.set_broker_down(0)
        self.assertIsNotNone(client.lost)
        self.assertTrue(self.refused(0))
        self.assertEqual(self.cluster.partition("t", 0).leader, 1)
        self.cluster.set_broker_up(0)
        self.assertFalse(self.refused(0))
        self.assertEqual(
            self.cluster.partition("t", 0).leader, 1
        )  # no automatic preferred election

    def test_move_leader(self) -> None:
        self.cluster.move_leader("t", 0, 1)
        part = self.cluster.partition("t", 0)
        self.assertEqual((part.leader, part.leader_epoch, part.replicas), (1, 1, [0, 1]))
        response = self.successResultOf(
            connect(self.cluster, 0).request(
                produce_request(self.cluster, "t", 0, build_batch([b"v"])), 9
            )
        )
        self.assertEqual(
            response.responses[0].partition_responses[0].error_code,
            NotLeaderForPartitionError.errno,
        )
        self.assertRaises(ValueError, self.cluster.move_leader, "t", 0, 7)

    def test_change_address(self) -> None:
        self.cluster.state.change_address(1, "elsewhere", 9999)
        self.assertTrue(self.refused(1))
        client = connect(self.cluster, host="elsewhere", port=9999)
        response = self.successResultOf(client.request(METADATA_T, 12))
        self.assertEqual(
            [(b.host, b.port) for b in response.brokers], [("broker-0", 9092), ("elsewhere", 9999)]
        )


class InspectionTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeKafkaCluster(brokers=2, reactor=Clock())
        self.cluster.create_topic("t", partitions=2)

    def test_requests_seen(self) -> None:
        client = connect(self.cluster, 1)
        self.cluster.drop_next(ApiVersionsRequest)
        self.successResultOf(client.request(METADATA_T, 11))
        self.failureResultOf(client.request(ApiVersionsRequest(), 2))
        self.assertEqual(
            self.cluster.requests_seen,
            [
                SeenRequest(1, 3, 11, 0, "raw-client", METADATA_T),
                SeenRequest(1, 18, 2, 1, "raw-client", ApiVersionsRequest()),
            ],
        )
        self.assertEqual(self.cluster.requests_seen[0].request, METADATA_T)

    def test_records_and_append(self) -> None:
        self.assertEqual(
            self.cluster.append(
                "t", 1, [b"a", None], keys=[b"k", None], headers=[[("h", b"1")], []]
            ),
            0,
        )
        self.assertEqual(self.cluster.append("t", 1, [b"b"]), 2)
        records = self.cluster.records("t", 1)
        self.assertEqual(
            [(r.offset, r.key, r.value) for r in records],
            [(0, b"k", b"a"), (1, None, None), (2, None, b"b")],
        )
        self.assertEqual(records[0].headers, (("h", b"1"),))
        self.cluster.delete_records("t", 1, 1)
        self.assertEqual([r.offset for r in self.cluster.records("t", 1)], [1, 2])
        self.assertEqual(self.cluster.partition("t", 1).log_start_offset, 1)

    def test_committed_offsets_is_a_copy(self) -> None:
        self.cluster.commit("g", "t", 0, 3, "m")
        committed = self.cluster.committed_offsets
        committed.clear()
        offset = self.cluster.committed_offsets[("g", "t", 0)]
        self.assertEqual((offset.offset, offset.metadata, offset.leader_epoch), (3, "m", -1))

    def test_create_topic_errors(self) -> None:
        self.assertRaises(ValueError, self.cluster.create_topic, "t")
        self.assertRaises(ValueError, self.cluster.create_topic, "bad name")
        self.assertRaises(ValueError, self.cluster.create_topic, "u", 1, 3)
        self.assertRaises(ValueError, self.cluster.create_topic, "u", replicas=[[0, 0]])
        self.assertRaises(ValueError, self.cluster.create_topic, "u", replicas=[[5]])
        self.assertRaises(ValueError, FakeKafkaCluster, 0)

    def test_every_served_api_is_a_known_request(self) -> None:
        self.assertLessEqual(set(self.cluster.state.api_versions), set(REQUESTS))


class FacadeSurfaceTests(SynchronousTestCase):
    """FakeKafkaCluster's public names are what a user's test needs; the rest is ``state``."""

    FACADE = {
        # connecting
        "bootstrap_hosts",
        "endpoint_factory",
        "reactor",
        # options
        "auto_create_topics",
        "rack_aware_replica_selector",
        "share_groups",
        # setup
        "create_topic",
        "delete_topic",
        "append",
        "commit",
        "delete_records",
        "enable_client_telemetry",
        # faults
        "fail_next",
        "drop_next",
        "drop_answer_next",
        "delay",
        "drop_connections",
        "refuse_connections",
        "move_leader",
        "unclean_election",
        "set_broker_down",
        "set_broker_up",
        "forget_producers",
        # inspection
        "requests_seen",
        "records",
        "committed_offsets",
        "partition",
        "topic_id",
        "coordinator",
        "open_connections",
        # experts
        "state",
    }

    def test_the_public_names_are_the_documented_facade(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock())
        public = {name for name in dir(cluster) if not name.startswith("_")}
        self.assertEqual(public, self.FACADE)
        for name in self.FACADE - {"state"}:
            self.assertIn(f"{name}`", FakeKafkaCluster.__doc__)

    def test_the_state_moved_there_is_named_in_the_error(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock())
        with self.assertRaises(AttributeError) as raised:
            cluster.brokers  # type: ignore[attr-defined]  # noqa: B018
        self.assertIn("use cluster.state.brokers", str(raised.exception))
        with self.assertRaises(AttributeError) as raised:
            cluster.nothing_of_the_kind  # type: ignore[attr-defined]  # noqa: B018
        self.assertNotIn("cluster.state", str(raised.exception))
        self.assertEqual(list(cluster.state.brokers), [0])

    def test_options_write_through_to_the_state(self) -> None:
        cluster = FakeKafkaCluster(brokers=1, reactor=Clock())
        cluster.state.fetch_sessions = True
        self.assertTrue(cluster.state.fetch_sessions)
