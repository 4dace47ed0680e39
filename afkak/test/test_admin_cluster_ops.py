"""The operator's cluster calls of KafkaAdminClient on the fake cluster: describe_log_dirs,
describe_features / update_features and describe_metadata_quorum."""

from __future__ import annotations

import io
import json
from typing import Any

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from afkak.admin import (
    ElectionType,
    FeatureUpdate,
    FeatureUpgradeType,
    QuotaEntity,
    QuotaFilter,
    ReplicaInfo,
    VersionRange,
)
from afkak.cli._output import Output
from afkak.cli._parser import build_parser
from afkak.cli._session import Session
from afkak.common import (
    BrokerNotAvailableError,
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    InvalidReplicaAssignment,
    InvalidRequest,
    InvalidUpdateVersion,
    NoReassignmentInProgress,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.test.test_admin import AdminFakeClusterCase, on_fake_cluster

TP = TopicAndPartition


def run_cli(case: Any, *argv: str) -> Any:
    """``afkak --json ARGV`` on *case*'s clock and client; its JSON output."""
    args = build_parser().parse_args(["--json", *argv])
    session = Session(args, case.clock, case.client)
    session.out = Output(True, io.StringIO())
    d = Deferred.fromCoroutine(args.run(session))
    for _ in range(20):
        case.clock.advance(1)
    case.assertEqual(case.successResultOf(d), 0)
    (out,) = [json.loads(line) for line in session.out.stream.getvalue().splitlines()]
    return out


class ClusterOpsTests(AdminFakeClusterCase):
    def test_log_dirs_of_every_broker(self) -> None:
        self.cluster.create_topic("t", 2, 2)  # replicas [0, 1] and [1, 2]
        self.cluster.append("t", 0, [b"a" * 100])
        dirs = self.result(self.admin.describe_log_dirs())
        self.assertEqual(sorted(dirs), [0, 1, 2])
        (d1,) = dirs[1].values()
        self.assertEqual(sorted(d1.replicas), [TP("t", 0), TP("t", 1)])
        size = d1.replicas[TP("t", 0)].size
        self.assertGreater(size, 100)
        self.assertEqual(d1.replicas[TP("t", 1)], ReplicaInfo(0, 0, False))
        self.assertEqual(d1.total_bytes - d1.usable_bytes, size)
        self.assertEqual(list(dirs[2]), ["/fake/broker-2/kafka-logs"])
        only = self.result(self.admin.describe_log_dirs([1], partitions=[TP("t", 1)]))
        self.assertEqual([list(d.replicas) for d in only[1].values()], [[TP("t", 1)]])
        self.failureResultOf(self.admin.describe_log_dirs([7]), BrokerNotAvailableError)

    def test_features_described_and_updated(self) -> None:
        self.cluster.state.features.supported["transaction.version"] = (0, 2)
        before = self.result(self.admin.describe_features())
        self.assertEqual(before.finalized, {"metadata.version": VersionRange(27, 27)})
        self.assertEqual(before.supported["transaction.version"], VersionRange(0, 2))
        checked = self.result(
            self.admin.update_features({"transaction.version": 2}, validate_only=True)
        )
        self.assertIsNone(checked["transaction.version"].error)
        self.assertNotIn(
            "transaction.version", self.result(self.admin.describe_features()).finalized
        )
        done = self.result(self.admin.update_features({"transaction.version": 2}))
        self.assertIsNone(done["transaction.version"].error)
        after = self.result(self.admin.describe_features())
        self.assertEqual(after.finalized["transaction.version"], VersionRange(2, 2))
        self.assertGreater(after.finalized_epoch, before.finalized_epoch)
        refused = self.result(self.admin.update_features({"transaction.version": 1}))
        self.assertIsInstance(refused["transaction.version"].error, InvalidUpdateVersion)
        down = FeatureUpdate(1, FeatureUpgradeType.SAFE_DOWNGRADE)
        self.assertIsNone(
            self.result(self.admin.update_features({"transaction.version": down}))[
                "transaction.version"
            ].error
        )
        too_high = self.result(self.admin.update_features({"transaction.version": 3}))
        self.assertIsInstance(too_high["transaction.version"].error, InvalidUpdateVersion)

    def test_metadata_quorum(self) -> None:
        self.clock.advance(5)
        quorum = self.result(self.admin.describe_metadata_quorum())
        self.assertEqual((quorum.leader_id, quorum.leader_epoch), (0, 1))
        self.assertEqual([v.replica_id for v in quorum.voters], [0])
        self.assertEqual([o.replica_id for o in quorum.observers], [1, 2])
        self.assertEqual(quorum.voters[0].last_fetch_timestamp, 5000)
        self.assertEqual(quorum.high_watermark, quorum.observers[0].log_end_offset)


class ClusterOpsCommandTests(SynchronousTestCase):
    """``afkak features ...`` and ``afkak cluster quorum`` on the fake cluster."""

    def setUp(self) -> None:
        self.clock, self.cluster, self.client = on_fake_cluster(self)

    def run_command(self, *argv: str) -> Any:
        return run_cli(self, *argv)

    def test_features(self) -> None:
        self.cluster.state.features.supported["group.version"] = (0, 1)
        rows = self.run_command("features", "describe")
        self.assertEqual(
            [(r["feature"], r["finalized"]) for r in rows],
            [("group.version", 0), ("metadata.version", 27)],
        )
        self.run_command("features", "upgrade", "--feature", "group.version=1", "--dry-run")
        self.assertNotIn("group.version", self.cluster.state.features.finalized)
        self.assertEqual(
            self.run_command("features", "upgrade", "--feature", "group.version=1"),
            {"group.version": 1},
        )
        self.assertEqual(self.cluster.state.features.finalized["group.version"], 1)
        self.run_command("features", "downgrade", "--feature", "group.version=0")
        self.assertNotIn("group.version", self.cluster.state.features.finalized)

    def test_cluster_and_quorum(self) -> None:
        self.assertEqual(self.run_command("cluster")["controller"], 0)
        q = self.run_command("cluster", "quorum")
        self.assertEqual(
            (q["leader"], q["voters"], q["observers"], q["max_follower_lag"]), (0, [0], [1, 2], 0)
        )
        rows = self.run_command("cluster", "quorum", "--replication")
        self.assertEqual(
            [(r["node"], r["status"]) for r in rows],
            [(0, "leader"), (1, "observer"), (2, "observer")],
        )


class QuotaTests(AdminFakeClusterCase):
    def test_quotas_set_described_and_removed(self) -> None:
        app = QuotaEntity({"client-id": "app"})
        alice = QuotaEntity({"user": "alice", "client-id": "app"})
        default_user = QuotaEntity({"user": None})
        bad = QuotaEntity({"ip": "10.0.0.1"})
        results = self.result(
            self.admin.alter_client_quotas(
                {
                    app: {"producer_byte_rate": 1024},
                    alice: {"consumer_byte_rate": 2048.5},
                    default_user: {"request_percentage": 50},
                    bad: {"producer_byte_rate": 1},
                }
            )
        )
        self.assertEqual([r.error for r in list(results.values())[:3]], [None, None, None])
        self.assertIsInstance(results[bad].error, InvalidRequest)
        everything = self.result(self.admin.describe_client_quotas())
        self.assertEqual(
            everything,
            {
                app: {"producer_byte_rate": 1024.0},
                alice: {"consumer_byte_rate": 2048.5},
                default_user: {"request_percentage": 50.0},
            },
        )
        clients = self.result(self.admin.describe_client_quotas([QuotaFilter("client-id")]))
        self.assertEqual(set(clients), {app, alice})
        strict = self.result(
            self.admin.describe_client_quotas([QuotaFilter.exact("client-id", "app")], strict=True)
        )
        self.assertEqual(set(strict), {app})
        defaults = self.result(self.admin.describe_client_quotas([QuotaFilter.default("user")]))
        self.assertEqual(set(defaults), {default_user})
        checked = self.result(
            self.admin.alter_client_quotas({app: {"producer_byte_rate": None}}, validate_only=True)
        )
        self.assertIsNone(checked[app].error)
        self.assertIn(app, self.result(self.admin.describe_client_quotas()))
        self.result(self.admin.alter_client_quotas({app: {"producer_byte_rate": None}}))
        self.assertNotIn(app, self.result(self.admin.describe_client_quotas()))

    def test_quotas_command(self) -> None:
        run = run_cli
        run(self, "quotas", "alter", "--client-id", "app", "--add", "producer_byte_rate=10")
        run(self, "quotas", "alter", "--user-default", "--add", "request_percentage=5")
        rows = run(self, "quotas", "describe")
        self.assertEqual(
            rows,
            [
                {"entity": "client-id=app", "quotas": "producer_byte_rate=10.0"},
                {"entity": "user=<default>", "quotas": "request_percentage=5.0"},
            ],
        )
        run(self, "quotas", "alter", "--client-id", "app", "--delete", "producer_byte_rate")
        self.assertEqual(len(run(self, "quotas", "describe", "--user-default")), 1)
        self.assertEqual(self.cluster.state.quotas[(("client-id", "app"),)], {})


class ReassignmentTests(AdminFakeClusterCase):
    def test_reassign_then_elect_the_preferred_leader(self) -> None:
        self.cluster.create_topic("t", 2, 2)  # replicas [0, 1] and [1, 2]
        tp = TP("t", 0)
        moved = self.result(
            self.admin.alter_partition_reassignments(
                {tp: [2, 0], TP("t", 9): [0], TP("t", 1): [1, 7]}
            )
        )
        self.assertIsNone(moved[tp].error)
        self.assertIsInstance(moved[TP("t", 9)].error, UnknownTopicOrPartitionError)
        self.assertIsInstance(moved[TP("t", 1)].error, InvalidReplicaAssignment)
        part = self.cluster.partition("t", 0)
        self.assertEqual((part.replicas, part.leader), ([2, 0], 0))
        self.assertEqual(self.result(self.admin.list_partition_reassignments()), {})
        cancelled = self.result(self.admin.alter_partition_reassignments({tp: None}))
        self.assertIsInstance(cancelled[tp].error, NoReassignmentInProgress)
        elected = self.result(self.admin.elect_leaders(ElectionType.PREFERRED, [tp]))
        self.assertIsNone(elected[tp].error)
        self.assertEqual(part.leader, 2)
        again = self.result(self.admin.elect_leaders(ElectionType.PREFERRED, [tp]))
        self.assertIsInstance(again[tp].error, ElectionNotNeeded)
        # Every partition: only those that needed an election are answered.
        self.cluster.state.set_broker_down(1)
        self.cluster.state.set_broker_up(1)  # t-1 is led by 2 now, not its preferred 1
        self.assertEqual(self.cluster.partition("t", 1).leader, 2)
        everything = self.result(self.admin.elect_leaders())
        self.assertEqual(list(everything), [TP("t", 1)])
        self.assertEqual(self.cluster.partition("t", 1).leader, 1)

    def test_unclean_election(self) -> None:
        self.cluster.create_topic("t", 1, 2)  # replicas [0, 1]
        tp = TP("t", 0)
        led = self.result(self.admin.elect_leaders(ElectionType.UNCLEAN, [tp]))
        self.assertIsInstance(led[tp].error, ElectionNotNeeded)
        self.cluster.state.set_broker_down(0)
        self.cluster.state.set_broker_down(1)
        self.assertEqual(self.cluster.partition("t", 0).leader, -1)
        none_left = self.result(self.admin.elect_leaders(ElectionType.UNCLEAN, [tp]))
        self.assertIsInstance(none_left[tp].error, EligibleLeadersNotAvailable)

    def test_reassign_command(self) -> None:
        self.cluster.create_topic("t", 1, 2)
        rows = run_cli(self, "topics", "reassign", "t:0=1,0", "--elect-preferred")
        self.assertEqual(
            [r["status"] for r in rows], ["moving to [1, 0]", "preferred leader elected"]
        )
        self.assertEqual(self.cluster.partition("t", 0).leader, 1)
        rows = run_cli(self, "topics", "reassign", "t:0=1,0", "--elect-preferred")
        self.assertEqual(rows[1]["status"], "preferred leader leads")
        self.assertEqual(run_cli(self, "topics", "reassign", "--list"), [])
