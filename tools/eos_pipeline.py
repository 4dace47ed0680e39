"""Exactly-once consume-transform-produce, proven by killing it.

``run`` is the pipeline: one afkak Consumer per input partition
(``read_committed``, starting at the group's committed offsets), each block of
records upper-cased into the output topic by a
:class:`~afkak.group.TransactionalProcessor`, output and input offsets
committed in one transaction; it exits once every input partition's
committed offset reached its end.  ``check`` drives it: it writes N input
records, starts ``run`` as a subprocess, SIGKILLs it at random moments
several times, restarts it, lets the last run finish, and reads the output
with confluent-kafka ``read_committed``: each input must appear exactly once.
A run commits a transaction per ``--block`` records (and prints ``TXN``); the
driver kills it after a random number of them plus a random pause.

With no bootstrap address it starts an Apache Kafka node (the test harness's).
Usage::

    python tools/eos_pipeline.py check [--records 100000] [--kills 5] [--bootstrap H:P]
    python tools/eos_pipeline.py run --bootstrap H:P --input T --output T --group G --tid ID
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import Any

PARTITIONS = 3


def run(args: argparse.Namespace) -> None:
    from twisted.internet.defer import Deferred
    from twisted.internet.endpoints import TCP4ClientEndpoint
    from twisted.internet.task import react

    from afkak._retry import retry_backoff, retrying
    from afkak.client import KafkaClient
    from afkak.common import (
        OFFSET_COMMITTED,
        OFFSET_EARLIEST,
        OffsetFetchRequest,
        OffsetRequest,
    )
    from afkak.consumer import Consumer
    from afkak.group import TransactionalProcessor
    from afkak.producer import Producer

    def upper(messages: Any) -> list[tuple[str, bytes | None, bytes | None]]:
        return [(args.output, (m.message.value or b"").upper(), m.message.key) for m in messages]

    async def main(reactor: Any) -> None:
        client = KafkaClient(args.bootstrap, endpoint_factory=TCP4ClientEndpoint, timeout=10_000)
        await client.load_metadata_for_topics(args.input)
        partitions = client.topic_partitions[args.input]
        ends = {
            r.partition: r.offsets[0]
            for r in await client.send_offset_request(
                [OffsetRequest(args.input, p, -1, 1) for p in partitions],
                isolation_level="read_committed",
            )
        }
        producer = Producer(client, transactional_id=args.tid, linger_ms=5)
        await producer.init_transactions()
        processor = TransactionalProcessor(producer, upper)
        finished: Deferred[None] = Deferred()
        consumers = []

        #: Partition -> the next input offset, as committed by the pipeline's transactions.
        # A new group's coordinator may still be loading (COORDINATOR_LOAD_IN_PROGRESS).
        committed = await retrying(
            reactor,
            lambda: client.send_offset_fetch_request(
                args.group,
                [OffsetFetchRequest(args.input, p) for p in partitions],
                require_stable=True,
            ),
            retry_backoff(),
            max_attempts=50,
            what="OffsetFetch",
        )
        position = {c.partition: max(c.offset, 0) for c in committed}

        async def blocks(consumer: Consumer, messages: Any) -> None:
            """One transaction per --block records, so that kills land mid-work."""
            for start in range(0, len(messages), args.block):
                block = messages[start : start + args.block]
                await processor(consumer, block)
                print("TXN", flush=True)
                position[consumer.partition] = block[-1].offset + 1
            if all(position[p] >= ends[p] for p in partitions) and not finished.called:
                finished.callback(None)

        def check_done(consumer: Consumer, messages: Any) -> Deferred[None]:
            return Deferred.fromCoroutine(blocks(consumer, messages))

        for p in partitions:
            consumer = Consumer(
                client,
                args.input,
                p,
                check_done,
                consumer_group=args.group,
                auto_commit_every_n=0,
                auto_commit_every_ms=0,
                auto_offset_reset=OFFSET_EARLIEST,
                isolation_level="read_committed",
                fetch_max_wait_time=100,
                buffer_size=args.fetch_bytes,
            )
            consumers.append(consumer)
            consumer.start(OFFSET_COMMITTED).addErrback(
                lambda f: finished.called or finished.errback(f)
            )
        print("RUNNING", flush=True)
        if all(position[p] >= ends[p] for p in partitions):
            finished.callback(None)
        await finished
        for c in consumers:
            c.stop()
        await producer.stop()
        await client.close()
        print("DONE", flush=True)

    react(lambda reactor: Deferred.fromCoroutine(main(reactor)))


def check(args: argparse.Namespace) -> None:
    from afkak.test.brokers import consume, produce, shared_broker
    from afkak.test.brokers.interop import admin_create_topic

    bootstrap = args.bootstrap or shared_broker("kafka").bootstrap
    stamp = int(time.time() * 1000)
    topic_in, topic_out = f"eos-in-{stamp}", f"eos-out-{stamp}"
    group, tid = f"eos-group-{stamp}", f"eos-tid-{stamp}"
    admin_create_topic(bootstrap, topic_in, PARTITIONS)
    admin_create_topic(bootstrap, topic_out, PARTITIONS)
    n = args.records
    started = time.monotonic()
    produce(bootstrap, topic_in, (b"record-%d" % i for i in range(n)), timeout=max(10.0, n / 5000))
    print(f"wrote {n} input records in {time.monotonic() - started:.1f} s", flush=True)
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "run",
        "--bootstrap",
        bootstrap,
        "--input",
        topic_in,
        "--output",
        topic_out,
        "--group",
        group,
        "--tid",
        tid,
        "--block",
        str(args.block),
    ]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    rng = random.Random(args.seed)
    started = time.monotonic()
    kills = 0
    while True:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        try:
            if kills < args.kills:
                # Kill it at a random moment of its work: after some transactions,
                # then a random pause (often inside the next transaction).
                commits = rng.randint(0, args.max_commits_before_kill)
                while commits >= 0 and proc.stdout is not None:
                    line = proc.stdout.readline()
                    if not line:
                        break
                    commits -= line.startswith("TXN")
                time.sleep(rng.uniform(0, args.max_kill_delay))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    kills += 1
                    print(f"killed run {kills}", flush=True)
                    continue
            out, _ = proc.communicate(timeout=args.timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise SystemExit(f"the pipeline failed ({proc.returncode}): {out}")
        break
    elapsed = time.monotonic() - started
    records = consume(
        bootstrap,
        topic_out,
        n,
        timeout=max(30.0, n / 2000),
        config={"isolation.level": "read_committed"},
    )
    counts = Counter(r.value for r in records)
    expected = {b"RECORD-%d" % i for i in range(n)}
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    missing = len(expected - set(counts))
    print(
        f"{n} records, {kills} kills: {len(records)} outputs read_committed, "
        f"{duplicates} duplicated, {missing} missing; pipeline time {elapsed:.1f} s",
        flush=True,
    )
    if duplicates or missing or set(counts) - expected:
        raise SystemExit("not exactly once")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    for name in ("bootstrap", "input", "output", "group", "tid"):
        r.add_argument(f"--{name}", required=True)
    r.add_argument("--fetch-bytes", type=int, default=65536, help="bytes per fetch")
    r.add_argument("--block", type=int, default=500, help="records per transaction")
    c = sub.add_parser("check")
    c.add_argument("--bootstrap")
    c.add_argument("--records", type=int, default=100_000)
    c.add_argument("--kills", type=int, default=5)
    c.add_argument("--max-commits-before-kill", type=int, default=10)
    c.add_argument("--block", type=int, default=500, help="records per transaction")
    c.add_argument("--max-kill-delay", type=float, default=0.05)
    c.add_argument("--timeout", type=float, default=600.0)
    c.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    run(args) if args.command == "run" else check(args)


if __name__ == "__main__":
    main()
