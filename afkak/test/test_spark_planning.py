"""afkak.spark without Spark running: options, offset planning, row conversion, the bridge.

Skipped without PySpark and pyarrow (failing instead when CI is "true").
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import random
import subprocess
import sys
import textwrap
from functools import cache
from inspect import signature
from typing import Any

from hypothesis import given, settings, strategies as st
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.common import OFFSET_EARLIEST, TopicAndPartition as TP
from afkak.records import Record, build_batch, read_batches
from afkak.records.batch import RecordColumns
from afkak.test.test_records import CODECS, TS, patch_batch, record_sets

try:
    import pyarrow as pa

    from afkak.spark._kafka import KeyHashPartitioner, make_producer, send
    from afkak.spark._options import (
        ByTimestamp,
        ClientConfig,
        OptionError,
        parse_read_options,
        parse_write_options,
    )
    from afkak.spark._planning import (
        DataLossError,
        OffsetRange,
        cap_ranges,
        from_json,
        pack_ranges,
        ranges_between,
        rate_limit,
        resolve,
        split_ranges,
        to_json,
        too_few,
    )
    from afkak.spark._rows import (
        HEADERS_TYPE,
        Outgoing,
        RowError,
        arrow_schema,
        arrow_to_outgoing,
        check_write_schema,
        chunks_by_key,
        read_schema,
        records_to_arrow,
    )
    from afkak.spark._worker import fetch_bytes, to_arrow
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}
PRODUCE = 0


def token_provider() -> object:
    """An OAUTHBEARER token provider named by module:function in a Spark option."""
    from afkak.connection import OAuthBearerToken

    return OAuthBearerToken("spark-token", 60.0)


def ipc_round_trip(batch: pa.RecordBatch) -> pa.RecordBatch:
    """*batch* written as an Arrow IPC stream and read back (as Spark's worker sends it)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    (read,) = pa.ipc.open_stream(sink.getvalue())
    return read


class Case(SynchronousTestCase):
    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)


class ReadOptionTests(Case):
    def test_defaults(self) -> None:
        batch = parse_read_options({**BOOT, "subscribe": "a, b,a"}, streaming=False)
        self.assertEqual(batch.topics, ("a", "b"))
        self.assertEqual((batch.starting, batch.ending), (-2, -1))
        self.assertEqual(batch.client, ClientConfig("127.0.0.1:9092"))
        self.assertTrue(batch.fail_on_data_loss)
        stream = parse_read_options({**BOOT, "subscribe": "a"}, streaming=True)
        self.assertEqual(stream.starting, -1)

    def test_min_offsets_per_trigger_and_max_trigger_delay(self) -> None:
        stream = parse_read_options({**BOOT, "subscribe": "a"}, streaming=True)
        self.assertEqual(
            (stream.min_offsets_per_trigger, stream.max_trigger_delay_ms), (None, 900_000)
        )
        for delay, ms in [("30s", 30_000), ("15m", 900_000), ("250ms", 250), ("2h", 7_200_000),
                          ("1d", 86_400_000), ("1500", 1500), (" 2 min ", 120_000)]:  # fmt: skip
            opts = parse_read_options(
                {**BOOT, "subscribe": "a", "minOffsetsPerTrigger": "50", "maxTriggerDelay": delay},
                streaming=True,
            )
            self.assertEqual((opts.min_offsets_per_trigger, opts.max_trigger_delay_ms), (50, ms))

    def test_subscribe_pattern(self) -> None:
        opts = parse_read_options({**BOOT, "subscribePattern": "ev.*"}, streaming=True)
        self.assertEqual((opts.pattern, opts.topics, opts.assigned), ("ev.*", None, None))

    def test_timestamps(self) -> None:
        stamps = json.dumps({"t": {"0": 5, "1": 7}})
        opts = parse_read_options(
            {
                **BOOT,
                "subscribe": "t",
                "startingOffsetsByTimestamp": stamps,
                "startingOffsetsByTimestampStrategy": "Latest",
                "endingTimestamp": "9",
            },
            streaming=False,
        )
        self.assertEqual(opts.starting, ByTimestamp({TP("t", 0): 5, TP("t", 1): 7}, "latest"))
        self.assertEqual(opts.ending, ByTimestamp(9, "latest"))
        first = parse_read_options(  # Spark's order: startingTimestamp wins
            {
                **BOOT,
                "subscribe": "t",
                "startingTimestamp": "3",
                "startingOffsetsByTimestamp": stamps,
            },
            streaming=True,
        )
        self.assertEqual(first.starting, ByTimestamp(3, "error"))

    def test_spark_names_case_insensitive(self) -> None:
        opts = parse_read_options(
            {
                "Bootstrap.Servers": "h:1",
                "assign": json.dumps({"t": [1, 0], "u": [3]}),
                "startingOffsets": json.dumps({"t": {"0": 5, "1": -2}, "u": {"3": 7}}),
                "endingOffsets": json.dumps({"t": {"0": -1, "1": 9}, "u": {"3": 8}}),
                "MINPARTITIONS": "4",
                "failOnDataLoss": "False",
                "includeHeaders": "true",
                "kafka.client.id": "me",
                "kafka.request.timeout.ms": "5000",
                "kafka.max.partition.fetch.bytes": "1024",
                "kafkaConsumer.pollTimeoutMs": "2500",
                "checkpointLocation": "/ignored",
            },
            streaming=False,
        )
        self.assertEqual(opts.assigned, (TP("t", 0), TP("t", 1), TP("u", 3)))
        self.assertEqual(opts.starting, {TP("t", 0): 5, TP("t", 1): -2, TP("u", 3): 7})
        self.assertEqual(opts.ending, {TP("t", 0): -1, TP("t", 1): 9, TP("u", 3): 8})
        self.assertEqual((opts.min_partitions, opts.fail_on_data_loss), (4, False))
        self.assertTrue(opts.include_headers)
        self.assertEqual(opts.client, ClientConfig("h:1", "me", 5000))
        self.assertEqual((opts.max_partition_fetch_bytes, opts.poll_timeout), (1024, 2.5))

    def test_refused(self) -> None:
        bad = [
            ({"subscribe": "t"}, "bootstrap"),
            ({**BOOT}, "subscribe"),
            ({**BOOT, "subscribe": "t", "assign": '{"t": [0]}'}, "subscribe"),
            ({**BOOT, "subscribe": " , "}, "no topic"),
            ({**BOOT, "assign": "[1]"}, "assign"),
            ({**BOOT, "assign": '{"t": [-1]}'}, "assign"),
            ({**BOOT, "subscribe": "t", "startingOffsets": "latest"}, "startingOffsets"),
            ({**BOOT, "subscribe": "t", "endingOffsets": "earliest"}, "endingOffsets"),
            ({**BOOT, "subscribe": "t", "endingOffsets": '{"t": {"0": -2}}'}, "-2"),
            ({**BOOT, "subscribe": "t", "startingOffsets": '{"t": {"x": 1}}'}, "partition"),
            ({**BOOT, "subscribe": "t", "startingOffsets": "{nope"}, "JSON"),
            ({**BOOT, "subscribe": "t", "minPartitions": "0"}, "at least 1"),
            ({**BOOT, "subscribe": "t", "failOnDataLoss": "yes"}, "true or false"),
            ({**BOOT, "subscribe": "t", "kafka.sasl.kerberos.service.name": "k"}, "unsupported"),
            ({**BOOT, "subscribe": "t", "subscribePattern": "t.*"}, "subscribePattern"),
            ({**BOOT, "subscribePattern": "t(["}, "not a regular expression"),
            ({**BOOT, "subscribe": "t", "minOffsetsPerTrigger": "0"}, "at least 1"),
            ({**BOOT, "subscribe": "t", "maxTriggerDelay": "soon"}, "duration"),
            ({**BOOT, "subscribe": "t", "maxTriggerDelay": "5 weeks"}, "duration"),
            ({**BOOT, "subscribe": "t", "startingTimestamp": "-1"}, "at least 0"),
            ({**BOOT, "subscribe": "t", "endingOffsetsByTimestamp": "latest"}, "cannot be"),
            (
                {**BOOT, "subscribe": "t", "startingOffsetsByTimestampStrategy": "x"},
                "error or latest",
            ),
            ({**BOOT, "subscribe": "t", "groupIdPrefix": "g"}, "'groupIdPrefix'"),
        ]
        for options, words in bad:
            with self.assertRaises(OptionError, msg=options) as caught:
                parse_read_options(options, streaming=False)
            self.assertIn(words, str(caught.exception))
        with self.assertRaises(OptionError):
            parse_read_options(
                {**BOOT, "subscribe": "t", "endingOffsets": "latest"}, streaming=True
            )

    def test_security_options(self) -> None:
        from afkak.connection import TLS, Plain, Scram

        # TLS checks that its CA file exists.
        ca = self.mktemp()
        with open(ca, "w") as f:
            f.write("a CA")
        secret = "pw-in-jaas-93c1"
        jaas = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="alice" password="{secret}";'
        )
        opts = parse_read_options(
            {
                **BOOT,
                "subscribe": "t",
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": jaas,
                "kafka.ssl.ca.location": ca,
            },
            streaming=False,
        )
        kwargs = opts.client.security.client_kwargs()
        self.assertEqual(kwargs["sasl"], Plain("alice", secret))
        self.assertEqual(kwargs["tls"], TLS(ca))
        self.assertNotIn(secret, repr(opts))
        self.assertEqual(pickle.loads(pickle.dumps(opts)), opts)
        scram = parse_write_options(
            {
                **BOOT,
                "security.protocol": "sasl_plaintext",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "bob",
                "sasl.password": secret,
            }
        ).client.security.client_kwargs()
        self.assertEqual(scram, {"sasl": Scram("SCRAM-SHA-512", "bob", secret)})
        oauth = parse_read_options(
            {
                **BOOT,
                "subscribe": "t",
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "OAUTHBEARER",
                "kafka.sasl.oauthbearer.token.provider": f"{__name__}:token_provider",
            },
            streaming=False,
        ).client.security.client_kwargs()["sasl"]
        self.assertEqual(oauth.name, "OAUTHBEARER")
        self.assertEqual(self.successResultOf(oauth.token(Clock())).value, "spark-token")
        refused = [
            ({"kafka.security.protocol": "SASL_SSL"}, "needs a username and password"),
            ({"kafka.security.protocol": "TLS"}, "security.protocol must be"),
            (
                {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "t.jks"},
                "PEM",
            ),
            (
                {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "OAUTHBEARER"},
                "sasl.oauthbearer.token.provider",
            ),
            (
                {
                    "kafka.security.protocol": "SASL_PLAINTEXT",
                    "kafka.sasl.mechanism": "GSSAPI",
                    "kafka.sasl.password": secret,
                },
                "sasl.mechanism must be",
            ),
        ]
        for options, words in refused:
            with self.assertRaises(OptionError, msg=options) as caught:
                parse_read_options({**BOOT, "subscribe": "t", **options}, streaming=False)
            self.assertIn(words, str(caught.exception))
            self.assertNotIn(secret, str(caught.exception))

    def test_isolation_level(self) -> None:
        def level(options: dict[str, str]) -> int:
            return parse_read_options(
                {**BOOT, "subscribe": "t", **options}, streaming=False
            ).isolation_level

        self.assertEqual(level({}), 0)
        self.assertEqual(level({"kafka.isolation.level": "read_committed"}), 1)
        self.assertEqual(level({"isolation.level": "READ_UNCOMMITTED"}), 0)
        with self.assertRaises(OptionError) as caught:
            level({"kafka.isolation.level": "serializable"})
        self.assertIn("isolation.level", str(caught.exception))

    def test_write_options(self) -> None:
        opts = parse_write_options(
            {**BOOT, "topic": "t", "kafka.acks": "1", "compression.type": "LZ4", "linger.ms": "5"}
        )
        self.assertEqual(opts.topic, "t")
        self.assertEqual(opts.producer_settings(), {"codec": 3, "req_acks": 1, "linger_ms": 5})
        self.assertEqual(parse_write_options(BOOT).producer_settings(), {"codec": 0})
        for options in (
            {**BOOT, "acks": "2"},
            {**BOOT, "compression.type": "brotli"},
            {**BOOT, "subscribe": "t"},
        ):
            self.assertRaises(OptionError, parse_write_options, options)

    def test_kafka_clients_producer_settings(self) -> None:
        """Each producer setting of kafka-clients that the Producer has sets its keyword."""
        opts = parse_write_options(
            {
                **BOOT,
                "kafka.max.request.size": "2000000",
                "kafka.buffer.memory": "1000000",
                "kafka.delivery.timeout.ms": "60000",
                "kafka.retries": "3",
                "kafka.max.in.flight.requests.per.connection": "1",
                "kafka.max.block.ms": "0",
                "kafka.transaction.timeout.ms": "30000",
                "kafka.compression.type": "zstd",
                "kafka.compression.level": "-5",
                "kafka.batch.size": "4096",
                "kafka.enable.idempotence": "false",
                "kafka.retry.backoff.ms": "20",
                "kafka.retry.backoff.max.ms": "400",
            }
        )
        self.assertEqual(
            opts.producer_settings(),
            {
                "codec": 4,
                "compression_level": -5,
                "max_request_size": 2000000,
                "buffer_memory": 1000000,
                "delivery_timeout_ms": 60000,
                "max_req_attempts": 4,
                "max_in_flight_per_partition": 1,
                "max_block_ms": 0,
                "transaction_timeout_ms": 30000,
                "batch_size": 4096,
                "enable_idempotence": False,
                "retry_interval": 0.02,
                "retry_backoff_max_ms": 400,
            },
        )
        self.assertEqual(opts.chunk_bytes, 4096)
        from afkak.producer import Producer

        signature(Producer).bind(None, **opts.producer_settings())  # the Producer's keywords
        for bad in ("kafka.retries", "kafka.buffer.memory", "kafka.max.block.ms"):
            self.assertRaises(OptionError, parse_write_options, {**BOOT, bad: "-1"})

    def test_kafka_clients_client_and_consumer_settings(self) -> None:
        """Client and consumer settings of kafka-clients map to the client and the reader."""
        opts = parse_read_options(
            {
                **BOOT,
                "subscribe": "t",
                "kafka.default.api.timeout.ms": "7000",
                "kafka.reconnect.backoff.ms": "10",
                "kafka.reconnect.backoff.max.ms": "200",
                "kafka.retry.backoff.ms": "30",
                "kafka.metadata.recovery.strategy": "NONE",
                "kafka.metadata.recovery.rebootstrap.trigger.ms": "1000",
                "kafka.enable.metrics.push": "false",
                "kafka.fetch.max.bytes": "65536",
                "kafka.fetch.min.bytes": "100",
                "kafka.max.poll.records": "500",
                "kafka.acks": "1",  # a producer setting on a read: unused, as in kafka-clients
            },
            streaming=False,
        )
        client = opts.client
        self.assertEqual(
            (client.api_timeout_ms, client.reconnect_backoff_ms, client.reconnect_backoff_max_ms),
            (7000, 10, 200),
        )
        self.assertEqual(client.retry_backoff_ms, 30)
        self.assertEqual(client.metadata_recovery_strategy, "none")
        self.assertEqual(client.metadata_recovery_rebootstrap_trigger_ms, 1000)
        self.assertFalse(client.enable_metrics_push)
        self.assertEqual((opts.fetch_max_bytes, opts.fetch_min_bytes), (65536, 100))
        self.assertEqual(opts.max_poll_records, 500)
        policy = client.reconnect_policy(lambda low, high: high)
        self.assertLessEqual(policy(20), 0.2 * 1.25)  # capped by reconnect.backoff.max.ms
        from afkak.spark._worker import call_timeout

        self.assertEqual(call_timeout(client), 7.0)
        self.assertEqual(call_timeout(ClientConfig("h:1", request_timeout_ms=1000)), 4.0)

    def test_max_poll_records_slices_what_a_fetch_returns(self) -> None:
        from afkak.spark._worker import polls

        batch = pa.record_batch([pa.array(range(10))], names=["n"])
        self.assertEqual([b.num_rows for b in polls(batch, None)], [10])
        self.assertEqual([b.num_rows for b in polls(batch, 4)], [4, 4, 2])
        self.assertEqual(
            [n for b in polls(batch, 3) for n in b.column(0).to_pylist()], list(range(10))
        )

    def test_settings_the_source_sets_itself_are_refused_with_what_to_do(self) -> None:
        for name, words in (
            ("kafka.group.id", "checkpoint"),
            ("kafka.auto.offset.reset", "startingOffsets"),
            ("kafka.enable.auto.commit", "commits no offsets"),
            ("kafka.value.deserializer", "value column"),
            ("kafka.key.serializer", "key column"),
            ("kafka.interceptor.classes", "interceptors"),
        ):
            with self.assertRaises(OptionError) as caught:
                parse_read_options({**BOOT, "subscribe": "t", name: "x"}, streaming=False)
            self.assertIn(words, str(caught.exception))
            self.assertIn(repr(name), str(caught.exception))
        with self.assertRaises(OptionError) as caught:
            parse_read_options(
                {**BOOT, "subscribe": "t", "kafka.send.buffer.bytes": "1"}, streaming=False
            )
        self.assertIn("kafka.max.poll.records", str(caught.exception))  # the list

    def test_errors_name_options_as_spark_spells_them(self) -> None:
        """Spark hands options over lower-cased; errors use the documented spelling."""
        with self.assertRaises(OptionError) as caught:
            parse_read_options({**BOOT, "subscribe": "t", "groupidprefix": "g"}, streaming=False)
        self.assertIn("'groupIdPrefix'", str(caught.exception))

    def test_load_checks_what_either_kind_of_read_needs(self) -> None:
        """``streaming=None`` (load(), before Spark says which) takes what a batch or a
        streaming read takes, and refuses what neither does."""
        for options in (
            {**BOOT, "subscribe": "t", "startingOffsets": "latest"},
            {**BOOT, "subscribe": "t", "endingOffsets": "latest"},
        ):
            parse_read_options(options, streaming=None)
        for options in (
            {**BOOT},
            {**BOOT, "subscribe": "t", "minPartitions": "0"},
            {**BOOT, "subscribe": "t", "kafka.nope": "1"},
        ):
            self.assertRaises(OptionError, parse_read_options, options, streaming=None)

    def test_exactly_once_options(self) -> None:
        self.assertFalse(parse_write_options({**BOOT, "topic": "t"}).exactly_once)
        opts = parse_write_options(
            {**BOOT, "topic": "t", "exactlyOnce": "TRUE", "transactionalIdPrefix": "etl-"}
        )
        self.assertEqual((opts.exactly_once, opts.transactional_id_prefix), (True, "etl-"))
        self.assertFalse(parse_write_options({**BOOT, "exactlyOnce": "false"}).exactly_once)
        for options, named in (
            ({**BOOT, "exactlyOnce": "true"}, "topic"),
            ({**BOOT, "topic": "t", "exactlyOnce": "true", "kafka.acks": "1"}, "acks"),
            ({**BOOT, "topic": "t", "exactlyOnce": "true", "enable.idempotence": "false"}, "acks"),
            ({**BOOT, "topic": "t", "exactlyOnce": "yes please"}, "exactlyOnce"),
        ):
            with self.assertRaises(OptionError) as caught:
                parse_write_options(options)
            self.assertIn(named, str(caught.exception))

    def test_exactly_once_is_for_streams(self) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        from afkak.spark._source import AfkakDataSource

        source = AfkakDataSource({**BOOT, "topic": "t", "exactlyOnce": "true"})
        schema = StructType([StructField("value", BinaryType())])
        self.assertTrue(source.streamWriter(schema, False).opts.exactly_once)  # type: ignore[attr-defined]
        with self.assertRaises(OptionError) as caught:
            source.writer(schema, False)
        self.assertIn("streaming", str(caught.exception))


class PlanningTests(Case):
    def test_json_round_trip(self) -> None:
        offsets = {TP("b", 1): 7, TP("a", 10): 3, TP("a", 2): 0}
        data = to_json(offsets)
        self.assertEqual(data, {"a": {"2": 0, "10": 3}, "b": {"1": 7}})
        self.assertEqual(from_json(json.loads(json.dumps(data))), offsets)

    def test_resolve(self) -> None:
        parts = [TP("t", 0), TP("t", 1)]
        early, late = {TP("t", 0): 2, TP("t", 1): 4}, {TP("t", 0): 10, TP("t", 1): 20}
        self.assertEqual(resolve(-2, parts, early, late, "x"), early)
        self.assertEqual(resolve(-1, parts, early, late, "x"), late)
        spec = {TP("t", 0): -1, TP("t", 1): 6}
        self.assertEqual(resolve(spec, parts, early, late, "x"), {TP("t", 0): 10, TP("t", 1): 6})
        with self.assertRaises(OptionError) as caught:
            resolve({TP("t", 0): 1}, parts, early, late, "startingOffsets")
        self.assertIn("t/1", str(caught.exception))

    def test_ranges_between(self) -> None:
        looked_up = []

        def earliest(new: list[TP]) -> dict[TP, int]:
            looked_up.append(new)
            return dict.fromkeys(new, 3)

        start = {TP("t", 0): 5, TP("t", 1): 8}
        end = {TP("t", 0): 9, TP("t", 1): 8, TP("t", 2): 10}  # partition 2 is new
        self.assertEqual(
            ranges_between(start, end, earliest, True),
            [OffsetRange("t", 0, 5, 9), OffsetRange("t", 2, 3, 10)],
        )
        self.assertEqual(looked_up, [[TP("t", 2)]])
        self.assertEqual(ranges_between(start, start, earliest, True), [])
        self.assertEqual(len(looked_up), 1)

    def test_data_loss(self) -> None:
        start = {TP("t", 0): 5, TP("t", 1): 8}
        shrunk = {TP("t", 0): 4, TP("t", 1): 9}
        gone = {TP("t", 1): 9}
        for end in (shrunk, gone):
            with self.assertRaises(DataLossError):
                ranges_between(start, end, dict, True)
            self.assertEqual(ranges_between(start, end, dict, False), [OffsetRange("t", 1, 8, 9)])

    def test_pack_ranges(self) -> None:
        small = [OffsetRange("t", p, 0, 3) for p in range(4)]
        self.assertEqual(pack_ranges(small, 10), [tuple(small[:3]), (small[3],)])
        big = OffsetRange("t", 9, 0, 50)
        self.assertEqual(
            pack_ranges([small[0], big, small[1], small[2]], 10),
            [(small[0],), (big,), (small[1], small[2])],
        )
        self.assertEqual(pack_ranges([], 10), [])

    def test_cap_ranges(self) -> None:
        ranges = [OffsetRange("t", 0, 10, 25), OffsetRange("t", 1, 0, 3)]
        self.assertEqual(cap_ranges(ranges, None), ranges)
        self.assertEqual(
            cap_ranges(ranges, 6),
            [
                OffsetRange("t", 0, 10, 15),
                OffsetRange("t", 0, 15, 20),
                OffsetRange("t", 0, 20, 25),
                OffsetRange("t", 1, 0, 3),
            ],
        )

    def test_split_ranges(self) -> None:
        ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 50, 60)]
        self.assertEqual(split_ranges(ranges, None), ranges)
        self.assertEqual(split_ranges(ranges, 2), ranges)
        split = split_ranges(ranges, 5)
        self.assertEqual(
            [(r.partition, r.start, r.end) for r in split],
            [(0, 0, 25), (0, 25, 50), (0, 50, 75), (0, 75, 100), (1, 50, 60)],
        )
        tiny = split_ranges([OffsetRange("t", 0, 0, 2)], 8)
        self.assertEqual([(r.start, r.end) for r in tiny], [(0, 1), (1, 2)])

    @given(
        st.lists(st.integers(1, 10_000), min_size=1, max_size=8),
        st.integers(1, 64),
    )
    def test_split_covers_exactly(self, sizes: list[int], minimum: int) -> None:
        ranges = [OffsetRange("t", p, 1000 * p, 1000 * p + s) for p, s in enumerate(sizes)]
        split = split_ranges(ranges, minimum)
        self.assertGreaterEqual(len(split), min(minimum, sum(sizes)))
        self.assertLessEqual(len(split), minimum + len(ranges))
        for r in ranges:
            mine = [x for x in split if x.partition == r.partition]
            self.assertEqual(mine[0].start, r.start)
            self.assertEqual(mine[-1].end, r.end)
            self.assertTrue(all(a.end == b.start for a, b in zip(mine, mine[1:], strict=False)))
            self.assertTrue(all(x.size > 0 for x in mine))

    def test_fetch_bytes(self) -> None:
        """A read asks for about what its range still needs: 64 KiB to the fetch limit."""
        limit = 8 * 1024 * 1024
        self.assertEqual(fetch_bytes(limit, 1), 64 * 1024)
        self.assertEqual(fetch_bytes(limit, 1000), 1000 * 1024 * 11 // 10)
        self.assertEqual(fetch_bytes(limit, 10**6), limit)
        self.assertEqual(fetch_bytes(limit, 10_000, 100_000, 1000), 1_100_000)
        self.assertEqual(fetch_bytes(limit, 10, 100_000, 1000), 64 * 1024)
        self.assertEqual(fetch_bytes(1000, 10), 1000)  # the limit wins

    def test_rate_limit(self) -> None:
        start = {TP("t", 0): 0, TP("t", 1): 100, TP("t", 2): 7}
        latest = {TP("t", 0): 300, TP("t", 1): 200, TP("t", 2): 8}
        ends = rate_limit(start, latest, 40)
        # backlogs 300, 100 and 1 share 40: 29.9 -> 29, 9.97 -> 9, 0.0997 -> 1
        self.assertEqual(ends, {TP("t", 0): 29, TP("t", 1): 109, TP("t", 2): 8})
        self.assertEqual(rate_limit(start, latest, 1000), latest)
        new = {**latest, TP("t", 3): 50}
        self.assertEqual(rate_limit(start, new, 40)[TP("t", 3)], 50)

    def test_too_few(self) -> None:
        start = {TP("t", 0): 10, TP("t", 1): 0}
        self.assertTrue(too_few(start, {TP("t", 0): 15, TP("t", 1): 4}, 10))
        self.assertFalse(too_few(start, {TP("t", 0): 15, TP("t", 1): 5}, 10))
        # a partition missing from the start counts from offset 0
        self.assertFalse(too_few(start, {TP("t", 0): 10, TP("t", 2): 10}, 10))


class TriggerDelayTests(Case):
    """minOffsetsPerTrigger / maxTriggerDelay as Spark's Kafka source decides them."""

    def reader(self, **options: str) -> Any:
        from pyspark.sql.types import StructType

        from afkak.spark._source import StreamReader

        opts = parse_read_options({**BOOT, "subscribe": "t", **options}, streaming=True)
        reader = StreamReader(opts, StructType([]))
        self.now = 0.0
        reader.clock_ms = lambda: self.now  # type: ignore[method-assign]
        return reader

    def test_waits_for_records_or_the_delay(self) -> None:
        reader = self.reader(minOffsetsPerTrigger="100", maxTriggerDelay="10s")
        start, few, many = {TP("t", 0): 0}, {TP("t", 0): 5}, {TP("t", 0): 100}
        self.assertFalse(reader._delayed(start, few))  # the first micro-batch never waits
        self.now = 1000.0
        self.assertTrue(reader._delayed(few, {TP("t", 0): 50}))
        self.assertFalse(reader._delayed(few, {TP("t", 0): 105}))  # enough records
        self.now = 9_000.0
        self.assertTrue(reader._delayed(many, {TP("t", 0): 101}))
        self.now = 11_000.0  # 10 s after the last micro-batch
        self.assertFalse(reader._delayed(many, {TP("t", 0): 101}))
        self.assertTrue(reader._delayed(many, {TP("t", 0): 102}))

    def test_without_a_minimum_or_under_available_now_nothing_waits(self) -> None:
        start, latest = {TP("t", 0): 0}, {TP("t", 0): 1}
        plain = self.reader()
        self.assertEqual([plain._delayed(start, latest) for _ in range(2)], [False, False])
        available_now = self.reader(minOffsetsPerTrigger="100")
        available_now._target = dict(latest)  # prepareForTriggerAvailableNow ran
        self.assertEqual([available_now._delayed(start, latest) for _ in range(2)], [False, False])
        waiting = self.reader(minOffsetsPerTrigger="100")
        self.assertEqual([waiting._delayed(start, latest) for _ in range(2)], [False, True])


class FakeLog:
    """Partitions and their log ends, moved by the test: the stream reader's Kafka."""

    def __init__(self, ends: dict[TP, int]) -> None:
        self.starts = dict.fromkeys(ends, 0)
        self.ends = dict(ends)

    def discover(self, opts: Any) -> list[TP]:
        return sorted(self.ends)

    def offsets_at(self, config: Any, partitions: Any, when: int, isolation_level: int = 0) -> Any:
        log = self.starts if when == OFFSET_EARLIEST else self.ends
        return {tp: log[tp] for tp in partitions}

    def resolve_offsets(self, opts: Any, spec: Any, partitions: Any, name: str) -> Any:
        earliest = self.offsets_at(None, partitions, OFFSET_EARLIEST)
        return resolve(spec, partitions, earliest, self.offsets_at(None, partitions, -1), name)


class StreamReaderTests(Case):
    """The stream reader's offsets across Spark's calls, against a :class:`FakeLog`."""

    def reader(self, log: FakeLog, **options: str) -> Any:
        from pyspark.sql.types import StructType

        from afkak.spark._source import StreamReader

        opts = parse_read_options({**BOOT, "subscribe": "t", **options}, streaming=True)
        reader = StreamReader(opts, StructType([]))
        reader.lookups = log
        return reader

    def test_initial_offset_stays_put_while_records_arrive(self) -> None:
        """Spark asks for the initial offset twice on the first micro-batch (to choose
        its end, then to plan it): records written in between must not move its start
        past its end, which failed the query with DataLossError."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        log = FakeLog({TP("t", 0): 3, TP("t", 1): 0})
        reader = self.reader(log)
        start = reader.initialOffset()
        log.ends[TP("t", 0)] = 5
        end = reader.latestOffset(start, ReadAllAvailable())
        log.ends[TP("t", 0)] = 7
        tasks = [p.value for p in reader.partitions(reader.initialOffset(), end)]
        self.assertEqual(tasks, [(OffsetRange("t", 0, 3, 5),)])

    def test_a_small_micro_batch_is_one_task(self) -> None:
        """Each task of a Python data source is a round trip through Spark's Python
        workers: a micro-batch of a few records reads all its partitions in one."""
        log = FakeLog(dict.fromkeys((TP("t", p) for p in range(4)), 0))
        start = self.reader(log).initialOffset()
        log.ends.update({TP("t", 0): 2, TP("t", 1): 1, TP("t", 3): 5})
        reader = self.reader(log)
        [task] = [p.value for p in reader.partitions(start, to_json(log.ends))]
        self.assertEqual(
            task,
            (OffsetRange("t", 0, 0, 2), OffsetRange("t", 1, 0, 1), OffsetRange("t", 3, 0, 5)),
        )
        split = self.reader(log, minPartitions="4")  # asked for: a task per piece
        self.assertEqual(len(split.partitions(start, to_json(log.ends))), 4)


class RowTests(Case):
    def test_records_to_arrow(self) -> None:
        schema = arrow_schema(read_schema(include_headers=True))
        records = [
            Record(5, 1_700_000_000_123, 0, b"k", b"v", (("h", b"x"), ("n", None))),
            Record(6, 1_700_000_000_124, 1, None, None, ()),
        ]
        batch = records_to_arrow(TP("t", 3), records, schema)
        self.assertEqual(batch.schema, schema)
        rows = batch.to_pylist()
        self.assertEqual(
            [
                (r["key"], r["value"], r["topic"], r["partition"], r["offset"], r["timestampType"])
                for r in rows
            ],
            [(b"k", b"v", "t", 3, 5, 0), (None, None, "t", 3, 6, 1)],
        )
        self.assertEqual(rows[0]["timestamp"].timestamp(), 1_700_000_000.123)
        self.assertEqual(
            rows[0]["headers"], [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
        )
        self.assertIsNone(rows[1]["headers"])  # none: null, as Spark's Kafka source gives
        plain = records_to_arrow(TP("t", 3), [], arrow_schema(read_schema(False)))
        self.assertEqual((plain.num_rows, "headers" in plain.schema.names), (0, False))

    @settings(max_examples=200, deadline=None)
    @given(
        sets=st.lists(record_sets(), min_size=1, max_size=3),
        codec_=st.sampled_from(CODECS),
        log_append=st.booleans(),
        window=st.tuples(st.integers(0, 40), st.integers(0, 100)),
        headers=st.booleans(),
    )
    def test_compiled_arrow_equals_pure(self, sets, codec_, log_append, window, headers):
        """to_arrow decoding straight into Arrow buffers gives the table the Record path gives."""
        if RecordColumns is None:
            raise SkipTest("the compiled record codec is not built")
        data, offset = b"", 1000
        for values, keys, hdrs, timestamps in sets:
            batch = build_batch(
                values, keys, headers=hdrs, timestamps=timestamps, timestamp=TS,
                codec=codec_, base_offset=offset,
            )  # fmt: skip
            data += patch_batch(batch, attributes=codec_ | 0x08) if log_append else batch
            offset += len(values)
        schema = arrow_schema(read_schema(include_headers=headers))
        start, end = 1000 + window[0], 1000 + window[0] + window[1]
        tp = TP("topic", 7)
        pure = to_arrow(tp, list(read_batches(data)), start, end, schema, compiled=False)
        fast = to_arrow(tp, list(read_batches(data)), start, end, schema)
        if pure is None:
            self.assertIsNone(fast)
            return
        assert fast is not None
        self.assertEqual(fast.schema, pure.schema)
        self.assertTrue(fast.equals(pure), (fast.to_pylist(), pure.to_pylist()))
        self.assertEqual([c.null_count for c in fast.columns], [c.null_count for c in pure.columns])
        # what Spark receives: the Arrow stream of the batch
        self.assertTrue(ipc_round_trip(fast).equals(pure))

    def test_arrow_to_outgoing(self) -> None:
        headers = pa.array(
            [[{"key": "a", "value": b"1"}], None],
            arrow_schema(read_schema(True)).field("headers").type,
        )
        batch = pa.RecordBatch.from_pydict(
            {
                "value": pa.array(["x", None]),
                "key": pa.array([b"k", None]),
                "topic": pa.array([None, "u"]),
                "partition": pa.array([None, 2], pa.int32()),
                "headers": headers,
            }
        )
        out = arrow_to_outgoing(batch, "t")
        self.assertEqual(out.topics, ["t", "u"])
        self.assertEqual(out.values, [b"x", None])
        self.assertEqual(out.keys, [b"k", None])
        self.assertEqual(out.headers, [(("a", b"1"),), ()])
        self.assertEqual(out.partitions, [None, 2])
        with self.assertRaises(RowError):
            arrow_to_outgoing(batch, None)
        strings = pa.RecordBatch.from_pydict(
            {
                "value": pa.array(["\u00e9", None, "y"]),
                "key": pa.array(["k", "l", None], pa.large_string()),
            }
        ).slice(1)
        out = arrow_to_outgoing(strings, "t")  # as UTF-8 bytes, a sliced batch too
        self.assertEqual((out.values, out.keys), ([None, b"y"], [b"l", None]))
        bare = arrow_to_outgoing(pa.RecordBatch.from_pydict({"value": [b"v"]}), "t")
        self.assertEqual(
            (bare.topics, bare.keys, bare.headers, bare.partitions), (["t"], None, None, None)
        )

    def test_arrow_headers_of_any_shape(self) -> None:
        """Headers are read from the struct's columns: empty and null lists (one
        over values, as Arrow allows), null header values, a sliced batch."""
        kind = arrow_schema(read_schema(True)).field("headers").type
        pairs = [("a", b"1"), ("z", b"hidden"), ("b", None), ("c", b"3"), ("d", b"4")]
        headers = pa.ListArray.from_arrays(
            pa.array([0, 1, 2, 2, 4, 5], pa.int32()),
            pa.array([{"key": k, "value": v} for k, v in pairs], kind.value_type),
            mask=pa.array([False, True, False, False, False]),
        )
        batch = pa.RecordBatch.from_pydict({"value": [b"v"] * 5, "headers": headers})
        expected = [(("a", b"1"),), (), (), (("b", None), ("c", b"3")), (("d", b"4"),)]
        self.assertEqual(arrow_to_outgoing(batch, "t").headers, expected)
        self.assertEqual(arrow_to_outgoing(batch.slice(3), "t").headers, expected[3:])
        # as many headers each (none, one, two), read a column at a time
        for width in (0, 1, 2):
            rows = [[{"key": f"h{j}", "value": b"%d" % i} for j in range(width)] for i in range(4)]
            batch = pa.RecordBatch.from_pydict(
                {"value": [b"v"] * 4, "headers": pa.array(rows, kind)}
            )
            expected = [tuple((h["key"], h["value"]) for h in row) for row in rows]
            self.assertEqual(arrow_to_outgoing(batch, "t").headers, expected)
            self.assertEqual(arrow_to_outgoing(batch.slice(1), "t").headers, expected[1:])

    def test_chunks_by_key(self) -> None:
        out = Outgoing(
            ["t", "t", "u", "t", "t", "t"],
            [b"1" * 40, b"2" * 40, b"3", b"4" * 40, None, b"6"],
            [b"a", b"b", b"a", b"a", b"a", b"b"],
            None,
            None,
        )
        self.assertEqual(
            chunks_by_key(out, 100),  # each value takes 10 bytes more
            [
                ("t", b"a", [b"1" * 40, b"4" * 40]),
                ("t", b"a", [None]),
                ("t", b"b", [b"2" * 40, b"6"]),
                ("u", b"a", [b"3"]),
            ],
        )
        keyless = Outgoing(["t"] * 5, [b"v" * 90] * 5, None, None, None)
        self.assertEqual([len(c[2]) for c in chunks_by_key(keyless, 250)], [2, 2, 1])

    def test_check_write_schema(self) -> None:
        from pyspark.sql.types import (
            BinaryType,
            IntegerType,
            LongType,
            StringType,
            StructField,
            StructType,
        )

        def schema(**types: object) -> StructType:
            return StructType([StructField(n, t) for n, t in types.items()])  # type: ignore[arg-type]

        check_write_schema(schema(value=StringType(), key=BinaryType(), headers=HEADERS_TYPE), "t")
        check_write_schema(
            schema(value=BinaryType(), topic=StringType(), partition=IntegerType()), None
        )
        for bad, topic in (
            (schema(key=BinaryType()), "t"),
            (schema(value=BinaryType()), None),
            (schema(value=LongType()), "t"),
            (schema(value=BinaryType(), extra=BinaryType()), "t"),
            (schema(value=BinaryType(), partition=LongType()), "t"),
        ):
            self.assertRaises(RowError, check_write_schema, bad, topic)

    def test_headers_of_any_nullability_can_be_written(self) -> None:
        """``array(named_struct('key', 'h', 'value', cast('x' as binary)))`` has fields and
        elements that cannot be null: Spark's Kafka sink takes it, and so does afkak's."""
        from pyspark.sql.types import (
            ArrayType,
            BinaryType,
            LongType,
            StringType,
            StructField,
            StructType,
        )

        strict = ArrayType(
            StructType(
                [
                    StructField("key", StringType(), nullable=False),
                    StructField("value", BinaryType(), nullable=False),
                ]
            ),
            containsNull=False,
        )
        value = StructField("value", BinaryType())
        check_write_schema(StructType([value, StructField("headers", strict, False)]), "t")
        wrong = ArrayType(
            StructType([StructField("key", StringType()), StructField("value", LongType())])
        )
        with self.assertRaises(RowError) as caught:
            check_write_schema(StructType([value, StructField("headers", wrong)]), "t")
        self.assertIn("not array<struct<key:string,value:bigint>>", str(caught.exception))


_BRIDGE_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from twisted.internet import defer, reactor
    from afkak.spark import _bridge

    print(_bridge.call(1.0, lambda x: defer.succeed(x + 1), 41))
    d = defer.Deferred()
    try:
        _bridge.call(0.2, lambda: d)
    except defer.TimeoutError:
        print("timeout")
    try:
        _bridge.call(1.0, lambda: 1 / 0)
    except ZeroDivisionError:
        print("error")
    pid = os.fork()
    if pid == 0:
        try:
            _bridge.call(1.0, lambda: 1)
        except _bridge.ReactorError:
            os._exit(7)
        os._exit(0)
    print("child", os.waitpid(pid, 0)[1] >> 8)
    """
)


class BridgeTests(Case):
    def test_bridge_in_a_fresh_process(self) -> None:
        """Results and failures cross threads; timeouts fire; a forked reactor is refused.

        Run in a subprocess: the test process drives the global reactor itself.
        """
        done = subprocess.run(
            [sys.executable, "-c", _BRIDGE_SCRIPT], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(done.stdout.split(), ["42", "timeout", "error", "child", "7"], done.stderr)


_NO_PYSPARK_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.modules["pyspark"] = None  # as if it were not installed
    import afkak, afkak.client  # the core never needs it
    try:
        import afkak.spark
    except ImportError as e:
        print(e)
    """
)


class ExtraTests(SynchronousTestCase):
    def test_import_without_pyspark_names_the_extra(self) -> None:
        done = subprocess.run(
            [sys.executable, "-c", _NO_PYSPARK_SCRIPT], capture_output=True, text=True, timeout=60
        )
        self.assertIn("pip install 'afkak[spark]'", done.stdout, done.stderr)


_PLANNER_SCRIPT = textwrap.dedent(
    """
    import base64, json, pickle, sys
    from pyspark.sql.datasource import DataSource
    from pyspark.sql.types import StructType

    read, write = (pickle.loads(base64.b64decode(a)) for a in sys.argv[1:])
    before = set(sys.modules)
    source = pickle.loads(read)
    reader = source.streamReader(source.schema())
    pickle.loads(pickle.dumps(reader.read))
    pickle.loads(write).streamWriter(StructType([source.schema()["value"]]), False)
    planner = sorted(set(sys.modules) - before)
    from afkak.spark import _worker
    runner = sorted(set(sys.modules) - before)
    print(json.dumps([planner, runner]))
    """
)


@cache
def _planner_imports() -> tuple[list[str], list[str]]:
    """The modules a fresh interpreter imports to act as Spark's planners (from
    unpickling the source on), then as the streaming source's runner (which also
    imports :mod:`afkak.spark._worker`)."""
    from afkak.spark import AfkakDataSource

    boot = {"kafka.bootstrap.servers": "127.0.0.1:9"}
    sources = [AfkakDataSource({**boot, "subscribe": "t"}), AfkakDataSource({**boot, "topic": "t"})]
    args = [base64.b64encode(pickle.dumps(pickle.dumps(s))).decode() for s in sources]
    out = subprocess.run(
        [sys.executable, "-c", _PLANNER_SCRIPT, *args], check=True, capture_output=True, text=True
    ).stdout
    planner, runner = json.loads(out.splitlines()[-1])
    return planner, runner


class PlannerImportTests(Case):
    """What Spark's planner processes import: each is a fresh Python process on a
    query's critical path (issue 38), so these pin modules they must not load."""

    def test_planners_import_no_client(self) -> None:
        """Checking options (``load()``), pickling a micro-batch's read function or
        its writer, committing it: neither Twisted's reactor nor afkak's client,
        producer or record codecs."""
        planner, _ = _planner_imports()
        heavy = {
            "afkak.client",
            "afkak.producer",
            "afkak.records",
            "afkak.spark._worker",
            "afkak.spark._confluent_avro",
            "pyarrow.compute",
            "twisted.internet.defer",
            "twisted.internet.task",
        }
        self.assertEqual(sorted(heavy & set(planner)), [])

    def test_the_offsets_runner_imports_no_producer(self) -> None:
        """The streaming source's runner looks up partitions and offsets: the client only
        (not Arrow's compute functions either, which only rows with headers use)."""
        _, runner = _planner_imports()
        self.assertEqual(
            [m in runner for m in ("afkak.client", "afkak.producer", "pyarrow.compute")],
            [True, False, False],
        )


class WriterTests(Case):
    """The writer's sends on the fake cluster (a Clock, no Spark)."""

    def setUp(self) -> None:
        super().setUp()
        from afkak.client import KafkaClient
        from afkak.testing import FakeKafkaCluster

        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        self.cluster.create_topic("t", partitions=3)
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
            rng=random.Random(0),
        )
        self.addCleanup(client.close)
        # Lingering, so that the sends a write makes are still outstanding when counted
        # (an idle producer that does not linger writes in the turn of the send).
        self.producer = make_producer(client, {"linger_ms": 5})
        self.addCleanup(self.producer.stop)
        # The topic's metadata and the producer id, as a task's earlier batches left them.
        warm = self.producer.send("t", b"warm-up")
        self.clock.pump([0.01] * 100)
        self.successResultOf(warm)

    def write(self, out: Outgoing) -> list[int]:
        """Send *out* as a task's batch; the records of each Produce request."""
        seen = len(self.cluster.requests_seen)
        d = Deferred.fromCoroutine(send(self.producer, out, 1 << 20))
        self.sends = self.producer._accumulator.outstanding
        self.clock.pump([0.01] * 100)
        self.successResultOf(d)
        requests = [r for r in self.cluster.requests_seen[seen:] if r.api_key == PRODUCE]
        return [
            sum(
                len(b.records())
                for t in r.request.topic_data
                for p in t.partition_data
                for b in read_batches(p.records)
            )
            for r in requests
        ]

    def test_keyed_rows_go_in_batches_per_partition(self) -> None:
        """A row with its own key went alone: one send_messages call, Deferred and
        partitioner call each (0.1x an unkeyed write).  The rows of a task's batch are
        one send, batched per partition whatever their keys, in one Produce request."""
        n = 1000
        keys: list[bytes | None] = [b"key-%d" % i for i in range(n)]
        values: list[bytes | None] = [b"value-%d" % i for i in range(n)]
        out = Outgoing(["t"] * n, values, keys, None, None)
        self.assertEqual(self.write(out), [n])
        self.assertEqual(self.sends, 3)  # one per partition, not one per key
        stored = [r for p in range(3) for r in self.cluster.records("t", p)][1:]
        self.assertEqual(sorted(r.key for r in stored), sorted(keys))
        place = KeyHashPartitioner("t", [0, 1, 2])
        for p in range(3):  # placed as Kafka's default partitioner does
            for r in self.cluster.records("t", p):
                if r.key is not None:
                    self.assertEqual(place.partition(r.key, [0, 1, 2]), p)

    def test_headers_and_partitions_of_rows_of_several_topics(self) -> None:
        self.cluster.create_topic("u", partitions=1)
        out = Outgoing(
            ["t", "u", "t"],
            [b"a", b"b", b"c"],
            [b"k", None, None],
            [(("h", b"1"),), (), (("h", None),)],
            [None, 0, 2],
        )
        self.write(out)
        self.assertEqual([r.value for r in self.cluster.records("t", 2)][-1], b"c")
        self.assertEqual([(r.value, r.headers) for r in self.cluster.records("u", 0)], [(b"b", ())])
