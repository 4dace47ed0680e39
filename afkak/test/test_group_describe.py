"""describe_consumer_groups: ConsumerGroupDescribe (KIP-848) first, DescribeGroups for
classic groups, against the fake cluster's coordinators."""

from __future__ import annotations

import re
from typing import Any

from afkak import KafkaClient
from afkak.admin import KafkaAdminClient
from afkak.common import NotCoordinator, TopicAndPartition
from afkak.protocol.messages import ConsumerGroupDescribeRequest, DescribeGroupsRequest
from afkak.test.helpers import ClockTestCase
from afkak.test.test_group_consumer import PARTITIONS, TOPIC
from afkak.test.test_group_consumer_protocol import ConsumerProtocolTestCase
from afkak.testing import FakeKafkaCluster

EVERY = {TopicAndPartition(TOPIC, p) for p in range(PARTITIONS)}


class DescribeTestCase(ConsumerProtocolTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.admin = KafkaAdminClient(self.client("admin"))

    def describe(self) -> Any:
        return self.result(self.admin.describe_consumer_groups(["g"]))["g"]

    def asked(self, request_class: Any) -> int:
        return len([r for r in self.cluster.requests_seen if r.api_key == request_class.API_KEY])


class ConsumerGroupDescribeTests(DescribeTestCase):
    def test_states_epochs_and_target_assignments_as_members_come_and_go(self) -> None:
        """Empty (no group: DescribeGroups' Dead) -> Stable -> Reconciling while the
        second member waits for what the first revokes -> Stable -> Empty."""
        self.assertEqual(self.describe().state, "Dead")
        a = self.group("a", group_remote_assignor="range")
        a.start()
        self.advance(2)
        d = self.describe()
        self.assertEqual(
            (d.group_type, d.protocol_type, d.state, d.protocol, d.group_epoch),
            ("consumer", "consumer", "Stable", "range", 1),
        )
        (m,) = d.members
        self.assertEqual((m.member_id, m.member_epoch, m.upgraded), (a.member_id, 1, True))
        self.assertEqual((m.client_id, m.topics, m.topic_regex), ("a", (TOPIC,), None))
        self.assertEqual(set(m.assignment), EVERY)
        self.assertEqual(m.assignment, m.target_assignment)

        b = self.group("b", group_remote_assignor="range")
        b.start()
        seen = []
        for _ in range(30):
            d = self.describe()
            seen.append(d.state)
            if d.state == "Reconciling":
                by_id = {m.member_id: m for m in d.members}
                self.assertEqual(d.group_epoch, 2)
                self.assertEqual(len(by_id[b.member_id].target_assignment), 3)
                self.assertLess(len(by_id[b.member_id].assignment), 3)
        self.assertIn("Reconciling", seen)
        self.assertEqual(seen[-1], "Stable")
        d = self.describe()
        self.assertEqual({m.member_epoch for m in d.members}, {2})
        self.assertEqual({tp for m in d.members for tp in m.assignment}, EVERY)
        for m in d.members:
            self.assertEqual((len(m.assignment), m.assignment), (3, m.target_assignment))

        self.result(a.shutdown())
        self.result(b.shutdown())
        d = self.describe()
        self.assertEqual(
            (d.group_type, d.state, d.members, d.group_epoch), ("consumer", "Empty", (), 4)
        )
        self.assertEqual(self.asked(DescribeGroupsRequest), 1)  # only while there was no group

    def test_consumer_groups_are_listed_with_their_type_and_state(self) -> None:
        a = self.group("a")
        a.start()
        self.advance(2)
        (listed,) = self.result(self.admin.list_consumer_groups())
        self.assertEqual(
            (listed.group_id, listed.protocol_type, listed.state), ("g", "consumer", "Stable")
        )
        self.assertEqual(self.result(self.admin.list_consumer_groups(states=["Empty"])), [])

    def test_regex_member_and_coordinator_move(self) -> None:
        a = self.group("a", pattern=re.compile("t.*"), topics=[])
        a.start()
        self.advance(2)
        self.cluster.fail_next(ConsumerGroupDescribeRequest, NotCoordinator)
        (m,) = self.describe().members
        self.assertEqual((m.topic_regex, m.topics, set(m.assignment)), ("t.*", (), EVERY))
        self.assertEqual(self.asked(ConsumerGroupDescribeRequest), 2)

    def test_classic_group_is_described_by_describe_groups(self) -> None:
        a = self.group("a", group_protocol="classic", assignors=["range"])
        a.start()
        self.advance(5)
        d = self.describe()
        self.assertEqual(
            (d.group_type, d.state, d.protocol, d.group_epoch), ("classic", "Stable", "range", None)
        )
        (m,) = d.members
        self.assertEqual(
            (set(m.assignment), m.member_epoch, m.target_assignment), (EVERY, None, None)
        )
        self.assertEqual(
            (self.asked(ConsumerGroupDescribeRequest), self.asked(DescribeGroupsRequest)), (1, 1)
        )


class DescribeWithoutConsumerGroupDescribeTests(ClockTestCase):
    def test_brokers_without_the_api_are_asked_describe_groups_only(self) -> None:
        """Kafka before 4.0 (or with the new coordinator off) does not offer API 69."""
        cluster = FakeKafkaCluster(brokers=1, reactor=self.clock, api_versions={69: None})
        cluster.create_topic(TOPIC, 1)
        cluster.commit("g", TOPIC, 0, 1)
        client = KafkaClient(
            cluster.bootstrap_hosts, reactor=self.clock, endpoint_factory=cluster.endpoint_factory
        )
        self.addCleanup(client.close)
        d = KafkaAdminClient(client).describe_consumer_groups(["g"])
        self.clock.advance(1)
        described = self.successResultOf(d)["g"]
        self.assertEqual((described.group_type, described.state), ("classic", "Empty"))
        self.assertEqual({r.api_key for r in cluster.requests_seen} & {15, 69}, {15})
