"""The exactly-once streaming sink (``exactlyOnce=true``): one Kafka transaction per task.

Kafka cannot commit a transaction from another process than the one that
wrote it (EndTxn needs the producer's id and epoch, and a Java or afkak
producer will not hand those over), so the driver does not commit: each task
does.  The task of Spark partition *p* of micro-batch *b* of query *q*:

1. opens a transactional producer with id ``{prefix}{q}-{p}``; its
   InitProducerId fences any earlier attempt of that partition (a zombie of
   a crashed driver, a retried task) and aborts what it left open;
2. reads the marker: the offset the group named like the transactional id
   committed for partition 0 of the ``topic`` option (read_committed:
   ``require_stable``).  If it says batch *b* or a later one is written,
   the task writes nothing: this is a replay of a batch whose rows are in;
3. otherwise writes its rows, commits *b* + 1 as that offset in the same
   transaction (``send_offsets_to_transaction``), and commits.

The rows and the marker become visible together or not at all, so a batch
replayed after a driver crash (Spark re-runs the last batch its commit log
lacks) writes only the partitions that had not committed.  The query id is
the one kept in the checkpoint, so it survives restarts.

Limits: a replay must give each partition the same rows (a deterministic
plan: no nondeterministic shuffle before the sink); rows become visible task
by task, not batch by batch; the marker lives as long as Kafka keeps group
offsets (``offsets.retention.minutes``, 7 days) and the transactional id
(``transactional.id.expiration.ms``, 7 days), so a query stopped longer than
that may rewrite its last batch.  Readers must use read_committed.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from afkak.common import TopicAndPartition
from afkak.producer import ConsumerGroupMetadata

from . import _bridge, _kafka, _worker
from ._options import WriteOptions

#: The local properties Spark's micro-batch execution gives each task.
QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"


def write(opts: WriteOptions, batches: Iterable[pa.RecordBatch]) -> int:
    """Write this task's rows once per (query, batch, partition); rows written (0 on a replay)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    query_id = context.getLocalProperty(QUERY_ID) if context is not None else None
    batch_id = context.getLocalProperty(BATCH_ID) if context is not None else None
    if context is None or query_id is None or batch_id is None:
        raise RuntimeError("exactlyOnce writes run in a streaming query's tasks only")
    return write_once(opts, batches, query_id, int(batch_id), context.partitionId())


def write_once(
    opts: WriteOptions,
    batches: Iterable[pa.RecordBatch],
    query_id: str,
    batch_id: int,
    partition: int,
) -> int:
    """The three steps of the module's docstring for one task."""
    assert opts.topic is not None
    client = _worker.client_for(opts.client)
    timeout = _worker.call_timeout(opts.client)
    txn_id = f"{opts.transactional_id_prefix}{query_id}-{partition}"
    settings = {**opts.producer_settings(), "transactional_id": txn_id}
    producer = _bridge.call(timeout, _kafka.make_producer, client, settings)
    try:
        _bridge.call(timeout, producer.init_transactions)
        marker = TopicAndPartition(opts.topic, 0)
        committed = _bridge.call(
            timeout,
            _kafka.committed_offset,
            client,
            txn_id,
            marker,
            opts.client.retry_policy(client.rng.uniform),
        )
        if committed > batch_id:
            return 0
        _bridge.call(timeout, producer.begin_transaction)
        rows = _worker.send_rows(producer, opts, batches)
        _bridge.call(
            timeout,
            producer.send_offsets_to_transaction,
            {marker: batch_id + 1},
            ConsumerGroupMetadata(txn_id),
        )
        _bridge.call(timeout, producer.commit_transaction)
        return rows
    finally:
        # An open transaction is aborted by the next attempt's InitProducerId
        # (or by the coordinator after transaction.timeout.ms).
        _bridge.call(timeout, producer.stop)
