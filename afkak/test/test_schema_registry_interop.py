"""Byte-for-byte interop with confluent-kafka's serializers: the same schema registered
first in afkak's in-memory registry and in confluent-kafka's mock one gets id 1 in both,
so the frames written for one record are equal, and each side reads the other's."""

from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.avro import (
    AvroDeserializer as CAvroDeserializer,
    AvroSerializer as CAvroSerializer,
)
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer as CJSONDeserializer,
    JSONSerializer as CJSONSerializer,
)
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer as CProtobufDeserializer,
    ProtobufSerializer as CProtobufSerializer,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from afkak.schema_registry import (
    AvroDeserializer,
    AvroSerializer,
    JSONSchemaDeserializer,
    JSONSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    record_subject_name_strategy,
)
from afkak.test.test_schema_registry import USER_V2
from afkak.test.test_schema_registry_serdes import ORDER_JSON, Line, Money, Order, SerdeTestCase

CTX = SerializationContext("topic", MessageField.VALUE)
RECORDS = [
    {"name": "ann", "age": 1},
    {"name": "bob ünïcode", "age": -(2**31)},
    {"name": "", "age": 0},
]


def confluent_registry() -> Any:
    return ConfluentClient.new_client({"url": "mock://afkak-interop"})


class ConfluentInteropTests(SerdeTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.confluent = confluent_registry()

    def assert_interop(
        self, ours: Any, theirs: Any, our_reader: Any, their_reader: Any, records: list[Any]
    ) -> None:
        self.successResultOf(ours.prepare())
        for record in records:
            data = ours(record)
            self.assertEqual(data, theirs(record, CTX), record)
            self.assertEqual(their_reader(data, CTX), record)
            self.assertEqual(self.decode(our_reader, theirs(record, CTX)), record)

    def test_avro(self) -> None:
        self.assert_interop(
            AvroSerializer(self.client, USER_V2, topic="topic"),
            CAvroSerializer(self.confluent, USER_V2),
            AvroDeserializer(self.client),
            CAvroDeserializer(self.confluent),
            RECORDS,
        )

    def test_avro_bytes(self) -> None:
        self.assert_interop(
            AvroSerializer(self.client, '"bytes"', topic="topic"),
            CAvroSerializer(self.confluent, '"bytes"'),
            AvroDeserializer(self.client),
            CAvroDeserializer(self.confluent),
            [b"\x00\x01raw", b"\xff" * 300],
        )

    def test_json_schema(self) -> None:
        self.assert_interop(
            JSONSchemaSerializer(self.client, ORDER_JSON, topic="topic"),
            CJSONSerializer(ORDER_JSON, self.confluent),
            JSONSchemaDeserializer(self.client),
            CJSONDeserializer(ORDER_JSON, schema_registry_client=self.confluent),
            [{"id": 1, "item": "thé"}, {"id": -5}, {"id": 2, "item": 'a"b\\c\n'}],
        )

    def test_protobuf_with_imports(self) -> None:
        conf = {"use.deprecated.format": False}
        self.assert_interop(
            ProtobufSerializer(self.client, Order, topic="topic"),
            CProtobufSerializer(Order, self.confluent, conf),
            ProtobufDeserializer(self.client, Order),
            CProtobufDeserializer(Order, conf),
            [Order(id=5, total=Money(cents=250)), Order()],
        )

    def test_protobuf_nested_message_indexes(self) -> None:
        conf = {"use.deprecated.format": False}
        self.assert_interop(
            ProtobufSerializer(
                self.client, Line, subject_name_strategy=record_subject_name_strategy
            ),
            CProtobufSerializer(
                Line, self.confluent, {"subject.name.strategy": lambda ctx, name: name, **conf}
            ),
            ProtobufDeserializer(self.client, Line),
            CProtobufDeserializer(Line, conf),
            [Line(sku="x"), Line(sku="ü" * 300)],
        )
