"""Consuming one partition with a Consumer that commits its progress for a group.

Usage: python docs/examples/consume.py [host:port]
"""

import sys

from twisted.internet import defer, task

from afkak import Consumer, KafkaClient
from afkak.common import OFFSET_COMMITTED, OFFSET_EARLIEST


async def main(reactor, bootstrap="127.0.0.1:9092", wanted=3):
    client = KafkaClient(bootstrap, clientId="example-consumer", reactor=reactor)
    seen = []
    enough = defer.Deferred()

    def processor(consumer, messages):
        # messages: SourcedMessage(topic, partition, offset, message) of one fetch.
        for m in messages:
            print(f"{m.partition}@{m.offset}: key={m.message.key!r} value={m.message.value!r}")
        seen.extend(messages)
        if len(seen) >= wanted and not enough.called:
            enough.callback(None)
        # Returning a Deferred here would hold back the next batch until it fires.

    consumer = Consumer(
        client,
        "orders",
        0,
        processor,
        consumer_group="order-readers",  # offsets are committed for this group
        auto_offset_reset=OFFSET_EARLIEST,  # no committed offset yet: start at the beginning
    )
    try:
        finished = consumer.start(OFFSET_COMMITTED)  # resume after the last committed offset
        await enough
        last = await consumer.shutdown()  # process what is in hand, commit, stop
        await finished
        print(f"read {len(seen)} messages; committed up to offset {last}")
    finally:
        await client.close()


if __name__ == "__main__":
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, *sys.argv[1:])))
