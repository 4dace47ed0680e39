"""``afkak.spark.from_confluent_avro`` on records read from Apache Kafka through the
``afkak`` data source: the same rows as Spark's own ``from_avro`` on the payload
without its 5-byte header, with and without a Schema Registry (the in-memory one,
served by a child process).  Uses ``test_spark_source``'s one local[2] session,
whose JVM has ``spark-avro`` on its classpath when it resolves from Maven Central."""

from __future__ import annotations

import datetime
import json
import os
from typing import Any

from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SkipTest

from afkak.client import KafkaClient
from afkak.common import Message, ProduceRequest
from afkak.message_set import MessageSet
from afkak.schema_registry import AvroSerializer, SchemaRegistryClient
from afkak.test.brokers import shared_broker
from afkak.test.brokers.spark_kafka import avro_jar
from afkak.test.helpers import wait
from afkak.test.test_schema_registry import USER, USER_V2
from afkak.test.test_schema_registry_http import ServedRegistryTestCase
from afkak.test.test_spark_source import SKIP, spark_session
from afkak.testing.apache_kafka import ApacheKafkaUnavailable

LINE = {
    "type": "record",
    "name": "Line",
    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
}
STATUS = {"type": "enum", "name": "Status", "symbols": ["NEW", "DONE"]}
ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "status", "type": STATUS},
            {"name": "lines", "type": {"type": "array", "items": LINE}},
            {"name": "prices", "type": {"type": "map", "values": "double"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "raw", "type": "bytes"},
            {"name": "ok", "type": "boolean"},
            {"name": "ratio", "type": "float"},
            {"name": "first", "type": ["null", "Line"], "default": None},
        ],
    }
)  # fmt: skip


def order(i: int) -> dict[str, Any]:
    line = {"sku": f"sku-{i}", "qty": i}
    return {
        "id": i,
        "note": None if i % 3 else f"note {i}",
        "status": "DONE" if i % 2 else "NEW",
        "lines": [line] * (i % 3),
        "prices": {"list": i * 1.5, "net": i * 1.25} if i % 2 else {},
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=i),
        "at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=i),
        "raw": bytes(range(i % 5)),
        "ok": bool(i % 2),
        "ratio": i / 4,
        "first": line if i % 2 else None,
    }


class FromConfluentAvroTests(ServedRegistryTestCase):
    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        try:
            avro_jar()
        except ApacheKafkaUnavailable as e:
            if os.environ.get("CI") == "true":
                raise
            raise SkipTest(str(e)) from None
        self.broker = shared_broker("kafka")
        self.spark = spark_session()
        self.kafka = KafkaClient(
            self.broker.bootstrap, clientId="afkak-spark-avro", endpoint_factory=TCP4ClientEndpoint
        )
        self.addCleanup(lambda: wait(self.kafka.close()))
        self.registry = SchemaRegistryClient(self.url, reactor)

    def topic(self, values: list[bytes]) -> str:
        name = f"spark-avro-{self.id().rsplit('_', 1)[-1]}-{os.getpid()}"
        self.broker.create_topic(name, 1)
        payload = ProduceRequest(name, 0, MessageSet([Message(0, 0, None, v) for v in values]))
        wait(self.kafka.send_produce_request([payload], acks=-1))
        return name

    def serialized(self, schema: str, topic: str, records: list[dict[str, Any]]) -> list[bytes]:
        serializer = AvroSerializer(self.registry, schema, topic=topic)
        wait(serializer.prepare())
        return [serializer(r) for r in records]

    def read(self, topic: str) -> Any:
        return (
            self.spark.read.format("afkak")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("subscribe", topic)
            .load()
        )

    def test_the_same_rows_as_from_avro_on_the_payload(self) -> None:
        from pyspark.sql.avro.functions import from_avro
        from pyspark.sql.functions import expr

        from afkak.spark import from_confluent_avro

        records = [order(i) for i in range(12)]
        topic = self.topic(self.serialized(ORDER, "orders", records))
        df = self.read(topic).select(
            "offset",
            from_avro(expr("substring(value, 6)"), ORDER).alias("spark"),
            from_confluent_avro("value", ORDER).alias("afkak"),
            from_confluent_avro("value", ORDER, self.url).alias("registry"),
        )
        rows = sorted(df.collect(), key=lambda r: r.offset)
        self.assertEqual(len(rows), len(records))
        for row in rows:
            self.assertEqual(row.afkak, row.spark)
            self.assertEqual(row.registry, row.spark)
        self.assertEqual(rows[3].spark.note, "note 3")
        self.assertEqual(rows[5].spark.prices, {"list": 7.5, "net": 6.25})
        self.assertEqual(
            df.schema["afkak"].dataType.simpleString(), df.schema["spark"].dataType.simpleString()
        )

    def test_each_record_read_with_its_writers_schema_through_the_registry(self) -> None:
        from pyspark.sql.functions import col

        from afkak.spark import from_confluent_avro

        old = self.serialized(USER, "people", [{"name": "ann"}])
        new = self.serialized(USER_V2, "people", [{"name": "bob", "age": 7}])
        topic = self.topic([*old, *new, b"\x00junk"])
        decoded = from_confluent_avro(col("value"), USER_V2, self.url, mode="PERMISSIVE")
        rows = self.read(topic).select(decoded.alias("u")).collect()
        self.assertEqual(
            [None if r.u is None else r.u.asDict() for r in rows],
            [{"name": "ann", "age": 0}, {"name": "bob", "age": 7}, None],
        )
