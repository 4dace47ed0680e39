"""The pull-style consumer: poll for records in a loop, as with the Java client or aiokafka.

Usage: python docs/examples/pull.py [host:port]
"""

import json
import sys

from twisted.internet import defer, task

from afkak import KafkaClient, KafkaConsumer, Producer


async def main(reactor, bootstrap="127.0.0.1:9092"):
    client = KafkaClient(bootstrap, clientId="example-pull", reactor=reactor)
    producer = Producer(client)
    consumer = KafkaConsumer(
        client,
        group_id="click-counters",
        value_deserializer=json.loads,  # records arrive as Python objects
        max_poll_records=100,  # the most records one getmany() returns
        session_timeout_ms=6000,
        assignors=["range"],
    )
    try:
        clicks = [{"page": f"/p/{i % 3}"} for i in range(6)]
        await defer.gatherResults(
            [producer.send("clicks", json.dumps(c).encode(), partition=0) for c in clicks],
            consumeErrors=True,
        )
        consumer.subscribe(["clicks"])  # a new group reads the backlog first
        counts = {}
        while sum(counts.values()) < len(clicks):
            # {TopicAndPartition: [record, ...]}; {} if nothing came within the timeout.
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    page = record.message.value["page"]
                    counts[page] = counts.get(page, 0) + 1
        print("clicks per page:", dict(sorted(counts.items())))
        await consumer.commit()  # what the polls returned; auto-commit does it too

        await producer.send("clicks", json.dumps({"page": "/late"}).encode(), partition=0)
        async for record in consumer:  # one record at a time
            print(f"then {record.message.value} at offset {record.offset}")
            break
    finally:
        await consumer.close()  # commit, leave the group
        await producer.stop()
        await client.close()


if __name__ == "__main__":
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, *sys.argv[1:])))
