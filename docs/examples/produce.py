"""Producing: one record at a time, with keys, headers and compression, then a batch.

Usage: python docs/examples/produce.py [host:port]
"""

import sys

from twisted.internet import defer, task

from afkak import CODEC_GZIP, HashedPartitioner, KafkaClient, Producer


async def main(reactor, bootstrap="127.0.0.1:9092"):
    client = KafkaClient(bootstrap, clientId="example-producer", reactor=reactor)
    # Idempotent with acks=all by default: retries never write a record twice.
    # HashedPartitioner sends equal keys to the same partition; gzip compresses each batch.
    producer = Producer(client, partitioner_class=HashedPartitioner, codec=CODEC_GZIP)
    try:
        # send() fires with the record's RecordMetadata once the broker acknowledged it.
        written = await producer.send(
            "orders",
            b'{"item": "tea", "count": 2}',
            key=b"customer-42",
            headers=[("content-type", b"application/json")],
        )
        print(f"order at {written.topic}/{written.partition}@{written.offset}")

        # Many sends at once: they share record batches; wait for all of them.
        sends = [producer.send("orders", b"order %d" % i, key=b"customer-7") for i in range(10)]
        results = await defer.gatherResults(sends, consumeErrors=True)
        print(f"10 orders at offsets {results[0].offset}..{results[-1].offset}")

        # afkak 21.5's call: several values under one key, one response for all of them.
        response = await producer.send_messages("orders", b"customer-9", [b"a", b"b", b"c"])
        print(f"3 orders from offset {response.offset}")
    finally:
        await producer.stop()  # sends still outstanding fail with CancelledError
        await client.close()


if __name__ == "__main__":
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, *sys.argv[1:])))
