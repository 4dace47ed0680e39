"""afkak 21's smaller names keep their meaning: codec helpers, murmur2, constants, attributes."""

from __future__ import annotations

import gzip
import zlib

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

import afkak
from afkak import brokerclient, codec, common, kafkacodec
from afkak.client import KafkaClient
from afkak.codec import CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD
from afkak.common import Message, SendRequest
from afkak.message_set import flatten
from afkak.partitioner import HashedPartitioner, RoundRobinPartitioner, murmur2, pure_murmur2
from afkak.producer import Producer
from afkak.test.helpers import needs_codecs
from afkak.testing import FakeKafkaCluster


class ConstantsTests(SynchronousTestCase):
    def test_values(self) -> None:
        self.assertEqual(
            (afkak.OFFSET_EARLIEST, afkak.OFFSET_LATEST, afkak.OFFSET_COMMITTED), (-2, -1, -101)
        )
        self.assertEqual(
            (common.DefaultKafkaPort, common.OFFSET_NOT_COMMITTED, common.TIMESTAMP_INVALID),
            (9092, -1, -1),
        )
        self.assertEqual(
            (common.CODEC_NONE, common.CODEC_GZIP, common.CODEC_SNAPPY, common.CODEC_LZ4),
            (0, 1, 2, 3),
        )
        self.assertIs(common.CODEC_GZIP, codec.CODEC_GZIP)
        self.assertEqual(
            (brokerclient.INIT_DELAY_SECONDS, brokerclient.MAX_RECONNECT_DELAY_SECONDS), (0.1, 15)
        )
        self.assertEqual((afkak.__title__, afkak.__license__), ("afkak", "Apache License 2.0"))
        self.assertTrue(afkak.__author__)

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_kafkacodec(self) -> None:
        self.assertIs(kafkacodec.create_message, afkak.create_message)
        self.assertIs(kafkacodec.create_message_set, afkak.create_message_set)
        key_name = kafkacodec.KafkaCodec.key_name
        self.assertEqual(key_name(kafkacodec.KafkaCodec.PRODUCE_KEY), "Produce")
        self.assertEqual(kafkacodec.KafkaCodec.key_name(10), "FindCoordinator")
        inner = [Message(0, 0, b"k", b"v"), Message(0, 0, None, None)]
        for make, codec_ in (
            (kafkacodec.create_gzip_message, codec.CODEC_GZIP),
            (kafkacodec.create_snappy_message, codec.CODEC_SNAPPY),
        ):
            wrapper = make(inner)
            self.assertEqual(wrapper[:3], (0, codec_, None))
            self.assertEqual(flatten([wrapper]), (inner, codec_))


class CodecHelperTests(SynchronousTestCase):
    def test_gzip(self) -> None:
        self.assertEqual(gzip.decompress(codec.gzip_encode(b"abc" * 100)), b"abc" * 100)
        self.assertEqual(codec.gzip_decode(gzip.compress(b"xyz")), b"xyz")
        self.assertEqual(codec.gzip_decode(codec.gzip_encode(b"")), b"")

    @needs_codecs(CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)
    def test_snappy(self) -> None:
        data = bytes(range(256)) * 300
        raw = codec.snappy_encode(data)
        self.assertFalse(raw.startswith(b"\x82SNAPPY"))
        framed = codec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=1000)
        self.assertTrue(framed.startswith(b"\x82SNAPPY\x00"))
        self.assertGreater(framed.count(b"\x00\x00"), 0)
        for blob in (raw, framed, codec.snappy_encode(data, True)):
            self.assertEqual(codec.snappy_decode(blob), data)


class PartitionerTests(SynchronousTestCase):
    def test_pure_murmur2(self) -> None:
        # Values of afkak 21's pure_murmur2 (Kafka's murmur2).
        self.assertEqual(pure_murmur2(bytearray(b"21")), murmur2(b"21"))
        self.assertEqual(pure_murmur2(bytearray(b"21")), 3321034988)
        self.assertEqual(pure_murmur2(bytearray(b"")), 275646681)
        self.assertEqual(pure_murmur2(bytearray(b"a-little-bit-long-string")), 3308985760)
        self.assertEqual(pure_murmur2(b"abc", seed=0), 324500635)
        with self.assertRaises(TypeError):
            pure_murmur2("text")  # type: ignore[arg-type]

    def test_hashed_partitioner_takes_str_as_utf8(self) -> None:
        partitioner = HashedPartitioner("t", list(range(7)))
        # afkak 21.5 placed these str keys on partitions 4, 2 and 2 of 7.
        self.assertEqual(
            [partitioner.partition(k, list(range(7))) for k in ("clé", "plain", "")], [4, 2, 2]
        )
        for key in ("clé", "plain", ""):
            self.assertEqual(
                partitioner.partition(key, list(range(7))),
                partitioner.partition(key.encode("utf-8"), list(range(7))),
            )
        self.assertEqual(
            partitioner.partition(bytearray(b"k"), [0, 1, 2]),
            partitioner.partition(b"k", [0, 1, 2]),
        )
        for bad in (None, 1, 1.5):
            with self.assertRaises(TypeError):
                partitioner.partition(bad, [0, 1])  # type: ignore[arg-type]

    def test_round_robin_starts_at_the_first_partition(self) -> None:
        p = RoundRobinPartitioner("t", [0, 1, 2])
        self.assertEqual([p.partition(None, [0, 1, 2]) for _ in range(4)], [0, 1, 2, 0])


class AttributeTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        self.client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.addCleanup(self.client.close)

    def test_client(self) -> None:
        self.assertIs(self.client.clock, self.clock)
        self.assertEqual(self.client.consumer_group_to_brokers(), {})
        self.successResultOf(self.client.load_coordinator_for_group("g"))
        brokers = self.client.consumer_group_to_brokers()
        self.assertEqual(list(brokers), ["g"])
        brokers.clear()  # a copy
        self.assertEqual(list(self.client.consumer_group_to_brokers()), ["g"])

    def test_producer(self) -> None:
        self.assertEqual(Producer.DEFAULT_ACK_TIMEOUT, 1000)
        self.assertEqual(Producer.DEFAULT_REQ_ATTEMPTS, 10)
        # The constants name the defaults; the first retry now waits Kafka's
        # retry.backoff.ms (0.1 s, afkak 21: 0.25 s; docs/changes-from-afkak-21.rst).
        self.assertEqual(Producer.INIT_RETRY_INTERVAL, 0.1)
        p = Producer(self.client, req_acks=1, ack_timeout=500, codec=codec.CODEC_GZIP)
        self.addCleanup(p.stop)
        self.assertEqual((p.req_acks, p.ack_timeout, p.codec), (1, 500, codec.CODEC_GZIP))
        self.assertEqual((p.batch_every_n, p.batch_every_b, p.batch_every_t), (1, 1, None))
        self.assertEqual(p.batchDesc, "Unbatched")
        self.assertEqual((p.partitioners, p.stopping, p.client), ({}, False, self.client))
        b = Producer(
            self.client, batch_send=True, batch_every_n=5, batch_every_b=0, batch_every_t=None
        )
        self.assertEqual((b.batch_every_n, b.batch_every_b, b.batch_every_t), (5, 0, None))
        d = p.send_messages("t", msgs=[b"v"])
        for _ in range(20):
            self.clock.advance(0.1)
        self.successResultOf(d)
        self.assertEqual(list(p.partitioners), ["t"])
        self.assertIsInstance(p.partitioners["t"], RoundRobinPartitioner)
        p.stop()
        self.assertTrue(p.stopping)
        b.stop()

    def test_create_message_set_shape(self) -> None:
        [wrapper] = afkak.create_message_set([SendRequest("t", None, [b"a"], None)], 1)
        self.assertEqual(zlib.decompress(wrapper.value, 31)[-1:], b"a")
