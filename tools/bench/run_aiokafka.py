"""aiokafka on asyncio's default event loop: ``await send()`` per message, flush at the end."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from bench.common import (
    BATCH_SIZE,
    FETCH_BYTES,
    LINGER_MS,
    Job,
    Meter,
    Result,
    awaited_in_turn,
    payload,
)

#: Throughput also runs without aiokafka's Cython record code ("pure Python"), which
#: aiokafka skips when AIOKAFKA_NO_EXTENSIONS is set: the comparison among pure-Python clients.
PURE = "pure Python"
#: The producer exactly as installed (only ``bootstrap_servers``), the send
#: futures kept and gathered (issue 28).
DEFAULTS = "defaults, send+gather"
VARIANTS = {
    "produce": ("send", f"send, {PURE}", DEFAULTS),
    "consume": ("getmany", f"getmany, {PURE}"),
    "partitions": ("getmany", f"getmany, {PURE}"),
    "latency": ("send+await", DEFAULTS),
}


def run(job: Job) -> Result:
    if job.variant.endswith(PURE):
        os.environ["AIOKAFKA_NO_EXTENSIONS"] = "1"  # read when aiokafka is first imported
    work = {
        "produce": _produce,
        "consume": _consume,
        "partitions": _consume,
        "latency": _latency,
    }[job.workload]
    return asyncio.run(work(job))


async def _producer(job: Job, linger_ms: int) -> Any:
    from aiokafka import AIOKafkaProducer

    if job.variant == DEFAULTS:
        producer = AIOKafkaProducer(bootstrap_servers=job.bootstrap)
        await producer.start()
        await (await producer.send(job.topic, b"warm-up"))
        return producer
    producer = AIOKafkaProducer(
        bootstrap_servers=job.bootstrap,
        acks=job.acks,
        enable_idempotence=False,
        linger_ms=linger_ms,
        max_batch_size=BATCH_SIZE,
    )
    await producer.start()
    await (await producer.send(job.topic, b"warm-up"))
    return producer


async def _produce(job: Job) -> Result:
    producer = await _producer(job, LINGER_MS)
    value = payload(job.size)
    topic, send = job.topic, producer.send
    meter = Meter(job)
    meter.start()
    if job.variant == DEFAULTS:
        futures = [await send(topic, value) for _ in range(job.count)]
        metadata = (await asyncio.gather(*futures))[-1]
    else:
        for _ in range(job.count):
            last = await send(topic, value)
        await producer.flush()
        metadata = await last
    result = meter.stop(job.count)
    if metadata.offset != job.count:
        raise RuntimeError(f"last message at offset {metadata.offset}, not {job.count}")
    await producer.stop()
    return result


async def _consume(job: Job) -> Result:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=job.bootstrap,
        enable_auto_commit=False,
        max_partition_fetch_bytes=FETCH_BYTES,
    )
    await consumer.start()
    fetches = _count_fetches(consumer)
    tps = [TopicPartition(job.topic, p) for p in range(job.partitions)]
    seen = 0
    meter = Meter(job)
    meter.start()
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    while seen < job.count:
        batch = await consumer.getmany(*tps, timeout_ms=1000, max_records=100_000)
        seen += sum(len(records) for records in batch.values())
    result = meter.stop(seen, fetches=fetches[0])
    await consumer.stop()
    return result


def _count_fetches(consumer: Any) -> list[int]:
    """Count the Fetch requests (api key 1) *consumer*'s client sends from now on."""
    count = [0]
    client = consumer._client
    send = client.send

    def counting(node_id: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(request, "API_KEY", None) == 1:
            count[0] += 1
        return send(node_id, request, *args, **kwargs)

    client.send = counting
    return count


async def _latency(job: Job) -> Result:
    producer = await _producer(job, 0)
    value = payload(job.size)
    topic, send = job.topic, producer.send

    async def acknowledged() -> object:
        return await (await send(topic, value))

    result = await awaited_in_turn(job, acknowledged)
    await producer.stop()
    return result
