"""Transactions and read_committed against a real broker: Apache Kafka.

Apache Kafka is the reference, under both transaction protocols: a new 4.x cluster
runs transactions v2 (KIP-890, ``kafka``), one formatted with
``transaction.version=1`` the protocol before it (``kafka-tv1``).  Kafka's Java
tools are peers there too: ConsoleConsumer reads afkak's transactions read_committed,
TransactionalMessageCopier writes (and randomly aborts) transactions that afkak reads,
and ``kafka-transactions find-hanging`` finds nothing afkak left behind.  noida-db's
transactions are correct too but add nothing Kafka does not show; it stays in
``TransactionalWritesOnEveryBroker``.  Tansu and librdkafka's mock cluster return
aborted records to read_committed consumers (quirk ``read_committed_returns_aborted``),
so only their writing side is checked.  confluent-kafka (librdkafka) is the peer: it reads
what afkak's transactional Producer wrote, and writes transactions that
afkak's Consumer and ConsumerGroup read.  The exactly-once pipeline runs
tools/eos_pipeline.py, killed and restarted.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import OFFSET_EARLIEST, InvalidProducerEpoch, ProducerFenced, SourcedMessage
from afkak.consumer import Consumer
from afkak.group import ConsumerGroup
from afkak.producer import Producer
from afkak.test.brokers import client_config, consume, shared_broker
from afkak.test.brokers.java_tools import console_consume, run_tool, transactional_copy
from afkak.test.helpers import wait

_names = itertools.count()
PARTITIONS = 3
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class KafkaTransactionTests(SynchronousTestCase):
    broker_name = "kafka"
    #: The transaction protocol the broker's finalized transaction.version gives.
    transaction_version = 2

    def setUp(self) -> None:
        self.broker = shared_broker(self.broker_name)
        self.broker.quirks.skip_if("read_committed_returns_aborted")
        self.client = self.new_client()

    def new_client(self) -> KafkaClient:
        client = KafkaClient(
            self.broker.bootstrap, clientId="afkak-txn-test", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close()))
        return client

    def topic(self, partitions: int = PARTITIONS) -> str:
        name = f"txn-{next(_names)}-{int(time.time() * 1000)}"
        self.broker.create_topic(name, partitions)
        return name

    def producer(self, tid: str | None = None, **options: Any) -> Producer:
        producer = Producer(self.client, transactional_id=tid, **options)
        self.addCleanup(lambda: wait(producer.stop()))
        return producer

    def end_markers(self, topic: str) -> None:
        """A plain record at the end of every partition: readers stop at it."""
        producer = self.producer()
        for p in range(PARTITIONS):
            wait(producer.send(topic, b"end", partition=p))

    def confluent_read(self, topic: str, count: int, level: str) -> list[bytes]:
        records = consume(
            self.broker.bootstrap, topic, count, config={"isolation.level": level}, timeout=20
        )
        return sorted(r.value for r in records)

    def afkak_read(self, topic: str, level: str) -> list[bytes]:
        """Every record of each partition up to its ``end`` marker, read by afkak Consumers."""
        got: list[SourcedMessage] = []
        ends: set[int] = set()

        def collect(consumer: Consumer, messages: list[SourcedMessage]) -> None:
            got.extend(messages)
            if any(m.message.value == b"end" for m in messages):
                ends.add(consumer.partition)

        consumers = [
            Consumer(self.client, topic, p, collect, isolation_level=level)
            for p in range(PARTITIONS)
        ]
        for c in consumers:
            c.start(OFFSET_EARLIEST)
        deadline = time.monotonic() + 20
        while len(ends) < PARTITIONS and time.monotonic() < deadline:
            wait(_sleep(0.05))
        for c in consumers:
            c.stop()
        self.assertEqual(len(ends), PARTITIONS, "every partition's end marker was read")
        return sorted(m.message.value for m in got if m.message.value != b"end")

    def assert_nothing_hanging(self, topic: str) -> None:
        """``kafka-transactions find-hanging`` finds no transaction open in *topic*, even
        one a second old (its ``--max-transaction-timeout`` is in minutes: 0)."""
        out = run_tool(
            "org.apache.kafka.tools.TransactionsCommand",
            "--bootstrap-server", self.broker.bootstrap,
            "find-hanging", "--topic", topic, "--max-transaction-timeout", "0",
        )  # fmt: skip
        self.assertEqual([line for line in out.splitlines()[1:] if line.strip()], [], out)

    def confluent_transactions(self, topic: str, tid: str) -> None:
        """confluent-kafka commits c0..c5, aborts a0..a5, commits d0..d5 over the partitions."""
        import confluent_kafka

        producer = confluent_kafka.Producer(
            client_config(self.broker.bootstrap, **{"transactional.id": tid})
        )
        producer.init_transactions(10)
        for prefix, commit in ((b"c", True), (b"a", False), (b"d", True)):
            producer.begin_transaction()
            for i in range(6):
                producer.produce(topic, prefix + b"%d" % i, partition=i % PARTITIONS)
            producer.flush(10)
            if commit:
                producer.commit_transaction(10)
            else:
                producer.abort_transaction(10)

    # afkak writes, confluent-kafka reads

    def test_afkak_commits_and_aborts_across_partitions(self) -> None:
        topic = self.topic()
        producer = self.producer(f"afkak-{topic}")
        wait(producer.init_transactions())
        for prefix, commit in ((b"c", True), (b"a", False), (b"d", True)):
            wait(producer.begin_transaction())
            for i in range(6):
                producer.send(topic, prefix + b"%d" % i, partition=i % PARTITIONS)
            if commit:
                wait(producer.commit_transaction())
            else:
                wait(producer.flush())
                wait(producer.abort_transaction())
        self.end_markers(topic)
        committed = sorted(b"%s%d" % (p, i) for p in (b"c", b"d") for i in range(6))
        everything = sorted(committed + [b"a%d" % i for i in range(6)])
        self.assertEqual(
            self.confluent_read(topic, 15, "read_committed"), sorted(committed + [b"end"] * 3)
        )
        self.assertEqual(
            self.confluent_read(topic, 21, "read_uncommitted"), sorted(everything + [b"end"] * 3)
        )
        self.assertEqual(self.afkak_read(topic, "read_committed"), committed)
        self.assertEqual(self.afkak_read(topic, "read_uncommitted"), everything)
        java = console_consume(self.broker.bootstrap, topic, 15, isolation_level="read_committed")
        self.assertEqual(
            sorted(r.value for r in java), sorted([v.decode() for v in committed] + ["end"] * 3)
        )
        self.assert_nothing_hanging(topic)

    def test_concurrent_transactions_answers_are_retried(self) -> None:
        """Issue 33's workloads: 6 transactions over 150 partitions, then 100 sends in one
        transaction over 3 partitions, each begun as the last one's markers are written
        (v2: its first Produce to a partition is answered CONCURRENT_TRANSACTIONS, which
        failed sends before): every send is written and read back read_committed."""
        wide, narrow = self.topic(150), self.topic()
        producer = self.producer(f"afkak-{wide}")
        wait(producer.init_transactions())
        sends = []
        for n in range(6):
            wait(producer.begin_transaction())
            sends += [producer.send(wide, b"w%d-%d" % (n, p), partition=p) for p in range(150)]
            wait(producer.commit_transaction(), 120)
        wait(producer.begin_transaction())
        sends += [producer.send(narrow, b"n%d" % i, partition=i % PARTITIONS) for i in range(100)]
        wait(producer.commit_transaction(), 120)
        for d in sends:
            wait(d)
        retries = sum(v for m, v in producer.metrics().items() if m.name == "record-retry-total")
        print(f"v{self.transaction_version}: {retries:g} records retried")
        self.assertEqual(
            self.confluent_read(wide, 900, "read_committed"),
            sorted(b"w%d-%d" % (n, p) for n in range(6) for p in range(150)),
        )
        self.assertEqual(
            self.confluent_read(narrow, 100, "read_committed"),
            sorted(b"n%d" % i for i in range(100)),
        )

    def test_protocol_version_and_epochs(self) -> None:
        """v2: every EndTxn gives the next epoch; v1: the epoch stays (and no Produce v12)."""
        topic = self.topic()
        producer = self.producer(f"epochs-{topic}")
        wait(producer.init_transactions())
        txn = producer._transaction
        assert txn is not None
        self.assertEqual(txn.version, self.transaction_version)
        pid, epoch = txn.producer_id, txn.epoch
        for n in range(3):
            wait(producer.begin_transaction())
            wait(producer.send(topic, b"e%d" % n, partition=n))
            wait(producer.commit_transaction() if n != 1 else producer.abort_transaction())
        bumps = 3 if self.transaction_version >= 2 else 0
        self.assertEqual((txn.producer_id, txn.epoch), (pid, epoch + bumps))
        self.end_markers(topic)
        self.assertEqual(self.afkak_read(topic, "read_committed"), [b"e0", b"e2"])
        self.assert_nothing_hanging(topic)

    def test_java_transactional_copier_read_by_afkak(self) -> None:
        """Java's transactional producer copies 60 records in transactions of 10, aborting
        and redoing about a third: afkak's read_committed consumer reads each once."""
        source, topic = self.topic(1), self.topic()
        values = [b"j%02d" % i for i in range(60)]
        plain = self.producer()
        for v in values:
            plain.send(source, v, partition=0)
        wait(plain.flush())
        events = transactional_copy(
            self.broker.bootstrap,
            source,
            0,
            topic,
            transactional_id=f"copier-{topic}",
            group=f"copier-{topic}",
        )
        self.assertEqual(max(e["totalProcessed"] for e in events), 60, events[-3:])
        self.end_markers(topic)
        self.assertEqual(self.afkak_read(topic, "read_committed"), values)
        self.assertGreaterEqual(len(self.afkak_read(topic, "read_uncommitted")), 60)
        self.assert_nothing_hanging(topic)

    # confluent-kafka writes, afkak reads

    def test_confluent_transactions_read_by_afkak_consumer(self) -> None:
        topic = self.topic()
        self.confluent_transactions(topic, f"ck-{topic}")
        self.end_markers(topic)
        committed = sorted(b"%s%d" % (p, i) for p in (b"c", b"d") for i in range(6))
        self.assertEqual(self.afkak_read(topic, "read_committed"), committed)
        self.assertEqual(len(self.afkak_read(topic, "read_uncommitted")), 18)

    def test_open_transaction_holds_read_committed_at_the_last_stable_offset(self) -> None:
        topic = self.topic(1)
        self.producer().send(topic, b"before", partition=0)
        producer = self.producer(f"open-{topic}")
        wait(producer.init_transactions())
        wait(producer.begin_transaction())
        wait(producer.send(topic, b"open", partition=0))
        got: list[bytes] = []
        consumer = Consumer(
            self.client,
            topic,
            0,
            lambda c, msgs: got.extend(m.message.value for m in msgs),
            isolation_level="read_committed",
        )
        consumer.start(OFFSET_EARLIEST)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            wait(_sleep(0.05))
        self.assertEqual(got, [b"before"])
        self.assertEqual((consumer.last_stable_offset, consumer.high_watermark), (1, 2))
        wait(producer.commit_transaction())
        deadline = time.monotonic() + 10
        while got != [b"before", b"open"] and time.monotonic() < deadline:
            wait(_sleep(0.05))
        consumer.stop()
        self.assertEqual(got, [b"before", b"open"])
        self.assertEqual(consumer.last_stable_offset, 3)

    def test_confluent_transactions_read_by_afkak_group(self) -> None:
        topic = self.topic()
        self.confluent_transactions(topic, f"ckg-{topic}")
        self.end_markers(topic)
        got: list[bytes] = []
        group = ConsumerGroup(
            self.client,
            f"group-{topic}",
            [topic],
            lambda c, msgs: got.extend(m.message.value for m in msgs),
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
            auto_offset_reset=OFFSET_EARLIEST,
            isolation_level="read_committed",
        )
        group.start()
        deadline = time.monotonic() + 30
        while got.count(b"end") < PARTITIONS and time.monotonic() < deadline:
            wait(_sleep(0.05))
        wait(group.stop())
        committed = sorted(b"%s%d" % (p, i) for p in (b"c", b"d") for i in range(6))
        self.assertEqual(sorted(v for v in got if v != b"end"), committed)

    # fencing

    def test_second_producer_fences_the_first(self) -> None:
        topic = self.topic()
        tid = f"fence-{topic}"
        first = self.producer(tid)
        wait(first.init_transactions())
        wait(first.begin_transaction())
        wait(first.send(topic, b"zombie", partition=0))
        second = Producer(self.new_client(), transactional_id=tid)
        self.addCleanup(lambda: wait(second.stop()))
        wait(second.init_transactions())
        # Kafka answers PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH to older versions
        # (noida's EndTxn stops at v3): both are fatal, the next call fails alike.
        with self.assertRaises((ProducerFenced, InvalidProducerEpoch)) as fenced:
            wait(first.commit_transaction())
        with self.assertRaises(type(fenced.exception)):
            wait(first.begin_transaction())
        with self.assertRaises(type(fenced.exception)):
            wait(first.send(topic, b"more"))
        wait(second.begin_transaction())
        wait(second.send(topic, b"live", partition=1))
        wait(second.commit_transaction())
        self.end_markers(topic)
        self.assertEqual(self.afkak_read(topic, "read_committed"), [b"live"])
        self.assertEqual(self.confluent_read(topic, 4, "read_committed"), [b"end"] * 3 + [b"live"])
        self.assert_nothing_hanging(topic)

    def test_killed_producer_is_aborted_by_the_next_init(self) -> None:
        topic = self.topic()
        tid = f"killed-{topic}"
        script = (
            "import sys\n"
            "from twisted.internet.endpoints import TCP4ClientEndpoint\n"
            "from afkak.client import KafkaClient\n"
            "from afkak.producer import Producer\n"
            "from afkak.test.helpers import wait\n"
            f"client = KafkaClient({self.broker.bootstrap!r},"
            " endpoint_factory=TCP4ClientEndpoint)\n"
            f"p = Producer(client, transactional_id={tid!r})\n"
            "wait(p.init_transactions()); wait(p.begin_transaction())\n"
            f"for i in range(30): p.send({topic!r}, b'doomed-%d' % i, partition=i % 3)\n"
            "wait(p.flush())\n"
            "print('SENT', flush=True)\n"
            "import time; time.sleep(60)\n"
        )
        env = {**os.environ, "PYTHONPATH": ROOT}
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            self.assertEqual(proc.stdout.readline().strip(), "SENT")  # type: ignore[union-attr]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        successor = self.producer(tid)
        wait(successor.init_transactions())  # aborts the dead producer's transaction
        self.end_markers(topic)
        self.assertEqual(self.afkak_read(topic, "read_committed"), [])
        self.assertEqual(self.confluent_read(topic, 3, "read_committed"), [b"end"] * 3)
        self.assertEqual(len(self.afkak_read(topic, "read_uncommitted")), 30)
        self.assert_nothing_hanging(topic)

    # exactly once

    def test_exactly_once_pipeline_killed_and_restarted(self) -> None:
        """tools/eos_pipeline.py over 5,000 records, killed five times (100,000: the tool)."""
        result = subprocess.run(
            [
                sys.executable,
                os.path.join(ROOT, "tools", "eos_pipeline.py"),
                "check",
                "--bootstrap",
                self.broker.bootstrap,
                "--records",
                "5000",
                "--block",
                "100",
                "--kills",
                "5",
            ],
            env={**os.environ, "PYTHONPATH": ROOT},
            capture_output=True,
            text=True,
            timeout=300,
        )
        print(result.stdout)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr[-3000:])
        self.assertIn("0 duplicated, 0 missing", result.stdout)
        kills = Counter(line.split()[0] for line in result.stdout.splitlines())["killed"]
        self.assertGreaterEqual(kills, 3)


class KafkaTransactionV1Tests(KafkaTransactionTests):
    """The same on a Kafka 4 node formatted with ``transaction.version=1``."""

    broker_name = "kafka-tv1"
    transaction_version = 1


def _sleep(seconds: float) -> Any:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    return deferLater(reactor, seconds, lambda: None)


class TransactionalWritesOnEveryBroker(SynchronousTestCase):
    """afkak's transactional Producer against each broker: what each one can show.

    Tansu and the mock run transactions but return aborted records to
    read_committed readers, so only the writing side is compared there:
    every record reaches read_uncommitted readers, and fencing holds unless
    the broker ignores it (``produce_ignores_producer_fencing``).
    """

    def check(self, name: str) -> None:
        broker = shared_broker(name)
        client = KafkaClient(broker.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(client.close()))
        topic = f"txn-{name}-{next(_names)}-{int(time.time() * 1000)}"
        broker.create_topic(topic, 2)
        producer = Producer(client, transactional_id=f"every-{topic}")
        self.addCleanup(lambda: wait(producer.stop()))
        wait(producer.init_transactions(), 30)
        for prefix, commit in ((b"c", True), (b"a", False)):
            wait(producer.begin_transaction())
            for i in range(4):
                producer.send(topic, prefix + b"%d" % i, partition=i % 2)
            wait(producer.flush(), 30)
            wait(producer.commit_transaction() if commit else producer.abort_transaction(), 30)
        records = consume(
            broker.bootstrap, topic, 8, config={"isolation.level": "read_uncommitted"}
        )
        self.assertEqual(
            sorted(r.value for r in records),
            sorted(b"%s%d" % (p, i) for p in (b"c", b"a") for i in range(4)),
        )
        successor = Producer(client, transactional_id=f"every-{topic}")
        self.addCleanup(lambda: wait(successor.stop()))
        wait(successor.init_transactions(), 30)
        if broker.quirks.produce_ignores_producer_fencing:
            return
        wait(producer.begin_transaction())
        with self.assertRaises((ProducerFenced, InvalidProducerEpoch)):
            wait(producer.send(topic, b"zombie", partition=0), 30)

    def test_kafka(self) -> None:
        self.check("kafka")

    def test_tansu(self) -> None:
        self.check("tansu")

    def test_noida(self) -> None:
        self.check("noida")

    def test_rdkafka_mock(self) -> None:
        self.check("rdkafka_mock")
