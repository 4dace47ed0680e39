"""Avro, JSON Schema and Protobuf serdes in the Confluent wire format, against the
in-memory registry; and consumers decoding schema'd records without blocking."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from twisted.internet.defer import CancelledError
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak import ShareConsumer
from afkak.consumer._delivery import DeliveryState
from afkak.schema_registry import (
    AvroDeserializer,
    AvroSerializer,
    DeserializationError,
    JSONSchemaDeserializer,
    JSONSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    Schema,
    SchemaReference,
    SchemaRegistryError,
    SerializationError,
    frame,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from afkak.test.test_consumer import ConsumerTestCase, Recorder
from afkak.test.test_schema_registry import ADDRESS, PERSON, USER, USER_V2
from afkak.test.test_share_consumer import TOPIC, ShareTestCase
from afkak.testing.schema_registry import InMemorySchemaRegistry

ORDER_JSON = json.dumps(
    {
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
        "required": ["id"],
    }
)


def _proto_module() -> tuple[Any, Any, Any]:
    """Message classes for ``shop.proto`` (Order with a nested Line) importing ``common.proto``."""
    pool = descriptor_pool.DescriptorPool()
    common = descriptor_pb2.FileDescriptorProto(
        name="common.proto", package="shop", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=3, label=1)
    pool.Add(common)
    shop = descriptor_pb2.FileDescriptorProto(
        name="shop.proto", package="shop", syntax="proto3", dependency=["common.proto"]
    )
    shop.message_type.add(name="Other").field.add(name="x", number=1, type=9, label=1)
    order = shop.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=3, label=1)
    order.field.add(name="total", number=2, type=11, label=1, type_name=".shop.Money")
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=9, label=1)
    pool.Add(shop)
    get = message_factory.GetMessageClass
    return (
        get(pool.FindMessageTypeByName("shop.Order")),
        get(pool.FindMessageTypeByName("shop.Order.Line")),
        get(pool.FindMessageTypeByName("shop.Money")),
    )


Order, Line, Money = _proto_module()


class SerdeTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.registry = InMemorySchemaRegistry()
        self.client = self.registry.client(self.clock, retry_policy=lambda n: 0.5)

    def prepared(self, serializer: Any) -> Any:
        self.successResultOf(serializer.prepare())
        return serializer

    def decode(self, deserializer: Any, data: bytes) -> Any:
        return self.successResultOf(deserializer.deserialize(data))


class AvroTests(SerdeTestCase):
    def test_round_trip_per_subject_name_strategy(self) -> None:
        for strategy, subject in [
            (None, "users-value"),
            (record_subject_name_strategy, "example.User"),
            (topic_record_subject_name_strategy, "users-example.User"),
        ]:
            options = {} if strategy is None else {"subject_name_strategy": strategy}
            s = self.prepared(AvroSerializer(self.client, USER, topic="users", **options))
            self.assertEqual(s.subject, subject)
            data = s({"name": "ann"})
            self.assertEqual(data, frame(1, b"\x06ann"))
            reader = AvroDeserializer(self.registry.client(self.clock))
            self.assertEqual(self.decode(reader, data), {"name": "ann"})
        key = self.prepared(AvroSerializer(self.client, '"string"', topic="users", is_key=True))
        self.assertEqual(key.subject, "users-key")
        self.assertEqual(self.decode(AvroDeserializer(self.client), key("k")), "k")

    def test_auto_register_off_needs_the_schema_registered(self) -> None:
        s = AvroSerializer(self.client, USER, topic="t", auto_register=False)
        d = s.prepare()
        self.clock.advance(2)
        self.assertEqual(self.failureResultOf(d, SchemaRegistryError).value.error_code, 40401)
        with self.assertRaises(SerializationError):
            s({"name": "x"})
        self.prepared(AvroSerializer(self.client, USER, topic="t"))
        self.assertEqual(self.successResultOf(s.prepare()), 1)

    def test_use_latest_version_writes_with_the_latest_schema(self) -> None:
        self.prepared(AvroSerializer(self.client, USER, topic="t"))
        self.prepared(AvroSerializer(self.client, USER_V2, topic="t"))
        s = self.prepared(AvroSerializer(self.client, USER, topic="t", use_latest_version=True))
        self.assertEqual(s.schema_id, 2)
        data = s({"name": "a", "age": 7})
        self.assertEqual(self.decode(AvroDeserializer(self.client), data), {"name": "a", "age": 7})

    def test_an_old_reader_reads_records_of_a_newer_compatible_schema(self) -> None:
        old = self.prepared(AvroSerializer(self.client, USER, topic="t"))
        new = self.prepared(AvroSerializer(self.client, USER_V2, topic="t"))
        reader = AvroDeserializer(self.registry.client(self.clock), reader_schema=USER)
        self.assertEqual(self.decode(reader, new({"name": "n", "age": 3})), {"name": "n"})
        newer_reader = AvroDeserializer(self.client, reader_schema=USER_V2)
        self.assertEqual(self.decode(newer_reader, old({"name": "o"})), {"name": "o", "age": 0})

    def test_references(self) -> None:
        self.successResultOf(self.client.register("address", Schema(ADDRESS)))
        ref = SchemaReference("example.Address", "address", 1)
        s = self.prepared(
            AvroSerializer(self.client, Schema(PERSON, references=(ref,)), topic="people")
        )
        data = s({"home": {"city": "Oslo"}})
        reader = AvroDeserializer(self.registry.client(self.clock))
        self.assertEqual(self.decode(reader, data), {"home": {"city": "Oslo"}})

    def test_a_record_not_matching_its_schema_is_a_serialization_error(self) -> None:
        s = self.prepared(AvroSerializer(self.client, USER, topic="t"))
        with self.assertRaises(SerializationError) as e:
            s({"name": 3})
        self.assertIn("t-value", str(e.exception))

    def test_bad_frames_are_per_record_errors(self) -> None:
        s = self.prepared(AvroSerializer(self.client, USER, topic="t"))
        reader = AvroDeserializer(self.registry.client(self.clock))
        good = s({"name": "ann"})
        cases = {
            b"\x01" + good[1:]: "unknown magic byte 1",
            good[:3]: "too short",
            frame(42, b"\x02a"): "schema id 42 is unknown",
            good[:-1]: "does not match schema id 1",
            good + b"\x00": "does not match schema id 1",
        }
        for data, why in cases.items():
            error = self.decode(reader, data)
            self.assertIsInstance(error, DeserializationError, data)
            self.assertIn(why, str(error))
            self.assertEqual(error.data, data)
        self.assertEqual(self.decode(reader, good), {"name": "ann"})
        strict = AvroDeserializer(self.client, on_error="raise")
        self.failureResultOf(strict.deserialize(b"\x01" + good[1:]), DeserializationError)

    def test_bad_arguments(self) -> None:
        with self.assertRaises(ValueError):
            AvroSerializer(self.client, USER)  # the topic strategy needs the topic
        with self.assertRaises(ValueError):
            AvroSerializer(
                self.client,
                '"string"',
                topic="t",
                subject_name_strategy=record_subject_name_strategy,
            )
        with self.assertRaises(ValueError):
            AvroSerializer(self.client, "{nope", topic="t")
        with self.assertRaises(TypeError):
            AvroSerializer(self.client, Schema(ORDER_JSON, "JSON"), topic="t")
        with self.assertRaises(TypeError):
            AvroSerializer(None, USER, topic="t")  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            AvroDeserializer(self.client, on_error="ignore")


class JSONSchemaTests(SerdeTestCase):
    def test_round_trip_and_validation(self) -> None:
        for strategy, subject in [(None, "orders-value"), (record_subject_name_strategy, "Order")]:
            options = {} if strategy is None else {"subject_name_strategy": strategy}
            s = self.prepared(
                JSONSchemaSerializer(self.client, ORDER_JSON, topic="orders", **options)
            )
            self.assertEqual(s.subject, subject)
            data = s({"id": 1, "item": "thé"})
            self.assertEqual(data, frame(1, '{"id":1,"item":"thé"}'.encode()))
            reader = JSONSchemaDeserializer(self.registry.client(self.clock))
            self.assertEqual(self.decode(reader, data), {"id": 1, "item": "thé"})
            with self.assertRaises(SerializationError):
                s({"item": "no id"})
        error = self.decode(reader, frame(1, b'{"item": "no id"}'))
        self.assertIsInstance(error, DeserializationError)
        self.assertIn("'id' is a required property", str(error))
        self.assertIsInstance(self.decode(reader, frame(1, b"{")), DeserializationError)

    def test_references(self) -> None:
        item = json.dumps(
            {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}
        )
        self.successResultOf(self.client.register("item", Schema(item, "JSON")))
        cart = json.dumps({"type": "object", "properties": {"item": {"$ref": "item.json"}}})
        ref = SchemaReference("item.json", "item", 1)
        s = self.prepared(
            JSONSchemaSerializer(self.client, Schema(cart, "JSON", (ref,)), topic="carts")
        )
        data = s({"item": {"sku": "a"}})
        with self.assertRaises(SerializationError):
            s({"item": {}})
        reader = JSONSchemaDeserializer(self.registry.client(self.clock))
        self.assertEqual(self.decode(reader, data), {"item": {"sku": "a"}})


class ProtobufTests(SerdeTestCase):
    def test_nested_messages_and_imports(self) -> None:
        s = self.prepared(ProtobufSerializer(self.client, Order, topic="orders"))
        self.assertEqual(
            self.successResultOf(self.client.get_subjects()), ["common.proto", "orders-value"]
        )
        registered = self.successResultOf(self.client.get_latest_version("orders-value"))
        self.assertEqual(
            registered.schema.references, (SchemaReference("common.proto", "common.proto", 1),)
        )
        order = Order(id=5, total=Money(cents=250))
        data = s(order)
        self.assertEqual(data, frame(2, b"\x02\x02" + order.SerializeToString()))
        self.assertEqual(
            self.decode(ProtobufDeserializer(self.registry.client(self.clock), Order), data), order
        )
        dynamic = self.decode(ProtobufDeserializer(self.registry.client(self.clock)), data)
        self.assertEqual((dynamic.id, dynamic.total.cents), (5, 250))
        lines = self.prepared(
            ProtobufSerializer(
                self.client, Line, topic="lines", subject_name_strategy=record_subject_name_strategy
            )
        )
        self.assertEqual(lines.subject, "shop.Order.Line")
        data = lines(Line(sku="x"))
        self.assertEqual(data[5:8], b"\x04\x02\x00")
        dynamic = self.decode(ProtobufDeserializer(self.registry.client(self.clock)), data)
        self.assertEqual(
            (type(dynamic).DESCRIPTOR.full_name, dynamic.sku), ("shop.Order.Line", "x")
        )

    def test_wrong_message_type_and_bad_payload(self) -> None:
        s = self.prepared(ProtobufSerializer(self.client, Order, topic="orders"))
        with self.assertRaises(SerializationError):
            s(Money(cents=1))
        reader = ProtobufDeserializer(self.client, Order)
        self.assertIsInstance(self.decode(reader, frame(2, b"\x02\x02\xff")), DeserializationError)
        self.assertIsInstance(self.decode(reader, frame(2, b"\x80")), DeserializationError)
        with self.assertRaises(TypeError):
            ProtobufSerializer(self.client, dict, topic="t")  # type: ignore[arg-type]
        text = self.successResultOf(
            self.client.register("text", Schema('syntax = "proto3";', "PROTOBUF"))
        )
        error = self.decode(ProtobufDeserializer(self.client), frame(text, b"\x00"))
        self.assertIn("give the deserializer the message class", str(error))


class ConsumerDecodingTests(ConsumerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.registry = InMemorySchemaRegistry()
        writer = self.registry.client(self.clock)
        self.serializer = AvroSerializer(writer, USER, topic="t")
        self.successResultOf(self.serializer.prepare())
        self.reader_client = self.registry.client(
            self.clock, retry_policy=lambda n: 0.5, max_attempts=3
        )

    def append(self, *names: str, raw: bytes | None = None) -> list[bytes]:
        values = [self.serializer({"name": n}) for n in names]
        if raw is not None:
            values.insert(1, raw)
        self.cluster.append("t", 1, values)
        return values

    def test_records_wait_for_their_schema_and_keep_their_order(self) -> None:
        self.append("a", "b")
        self.registry.unavailable = True
        p = Recorder()
        c = self.consumer(p, value_deserializer=AvroDeserializer(self.reader_client))
        self.stop(c)
        self.start(c, 0)
        self.clock.advance(0.1)
        self.assertEqual(p.calls, [])
        self.registry.unavailable = False
        self.clock.advance(0.5)
        self.append("c")
        self.clock.advance(0.1)
        self.assertEqual([m.message.value["name"] for m in p.messages], ["a", "b", "c"])
        self.assertEqual([m.offset for m in p.messages], [0, 1, 2])

    def test_a_registry_down_fails_only_its_records(self) -> None:
        values = self.append("a", "b")
        self.registry.unavailable = True
        p = Recorder()
        c = self.consumer(p, value_deserializer=AvroDeserializer(self.reader_client))
        self.stop(c)
        self.start(c, 0)
        for _ in range(30):
            self.clock.advance(0.1)
        errors = [m.message.value for m in p.messages]
        self.assertEqual([e.data for e in errors], values)
        self.assertIn("503", str(errors[0]))
        self.registry.unavailable = False
        self.append("c")
        self.clock.advance(0.1)
        self.assertEqual(p.messages[-1].message.value, {"name": "c"})

    def test_a_malformed_frame_fails_its_record_only(self) -> None:
        self.append("a", "b", raw=b"\x07junk")
        p = Recorder()
        c = self.consumer(p, value_deserializer=AvroDeserializer(self.reader_client))
        self.stop(c)
        self.start(c, 0)
        self.clock.advance(0.1)
        a, junk, b = (m.message.value for m in p.messages)
        self.assertEqual((a, b), ({"name": "a"}, {"name": "b"}))
        self.assertIsInstance(junk, DeserializationError)
        self.assertEqual(junk.data, b"\x07junk")

    def test_the_application_may_stop_at_a_bad_record(self) -> None:
        self.append("a", raw=b"\x07junk")
        c = self.consumer(value_deserializer=AvroDeserializer(self.reader_client, on_error="raise"))
        d = self.start(c, 0)
        self.clock.advance(0.1)
        self.failureResultOf(d, DeserializationError)

    def test_stopping_while_a_schema_is_fetched(self) -> None:
        self.append("a")
        self.registry.unavailable = True
        p = Recorder()
        c = self.consumer(
            p, key_deserializer=bytes, value_deserializer=AvroDeserializer(self.reader_client)
        )
        d = self.start(c, 0)
        self.clock.advance(0.1)
        self.assertIs(c._delivery.state, DeliveryState.PREPARING)
        self.assertIsNone(c.stop())
        self.successResultOf(d)
        self.assertIs(c._delivery.state, DeliveryState.IDLE)
        self.registry.unavailable = False
        self.clock.advance(5)
        self.assertEqual(p.calls, [])


class ShareConsumerDecodingTests(ShareTestCase):
    """A share consumer's batches wait for their schemas without blocking the reactor."""

    def setUp(self) -> None:
        super().setUp()
        self.registry = InMemorySchemaRegistry()
        self.serializer = AvroSerializer(self.registry.client(self.clock), USER, topic=TOPIC)
        self.successResultOf(self.serializer.prepare())
        self.reader_client = self.registry.client(
            self.clock, retry_policy=lambda n: 0.5, max_attempts=3
        )

    def append(self, *values: Any) -> None:
        self.cluster.append(
            TOPIC, 0, [v if isinstance(v, bytes) else self.serializer({"name": v}) for v in values]
        )

    def decoding(self, **options: Any) -> ShareConsumer:
        return self.consumer(
            "a", value_deserializer=AvroDeserializer(self.reader_client, **options)
        )

    def test_a_batch_waits_for_its_schema_and_is_acknowledged_decoded(self) -> None:
        self.append("a", "b")
        self.registry.unavailable = True
        c = self.consumer(
            "a",
            acknowledgement_mode="explicit",
            key_deserializer=bytes.decode,
            value_deserializer=AvroDeserializer(self.reader_client),
        )
        d = c.getmany(timeout_ms=500)
        self.advance(1.5)
        self.assertNoResult(d)
        self.assertTrue(self.clock.getDelayedCalls(), "the reactor keeps running")
        self.registry.unavailable = False
        self.advance(0.5)
        records = self.successResultOf(d)
        self.assertEqual([r.value for r in records], [{"name": "a"}, {"name": "b"}])
        self.assertEqual([r.offset for r in records], [0, 1])
        for r in records:
            c.acknowledge(r)
        self.assertEqual(self.pull(c), [])
        self.assertEqual(self.start_offset(0), 2)

    def test_a_registry_down_fails_only_its_records(self) -> None:
        self.append("a", b"\x07junk")
        self.registry.unavailable = True
        errors = self.pull(self.decoding(), timeout_ms=3000)
        self.assertEqual([type(r.value) for r in errors], [DeserializationError] * 2)
        self.assertIn("503", str(errors[0].value))
        self.assertEqual(errors[1].value.data, b"\x07junk")

    def test_a_raising_deserializer_fails_the_call_and_releases_the_batch(self) -> None:
        self.append("a", b"\x07junk")
        c = self.decoding(on_error="raise")
        d = c.getmany(timeout_ms=500)
        self.advance(2)
        self.failureResultOf(d, DeserializationError)
        d = c.getmany(timeout_ms=500)
        self.advance(2)
        self.failureResultOf(d, DeserializationError)
        self.assertEqual(self.start_offset(0), 0, "nothing accepted")
        state = self.coordinator.partitions["sg", TOPIC, 0]
        self.assertEqual(state.records[0].delivery_count, 2)

    def test_cancelling_while_a_schema_is_fetched_releases_the_batch(self) -> None:
        self.append("a")
        self.registry.unavailable = True
        c = self.decoding()
        d = c.getmany(timeout_ms=500)
        self.advance(1.2)
        self.assertNoResult(d)
        d.cancel()
        self.failureResultOf(d, CancelledError)
        self.registry.unavailable = False
        records = self.pull(c)
        self.assertEqual([(r.value, r.delivery_count) for r in records], [({"name": "a"}, 2)])
