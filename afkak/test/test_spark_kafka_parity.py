"""``format("afkak")`` against Spark's own connector ``format("kafka")``, row for row.

Both read the same Apache Kafka topics with the same options and must return the
same rows (key, value, topic, partition, offset, timestamp, timestampType, headers)
in batch and streaming (``Trigger.AvailableNow``) queries; a write by one is read
back exactly by the other.  Options are table-driven over topics filled once.

The process's one local[2] SparkSession (``test_spark_source.spark_session``)
starts with the connector's jars (resolved by ``afkak/test/brokers/spark_kafka.py``)
whichever module starts it, so the two run in either order in one process.
Skipped without PySpark, java or mvn (failing instead when CI is "true").
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.admin import KafkaAdminClient
from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import Message, ProduceRequest, TopicAndPartition
from afkak.message_set import MessageSet
from afkak.test.brokers import Broker, client_config, shared_broker
from afkak.test.test_client_brokers import wait
from afkak.testing.apache_kafka import ApacheKafkaUnavailable

try:
    from afkak.spark._options import UNSUPPORTED
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None

_state: dict[str, Any] = {}
#: The first record time of the topic "stamped": records 1 s apart, partition 1 0.5 s later.
STAMPED = (int(time.time()) - 3600) * 1000


def parity_session() -> Any:
    """The process's SparkSession (``test_spark_source``'s), its JVM started with Spark's
    Kafka connector on the classpath (its ``spark.jars``); skipped when the connector
    does not resolve."""
    if "spark" not in _state:
        from afkak.test import test_spark_source
        from afkak.test.brokers.spark_kafka import connector_jars

        try:
            connector_jars()
        except ApacheKafkaUnavailable as e:
            if os.environ.get("CI") == "true":
                raise
            raise SkipTest(str(e)) from None
        _state["spark"] = test_spark_source.spark_session()
    return _state["spark"]


def _send(
    client: KafkaClient, topic: str, partition: int, messages: list[Message], codec: int
) -> None:
    payload = ProduceRequest(topic, partition, MessageSet(messages, codec))
    wait(client.send_produce_request([payload], acks=-1))


def _fill(broker: Broker) -> dict[str, str]:
    """The topics every test reads, filled once: their names by role."""
    import confluent_kafka

    prefix = f"parity-{os.getpid()}"
    topics = {role: f"{prefix}-{role}" for role in ("main", "other", "txn", "stamped")}
    for role, partitions in (("main", 3), ("other", 2), ("txn", 2), ("stamped", 2)):
        broker.create_topic(topics[role], partitions)
    client = KafkaClient(broker.bootstrap, clientId="parity", endpoint_factory=TCP4ClientEndpoint)
    try:
        for codec in (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD):
            for p in range(3):
                messages = [
                    Message(
                        0,
                        0,
                        None if i % 4 == 0 else b"k%d" % i,
                        None if i % 7 == 3 else b"c%d-p%d-%d" % (codec, p, i),
                        headers=(("h", b"%d" % i), ("none", None)) if i % 2 else (),
                    )
                    for i in range(6)
                ]
                _send(client, topics["main"], p, messages, codec)
        for p in range(2):
            _send(client, topics["other"], p, [Message(0, 0, b"o", b"o%d" % p)] * 3, CODEC_NONE)
            stamped = [
                Message(0, 0, None, b"s%d" % i, timestamp=STAMPED + 1000 * i + 500 * p)
                for i in range(10)
            ]
            _send(client, topics["stamped"], p, stamped, CODEC_NONE)
    finally:
        wait(client.close())
    producer = confluent_kafka.Producer(
        client_config(broker.bootstrap, **{"transactional.id": topics["txn"]})
    )
    producer.init_transactions(10)
    for mark, commit in ((b"c", True), (b"a", False), (b"d", True)):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topics["txn"], mark + b"%d" % i, partition=i % 2)
        producer.flush(10)
        producer.commit_transaction(10) if commit else producer.abort_transaction(10)
    return topics


def _rows(df: Any) -> list[tuple[Any, ...]]:
    """Rows as plain tuples (headers as tuples of pairs), by topic, partition and offset."""
    out = []
    for row in df.collect():
        values = list(row)
        if "headers" in row.asDict():
            i = row.__fields__.index("headers")
            values[i] = None if row.headers is None else tuple(tuple(h) for h in row.headers)
        out.append(tuple(values))
    names = df.columns
    order = [names.index(c) for c in ("topic", "partition", "offset") if c in names]
    return sorted(out, key=lambda r: tuple(r[i] for i in order))


class KafkaSparkParityTests(SynchronousTestCase):
    """The same query through both connectors; the rows must be equal."""

    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        self.broker = shared_broker("kafka")
        self.spark = parity_session()
        if _state.get("bootstrap") != self.broker.bootstrap:
            _state["topics"] = _fill(self.broker)
            _state["bootstrap"] = self.broker.bootstrap
        self.topics: dict[str, str] = _state["topics"]
        self.tmp = self.mktemp()

    def load(self, fmt: str, options: Mapping[str, str], stream: bool = False) -> Any:
        reader = self.spark.readStream if stream else self.spark.read
        reader = reader.format(fmt).option("kafka.bootstrap.servers", self.broker.bootstrap)
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    def batch_cases(self) -> list[tuple[str, dict[str, str]]]:
        main, other, txn = self.topics["main"], self.topics["other"], self.topics["txn"]
        stamped = self.topics["stamped"]
        return [
            ("startingTimestamp", {"subscribe": stamped, "startingTimestamp": f"{STAMPED + 3000}"}),
            (
                "offsets by timestamp",
                {
                    "subscribe": stamped,
                    "startingOffsetsByTimestamp": json.dumps(
                        {stamped: {"0": STAMPED + 2500, "1": STAMPED}}
                    ),
                    "endingOffsetsByTimestamp": json.dumps(
                        {stamped: {"0": STAMPED + 7000, "1": STAMPED + 99000}}
                    ),
                },
            ),
            ("endingTimestamp", {"subscribe": stamped, "endingTimestamp": f"{STAMPED + 4200}"}),
            (
                "strategy latest",
                {
                    "subscribe": stamped,
                    "startingOffsetsByTimestamp": json.dumps(
                        {stamped: {"0": STAMPED + 99000, "1": STAMPED + 9000}}
                    ),
                    "startingOffsetsByTimestampStrategy": "latest",
                },
            ),
            ("subscribe", {"subscribe": main}),
            ("subscribe two", {"subscribe": f"{main},{other}"}),
            ("includeHeaders", {"subscribe": main, "includeHeaders": "true"}),
            ("assign", {"assign": json.dumps({main: [0, 2], other: [1]})}),
            ("subscribePattern", {"subscribePattern": f"parity-{os.getpid()}-(main|other)"}),
            (
                "offsets JSON",
                {
                    "subscribe": main,
                    "startingOffsets": json.dumps({main: {"0": 4, "1": -2, "2": 20}}),
                    "endingOffsets": json.dumps({main: {"0": 11, "1": -1, "2": 27}}),
                },
            ),
            ("minPartitions", {"subscribe": f"{main},{other}", "minPartitions": "7"}),
            ("maxRecordsPerPartition", {"subscribe": main, "maxRecordsPerPartition": "7"}),
            (
                "both splits",
                {"subscribe": main, "maxRecordsPerPartition": "20", "minPartitions": "9"},
            ),
            ("read_committed", {"subscribe": txn, "kafka.isolation.level": "read_committed"}),
            ("read_uncommitted", {"subscribe": txn, "kafka.isolation.level": "read_uncommitted"}),
            (
                "kafka.* pass-through",
                {
                    "subscribe": main,
                    "kafka.max.partition.fetch.bytes": "200",
                    "kafka.fetch.max.wait.ms": "50",
                    "kafka.client.id": "parity",
                },
            ),
        ]

    def test_timestamp_past_the_end_fails_both(self) -> None:
        """startingTimestamp after every record fails both (strategy error, the default)."""
        options = {"subscribe": self.topics["stamped"], "startingTimestamp": f"{STAMPED + 99000}"}
        for fmt, words in (("afkak", "no record at or after"), ("kafka", "No offset matched")):
            with self.assertRaises(Exception, msg=fmt) as caught:
                self.load(fmt, options).collect()
            self.assertIn(words, str(caught.exception), fmt)

    def test_fail_on_data_loss(self) -> None:
        """Records deleted before the starting offset: both fail, or both skip them."""
        topic = f"parity-{os.getpid()}-trimmed"
        self.broker.create_topic(topic, 1)
        client = KafkaClient(self.broker.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        try:
            _send(client, topic, 0, [Message(0, 0, None, b"%d" % i) for i in range(10)], 0)
            wait(KafkaAdminClient(client).delete_records({TopicAndPartition(topic, 0): 4}))
        finally:
            wait(client.close())
        options = {"subscribe": topic, "startingOffsets": json.dumps({topic: {"0": 0}})}
        lenient = {**options, "failOnDataLoss": "false"}
        afkak, kafka = (_rows(self.load(fmt, lenient)) for fmt in ("afkak", "kafka"))
        self.assertEqual([r[4] for r in kafka], list(range(4, 10)))
        self.assertEqual(afkak, kafka)
        for fmt in ("afkak", "kafka"):
            with self.assertRaises(Exception, msg=fmt) as caught:
                self.load(fmt, options).collect()
            self.assertIn("failOnDataLoss", str(caught.exception), fmt)

    def test_schema(self) -> None:
        """The same columns, types and nullability, with and without headers."""
        for headers in ("false", "true"):
            options = {"subscribe": self.topics["main"], "includeHeaders": headers}
            afkak, kafka = (self.load(fmt, options).schema for fmt in ("afkak", "kafka"))
            self.assertEqual(afkak.simpleString(), kafka.simpleString())
            self.assertEqual(
                [(f.name, f.nullable) for f in afkak.fields],
                [(f.name, f.nullable) for f in kafka.fields],
            )

    def test_batch_options(self) -> None:
        """Every batch case: the same rows from both, and not none."""
        for name, options in self.batch_cases():
            afkak_df, kafka_df = self.load("afkak", options), self.load("kafka", options)
            afkak, kafka = _rows(afkak_df), _rows(kafka_df)
            self.assertTrue(kafka, name)
            self.assertEqual(afkak, kafka, name)
            tasks = [df.rdd.getNumPartitions() for df in (afkak_df, kafka_df)]
            if name == "minPartitions":
                self.assertEqual(tasks[0], tasks[1], name)
            elif name == "maxRecordsPerPartition":
                # 90 records in 3 partitions, at most 7 a task; the 4.2.0 connector's
                # batch reads keep one task per partition (docs/spark.rst)
                self.assertEqual(tasks, [15, 3], name)

    def stream_rows(
        self, fmt: str, options: Mapping[str, str], name: str
    ) -> tuple[list[Any], list[int]]:
        """A Trigger.AvailableNow query into a memory table: its rows and its batch sizes."""
        table = f"parity_{fmt}_{name}"
        query = (
            self.load(fmt, {"startingOffsets": "earliest", **options}, stream=True)
            .writeStream.format("memory")
            .queryName(table)
            .option("checkpointLocation", os.path.join(self.tmp, table))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(240)
        self.assertFalse(query.isActive, f"{fmt} {name} did not finish")
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        return _rows(self.spark.table(table)), sizes

    def test_stream_available_now(self) -> None:
        """Streams read the same rows; maxOffsetsPerTrigger caps both the same way."""
        main, stamped = self.topics["main"], self.topics["stamped"]
        pattern = f"parity-{os.getpid()}-(main|other)"
        cases = [
            ("headers", {"subscribe": main, "includeHeaders": "true"}, None, 90),
            ("limited", {"subscribe": main, "maxOffsetsPerTrigger": "40"}, 40, 90),
            ("pattern", {"subscribePattern": pattern, "minPartitions": "4"}, None, 96),
            (
                "timestamp",
                {"subscribe": stamped, "startingTimestamp": f"{STAMPED + 3000}"},
                None,
                14,
            ),
        ]
        for name, options, limit, count in cases:
            afkak, afkak_sizes = self.stream_rows("afkak", options, name)
            kafka, kafka_sizes = self.stream_rows("kafka", options, name)
            self.assertEqual(len(kafka), count, name)
            self.assertEqual(afkak, kafka, name)
            if limit:
                self.assertGreater(len(kafka_sizes), 1, name)
                self.assertTrue(all(n <= limit for n in afkak_sizes + kafka_sizes), name)
                self.assertEqual(afkak_sizes, kafka_sizes, name)

    def trigger_batches(self, options: Mapping[str, str], phases: list[tuple[int, int]]) -> None:
        """Both connectors stream a new topic (0.2 s processing-time trigger) while
        *phases* write ``(records, batches expected after them)``: both must cut the
        same micro-batches, of the sizes ``minOffsetsPerTrigger``/``maxTriggerDelay`` give."""
        topic = f"parity-{os.getpid()}-trigger-{int(time.time() * 1000)}"
        self.broker.create_topic(topic, 1)
        client = KafkaClient(
            self.broker.bootstrap, clientId="parity", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(client.close()))
        written = 0

        def write(count: int) -> None:
            nonlocal written
            values = [b"%d" % (written + i) for i in range(count)]
            _send(client, topic, 0, [Message(0, 0, None, v) for v in values], CODEC_NONE)
            written += count

        # The first phase's records are there before the queries start: their first
        # micro-batch (which never waits) holds them, however late each query starts.
        write(phases[0][0])
        queries = {}
        for fmt in ("afkak", "kafka"):
            queries[fmt] = (
                self.load(fmt, {"subscribe": topic, "startingOffsets": "earliest", **options}, True)
                .writeStream.format("memory")
                .queryName(f"trigger_{fmt}_{topic.replace('-', '_')}")
                .option("checkpointLocation", os.path.join(self.tmp, f"trigger-{fmt}"))
                .trigger(processingTime="200 milliseconds")
                .start()
            )
            self.addCleanup(queries[fmt].stop)

        def sizes(query: Any) -> list[int]:
            return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

        for i, (count, batches) in enumerate(phases):
            if i:
                write(count)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and any(
                len(sizes(q)) < batches for q in queries.values()
            ):
                time.sleep(0.2)
            # a few more triggers run: none may cut a batch the phase does not expect
            time.sleep(2)
            got = {fmt: sizes(q) for fmt, q in queries.items()}
            self.assertEqual(len(got["kafka"]), batches, got)
            self.assertEqual(got["afkak"], got["kafka"])
        self.assertEqual(sum(sizes(queries["afkak"])), written)

    def test_stream_min_offsets_per_trigger(self) -> None:
        """A micro-batch waits for minOffsetsPerTrigger records (the first one never waits)."""
        options = {"minOffsetsPerTrigger": "30", "maxTriggerDelay": "1h"}
        self.trigger_batches(options, [(10, 1), (10, 1), (25, 2)])

    def test_stream_max_trigger_delay(self) -> None:
        """Too few records still make a micro-batch once maxTriggerDelay passed."""
        options = {"minOffsetsPerTrigger": "1000", "maxTriggerDelay": "3s"}
        self.trigger_batches(options, [(10, 1), (5, 2)])

    def test_write_read_back_by_the_other(self) -> None:
        """Rows written by one connector read back exactly by both."""
        rows = [
            (
                None if i % 5 == 0 else b"key%d" % (i % 4),
                b"value%d" % i,
                [("i", b"%d" % i), ("null", None)] if i % 2 else [],
                i % 3 if i % 3 else None,
            )
            for i in range(60)
        ]
        df = self.spark.createDataFrame(
            rows,
            "key binary, value binary, headers array<struct<key:string,value:binary>>, "
            "partition int",
        )
        for writer, reader in (("kafka", "afkak"), ("afkak", "kafka")):
            topic = f"parity-{os.getpid()}-written-by-{writer}"
            self.broker.create_topic(topic, 3)
            df.write.format(writer).option("kafka.bootstrap.servers", self.broker.bootstrap).option(
                "topic", topic
            ).mode("append").save()
            options = {"subscribe": topic, "includeHeaders": "true"}
            back, peer = _rows(self.load(reader, options)), _rows(self.load(writer, options))
            self.assertEqual(back, peer, writer)
            got = {r[1]: (r[0], r[7], r[3]) for r in back}
            for key, value, headers, partition in rows:
                k, h, p = got[value]
                # an empty headers array is written as no headers, read back as null
                self.assertEqual((k, h), (key, tuple(map(tuple, headers)) or None), writer)
                if partition is not None:
                    self.assertEqual(p, partition, writer)

    def test_unsupported_options_named(self) -> None:
        """Each option of Spark's connector that afkak lacks fails the query, named."""
        for option in sorted(UNSUPPORTED):
            options = {"subscribe": self.topics["main"], option: "1"}
            with self.assertRaises(Exception, msg=option) as caught:
                self.load("afkak", options).collect()
            self.assertIn(option, str(caught.exception).lower())
