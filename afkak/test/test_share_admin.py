"""Share groups for operators on the fake cluster: KafkaAdminClient's share-group calls
and ``afkak share-groups``."""

from __future__ import annotations

import io
import json
from typing import Any

from twisted.internet.defer import Deferred

from afkak.admin import KafkaAdminClient, ShareGroupDescription
from afkak.cli._output import FAILED, Output, error_of
from afkak.cli._parser import build_parser
from afkak.cli._session import Session
from afkak.common import NonEmptyGroup, TopicAndPartition
from afkak.test.test_share_consumer import PARTITIONS, TOPIC, ShareTestCase

TP = TopicAndPartition


class ShareAdminTests(ShareTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.produce(5)
        self.a = self.consumer("a")
        self.pull(self.a)
        self.admin = KafkaAdminClient(self.a.client)

    def call(self, d: Deferred[Any]) -> Any:
        self.advance(1)
        return self.successResultOf(d)

    def test_list_and_describe(self) -> None:
        self.cluster.commit("classic", TOPIC, 0, 1)
        listed = self.call(self.admin.list_share_groups())
        self.assertEqual([(g.group_id, g.protocol_type, g.state) for g in listed],
                         [("sg", "share", "Stable")])  # fmt: skip
        everything = self.call(self.admin.list_consumer_groups())
        self.assertEqual({g.group_id for g in everything}, {"sg", "classic"})
        described = self.call(self.admin.describe_share_groups(["sg", "nope"]))
        sg: ShareGroupDescription = described["sg"]
        self.assertEqual((sg.state, sg.assignor, sg.error), ("Stable", "simple", None))
        (member,) = sg.members
        self.assertEqual(member.member_id, self.a.member_id)
        self.assertEqual(member.topics, (TOPIC,))
        self.assertEqual(sorted(member.assignment), [TP(TOPIC, p) for p in range(PARTITIONS)])
        self.assertIsNotNone(described["nope"].error)

    def test_offsets_describe_alter_delete(self) -> None:
        self.pull(self.a)  # accepts the five records of each partition
        offsets = self.call(self.admin.describe_share_group_offsets("sg"))
        self.assertEqual({tp: (o.start_offset, o.lag) for tp, o in offsets.items()},
                         {TP(TOPIC, p): (5, 0) for p in range(PARTITIONS)})  # fmt: skip
        self.produce(3)
        one = self.call(self.admin.describe_share_group_offsets("sg", [TP(TOPIC, 1)]))
        self.assertEqual((one[TP(TOPIC, 1)].start_offset, one[TP(TOPIC, 1)].lag), (5, 3))
        # Altering needs an empty group.
        d = self.admin.alter_share_group_offsets("sg", {TP(TOPIC, 0): 2})
        self.advance(1)
        self.failureResultOf(d, NonEmptyGroup)
        self.successResultOf(self.closed(self.a))
        results = self.call(self.admin.alter_share_group_offsets("sg", {TP(TOPIC, 0): 2}))
        self.assertEqual(results, {TP(TOPIC, 0): results[TP(TOPIC, 0)]})
        self.assertTrue(results[TP(TOPIC, 0)].ok)
        b = self.consumer("b")
        again = self.pull(b)
        self.assertEqual(sorted((r.partition, r.offset) for r in again if r.partition == 0),
                         [(0, o) for o in range(2, 8)])  # fmt: skip
        self.successResultOf(self.closed(b))
        deleted = self.call(self.admin.delete_share_group_offsets("sg", [TOPIC]))
        self.assertTrue(deleted[TOPIC].ok)
        self.assertEqual(self.call(self.admin.describe_share_group_offsets("sg")), {})

    def test_bad_arguments_raise_at_the_call(self) -> None:
        self.assertRaises(TypeError, self.admin.describe_share_groups, "sg")
        self.assertRaises(TypeError, self.admin.describe_share_group_offsets, "sg", [(TOPIC, 0)])
        self.assertRaises(
            ValueError, self.admin.alter_share_group_offsets, "sg", {TP(TOPIC, 0): -5}
        )
        self.assertRaises(TypeError, self.admin.delete_share_group_offsets, "sg", TOPIC)


class ShareGroupsCommandTests(ShareTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.produce(2)
        self.a = self.consumer("a")
        self.pull(self.a)

    def run_command(self, *argv: str) -> tuple[int, Any]:
        args = build_parser().parse_args(["--json", *argv])
        session = Session(args, self.clock, self.a.client)
        session.out = Output(True, io.StringIO())
        d = Deferred.fromCoroutine(args.run(session))
        self.advance(1)
        result = self.successResultOf(d)
        text = session.out.stream.getvalue()
        return result, [json.loads(line) for line in text.splitlines()]

    def test_list_describe_offsets(self) -> None:
        _, [listed] = self.run_command("share-groups", "list")
        self.assertEqual(listed, [{"group": "sg", "state": "Stable"}])
        _, [rows] = self.run_command("share-groups", "describe", "sg")
        self.assertEqual([(r["member"], len(r["partitions"])) for r in rows],
                         [(self.a.member_id, PARTITIONS)])  # fmt: skip
        self.pull(self.a)
        _, [offsets] = self.run_command("share-groups", "offsets", "sg", "--topic", f"{TOPIC}:0")
        self.assertEqual(offsets, [{"topic": TOPIC, "partition": 0, "start_offset": 2, "lag": 0}])

    def test_reset_and_delete_need_an_empty_group(self) -> None:
        args = build_parser().parse_args(
            ["share-groups", "reset-offsets", "sg", "--topic", f"{TOPIC}:0", "--to-offset", "0"]
        )
        d = Deferred.fromCoroutine(args.run(Session(args, self.clock, self.a.client)))
        self.advance(1)
        self.assertEqual(error_of(self.failureResultOf(d).value).code, FAILED)
        self.successResultOf(self.closed(self.a))
        self.run_command(
            "share-groups", "reset-offsets", "sg", "--topic", f"{TOPIC}:0", "--to-offset", "1"
        )
        self.assertEqual(self.coordinator.partitions["sg", TOPIC, 0].start, 1)
        _, [out] = self.run_command("share-groups", "delete-offsets", "sg", TOPIC)
        self.assertEqual(out, {"deleted": [TOPIC]})
        self.assertEqual(self.coordinator.partitions, {})
