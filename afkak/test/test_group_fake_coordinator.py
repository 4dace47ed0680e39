"""The fake cluster's classic group coordinator, spoken to with raw requests."""

from __future__ import annotations

from typing import Any

from afkak.common import (
    FencedInstanceId,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    MemberIdRequired,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
)
from afkak.protocol.messages import (
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from afkak.test.helpers import ClockTestCase
from afkak.test.test_testing_transport import RawClient, connect
from afkak.testing import FakeKafkaCluster
from afkak.testing._group_state import GroupState

P = JoinGroupRequest.JoinGroupRequestProtocol


def join(
    group: str = "g",
    member: str = "",
    instance: str | None = None,
    protocols: Any = None,
    ptype: str = "consumer",
    session: int = 10000,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session,
        rebalance_timeout_ms=20000,
        member_id=member,
        group_instance_id=instance,
        protocol_type=ptype,
        protocols=protocols if protocols is not None else [P("range", b"meta")],
    )


def commit(generation: int, member: str, topic: str = "t") -> OffsetCommitRequest:
    OC = OffsetCommitRequest
    return OC(
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            OC.OffsetCommitRequestTopic(topic, partitions=[OC.OffsetCommitRequestPartition(0, 5)])
        ],
    )


class FakeCoordinatorTests(ClockTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster = FakeKafkaCluster(brokers=3, reactor=self.clock)
        self.cluster.create_topic("t", 2)
        self.node = self.cluster.coordinator("g")
        self.client = connect(self.cluster, self.node)

    def other(self) -> RawClient:
        return connect(self.cluster, self.node)

    def request(self, msg: Any, version: int, client: RawClient | None = None) -> Any:
        return self.successResultOf((client or self.client).request(msg, version))

    def joined(self, client: RawClient | None = None, **kwargs: Any) -> Any:
        """A member through MEMBER_ID_REQUIRED, its JoinGroup pending: (member id, Deferred)."""
        client = client or self.client
        first = self.request(join(**kwargs), 9, client)
        self.assertEqual(first.error_code, MemberIdRequired.errno)
        return first.member_id, client.request(join(member=first.member_id, **kwargs), 9)

    def test_first_join_waits_the_initial_delay(self) -> None:
        member, d = self.joined()
        self.assertNoResult(d)
        self.clock.advance(3)
        response = self.successResultOf(d)
        self.assertEqual(
            (response.generation_id, response.leader, response.member_id), (1, member, member)
        )
        self.assertEqual([(m.member_id, m.metadata) for m in response.members], [(member, b"meta")])
        self.assertEqual(response.protocol_name, "range")

    def test_old_versions_join_without_the_member_id_round(self) -> None:
        d = self.client.request(join(), 3)
        self.clock.advance(3)
        self.assertEqual(self.successResultOf(d).generation_id, 1)

    def test_leader_sync_answers_the_waiting_followers(self) -> None:
        b_client = self.other()
        a, da = self.joined()
        b, db = self.joined(b_client)
        self.clock.advance(3)
        ra = self.successResultOf(da)
        self.successResultOf(db)
        leader, follower = (a, b) if ra.leader == a else (b, a)
        lc, fc = (self.client, b_client) if leader == a else (b_client, self.client)
        fd = fc.request(SyncGroupRequest("g", 1, follower), 5)
        self.assertNoResult(fd)
        assignments = [SyncGroupRequest.SyncGroupRequestAssignment(m, m.encode()) for m in (a, b)]
        lr = self.request(SyncGroupRequest("g", 1, leader, assignments=assignments), 5, lc)
        self.assertEqual(lr.assignment, leader.encode())
        self.assertEqual(self.successResultOf(fd).assignment, follower.encode())
        self.assertEqual(self.request(HeartbeatRequest("g", 1, follower), 4, fc).error_code, 0)

    def test_errors(self) -> None:
        member, d = self.joined()
        self.clock.advance(3)
        self.successResultOf(d)
        self.assertEqual(
            self.request(HeartbeatRequest("g", 0, member), 4).error_code, IllegalGeneration.errno
        )
        self.assertEqual(
            self.request(HeartbeatRequest("g", 1, "nobody"), 4).error_code, UnknownMemberId.errno
        )
        bad = self.request(join(protocols=[P("roundrobin", b"")]), 9, self.other())
        self.assertEqual(bad.error_code, InconsistentGroupProtocol.errno)
        self.assertEqual(self.request(join(session=10), 9).error_code, InvalidSessionTimeout.errno)
        elsewhere = connect(self.cluster, (self.node + 1) % 3)
        self.assertEqual(self.request(join(), 9, elsewhere).error_code, NotCoordinator.errno)

    def test_commits_are_checked_against_the_generation(self) -> None:
        committer = self.other()  # the member's connection is held by its JoinGroup

        def code(generation: int, member: str) -> int:
            response = self.request(commit(generation, member), 9, committer)
            return int(response.topics[0].partitions[0].error_code)

        self.assertEqual(code(-1, ""), 0, "a simple commit to a group without members")
        member, d = self.joined()
        self.assertEqual(code(-1, ""), UnknownMemberId.errno, "simple commits to a live group")
        self.clock.advance(3)
        self.successResultOf(d)
        self.assertEqual(code(1, member), RebalanceInProgress.errno, "awaiting the leader's sync")
        self.request(SyncGroupRequest("g", 1, member), 5)
        self.assertEqual(code(1, member), 0)
        self.assertEqual(code(0, member), IllegalGeneration.errno)
        self.assertEqual(code(1, "nobody"), UnknownMemberId.errno)
        self.assertEqual(self.cluster.committed_offsets[("g", "t", 0)].offset, 5)

    def test_session_expiry_and_leave(self) -> None:
        a, da = self.joined()
        b_client = self.other()
        b, db = self.joined(b_client)
        self.clock.advance(3)
        self.successResultOf(da)
        self.successResultOf(db)
        self.clock.advance(11)  # neither heartbeats: both sessions expire
        self.assertEqual(self.cluster.state.group_coordinator.groups["g"].members, {})
        c, dc = self.joined()
        self.clock.advance(3)
        self.successResultOf(dc)
        left = self.request(
            LeaveGroupRequest("g", members=[LeaveGroupRequest.MemberIdentity(c)]), 5
        )
        self.assertEqual([m.error_code for m in left.members], [0])
        self.assertIs(self.cluster.state.group_coordinator.groups["g"].state, GroupState.EMPTY)

    def test_static_member_fences_its_predecessor(self) -> None:
        d = self.client.request(join(instance="i"), 9)
        self.clock.advance(3)
        old = self.successResultOf(d).member_id
        new = self.request(join(instance="i"), 9, self.other()).member_id
        self.assertNotEqual(new, old)
        fenced = self.request(HeartbeatRequest("g", 1, old, group_instance_id="i"), 4)
        self.assertEqual(fenced.error_code, FencedInstanceId.errno)

    def test_describe_and_list(self) -> None:
        member, d = self.joined()
        self.clock.advance(3)
        self.successResultOf(d)
        self.request(
            SyncGroupRequest(
                "g",
                1,
                member,
                assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member, b"A")],
            ),
            5,
        )
        (g,) = self.request(DescribeGroupsRequest(groups=["g"]), 5).groups
        self.assertEqual(
            (g.group_state, g.protocol_type, g.protocol_data), ("Stable", "consumer", "range")
        )
        self.assertEqual(
            [(m.member_id, m.member_metadata, m.member_assignment) for m in g.members],
            [(member, b"meta", b"A")],
        )
        (unknown,) = self.request(DescribeGroupsRequest(groups=["zz"]), 5).groups
        self.assertEqual(unknown.group_state, "Dead")
        listed = [
            x.group_id
            for node in self.cluster.state.brokers
            for x in self.request(ListGroupsRequest(), 4, connect(self.cluster, node)).groups
        ]
        self.assertEqual(listed, ["g"])
        coordinator = connect(self.cluster, self.cluster.coordinator("g"))
        by_state = {
            state: [
                (x.group_id, x.group_state)
                for x in self.request(
                    ListGroupsRequest(states_filter=[state]), 4, coordinator
                ).groups
            ]
            for state in ("Stable", "Empty")
        }
        self.assertEqual(by_state, {"Stable": [("g", "Stable")], "Empty": []})
