"""An application written for afkak 21.5 runs unchanged against Apache Kafka.

``afkak21_app`` uses only afkak 21.5's documented API, as its users wrote it:
KafkaClient, ``send_produce_request`` with plain and compressed message sets
(``create_message_set`` with a codec, its ``[0]``, a list mixing wrappers and
plain messages), Producer with and without ``batch_send``, Consumer with a
commit policy, ConsumerGroup with ``consumer_kwargs``.  confluent-kafka then
reads exactly what it wrote, and afkak read the same.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, inlineCallbacks
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

# afkak 21.5's import paths.
from afkak import (
    CODEC_GZIP,
    CODEC_SNAPPY,
    OFFSET_EARLIEST,
    Consumer,
    ConsumerGroup,
    KafkaClient,
    Producer,
    RoundRobinPartitioner,
    create_message,
    create_message_set,
)
from afkak.common import OffsetFetchRequest, ProduceRequest, SendRequest
from afkak.kafkacodec import create_gzip_message
from afkak.test.brokers import consume, shared_broker
from afkak.test.helpers import wait

_names = itertools.count()


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


@inlineCallbacks
def afkak21_app(bootstrap: str, topic: str, group: str) -> Any:
    """The application: write, then read back with a Consumer and a ConsumerGroup."""
    # TCP4ClientEndpoint only keeps resolver threads out of the test (21.5 had the keyword).
    client = KafkaClient(bootstrap, clientId="afkak21-app", endpoint_factory=TCP4ClientEndpoint)
    RoundRobinPartitioner.set_random_start(False)
    try:
        yield client.load_metadata_for_topics(topic)
        written: list[tuple[bytes | None, bytes | None]] = []

        # send_produce_request: plain, gzip and snappy message sets; [0]; mixed lists.
        plain = create_message_set([SendRequest(topic, b"p", _values("plain", 3), None)])
        gzipped = create_message_set(
            [SendRequest(topic, b"g", _values("gzip", 4), None)], CODEC_GZIP
        )
        snapped = create_message_set(
            [SendRequest(topic, None, _values("snappy", 5), None)], CODEC_SNAPPY
        )
        mixed = [create_message(b"first"), gzipped[0], create_message(b"last", b"k")]
        hand = create_gzip_message([create_message(b"hand-1"), create_message(b"hand-2")])
        offsets = []
        for messages in (plain, gzipped, snapped, snapped[:1], mixed, [hand]):
            [response] = yield client.send_produce_request(
                [ProduceRequest(topic, 0, messages)], acks=1, timeout=1000
            )
            offsets.append(response.offset)
        written += [(b"p", v) for v in _values("plain", 3)]
        written += [(b"g", v) for v in _values("gzip", 4)]
        written += [(None, v) for v in _values("snappy", 5)] * 2
        written += [(None, b"first"), *[(b"g", v) for v in _values("gzip", 4)], (b"k", b"last")]
        written += [(None, b"hand-1"), (None, b"hand-2")]

        # Producer without and with batch_send.
        producer = Producer(client, req_acks=1)
        yield producer.send_messages(topic, msgs=_values("unbatched", 3))
        written += [(None, v) for v in _values("unbatched", 3)]
        yield producer.stop()
        batcher = Producer(
            client, codec=CODEC_GZIP, batch_send=True, batch_every_n=5, batch_every_t=None
        )
        ds = [batcher.send_messages(topic, b"b", [v]) for v in _values("batched", 5)]
        yield DeferredList(ds, fireOnOneErrback=True, consumeErrors=True)  # the 5th fires the batch
        written += [(b"b", v) for v in _values("batched", 5)]
        yield batcher.stop()

        # A Consumer with a commit policy, committing as it goes and when shut down.
        read: list[tuple[bytes | None, bytes | None]] = []
        done: Deferred[None] = Deferred()

        def process(consumer: Consumer, messages: list[Any]) -> None:
            read.extend((m.message.key, m.message.value) for m in messages)
            if len(read) >= len(written) and not done.called:
                done.callback(None)

        consumer = Consumer(
            client,
            topic,
            0,
            process,
            consumer_group=group,
            auto_commit_every_n=10,
            auto_commit_every_ms=1000,
            fetch_max_wait_time=100,
        )
        consumer.start(OFFSET_EARLIEST)
        yield done
        yield consumer.shutdown()
        [committed] = yield client.send_offset_fetch_request(group, [OffsetFetchRequest(topic, 0)])

        # A ConsumerGroup whose Consumers get consumer_kwargs.
        group_read: list[tuple[bytes | None, bytes | None]] = []
        group_done: Deferred[None] = Deferred()

        def group_process(consumer: Consumer, messages: list[Any]) -> None:
            group_read.extend((m.message.key, m.message.value) for m in messages)
            if len(group_read) >= len(written) and not group_done.called:
                group_done.callback(None)

        cg = ConsumerGroup(
            client,
            group + "-cg",
            [topic],
            group_process,
            consumer_kwargs={"auto_offset_reset": OFFSET_EARLIEST, "fetch_max_wait_time": 100},
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            retry_backoff_ms=100,
        )
        cg.start()
        yield group_done
        kwargs_seen = {c.fetch_max_wait_time for cs in cg.consumers.values() for c in cs}
        yield cg.shutdown()
        return {
            "written": written,
            "offsets": offsets,
            "read": read,
            "committed": committed.offset,
            "group_read": group_read,
            "kwargs_seen": kwargs_seen,
        }
    finally:
        yield client.close()


class Afkak21AppTests(SynchronousTestCase):
    def test_runs_unchanged_on_kafka(self) -> None:
        broker = shared_broker("kafka")
        n = next(_names)
        topic = f"afkak21-app-{n}-{int(time.time())}"
        broker.create_topic(topic, 1)
        result = wait(afkak21_app(broker.bootstrap, topic, f"afkak21-app-group-{n}"), 120)
        written = result["written"]
        self.assertEqual(result["offsets"], [0, 3, 7, 12, 17, 23])
        self.assertEqual(result["read"], written)
        self.assertEqual(result["group_read"], written)
        self.assertEqual(result["kwargs_seen"], {100})
        self.assertEqual(result["committed"], len(written))  # the next offset to consume
        records = consume(broker.bootstrap, topic, len(written), partitions=[0], timeout=30)
        self.assertEqual([(r.key, r.value) for r in records], written)
        self.assertEqual([r.offset for r in records], list(range(len(written))))
