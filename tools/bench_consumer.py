"""Benchmark afkak's Consumer against aiokafka's and kafka-python's on a real broker.

Starts a broker from afkak's test harness (Tansu by default), produces N
records of 100 bytes to a one-partition topic with confluent-kafka, then
times each client reading them all from offset 0, with a processor that only
counts.  Prints records per second of wall-clock time and per second of
this process's CPU time (steadier on a busy machine), best of R runs.

Usage: python tools/bench_consumer.py [--records N] [--repeat R] [--broker NAME]
       [--clients afkak,aiokafka,kafka-python]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from afkak.test.brokers import produce, shared_broker

VALUE = b"v" * 100


def afkak_consume(bootstrap: str, topic: str, count: int) -> float:
    from twisted.internet import reactor
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.client import KafkaClient
    from afkak.consumer import Consumer

    client = KafkaClient(bootstrap, endpoint_factory=TCP4ClientEndpoint)
    seen = [0]
    done: list[Any] = []

    def processor(consumer: Consumer, messages: list[Any]) -> None:
        seen[0] += len(messages)
        if seen[0] >= count and not done:
            done.append(consumer.stop())

    consumer = Consumer(client, topic, 0, processor, buffer_size=1024 * 1024)
    start = time.perf_counter()
    d = consumer.start(0)
    while not done:
        reactor.iterate(0.05)  # type: ignore[attr-defined]  # returns at the next I/O
    elapsed = time.perf_counter() - start
    d.addErrback(lambda f: f.printTraceback())
    closed = client.close()
    while not closed.called:
        reactor.iterate(0.01)  # type: ignore[attr-defined]
    return elapsed


def aiokafka_consume(bootstrap: str, topic: str, count: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> float:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, max_partition_fetch_bytes=1 << 20
        )
        await consumer.start()
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = 0
        start = time.perf_counter()
        while seen < count:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=100_000)
            seen += sum(len(v) for v in batch.values())
        elapsed = time.perf_counter() - start
        await consumer.stop()
        return elapsed

    return asyncio.run(run())


def kafka_python_consume(bootstrap: str, topic: str, count: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, max_partition_fetch_bytes=1 << 20
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    seen = 0
    start = time.perf_counter()
    while seen < count:
        batch = consumer.poll(timeout_ms=1000, max_records=100_000)
        seen += sum(len(v) for v in batch.values())
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


CLIENTS = {
    "afkak": afkak_consume,
    "aiokafka": aiokafka_consume,
    "kafka-python": kafka_python_consume,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--broker", default="tansu")
    parser.add_argument("--clients", default="afkak,aiokafka")
    args = parser.parse_args()
    broker = shared_broker(args.broker)
    topic = f"bench-consumer-{os.getpid()}"
    broker.create_topic(topic, 1)
    produce(
        broker.bootstrap,
        topic,
        (VALUE for _ in range(args.records)),
        partition=0,
        timeout=120,
        config={"linger.ms": 50, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000},
    )
    print(f"{args.records} records of {len(VALUE)} B on {args.broker}, best of {args.repeat}")
    for name in args.clients.split(","):
        walls, cpus = [], []
        for _ in range(args.repeat):
            cpu = time.process_time()
            walls.append(CLIENTS[name](broker.bootstrap, topic, args.records))
            cpus.append(time.process_time() - cpu)
        print(
            f"{name:14} {args.records / min(walls):12,.0f} records/s"
            f" {args.records / min(cpus):12,.0f} records/CPU-s"
        )


if __name__ == "__main__":
    main()
