"""``afkak transactions list|describe|describe-producers|find-hanging|abort``: what
``kafka-transactions`` does, with the admin client."""

from __future__ import annotations

from afkak.admin import AbortTransactionSpec
from afkak.common import TopicAndPartition

from ._admin_commands import _raise_first, partitions_arg
from ._output import OK, CommandError, item_error
from ._session import Session


async def transactions_list(s: Session) -> int:
    a = s.args
    listed = await s.admin.list_transactions(
        states=a.state or None,
        producer_ids=a.producer_id or None,
        min_duration_ms=a.min_duration_ms,
        pattern=a.pattern,
    )
    s.out.table(
        ["transactional_id", "producer_id", "state"],
        [(t.transactional_id, t.producer_id, t.state) for t in listed],
    )
    return OK


async def transactions_describe(s: Session) -> int:
    ids = s.args.transactional_ids
    described = await s.admin.describe_transactions(ids)
    rows = [
        (
            d.transactional_id,
            d.coordinator_id,
            d.producer_id,
            d.producer_epoch,
            d.state,
            d.timeout_ms,
            d.start_time_ms,
            [f"{tp.topic}-{tp.partition}" for tp in d.partitions],
        )
        for d in (described[i] for i in ids)
        if d.error is None
    ]
    s.out.table(
        [
            "transactional_id",
            "coordinator",
            "producer_id",
            "producer_epoch",
            "state",
            "timeout_ms",
            "start_time_ms",
            "partitions",
        ],
        rows,
    )
    _raise_first(described, "transactional id")
    return OK


async def transactions_describe_producers(s: Session) -> int:
    tp = TopicAndPartition(s.args.topic, s.args.partition)
    found = (await s.admin.describe_producers([tp], broker_id=s.args.broker_id))[tp]
    if found.error is not None:
        raise item_error(f"partition {tp.topic}:{tp.partition}", found.error)
    s.out.table(
        ["producer_id", "epoch", "coordinator_epoch", "last_sequence", "last_timestamp",
         "txn_start_offset"],
        [
            (p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
             p.last_timestamp, p.current_txn_start_offset)
            for p in found.active_producers
        ],
    )  # fmt: skip
    return OK


async def transactions_find_hanging(s: Session) -> int:
    a = s.args
    if (a.topic is None) == (a.broker_id is None):
        raise ValueError("give exactly one of --topic and --broker-id")
    found = await s.admin.find_hanging_transactions(
        partitions=None if a.topic is None else partitions_arg([a.topic]),
        broker_id=a.broker_id,
        max_transaction_timeout_ms=a.max_transaction_timeout * 60_000,
    )
    s.out.table(
        ["topic", "partition", "producer_id", "epoch", "coordinator_epoch", "start_offset",
         "last_timestamp", "transactional_id"],
        [
            (h.partition.topic, h.partition.partition, h.producer.producer_id,
             h.producer.producer_epoch, h.producer.coordinator_epoch,
             h.producer.current_txn_start_offset, h.producer.last_timestamp,
             h.transactional_id)
            for h in found
        ],
    )  # fmt: skip
    return OK


async def transactions_abort(s: Session) -> int:
    """Abort the open transaction that starts at ``--start-offset`` in one partition."""
    a = s.args
    tp = TopicAndPartition(a.topic, a.partition)
    found = (await s.admin.describe_producers([tp]))[tp]
    if found.error is not None:
        raise item_error(f"partition {a.topic}:{a.partition}", found.error)
    open_there = [p for p in found.active_producers if p.current_txn_start_offset == a.start_offset]
    if not open_there:
        raise CommandError(
            f"no open transaction starts at offset {a.start_offset} of {a.topic}:{a.partition}"
        )
    producer = open_there[0]
    result = await s.admin.abort_transaction(AbortTransactionSpec.of(tp, producer))
    if result.error is not None:
        raise item_error(f"partition {a.topic}:{a.partition}", result.error)
    s.out.lines(
        [f"aborted producer {producer.producer_id}'s transaction in {a.topic}:{a.partition}"],
        {"topic": a.topic, "partition": a.partition, "producer_id": producer.producer_id},
    )
    return OK
