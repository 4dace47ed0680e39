"""The streaming runner's lookups over blocking sockets, against the fake cluster.

A :class:`ClusterSocket` is a blocking socket on the fake cluster's in-memory
connection (its deliveries are synchronous, so every answer is there when
``sendall`` returns).  Skipped without PySpark and pyarrow (failing instead
when CI is "true").
"""

from __future__ import annotations

import os
import pickle
from typing import Any

from twisted.internet.protocol import Factory, Protocol
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.common import OFFSET_EARLIEST, OFFSET_LATEST, TopicAndPartition as TP
from afkak.protocol.messages import ListOffsetsRequest, MetadataRequest
from afkak.testing import FakeKafkaCluster

try:
    from afkak.spark._options import ByTimestamp, parse_read_options
    from afkak.spark._plain_lookups import PlainLookups
    from afkak.spark._source import StreamReader
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None


class _Received(Protocol):
    def __init__(self) -> None:
        self.buffer = bytearray()
        self.closed = False

    def dataReceived(self, data: bytes) -> None:
        self.buffer += data

    def connectionLost(self, reason: Any = None) -> None:
        self.closed = True


class ClusterSocket:
    """A connected blocking socket, in memory, to a broker of a fake cluster."""

    def __init__(self, cluster: FakeKafkaCluster, host: str, port: int) -> None:
        self.peer = _Received()
        connected = cluster.endpoint_factory(None, host, port).connect(
            Factory.forProtocol(lambda: self.peer)
        )
        failures: list[Any] = []
        connected.addErrback(failures.append)
        if failures:
            raise ConnectionRefusedError(f"{host}:{port}")

    def sendall(self, data: bytes) -> None:
        assert self.peer.transport is not None
        self.peer.transport.write(data)

    def recv(self, size: int) -> bytes:
        chunk = bytes(self.peer.buffer[:size])
        del self.peer.buffer[:size]
        return chunk  # b"": nothing more will come (deliveries are synchronous)

    def close(self) -> None:
        assert self.peer.transport is not None
        self.peer.transport.loseConnection()


class FallbackLookups:
    """The client's lookups, standing in: records what reached it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def discover(self, opts: Any) -> list[TP]:
        self.calls.append("discover")
        return [TP("client", 0)]

    def offsets_at(self, config: Any, partitions: Any, when: int, isolation_level: int = 0) -> Any:
        self.calls.append("offsets_at")
        return dict.fromkeys(partitions, -7)

    def resolve_offsets(self, opts: Any, spec: Any, partitions: Any, name: str) -> Any:
        raise AssertionError("resolved by the plain lookups themselves")


class PlainLookupsTests(SynchronousTestCase):
    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        self.cluster = FakeKafkaCluster(brokers=2)
        self.cluster.create_topic("t", partitions=3)
        self.cluster.append("t", 0, [b"a", b"b"])
        self.cluster.append("t", 1, [b"c"])
        self.client = FallbackLookups()
        self.connected: list[tuple[str, int]] = []

        def connect(host: str, port: int, timeout: float) -> ClusterSocket:
            self.connected.append((host, port))
            return ClusterSocket(self.cluster, host, port)

        self.lookups = PlainLookups(lambda: self.client, connect)

    def opts(self, **options: str) -> Any:
        """Read options subscribing to ``t`` unless *options* subscribe otherwise."""
        boot = {"kafka.bootstrap.servers": self.cluster.bootstrap_hosts}
        if "subscribePattern" not in options:
            options["subscribe"] = "t"
        return parse_read_options({**boot, **options}, streaming=True)

    def sent(self, request_class: Any) -> int:
        return sum(isinstance(r.request, request_class) for r in self.cluster.requests_seen)

    def test_partitions_and_offsets_without_the_client(self) -> None:
        opts = self.opts()
        partitions = self.lookups.discover(opts)
        self.assertEqual(partitions, [TP("t", 0), TP("t", 1), TP("t", 2)])
        latest = self.lookups.offsets_at(opts.client, partitions, OFFSET_LATEST)
        earliest = self.lookups.offsets_at(opts.client, partitions, OFFSET_EARLIEST)
        self.assertEqual(latest, {TP("t", 0): 2, TP("t", 1): 1, TP("t", 2): 0})
        self.assertEqual(earliest, dict.fromkeys(partitions, 0))
        self.assertEqual(self.client.calls, [])
        # one ListOffsets per leader and lookup; connections kept between lookups
        self.assertEqual(self.sent(ListOffsetsRequest), 4)
        self.assertEqual(len(self.connected), len(set(self.connected)))

    def test_a_pattern_and_starting_offsets(self) -> None:
        self.cluster.create_topic("__internal")
        opts = self.opts(subscribePattern="t|__internal", startingOffsets="latest")
        partitions = self.lookups.discover(opts)
        self.assertEqual([tp.topic for tp in partitions], ["t", "t", "t"])
        found = self.lookups.resolve_offsets(opts, opts.starting, partitions, "startingOffsets")
        self.assertEqual(found, {TP("t", 0): 2, TP("t", 1): 1, TP("t", 2): 0})

    def test_an_error_code_goes_to_the_client(self) -> None:
        """The client retries what Kafka calls retriable (here a leader that moved)."""
        opts = self.opts()
        partitions = self.lookups.discover(opts)
        self.cluster.fail_next(ListOffsetsRequest, 6)  # NOT_LEADER_OR_FOLLOWER
        found = self.lookups.offsets_at(opts.client, partitions, OFFSET_LATEST)
        self.assertEqual(set(found.values()), {-7})
        self.assertEqual(self.client.calls, ["offsets_at"])
        # and the next lookup is plain again, on new connections
        self.assertEqual(
            self.lookups.offsets_at(opts.client, [TP("t", 0)], OFFSET_LATEST)[TP("t", 0)], 2
        )

    def test_a_lost_connection_goes_to_the_client(self) -> None:
        self.cluster.drop_next(MetadataRequest)
        self.assertEqual(self.lookups.discover(self.opts()), [TP("client", 0)])
        self.assertEqual(self.client.calls, ["discover"])

    def test_no_broker_listening_goes_to_the_client(self) -> None:
        opts = parse_read_options(
            {"kafka.bootstrap.servers": "nowhere:9092", "subscribe": "t"}, streaming=True
        )
        self.assertEqual(self.lookups.discover(opts), [TP("client", 0)])

    def test_tls_and_sasl_go_to_the_client(self) -> None:
        opts = self.opts(**{"kafka.security.protocol": "SASL_PLAINTEXT"}, **SASL)
        self.assertEqual(self.lookups.discover(opts), [TP("client", 0)])
        self.assertEqual(
            self.lookups.offsets_at(opts.client, [TP("t", 0)], OFFSET_LATEST), {TP("t", 0): -7}
        )
        self.assertEqual(self.connected, [])

    def test_timestamps(self) -> None:
        opts = self.opts(startingTimestamp="0", startingOffsetsByTimestampStrategy="latest")
        self.assertIsInstance(opts.starting, ByTimestamp)
        partitions = self.lookups.discover(opts)
        found = self.lookups.resolve_offsets(opts, opts.starting, partitions, "startingOffsets")
        self.assertEqual(found, dict.fromkeys(partitions, 0))
        self.assertEqual(self.client.calls, [])

    def test_the_stream_reader_pickles_without_its_sockets(self) -> None:
        from pyspark.sql.types import StructType

        reader = StreamReader(self.opts(), StructType([]))
        reader._plain = self.lookups
        self.assertIsNone(pickle.loads(pickle.dumps(reader))._plain)


SASL = {"kafka.sasl.username": "u", "kafka.sasl.password": "p"}
