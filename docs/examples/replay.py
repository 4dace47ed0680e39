"""Steering a consumer group: start from a time, skip a poison record, pause, commit by hand.

Usage: python docs/examples/replay.py [host:port]
"""

import sys

from twisted.internet import defer, task

from afkak import ConsumerGroup, KafkaClient, Producer
from afkak.common import TopicAndPartition
from afkak.consumer import OffsetAndMetadata

TP = TopicAndPartition("payments", 0)


async def main(reactor, bootstrap="127.0.0.1:9092"):
    client = KafkaClient(bootstrap, clientId="example-replay", reactor=reactor)
    producer = Producer(client)
    values = [b"pay 1", b"pay 2", b"POISON", b"pay 3", b"pay 4"]
    start = int(reactor.seconds() * 1000) - 60_000  # a minute ago, in ms
    for i, value in enumerate(values):  # one second apart
        await producer.send("payments", value, partition=0, timestamp=start + 1000 * i)
    seen = []
    done = defer.Deferred()
    group = None

    def processor(consumer, messages):
        for m in messages:
            if m.message.value == b"POISON":
                print(f"skipping the poison record at {m.offset}")
                # Takes effect once this call returns: nothing after it in this batch
                # is delivered, the next call starts at the offset given.
                group.seek(TP, m.offset + 1)
                return None
            seen.append(m.message.value)
        if len(seen) == 3 and not done.called:
            done.callback(None)
        return None

    async def from_a_time(partitions):
        # Called before the partitions' consumers start: seek here to choose where.
        found = await group.offsets_for_times({tp: start + 1000 for tp in partitions})
        for tp, offset in found.items():
            if offset is not None:
                print(f"{tp.topic}/{tp.partition}: starting at offset {offset}")
                group.seek(tp, offset)

    group = ConsumerGroup(
        client,
        "payment-replayer",
        ["payments"],
        processor,
        on_assigned=lambda partitions: defer.ensureDeferred(from_a_time(partitions)),
        assignors=["range"],
        session_timeout_ms=6000,
        auto_commit_every_ms=0,  # commits below are by hand
    )
    try:
        stopped = group.start()
        await done
        print("processed:", seen)
        group.pause(TP)  # keeps the membership, stops fetching this partition
        print("paused:", sorted(group.paused()))
        group.resume(TP)
        print("position:", await group.position(TP))
        await group.commit({TP: OffsetAndMetadata(5, "replayed after the 2nd")})
        print("committed:", await group.committed(TP))
        await group.shutdown()
        await stopped
    finally:
        await producer.stop()
        await client.close()


if __name__ == "__main__":
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, *sys.argv[1:])))
