"""The ``afkak`` Spark data source against Apache Kafka, in one local[2] SparkSession.

The session is a process-wide singleton (starting one takes several seconds
and ~1 GB), so these tests must not run in parallel workers.  Records are
produced by afkak (every codec) and by confluent-kafka, read back through
Spark in batch and streaming queries, and written through Spark.

Tansu (the broker here before Apache Kafka) answers ListOffsets(LATEST) with the last
batch's base offset + 1; on such a broker the tests end each partition with a one-record batch
(``seal``) before reading up to "latest", so that this is the true log end.  Skipped without PySpark
(failing instead when CI is "true").
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import Message, ProduceRequest
from afkak.message_set import MessageSet
from afkak.partitioner import murmur2
from afkak.test.brokers import Broker, client_config, consume, produce, shared_broker
from afkak.test.brokers.spark_kafka import avro_jar, spark_jars_option
from afkak.test.helpers import wait
from afkak.testing.apache_kafka import ApacheKafkaUnavailable

try:
    from pyspark.sql import SparkSession

    from afkak.spark import AfkakDataSource
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None

_names = itertools.count()
_session: Any = None
SEAL = b"\x00seal"


def _connector_jars() -> str:
    """``spark.jars``: Spark's own Kafka connector and Avro functions, each when it
    resolves.

    On the classpath from the JVM's start whichever module starts the session first,
    so ``test_spark_kafka_parity`` finds ``format("kafka")`` and
    ``test_spark_schema_registry`` ``from_avro`` in any test order."""
    jars = []
    for resolve in (spark_jars_option, avro_jar):
        try:
            jars.append(resolve())
        except ApacheKafkaUnavailable:
            pass
    return ",".join(jars)


def spark_session() -> Any:
    """The process's local[2] SparkSession, with the data source registered."""
    global _session
    if _session is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        _session = (
            SparkSession.builder.master("local[2]")
            .config("spark.jars", _connector_jars())
            .appName("afkak-spark-tests")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
            .getOrCreate()
        )
        _session.sparkContext.setLogLevel("ERROR")
        _session.dataSource.register(AfkakDataSource)
        atexit.register(_session.stop)
    return _session


class KafkaSparkSourceTests(SynchronousTestCase):
    broker: ClassVar[Broker]

    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        self.broker = shared_broker("kafka")
        self.spark = spark_session()
        self.client = KafkaClient(
            self.broker.bootstrap, clientId="afkak-spark-test", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.client.close()))
        self.tmp = tempfile.mkdtemp(prefix="afkak-spark-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def topic(self, partitions: int) -> str:
        name = f"spark-{next(_names)}-{os.getpid()}"
        self.broker.create_topic(name, partitions)
        return name

    def send(self, topic: str, partition: int, messages: list[Message], codec: int = 0) -> int:
        """Write *messages* as one batch with afkak; the batch's base offset."""
        payload = ProduceRequest(topic, partition, MessageSet(messages, codec))
        [response] = wait(self.client.send_produce_request([payload], acks=-1))
        return int(response.offset)

    def seal(self, topic: str, partitions: int) -> int:
        """End each partition with a one-record batch: see the module docstring.

        The records added to each partition (0 on a broker without the quirk)."""
        if not self.broker.quirks.differs("list_offsets_latest_is_last_batch_base_plus_one"):
            return 0
        for p in range(partitions):
            self.send(topic, p, [Message(0, 0, None, SEAL)])
        return 1

    def read(self, **options: str) -> Any:
        reader = self.spark.read.format("afkak").option(
            "kafka.bootstrap.servers", self.broker.bootstrap
        )
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    def rows(self, df: Any) -> list[Any]:
        return sorted(
            (r for r in df.collect() if r.value != SEAL), key=lambda r: (r.partition, r.offset)
        )

    def test_batch_read_every_codec_and_peer(self) -> None:
        """Records written by afkak in each codec and by confluent-kafka read back exactly."""
        topic = self.topic(2)
        expected = []
        for codec in (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            messages = [
                Message(
                    0, 0, b"k%d" % i, b"codec%d-%d" % (codec, i), headers=(("c", b"%d" % codec),)
                )
                for i in range(3)
            ]
            base = self.send(topic, 0, messages, codec)
            expected += [
                (0, base + i, m.key, m.value, (("c", m.headers[0][1]),))
                for i, m in enumerate(messages)
            ]
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            values = [f"peer-{codec}-{i}".encode() for i in range(4)]
            delivered = produce(
                self.broker.bootstrap,
                topic,
                values,
                partition=1,
                key=b"pk",
                headers=[("h", b"v"), ("n", b"")],
                config={"compression.type": codec},
            )
            expected += [
                (p, o, b"pk", v, (("h", b"v"), ("n", b"")))
                for (p, o), v in zip(delivered, values, strict=True)
            ]
        self.seal(topic, 2)
        df = self.read(subscribe=topic, includeHeaders="true")
        self.assertEqual([f.name for f in df.schema.fields][-1], "headers")
        got = [
            (r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
            for r in self.rows(df)
        ]
        self.assertEqual(got, sorted(expected))
        self.assertEqual({r.timestampType for r in self.rows(df)}, {0})
        self.assertEqual({r.topic for r in self.rows(df)}, {topic})
        now = time.time()
        self.assertTrue(all(abs(r.timestamp.timestamp() - now) < 300 for r in self.rows(df)))

    def test_exact_offset_ranges_and_min_partitions(self) -> None:
        """JSON offsets read exactly their ranges; minPartitions splits them into more tasks."""
        topic = self.topic(2)
        for p in range(2):
            for start in range(0, 40, 10):  # four batches of ten per partition
                self.send(
                    topic, p, [Message(0, 0, None, b"%d-%d" % (p, start + i)) for i in range(10)]
                )
        df = self.read(
            subscribe=topic,
            startingOffsets=json.dumps({topic: {"0": 5, "1": -2}}),
            endingOffsets=json.dumps({topic: {"0": 33, "1": 17}}),
        )
        got = [(r.partition, r.offset, r.value) for r in self.rows(df)]
        want = [(0, o, b"0-%d" % o) for o in range(5, 33)] + [
            (1, o, b"1-%d" % o) for o in range(17)
        ]
        self.assertEqual(got, want)
        self.assertEqual(df.rdd.getNumPartitions(), 2)
        split = self.read(
            assign=json.dumps({topic: [0, 1]}),
            startingOffsets=json.dumps({topic: {"0": 5, "1": -2}}),
            endingOffsets=json.dumps({topic: {"0": 33, "1": 17}}),
            minPartitions="7",
        )
        self.assertGreaterEqual(split.rdd.getNumPartitions(), 7)
        self.assertEqual([(r.partition, r.offset, r.value) for r in self.rows(split)], want)

    def test_read_committed(self) -> None:
        """kafka.isolation.level: confluent-kafka's aborted transaction is left out."""
        import confluent_kafka

        broker = self.broker
        topic = f"spark-txn-{next(_names)}-{os.getpid()}"
        broker.create_topic(topic, 2)
        producer = confluent_kafka.Producer(
            client_config(broker.bootstrap, **{"transactional.id": topic})
        )
        producer.init_transactions(10)
        for prefix, commit in ((b"c", True), (b"a", False), (b"d", True)):
            producer.begin_transaction()
            for i in range(4):
                producer.produce(topic, prefix + b"%d" % i, partition=i % 2)
            producer.flush(10)
            producer.commit_transaction(10) if commit else producer.abort_transaction(10)

        def values(level: str) -> list[bytes]:
            df = (
                self.spark.read.format("afkak")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", topic)
                .option("kafka.isolation.level", level)
                .load()
            )
            return sorted(bytes(r.value) for r in df.collect())

        committed = sorted(b"%s%d" % (p, i) for p in (b"c", b"d") for i in range(4))
        self.assertEqual(values("read_committed"), committed)
        self.assertEqual(
            values("read_uncommitted"), sorted(committed + [b"a%d" % i for i in range(4)])
        )

    def test_offsets_past_the_log_end(self) -> None:
        """A range past the log's end fails the read, unless failOnDataLoss is false."""
        topic = self.topic(1)
        self.send(topic, 0, [Message(0, 0, None, b"%d" % i) for i in range(5)])
        past = json.dumps({topic: {"0": 8}})
        with self.assertRaises(Exception) as caught:
            self.read(subscribe=topic, endingOffsets=past).collect()
        self.assertIn("DataLossError", str(caught.exception))
        lenient = self.read(subscribe=topic, endingOffsets=past, failOnDataLoss="false")
        self.assertEqual([r.value for r in self.rows(lenient)], [b"%d" % i for i in range(5)])

    def test_write_then_read_back(self) -> None:
        """Rows written through Spark (keys, headers, partitions, topics) read back by a
        peer and by Spark."""
        topic, other = self.topic(3), self.topic(3)
        rows = [
            (b"key%d" % (i % 5), b"value%d" % i, [("i", b"%d" % i)], i % 3 if i % 2 else None)
            for i in range(200)
        ]
        df = self.spark.createDataFrame(
            rows,
            "key binary, value binary, headers array<struct<key:string,value:binary>>, "
            "partition int",
        )
        (
            df.write.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("topic", topic)
            .option("kafka.compression.type", "zstd")
            .mode("append")
            .save()
        )
        # Without headers or partitions rows go in chunks per key, placed as Kafka's
        # default partitioner places them; the topic column overrides the option.
        chunked = self.spark.createDataFrame(
            [(other, f"k{i % 10}", f"text{i}") for i in range(100)],
            "topic string, key string, value string",
        )
        chunked.write.format("afkak").option("bootstrap.servers", self.broker.bootstrap).option(
            "topic", topic
        ).mode("append").save()
        peer = consume(self.broker.bootstrap, topic, 200)
        self.assertEqual(sorted(r.value for r in peer), sorted(r[1] for r in rows))
        by_value = {r.value: r for r in peer}
        for key, value, headers, partition in rows:
            record = by_value[value]
            self.assertEqual((record.key, record.headers), (key, (("i", headers[0][1]),)))
            if partition is not None:
                self.assertEqual(record.partition, partition)
        keyed = {}
        for r in peer:  # a key's unplaced records all go to one partition
            if int(r.value[5:]) % 2 == 0:
                keyed.setdefault(r.key, set()).add(r.partition)
        self.assertTrue(all(len(parts) == 1 for parts in keyed.values()))
        got = consume(self.broker.bootstrap, other, 100)
        self.assertEqual(sorted(r.value for r in got), sorted(b"text%d" % i for i in range(100)))
        for r in got:
            self.assertEqual(r.partition, (murmur2(r.key) & 0x7FFFFFFF) % 3, r)
            self.assertEqual(int(r.value[4:]) % 10, int(r.key[1:]))
        self.seal(topic, 3)
        back = self.rows(self.read(subscribe=topic))
        self.assertEqual(sorted(r.value for r in back), sorted(r[1] for r in rows))

    def test_an_option_error_fails_load(self) -> None:
        """A malformed option fails ``load()`` on the driver, naming the option as
        Spark's connector spells it, before any action runs a task."""
        for options, words in (
            ({"subscribe": "t", "minpartitions": "0"}, "minPartitions must be at least 1"),
            ({"subscribe": "t", "groupIdPrefix": "g"}, "'groupIdPrefix'"),
            ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
        ):
            with self.assertRaises(Exception) as caught:
                self.read(**options)
            self.assertIn(words, str(caught.exception))

    def test_literal_headers_and_kafka_clients_options_write(self) -> None:
        """Headers built from literals (fields that cannot be null) are written, with
        settings brought from ``format("kafka")`` mapped to the Producer's."""
        topic = self.topic(1)
        df = self.spark.sql(
            "select cast(concat('v', id) as binary) as value, "
            "array(named_struct('key', 'h', 'value', cast('x' as binary))) as headers "
            "from range(10)"
        )
        (
            df.write.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("topic", topic)
            .option("kafka.max.request.size", "2000000")
            .option("kafka.retries", "3")
            .option("kafka.delivery.timeout.ms", "60000")
            .option("kafka.max.in.flight.requests.per.connection", "5")
            .mode("append")
            .save()
        )
        peer = consume(self.broker.bootstrap, topic, 10)
        self.assertEqual(sorted(r.value for r in peer), sorted(b"v%d" % i for i in range(10)))
        self.assertEqual({r.headers for r in peer}, {(("h", b"x"),)})
        self.seal(topic, 1)
        back = self.read(subscribe=topic, **{"kafka.max.poll.records": "3"})
        self.assertEqual(sorted(r.value for r in self.rows(back)), sorted(r.value for r in peer))

    def test_write_failure_fails_the_job(self) -> None:
        """A row that cannot be produced fails its task, and so the job."""
        df = self.spark.createDataFrame(
            [("not a valid topic!", b"v")], "topic string, value binary"
        )
        with self.assertRaises(Exception) as caught:
            df.write.format("afkak").option("kafka.bootstrap.servers", self.broker.bootstrap).mode(
                "append"
            ).save()
        self.assertIn("topic", str(caught.exception))

    def stream(self, topic: str, sink: str, checkpoint: str, **trigger: Any) -> Any:
        return (
            self.spark.readStream.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "25")
            .load()
            .selectExpr("partition", "offset", "value")
            .writeStream.format("parquet")
            .option("path", sink)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    def test_stream_restarts_from_checkpoint_exactly_once(self) -> None:
        """Micro-batches of at most ~25 records; stopped and restarted, every record once."""
        topic = self.topic(2)
        sink, checkpoint = os.path.join(self.tmp, "sink"), os.path.join(self.tmp, "checkpoint")
        produced = []

        def produce_round(n: int) -> None:
            for p in range(2):
                values = [b"r%d-%d-%d" % (len(produced), p, i) for i in range(n)]
                self.send(topic, p, [Message(0, 0, None, v) for v in values])
                produced.extend(values)
            self.seal(topic, 2)

        produce_round(30)
        query = self.stream(topic, sink, checkpoint, availableNow=True)
        query.awaitTermination(60)
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        self.assertGreaterEqual(len(batches), 3)
        self.assertTrue(all(p["numInputRows"] <= 26 for p in batches))

        produce_round(20)
        query = self.stream(topic, sink, checkpoint, processingTime="200 milliseconds")
        deadline = time.monotonic() + 60
        while self.sunk(sink, produced) < len(produced) and time.monotonic() < deadline:
            time.sleep(0.3)
        query.stop()

        produce_round(15)
        query = self.stream(topic, sink, checkpoint, availableNow=True)
        query.awaitTermination(60)
        got = self.spark.read.parquet(sink).collect()
        keys = sorted((r.partition, r.offset) for r in got)
        self.assertEqual(len(keys), len(set(keys)), "a record was read twice")
        self.assertEqual(sorted(r.value for r in got if r.value != SEAL), sorted(produced))

    def sunk(self, sink: str, produced: list[bytes]) -> int:
        try:
            return self.spark.read.parquet(sink).where(f"value != X'{SEAL.hex()}'").count()
        except Exception:  # no file written yet
            return 0

    def test_stream_to_stream(self) -> None:
        """A streaming query from one topic to another through afkak writes each record."""
        source, target = self.topic(1), self.topic(1)
        self.send(source, 0, [Message(0, 0, b"k%d" % i, b"v%d" % i) for i in range(50)])
        self.seal(source, 1)
        query = (
            self.spark.readStream.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .where(f"value != X'{SEAL.hex()}'")
            .selectExpr("key", "upper(cast(value as string)) as value")
            .writeStream.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("topic", target)
            .option("checkpointLocation", os.path.join(self.tmp, "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(60)
        got = consume(self.broker.bootstrap, target, 50)
        self.assertEqual(sorted(r.value for r in got), sorted(b"V%d" % i for i in range(50)))
        self.assertEqual({r.key for r in got}, {b"k%d" % i for i in range(50)})

    def test_stream_reader_picks_up_new_partitions(self) -> None:
        """A partition missing from the start offsets is read from its earliest offset.

        Tansu cannot add partitions to a topic, so the stream reader is driven
        directly (in a fresh process, which runs its own reactor) from start
        offsets that know only partition 0 of a two-partition topic.
        """
        topic = self.topic(2)
        for p in range(2):
            self.send(topic, p, [Message(0, 0, None, b"%d" % i) for i in range(10)])
        end = 10 + self.seal(topic, 2)
        script = textwrap.dedent(
            """
            import json, sys
            from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
            from afkak.spark import AfkakDataSource

            bootstrap, topic = sys.argv[1:]
            source = AfkakDataSource({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
            reader = source.streamReader(source.schema())
            start = {topic: {"0": 4}}
            print(json.dumps(reader.latestOffset(start, ReadMaxRows(10))))
            end = reader.latestOffset(start, ReadAllAvailable())
            print(json.dumps(end))
            ranges = [r for p in reader.partitions(start, end) for r in p.value]  # one task
            print(json.dumps([[r.partition, r.start, r.end] for r in ranges]))
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", script, self.broker.bootstrap, topic],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        limited, latest, ranges = map(json.loads, done.stdout.splitlines())
        # backlogs 6 (4..10) and 10 (0..10) share 10 records: 3 and 6 (sealed: 7 and 11)
        self.assertEqual(limited, {topic: {"0": 7, "1": 6}})
        self.assertEqual(latest, {topic: {"0": end, "1": end}})
        self.assertEqual(ranges, [[0, 4, end], [1, 0, end]])


class SparkSaslTests(SynchronousTestCase):
    """Write and read through Spark over SCRAM-SHA-256 (the harness's SASL server in front
    of Tansu), with Java's ``sasl.jaas.config``; the password shows in no plan."""

    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        from afkak.test.brokers.sasl import SaslBroker

        self.secret = "spark-sasl-pw-4e1d"
        self.server = SaslBroker({"alice": self.secret}, mechanisms=("SCRAM-SHA-256",)).start()
        self.addCleanup(self.server.stop)
        self.spark = spark_session()

    def options(self, password: str) -> dict[str, str]:
        return {
            "kafka.bootstrap.servers": self.server.bootstrap,
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="alice" password="{password}";'
            ),
        }

    def test_write_and_read_over_scram(self) -> None:
        topic = f"spark-sasl-{os.getpid()}"
        df = self.spark.createDataFrame(
            [(b"k", b"v%d" % i) for i in range(10)], "key binary, value binary"
        )
        df.write.format("afkak").options(**self.options(self.secret)).option("topic", topic).mode(
            "append"
        ).save()
        # One key, one partition; a last one-record batch as a seal (see the module docstring).
        seal = self.spark.createDataFrame([(b"k", SEAL)], "key binary, value binary")
        seal.write.format("afkak").options(**self.options(self.secret)).option("topic", topic).mode(
            "append"
        ).save()
        read = (
            self.spark.read.format("afkak")
            .options(**self.options(self.secret))
            .option("subscribe", topic)
            .load()
        )
        values = sorted(r.value for r in read.collect() if r.value != SEAL)
        self.assertEqual(values, sorted(b"v%d" % i for i in range(10)))
        plans = [
            read._jdf.queryExecution().toString(),
            read._jdf.queryExecution().simpleString(),
        ]
        for plan in plans:
            self.assertNotIn(self.secret, plan)
        wrong = (
            self.spark.read.format("afkak")
            .options(**self.options("wrong-password"))
            .option("subscribe", topic)
            .load()
        )
        with self.assertRaises(Exception) as caught:  # noqa: B017 -- Spark wraps the error
            wrong.collect()
        self.assertIn("SASL_AUTHENTICATION_FAILED", str(caught.exception))
