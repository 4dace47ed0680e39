"""Consume-transform-produce: a ConsumerGroup processor that writes exactly once.

Each block of records a partition's Consumer delivers is transformed into
output records, which are sent in one transaction together with the input
offsets (TxnOffsetCommit, with the group's generation and member id): the
output and the input position become visible together or not at all.  A
transactional producer runs one transaction at a time, so the partitions'
blocks take turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from twisted.internet.defer import Deferred, DeferredLock, FirstError, gatherResults
from twisted.logger import Logger

from afkak.common import SourcedMessage, TopicAndPartition
from afkak.producer import ConsumerGroupMetadata, Producer, TransactionState

log = Logger()

#: An output record: (topic, value, key).
Output = tuple[str, bytes | None, bytes | None]
Transform = Callable[[Sequence[SourcedMessage]], Iterable[Output]]
_ABORTABLE = (TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR)


class TransactionalProcessor:
    """``processor(consumer, messages)`` for a :class:`~afkak.group.ConsumerGroup`.

    :param producer: a :class:`~afkak.producer.Producer` with a
        ``transactional_id``, whose :meth:`~afkak.producer.Producer.init_transactions`
        has fired.
    :param transform: called with each block of messages; returns the
        output records as ``(topic, value, key)`` tuples.

    The group's Consumers must not commit by themselves: create the group
    with ``auto_commit_every_n=0, auto_commit_every_ms=0`` and, for inputs
    written by transactions, ``isolation_level="read_committed"``.  A
    transaction that fails is aborted and its error stops the Consumer (the
    group rejoins, or fails, as for a failed commit); a fatal error
    (the producer was fenced) leaves the producer unusable: build a new one.
    """

    def __init__(self, producer: Producer, transform: Transform) -> None:
        if not callable(transform):
            raise TypeError(f"transform must be callable, not {transform!r}")
        self.producer = producer
        self.transform = transform
        self._turn = DeferredLock()

    def __call__(self, consumer: Any, messages: list[SourcedMessage]) -> Deferred[None]:
        return self._turn.run(lambda: Deferred.fromCoroutine(self._process(consumer, messages)))

    async def _process(self, consumer: Any, messages: list[SourcedMessage]) -> None:
        producer = self.producer
        group = ConsumerGroupMetadata(
            consumer.consumer_group, consumer.commit_generation_id, consumer.commit_consumer_id
        )
        offsets = {TopicAndPartition(consumer.topic, consumer.partition): messages[-1].offset + 1}
        await producer.begin_transaction()
        try:
            sends = [producer.send(t, v, k) for t, v, k in self.transform(messages)]
            try:
                await gatherResults(sends, consumeErrors=True)
            except FirstError as e:
                e.subFailure.raiseException()
            await producer.send_offsets_to_transaction(offsets, group)
            await producer.commit_transaction()
        except BaseException:
            if producer.transaction_state in _ABORTABLE:
                log.info("Aborting the transaction of {offsets}", offsets=offsets)
                await producer.abort_transaction()
            raise
