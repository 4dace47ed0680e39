"""What the data source asks of Kafka, as coroutines on a KafkaClient or Producer.

They run in the reactor thread (see :mod:`._bridge`).  Reads retry what Kafka
calls retriable (leader moves, lost connections) a few times, refreshing
leaders in between, and return plain values; Fetch is the client's FetchCall
(topics by id from v13 on).  Writes go through afkak's Producer
(batching, retries, idempotence).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from twisted.internet.defer import Deferred, FirstError, gatherResults

from afkak._retry import RetryPolicy, retry_backoff, retrying
from afkak.client import KafkaClient
from afkak.common import (
    BrokerResponseError,
    FetchRequest,
    OffsetFetchRequest,
    OffsetRequest,
    TopicAndPartition,
)
from afkak.partitioner import DefaultPartitioner

from ._options import ClientConfig
from ._planning import matching
from ._rows import Outgoing, by_topic, chunks_by_key

if TYPE_CHECKING:
    from afkak.producer import Producer

_ATTEMPTS = 5

T = TypeVar("T")


@attrs.frozen
class FetchedPartition:
    """One partition's part of a Fetch response."""

    error: int
    high_watermark: int
    log_start_offset: int
    records: bytes | None
    #: read_committed: the response's AbortedTransactions (None otherwise).
    aborted: Sequence[Any] | None = None
    last_stable_offset: int = -1


def make_client(config: ClientConfig) -> KafkaClient:
    """A KafkaClient for *config*; call in the reactor thread."""
    rng = random.Random()
    return KafkaClient(
        config.bootstrap,
        clientId=config.client_id,
        timeout=config.request_timeout_ms,
        metadata_max_age=config.metadata_max_age_ms / 1000.0,
        retry_policy=config.reconnect_policy(rng.uniform),
        rng=rng,
        metadata_recovery_strategy=config.metadata_recovery_strategy,
        metadata_recovery_rebootstrap_trigger_ms=config.metadata_recovery_rebootstrap_trigger_ms,
        enable_metrics_push=config.enable_metrics_push,
        **config.security.client_kwargs(),
    )


async def _retrying(
    client: KafkaClient,
    partitions: Iterable[TopicAndPartition],
    attempt: Callable[[], Awaitable[T]],
    backoff: RetryPolicy | None = None,
) -> T:
    """``await attempt()``, retried on retriable errors after forgetting the leaders."""
    keys = list(partitions)
    return await retrying(
        client.reactor,
        attempt,
        backoff if backoff is not None else retry_backoff(client.rng.uniform),
        max_attempts=_ATTEMPTS,
        on_retry=lambda _: client.note_stale_leaders(keys),
    )


async def partitions_of(client: KafkaClient, topics: Sequence[str]) -> list[TopicAndPartition]:
    """Every partition of *topics*, from fresh metadata (topics that do not exist have none)."""
    await client.load_metadata_for_topics(*topics)
    found = client.topic_partitions
    return [TopicAndPartition(t, p) for t in topics for p in found.get(t, ())]


async def partitions_matching(client: KafkaClient, pattern: str) -> list[TopicAndPartition]:
    """Every partition of the topics whose whole name matches *pattern* (Java's
    ``Pattern.matches``, as Spark's ``subscribePattern``), internal ``__`` topics excepted."""
    await client.load_metadata_for_topics()
    return matching(client.topic_partitions, pattern)


async def list_offsets(
    client: KafkaClient,
    partitions: Sequence[TopicAndPartition],
    time: int,
    isolation_level: int = 0,
    backoff: RetryPolicy | None = None,
) -> dict[TopicAndPartition, int]:
    """Each partition's offset at *time* (-2 earliest, -1 latest), one request per leader.

    With *isolation_level* 1 (read_committed), latest is the last stable offset.
    """
    if not partitions:
        return {}
    payloads = [OffsetRequest(tp.topic, tp.partition, time, 1) for tp in partitions]

    async def attempt() -> dict[TopicAndPartition, int]:
        responses = await client.send_offset_request(payloads, isolation_level=isolation_level)
        return {TopicAndPartition(r.topic, r.partition): r.offsets[0] for r in responses}

    return await _retrying(client, partitions, attempt, backoff)


async def fetch(
    client: KafkaClient,
    tp: TopicAndPartition,
    offset: int,
    max_bytes: int,
    max_wait_ms: int,
    isolation_level: int = 0,
    min_bytes: int = 1,
    backoff: RetryPolicy | None = None,
) -> FetchedPartition:
    """Fetch *tp* from *offset*: its error code, watermarks and raw records.

    With *isolation_level* 1 (read_committed) also the aborted transactions.

    Retriable partition errors are retried; others (such as
    OFFSET_OUT_OF_RANGE) are returned for the caller to handle.
    """
    # Imported here: it brings the record reader, which a planner never needs.
    from afkak.client._interlayer import FetchCall

    payload = FetchRequest(tp.topic, tp.partition, offset, max_bytes)
    timeout = client.timeout + max_wait_ms / 1000.0

    async def attempt() -> FetchedPartition:
        leader = (await client.leaders_for([tp]))[tp]
        call = FetchCall(
            [payload],
            max_wait_ms,
            min_bytes,
            client.topic_ids,
            isolation_level,
            max_bytes=max_bytes,
        )
        response = await client.send_request_to_broker(leader, call, timeout=timeout)
        found = [p for t in response.responses for p in t.partitions]
        if response.error_code or not found:
            raise BrokerResponseError.from_errno(response.error_code or -1, f"fetch {tp}")
        p = found[0]
        if p.error_code:
            error = BrokerResponseError.from_errno(p.error_code, f"fetch {tp} at {offset}")
            if getattr(error, "retriable", False):
                raise error
        return FetchedPartition(
            p.error_code,
            p.high_watermark,
            p.log_start_offset,
            p.records,
            p.aborted_transactions if isolation_level else None,
            p.last_stable_offset,
        )

    return await _retrying(client, [tp], attempt, backoff)


async def committed_offset(
    client: KafkaClient, group: str, tp: TopicAndPartition, backoff: RetryPolicy | None = None
) -> int:
    """*group*'s committed offset of *tp* (-1 if none); waits out offsets an open
    transaction staged (``require_stable``) rather than reading the older one."""

    async def attempt() -> int:
        [response] = await client.send_offset_fetch_request(
            group, [OffsetFetchRequest(tp.topic, tp.partition)], require_stable=True
        )
        return int(response.offset)

    return await _retrying(client, [tp], attempt, backoff)


class KeyHashPartitioner(DefaultPartitioner):
    """Kafka's default placement: keyed records by murmur2 hash, the others round-robin.

    :class:`~afkak.partitioner.DefaultPartitioner`'s placement, without its
    sticky ``send()`` (the Producer keeps that to the class itself).
    """


def make_producer(client: KafkaClient, settings: Mapping[str, Any]) -> Producer:
    """A Producer on *client* placing records as Kafka's default partitioner does
    (imported here: a planner process, which only looks up offsets, never needs it)."""
    from afkak.producer import Producer

    return Producer(client, partitioner_class=KeyHashPartitioner, **settings)


async def send(producer: Producer, out: Outgoing, chunk_bytes: int) -> None:
    """Send every record of *out*; fires once all are acknowledged, or with the first failure.

    Unkeyed records without headers or partitions go in chunks
    (``send_messages``: one partitioner call per chunk, so the chunks rotate
    over the partitions); the others in one ``send_records`` call per topic,
    batched per partition whatever their keys.
    """
    sent: list[Deferred[Any]]
    if out.keys is None and out.headers is None and out.partitions is None:
        put_all = producer.send_messages
        sent = [put_all(t, None, values) for t, _, values in chunks_by_key(out, chunk_bytes)]
    else:
        put = producer.send_records
        sent = [
            put(topic, part.values, part.keys, headers=part.headers, partitions=part.partitions)
            for topic, part in by_topic(out)
        ]
    try:
        await gatherResults(sent, consumeErrors=True)
    except FirstError as e:
        e.subFailure.raiseException()
