"""Thin blocking confluent-kafka (librdkafka) helpers: the reference peer client for
interop tests, and topic creation through CreateTopics."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from afkak.test.brokers.process import unavailable


def _confluent_kafka() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError as exc:
        unavailable(f"confluent-kafka is not installed: {exc}")
    return confluent_kafka


@attrs.frozen
class Record:
    """One consumed record, as confluent-kafka saw it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int = -1


def client_config(bootstrap: str, **config: Any) -> dict[str, Any]:
    """A librdkafka config for ``bootstrap`` with fast test-friendly defaults."""
    base: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 5000,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
        "log_level": 3,
    }
    base.update(config)
    return base


def admin_create_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    timeout: float = 10.0,
    replication_factor: int = 1,
) -> None:
    """Create ``topic`` through CreateTopics and wait until Metadata shows its partitions.

    ``replication_factor=-1``: the broker's ``default.replication.factor``.
    """
    ck = _confluent_kafka()
    admin = ck.admin.AdminClient(client_config(bootstrap))
    futures = admin.create_topics(
        [
            ck.admin.NewTopic(
                topic, num_partitions=partitions, replication_factor=replication_factor
            )
        ],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    futures[topic].result(timeout)
    wait_for_partitions(bootstrap, topic, partitions, timeout)


def wait_for_partitions(bootstrap: str, topic: str, partitions: int, timeout: float = 10.0) -> None:
    """Poll Metadata until ``topic`` has ``partitions`` partitions, each with a leader."""
    ck = _confluent_kafka()
    client = ck.admin.AdminClient(client_config(bootstrap))
    deadline = time.monotonic() + timeout
    seen: Any = None
    while time.monotonic() < deadline:
        seen = client.list_topics(topic, timeout=max(0.1, deadline - time.monotonic())).topics.get(
            topic
        )
        if (
            seen is not None
            and seen.error is None
            and len(seen.partitions) == partitions
            and all(p.leader >= 0 for p in seen.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic!r} did not show {partitions} partitions: {seen}")


def wait_for_leaders(
    bootstrap: str, topic: str, partitions: int, timeout: float = 30.0
) -> None:
    """Poll ListOffsets on every partition's leader until each answers without error.

    Apache Kafka's CreateTopics returns, and Metadata names the leaders, before every
    leader has taken its partition up: a Produce in between is answered
    NOT_LEADER_OR_FOLLOWER.
    """
    ck = _confluent_kafka()
    consumer = ck.Consumer(client_config(bootstrap, **{"group.id": "afkak-harness-probe"}))
    deadline = time.monotonic() + timeout
    try:
        for partition in range(partitions):
            while True:
                try:
                    consumer.get_watermark_offsets(
                        ck.TopicPartition(topic, partition), timeout=5.0
                    )
                    break
                except ck.KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
    finally:
        consumer.close()


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes],
    *,
    partition: int = -1,
    key: bytes | None = None,
    headers: Sequence[tuple[str, bytes]] = (),
    timeout: float = 10.0,
    config: Mapping[str, Any] | None = None,
) -> list[tuple[int, int]]:
    """Produce ``values`` (acks=all) and return each one's ``(partition, offset)``.

    ``partition=-1`` lets librdkafka's partitioner choose. Raises RuntimeError on the
    first delivery error.
    """
    ck = _confluent_kafka()
    producer = ck.Producer(client_config(bootstrap, acks="all", **dict(config or {})))
    delivered: list[tuple[int, int]] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))

    count = 0
    for value in values:
        producer.produce(
            topic,
            value,
            key,
            partition=partition,
            on_delivery=on_delivery,
            headers=list(headers),
        )
        count += 1
    remaining = producer.flush(timeout)
    if errors:
        raise RuntimeError(f"produce to {topic!r} failed: {errors[0]}")
    if remaining or len(delivered) != count:
        raise TimeoutError(f"only {len(delivered)} of {count} records delivered to {topic!r}")
    return delivered


def consume(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    partitions: Sequence[int] | None = None,
    timeout: float = 10.0,
    config: Mapping[str, Any] | None = None,
) -> list[Record]:
    """Read ``count`` records from the beginning of ``topic`` (all partitions unless
    given) by assignment, without a consumer group rebalance.

    Raises TimeoutError with what was read if fewer than ``count`` arrive in time.
    """
    ck = _confluent_kafka()
    consumer = ck.Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": "afkak-test-harness",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
                **dict(config or {}),
            },
        )
    )
    try:
        if partitions is None:
            metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
            partitions = sorted(metadata.partitions)
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        while len(records) < count and time.monotonic() < deadline:
            for msg in consumer.consume(min(count - len(records), 100_000), timeout=0.2):
                if msg.error() is not None:
                    if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consume from {topic!r} failed: {msg.error()}")
                records.append(
                    Record(
                        partition=msg.partition(),
                        offset=msg.offset(),
                        key=msg.key(),
                        value=msg.value(),
                        headers=tuple(msg.headers() or ()),
                        timestamp_ms=msg.timestamp()[1],
                    )
                )
    finally:
        consumer.close()
    if len(records) < count:
        raise TimeoutError(f"read {len(records)} of {count} records from {topic!r}: {records}")
    return records


def end_offsets(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[int, int]:
    """{partition: log end offset} of ``topic``, as confluent-kafka reads them."""
    ck = _confluent_kafka()
    consumer = ck.Consumer(client_config(bootstrap, **{"group.id": "afkak-test-harness"}))
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
        return {
            p: consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=timeout)[1]
            for p in sorted(metadata.partitions)
        }
    finally:
        consumer.close()
