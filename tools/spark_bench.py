"""Read throughput: Spark local[N] through the ``afkak`` data source vs afkak Consumers.

Fills a 4-partition topic with 1,000,000 records of 100 bytes (on a private
Tansu broker unless ``--bootstrap`` names one), then reads all of them:

- with Spark (``local[2]``): ``sum(length(value))`` over the afkak source,
  once cold (Python workers starting) and then warm;
- with afkak's Consumer, one per partition on one KafkaClient, in this
  process (the global reactor in a thread, as in Spark's workers).

Run: ``python tools/spark_bench.py [--records N] [--master local[2]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from twisted.internet.defer import Deferred, gatherResults

from afkak.client import KafkaClient
from afkak.common import Message, ProduceRequest
from afkak.consumer import Consumer
from afkak.message_set import MessageSet
from afkak.spark import _bridge

PARTITIONS = 4
CHUNK = 5000


async def fill(client: KafkaClient, topic: str, records: int, size: int) -> dict[str, int]:
    """Write *records* values of *size* bytes round-robin; the end offset of each partition."""
    ends = dict.fromkeys(range(PARTITIONS), 0)
    value = b"x" * size
    sent = 0
    while sent < records:
        batch = []
        for p in range(PARTITIONS):
            n = min(CHUNK, records - sent)
            if n <= 0:
                break
            messages = MessageSet([Message(0, 0, None, value)] * n)
            batch.append(ProduceRequest(topic, p, messages))
            ends[p] += n
            sent += n
        await client.send_produce_request(batch, acks=1)
    return {str(p): n for p, n in ends.items()}


async def consume_all(client: KafkaClient, topic: str, ends: dict[str, int]) -> int:
    """Read every partition to its end with one Consumer each; the bytes of values read."""
    total = [0]
    done = []

    for p, end in ends.items():
        finished: Deferred[None] = Deferred()

        def process(
            consumer: Consumer, messages: list[Any], end: int = end, d: Any = finished
        ) -> None:
            for m in messages:
                total[0] += len(m.message.value)
            if messages[-1].offset + 1 >= end:
                consumer.stop()
                d.callback(None)

        consumer = Consumer(client, topic, int(p), process, buffer_size=8 * 1024 * 1024)
        consumer.start(0)
        done.append(finished)
    await gatherResults(done)
    return total[0]


def spark_read(spark: Any, bootstrap: str, topic: str, ends: dict[str, int]) -> tuple[float, int]:
    df = (
        spark.read.format("afkak")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("endingOffsets", json.dumps({topic: ends}))
        .load()
    )
    started = time.perf_counter()
    [row] = df.selectExpr("count(*) as n", "sum(length(value)) as bytes").collect()
    return time.perf_counter() - started, row.n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--bootstrap", help="an existing broker (default: start Tansu)")
    args = parser.parse_args()

    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from afkak.test.brokers import shared_broker

        bootstrap = shared_broker("tansu").bootstrap
    topic = f"spark-bench-{os.getpid()}"

    client = _bridge.call(30, KafkaClient, bootstrap, clientId="spark-bench")
    _bridge.call(30, client.load_metadata_for_topics, topic)
    if len(client.topic_partitions.get(topic, ())) != PARTITIONS:
        sys.exit(f"{topic} should have {PARTITIONS} partitions (Tansu's auto-create default)")
    started = time.perf_counter()
    ends = _bridge.call(
        600, lambda: Deferred.fromCoroutine(fill(client, topic, args.records, args.size))
    )
    print(f"filled {args.records:,} records in {time.perf_counter() - started:.1f} s: {ends}")

    started = time.perf_counter()
    read = _bridge.call(600, lambda: Deferred.fromCoroutine(consume_all(client, topic, ends)))
    elapsed = time.perf_counter() - started
    assert read == args.records * args.size, read
    print(
        f"afkak Consumer x{PARTITIONS}, 1 process: {elapsed:.2f} s, "
        f"{args.records / elapsed:,.0f} records/s"
    )

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from afkak.spark import AfkakDataSource

    spark = (
        SparkSession.builder.master(args.master)
        .appName("afkak-spark-bench")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(AfkakDataSource)
    for run in ("cold", "warm", "warm"):
        elapsed, n = spark_read(spark, bootstrap, topic, ends)
        assert n == args.records, n
        print(f"Spark {args.master} ({run}): {elapsed:.2f} s, {n / elapsed:,.0f} records/s")
    spark.stop()


if __name__ == "__main__":
    main()
