"""Chaos harness: afkak under faults, checked from the outside (issue 10).

Three experiments, each a sub-command; docs/reliability.rst has the results.

``produce-mock``
    Idempotent producing of N records to librdkafka's 3-broker mock cluster
    through a schedule of faults (pushed produce errors, leader moves, a
    broker down and up again, latency), then reading everything back with
    confluent-kafka: lost, duplicated and reordered records per partition,
    against the producer's own accounting (sends acknowledged / failed).  The
    mock does not check sequence numbers (a quirk): a retried batch may be
    written twice there, and after later ones, so duplicated and reordered
    records are counted there but expected to be 0 only on noida-db.
``produce-noida``
    The same against noida-db (which checks sequences) behind a
    fault-injecting TCP proxy (connections cut, latency), with kill -9 of the
    broker and a restart every few seconds.  noida-db loses what it
    acknowledged in about the second before a kill -9 (a quirk of that
    broker, see afkak/test/brokers/noida.py): lost records are reported with
    how many of them were acknowledged within that window before a kill.
``produce-kafka``
    The same on Apache Kafka's 3-node cluster (replication factor 3,
    ``min.insync.replicas=2``): the leader of a random partition is killed (-9)
    and, a period later, restarted with its data.  Nothing may be lost,
    duplicated or reordered.
``group``
    A consumer group of afkak and confluent-kafka members on noida-db; members
    are killed (afkak: stopped without committing; confluent-kafka: kill -9 of
    its process) and restarted while records flow.  Every record must be
    processed by some member (duplicates are allowed inside the uncommitted
    window).
``group-kafka``
    afkak ConsumerGroup members (child processes) on Apache Kafka's 3-node cluster
    through a controlled restart of each node in turn and SIGKILLs of members: every
    record processed; a record processed again only inside a member's uncommitted
    window (counted).
``eos-kafka``
    A transactional consume-transform-produce pipeline (ConsumerGroup with a
    TransactionalProcessor) on the 3-node cluster through kill -9 of partition leaders:
    each input exactly once in the output, read read_committed by Kafka's Java
    ConsoleConsumer; ``kafka-transactions`` lists and describes its transactional id.
``group-coordinator-kill``
    Consumer groups (afkak's and confluent-kafka's, session timeouts 6 s and 10 s) on the
    3-node cluster whose coordinator's node is killed (-9) and not restarted: each
    group's stall (the longest a partition went unprocessed) and records lost, the
    cluster's leader failover and each group's delay past it; ``--log FILE`` writes
    afkak's log (debug level, millisecond timestamps) for tracing a slow run.
``sessions-kafka``
    KIP-227 fetch-session eviction on an Apache Kafka node keeping 8 sessions:
    one-partition readers hold them for 125 s (Kafka evicts only sessions
    older than 120 s), then four-partition readers evict them; the evicted
    get FETCH_SESSION_ID_NOT_FOUND and go on with full fetches, every reader
    reads everything in order.
``fuzz``
    The hostile-broker fuzzer (tools/chaos_fuzz.py): responses of one broker
    mutated, counting crashes, hung Deferreds, memory growth and failures of
    requests to the other broker.

Usage: python tools/chaos.py fuzz --responses 1000000
       python tools/chaos.py produce-mock --records 1000000
       python tools/chaos.py produce-noida --records 200000 --kills 5
       python tools/chaos.py produce-kafka --records 1000000 --kills 10
       python tools/chaos.py group --records 100000 --kills 20
       python tools/chaos.py group-kafka --records 1000000 --kills 6 --period 10
       python tools/chaos.py eos-kafka --records 100000 --kills 5 --period 8
       python tools/chaos.py group-coordinator-kill --sessions 6000 10000 [--log FILE]
       python tools/chaos.py sessions-kafka --readers 8
Each prints a report and exits non-zero if an invariant broke.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The experiments next to this file, and the afkak of this checkout (not an installed one).
_TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_TOOLS, os.path.dirname(_TOOLS)]

from rich.progress import Progress  # noqa: E402


@contextmanager
def progress_bar(what: str, total: int) -> Iterator[Any]:
    """``update(done)`` for a rich progress bar of *total* steps."""
    with Progress(transient=False) as bar:
        task = bar.add_task(what, total=total)
        yield lambda done: bar.update(task, completed=done)


def run_fuzz(args: argparse.Namespace) -> int:
    import chaos_fuzz

    started = time.monotonic()
    with progress_bar("mutated responses", args.responses) as update:
        report = chaos_fuzz.fuzz(args.responses, seed=args.seed, progress=update)
    for line in report.lines():
        print(line)
    print(f"{time.monotonic() - started:.0f} s")
    ok = (
        report.crashes == 0
        and report.hung == 0
        and report.collateral == 0
        and report.timers_left == 0
        and report.rss_growth <= 0.10
    )
    return 0 if ok else 1


def run_produce(args: argparse.Namespace) -> int:
    import chaos_produce

    started = time.monotonic()
    with progress_bar("records acknowledged or failed", args.records) as update:
        if args.command == "produce-mock":
            report = chaos_produce.produce_mock(
                args.records, seed=args.seed, progress=update, seconds=args.seconds
            )
        else:
            experiment = (
                chaos_produce.produce_noida
                if args.command == "produce-noida"
                else chaos_produce.produce_kafka_cluster
            )
            report = experiment(
                args.records, kills=args.kills, seed=args.seed, progress=update, period=args.period
            )
    for line in report.lines():
        print(line)
    print(f"{time.monotonic() - started:.0f} s")
    return 0 if report.ok(args.command != "produce-mock") else 1


def run_group(args: argparse.Namespace) -> int:
    import chaos_group

    started = time.monotonic()
    with progress_bar("records processed", args.records) as update:
        report = chaos_group.group(
            args.records, kills=args.kills, seed=args.seed, progress=update, period=args.period
        )
    for line in report.lines():
        print(line)
    print(f"{time.monotonic() - started:.0f} s")
    return 0 if report.lost == 0 else 1


def run_kafka(args: argparse.Namespace) -> int:
    import chaos_kafka

    experiment = chaos_kafka.group_kafka if args.command == "group-kafka" else chaos_kafka.eos_kafka
    with progress_bar("records processed", args.records) as update:
        report = experiment(
            args.records, kills=args.kills, seed=args.seed, progress=update, period=args.period
        )
    for line in report.lines():
        print(line)
    print(f"{report.seconds:.0f} s")
    return 0 if report.ok() else 1


def _log_to(path: str) -> None:
    """Everything afkak logs (debug included), with millisecond timestamps, to *path*."""
    from twisted.logger import globalLogBeginner, textFileLogObserver

    out = open(path, "w")  # open until the process ends
    globalLogBeginner.beginLoggingTo(
        [textFileLogObserver(out, timeFormat="%H:%M:%S.%f")], redirectStandardIO=False
    )


def run_coordinator_kill(args: argparse.Namespace) -> int:
    import chaos_coordinator

    if args.log:
        _log_to(args.log)
    report = chaos_coordinator.coordinator_kill(
        args.rate, session_timeouts=tuple(args.sessions), clients=tuple(args.clients)
    )
    for line in report.lines():
        print(line)
    print(f"{report.seconds:.0f} s")
    return 0 if report.ok() else 1


def run_sessions(args: argparse.Namespace) -> int:
    import chaos_kafka

    report = chaos_kafka.sessions_kafka(args.readers, age=args.age)
    for line in report.lines():
        print(line)
    print(f"{report.seconds:.0f} s")
    return 0 if report.ok() else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    commands = parser.add_subparsers(dest="command", required=True)
    fuzz = commands.add_parser("fuzz", help="hostile-broker fuzzer")
    fuzz.add_argument("--responses", type=int, default=100_000)
    fuzz.set_defaults(run=run_fuzz)
    for name in ("produce-mock", "produce-noida", "produce-kafka"):
        produce = commands.add_parser(name, help="idempotent producing through faults")
        produce.add_argument("--records", type=int, default=100_000)
        produce.add_argument("--kills", type=int, default=5)
        produce.add_argument("--period", type=float, default=6.0, help="seconds between kills")
        produce.add_argument("--seconds", type=float, default=100.0, help="mock: production time")
        produce.set_defaults(run=run_produce)
    group = commands.add_parser("group", help="mixed consumer group through member kills")
    group.add_argument("--records", type=int, default=50_000)
    group.add_argument("--kills", type=int, default=20)
    group.add_argument("--period", type=float, default=8.0, help="seconds between kills")
    group.set_defaults(run=run_group)
    for name, what, kills, period in (
        ("group-kafka", "a consumer group through rolling restarts and member kills", 6, 10.0),
        ("eos-kafka", "an exactly-once pipeline through leader kills", 4, 6.0),
    ):
        kafka = commands.add_parser(name, help=what)
        kafka.add_argument("--records", type=int, default=100_000)
        kafka.add_argument("--kills", type=int, default=kills)
        kafka.add_argument("--period", type=float, default=period, help="seconds between faults")
        kafka.set_defaults(run=run_kafka)
    kill = commands.add_parser(
        "group-coordinator-kill", help="consumer groups whose coordinator's node is killed"
    )
    kill.add_argument("--rate", type=int, default=60, help="records per second")
    kill.add_argument("--sessions", type=int, nargs="+", default=[6000, 10000])
    kill.add_argument("--clients", nargs="+", default=["afkak", "confluent"])
    kill.add_argument("--log", help="afkak's log, debug level, ms timestamps, to this file")
    kill.set_defaults(run=run_coordinator_kill)
    sessions = commands.add_parser("sessions-kafka", help="fetch sessions evicted by Kafka")
    sessions.add_argument("--readers", type=int, default=8)
    sessions.add_argument("--age", type=float, default=125.0, help="seconds before eviction")
    sessions.set_defaults(run=run_sessions)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
