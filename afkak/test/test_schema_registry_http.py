"""The in-memory registry served over HTTP on 127.0.0.1 (a child process), reached by
afkak's client over treq and by confluent-kafka's own client: each side reads what the
other wrote, the frames are byte-identical, and the registry's refusals reach both."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, ClassVar

from confluent_kafka.schema_registry import (
    Schema as CSchema,
    SchemaRegistryClient as ConfluentClient,
)
from confluent_kafka.schema_registry.avro import (
    AvroDeserializer as CAvroDeserializer,
    AvroSerializer as CAvroSerializer,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError as CSchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from twisted.internet import reactor
from twisted.trial.unittest import SynchronousTestCase

from afkak.schema_registry import (
    INCOMPATIBLE_SCHEMA,
    AvroDeserializer,
    AvroSerializer,
    JSONSchemaDeserializer,
    JSONSchemaSerializer,
    Schema,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from afkak.test.helpers import wait
from afkak.test.test_schema_registry import USER, USER_BAD, USER_V2
from afkak.test.test_schema_registry_serdes import ORDER_JSON

SERVE = """
import sys
from twisted.internet import reactor
from afkak.testing.schema_registry import InMemorySchemaRegistry

def listening(port):
    print(port.getHost().port, flush=True)

InMemorySchemaRegistry().listen(reactor).addCallback(listening)
reactor.run()
"""


class RegistryOverHTTPTests(SynchronousTestCase):
    server: ClassVar[subprocess.Popen[str]]
    url: ClassVar[str]
    started_pool: ClassVar[bool]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = subprocess.Popen(
            [sys.executable, "-c", SERVE], stdout=subprocess.PIPE, text=True
        )
        assert cls.server.stdout is not None
        cls.url = f"http://127.0.0.1:{int(cls.server.stdout.readline())}"
        # The Agent resolves the host in the reactor's thread pool, which starts
        # with reactor.run(): these tests iterate the reactor instead.
        pool = reactor.getThreadPool()  # type: ignore[attr-defined]
        cls.started_pool = not pool.started
        if cls.started_pool:
            pool.start()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.started_pool:
            reactor.getThreadPool().stop()  # type: ignore[attr-defined]
        cls.server.terminate()
        cls.server.wait(10)

    def setUp(self) -> None:
        self.ours = SchemaRegistryClient(self.url, reactor)
        self.theirs = ConfluentClient({"url": self.url})

    def test_avro_both_ways_byte_identical(self) -> None:
        ctx = SerializationContext("people", MessageField.VALUE)
        theirs = CAvroSerializer(self.theirs, USER_V2)
        written = theirs({"name": "ann", "age": 3}, ctx)
        ours = AvroSerializer(self.ours, USER_V2, topic="people")
        wait(ours.prepare())
        self.assertEqual(ours({"name": "ann", "age": 3}), written)
        reader = AvroDeserializer(SchemaRegistryClient(self.url, reactor))
        self.assertEqual(wait(reader.deserialize(written)), {"name": "ann", "age": 3})
        self.assertEqual(
            CAvroDeserializer(self.theirs)(ours({"name": "bob", "age": 4}), ctx),
            {"name": "bob", "age": 4},
        )

    def test_json_schema_from_afkak_read_by_confluent(self) -> None:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        ours = JSONSchemaSerializer(self.ours, ORDER_JSON, topic="orders")
        wait(ours.prepare())
        data = ours({"id": 7, "item": "pen"})
        ctx = SerializationContext("orders", MessageField.VALUE)
        their_reader = JSONDeserializer(ORDER_JSON, schema_registry_client=self.theirs)
        self.assertEqual(their_reader(data, ctx), {"id": 7, "item": "pen"})
        reader = JSONSchemaDeserializer(SchemaRegistryClient(self.url, reactor))
        self.assertEqual(wait(reader.deserialize(data)), {"id": 7, "item": "pen"})

    def test_an_incompatible_schema_is_refused_to_both(self) -> None:
        wait(self.ours.register("evolving-value", Schema(USER)))
        with self.assertRaises(SchemaRegistryError) as ours:
            wait(self.ours.register("evolving-value", Schema(USER_BAD)))
        self.assertEqual(
            (ours.exception.http_status, ours.exception.error_code), (409, INCOMPATIBLE_SCHEMA)
        )
        with self.assertRaises(CSchemaRegistryError) as theirs:
            self.theirs.register_schema("evolving-value", CSchema(USER_BAD, "AVRO"))
        self.assertEqual(theirs.exception.error_code, INCOMPATIBLE_SCHEMA)
        self.assertEqual(theirs.exception.error_message, ours.exception.message)
        latest: Any = self.theirs.get_latest_version("evolving-value")
        self.assertEqual(latest.version, 1)
