"""Share groups (KIP-932) on Apache Kafka 4.4: afkak ShareConsumers, beside Java's
``VerifiableShareConsumer``, on one share group.

One Kafka node for the module, with ``group.share.min.record.lock.duration.ms``
lowered to 1 s so a group can set a 2 s acquisition lock
(``share.record.lock.duration.ms``, a group config, as ``share.auto.offset.reset``).
Each test checks what each record went through: who got it, with which delivery
count, and how it was settled.  No assertion bounds a duration from above.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak import AcknowledgeType, ShareConsumer
from afkak.admin import KafkaAdminClient
from afkak.admin._types import ConfigChange, ConfigResource, ConfigResourceType
from afkak.client import KafkaClient
from afkak.common import NonEmptyGroup, TopicAndPartition
from afkak.group import ShareRecord
from afkak.test.brokers import produce
from afkak.test.brokers.java_tools import VerifiableShareConsumer, run_tool
from afkak.test.brokers.kafka import KafkaBroker
from afkak.test.helpers import pump, run_for, wait

LOCK_MS = 2000
_names = itertools.count()
Policy = Callable[[ShareRecord], AcknowledgeType]


def accept_all(record: ShareRecord) -> AcknowledgeType:
    return AcknowledgeType.ACCEPT


class Puller:
    """Drives one ShareConsumer on the global reactor: getmany after getmany, each record
    settled by *policy* (explicit mode), every delivery noted as (who, record)."""

    def __init__(self, name: str, consumer: ShareConsumer, policy: Policy, log: list[Any]) -> None:
        self.name = name
        self.consumer = consumer
        self.policy = policy
        self.log = log
        self.running = True
        #: Keep the next batch acquired, unacknowledged, and ask for no more (hung).
        self.hold = False
        self.failure: Any = None
        self._next()

    def _next(self) -> None:
        if self.running:
            d = self.consumer.getmany(timeout_ms=500)
            d.addCallbacks(self._got, self._failed)

    def _got(self, records: list[ShareRecord]) -> None:
        if self.hold and records:
            self.running = False
            self.log.extend((self.name, r, None, time.monotonic()) for r in records)
            return
        explicit = self.consumer.acknowledgement_mode == "explicit"
        for r in records:
            kind = self.policy(r) if explicit else AcknowledgeType.ACCEPT
            self.log.append((self.name, r, kind, time.monotonic()))
            if explicit:
                self.consumer.acknowledge(r, kind)
        self._next()

    def _failed(self, failure: Any) -> None:
        if self.running:
            self.failure = failure

    def halt(self) -> None:
        """Stop asking for records (the last batch stays acquired, unacknowledged)."""
        self.running = False


class KafkaShareGroupTests(SynchronousTestCase):
    """Several share consumers on one share group of Apache Kafka 4.4."""

    broker: ClassVar[KafkaBroker]

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = KafkaBroker(config={"group.share.min.record.lock.duration.ms": "1000"})
        cls.broker.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.broker.stop()

    def setUp(self) -> None:
        stamp = f"{next(_names)}-{int(time.time() * 1000)}"
        self.topic = f"share-{stamp}"
        self.group_id = f"share-group-{stamp}"
        self.log: list[Any] = []
        self.pullers: list[Puller] = []
        self.addCleanup(self._close_all)
        self.admin_client = self.client("admin")
        wait(
            KafkaAdminClient(self.admin_client).incremental_alter_configs(
                {
                    ConfigResource(ConfigResourceType.GROUP, self.group_id): [
                        ConfigChange("share.auto.offset.reset", "earliest"),
                        ConfigChange("share.record.lock.duration.ms", str(LOCK_MS)),
                    ]
                }
            )
        )

    def client(self, name: str) -> KafkaClient:
        client = KafkaClient(
            self.broker.bootstrap,
            clientId=name,
            timeout=15000,
            endpoint_factory=TCP4ClientEndpoint,
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    def consumer(self, name: str, policy: Policy = accept_all, mode: str = "explicit") -> Puller:
        consumer = ShareConsumer(
            self.client(name),
            self.group_id,
            [self.topic],
            acknowledgement_mode=mode,
            max_wait_ms=500,
        )
        puller = Puller(name, consumer, policy, self.log)
        self.pullers.append(puller)
        return puller

    def _close_all(self) -> None:
        for p in self.pullers:
            p.halt()
        for p in self.pullers:
            wait(p.consumer.close(), 30)

    def produce(self, count: int, partitions: int) -> set[tuple[int, int]]:
        sent: set[tuple[int, int]] = set()
        for p in range(partitions):
            values = [b"%d-%d" % (p, i) for i in range(count)]
            sent.update(produce(self.broker.bootstrap, self.topic, values, partition=p))
        return sent

    def until_assigned(self, *pullers: Puller) -> None:
        pump(lambda: all(p.consumer.assignment() for p in pullers), 60, "share assignment")

    def settled(self, kind: AcknowledgeType) -> list[tuple[int, int]]:
        return [(r.partition, r.offset) for _, r, k, _ in self.log if k is kind]

    def failures(self) -> list[Any]:
        return [p.failure for p in self.pullers if p.failure is not None]

    def test_afkak_and_java_share_consumers_get_disjoint_records_kafka(self) -> None:
        self.broker.create_topic(self.topic, 3)
        a, b = self.consumer("a"), self.consumer("b", mode="implicit")
        java = VerifiableShareConsumer(self.broker.bootstrap, self.topic, self.group_id)
        self.addCleanup(java.stop)
        self.until_assigned(a, b)
        pump(lambda: bool(java.named("offset_reset_strategy_set")), 60, "java started")
        sent = set()
        for _ in range(3):
            sent |= self.produce(100, 3)
            run_for(1.0)

        def everything() -> bool:
            return len(self.settled(AcknowledgeType.ACCEPT)) + len(java.received) >= len(sent)

        pump(everything, 120, "every record consumed")
        run_for(LOCK_MS / 1000.0 * 2)  # nothing comes back after the locks' time
        java.stop()
        self.assertEqual(self.failures(), [])
        ours = self.settled(AcknowledgeType.ACCEPT)
        deliveries = Counter(ours + java.received)
        self.assertEqual(set(deliveries), sent)
        self.assertEqual([k for k, n in deliveries.items() if n > 1], [], "delivered twice")
        self.assertEqual({r.delivery_count for _, r, _, _ in self.log}, {1})
        by_consumer = Counter(name for name, _, _, _ in self.log)
        by_consumer["java"] = len(java.received)
        print(f"\nshare group of afkak a, b and Java: records per consumer {dict(by_consumer)}")
        self.assertGreaterEqual(sum(1 for n in by_consumer.values() if n), 2)

    def test_released_records_return_with_a_higher_count_rejected_never_kafka(self) -> None:
        self.broker.create_topic(self.topic, 2)

        def policy(r: ShareRecord) -> AcknowledgeType:
            if r.offset % 10 == 7:
                return AcknowledgeType.REJECT
            if r.offset % 10 == 3 and r.delivery_count < 3:
                return AcknowledgeType.RELEASE
            return AcknowledgeType.ACCEPT

        a, b = self.consumer("a", policy), self.consumer("b", policy)
        self.until_assigned(a, b)
        sent = self.produce(50, 2)
        released = {k for k in sent if k[1] % 10 == 3}
        rejected = {k for k in sent if k[1] % 10 == 7}
        pump(
            lambda: set(self.settled(AcknowledgeType.ACCEPT)) >= sent - rejected,
            120,
            "every record but the rejected accepted",
        )
        run_for(LOCK_MS / 1000.0 * 2)
        self.assertEqual(self.failures(), [])
        accepted = self.settled(AcknowledgeType.ACCEPT)
        self.assertEqual(sorted(accepted), sorted(sent - rejected), "each accepted once")
        self.assertEqual(sorted(self.settled(AcknowledgeType.REJECT)), sorted(rejected))
        counts: dict[tuple[int, int], list[int]] = {}
        for _, r, _, _ in self.log:
            counts.setdefault((r.partition, r.offset), []).append(r.delivery_count)
        for key in released:
            self.assertEqual(counts[key], [1, 2, 3], key)
        for key in sent - released:
            self.assertEqual(counts[key], [1], key)

    def test_a_hung_consumers_records_return_after_the_lock_timeout_kafka(self) -> None:
        self.broker.create_topic(self.topic, 1)
        a = self.consumer("a")
        b = self.consumer("b")
        self.until_assigned(a, b)
        b.halt()
        pump(lambda: b.consumer._polling is None, 10, "b idle")
        a.hold = True  # a keeps its batch acquired, unacknowledged, and stays in the group
        sent = self.produce(20, 1)
        pump(lambda: bool(self.log), 60, "a got records")
        held = {(r.partition, r.offset): t for _, r, _, t in self.log}
        acquired_at = min(held.values())
        b.running = True
        b._next()
        pump(lambda: set(self.settled(AcknowledgeType.ACCEPT)) >= sent, 60, "all accepted")
        again = [(r, t) for name, r, _, t in self.log if name == "b" and r.delivery_count > 1]
        self.assertEqual({(r.partition, r.offset) for r, _ in again}, set(held))
        self.assertEqual({r.delivery_count for r, _ in again}, {2})
        waited = min(t for _, t in again) - acquired_at
        print(f"\nlock {LOCK_MS} ms: a hung consumer's records came back after {waited:.2f} s")
        self.assertGreaterEqual(waited, LOCK_MS / 1000.0 * 0.9)

    def test_a_killed_consumers_records_are_redelivered_kafka(self) -> None:
        self.broker.create_topic(self.topic, 1)
        a = self.consumer("a")
        b = self.consumer("b")
        self.until_assigned(a, b)
        b.halt()
        pump(lambda: b.consumer._polling is None, 10, "b idle")
        a.hold = True
        sent = self.produce(20, 1)
        pump(lambda: bool(self.log), 60, "a got records")
        held = {(r.partition, r.offset) for _, r, _, _ in self.log}
        # Kill a: no acknowledgement, no leaving, its connections dropped.
        self.pullers.remove(a)
        a.consumer.member.generation_id = -1  # it says nothing to the coordinator
        a.consumer.member.stop()
        wait(a.consumer.client.close())
        b.running = True
        b._next()
        pump(lambda: set(self.settled(AcknowledgeType.ACCEPT)) >= sent, 90, "all accepted")
        self.assertEqual(self.failures(), [])
        redelivered = {
            (r.partition, r.offset)
            for name, r, _, _ in self.log
            if name == "b" and r.delivery_count > 1
        }
        self.assertEqual(redelivered, held)
        accepted = Counter(self.settled(AcknowledgeType.ACCEPT))
        self.assertEqual(set(accepted), sent)
        self.assertEqual(max(accepted.values()), 1)

    def share_group_tool(self, *args: str) -> list[dict[str, str]]:
        """``kafka-share-groups --describe --group G ARGS``: its table's rows by column."""
        out = run_tool(
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
            "--bootstrap-server", self.broker.bootstrap, "--describe", "--group", self.group_id,
            *args,
        )  # fmt: skip
        lines = [line.split() for line in out.splitlines() if line.strip()]
        return [dict(zip(lines[0], cells, strict=True)) for cells in lines[1:]]

    def test_admin_calls_agree_with_kafka_share_groups_kafka(self) -> None:
        self.broker.create_topic(self.topic, 2)
        a = self.consumer("a")
        self.until_assigned(a)
        sent = self.produce(10, 1)
        pump(lambda: len(self.settled(AcknowledgeType.ACCEPT)) >= len(sent), 60, "consumed")
        run_for(1.0)  # the last acknowledgements ride on the next ShareFetch
        admin = KafkaAdminClient(self.admin_client)
        listed = wait(admin.list_share_groups())
        self.assertIn((self.group_id, "share"), [(g.group_id, g.protocol_type) for g in listed])
        described = wait(admin.describe_share_groups([self.group_id]))[self.group_id]
        (member,) = described.members
        (java_member,) = self.share_group_tool("--members")
        self.assertEqual(described.state, "Stable")
        self.assertEqual(member.member_id, java_member["CONSUMER-ID"])
        self.assertEqual(member.member_id, a.consumer.member_id)
        self.assertEqual(
            ",".join(str(tp.partition) for tp in sorted(member.assignment)),
            java_member["ASSIGNMENT"].partition(":")[2],
        )

        def agree() -> dict[int, tuple[int, int]]:
            ours = wait(admin.describe_share_group_offsets(self.group_id))
            java = {
                int(row["PARTITION"]): tuple(
                    -1 if row[c] == "-" else int(row[c]) for c in ("START-OFFSET", "LAG")
                )
                for row in self.share_group_tool("--offsets")
            }
            mine = {tp.partition: (o.start_offset, o.lag) for tp, o in ours.items()}
            self.assertEqual(mine, java)
            return mine

        self.assertEqual(agree()[0][1], 0, "nothing left to consume")
        # Start offsets move only in an empty group.
        p0 = TopicAndPartition(self.topic, 0)
        refused = wait(
            admin.alter_share_group_offsets(self.group_id, {p0: 3}).addErrback(lambda f: f.value)
        )
        self.assertIsInstance(refused, NonEmptyGroup)
        self.pullers.remove(a)
        a.halt()
        wait(a.consumer.close(), 30)
        results = wait(admin.alter_share_group_offsets(self.group_id, {p0: 3}))
        self.assertTrue(results[p0].ok, results)
        self.assertEqual(agree()[0], (3, 7))
        deleted = wait(admin.delete_share_group_offsets(self.group_id, [self.topic]))
        self.assertTrue(deleted[self.topic].ok, deleted)
        self.assertEqual(wait(admin.describe_share_group_offsets(self.group_id)), {})

    def test_the_processor_form_accepts_each_batch_kafka(self) -> None:
        self.broker.create_topic(self.topic, 2)
        seen: list[tuple[int, int, int]] = []

        def process(consumer: ShareConsumer, records: list[ShareRecord]) -> None:
            seen.extend((r.partition, r.offset, r.delivery_count) for r in records)

        consumer = ShareConsumer(self.client("p"), self.group_id, [self.topic], process)
        done = consumer.start()
        sent = self.produce(25, 2)
        pump(lambda: len(seen) >= len(sent), 60, "processed")
        wait(consumer.close(), 30)
        wait(done)
        self.assertEqual(sorted((p, o) for p, o, _ in seen), sorted(sent))
        self.assertEqual({n for _, _, n in seen}, {1})
        offsets = wait(
            KafkaAdminClient(self.admin_client).describe_share_group_offsets(self.group_id)
        )
        self.assertEqual({tp.partition: o.lag for tp, o in offsets.items()}, {0: 0, 1: 0})
