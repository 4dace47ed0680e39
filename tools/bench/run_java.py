"""Apache Kafka's Java client, the yardstick: its own ProducerPerformance and ConsumerPerformance.

The tools run in a JVM started from this worker, on the classpath the test
harness resolves (``afkak.testing.apache_kafka.resolve_classpath``), with the
JVM's default compilers (C2 included, unlike the harness's quick-start
broker options).  ProducerPerformance sends ``--num-records`` records
without throttling, one ``send()`` with a callback per record, and waits for
every acknowledgement; its rate is the final summary line's.  The JVM's
start-up (class loading, connecting, metadata) is not the client's per-record
cost: "CPU" is the JVM's CPU time (``RUSAGE_CHILDREN``) minus that of the same
tool run for one record (measured in the same job).  ConsumerPerformance
reads the topic from offset 0 in a fresh group; its rate is over its fetch
time (the group join excluded).  The latency workload runs
``ProducerLatency.java`` (beside this file, run as a single source file):
one record sent and its acknowledgement awaited, in turn, as the other
clients' latency runs; tuned (acks, no idempotence, linger 0) or as installed
(Kafka 4: linger 5 ms, so ``flush()`` after each send, as librdkafka's
``flush()`` rows).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess

from bench.common import BATCH_SIZE, FETCH_BYTES, LINGER_MS, Job, Result, check_count

#: The producer as installed: only bootstrap.servers (Kafka 4: acks=all,
#: idempotent, linger 5 ms, 16 KiB batches).
DEFAULTS = "defaults, ProducerPerformance"
TUNED = "ProducerPerformance"
#: The latency workload: send(), then Future.get(); linger 0.
SEND_GET = "send+get"
#: The producer as installed (linger 5 ms): send(), flush(), Future.get().
DEFAULTS_FLUSH = "defaults, send+flush+get"
LATENCY_DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ProducerLatency.java")
VARIANTS = {
    "produce": (TUNED, DEFAULTS),
    "consume": ("ConsumerPerformance",),
    "partitions": ("ConsumerPerformance",),
    "latency": (SEND_GET, DEFAULTS_FLUSH),
}
PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
#: ProducerPerformance's summary: "N records sent, R records/sec (..), A ms avg latency, ..."
_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def _argv(main_class: str, args: list[str]) -> list[str]:
    import afkak.testing
    from afkak.testing.apache_kafka import resolve_classpath

    log4j2 = os.path.join(
        os.path.dirname(afkak.testing.__file__), "kafka", "log4j2-tools.properties"
    )
    classpath = os.path.join(resolve_classpath(), "*")
    return [
        "java", "-Xmx512m", f"-Dlog4j2.configurationFile={log4j2}",
        "-cp", classpath, main_class, *args,
    ]  # fmt: skip


def _run(main_class: str, args: list[str]) -> tuple[str, float]:
    """Run a tool to its end: its stdout and the CPU seconds its JVM used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        _argv(main_class, args), capture_output=True, text=True, timeout=170, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{main_class} exit {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, cpu


def run(job: Job) -> Result:
    if job.workload == "produce":
        return _produce(job)
    if job.workload == "latency":
        return _latency(job)
    return _consume(job)


def _produce(job: Job) -> Result:
    props = [f"bootstrap.servers={job.bootstrap}"]
    if job.variant != DEFAULTS:
        props += [
            f"acks={job.acks}",
            "enable.idempotence=false",
            f"linger.ms={LINGER_MS}",
            f"batch.size={BATCH_SIZE}",
        ]

    def perf(count: int) -> tuple[str, float]:
        return _run(
            PRODUCER,
            [
                "--topic", job.topic, "--num-records", str(count),
                "--record-size", str(job.size), "--throughput", "-1",
                "--command-property", *props,
            ],
        )  # fmt: skip

    _, start_cpu = perf(1)
    out, cpu = perf(job.count)
    summary = _SUMMARY.findall(out)
    if not summary:
        raise RuntimeError(f"no summary in ProducerPerformance's output: {out[-500:]}")
    sent, rate = int(summary[-1][0]), float(summary[-1][1])
    check_count(sent, job)
    return Result(sent, sent * job.size, sent / rate, max(cpu - start_cpu, 0.0))


def _consume(job: Job) -> Result:
    def perf(count: int, group: str) -> tuple[str, float]:
        return _run(
            CONSUMER,
            [
                "--bootstrap-server", job.bootstrap, "--topic", job.topic,
                "--num-records", str(count), "--group", group, "--timeout", "60000",
                "--command-property", f"max.partition.fetch.bytes={FETCH_BYTES}",
                "--command-property", "auto.offset.reset=earliest",
            ],
        )  # fmt: skip

    group = f"bench-java-{os.getpid()}"
    _, start_cpu = perf(1, group + "-start")
    out, cpu = perf(job.count, group)
    # the CSV line after the header: start, end, MB, MB/s, nMsg, nMsg/s, rebalance ms,
    # fetch ms, fetch MB/s, fetch nMsg/s
    fields = [line.split(", ") for line in out.splitlines() if line[:1].isdigit()][-1]
    read, fetch_ms = int(fields[4]), float(fields[7])
    check_count(read, job)
    return Result(read, read * job.size, fetch_ms / 1000, max(cpu - start_cpu, 0.0))


def _latency(job: Job) -> Result:
    props = []
    if job.variant == SEND_GET:
        props = [f"acks={job.acks}", "enable.idempotence=false", "linger.ms=0"]
    flush = "true" if job.variant == DEFAULTS_FLUSH else "false"
    args = [job.bootstrap, job.topic, str(job.count), str(job.size), flush, *props]
    out, _ = _run(LATENCY_DRIVER, args)
    latencies = tuple(float(line[4:]) for line in out.splitlines() if line.startswith("lat "))
    cpu = next(float(line[4:]) for line in out.splitlines() if line.startswith("cpu "))
    check_count(len(latencies), job)
    return Result(len(latencies), len(latencies) * job.size, sum(latencies) / 1000, cpu, latencies)
