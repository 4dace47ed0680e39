"""1,000 partitions (100 topics x 10) on one Apache Kafka node: afkak beside confluent-kafka.

Measures, each client in its own subprocess (its CPU seconds are that
process's, librdkafka's threads included):

* metadata: the CPU of a Metadata refresh of all 100 topics (median of 5;
  afkak ``load_metadata_for_topics(*topics)``, confluent-kafka
  ``AdminClient.list_topics(topic)`` per topic is not the same request, so
  its ``list_topics()`` of the whole cluster), and the Python heap that
  afkak's client keeps for the 1,000 partitions' metadata (tracemalloc)
  per partition;
* produce: --count records of 100 B, record i to topic i % 100 (the
  partitioner spreads them over its 10 partitions), acks=1, linger 5 ms,
  64 KiB batches, idempotence off; afkak ``send()`` per record with the
  Deferreds gathered, confluent-kafka ``produce()`` + ``poll(0)`` then
  ``flush()``; CPU us per record and records/s.

Usage: python tools/bench_scale.py [--count N] [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]

TOPICS = 100
PARTITIONS = 10


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _topics(prefix: str) -> list[str]:
    return [f"{prefix}-{i}" for i in range(TOPICS)]


def afkak_worker(bootstrap: str, prefix: str, count: int) -> dict[str, Any]:
    import tracemalloc

    from twisted.internet import reactor
    from twisted.internet.defer import ensureDeferred, gatherResults
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.client import KafkaClient
    from afkak.producer import Producer

    topics = _topics(prefix)
    out: dict[str, Any] = {}

    async def work() -> None:
        client = KafkaClient(bootstrap, endpoint_factory=TCP4ClientEndpoint)
        await client.load_metadata_for_topics(topics[0])  # connected
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        await client.load_metadata_for_topics(*topics)
        out["heap_per_partition"] = (tracemalloc.get_traced_memory()[0] - before) / (
            TOPICS * PARTITIONS
        )
        tracemalloc.stop()
        cpus = []
        for _ in range(5):
            began = _cpu()
            await client.load_metadata_for_topics(*topics)
            cpus.append(_cpu() - began)
        out["metadata_cpu_ms"] = statistics.median(cpus) * 1000
        producer = Producer(
            client, req_acks=1, enable_idempotence=False, linger_ms=5, batch_size=64 * 1024
        )
        await gatherResults([producer.send(t, b"warm-up") for t in topics])
        value = b"x" * 100
        cpu, wall = _cpu(), time.perf_counter()
        sent = [producer.send(topics[i % TOPICS], value) for i in range(count)]
        await gatherResults(sent, consumeErrors=True)
        out["produce_cpu"], out["produce_wall"] = _cpu() - cpu, time.perf_counter() - wall
        await producer.stop()
        await client.close()

    def go() -> None:
        d = ensureDeferred(work())
        d.addErrback(lambda f: out.setdefault("error", f.getTraceback()))
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run(installSignalHandlers=False)  # type: ignore[attr-defined]
    return out


def confluent_worker(bootstrap: str, prefix: str, count: int) -> dict[str, Any]:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    topics = _topics(prefix)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=30)
    cpus = []
    for _ in range(5):
        began = _cpu()
        admin.list_topics(timeout=30)
        cpus.append(_cpu() - began)
    out: dict[str, Any] = {"metadata_cpu_ms": statistics.median(cpus) * 1000}
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "enable.idempotence": False,
            "linger.ms": 5,
            "batch.size": 64 * 1024,
        }
    )
    for t in topics:
        producer.produce(t, b"warm-up")
    producer.flush(60)
    value = b"x" * 100
    produce, poll = producer.produce, producer.poll
    cpu, wall = _cpu(), time.perf_counter()
    for i in range(count):
        while True:
            try:
                produce(topics[i % TOPICS], value)
                break
            except BufferError:
                poll(0.001)
        poll(0)
    if producer.flush(120):
        raise RuntimeError("flush timed out")
    out["produce_cpu"], out["produce_wall"] = _cpu() - cpu, time.perf_counter() - wall
    return out


WORKERS = {"afkak": afkak_worker, "confluent-kafka": confluent_worker}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--bootstrap", help="use this broker instead of starting Kafka")
    args = parser.parse_args()
    if args.worker:
        name, bootstrap, prefix, count = args.worker
        print(json.dumps(WORKERS[name](bootstrap, prefix, int(count))))
        return
    from afkak.test.brokers import KafkaBroker

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = KafkaBroker().start()
        bootstrap = broker.bootstrap
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        prefix = f"scale-{os.getpid()}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        began = time.monotonic()
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in _topics(prefix)],
            operation_timeout=120,
        )
        for future in futures.values():
            future.result(180)
        print(f"created {TOPICS} x {PARTITIONS} partitions in {time.monotonic() - began:.1f} s")
        for name in WORKERS:
            load = os.getloadavg()[0]
            argv = [sys.executable, __file__, "--worker", name, bootstrap, prefix, str(args.count)]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode:
                print(f"{name}: FAILED {done.stderr[-2000:]}")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            if "error" in r:
                print(f"{name}: FAILED {r['error']}")
                continue
            line = (
                f"{name:16} metadata refresh {r['metadata_cpu_ms']:7.1f} ms CPU;"
                f" produce {args.count / r['produce_wall']:9,.0f} records/s,"
                f" {r['produce_cpu'] / args.count * 1e6:6.2f} CPU us/record"
            )
            if "heap_per_partition" in r:
                line += f"; metadata heap {r['heap_per_partition']:.0f} B/partition"
            print(f"{line}  (load {load:.1f})", flush=True)
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
