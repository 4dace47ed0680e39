"""confluent-kafka (librdkafka), the reference: produce() + poll(0) per message, then flush."""

from __future__ import annotations

import json
from typing import Any

import attrs

from bench.common import BATCH_SIZE, FETCH_BYTES, LINGER_MS, Job, Meter, Result, in_turn, payload

READ_VALUES = "consume(10000) + value()"
UNREAD = "consume(10000), values unread"

#: The producer exactly as installed: only ``bootstrap.servers`` set (issue 28).
DEFAULTS = "defaults, produce+poll"
VARIANTS = {
    "produce": ("produce+poll", DEFAULTS),
    # An application reads what it consumes: librdkafka builds a record's
    # value (bytes) only when value() is called, where the other clients
    # build every value they deliver.  The bare loop is kept for reference.
    "consume": (READ_VALUES, UNREAD),
    "partitions": (READ_VALUES, UNREAD),
    "latency": ("produce+poll", DEFAULTS),
}


def run(job: Job) -> Result:
    work = {"produce": _produce, "consume": _consume, "partitions": _consume, "latency": _latency}
    return work[job.workload](job)


def _producer(job: Job, linger_ms: int) -> Any:
    import confluent_kafka

    if job.variant == DEFAULTS:
        return confluent_kafka.Producer({"bootstrap.servers": job.bootstrap})
    return confluent_kafka.Producer(
        {
            "bootstrap.servers": job.bootstrap,
            "acks": job.acks,
            "enable.idempotence": False,
            "linger.ms": linger_ms,
            "batch.size": BATCH_SIZE,
        }
    )


def _delivered(producer: Any, topic: str, value: bytes, **kwargs: Any) -> Any:
    """Produce one message and poll until it is acknowledged; return it."""
    box: list[Any] = []
    producer.produce(topic, value, on_delivery=lambda err, msg: box.append((err, msg)), **kwargs)
    while not box:
        producer.poll(1.0)
    err, msg = box[0]
    if err is not None:
        raise RuntimeError(f"delivery failed: {err}")
    return msg


def _produce(job: Job) -> Result:
    producer = _producer(job, LINGER_MS)
    _delivered(producer, job.topic, b"warm-up")
    value = payload(job.size)
    topic, produce, poll = job.topic, producer.produce, producer.poll
    meter = Meter(job)
    meter.start()
    for _ in range(job.count - 1):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # queue.buffering.max.messages reached: wait for acks
                poll(0.001)
        poll(0)
    last = _delivered(producer, topic, value)
    if producer.flush(30):
        raise RuntimeError("flush timed out")
    result = meter.stop(job.count)
    if last.offset() != job.count:
        raise RuntimeError(f"last message at offset {last.offset()}, not {job.count}")
    return result


def _consume(job: Job) -> Result:
    import confluent_kafka

    last_stats: list[Any] = [None]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": job.bootstrap,
            "group.id": f"bench-{job.topic}",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": FETCH_BYTES,
            # Tansu answers a fetch with up to ~5 MB whatever the partition limit; past
            # queued.min.messages librdkafka would pause fetching for 1 s (the default).
            "fetch.queue.backoff.ms": 10,
            # librdkafka counts its requests per broker in its statistics
            "statistics.interval.ms": 100,
            "stats_cb": lambda stats: last_stats.__setitem__(0, stats),
        }
    )
    seen = 0
    read_values = job.variant == READ_VALUES
    meter = Meter(job)
    meter.start()
    consumer.assign(
        [confluent_kafka.TopicPartition(job.topic, p, 0) for p in range(job.partitions)]
    )
    while seen < job.count:
        # consume() waits for all it asks for: never ask for more than are left
        for message in consumer.consume(min(10000, job.count - seen), 1.0):
            if message.error() is not None:
                raise RuntimeError(f"consume failed: {message.error()}")
            if read_values:
                message.value()
            seen += 1
    result = meter.stop(seen)
    # The statistics of the next interval (at most 100 ms, a fetch or so more).
    before = last_stats[0]
    while last_stats[0] is before:
        consumer.poll(0.05)
    fetches = sum(b["req"].get("Fetch", 0) for b in json.loads(last_stats[0])["brokers"].values())
    result = attrs.evolve(result, fetches=fetches)
    consumer.close()
    return result


def _latency(job: Job) -> Result:
    producer = _producer(job, 0)
    _delivered(producer, job.topic, b"warm-up")
    value = payload(job.size)
    return in_turn(job, lambda: _delivered(producer, job.topic, value))
