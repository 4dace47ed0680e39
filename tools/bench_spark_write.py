"""CPU of the Spark writer's Python side, in this process, per kind of row.

What a Spark write task runs for each Arrow batch (``arrow_to_outgoing``,
then ``afkak.spark._kafka.send`` on a Producer placing records as Kafka's
default partitioner), on the fake cluster with a Clock: no JVM, no broker, no
sockets, so the figures are CPU seconds of afkak's own work and comparable
between row kinds (``--rows`` of ``tools/spark_bench.py``: unkeyed, a
distinct key each, a key and a header each) and between checkouts on a
loaded machine.  The kinds run interleaved; each figure is the median of
``--repeat`` passes over ``--records`` rows of 100 bytes in Arrow batches of
10,000 (Spark's ``maxRecordsPerBatch``) to a 4-partition topic.  The fake
broker's share (it decodes every batch) is in ``total`` only.

With ``--kafka`` the same batches go through the Spark writer's own loop
(``_worker.send_rows``: the producer in the reactor thread, the next batch
converted meanwhile) to a local Apache Kafka broker, each pass into a new
4-partition topic: the figures are then this process's CPU (both threads,
sockets included; the broker's apart) per row, as in a Spark Python worker.

Usage: python tools/bench_spark_write.py [--records N] [--repeat R]
[--rows unkeyed keyed headers] [--profile KIND] [--kafka]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa
from twisted.internet.defer import ensureDeferred
from twisted.internet.task import Clock

from afkak.client import KafkaClient
from afkak.spark import _kafka
from afkak.spark._rows import arrow_to_outgoing
from afkak.testing import FakeKafkaCluster

PER_BATCH = 10_000
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
KINDS = ("unkeyed", "keyed", "headers")


def arrow_batches(kind: str, records: int) -> list[pa.RecordBatch]:
    """*records* rows as ``spark_bench --rows kind`` writes them, in Arrow batches."""
    batches = []
    for start in range(0, records, PER_BATCH):
        ids = range(start, min(start + PER_BATCH, records))
        # strings, as spark_bench's rows (``repeat('x', 100)``, ``cast(id as string)``)
        columns: dict[str, pa.Array] = {"value": pa.array(["x" * 100] * len(ids), pa.string())}
        if kind != "unkeyed":
            columns["key"] = pa.array([str(i) for i in ids], pa.string())
        if kind == "headers":
            columns["headers"] = pa.array(
                [[{"key": "h", "value": str(i).encode()}] for i in ids], HEADERS
            )
        batches.append(pa.RecordBatch.from_pydict(columns))
    return batches


class Writer:
    """A Producer on a fake cluster, sending Arrow batches as a Spark write task does."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.cluster = FakeKafkaCluster(brokers=1, reactor=self.clock)
        client = KafkaClient(
            self.cluster.bootstrap_hosts,
            reactor=self.clock,
            endpoint_factory=self.cluster.endpoint_factory,
        )
        self.producer = _kafka.make_producer(client, {"linger_ms": 5})

    def write(self, topic: str, batches: list[pa.RecordBatch]) -> tuple[float, float, float]:
        """CPU seconds converting the batches, in the send calls, and in all."""
        convert = call = 0.0
        began = time.process_time()
        for batch in batches:
            t0 = time.process_time()
            out = arrow_to_outgoing(batch, topic)
            t1 = time.process_time()
            d = ensureDeferred(_kafka.send(self.producer, out, 1 << 20))
            convert, call = convert + t1 - t0, call + time.process_time() - t1
            results: list[Any] = []
            d.addBoth(results.append)
            while not results:
                self.clock.advance(0.005)
            if results[0] is not None:
                results[0].raiseException()
        return convert, call, time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--profile", choices=KINDS, help="cProfile one pass of this kind")
    parser.add_argument(
        "--kafka", action="store_true", help="through send_rows to a local Kafka broker instead"
    )
    args = parser.parse_args()
    if args.kafka:
        on_kafka(args)
        return
    writer = Writer()
    data = {}
    for kind in args.rows:
        writer.cluster.create_topic(kind, partitions=4)
        data[kind] = arrow_batches(kind, args.records)
        writer.write(kind, data[kind][:2])  # metadata, warm
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(writer.write, args.profile, data[args.profile])
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
        return
    passes: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in args.rows}
    for _ in range(args.repeat):
        for kind in args.rows:
            passes[kind].append(writer.write(kind, data[kind]))
    print(f"{args.records:,} rows, CPU s, medians of {args.repeat}; load {os.getloadavg()[0]:.1f}")
    for kind, runs in passes.items():
        convert, call, total = (statistics.median(run[i] for run in runs) for i in range(3))
        print(
            f"{kind:8s} convert {convert:.3f}  send {call:.3f}  total {total:.3f}"
            f"  ({args.records / total:,.0f} rows/s of CPU)"
        )


def on_kafka(args: argparse.Namespace) -> None:
    """``--kafka``: each kind's passes through ``send_rows`` to a local broker, interleaved."""
    from afkak.spark import _bridge, _worker
    from afkak.spark._options import parse_write_options
    from afkak.test.brokers import shared_broker

    broker = shared_broker("kafka")
    data = {kind: arrow_batches(kind, args.records) for kind in args.rows}
    topics = (f"bench-write-{os.getpid()}-{n}" for n in range(1_000_000))

    def send(kind: str) -> tuple[float, float]:
        """This process's CPU seconds and the seconds of one pass of *kind*."""
        topic = next(topics)
        broker.create_topic(topic, 4)
        opts = parse_write_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic})
        producer = _worker.producer_for(opts)
        cpu, wall = time.process_time(), time.perf_counter()
        _worker.send_rows(producer, opts, data[kind])
        return time.process_time() - cpu, time.perf_counter() - wall

    for kind in args.rows:
        send(kind)  # the producer, its connections and the workers' code warm
    if args.profile:
        main_thread, reactor = cProfile.Profile(), cProfile.Profile()
        _bridge.call(10, reactor.enable)
        main_thread.runcall(send, args.profile)
        _bridge.call(10, reactor.disable)
        for name, profile in (("converting thread", main_thread), ("reactor thread", reactor)):
            print(f"-- {name}")
            pstats.Stats(profile).sort_stats("tottime").print_stats(15)
        return
    passes: dict[str, list[tuple[float, float]]] = {kind: [] for kind in args.rows}
    for _ in range(args.repeat):
        for kind in args.rows:
            passes[kind].append(send(kind))
    print(
        f"{args.records:,} rows to Kafka, medians of {args.repeat}; load {os.getloadavg()[0]:.1f}"
    )
    for kind, runs in passes.items():
        cpu, wall = (statistics.median(run[i] for run in runs) for i in range(2))
        print(
            f"{kind:8s} {cpu / args.records * 1e6:.2f} us/row of CPU"
            f"  ({', '.join(f'{run[0]:.2f}' for run in runs)} s)  {args.records / wall:,.0f} rows/s"
        )


if __name__ == "__main__":
    main()
