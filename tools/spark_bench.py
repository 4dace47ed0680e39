"""Read throughput: Spark local[N] through the ``afkak`` data source vs afkak Consumers.

Fills a 4-partition topic with 1,000,000 records of 100 bytes (on a private
Tansu broker unless ``--bootstrap`` names one), then reads all of them:

- with Spark (``local[2]``): ``sum(length(value))`` over the afkak source,
  once cold (Python workers starting) and then warm;
- with afkak's Consumer, one per partition on one KafkaClient, in this
  process (the global reactor in a thread, as in Spark's workers).

With ``--phases`` it also says where a warm query's time goes: the data
source's own work run in this process (planning, then ``read_range`` over
every task's offsets: the Python worker's share), then queries timed with
the CPU seconds spent meanwhile by the JVM, its Python workers and the
broker (from /proc, Linux only): a Python data source with afkak's schema
and no Kafka returning 4 rows (Spark's own fixed cost per query), a query
reading 4 records (the fixed cost with afkak's), ``count(*)`` and the
benchmark query.

With ``--compare`` it measures afkak's source against Spark's own Kafka
connector (``format("kafka")``, jars resolved by ``afkak/test/brokers/spark_kafka.py``)
on one Apache Kafka topic: the same batch read (``sum(length(value))``) and a
batch write of the same rows into a fresh 4-partition topic through each, run
alternately, after one untimed warm-up each; medians of ``--runs``.  ``--quick``
is ``--compare`` on 200,000 records.

With ``--latency S`` it measures streaming end-to-end latency instead: a
query per format copies a source topic to a sink topic through that format
(default trigger, from the earliest offsets), fed one record each 100 ms: 50
to warm it up, then, once it has copied those, S seconds of records; the p50
and p95 of (sink record's CreateTime - source record's creation) per run, and
the median of Spark's ``durationMs`` phases over the micro-batches that read
records.

With ``--cold`` it compares each format's first read of a new session
instead: per run and format a process of its own starts a session and times
its first query (the JVM loading the format's classes, afkak's Python workers
starting and importing afkak); medians of ``--runs``.

With ``--stream`` it compares streaming throughput: per run and format, a
query through that format (``Trigger.AvailableNow``, ``maxOffsetsPerTrigger``
``--per-trigger``) copies the whole topic into a new one through the same
format, timed from its start to its end, with the CPU seconds of the JVM, its
Python workers and the broker meanwhile; medians of ``--runs``.  Beside them it
times the start-up of a Python streaming source that reads no Kafka (see
:func:`register_empty_stream`), alone and importing Twisted's reactor.  With
``--trace`` each afkak query reads through a traced copy of the source and
prints where its start-up went (see :func:`register_traced_source`).

Run: ``python tools/spark_bench.py [--records N] [--warm K] [--phases]
[--driver-memory 4g] [--compare [--runs 3] | --cold [--runs 3] | --stream
[--per-trigger N] [--runs 3] [--trace] | --quick | --latency S [--runs 3]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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


def spark_read(
    spark: Any,
    bootstrap: str,
    topic: str,
    ends: dict[str, int],
    exprs: tuple[str, ...] = ("count(*) as n", "sum(length(value)) as bytes"),
    fmt: str = "afkak",
) -> tuple[float, int]:
    """Run one query over the topic up to *ends*: its seconds (load included) and row count."""
    started = time.perf_counter()
    df = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("endingOffsets", json.dumps({topic: ends}))
        .load()
    )
    [row] = df.selectExpr(*exprs).collect()
    return time.perf_counter() - started, row.n


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _processes() -> dict[int, tuple[int, float]]:
    """Every process's parent and CPU seconds (its own, and its reaped children's)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = sum(int(x) for x in fields[11:15]) / _TICK
        found[int(name)] = (int(fields[1]), cpu)
    return found


def cpu_by_role(jvm: int) -> dict[str, float]:
    """CPU seconds so far of the JVM, its Python workers, and this process's other children."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in procs.items():
        children.setdefault(parent, []).append(pid)

    def tree(root: int) -> list[int]:
        out, todo = [], [root]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(children.get(pid, ()))
        return out

    workers = tree(jvm)[1:]
    others = [p for c in children.get(os.getpid(), ()) if c != jvm for p in tree(c)]
    # reaped workers count in their parents' totals, which are in the trees
    return {
        "JVM": procs.get(jvm, (0, 0.0))[1],
        "Python workers": sum(procs[p][1] for p in workers),
        "broker": sum(procs[p][1] for p in others),
    }


def timed(jvm: int, run: Callable[[], tuple[float, int]]) -> tuple[float, int, dict[str, float]]:
    """*run*'s seconds and rows, and the CPU seconds of each role meanwhile."""
    before = cpu_by_role(jvm)
    elapsed, n = run()
    after = cpu_by_role(jvm)
    return elapsed, n, {k: after[k] - before[k] for k in after}


def worker_alone(bootstrap: str, topic: str, ends: dict[str, int]) -> tuple[float, float, int]:
    """The data source's planning and reading in this process: seconds, CPU seconds, rows."""
    from afkak.spark import _rows, _worker
    from afkak.spark._options import parse_read_options

    opts = parse_read_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "endingoffsets": json.dumps({topic: ends}),
        },
        streaming=False,
    )
    schema = _rows.arrow_schema(_rows.read_schema(False))
    started, cpu = time.perf_counter(), time.process_time()
    n = sum(
        b.num_rows for r in _worker.plan_batch(opts) for b in _worker.read_range(opts, r, schema)
    )
    return time.perf_counter() - started, time.process_time() - cpu, n


def register_floor_source(spark: Any) -> None:
    """Register ``afkak_bench_floor``: 4 tasks of 1 row each, the afkak schema, no Kafka.

    What Spark alone costs a query over a Python data source: the floor
    under the 4-record query.  Defined here, so pickled by value.
    """
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from afkak.spark._rows import arrow_schema, read_schema

    class FloorReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(PARTITIONS)]

        def read(self, partition: InputPartition) -> Any:
            row = {"value": b"x", "topic": "t", "partition": partition.value, "offset": 0}
            yield pa.RecordBatch.from_pylist([row], schema=arrow_schema(read_schema(False)))

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "afkak_bench_floor"

        def schema(self) -> Any:
            return read_schema(False)

        def reader(self, schema: Any) -> DataSourceReader:
            return FloorReader()

    spark.dataSource.register(FloorSource)


def floor_read(spark: Any) -> tuple[float, int]:
    started = time.perf_counter()
    [row] = spark.read.format("afkak_bench_floor").load().selectExpr("count(*) as n").collect()
    return time.perf_counter() - started, row.n


def register_traced_source(spark: Any, path: str) -> None:
    """Register ``afkak_traced``: afkak's source, noting in *path* (JSON lines) when the
    streaming source's runner process started (from /proc), when it had unpickled the
    source (PySpark's imports, from where the first note says, and afkak.spark's done)
    and when each stream reader call began and ended.  Defined here, so pickled by value."""
    from afkak.spark import AfkakDataSource
    from afkak.spark._source import StreamReader

    def note(what: str, began: float, ended: float | None = None) -> None:
        with open(path, "a") as f:
            f.write(json.dumps([os.getpid(), what, began, ended, len(sys.modules)]) + "\n")

    def process_started() -> float:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + ticks / _TICK

    def traced(name: str) -> Callable[..., Any]:
        call = getattr(StreamReader, name)

        def run(self: Any, *args: Any) -> Any:
            began = time.time()
            try:
                return call(self, *args)
            finally:
                note(name, began, time.time())

        return run

    methods = ("prepareForTriggerAvailableNow", "initialOffset", "latestOffset", "partitions")
    TracedReader = type("TracedReader", (StreamReader,), {m: traced(m) for m in methods})

    class TracedSource(AfkakDataSource):
        @classmethod
        def name(cls) -> str:
            return "afkak_traced"

        def __setstate__(self, state: dict[str, Any]) -> None:
            note("unpickled", time.time())
            self.__dict__.update(state)

        def streamReader(self, schema: Any) -> Any:
            note(
                f"process started, pyspark from {sys.modules['pyspark'].__file__}",
                process_started(),
            )
            reader = super().streamReader(schema)
            reader.__class__ = TracedReader
            return reader

    spark.dataSource.register(TracedSource)


def register_empty_stream(spark: Any) -> None:
    """Register ``afkak_bench_empty``: a streaming source with no Kafka and no afkak.

    Its offsets are counters in memory: ten micro-batches of one row each.  Its
    start-up (``readStream`` to the first trigger) is what any Python streaming
    source pays Spark: the floor under afkak's.  With the option ``import``, its
    runner imports that module in ``prepareForTriggerAvailableNow`` (where afkak's
    runner imports its client): ``twisted.internet.reactor`` measures Twisted's
    share.  Defined here, so pickled by value."""
    import importlib

    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
    from pyspark.sql.types import BinaryType, StructField, StructType

    batches = 10

    class EmptyReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, module: str | None) -> None:
            self.module = module

        def prepareForTriggerAvailableNow(self) -> None:
            if self.module:
                importlib.import_module(self.module)

        def initialOffset(self) -> dict[str, int]:
            return {"n": 0}

        def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
            return {"n": min(start["n"] + 1, batches)}

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
            return [InputPartition(i) for i in range(start["n"], end["n"])]

        def read(self, partition: InputPartition) -> Any:
            yield (b"x",)

    class EmptySource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "afkak_bench_empty"

        def schema(self) -> Any:
            return StructType([StructField("value", BinaryType())])

        def streamReader(self, schema: Any) -> DataSourceStreamReader:
            return EmptyReader(self.options.get("import"))

    spark.dataSource.register(EmptySource)


def empty_stream_startup(spark: Any, module: str | None) -> float:
    """Seconds from ``readStream`` to the first trigger of a query over
    ``afkak_bench_empty`` (importing *module* in its runner) into the noop sink."""
    import tempfile
    from datetime import datetime

    started_wall = time.time()
    reader = spark.readStream.format("afkak_bench_empty")
    if module:
        reader = reader.option("import", module)
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-bench-empty-"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    progress = query.recentProgress
    first = datetime.fromisoformat(progress[0].timestamp.replace("Z", "+00:00")).timestamp()
    return first - started_wall


def print_startup(path: str, marks: dict[str, float]) -> None:
    """The runner's first call of each kind (from the process that answered
    ``initialOffset``) beside the driver's *marks*, in seconds from ``readStream``."""
    with open(path) as f:
        noted = [json.loads(line) for line in f]
    [runner] = {pid for pid, what, *_ in noted if what == "initialOffset"}
    events = [(at, what) for what, at in marks.items()]
    seen = set()
    for pid, what, began, ended, modules in noted:
        if pid == runner and what not in seen:
            seen.add(what)
            took = f", {(ended - began) * 1000:.0f} ms" if ended is not None else ""
            events.append((began, f"runner: {what} ({modules} modules{took})"))
    origin = marks["readStream"]
    for at, what in sorted(events):
        print(f"    {at - origin:6.3f} s  {what}")


def phases(spark: Any, bootstrap: str, topic: str, ends: dict[str, int], rounds: int) -> None:
    """Where a warm query's time goes (see the module docstring)."""
    register_floor_source(spark)
    floor_read(spark)  # its first query starts nothing new, but warm it anyway
    for _ in range(rounds):
        elapsed, cpu, n = worker_alone(bootstrap, topic, ends)
        print(
            f"data source alone (plan + read_range, 1 process): {elapsed:.2f} s, {cpu:.2f} CPU s,"
            f" {cpu / n * 1e6:.2f} CPU us/record"
        )
    jvm = spark.sparkContext._gateway.proc.pid
    first = {p: 1 for p in ends}
    read = partial(spark_read, spark, bootstrap, topic)
    queries: list[tuple[str, Callable[[], tuple[float, int]]]] = [
        ("Spark alone (4 rows, no Kafka), count(*)", partial(floor_read, spark)),
        ("4 records, count(*)", partial(read, first, ("count(*) as n",))),
        ("all, count(*)", partial(read, ends, ("count(*) as n",))),
        ("all, count(*) + sum(length(value))", partial(read, ends)),
    ]
    for _ in range(rounds):
        for name, query in queries:
            took, rows, spent = timed(jvm, query)
            shares = ", ".join(f"{k} {v:.2f}" for k, v in spent.items())
            print(f"  {name}: {took:.2f} s, {rows:,} rows; CPU s: {shares}")


#: ``--rows``: the columns written beside the value.
ROW_COLUMNS = {
    "unkeyed": (),
    "keyed": ("cast(id as string) as key",),
    "headers": (
        "cast(id as string) as key",
        "array(named_struct('key', 'h', 'value', cast(cast(id as string) as binary))) as headers",
    ),
}


def spark_write(
    spark: Any, fmt: str, bootstrap: str, topic: str, records: int, size: int, rows_kind: str
) -> float:
    """Seconds to write *records* values of *size* bytes (unkeyed, a distinct key each, or
    keys and a header each: *rows_kind*) into *topic* through *fmt*.

    The rows are cached first, so that only the write is timed."""
    rows = spark.range(records, numPartitions=2).selectExpr(
        *ROW_COLUMNS[rows_kind], f"repeat('x', {size}) as value"
    )
    rows = rows.cache()
    rows.count()
    started = time.perf_counter()
    rows.write.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("topic", topic).mode(
        "append"
    ).save()
    elapsed = time.perf_counter() - started
    rows.unpersist()
    return elapsed


def compare(spark: Any, broker: Any, topic: str, ends: dict[str, int], args: Any) -> None:
    """afkak's source against Spark's connector: medians of alternate runs."""

    reads: dict[str, list[float]] = {"afkak": [], "kafka": []}
    writes: dict[str, list[float]] = {"afkak": [], "kafka": []}
    for fmt in reads:  # untimed: JVM classes and Python workers warm
        spark_read(spark, broker.bootstrap, topic, ends, fmt=fmt)
        broker.create_topic(f"{topic}-warm-{fmt}", PARTITIONS)
        spark_write(spark, fmt, broker.bootstrap, f"{topic}-warm-{fmt}", 1000, args.size, args.rows)
    for run in range(args.runs):
        for fmt in reads:
            elapsed, n = spark_read(spark, broker.bootstrap, topic, ends, fmt=fmt)
            assert n == args.records, (fmt, n)
            reads[fmt].append(elapsed)
            sink = f"{topic}-w-{fmt}-{run}"
            broker.create_topic(sink, PARTITIONS)
            writes[fmt].append(
                spark_write(spark, fmt, broker.bootstrap, sink, args.records, args.size, args.rows)
            )
    print(f"load average: {os.getloadavg()}")
    report("batch read", reads, args.records)
    report(f"batch write ({args.rows})", writes, args.records)


def report(label: str, timings: dict[str, list[float]], records: int) -> None:
    """One line: each format's median records/s and its runs' seconds, and the ratio."""
    import statistics

    rates = {fmt: records / statistics.median(t) for fmt, t in timings.items()}
    runs = {fmt: ", ".join(f"{t:.2f}" for t in ts) for fmt, ts in timings.items()}
    print(
        f"{label}: afkak {rates['afkak']:,.0f} records/s ({runs['afkak']} s), "
        f"kafka {rates['kafka']:,.0f} records/s ({runs['kafka']} s): "
        f"{rates['afkak'] / rates['kafka']:.2f}x"
    )


def stream_latency(
    spark: Any, broker: Any, client: KafkaClient, fmt: str, seconds: float, run: int
) -> tuple[float, float, dict[str, float]]:
    """p50 and p95 ms from a record's creation in a source topic to its copy's creation
    (its CreateTime) in a sink topic, copied by a streaming query through *fmt* (default
    trigger: the next micro-batch as soon as the last ends); one record each 100 ms.

    Also the median of Spark's per-micro-batch ``durationMs`` phases over the
    measured micro-batches that read records, ``interval``: the median ms
    between the starts of consecutive micro-batches, and the CPU ms per
    micro-batch of the JVM, its Python workers and the broker."""
    import statistics
    import tempfile
    from datetime import datetime

    src, sink = (f"{broker_topic()}-lat-{fmt}-{run}-{end}" for end in ("in", "out"))
    broker.create_topic(src, PARTITIONS)
    broker.create_topic(sink, PARTITIONS)
    query = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", src)
        .option("startingOffsets", "earliest")  # the warm-up records sent while it starts too
        .load()
        .select("value")
        .writeStream.format(fmt)
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-bench-latency-"))
        .start()
    )

    def send(n: int, label: bytes) -> None:
        for i in range(n):
            value = label + b"%d" % time.time_ns()
            payload = ProduceRequest(src, i % PARTITIONS, MessageSet([Message(0, 0, None, value)]))
            _bridge.call(30, client.send_produce_request, [payload], acks=1)
            time.sleep(0.1)

    def copied(n: int) -> None:
        """Wait until the query has read *n* records in all (or 120 s)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if sum(p.numInputRows for p in query.recentProgress) >= n:
                return
            time.sleep(0.2)

    # warm-up, until the query has copied it: the first micro-batches, Python workers starting
    send(50, b"w")
    copied(50)
    measured_from = len(query.recentProgress)
    jvm = spark.sparkContext._gateway.proc.pid
    cpu_before = cpu_by_role(jvm)
    measured = int(seconds * 10)
    send(measured, b"m")
    copied(50 + measured)
    cpu_after = cpu_by_role(jvm)
    deadline = time.monotonic() + 120
    rows: list[Any] = []
    while time.monotonic() < deadline:
        rows = [
            r
            for r in spark.read.format("afkak")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", sink)
            .load()
            .selectExpr("cast(value as string) as value", "timestamp")
            .collect()
            if r.value.startswith("m")
        ]
        if len(rows) >= measured:
            break
        time.sleep(1)
    progress = query.recentProgress[measured_from:]
    query.stop()
    assert len(rows) == measured, (fmt, len(rows), measured)
    ms = sorted(r.timestamp.timestamp() * 1000 - int(r.value[1:]) / 1e6 for r in rows)
    phases: dict[str, list[float]] = {}
    starts = []
    for p in progress:
        starts.append(datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp())
        if p.numInputRows:
            for key, value in p.durationMs.items():
                phases.setdefault(key, []).append(value)
    breakdown = {k: statistics.median(v) for k, v in phases.items()}
    if len(starts) > 1:
        breakdown["interval"] = statistics.median(
            (b - a) * 1000 for a, b in zip(starts, starts[1:], strict=False)
        )
    breakdown["batches"] = len(progress)
    for role, cpu in cpu_after.items():  # CPU ms per micro-batch
        breakdown[f"CPU {role}"] = (cpu - cpu_before[role]) * 1000 / max(1, len(progress))
    return statistics.median(ms), ms[int(0.95 * (len(ms) - 1))], breakdown


def stream_throughput(
    spark: Any, broker: Any, topic: str, fmt: str, run: int, args: Any
) -> tuple[float, float, float, dict[str, float]]:
    """Seconds for a streaming query through *fmt* to copy all of *topic* into a new
    topic through *fmt*, in micro-batches of ``--per-trigger`` records
    (``maxOffsetsPerTrigger``, ``Trigger.AvailableNow``); and of those, the
    start-up (from ``readStream`` through ``load()`` and ``start()`` to the first
    micro-batch's trigger, by Spark's progress timestamp) and the micro-batches'
    summed ``triggerExecution``; and the CPU seconds of the JVM, its Python
    workers and the broker meanwhile."""
    import tempfile
    from datetime import datetime

    jvm = spark.sparkContext._gateway.proc.pid
    cpu_before = cpu_by_role(jvm)
    sink = f"{topic}-s-{fmt}-{run}"
    broker.create_topic(sink, PARTITIONS)
    traced = args.trace and fmt == "afkak"
    if traced:
        open(args.trace_file, "w").close()
    started, started_wall = time.perf_counter(), time.time()
    query = (
        spark.readStream.format("afkak_traced" if traced else fmt)
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.per_trigger))
        .load()
        .select("value")
        .writeStream.format(fmt)
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-bench-stream-"))
        .trigger(availableNow=True)
        .start()
    )
    start_returned = time.time()
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    cpu_after = cpu_by_role(jvm)
    cpu = {role: cpu_after[role] - cpu_before[role] for role in cpu_after}
    progress = query.recentProgress
    copied = sum(p.numInputRows for p in progress)
    assert copied == args.records, (fmt, copied)
    first = datetime.fromisoformat(progress[0].timestamp.replace("Z", "+00:00")).timestamp()
    batches = sum(p.durationMs.get("triggerExecution", 0) for p in progress) / 1000.0
    if traced:
        print(f"  afkak run {run}, load {os.getloadavg()[0]:.1f}:")
        marks = {"readStream": started_wall, "start() returned": start_returned}
        print_startup(args.trace_file, {**marks, "first trigger": first})
    return elapsed, first - started_wall, batches, cpu


#: ``--stream``'s diagnostic rows: a Python streaming source with no Kafka and no
#: afkak (``afkak_bench_empty``), alone and importing Twisted's reactor.
EMPTY_STREAMS = {
    "empty Python source": None,
    "empty Python source + Twisted's reactor": "twisted.internet.reactor",
}


def compare_stream(spark: Any, broker: Any, topic: str, ends: dict[str, int], args: Any) -> None:
    """Streaming throughput of each format, alternately, after a warm batch read each."""
    import statistics

    seconds: dict[str, list[float]] = {"afkak": [], "kafka": []}
    startup: dict[str, list[float]] = {"afkak": [], "kafka": []}
    batches: dict[str, list[float]] = {"afkak": [], "kafka": []}
    cpu: dict[str, list[dict[str, float]]] = {"afkak": [], "kafka": []}
    for fmt in seconds:  # untimed: JVM classes and Python workers warm
        spark_read(spark, broker.bootstrap, topic, ends, fmt=fmt)
    register_empty_stream(spark)
    floors: dict[str, list[float]] = {name: [] for name in EMPTY_STREAMS}
    for module in EMPTY_STREAMS.values():  # untimed: the noop sink's classes
        empty_stream_startup(spark, module)
    if args.trace:
        import tempfile

        args.trace_file = tempfile.mktemp(prefix="spark-bench-trace-")
        register_traced_source(spark, args.trace_file)
    for run in range(args.runs):
        for fmt in seconds:
            took, start, summed, spent = stream_throughput(spark, broker, topic, fmt, run, args)
            cpu[fmt].append(spent)
            seconds[fmt].append(took)
            startup[fmt].append(start)
            batches[fmt].append(summed)
        for name, module in EMPTY_STREAMS.items():
            floors[name].append(empty_stream_startup(spark, module))
    print(f"load average: {os.getloadavg()}")
    report("streaming copy", seconds, args.records)
    for fmt in seconds:
        print(
            f"  {fmt}: load() and start() to first trigger "
            f"{', '.join(f'{s:.2f}' for s in startup[fmt])} s "
            f"(median {statistics.median(startup[fmt]):.2f}); micro-batches summed "
            f"{', '.join(f'{s:.2f}' for s in batches[fmt])} s "
            f"(median {statistics.median(batches[fmt]):.2f}); CPU s, medians: "
            + ", ".join(
                f"{role} {statistics.median(c[role] for c in cpu[fmt]):.2f}" for role in cpu[fmt][0]
            )
        )
    for name, runs in floors.items():
        print(
            f"  {name}: load() and start() to first trigger "
            f"{', '.join(f'{s:.2f}' for s in runs)} s (median {statistics.median(runs):.2f})"
        )


def broker_topic() -> str:
    return f"spark-bench-{os.getpid()}"


def spark_session(args: Any, jars: list[str]) -> Any:
    """A session on ``args.master`` with afkak's source registered and *jars* loaded."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # this checkout's afkak in Spark's Python workers too (they inherit the environment)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [sys.path[0], os.environ.get("PYTHONPATH")])
    )
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
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(AfkakDataSource)
    return spark


def cold_read(args: Any) -> None:
    """``--cold-read FMT``: a new session's first read through FMT, timed alone.

    Run in a process of its own per format and run by ``--cold``, so nothing
    is warm: the JVM loads the format's classes, and afkak's Python workers
    start and import afkak, inside the timed query."""
    from afkak.test.brokers.spark_kafka import connector_jars

    spark = spark_session(args, connector_jars())
    elapsed, n = spark_read(
        spark, args.bootstrap, args.topic, json.loads(args.ends), fmt=args.cold_read
    )
    spark.stop()
    print(f"COLD {args.cold_read} {elapsed:.3f} {n}")


def compare_cold(bootstrap: str, topic: str, ends: dict[str, int], args: Any) -> None:
    """The first read of a new session through each format, alternately: medians of runs."""
    import subprocess

    seconds: dict[str, list[float]] = {"afkak": [], "kafka": []}
    for _ in range(args.runs):
        for fmt in seconds:
            command = [sys.executable, os.path.abspath(__file__), "--cold-read", fmt]
            command += ["--bootstrap", bootstrap, "--topic", topic, "--ends", json.dumps(ends)]
            command += ["--master", args.master, "--driver-memory", args.driver_memory]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            [line] = [x for x in out.splitlines() if x.startswith("COLD ")]
            _, _, took, n = line.split()
            assert int(n) == args.records, (fmt, n)
            seconds[fmt].append(float(took))
    print(f"load average: {os.getloadavg()}")
    report("cold batch read", seconds, args.records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--driver-memory", default="1g", help="spark.driver.memory (10M records: 4g)"
    )
    parser.add_argument("--bootstrap", help="an existing broker (default: start Tansu)")
    parser.add_argument("--warm", type=int, default=2, help="warm queries timed (default 2)")
    parser.add_argument(
        "--phases", type=int, default=0, metavar="R", help="R rounds of per-phase timing"
    )
    parser.add_argument(
        "--compare", action="store_true", help="against format('kafka') on Apache Kafka"
    )
    parser.add_argument("--runs", type=int, default=3, help="--compare: timed runs (median)")
    parser.add_argument(
        "--rows",
        choices=sorted(ROW_COLUMNS),
        default="unkeyed",
        help="--compare: the rows written: unkeyed, a distinct key each, or keys and headers",
    )
    parser.add_argument("--quick", action="store_true", help="--compare on 200,000 records")
    parser.add_argument(
        "--latency",
        type=float,
        default=0,
        metavar="S",
        help="--compare streaming end-to-end latency instead, S seconds of records a run",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="--compare each format's first read in a new session (a process each) instead",
    )
    parser.add_argument("--cold-read", choices=("afkak", "kafka"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--stream",
        action="store_true",
        help="--compare streaming throughput instead: a query copying the topic, AvailableNow",
    )
    parser.add_argument(
        "--per-trigger",
        type=int,
        default=100_000,
        help="--stream: maxOffsetsPerTrigger (default 100,000)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="--stream: print where each afkak query's start-up went (a traced source)",
    )
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--ends", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_read:
        cold_read(args)
        return
    if args.cold or args.stream:
        args.compare = True
    if args.quick:
        args.compare, args.records = True, 200_000
    if args.latency:
        args.compare = True

    jars: list[str] = []
    broker = None
    if args.compare:
        from afkak.test.brokers import shared_broker
        from afkak.test.brokers.spark_kafka import connector_jars

        jars = connector_jars()
        broker = shared_broker("kafka")
        bootstrap = broker.bootstrap
        broker.create_topic(broker_topic(), PARTITIONS)
    elif args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from afkak.test.brokers import shared_broker

        bootstrap = shared_broker("tansu").bootstrap
    topic = broker_topic()

    client = _bridge.call(30, KafkaClient, bootstrap, clientId="spark-bench")
    _bridge.call(30, client.load_metadata_for_topics, topic)
    if len(client.topic_partitions.get(topic, ())) != PARTITIONS:
        sys.exit(f"{topic} should have {PARTITIONS} partitions (Tansu's auto-create default)")
    started = time.perf_counter()
    records = 0 if args.latency else args.records  # --latency feeds its own topics
    ends = _bridge.call(
        600, lambda: Deferred.fromCoroutine(fill(client, topic, records, args.size))
    )
    print(f"filled {records:,} records in {time.perf_counter() - started:.1f} s: {ends}")

    if records:
        started = time.perf_counter()
        read = _bridge.call(600, lambda: Deferred.fromCoroutine(consume_all(client, topic, ends)))
        elapsed = time.perf_counter() - started
        assert read == records * args.size, read
        print(
            f"afkak Consumer x{PARTITIONS}, 1 process: {elapsed:.2f} s, "
            f"{records / elapsed:,.0f} records/s"
        )

    if args.cold:
        compare_cold(bootstrap, topic, ends, args)
        return
    spark = spark_session(args, jars)
    if broker is not None and args.latency:
        import statistics

        latency: dict[str, list[tuple[float, float]]] = {"afkak": [], "kafka": []}
        for run in range(args.runs):
            for fmt in latency:
                p50, p95, phases = stream_latency(spark, broker, client, fmt, args.latency, run)
                latency[fmt].append((p50, p95))
                shares = ", ".join(f"{k} {v:.0f}" for k, v in sorted(phases.items()))
                print(f"{fmt}: p50 {p50:.0f} ms, p95 {p95:.0f} ms; micro-batch ms: {shares}")
                print(f"load average: {os.getloadavg()}")
        for fmt, runs in latency.items():
            p50s, p95s = [r[0] for r in runs], [r[1] for r in runs]
            print(
                f"streaming latency {fmt}: p50 median {statistics.median(p50s):.0f} ms "
                f"({', '.join(f'{ms:.0f}' for ms in p50s)}), p95 median "
                f"{statistics.median(p95s):.0f} ms ({', '.join(f'{ms:.0f}' for ms in p95s)})"
            )
    elif broker is not None and args.stream:
        compare_stream(spark, broker, topic, ends, args)
    elif broker is not None:
        compare(spark, broker, topic, ends, args)
    if broker is not None:
        spark.stop()
        return
    for run in ["cold"] + ["warm"] * args.warm:
        elapsed, n = spark_read(spark, bootstrap, topic, ends)
        assert n == args.records, n
        print(f"Spark {args.master} ({run}): {elapsed:.2f} s, {n / elapsed:,.0f} records/s")
    if args.phases:
        phases(spark, bootstrap, topic, ends, args.phases)
    spark.stop()


if __name__ == "__main__":
    main()
