"""kafka-python: ``send()`` per message, flush at the end; its I/O runs in a sender thread."""

from __future__ import annotations

from typing import Any

from bench.common import BATCH_SIZE, FETCH_BYTES, LINGER_MS, Job, Meter, Result, in_turn, payload

VARIANTS = {"produce": ("send",), "consume": ("poll",), "latency": ("send+get",)}


def run(job: Job) -> Result:
    return {"produce": _produce, "consume": _consume, "latency": _latency}[job.workload](job)


def _producer(job: Job, linger_ms: int) -> Any:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=job.bootstrap,
        acks=job.acks,
        enable_idempotence=False,
        linger_ms=linger_ms,
        batch_size=BATCH_SIZE,
    )
    producer.send(job.topic, b"warm-up").get(timeout=30)
    return producer


def _produce(job: Job) -> Result:
    producer = _producer(job, LINGER_MS)
    value = payload(job.size)
    topic, send = job.topic, producer.send
    meter = Meter(job)
    meter.start()
    for _ in range(job.count):
        last = send(topic, value)
    producer.flush()
    metadata = last.get(timeout=30)
    result = meter.stop(job.count)
    if metadata.offset != job.count:
        raise RuntimeError(f"last message at offset {metadata.offset}, not {job.count}")
    producer.close()
    return result


def _consume(job: Job) -> Result:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=job.bootstrap,
        enable_auto_commit=False,
        max_partition_fetch_bytes=FETCH_BYTES,
    )
    tp = TopicPartition(job.topic, 0)
    seen = 0
    meter = Meter(job)
    meter.start()
    consumer.assign([tp])
    consumer.seek(tp, 0)
    while seen < job.count:
        batch = consumer.poll(timeout_ms=1000, max_records=100_000)
        seen += sum(len(records) for records in batch.values())
    result = meter.stop(seen)
    consumer.close()
    return result


def _latency(job: Job) -> Result:
    producer = _producer(job, 0)
    value = payload(job.size)
    topic, send = job.topic, producer.send
    result = in_turn(job, lambda: send(topic, value).get(timeout=30))
    producer.close()
    return result
