"""What ``import afkak`` and its lower layers pull in (issue 38: a Spark planner's start-up).

Each fresh Python process Spark starts for a data source pays for afkak's imports
before it asks Kafka anything; so does every command-line run.  These tests pin
what is *not* imported: counts of modules, never times.  One fresh interpreter
takes the three snapshots, one import after the other.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import unittest
from functools import cache

from afkak.records._varint import ENC, TABLE_LIMIT, encode_zigzag

_SNAPSHOTS = """
import json, sys
seen = []
import afkak
seen.append(sorted(sys.modules))
import afkak.connection
seen.append(sorted(sys.modules))
import afkak.client
seen.append(sorted(sys.modules))
from afkak import KafkaClient, Producer
seen.append(sorted(sys.modules))
print(json.dumps(seen))
"""


#: Modules a process that only looks up offsets, in plaintext, has no use for.
_SECURITY = (
    "OpenSSL",
    "cryptography",
    "afkak.connection._gssapi",
    "afkak.connection._keystores",
    "afkak.connection._msk_iam",
    "afkak.connection._oauth_oidc",
    "afkak.connection._sasl",
    "afkak.connection._tls",
)
_ON_USE = frozenset(
    {
        "OpenSSL",
        "cryptography",
        "twisted.internet.endpoints",
        "twisted.internet.ssl",
        "afkak.client._commit_calls",
        "afkak.client._fetch_call",
        "afkak.client._produce_call",
        "afkak.client._produce_split",
        "afkak.client._statistics",
        "afkak.client._telemetry",
        "afkak.connection._gssapi",
        "afkak.connection._keystores",
        "afkak.connection._msk_iam",
        "afkak.connection._oauth_oidc",
        "afkak.connection._sasl",
        "afkak.connection._sasl_mechanisms",
        "afkak.connection._tls",
        "afkak.producer",
        "afkak.records.batch",
        "afkak.records.builder",
        "afkak.records.reader",
    }
)


@cache
def _loaded() -> tuple[frozenset[str], ...]:
    """The modules a fresh interpreter holds after ``import afkak``, then after
    ``import afkak.connection``, ``import afkak.client``, and
    ``from afkak import KafkaClient, Producer``."""
    out = subprocess.run(
        [sys.executable, "-c", _SNAPSHOTS], check=True, capture_output=True, text=True
    ).stdout
    return tuple(frozenset(names) for names in json.loads(out.splitlines()[-1]))


def _runner_loads() -> frozenset[str]:
    """The modules a fresh interpreter holds once it has imported what the streaming
    source's runner imports before it asks Kafka anything (in plaintext)."""
    script = "import sys, afkak.spark, afkak.spark._plain_lookups; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return frozenset(out.stdout.split())


#: The streaming runner's calls, looking up offsets in a fake cluster over its sockets.
_RUNNER_LOOKUPS = """
import sys
from afkak.spark._options import parse_read_options
from afkak.spark._plain_lookups import PlainLookups
from afkak.spark._source import StreamReader
from afkak.test.test_spark_plain_lookups import ClusterSocket
from afkak.testing import FakeKafkaCluster

cluster = FakeKafkaCluster(brokers=1)
cluster.create_topic("t", partitions=2)
opts = parse_read_options({"kafka.bootstrap.servers": cluster.bootstrap_hosts, "subscribe": "t"},
                          streaming=True)
reader = StreamReader(opts, None)
assert isinstance(reader.kafka, PlainLookups)
reader._plain = PlainLookups(None, lambda host, port, _: ClusterSocket(cluster, host, port))
reader.prepareForTriggerAvailableNow()
start = reader.initialOffset()
reader.partitions(start, reader.latestOffset(start, reader.getDefaultReadLimit()))
print(" ".join(sys.modules))
"""


class ImportCostTests(unittest.TestCase):
    def test_import_afkak_loads_only_what_is_used(self) -> None:
        """``import afkak`` is cheap; a public name is imported on first use."""
        package, _, _, used = _loaded()
        for heavy in ("afkak.group", "afkak.admin", "afkak.producer", "afkak.client"):
            self.assertNotIn(heavy, package)
        self.assertIn("afkak.producer", used)
        self.assertNotIn("afkak.group", used)
        self.assertNotIn("afkak.admin", used)

    def test_every_public_name_resolves(self) -> None:
        import afkak

        for name in afkak.__all__:
            self.assertIsNotNone(getattr(afkak, name), name)
        self.assertLessEqual(set(afkak.__all__), set(dir(afkak)))
        with self.assertRaises(AttributeError):
            afkak.NoSuchName  # type: ignore[attr-defined]  # noqa: B018

    def test_the_connection_layer_imports_no_request_it_does_not_send(self) -> None:
        """The throttling table names APIs by key: importing it imports no request module
        (it was forty of them, a quarter of afkak's import time)."""
        connection = _loaded()[1]
        messages = {m for m in connection if m.startswith("afkak.protocol.messages.")}
        # The headers and what a connection sends as it opens (ApiVersions, SASL, Metadata).
        self.assertLessEqual(len(messages), 10, sorted(messages))

    def test_the_oauth_module_imports_no_http_client(self) -> None:
        self.assertNotIn("twisted.web.client", _loaded()[1])

    def test_the_client_imports_what_a_plaintext_offset_lookup_uses(self) -> None:
        """``import afkak.client`` leaves produce, fetch, commits, telemetry, statistics,
        SASL, TLS and Twisted's endpoints (pyOpenSSL) to their first use: a Spark
        planner or the streaming source's runner only looks up offsets."""
        client = _loaded()[2]
        on_use = sorted(client & _ON_USE)
        self.assertEqual(on_use, [])
        self.assertIn("afkak.client._list_offsets_call", client)
        self.assertIn("afkak.connection._connection", client)

    def test_the_spark_runner_imports_no_reactor_tls_producer_or_records(self) -> None:
        """Spark's streaming-source runner connects and asks for Metadata and ListOffsets
        over plain sockets: it imports neither Twisted's reactor (which imports pyOpenSSL),
        nor the client's module for tasks, nor the producer, nor the record codecs."""
        if importlib.util.find_spec("pyspark") is None:
            raise unittest.SkipTest("needs the spark extra")
        runner = _runner_loads()
        unused = _ON_USE | {"twisted.internet.reactor", "afkak.spark._worker"}
        self.assertEqual(sorted(runner & unused), [])

    def test_the_spark_runner_looks_up_offsets_without_the_reactor(self) -> None:
        """In plaintext the runner's calls (``prepareForTriggerAvailableNow``,
        ``initialOffset``, ``latestOffset``, ``partitions``) go over plain sockets: no
        Twisted reactor, which imports pyOpenSSL and ``cryptography``, and no client for
        tasks (``afkak.spark._worker``), which they imported before."""
        if importlib.util.find_spec("pyspark") is None:
            raise unittest.SkipTest("needs the spark extra")
        out = subprocess.run(
            [sys.executable, "-c", _RUNNER_LOOKUPS], check=True, capture_output=True, text=True
        ).stdout
        loaded = set(out.split())
        heavy = ["OpenSSL", "cryptography", "twisted.internet.reactor", "afkak.spark._worker"]
        self.assertEqual([m for m in heavy if m in loaded], [])

    def test_the_connection_package_leaves_authentication_and_tls_to_their_use(self) -> None:
        connection = _loaded()[1]
        self.assertEqual(sorted(m for m in connection if m.startswith(_SECURITY)), [])

    def test_the_varint_table_is_encode_zigzag(self) -> None:
        self.assertEqual(len(ENC), TABLE_LIMIT)
        self.assertEqual(ENC, [encode_zigzag(n) for n in range(TABLE_LIMIT)])
