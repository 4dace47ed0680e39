"""``afkak consume --value-format/--key-format --schema-registry`` and ``produce``'s
schema'd lines, against the fake cluster and the in-memory registry, on a Clock."""

from __future__ import annotations

import io
import json
import os
import tempfile
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from afkak.cli._output import USAGE, CommandError, Output
from afkak.cli._parser import build_parser
from afkak.cli._schema_formats import from_json_line, serializer
from afkak.cli._session import Session
from afkak.schema_registry import (
    AvroSerializer,
    JSONSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
)
from afkak.test.test_admin import on_fake_cluster
from afkak.test.test_schema_registry import USER
from afkak.test.test_schema_registry_serdes import ORDER_JSON, Money, Order
from afkak.testing.schema_registry import InMemorySchemaRegistry


class _Reactor(Clock):
    """A Clock with the system event triggers ``consume -G`` sets for Ctrl-C."""

    def addSystemEventTrigger(self, *args: Any) -> object:
        return args

    def removeSystemEventTrigger(self, trigger: object) -> None:
        pass


class SchemaFormatCommandTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = _Reactor()
        self.clock, self.cluster, self.client = on_fake_cluster(self)
        self.cluster.create_topic("t", partitions=1)
        self.registry = InMemorySchemaRegistry()
        self.writer = self.registry.client(self.clock)

    def session(self, *argv: str) -> Session:
        args = build_parser().parse_args([*argv[:1], *argv[1:]])
        session = Session(args, self.clock, self.client)
        session.out = Output(args.json, io.StringIO())
        session.schema_registry = self.registry.client(self.clock)
        return session

    def run_command(self, *argv: str) -> tuple[int, list[Any]]:
        session = self.session(*argv)
        d = Deferred.fromCoroutine(session.args.run(session))
        for _ in range(100):
            if d.called:
                break
            self.clock.advance(0.1)
        code = self.successResultOf(d)
        text = session.out.stream.getvalue()
        return code, [json.loads(line) for line in text.splitlines()]

    def prepared(self, s: Any) -> Any:
        self.successResultOf(s.prepare())
        return s

    def test_consume_prints_decoded_records_as_json(self) -> None:
        values = self.prepared(AvroSerializer(self.writer, USER, topic="t"))
        keys = self.prepared(JSONSchemaSerializer(self.writer, ORDER_JSON, topic="t", is_key=True))
        self.cluster.append(
            "t",
            0,
            [values({"name": "ann"}), b"\x00junk", values({"name": "bob"})],
            keys=[keys({"id": 1}), None, keys({"id": 2})],
        )
        for group in ([], ["-G", "g"]):
            code, out = self.run_command(
                "--json",
                "consume",
                "t",
                "-o",
                "beginning",
                "-e",
                *group,
                "--value-format",
                "avro",
                "--key-format",
                "json-schema",
                "--schema-registry",
                "http://unused",
            )
            self.assertEqual(code, 0)
            self.assertEqual(
                [(r["offset"], r["key"], r["value"]) for r in out],
                [
                    (0, {"id": 1}, {"name": "ann"}),
                    (1, None, "AGp1bms="),
                    (2, {"id": 2}, {"name": "bob"}),
                ],
                group,
            )

    def test_consume_protobuf_without_the_class(self) -> None:
        values = self.prepared(ProtobufSerializer(self.writer, Order, topic="t"))
        self.cluster.append("t", 0, [values(Order(id=3, total=Money(cents=9)))])
        _, [record] = self.run_command(
            "--json",
            "consume",
            "t",
            "-o",
            "beginning",
            "-e",
            "--value-format",
            "protobuf",
            "--schema-registry",
            "http://unused",
        )
        self.assertEqual(record["value"], {"id": "3", "total": {"cents": "9"}})

    def test_formats_need_a_registry(self) -> None:
        session = self.session("consume", "t", "--value-format", "avro", "-e")
        session.schema_registry = None
        d = Deferred.fromCoroutine(session.args.run(session))
        for _ in range(20):
            self.clock.advance(0.1)
        self.assertEqual(self.failureResultOf(d, CommandError).value.code, USAGE)

    def test_produce_lines_are_json_written_with_the_schema(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".avsc", delete=False) as f:
            f.write(USER)
        self.addCleanup(os.unlink, f.name)
        session = self.session(
            "produce",
            "t",
            "--value-format",
            "avro",
            "--value-schema",
            f.name,
            "--schema-registry",
            "http://unused",
        )
        made = self.successResultOf(Deferred.fromCoroutine(serializer(session, "avro", False)))
        self.assertEqual(from_json_line(made, b'{"name": "ann"}'), values_of(made, {"name": "ann"}))
        with self.assertRaises(CommandError):
            from_json_line(made, b'{"name": 1}')
        with self.assertRaises(CommandError):
            from_json_line(made, b"not json")
        latest = self.session("produce", "t", "--value-format", "avro", "--schema-registry", "x")
        made = self.successResultOf(Deferred.fromCoroutine(serializer(latest, "avro", False)))
        self.assertEqual(made.schema_id, 1)
        refused = Deferred.fromCoroutine(serializer(latest, "json-schema", False))
        self.assertEqual(self.failureResultOf(refused, CommandError).value.code, USAGE)

    def test_produce_protobuf_lines_with_the_latest_schema(self) -> None:
        self.prepared(ProtobufSerializer(self.writer, Order, topic="t"))
        session = self.session(
            "produce", "t", "--value-format", "protobuf", "--schema-registry", "http://unused"
        )
        made = self.successResultOf(Deferred.fromCoroutine(serializer(session, "protobuf", False)))
        # The file's first message (shop.Other), as kafka-protobuf-console-producer writes.
        data = from_json_line(made, b'{"x": "hi"}')
        self.assertEqual(data[:6], b"\x00\x00\x00\x00\x02\x00")
        decoded = self.successResultOf(ProtobufDeserializer(self.writer).deserialize(data))
        self.assertEqual((type(decoded).DESCRIPTOR.full_name, decoded.x), ("shop.Other", "hi"))
        with self.assertRaises(CommandError):
            from_json_line(made, b'{"nope": 1}')


def values_of(made: Any, record: Any) -> bytes:
    return made(record)
