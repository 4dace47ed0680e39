"""afkak's side: its Producer and Consumer, run under ``reactor.run()`` as an application would."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.task import deferLater

from bench.common import (
    BATCH_SIZE,
    FETCH_BYTES,
    LINGER_MS,
    Job,
    Meter,
    Result,
    awaited_in_turn,
    list_length,
    payload,
    under_reactor,
)

#: ``Producer(client)`` as installed, ``send(topic, value)`` per record, every
#: Deferred kept and gathered (produce) or awaited in turn (latency): how an
#: application writes it (issue 28).
DEFAULTS_SEND = "defaults send+gather"
#: Consumers also run without the compiled record code (AFKAK_NO_EXTENSIONS).
PURE = "pure Python"
VARIANTS = {
    "produce": ("send_messages x1", "send_messages list", "defaults x1", DEFAULTS_SEND),
    "consume": ("1 MiB fetches", "defaults", "getmany", f"defaults, {PURE}"),
    "partitions": ("defaults", "getmany", f"defaults, {PURE}"),
    "latency": ("acks=1", "defaults", DEFAULTS_SEND),
}


def run(job: Job) -> Result:
    if job.variant.endswith(PURE):
        os.environ["AFKAK_NO_EXTENSIONS"] = "1"  # read when afkak.records is first imported
    work: dict[str, Callable[[Any, Job], Coroutine[Any, Any, Result]]] = {
        "produce": _produce,
        "consume": _consume,
        "partitions": _consume,
        "latency": _latency,
    }
    return under_reactor(lambda reactor: work[job.workload](reactor, job))


def _client(job: Job) -> Any:
    from afkak.client import KafkaClient

    return KafkaClient(job.bootstrap, endpoint_factory=TCP4ClientEndpoint)


def _producer(client: Any, job: Job, linger_ms: int) -> Any:
    from afkak.producer import Producer

    if job.variant.startswith("defaults"):
        return Producer(client)  # idempotent, acks=all, linger 0, batches up to 256 KiB
    return Producer(
        client,
        req_acks=job.acks,
        enable_idempotence=False,
        linger_ms=linger_ms,
        batch_size=BATCH_SIZE,
    )


def _turn(reactor: Any) -> Deferred[None]:
    """Let the reactor do its I/O once, as an application's other work would."""
    return deferLater(reactor, 0, lambda: None)


async def _produce(reactor: Any, job: Job) -> Result:
    client = _client(job)
    producer = _producer(client, job, LINGER_MS)
    topic, n, send = job.topic, job.count, producer.send_messages
    await send(topic, None, [b"warm-up"])  # connection, metadata, producer id
    value = payload(job.size)
    meter = Meter(job)
    meter.start()
    if job.variant == DEFAULTS_SEND:
        return await _produce_send(reactor, job, client, producer, meter)
    if job.variant == "send_messages list":
        chunk = [value] * list_length(job.size)
        for i in range(0, n, len(chunk)):
            last = send(topic, None, chunk[: n - i])
            await _turn(reactor)
        last_offset = n - (n - 1) % len(chunk)  # the first of the last list
    else:
        msgs, every = [value], job.yield_every
        for i in range(n):
            last = send(topic, None, msgs)
            if i % every == every - 1:
                await _turn(reactor)
        last_offset = n
    await producer.flush()
    response = await last
    result = meter.stop(n)
    if response.offset != last_offset:
        raise RuntimeError(f"last send at offset {response.offset}, not {last_offset}")
    await producer.stop()
    await client.close()
    return result


async def _produce_send(reactor: Any, job: Job, client: Any, producer: Any, meter: Meter) -> Result:
    """``send()`` per record, the Deferreds kept and gathered (the reactor turns every N sends)."""
    from twisted.internet.defer import gatherResults

    topic, n, send, every = job.topic, job.count, producer.send, job.yield_every
    value = payload(job.size)
    sent = []
    append = sent.append
    for i in range(n):
        append(send(topic, value))
        if i % every == every - 1:
            await _turn(reactor)
    acks = await gatherResults(sent, consumeErrors=True)
    result = meter.stop(n)
    if acks[-1].offset != n:
        raise RuntimeError(f"last send at offset {acks[-1].offset}, not {n}")
    await producer.stop()
    await client.close()
    return result


async def _consume(reactor: Any, job: Job) -> Result:
    """One Consumer per partition on one client (they share one Fetch per broker)."""
    from afkak.consumer import Consumer
    from afkak.consumer._broker_fetch import FetchManager

    client = _client(job)
    await client.load_metadata_for_topics(job.topic)
    if job.variant == "getmany":
        return await _pull(client, job)
    seen = [0]
    done: Deferred[None] = Deferred()

    def processor(consumer: Any, messages: list[Any]) -> None:
        seen[0] += len(messages)
        if seen[0] >= job.count and not done.called:
            done.callback(None)

    options = {"buffer_size": FETCH_BYTES} if job.variant == "1 MiB fetches" else {}
    consumers = [
        Consumer(client, job.topic, p, processor, **options) for p in range(job.partitions)
    ]
    meter = Meter(job)
    meter.start()
    for consumer in consumers:
        consumer.start(0).addErrback(lambda f: done.called or done.errback(f))
    await done
    result = meter.stop(seen[0], fetches=client.shared(FetchManager).requests)
    for consumer in consumers:
        consumer.stop()
    await client.close()
    return result


async def _pull(client: Any, job: Job) -> Result:
    """The pull-style KafkaConsumer over the same partitions, polling getmany in a loop."""
    from afkak import KafkaConsumer
    from afkak.consumer._broker_fetch import FetchManager

    consumer = KafkaConsumer(client)
    tps = [(job.topic, p) for p in range(job.partitions)]
    meter = Meter(job)
    meter.start()
    consumer.assign(tps)
    for tp in tps:  # from offset 0, as the processor rows and the other clients start
        consumer.seek(tp, 0)
    seen = 0
    while seen < job.count:
        batches = await consumer.getmany(timeout_ms=1000)
        seen += sum(len(records) for records in batches.values())
    result = meter.stop(seen, fetches=client.shared(FetchManager).requests)
    await consumer.close()
    await client.close()
    return result


async def _latency(reactor: Any, job: Job) -> Result:
    client = _client(job)
    producer = _producer(client, job, 0)
    topic = job.topic
    await producer.send_messages(topic, None, [b"warm-up"])
    value = payload(job.size)
    if job.variant == DEFAULTS_SEND:
        send = producer.send
        args: tuple[Any, ...] = (topic, value)
    else:
        send, args = producer.send_messages, (topic, None, [value])
    result = await awaited_in_turn(job, lambda: send(*args))
    await producer.stop()
    await client.close()
    return result
