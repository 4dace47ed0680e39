"""ACLs on Apache Kafka's StandardAuthorizer (``shared_broker("kafka-secure")``).

``alice`` (SASL PLAIN) gets ACLs on a prefix of names per test; everything else
is denied (``allow.everyone.if.no.acl.found=false``).  Each denial must be a
clean authorization error on the call that was denied, at once, and leave the
client (and its connection) working for everything else.  The ACLs afkak's
admin creates are those Kafka's own ``AclCommand`` lists, and the other way round.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from typing import Any

from afkak import ConsumerGroup, Plain, Producer
from afkak.admin import (
    AclBinding,
    AclOperation,
    AclPermission,
    ConfigChange,
    ConfigResource,
    KafkaAdminClient,
    NewTopic,
    OffsetSpec,
    PatternType,
    ResourceType,
    ScramMechanism,
    ScramUpsertion,
)
from afkak.common import (
    OFFSET_EARLIEST,
    BrokerResponseError,
    ClusterAuthorizationFailed,
    FetchRequest,
    GroupAuthorizationFailed,
    Message,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetRequest,
    ProduceRequest,
    TopicAndPartition,
    TopicAuthorizationFailed,
)
from afkak.test.brokers.kafka_secure import USERS
from afkak.test.helpers import wait
from afkak.test.test_security_kafka import SecureKafkaCase, sleep
from afkak.testing import apache_kafka

ALICE = "User:alice"
ANY_ACL = AclBinding(
    ResourceType.ANY, None, None, None, AclOperation.ANY, AclPermission.ANY, PatternType.ANY
)


def allow(
    resource: ResourceType, name: str, operation: AclOperation, pattern: PatternType
) -> AclBinding:
    return AclBinding(resource, name, ALICE, "*", operation, AclPermission.ALLOW, pattern)


class AclCase(SecureKafkaCase):
    def setUp(self) -> None:
        super().setUp()
        run = uuid.uuid4().hex[:8]
        #: alice may do anything to topics and groups named allowed-<run>...
        self.allowed = f"allowed-{run}"
        #: ...may describe and read, not write, readonly-<run>; may not see denied-<run>.
        self.readonly, self.denied = f"readonly-{run}", f"denied-{run}"
        self.root = KafkaAdminClient(self.client("PLAINTEXT"))  # ANONYMOUS: a super user
        created = wait(
            self.root.create_topics(
                [NewTopic(t, 1, 1) for t in (self.allowed, self.readonly, self.denied)]
            ),
            30,
        )
        self.assertEqual([t.error for t in created.values()], [None] * 3)
        bindings = [
            allow(ResourceType.TOPIC, self.allowed, AclOperation.ALL, PatternType.PREFIXED),
            allow(ResourceType.GROUP, self.allowed, AclOperation.ALL, PatternType.PREFIXED),
            allow(ResourceType.TOPIC, self.readonly, AclOperation.READ, PatternType.LITERAL),
            # DESCRIBE alone on a group: FindCoordinator is allowed, JoinGroup is not.
            allow(ResourceType.GROUP, self.readonly, AclOperation.DESCRIBE, PatternType.LITERAL),
        ]
        results = wait(self.root.create_acls(bindings))
        self.assertTrue(all(r.ok for r in results), results)
        self.addCleanup(
            lambda: wait(self.root.delete_acls([b for b in bindings if b.resource_name]))
        )
        self.alice = self.client("SASL_PLAINTEXT", sasl=Plain("alice", USERS["alice"]))
        self.producer = Producer(self.alice)
        self.addCleanup(self.producer.stop)
        self.wait_for_acls()

    def wait_for_acls(self) -> None:
        """KRaft applies new ACLs from its metadata log: wait until alice may write."""
        deadline = time.monotonic() + 10
        while True:
            try:
                wait(self.producer.send_messages(self.allowed, msgs=[b"first"]))
                return
            except TopicAuthorizationFailed:
                if time.monotonic() > deadline:
                    raise
                sleep(0.1)

    def assert_still_working(self) -> None:
        """The same client still produces to and fetches from the allowed topic."""
        wait(self.producer.send_messages(self.allowed, msgs=[b"after"]))
        [fetched] = wait(
            self.alice.send_fetch_request(
                [FetchRequest(self.allowed, 0, 0, 1 << 16)], max_wait_time=100, min_bytes=1
            )
        )
        self.assertEqual(next(iter(fetched.messages)).message.value, b"first")

    def assert_denied(self, d: Any, error: type[BrokerResponseError]) -> None:
        began = time.monotonic()
        with self.assertRaises(error):
            wait(d, 30)
        self.assertLess(time.monotonic() - began, 2.0, "denied at once, not retried")
        self.assert_still_working()


class ProduceFetchAndGroupTests(AclCase):
    def test_produce_is_denied_cleanly(self) -> None:
        connections = dict(self.alice.clients)
        for topic in (self.denied, self.readonly):  # not described / described, not writable
            self.assert_denied(
                self.producer.send_messages(topic, msgs=[b"x"]), TopicAuthorizationFailed
            )
            request = ProduceRequest(topic, 0, [Message(0, 0, None, b"x")])
            self.assert_denied(self.alice.send_produce_request([request]), TopicAuthorizationFailed)
        self.assertEqual(dict(self.alice.clients), connections, "no connection was dropped")

    def test_fetch_and_list_offsets_are_denied_cleanly(self) -> None:
        request = FetchRequest(self.denied, 0, 0, 1 << 16)
        self.assert_denied(
            self.alice.send_fetch_request([request], max_wait_time=100), TopicAuthorizationFailed
        )
        offsets = OffsetRequest(self.denied, 0, -1, 1)
        self.assert_denied(self.alice.send_offset_request([offsets]), TopicAuthorizationFailed)
        # READ allowed on readonly-<run>: its fetch works.
        [fetched] = wait(
            self.alice.send_fetch_request(
                [FetchRequest(self.readonly, 0, 0, 1 << 16)], max_wait_time=100
            )
        )
        self.assertEqual(fetched.error, 0)

    def test_group_join_and_offsets_are_denied_cleanly(self) -> None:
        """A group alice may not describe fails at FindCoordinator; one she may describe
        but not read fails at JoinGroup; both as GroupAuthorizationFailed, at once."""
        for group in (self.denied, self.readonly):
            member = ConsumerGroup(
                self.alice, group, [self.allowed], lambda consumer, messages: None
            )
            self.assert_denied(member.start(), GroupAuthorizationFailed)
            commit = OffsetCommitRequest(self.allowed, 0, 0, -1, None)
            self.assert_denied(
                self.alice.send_offset_commit_request(group, [commit]), GroupAuthorizationFailed
            )
        fetch = OffsetFetchRequest(self.allowed, 0)
        self.assert_denied(
            self.alice.send_offset_fetch_request(self.denied, [fetch]), GroupAuthorizationFailed
        )
        # The allowed group consumes on the same client.
        seen: list[bytes] = []
        group = ConsumerGroup(
            self.alice,
            f"{self.allowed}-group",
            [self.allowed],
            lambda consumer, messages: seen.extend(m.message.value for m in messages),
            auto_offset_reset=OFFSET_EARLIEST,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            fetch_max_wait_time=100,
        )
        group.start()
        try:
            deadline = time.monotonic() + 30
            while b"first" not in seen and time.monotonic() < deadline:
                sleep(0.05)
        finally:
            wait(group.shutdown(), 20)
        self.assertIn(b"first", seen)
        # OffsetFetch needs only DESCRIBE on the group (asked once the group above has
        # made the coordinator load the offsets topic).
        [committed] = wait(self.alice.send_offset_fetch_request(self.readonly, [fetch]))
        self.assertEqual(committed.offset, -1)


class AdminTests(AclCase):
    def test_each_admin_call_is_denied_cleanly(self) -> None:
        """Every admin call on what alice may not touch: the broker's authorization error,
        in the call's result where Kafka answers per item, else raised."""
        admin = KafkaAdminClient(self.alice)
        denied, tp = self.denied, TopicAndPartition(self.denied, 0)
        topic = ConfigResource(ResourceType.TOPIC, denied)
        per_item = {
            "create_topics": (
                admin.create_topics([NewTopic(denied + "-new", 1, 1)]),
                denied + "-new",
            ),
            "delete_topics": (admin.delete_topics([denied]), denied),
            "create_partitions": (admin.create_partitions({denied: 2}), denied),
            "describe_topics": (admin.describe_topics([denied]), denied),
            "describe_configs": (admin.describe_configs([topic]), topic),
            "incremental_alter_configs": (
                admin.incremental_alter_configs({topic: [ConfigChange("retention.ms", "1000")]}),
                topic,
            ),
            "list_offsets": (admin.list_offsets({tp: OffsetSpec.LATEST}), tp),
            "delete_records": (admin.delete_records({tp: 0}), tp),
        }
        for name, (d, key) in per_item.items():
            results = wait(d, 30)
            self.assertIsInstance(results[key].error, TopicAuthorizationFailed, name)
            self.assert_still_working()
        broker = ConfigResource(ResourceType.BROKER, "1")
        [described] = wait(admin.describe_configs([broker])).values()
        self.assertIsInstance(described.error, ClusterAuthorizationFailed)
        acl = allow(ResourceType.TOPIC, denied, AclOperation.READ, PatternType.LITERAL)
        [created] = wait(admin.create_acls([acl]))
        self.assertIsInstance(created.error, ClusterAuthorizationFailed)
        [deleted] = wait(admin.delete_acls([acl]))
        self.assertIsInstance(deleted.error, ClusterAuthorizationFailed)
        upsertion = ScramUpsertion("mallory", ScramMechanism.SCRAM_SHA_256, "pw")
        [altered] = wait(admin.alter_user_scram_credentials([upsertion])).values()
        self.assertIsInstance(altered.error, ClusterAuthorizationFailed)
        self.assert_still_working()
        raised = {
            "describe_acls": (admin.describe_acls(ANY_ACL), ClusterAuthorizationFailed),
            "describe_user_scram_credentials": (
                admin.describe_user_scram_credentials(),
                ClusterAuthorizationFailed,
            ),
            "describe_consumer_groups": (
                admin.describe_consumer_groups([denied]),
                GroupAuthorizationFailed,
            ),
            "delete_consumer_groups": (
                admin.delete_consumer_groups([denied]),
                GroupAuthorizationFailed,
            ),
            "list_consumer_group_offsets": (
                admin.list_consumer_group_offsets(denied),
                GroupAuthorizationFailed,
            ),
            "alter_consumer_group_offsets": (
                admin.alter_consumer_group_offsets(denied, {tp: 0}),
                GroupAuthorizationFailed,
            ),
            "delete_consumer_group_offsets": (
                admin.delete_consumer_group_offsets(denied, [tp]),
                GroupAuthorizationFailed,
            ),
            "group_lag": (admin.group_lag(denied), GroupAuthorizationFailed),
        }
        for name, (d, error) in raised.items():
            with self.subTest(name):
                self.assert_denied(d, error)
        # What alice may not describe she does not see: no error, just absent.
        listed = [t.name for t in wait(admin.list_topics())]
        self.assertIn(self.allowed, listed)
        self.assertNotIn(denied, listed)
        self.assertEqual(wait(admin.list_consumer_groups()), [])
        # As admin, every SCRAM user is listed (an empty array asks for all).
        self.assertIsInstance(wait(self.root.describe_user_scram_credentials()), dict)


def acl_command(bootstrap: str, *args: str) -> str:
    """Run Kafka's own ``kafka-acls`` (``org.apache.kafka.tools.AclCommand``); its stdout."""
    directory = apache_kafka.resolve_classpath()
    log_config = os.path.join(
        os.path.dirname(apache_kafka.__file__), "kafka", "log4j2-tools.properties"
    )
    argv = [
        "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        f"-Dlog4j2.configurationFile={log_config}", "-cp", os.path.join(directory, "*"),
        "org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap, *args,
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if result.returncode:
        raise AssertionError(f"AclCommand {args} failed: {result.stdout}{result.stderr}")
    return result.stdout


class AclCommandInteropTests(AclCase):
    def test_acls_made_by_afkak_are_kafkas_and_the_other_way_round(self) -> None:
        bootstrap = self.broker.bootstrap
        topic = f"{self.denied}-interop"
        mine = AclBinding(
            ResourceType.TOPIC, topic, "User:bob", "127.0.0.1",
            AclOperation.WRITE, AclPermission.DENY, PatternType.LITERAL,
        )  # fmt: skip
        [created] = wait(self.root.create_acls([mine]))
        self.assertTrue(created.ok)
        listed = acl_command(bootstrap, "--list", "--topic", topic)
        self.assertIn(
            "(principal=User:bob, host=127.0.0.1, operation=WRITE, permissionType=DENY)", listed
        )
        # Kafka's tool adds an ACL; afkak's admin sees it.
        acl_command(
            bootstrap, "--add", "--allow-principal", "User:carol", "--operation", "Describe",
            "--operation", "Read", "--group", f"{topic}-", "--resource-pattern-type", "prefixed",
        )  # fmt: skip
        pattern = AclBinding(
            ResourceType.GROUP, f"{topic}-", None, None,
            AclOperation.ANY, AclPermission.ANY, PatternType.PREFIXED,
        )  # fmt: skip
        seen = wait(self.root.describe_acls(pattern))
        self.assertEqual(
            sorted((b.principal, b.host, b.operation, b.permission) for b in seen),
            [
                ("User:carol", "*", AclOperation.READ, AclPermission.ALLOW),
                ("User:carol", "*", AclOperation.DESCRIBE, AclPermission.ALLOW),
            ],
        )
        # Kafka's tool removes afkak's ACL; afkak's admin deletes the tool's.
        acl_command(
            bootstrap, "--remove", "--force", "--deny-principal", "User:bob", "--deny-host",
            "127.0.0.1", "--operation", "Write", "--topic", topic,
        )  # fmt: skip
        topic_acls = AclBinding(
            ResourceType.TOPIC, topic, None, None,
            AclOperation.ANY, AclPermission.ANY, PatternType.LITERAL,
        )  # fmt: skip
        self.assertEqual(wait(self.root.describe_acls(topic_acls)), [])
        [deleted] = wait(self.root.delete_acls([pattern]))
        self.assertEqual(len(deleted.deleted), 2)
        self.assertNotIn("carol", acl_command(bootstrap, "--list", "--group", f"{topic}-x"))
