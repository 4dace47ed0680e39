"""``from_confluent_avro``'s parts that need no JVM: Avro schemas to Spark types (as
Spark's ``from_avro`` has them) and the Arrow UDF decoding a batch without a registry.
Against Spark's own ``from_avro`` in a Spark session: ``test_spark_schema_registry``."""

from __future__ import annotations

import json
import os

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.schema_registry import DeserializationError, frame

try:
    import pyarrow as pa
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        DateType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    from afkak.spark import from_confluent_avro
    from afkak.spark._confluent_avro import _Decode, spark_type
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None

USER = json.dumps(
    {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
)


class FromConfluentAvroTests(SynchronousTestCase):
    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)

    def test_spark_types(self) -> None:
        line = {"type": "record", "name": "Line", "namespace": "shop", "fields": [
            {"name": "sku", "type": "string"},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        ]}  # fmt: skip
        order = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
            {"name": "lines", "type": {"type": "array", "items": ["null", line]}},
            {"name": "first", "type": ["null", "Line"]},
            {"name": "tags", "type": {"type": "map", "values": "long"}},
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A"]}},
            {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        ]}  # fmt: skip
        line_type = StructType(
            [
                StructField("sku", StringType(), False),
                StructField("at", TimestampType(), False),
                StructField("local", TimestampNTZType(), False),
            ]
        )
        self.assertEqual(
            spark_type(order),
            StructType(
                [
                    StructField("lines", ArrayType(line_type, True), False),
                    StructField("first", line_type, True),
                    StructField("tags", MapType(StringType(), LongType(), False), False),
                    StructField("kind", StringType(), False),
                    StructField("hash", BinaryType(), False),
                    StructField("day", DateType(), False),
                ]
            ),
        )
        for unsupported in (
            ["int", "string"],
            {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2},
            "shop.Nowhere",
        ):
            self.assertRaises(ValueError, spark_type, unsupported)

    def test_a_batch_without_a_registry(self) -> None:
        good = frame(9, b"\x06ann")
        values = pa.array([good, None, b"\x01not a frame", frame(9, b"\x06ann\x00")], pa.binary())
        permissive = _Decode(USER, None, "PERMISSIVE", 1.0)(values)
        self.assertEqual(permissive.to_pylist(), [{"name": "ann"}, None, None, None])
        failfast = _Decode(USER, None, "FAILFAST", 1.0)
        self.assertRaises(DeserializationError, failfast, values)
        self.assertEqual(failfast(values[:2]).to_pylist(), [{"name": "ann"}, None])

    def test_bad_arguments(self) -> None:
        self.assertRaises(ValueError, from_confluent_avro, "value", USER, mode="DROPMALFORMED")
        self.assertRaises(TypeError, from_confluent_avro, "value", json.loads(USER))
