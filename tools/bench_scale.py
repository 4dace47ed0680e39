"""1,000 partitions (100 topics x 10) on one Apache Kafka node: afkak beside confluent-kafka.

Each measurement runs in its own subprocess (its CPU seconds are that
process's, librdkafka's threads included), the clients round-robin for
--rounds rounds against the same broker (started here: --broker kafka, as
tools/bench_clients.py does; or --bootstrap HOST:PORT); the table shows each
row's median and the 1-minute load average when its runs started.  Every
client runs at its defaults (confluent-kafka consumers also get
``auto.offset.reset=earliest``: its default, latest, would read nothing of the
backlog; afkak's new groups read it by default).  Workloads (--workloads):

* metadata: the CPU of a Metadata refresh of all 100 topics (median of 5;
  afkak ``load_metadata_for_topics(*topics)``, confluent-kafka
  ``list_topics()``, the whole cluster) and the Python heap that afkak's
  client keeps for the 1,000 partitions' metadata (tracemalloc, after a
  collection).
* produce: --count records of 100 B, record i to topic i % 100, the
  partitioner spreading them over its 10 partitions; afkak ``Producer(client)``
  with ``send()`` per record, the Deferreds gathered, and with
  ``send_messages`` per record (the Deferreds dropped but one per topic);
  confluent-kafka ``produce()`` + ``poll(0)``, then ``flush()``.  The
  reactor turns every 1,000 sends (as in bench_clients.py).
* consume: --consume-count records of 100 B written once over the 1,000
  partitions, read by a fresh group each run: afkak
  ``KafkaConsumer(client, group_id=...)`` subscribed to the 100 topics,
  ``getmany()`` in a loop, and a ``ConsumerGroup`` with a processor;
  confluent-kafka ``subscribe()`` + ``consume(10000)`` reading each
  ``value()``.  Rates count from the first record (the join before it is
  shown apart); CPU per record counts from ``subscribe``; "fetch/s" and
  "records/fetch" count Fetch requests (afkak's fetchers, librdkafka's
  statistics).
* memory: --idle clients connected to the broker and idle, in one process:
  RSS per client with one topic's metadata, then per partition once each
  client holds all 1,000 partitions' metadata; sockets and threads per client.
  For afkak also the tracemalloc heap, measured on another --idle / 5 clients:
  tracemalloc's record of each live allocation (about 60 B) is RSS too, so
  RSS is measured without it.  afkak: ``KafkaClient`` with
  ``load_metadata_for_topics``; confluent-kafka: ``Producer`` with
  ``list_topics``.
* many: --pairs producers and as many consumers in one process, on 100
  topics of 10 partitions, producer k writing --many-count / pairs records to
  topics 2k and 2k+1 while consumer k reads their 20 partitions from their
  ends before the run (assigned, no group; afkak ``seek``s there).  afkak:
  each on its own ``KafkaClient``, one reactor, ``send()`` gathered and
  ``getmany()``, and a bulk variant with ``send_records`` (a call and a
  Deferred per topic every 100 records, gathered); confluent-kafka: the 2 x
  pairs client objects polled in turn by one thread (``produce`` + ``poll(0)``,
  ``consume(1000, 0)``; 1 ms sleep after a pass that moved nothing), and a
  variant creating a Twisted Deferred per ``produce``, fired by its delivery
  report and gathered (what a Twisted application would use instead of
  ``send()``).  Ratios are to the first, raw confluent-kafka row.  Records/s
  count records produced plus consumed; CPU, peak RSS and threads.

--profile runs afkak's consume and many variants once each under cProfile
instead.  --gc freeze or off (a diagnostic) runs the many variants with the
heap set up before the run frozen, or the cyclic GC off; the many rows show the
collector's seconds and full collections (``gc.callbacks``) either way.

Usage: python tools/bench_scale.py [--rounds R] [--workloads metadata,produce,consume,memory,many]
       [--count N] [--consume-count N] [--idle N] [--pairs N] [--many-count N]
       [--bootstrap HOST:PORT] [--rst FILE] [--profile] [--gc on|freeze|off]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from bench.common import cpu_seconds, payload  # noqa: E402

TOPICS = 100
PARTITIONS = 10
SIZE = 100
#: afkak's sends let the reactor turn every this many (bench_clients.py's --yield-every).
YIELD_EVERY = 1000
#: Seconds a run may take before it is killed and counted as failed.
RUN_TIMEOUT = 600

AFKAK_VARIANTS = {
    "metadata": ("load_metadata_for_topics",),
    "produce": ("defaults send+gather", "defaults send_messages"),
    "consume": ("KafkaConsumer subscribe+getmany", "ConsumerGroup processor"),
    "memory": ("KafkaClient",),
    "many": ("send+gather, getmany", "send_records, getmany"),
}
CONFLUENT_VARIANTS = {
    "metadata": ("list_topics",),
    "produce": ("defaults produce+poll",),
    "consume": ("subscribe+consume+value()",),
    "memory": ("Producer",),
    "many": ("produce+poll, consume", "produce+poll+Deferred, consume"),
}


def topics(prefix: str) -> list[str]:
    return [f"{prefix}-{i}" for i in range(TOPICS)]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def threads() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


def peak_rss_bytes() -> int:
    """This process's peak RSS (VmHWM: ru_maxrss would count the parent's, kept over exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def workload_of(client: str, job: dict[str, Any]) -> Any:
    """The function measuring *job*'s workload for *client*: ``_<client>_<workload>``."""
    return globals()[f"_{client}_{job['workload']}"]


# -- afkak: every workload under one reactor.run(), as an application runs ------------------


def afkak_worker(job: dict[str, Any]) -> dict[str, Any]:
    from twisted.internet import reactor
    from twisted.internet.defer import ensureDeferred

    work = workload_of("afkak", job)
    out: dict[str, Any] = {}

    def go() -> None:
        d = ensureDeferred(work(reactor, job, out))
        d.addErrback(lambda f: out.__setitem__("error", f.getTraceback()))
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run(installSignalHandlers=False)  # type: ignore[attr-defined]
    return out


class Collections:
    """The cyclic GC's collections in a block (``gc.callbacks``): count and CPU seconds
    (the collecting thread's) per generation.  *mode* "freeze" or "off" (a diagnostic)
    freezes the heap set up before the block, or turns the collector off, for it."""

    def __init__(self, mode: str) -> None:
        self._mode = mode
        self._count = [0, 0, 0]
        self._seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            generation = info["generation"]
            self._count[generation] += 1
            self._seconds[generation] += time.thread_time() - self._started

    def __enter__(self) -> Collections:
        import gc

        gc.collect()
        if self._mode == "freeze":
            gc.freeze()
        elif self._mode == "off":
            gc.disable()
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        import gc

        gc.callbacks.remove(self._note)
        gc.enable()
        gc.unfreeze()

    def summary(self) -> dict[str, Any]:
        """Collections per generation, their seconds, and the totals."""
        return {
            "gc_collections": self._count,
            "gc_seconds": self._seconds,
            "gc_s": sum(self._seconds),
            "gc_full": self._count[2],
        }


class Profiled:
    """cProfile over a block, its stats written to *path*; nothing if *path* is None."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._profiler = cProfile.Profile() if path else None

    def __enter__(self) -> None:
        if self._profiler is not None:
            self._profiler.enable()

    def __exit__(self, *exc: object) -> None:
        if self._profiler is not None:
            self._profiler.disable()
            self._profiler.dump_stats(self._path)


def _client(job: dict[str, Any]) -> Any:
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.client import KafkaClient

    return KafkaClient(job["bootstrap"], endpoint_factory=TCP4ClientEndpoint)


def _turn(reactor: Any) -> Any:
    from twisted.internet.task import deferLater

    return deferLater(reactor, 0, lambda: None)


async def _afkak_metadata(reactor: Any, job: dict[str, Any], out: dict[str, Any]) -> None:
    import gc
    import tracemalloc

    names = topics(job["prefix"])
    client = _client(job)
    await client.load_metadata_for_topics(names[0])  # connected
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    await client.load_metadata_for_topics(*names)
    gc.collect()  # what the load left for the collector is not the metadata's
    heap = tracemalloc.get_traced_memory()[0] - before
    out["heap_per_partition"] = heap / (TOPICS * PARTITIONS)
    tracemalloc.stop()
    cpus = []
    for _ in range(5):
        began = cpu_seconds()
        await client.load_metadata_for_topics(*names)
        cpus.append(cpu_seconds() - began)
    out["metadata_cpu_ms"] = statistics.median(cpus) * 1000
    await client.close()


async def _afkak_produce(reactor: Any, job: dict[str, Any], out: dict[str, Any]) -> None:
    from twisted.internet.defer import gatherResults

    from afkak.producer import Producer

    names, count = topics(job["prefix"]), job["count"]
    client = _client(job)
    producer = Producer(client)  # as installed: idempotent, acks=all, linger 0
    await gatherResults([producer.send(t, b"warm-up") for t in names])
    value = payload(SIZE)
    cpu, wall = cpu_seconds(), time.perf_counter()
    if job["variant"] == "defaults send+gather":
        send = producer.send
        sent = []
        for i in range(count):
            sent.append(send(names[i % TOPICS], value))
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await _turn(reactor)
        acks = await gatherResults(sent, consumeErrors=True)
        if len(acks) != count:
            raise RuntimeError(f"{len(acks)} of {count} acknowledged")
    else:
        send_messages = producer.send_messages
        last: dict[str, Any] = {}
        for i in range(count):
            topic = names[i % TOPICS]
            last[topic] = send_messages(topic, None, [value])
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await _turn(reactor)
        await producer.flush()
        await gatherResults(list(last.values()), consumeErrors=True)
    out["cpu"], out["wall"] = cpu_seconds() - cpu, time.perf_counter() - wall
    out["count"] = count
    await producer.stop()
    await client.close()


async def _afkak_consume(reactor: Any, job: dict[str, Any], out: dict[str, Any]) -> None:
    from twisted.internet.defer import Deferred

    from afkak import KafkaConsumer
    from afkak.consumer._broker_fetch import FetchManager
    from afkak.group import ConsumerGroup

    names, count, group_id = topics(job["prefix"]), job["count"], job["group"]
    client = _client(job)
    profiler = cProfile.Profile() if job.get("profile") else None
    seen, first = 0, 0.0
    cpu, wall = cpu_seconds(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    if job["variant"].startswith("KafkaConsumer"):
        consumer = KafkaConsumer(client, group_id=group_id)
        consumer.subscribe(names)
        while seen < count:
            batches = await consumer.getmany(timeout_ms=1000)
            if batches and not first:
                first = time.perf_counter()
            for records in batches.values():
                for record in records:
                    record.message.value  # noqa: B018  (read, as confluent's row does)
                seen += sum(len(records) for records in batches.values())
        stop: Callable[[], Any] = consumer.close
    else:
        done: Deferred[None] = Deferred()
        box = [0, 0.0]

        def processor(consumer: Any, messages: list[Any]) -> None:
            if not box[1]:
                box[1] = time.perf_counter()
            for message in messages:
                message.message.value  # noqa: B018
            box[0] += len(messages)
            if box[0] >= count and not done.called:
                done.callback(None)

        group = ConsumerGroup(client, group_id, names, processor)
        group.start().addErrback(lambda f: done.called or done.errback(f))
        await done
        seen, first = box[0], box[1]
        stop = group.stop
    end = time.perf_counter()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(job["profile"])
    out["cpu"], out["wall"], out["count"] = cpu_seconds() - cpu, end - first, seen
    out["join"] = first - wall
    out["fetches"] = client.shared(FetchManager).requests
    await stop()
    await client.close()


async def _afkak_memory(reactor: Any, job: dict[str, Any], out: dict[str, Any]) -> None:
    import gc
    import tracemalloc

    from afkak.common import OffsetRequest

    names, n = topics(job["prefix"]), job["count"]

    async def connected(client: Any, *of: str) -> None:
        await client.load_metadata_for_topics(*of)
        await client.send_offset_request([OffsetRequest(names[0], 0, -1, 1)])  # the leader's

    warm = _client(job)  # the modules a client imports on first use are not its cost
    await connected(warm, *names)

    async def measure(clients: list[Any], traced: bool) -> dict[str, float]:
        """RSS (untraced: tracemalloc's own record of each allocation is RSS too) or heap."""
        n, per = len(clients), len(clients) * TOPICS * PARTITIONS
        size = (lambda: tracemalloc.get_traced_memory()[0]) if traced else rss_bytes
        gc.collect()
        if traced:
            tracemalloc.start()
        before, base_sockets, base_threads = size(), sockets(), threads()
        for client in clients:
            await connected(client, names[0])
        gc.collect()
        found = {"client": (size() - before) / n}
        found["sockets"], found["threads"] = (
            (sockets() - base_sockets) / n,
            (threads() - base_threads) / n,
        )
        before = size()
        for client in clients:
            await client.load_metadata_for_topics(*names)
        gc.collect()
        found["partition"] = (size() - before) / per
        tracemalloc.stop()
        return found

    clients = [_client(job) for _ in range(n)]
    untraced = await measure(clients, traced=False)
    traced_clients = [_client(job) for _ in range(max(1, n // 5))]
    traced = await measure(traced_clients, traced=True)
    out["rss_per_client"], out["rss_per_partition"] = untraced["client"], untraced["partition"]
    out["heap_per_client"], out["heap_per_partition"] = traced["client"], traced["partition"]
    out["sockets_per_client"], out["threads_per_client"] = untraced["sockets"], untraced["threads"]
    for client in [warm, *clients, *traced_clients]:
        await client.close()


async def _afkak_many(reactor: Any, job: dict[str, Any], out: dict[str, Any]) -> None:
    from twisted.internet.defer import ensureDeferred, gatherResults

    from afkak import KafkaConsumer
    from afkak.producer import Producer

    names, pairs = topics(job["prefix"]), job["pairs"]
    each = job["count"] // pairs
    value = payload(SIZE)
    producer_clients = [_client(job) for _ in range(pairs)]
    consumer_clients = [_client(job) for _ in range(pairs)]
    producers = [Producer(c) for c in producer_clients]
    bulk = job["variant"].startswith("send_records")

    async def produce(k: int) -> None:
        mine, producer = names[2 * k : 2 * k + 2], producers[k]
        send, sent = producer.send, []
        if bulk:  # the same records, a call (and a Deferred) per topic every 100
            for start in range(0, each, 100):
                n = min(100, each - start)
                for t, share in ((mine[0], (n + 1) // 2), (mine[1], n // 2)):
                    if share:
                        sent.append(producer.send_records(t, [value] * share))
                await _turn(reactor)
            await gatherResults(sent, consumeErrors=True)
            return
        for i in range(each):
            sent.append(send(mine[i % 2], value))
            if i % 100 == 99:
                await _turn(reactor)  # let the other 99 clients run
        await gatherResults(sent, consumeErrors=True)

    async def consume(k: int) -> None:
        consumer = KafkaConsumer(consumer_clients[k])
        mine = [(t, p) for t in names[2 * k : 2 * k + 2] for p in range(PARTITIONS)]
        consumer.assign(mine)
        for t, p in mine:
            consumer.seek((t, p), job["ends"][f"{t}:{p}"])
        seen = 0
        while seen < each:
            batches = await consumer.getmany(timeout_ms=1000)
            seen += sum(len(records) for records in batches.values())
        await consumer.close()

    with Collections(job.get("gc", "on")) as collections, Profiled(job.get("profile")):
        cpu, wall = cpu_seconds(), time.perf_counter()
        await gatherResults(
            [ensureDeferred(consume(k)) for k in range(pairs)]
            + [ensureDeferred(produce(k)) for k in range(pairs)]
        )
        out["cpu"], out["wall"], out["count"] = (
            cpu_seconds() - cpu,
            time.perf_counter() - wall,
            2 * each * pairs,
        )
    out.update(collections.summary())
    out["peak_rss"], out["threads"], out["sockets"] = peak_rss_bytes(), threads(), sockets()
    for producer in producers:
        await producer.stop()
    for client in producer_clients + consumer_clients:
        await client.close()


# -- confluent-kafka --------------------------------------------------------------------------


def confluent_worker(job: dict[str, Any]) -> dict[str, Any]:
    return workload_of("confluent", job)(job)


def _confluent_metadata(job: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": job["bootstrap"]})
    admin.list_topics(timeout=30)
    cpus = []
    for _ in range(5):
        began = cpu_seconds()
        admin.list_topics(timeout=30)
        cpus.append(cpu_seconds() - began)
    return {"metadata_cpu_ms": statistics.median(cpus) * 1000}


def _produce_one(producer: Any, topic: str, value: bytes, on_delivery: Any = None) -> None:
    while True:
        try:
            producer.produce(topic, value, on_delivery=on_delivery)
            break
        except BufferError:  # queue.buffering.max.messages reached: wait for acks
            producer.poll(0.001)
    producer.poll(0)


def _confluent_produce(job: dict[str, Any]) -> dict[str, Any]:
    import confluent_kafka

    names, count = topics(job["prefix"]), job["count"]
    producer = confluent_kafka.Producer({"bootstrap.servers": job["bootstrap"]})
    for t in names:
        producer.produce(t, b"warm-up")
    producer.flush(60)
    value = payload(SIZE)
    cpu, wall = cpu_seconds(), time.perf_counter()
    for i in range(count):
        _produce_one(producer, names[i % TOPICS], value)
    if producer.flush(120):
        raise RuntimeError("flush timed out")
    return {"cpu": cpu_seconds() - cpu, "wall": time.perf_counter() - wall, "count": count}


def _confluent_consume(job: dict[str, Any]) -> dict[str, Any]:
    import confluent_kafka

    last_stats: list[Any] = [None]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": job["bootstrap"],
            "group.id": job["group"],
            "auto.offset.reset": "earliest",
            # librdkafka counts its requests per broker in its statistics
            "statistics.interval.ms": 100,
            "stats_cb": lambda stats: last_stats.__setitem__(0, stats),
        }
    )
    count, seen, first = job["count"], 0, 0.0
    cpu, wall = cpu_seconds(), time.perf_counter()
    consumer.subscribe(topics(job["prefix"]))
    while seen < count:
        messages = consumer.consume(min(10000, count - seen), 1.0)
        if messages and not first:
            first = time.perf_counter()
        for message in messages:
            if message.error() is not None:
                raise RuntimeError(f"consume failed: {message.error()}")
            message.value()
        seen += len(messages)
    end = time.perf_counter()
    out = {"cpu": cpu_seconds() - cpu, "wall": end - first, "count": seen, "join": first - wall}
    before = last_stats[0]
    while last_stats[0] is before:
        consumer.poll(0.05)
    stats = json.loads(last_stats[0])["brokers"].values()
    out["fetches"] = sum(b["req"].get("Fetch", 0) for b in stats)
    consumer.close()
    return out


def _confluent_memory(job: dict[str, Any]) -> dict[str, Any]:
    import gc
    import tracemalloc

    import confluent_kafka

    names, n = topics(job["prefix"]), job["count"]
    warm = confluent_kafka.Producer({"bootstrap.servers": job["bootstrap"]})
    warm.list_topics(timeout=30)
    gc.collect()
    tracemalloc.start()
    rss, heap = rss_bytes(), tracemalloc.get_traced_memory()[0]
    base_sockets, base_threads = sockets(), threads()
    clients = [confluent_kafka.Producer({"bootstrap.servers": job["bootstrap"]}) for _ in range(n)]
    for client in clients:
        client.list_topics(names[0], timeout=30)
    time.sleep(1)  # librdkafka's broker threads connect to the broker it learnt of
    gc.collect()
    out = {
        "rss_per_client": (rss_bytes() - rss) / n,
        "heap_per_client": (tracemalloc.get_traced_memory()[0] - heap) / n,
        "sockets_per_client": (sockets() - base_sockets) / n,
        "threads_per_client": (threads() - base_threads) / n,
    }
    rss, heap = rss_bytes(), tracemalloc.get_traced_memory()[0]
    for client in clients:
        client.list_topics(timeout=30)
    gc.collect()
    per = n * TOPICS * PARTITIONS
    out["rss_per_partition"] = (rss_bytes() - rss) / per
    out["heap_per_partition"] = (tracemalloc.get_traced_memory()[0] - heap) / per
    tracemalloc.stop()
    return out


def _deliver(d: Any, err: Any, message: Any) -> None:
    """A delivery report fires its record's Deferred (the Deferred-per-delivery variant)."""
    if err is None:
        d.callback(message)
    else:
        d.errback(RuntimeError(str(err)))


def _confluent_many(job: dict[str, Any]) -> dict[str, Any]:
    import confluent_kafka
    from twisted.internet.defer import Deferred, gatherResults

    names, pairs, bootstrap = topics(job["prefix"]), job["pairs"], job["bootstrap"]
    each = job["count"] // pairs
    value = payload(SIZE)
    deferreds = "Deferred" in job["variant"]
    producers = [confluent_kafka.Producer({"bootstrap.servers": bootstrap}) for _ in range(pairs)]
    consumers = []
    for k in range(pairs):
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"{job['prefix']}-{k}"}
        )
        consumer.assign(
            [
                confluent_kafka.TopicPartition(t, p, job["ends"][f"{t}:{p}"])
                for t in names[2 * k : 2 * k + 2]
                for p in range(PARTITIONS)
            ]
        )
        consumers.append(consumer)
    produced, consumed = [0] * pairs, [0] * pairs
    sent: list[list[Any]] = [[] for _ in range(pairs)]
    with Collections(job.get("gc", "on")) as collections:
        cpu, wall = cpu_seconds(), time.perf_counter()
        while sum(consumed) < each * pairs:
            moved = 0
            for k, producer in enumerate(producers):
                mine = names[2 * k : 2 * k + 2]
                for i in range(produced[k], min(each, produced[k] + 100)):
                    if deferreds:  # as a Twisted application would: one per delivery
                        d: Deferred[Any] = Deferred()
                        sent[k].append(d)
                        _produce_one(producer, mine[i % 2], value, partial(_deliver, d))
                    else:
                        _produce_one(producer, mine[i % 2], value)
                    moved += 1
                produced[k] = min(each, produced[k] + 100)
                producer.poll(0)
            for k, consumer in enumerate(consumers):
                if consumed[k] < each:
                    for message in consumer.consume(1000, 0):
                        if message.error() is None:
                            message.value()
                            consumed[k] += 1
                            moved += 1
            if not moved:
                time.sleep(0.001)
        for producer in producers:
            if producer.flush(60):
                raise RuntimeError("flush timed out")
        failures = []
        for mine in sent:  # every delivery reported by flush(): each gathering fires at once
            gatherResults(mine, consumeErrors=True).addErrback(failures.append)
        if failures:
            raise RuntimeError(f"delivery failed: {failures[0]}")
        out = {"cpu": cpu_seconds() - cpu, "wall": time.perf_counter() - wall}
    out.update(collections.summary())
    out.update(count=2 * each * pairs, peak_rss=peak_rss_bytes(), threads=threads())
    out["sockets"] = sockets()
    for consumer in consumers:
        consumer.close()
    return out


WORKERS = {
    "afkak": (afkak_worker, AFKAK_VARIANTS),
    "confluent-kafka": (confluent_worker, CONFLUENT_VARIANTS),
}


# -- the driver --------------------------------------------------------------------------------


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    argv = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(job)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {RUN_TIMEOUT} s"}
    if done.returncode:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


class Topics:
    """The broker (started here unless --bootstrap) and the 100-topic sets made on it."""

    def __init__(self, bootstrap: str | None) -> None:
        from bench_clients import Bench
        from confluent_kafka.admin import AdminClient

        self._bench = Bench(bootstrap, "kafka")
        self.started_here = bootstrap is None
        self.bootstrap = self._bench.bootstrap
        self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self._serial = 0

    def create(self) -> str:
        from confluent_kafka.admin import NewTopic

        self._serial += 1
        prefix = f"scale-{os.getpid()}-{self._serial}"
        began = time.monotonic()
        futures = self._admin.create_topics(
            [NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in topics(prefix)],
            operation_timeout=120,
        )
        for future in futures.values():
            future.result(180)
        # Created is not yet writable everywhere: a partition whose leader is still
        # loading it answers NOT_LEADER, and the retries would be in the first run.
        self.fill(prefix, TOPICS * PARTITIONS)
        print(f"created {TOPICS} x {PARTITIONS} partitions in {time.monotonic() - began:.1f} s")
        return prefix

    def ends(self, prefix: str) -> dict[str, int]:
        """Each partition's log end offset, ``{"topic:partition": offset}``."""
        import confluent_kafka

        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": f"{prefix}-ends"}
        )
        ends = {
            f"{t}:{p}": consumer.get_watermark_offsets(
                confluent_kafka.TopicPartition(t, p), timeout=30
            )[1]
            for t in topics(prefix)
            for p in range(PARTITIONS)
        }
        consumer.close()
        return ends

    def delete(self, prefix: str) -> None:
        for future in self._admin.delete_topics(topics(prefix), operation_timeout=60).values():
            future.result(120)

    def fill(self, prefix: str, count: int) -> None:
        """Write *count* x 100 B evenly over the partitions (confluent-kafka, 64 KiB batches)."""
        import confluent_kafka

        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "batch.size": 64 * 1024,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        names, value = topics(prefix), payload(SIZE)
        for i in range(count):
            while True:
                try:
                    producer.produce(names[i % TOPICS], value, partition=(i // TOPICS) % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.01)
        if producer.flush(300):
            raise RuntimeError("fill: flush timed out")

    def close(self, prefixes: Iterable[str]) -> None:
        """Delete the topic sets from a broker not started here; stop one started here."""
        if self.started_here:
            self._bench.close()
        else:
            for prefix in prefixes:
                self.delete(prefix)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


COLUMNS = {
    "metadata": [
        ("refresh CPU ms", "metadata_cpu_ms", 1, "{:.1f}"),
        ("heap B/partition", "heap_per_partition", 1, "{:.0f}"),
    ],
    "produce": [],
    "consume": [("join s", "join", 1, "{:.2f}")],
    "memory": [
        ("RSS KiB/client", "rss_per_client", 1 / 1024, "{:.0f}"),
        ("heap KiB/client", "heap_per_client", 1 / 1024, "{:.1f}"),
        ("sockets/client", "sockets_per_client", 1, "{:.1f}"),
        ("threads/client", "threads_per_client", 1, "{:.1f}"),
        ("RSS B/partition", "rss_per_partition", 1, "{:.0f}"),
        ("heap B/partition", "heap_per_partition", 1, "{:.0f}"),
    ],
    "many": [
        ("peak RSS MiB", "peak_rss", 1 / 2**20, "{:.0f}"),
        ("threads", "threads", 1, "{:.0f}"),
        ("sockets", "sockets", 1, "{:.0f}"),
        ("GC s", "gc_s", 1, "{:.2f}"),
        ("full GCs", "gc_full", 1, "{:.0f}"),
    ],
}


def _ratio(mine: float, reference: float | None) -> str:
    return "" if reference is None or mine != mine else f"{mine / reference:.2f}x"


def rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """One row per workload and client variant: medians, and ratios to confluent-kafka's row."""
    keys: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in runs:
        keys.setdefault((run["workload"], run["client"], run["variant"]), []).append(run)
    medians = {}
    for key, mine in keys.items():
        good = [r for r in mine if "error" not in r and "wall" in r]
        medians[key] = (
            median([r["count"] / r["wall"] for r in good]),
            median([r["cpu"] / r["count"] * 1e6 for r in good]),
            median([r["count"] / r["cpu"] for r in good]),
        )
    reference = {  # each workload's first confluent-kafka variant (raw, no Deferred)
        w: medians[w, "confluent-kafka", CONFLUENT_VARIANTS[w][0]]
        for w in {w for w, _, _ in medians}
        if (w, "confluent-kafka", CONFLUENT_VARIANTS[w][0]) in medians
    }
    table = []
    for (workload, client, variant), mine in keys.items():
        good = [r for r in mine if "error" not in r]
        rate, cpu_us, per_cpu = medians[workload, client, variant]
        ref = reference.get(workload)
        extra = [
            f"{label} " + fmt.format(median([r[key] * scale for r in good if key in r]))
            for label, key, scale, fmt in COLUMNS[workload]
            if any(key in r for r in good)
        ]
        fetched = [r for r in good if r.get("fetches")]
        if fetched:
            per_s = median([r["fetches"] / (r["wall"] + r["join"]) for r in fetched])
            per_fetch = median([r["count"] / r["fetches"] for r in fetched])
            extra += [f"fetch/s {per_s:.1f}", f"records/fetch {per_fetch:,.0f}"]
        loads = [r["load"] for r in mine]
        table.append(
            [
                workload,
                f"{client} ({variant})",
                f"{len(good)}/{len(mine)}",
                "" if rate != rate else f"{rate:,.0f}",
                _ratio(rate, ref and ref[0]),
                "" if cpu_us != cpu_us else f"{cpu_us:.2f}",
                _ratio(per_cpu, ref and ref[2]),
                "; ".join(extra),
                f"{min(loads):.1f}-{max(loads):.1f}",
            ]
        )
    return table


HEADER = [
    "workload",
    "client",
    "runs ok",
    "records/s",
    "x confluent",
    "CPU us/record",
    "x confluent per CPU",
    "other (medians)",
    "load",
]


def rst(table: list[list[str]], caption: str) -> str:
    lines = [f".. list-table:: {caption}", "   :header-rows: 1", ""]
    for cells in [HEADER, *table]:
        lines.append(f"   * - {cells[0]}")
        lines += [f"     - {c}" if c else "     -" for c in cells[1:]]
    return "\n".join(lines) + "\n"


def jobs(args: argparse.Namespace, workload: str, prefixes: dict[str, str]) -> list[dict[str, Any]]:
    count = {
        "metadata": 0,
        "produce": args.count,
        "consume": args.consume_count,
        "memory": args.idle,
        "many": args.many_count,
    }[workload]
    out = []
    for client, (_, variants) in WORKERS.items():
        for variant in variants[workload]:
            out.append(
                {
                    "client": client,
                    "variant": variant,
                    "workload": workload,
                    "count": count,
                    "pairs": args.pairs,
                    "prefix": prefixes.get(workload, prefixes["scale"]),
                    "gc": args.gc,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="metadata,produce,consume,memory,many")
    parser.add_argument("--count", type=int, default=300_000, help="records produced a run")
    parser.add_argument("--consume-count", type=int, default=1_000_000, help="records consumed")
    parser.add_argument("--idle", type=int, default=50, help="idle clients (memory)")
    parser.add_argument("--pairs", type=int, default=50, help="producers = consumers (many)")
    parser.add_argument("--many-count", type=int, default=200_000, help="records produced (many)")
    parser.add_argument("--bootstrap", help="use this broker instead of starting Kafka")
    parser.add_argument("--rst", metavar="FILE", help="write the table as reStructuredText")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile afkak's consume and many variants"
    )
    parser.add_argument(
        "--gc", choices=["on", "freeze", "off"], default="on", help="the many runs' GC"
    )
    parser.add_argument("--top", type=int, default=30, help="functions shown per profile")
    args = parser.parse_args()
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(WORKERS[job["client"]][0](job)))
        return
    loads = args.workloads.split(",")
    unknown = set(loads) - set(AFKAK_VARIANTS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {list(AFKAK_VARIANTS)}")
    broker = Topics(args.bootstrap)
    runs: list[dict[str, Any]] = []
    began = time.monotonic()
    prefixes: dict[str, str] = {}
    try:
        prefixes["scale"] = broker.create()
        if "consume" in loads:
            prefixes["consume"] = broker.create()
            broker.fill(prefixes["consume"], args.consume_count)
        if "many" in loads:
            prefixes["many"] = broker.create()
        if args.profile:
            return profile(broker, args, loads, prefixes)
        for round_ in range(1 if args.profile else args.rounds):
            for workload in loads:
                for job in jobs(args, workload, prefixes):
                    job.update(bootstrap=broker.bootstrap, group=f"g-{os.getpid()}-{len(runs)}")
                    if workload == "many":
                        job["ends"] = broker.ends(job["prefix"])
                    load = os.getloadavg()[0]
                    result = run_job(job)
                    runs.append({**job, **result, "load": load})
                    shown = result.get("error", "")[-400:]
                    if not shown and "count" in result:
                        shown = (
                            f"{result['count'] / result['wall']:12,.0f} records/s"
                            f"  {result['cpu'] / result['count'] * 1e6:6.2f} CPU us/record"
                        )
                    else:
                        shown = shown or json.dumps(result)
                    print(
                        f"round {round_ + 1}  {workload:8} {job['client']} ({job['variant']})"
                        f"  {shown}  (load {load:.2f})",
                        flush=True,
                    )
    finally:
        broker.close(prefixes.values())
    table = rows(runs)
    caption = (
        f"median of {args.rounds} interleaved rounds; {TOPICS} topics x {PARTITIONS} partitions on "
        f"{'one Apache Kafka node' if args.bootstrap is None else args.bootstrap};"
        f" {os.cpu_count()} CPUs"
    )
    print(f"\n{caption}; {time.monotonic() - began:.0f} s\n")
    widths = [max(len(str(r[i])) for r in [HEADER, *table]) for i in range(len(HEADER))]
    for cells in [HEADER, *table]:
        print("  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)))
    if args.rst:
        with open(args.rst, "w") as f:
            f.write(rst(table, caption))


def profile(
    broker: Topics, args: argparse.Namespace, loads: list[str], prefixes: dict[str, str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for workload in [w for w in ("consume", "many") if w in loads]:
            for n, job in enumerate(jobs(args, workload, prefixes)):
                if job["client"] != "afkak":
                    continue
                job.update(bootstrap=broker.bootstrap, group=f"g-{os.getpid()}-profile-{n}")
                job["profile"] = os.path.join(tmp, f"{workload}-{n}.prof")
                if workload == "many":
                    job["ends"] = broker.ends(job["prefix"])
                result = run_job(job)
                print(f"\n=== afkak ({job['variant']}) {workload}: {result}")
                if os.path.exists(job["profile"]):
                    stats = pstats.Stats(job["profile"])
                    stats.sort_stats("tottime").print_stats(args.top)
                    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
