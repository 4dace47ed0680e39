"""Consuming topics as a member of a consumer group: Kafka spreads their partitions.

Start it several times and the group's partitions are split among the processes.
Usage: python docs/examples/group.py [host:port]
"""

import sys

from twisted.internet import defer, task

from afkak import ConsumerGroup, KafkaClient
from afkak.common import OFFSET_EARLIEST


async def main(reactor, bootstrap="127.0.0.1:9092", wanted=3):
    client = KafkaClient(bootstrap, clientId="example-group", reactor=reactor)
    seen = []
    enough = defer.Deferred()

    def processor(consumer, messages):
        for m in messages:
            print(f"{m.topic}/{m.partition}@{m.offset}: {m.message.value!r}")
        seen.extend(messages)
        if len(seen) >= wanted and not enough.called:
            enough.callback(None)
        # A Deferred returned here (say, from a database write) is waited for
        # before this partition's next batch, and before its offset is committed.
        return task.deferLater(reactor, 0, lambda: None)

    def assigned(partitions):
        print("assigned:", ", ".join(f"{tp.topic}/{tp.partition}" for tp in partitions))

    def revoked(partitions):
        print("revoked:", ", ".join(f"{tp.topic}/{tp.partition}" for tp in partitions))

    group = ConsumerGroup(
        client,
        "order-processors",
        ["orders"],
        processor,
        assignors=["cooperative-sticky", "range"],
        on_assigned=assigned,
        on_revoked=revoked,
        auto_offset_reset=OFFSET_EARLIEST,  # where partitions without a committed offset start
        auto_commit_every_ms=1000,  # a Consumer option, passed to each partition's Consumer
    )
    try:
        stopped = group.start()  # fires when the group stops, fails on a fatal error
        await enough
        offsets = await group.shutdown()  # finish, commit, leave the group
        await stopped
        print(f"read {len(seen)} messages; last offsets {sorted(offsets.values())}")
    finally:
        await client.close()


if __name__ == "__main__":
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, *sys.argv[1:])))
