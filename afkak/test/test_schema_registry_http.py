"""The in-memory registry served over HTTP on 127.0.0.1 (a child process), reached by
afkak's client over treq and by confluent-kafka's own client: each side reads what the
other wrote, the frames are byte-identical, and the registry's refusals reach both."""

from __future__ import annotations

import subprocess
import sys
import tempfile
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
from twisted.web.server import Site

from afkak.connection import TLS
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
from afkak.test.brokers.certificates import CertificateAuthority
from afkak.test.helpers import wait
from afkak.test.test_client_tls import tls_directory
from afkak.test.test_schema_registry import USER, USER_BAD, USER_V2
from afkak.test.test_schema_registry_serdes import ORDER_JSON
from afkak.testing.schema_registry import InMemorySchemaRegistry

SERVE = """
import sys
from twisted.internet import reactor
from twisted.web.server import Site
from afkak.testing.schema_registry import InMemorySchemaRegistry

def listening(port):
    print(port.getHost().port, flush=True)

InMemorySchemaRegistry().listen(reactor).addCallback(listening)
reactor.run()
"""


class ReactorThreadsTestCase(SynchronousTestCase):
    """The Agent resolves the host in the reactor's thread pool, which starts with
    reactor.run(): these tests iterate the reactor instead.  A stopped pool cannot
    start again: the next class gets a new one."""

    started_pool: ClassVar[bool]

    @classmethod
    def setUpClass(cls) -> None:
        pool = reactor.getThreadPool()  # type: ignore[attr-defined]
        cls.started_pool = not pool.started
        if cls.started_pool:
            pool.start()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.started_pool:
            reactor.getThreadPool().stop()  # type: ignore[attr-defined]
            reactor.threadpool = None  # type: ignore[attr-defined]


class ServedRegistryTestCase(ReactorThreadsTestCase):
    """The in-memory registry served by a child process at ``url``, for the class."""

    server: ClassVar[subprocess.Popen[str]]
    url: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = subprocess.Popen(
            [sys.executable, "-c", SERVE], stdout=subprocess.PIPE, text=True
        )
        assert cls.server.stdout is not None
        cls.url = f"http://127.0.0.1:{int(cls.server.stdout.readline())}"
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls.server.terminate()
        cls.server.wait(10)


class RegistryOverHTTPTests(ServedRegistryTestCase):
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


class RegistryOverTLSTests(ReactorThreadsTestCase):
    """The client's ``tls`` against the in-memory registry behind HTTPS on 127.0.0.1
    that asks for a client certificate signed by the test CA."""

    def setUp(self) -> None:
        directory = tls_directory(self)
        ca = CertificateAuthority(directory)
        self.ca = ca.cert
        self.client_cert = ca.issue("client", "app")
        self.by_name = ca.issue("by-name", "registry.example", ("registry.example",))
        self.stranger = CertificateAuthority(tempfile.mkdtemp(dir=directory), "other CA").cert
        self.registry = InMemorySchemaRegistry()
        self.url = self.serve(ca.issue("registry", "127.0.0.1", ("127.0.0.1",)), self.ca)

    def serve(self, issued: Any, client_ca: str | None) -> str:
        """The registry over HTTPS with *issued*'s certificate; with *client_ca*, a
        client certificate it signed is required."""
        from twisted.internet.ssl import Certificate, CertificateOptions, PrivateCertificate

        with open(issued.cert, "rb") as c, open(issued.key, "rb") as k:
            private = PrivateCertificate.loadPEM(c.read() + b"\n" + k.read())
        trust = {}
        if client_ca is not None:
            with open(client_ca, "rb") as f:
                trust["trustRoot"] = Certificate.loadPEM(f.read())
        options = CertificateOptions(
            privateKey=private.privateKey.original, certificate=private.original, **trust
        )
        port = reactor.listenSSL(  # type: ignore[attr-defined]
            0, Site(self.registry.resource), options, interface="127.0.0.1"
        )
        self.addCleanup(port.stopListening)
        return f"https://127.0.0.1:{port.getHost().port}"

    def client(self, tls: TLS | None) -> SchemaRegistryClient:
        return SchemaRegistryClient(self.url, reactor, tls=tls, max_attempts=1, timeout=10)

    def mutual(self, **options: Any) -> TLS:
        return TLS(self.ca, (self.client_cert.cert, self.client_cert.key), **options)

    def test_mutual_tls_round_trip(self) -> None:
        serializer = AvroSerializer(self.client(self.mutual()), USER, topic="people")
        self.assertEqual(wait(serializer.prepare()), 1)
        reader = AvroDeserializer(self.client(self.mutual()))
        self.assertEqual(wait(reader.deserialize(serializer({"name": "ann"}))), {"name": "ann"})

    def test_refused_without_a_client_certificate(self) -> None:
        with self.assertRaises(SchemaRegistryError) as raised:
            wait(self.client(TLS(self.ca)).get_subjects())
        self.assertIn("SSL", str(raised.exception))

    def test_a_registry_signed_by_another_ca_is_not_trusted(self) -> None:
        for tls in (None, TLS(self.stranger, (self.client_cert.cert, self.client_cert.key))):
            with self.assertRaises(SchemaRegistryError) as raised:
                wait(self.client(tls).get_subjects())
            self.assertIn("certificate verify failed", str(raised.exception))

    def test_host_name_verification(self) -> None:
        """A certificate naming another host fails, unless verification is off."""
        self.url = self.serve(self.by_name, None)
        with self.assertRaises(SchemaRegistryError):
            wait(self.client(TLS(self.ca)).get_subjects())
        self.assertEqual(wait(self.client(TLS(self.ca, verify_hostname=False)).get_subjects()), [])

    def test_bad_tls_arguments(self) -> None:
        self.assertRaises(TypeError, SchemaRegistryClient, self.url, reactor, tls=self.ca)
        self.assertRaises(
            ValueError, SchemaRegistryClient, self.url, reactor, tls=TLS(), http=object()
        )
