"""Measure afkak's Producer: messages per second with one send_messages call per message.

Starts a Tansu broker (afkak.test.brokers), creates a one-partition topic and
sends N messages of 100 bytes with acks=1, no idempotence, linger 5 ms and
64 KiB batches (the settings the brief compares with aiokafka), then waits
for every acknowledgement (flush).  Prints the best of R runs.

With --chunk K the reactor runs every K sends (batches go out and settle
while the application sends), instead of once all N are sent.

Usage: python tools/bench_producer.py [--messages N] [--repeat R] [--chunk K] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint

from afkak.client import KafkaClient
from afkak.producer import Producer
from afkak.test.brokers import shared_broker


def wait(d: Deferred) -> object:
    results: list = []
    d.addBoth(results.append)
    while not results:
        reactor.iterate(0.001)
    return results[0]


def run(bootstrap: str, topic: str, n: int, chunk: int) -> tuple[float, float]:
    client = KafkaClient(bootstrap, endpoint_factory=TCP4ClientEndpoint)
    producer = Producer(
        client, req_acks=1, linger_ms=5, batch_size=64 * 1024, buffer_memory=64 << 20
    )
    wait(producer.send_messages(topic, None, [b"warm-up"]))
    value = b"x" * 100
    send = producer.send_messages
    msgs = [value]
    start = time.perf_counter()
    cpu = time.process_time()
    for i in range(n):
        last = send(topic, None, msgs)
        if chunk and i % chunk == 0:
            reactor.iterate(0)  # let the reactor run, as an application would
    wait(producer.flush())
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    assert wait(last).offset == n, "not every message was acknowledged"
    wait(producer.stop())
    wait(client.close())
    return n / elapsed, n / cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--chunk", type=int, default=0, help="let the reactor run every CHUNK sends (0: never)"
    )
    args = parser.parse_args()
    broker = shared_broker("tansu")
    best = 0.0
    for i in range(args.repeat):
        topic = f"bench-producer-{os.getpid()}-{i}"
        broker.create_topic(topic, 1)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
        rate, cpu_rate = run(broker.bootstrap, topic, args.messages, args.chunk)
        if args.profile:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        print(f"run {i}: {rate:,.0f} msgs/s ({cpu_rate:,.0f} per second of this process's CPU)")
        best = max(best, rate)
    print(f"best: {best:,.0f} msgs/s ({args.messages} x 100 B, acks=1, linger 5 ms, 64 KiB)")


if __name__ == "__main__":
    main()
