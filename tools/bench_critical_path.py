"""Where an awaited send's round trip goes: the client's share and the broker's.

An awaited send (one 100 B record, its acknowledgement awaited, repeated) is
a loop: the answer is read, its Deferred fires, the application sends again,
the next request is written, and the broker answers.  Each round trip splits
at two instants taken in the TCP transport (Twisted's
``tcp.Connection._dataReceived``, right after the socket's ``recv``, and its
``writeSomeData``, right before the socket's ``send``):

* **read to write**: from the answer's bytes in hand to the next request's
  ``send``: what the client does on the round trip's critical path (reading
  and decoding the answer, firing the send's Deferred, the application's
  next ``send()``, encoding and writing the request);
* **write to read**: from the ``send`` to the next answer's bytes in hand:
  the broker's work and the loopback, and whatever the client still did
  after the write that delayed its next ``epoll_wait``.

Variants (--variants), from the most afkak to the least:

* ``acks1``, ``defaults``: afkak's producer (``send_messages`` at acks=1;
  ``send()`` as installed);
* ``client``: afkak's client without the producer, a record batch and a
  ``ProduceCall`` per send through ``KafkaClient.send_request_to_broker``
  (the producer's share is the difference);
* ``routing``: the same client sending one Produce body encoded once, its
  answer not decoded (the ``ProduceCall``'s share, building, encoding and
  reading a request, is the difference from ``client``);
* ``connection``: afkak's ``BrokerConnection`` alone (no client, no
  metrics), that body handed to ``request()`` again and again: the least a
  path through afkak's connection layer can cost;
* ``floor``: the "twisted-floor" loop (one Produce request encoded once,
  written straight to the socket by a bare Twisted protocol, its answer
  firing a Deferred: tools/bench/run_twisted_floor.py), what Python and
  Twisted need at least.

With --calls, the Python calls made between the read and the write are
counted (cProfile enabled only there; the counts do not depend on the
machine's load, the times do).

Each variant runs in its own process, --runs times in turn, medians of each
run's median shown.  A broker is started here (one Apache Kafka node, as
tools/bench_clients.py --broker kafka) unless --bootstrap names one.

    python tools/bench_critical_path.py [--sends N] [--runs R] [--calls]
        [--variants acks1,defaults,client,routing,connection,floor]
        [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

VARIANTS = {
    "acks1": "afkak send_messages, acks=1, no idempotence",
    "defaults": "afkak send(), as installed (idempotent, acks=all)",
    "client": "afkak's client, no producer: a ProduceCall per send",
    "routing": "afkak's client routing one body, encoded once",
    "connection": "afkak's connection alone: one body, written again",
    "floor": "twisted-floor: bare protocol, straight to the socket",
}
WARM_UP = 200
PAYLOAD = b"x" * 100


class Marks:
    """The two instants of each round trip, taken in Twisted's TCP transport."""

    def __init__(self, calls: bool) -> None:
        import cProfile

        self.clock = time.perf_counter_ns
        self.read_at = 0
        self.written_at = 0
        self.on = False
        self.read_to_write: list[int] = []
        self.write_to_read: list[int] = []
        self.profile = cProfile.Profile() if calls else None
        self._profiling = False

    def install(self) -> None:
        from twisted.internet import tcp

        received, write = tcp.Connection._dataReceived, tcp.Connection.writeSomeData
        marks = self

        def _dataReceived(transport: Any, data: bytes) -> Any:
            now = marks.clock()
            if marks.on:
                if marks.written_at:
                    marks.write_to_read.append(now - marks.written_at)
                marks.read_at = now
                if marks.profile is not None and not marks._profiling:
                    marks._profiling = True
                    marks.profile.enable()
            return received(transport, data)

        def writeSomeData(transport: Any, data: bytes) -> Any:
            if marks._profiling:
                marks.profile.disable()  # type: ignore[union-attr]
                marks._profiling = False
            now = marks.clock()
            if marks.on and marks.read_at:
                marks.read_to_write.append(now - marks.read_at)
                marks.read_at = 0
            marks.written_at = now
            return write(transport, data)

        tcp.Connection._dataReceived = _dataReceived  # type: ignore[method-assign,assignment]
        tcp.Connection.writeSomeData = writeSomeData  # type: ignore[method-assign,assignment]

    def calls(self, sends: int) -> dict[str, float]:
        """Python calls per round trip between the read and the write, by module."""
        import pstats

        if self.profile is None:
            return {}
        by: Counter[str] = Counter()
        for (path, _, _), (_, calls, _, _, _) in pstats.Stats(self.profile).stats.items():  # type: ignore[attr-defined]
            if path.startswith("~"):
                by["builtins"] += calls
                continue
            for root in ("afkak", "twisted"):
                if f"/{root}/" in path:
                    by[root] += calls
                    break
            else:
                by["other"] += calls
        return {k: v / sends for k, v in by.items()}


RoundTrip = tuple[Callable[[], Any], Callable[[], Awaitable[None]]]


async def _floor(reactor: Any, bootstrap: str, topic: str) -> RoundTrip:
    """The twisted-floor loop: one Produce request encoded once, a bare protocol."""
    from bench.common import Job
    from bench.run_floor import Frames
    from bench.run_twisted_floor import TWISTED_SOCKET, _RoundTrips
    from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    frames = Frames(Job("twisted-floor", TWISTED_SOCKET, "latency", bootstrap, topic, 1, 100))
    protocol = await connectProtocol(
        TCP4ClientEndpoint(reactor, host, int(port)), _RoundTrips(TWISTED_SOCKET)
    )

    async def stop() -> None:
        protocol.tcp.loseConnection()

    return lambda: protocol.round_trip(frames.next()), stop


async def _leader(bootstrap: str, topic: str) -> tuple[Any, Any]:
    """A client that knows *topic*, and its partition 0's leader."""
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.client import KafkaClient
    from afkak.common import TopicAndPartition

    client = KafkaClient(bootstrap, endpoint_factory=TCP4ClientEndpoint)
    await client.load_metadata_for_topics(topic)
    return client, client.topics_to_brokers[TopicAndPartition(topic, 0)]


async def _client(reactor: Any, bootstrap: str, topic: str) -> RoundTrip:
    """afkak's client without its producer: a batch and a ProduceCall per send."""
    from afkak.client._produce_call import ProduceCall
    from afkak.common import ProduceRequest
    from afkak.records.builder import build_batch

    client, broker = await _leader(bootstrap, topic)
    payloads = [ProduceRequest(topic, 0, None)]
    ids, send_request, value = client.topic_ids, client.send_request_to_broker, PAYLOAD

    def round_trip() -> Any:
        call = ProduceCall(payloads, 1, 30000, {(topic, 0): build_batch([value])}, ids)
        return send_request(broker, call, min_version=3)

    return round_trip, client.close


class OneBody:
    """A Produce request whose body is encoded once and whose answer is not read."""

    def __init__(self, call: Any) -> None:
        self.request_class = call.request_class
        self.max_version = call.max_version
        self._call = call
        self._bodies: dict[int, bytes] = {}

    def __call__(self, version: int) -> Any:
        return self._call(version)

    def encode_body(self, version: int) -> bytes:
        body = self._bodies.get(version)
        if body is None:
            body = self._bodies[version] = self._call.encode_body(version)
        return body

    def decode_frame(self, frame: bytes) -> bytes:
        return frame


def _one_body(topic: str, topic_ids: Any) -> OneBody:
    from afkak.client._produce_call import ProduceCall
    from afkak.common import ProduceRequest
    from afkak.records.builder import build_batch

    batches = {(topic, 0): build_batch([PAYLOAD])}
    return OneBody(ProduceCall([ProduceRequest(topic, 0, None)], 1, 30000, batches, topic_ids))


async def _connection(reactor: Any, bootstrap: str, topic: str) -> RoundTrip:
    """afkak's connection alone (no client, no metrics): one body, written again and again."""
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.connection import BrokerConnection

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    connection = BrokerConnection(reactor, host, int(port), endpoint_factory=TCP4ClientEndpoint)
    request, one_body = connection.request, _one_body(topic, {})  # (no topic ids: v12)

    async def stop() -> None:
        await connection.close()

    return lambda: request(one_body, min_version=3, max_version=one_body.max_version), stop


async def _routing(reactor: Any, bootstrap: str, topic: str) -> RoundTrip:
    """afkak's client routing one body, encoded once, to the partition's leader."""
    client, broker = await _leader(bootstrap, topic)
    send_request, one_body = client.send_request_to_broker, _one_body(topic, client.topic_ids)
    return lambda: send_request(broker, one_body, min_version=3), client.close


async def _producer(reactor: Any, bootstrap: str, topic: str, defaults: bool) -> RoundTrip:
    """afkak's producer: ``send()`` as installed, or ``send_messages`` at acks=1."""
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from afkak.client import KafkaClient
    from afkak.producer import Producer

    client = KafkaClient(bootstrap, endpoint_factory=TCP4ClientEndpoint)
    value = PAYLOAD
    if defaults:
        producer = Producer(client)
        send = producer.send

        def round_trip() -> Any:
            return send(topic, value)

    else:
        producer = Producer(client, req_acks=1, enable_idempotence=False)
        send_messages = producer.send_messages

        def round_trip() -> Any:
            return send_messages(topic, None, [value])

    async def stop() -> None:
        await producer.stop()
        await client.close()

    return round_trip, stop


async def _round_trips(
    reactor: Any, variant: str, bootstrap: str, topic: str, sends: int, marks: Marks
) -> dict[str, Any]:
    from bench.common import Job, awaited_in_turn
    from bench.report import percentile

    if variant == "floor":
        round_trip, stop = await _floor(reactor, bootstrap, topic)
    elif variant == "client":
        round_trip, stop = await _client(reactor, bootstrap, topic)
    elif variant == "connection":
        round_trip, stop = await _connection(reactor, bootstrap, topic)
    elif variant == "routing":
        round_trip, stop = await _routing(reactor, bootstrap, topic)
    else:
        round_trip, stop = await _producer(reactor, bootstrap, topic, variant == "defaults")
    for _ in range(WARM_UP):
        await round_trip()
    marks.on = True
    result = await awaited_in_turn(
        Job(variant, variant, "latency", bootstrap, topic, sends, len(PAYLOAD)), round_trip
    )
    marks.on = False
    await stop()
    return {
        "p50": percentile(result.latencies_ms, 0.5) * 1000,
        "p99": percentile(result.latencies_ms, 0.99) * 1000,
        "read_to_write": percentile(marks.read_to_write, 0.5) / 1000,
        "write_to_read": percentile(marks.write_to_read, 0.5) / 1000,
        "cpu": result.cpu / sends * 1e6,
        "calls": marks.calls(sends),
    }


def worker(spec: str) -> None:
    job = json.loads(spec)
    from twisted.internet import reactor as installed
    from twisted.internet.defer import ensureDeferred

    reactor: Any = installed  # (its run() takes installSignalHandlers)

    marks = Marks(job["calls"])
    marks.install()
    out: list[Any] = []

    def go() -> None:
        d = ensureDeferred(
            _round_trips(
                reactor, job["variant"], job["bootstrap"], job["topic"], job["sends"], marks
            )
        )
        d.addBoth(out.append)
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run(installSignalHandlers=False)
    result = out[0]
    if not isinstance(result, dict):
        result.raiseException()
    print(json.dumps(result))


def run(variant: str, bootstrap: str, topic: str, sends: int, calls: bool) -> dict[str, Any]:
    job = {
        "variant": variant,
        "bootstrap": bootstrap,
        "topic": topic,
        "sends": sends,
        "calls": calls,
    }
    argv = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(job)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise RuntimeError(f"{variant}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--sends", type=int, default=2000, help="round trips measured per run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant, in turn")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument(
        "--calls", action="store_true", help="count the Python calls between read and write"
    )
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from afkak.test.brokers import KafkaBroker

        broker = KafkaBroker().start()
        bootstrap = broker.bootstrap
    topic = f"critical-path-{os.getpid()}"
    try:
        if broker is not None:
            broker.create_topic(topic, 1)
        else:
            from afkak.test.brokers import admin_create_topic

            admin_create_topic(bootstrap, topic, 1)
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        loads = []
        for _ in range(args.runs):
            for variant in variants:
                loads.append(os.getloadavg()[0])
                runs[variant].append(run(variant, bootstrap, topic, args.sends, args.calls))
    finally:
        if broker is not None:
            broker.stop()
    print(
        f"{args.sends} awaited sends per run, medians of {args.runs} runs; "
        f"1-minute load {min(loads):.1f} to {max(loads):.1f}"
    )
    print(
        f"{'variant':55s} {'p50 us':>8s} {'p99 us':>8s} {'read>write':>10s}"
        f" {'write>read':>10s} {'CPU us':>8s}"
    )
    for variant in variants:
        rows = runs[variant]

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        print(
            f"{VARIANTS[variant]:55s} {med('p50'):8.1f} {med('p99'):8.1f}"
            f" {med('read_to_write'):10.1f} {med('write_to_read'):10.1f} {med('cpu'):8.1f}"
        )
        if args.calls:
            calls = rows[0]["calls"]
            shown = ", ".join(
                f"{k} {v:.0f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1])
            )
            print(f"{'':55s} calls read>write: {sum(calls.values()):.0f} ({shown})")


if __name__ == "__main__":
    main()
