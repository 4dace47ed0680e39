"""Fetching one partition for a :class:`~afkak.consumer.Consumer`.

Records are fetched from the partition's leader (``client.leaders_for``), or
the replica it prefers (:mod:`._replica_selection`, KIP-392), through the
fetcher that every consumer of the client shares for that broker
(the client's ``FetchManager``, :mod:`._broker_fetch`: one Fetch request per broker), fenced by the
partition's leader epoch; after a leader change the position is validated
first (:mod:`._truncation`, KIP-320).  Offsets by time come from the
client's ``send_offset_request``.  Retriable errors make the client forget
the leader and are retried with the consumer's backoff, at most 1 s apart
(each retry looks the leader up again); an out-of-range
offset follows ``auto_offset_reset``; a fetch size too small for the next
batch grows as documented.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.client._interlayer import TOPIC_GONE
from afkak.common import (
    BrokerMetadata,
    BrokerResponseError,
    ConsumerFetchSizeTooSmall,
    OffsetOutOfRangeError,
    OffsetRequest,
    PartitionUnavailableError,
    TopicAndPartition,
)

from ._broker_fetch import FetchManager, PartitionAnswer
from ._messages import FetchedRecords, read_fetched
from ._options import Options
from ._replica_selection import ReadReplica
from ._retry import RequestRetries
from ._truncation import Diverged, PositionEpochs

log = Logger()

T = TypeVar("T")

#: Below this fetch size a too-small fetch size grows 16-fold (at most to
#: this size); from this size on it doubles.
FAST_GROWTH_LIMIT = 1024 * 1024


class PartitionFetcher:
    """Fetches the records of one partition, and looks up its offsets by time.

    ``buffer_size`` is the ``partition_max_bytes`` of the next Fetch; it grows
    when a batch does not fit (see :meth:`grow`).
    """

    def __init__(
        self, client: ConsumerClient, topic: str, partition: int, options: Options
    ) -> None:
        self.client = client
        self.topic = topic
        self.partition = partition
        self.key = TopicAndPartition(topic, partition)
        self._fetches = client.shared(FetchManager)
        self.isolation_level = options.isolation
        self.rack = options.client_rack
        self.epochs = PositionEpochs(client, self.key)
        self.replica = ReadReplica(client)
        self.reconfigure(options)

    def reconfigure(self, options: Options) -> None:
        """Fetch per *options* from the next request on."""
        self.min_bytes = options.fetch_min_bytes
        self.max_wait_ms = options.fetch_max_wait_ms
        self.buffer_size = options.buffer_size
        self.max_buffer_size = options.max_buffer_size
        self.auto_offset_reset = options.auto_offset_reset
        self.retry: RequestRetries = options.retry.for_leader()

    def next_records(self, offset: int) -> Deferred[FetchedRecords]:
        """The next fetch response that moves past *offset*.

        Empty responses (the broker waited ``max_wait_ms`` for nothing) are
        fetched again; an out-of-range offset is reset per
        ``auto_offset_reset`` (the returned records then start elsewhere) or
        raises :class:`~afkak.common.OffsetOutOfRangeError`.  A log truncated
        below *offset* (KIP-320) carries on from where the logs diverge (as
        the Java client), or, that being unknown, per ``auto_offset_reset``;
        without it, raises :class:`~afkak.common.LogTruncationError`.

        The usual fetch (its leader known, no position to validate) is the
        broker fetcher's Deferred with this fetcher's methods as callbacks:
        a partition's long poll holds no coroutines, so many consumers' fetches
        in flight give the cyclic GC little to promote (issue 39).  Its first
        failure, and the rare paths (a leader to look up, a position to
        validate), go on in :meth:`_next_records`, with the same retries.
        """
        leader = self.client.topics_to_brokers.get(self.key)
        epoch = self.client.leader_epoch(self.key)
        if leader is None or self.epochs.must_check(offset, epoch):
            return Deferred.fromCoroutine(self._next_records(offset))
        broker = self.replica.broker(leader)
        return self._fetch_from(broker, offset, epoch).addBoth(
            self._attempted, offset, epoch, broker, leader
        )

    def _attempted(
        self,
        answer: PartitionAnswer | Failure,
        offset: int,
        epoch: int,
        broker: BrokerMetadata,
        leader: BrokerMetadata,
    ) -> FetchedRecords | Deferred[FetchedRecords]:
        """:meth:`next_records`' first attempt answered: as :meth:`_fetch` goes on from
        there; an error goes on in :meth:`_next_records` as any attempt's."""
        first: Awaitable[FetchedRecords] | None
        if isinstance(answer, Failure):
            first = fail(answer)
        elif answer[0] and broker is not leader and self.replica.failed():
            first = self._from_leader(leader, offset, epoch)
        else:
            try:
                fetched = self._read(answer, offset, epoch, broker)
            except Exception:
                first = fail()
            else:
                progress = self._progress(fetched, offset)
                if progress is not None:
                    return progress
                first = None  # asked again in the loop: one chained Deferred, however often
        return Deferred.fromCoroutine(self._next_records(offset, first))

    async def _next_records(
        self, offset: int, first: Awaitable[FetchedRecords] | None = None
    ) -> FetchedRecords:
        """:meth:`next_records` through errors and lookups; *first*: the outcome of its
        first attempt, already under way (None: attempt)."""
        while True:
            try:
                fetched = await self._retried(
                    partial(self._fetch, offset),
                    f"fetch of {self.topic}/{self.partition} at offset {offset}",
                    first,
                )
            except OffsetOutOfRangeError:
                if self.auto_offset_reset is None:
                    raise
                offset = await self.offset_at(self.auto_offset_reset)
                continue
            except Diverged as diverged:
                if self.auto_offset_reset is None:
                    raise self.epochs.truncation_error(diverged) from None
                log.warn(
                    "Truncation detected for {topic}/{partition} at offset {position}:"
                    " carrying on from {offset}",
                    topic=self.topic,
                    partition=self.partition,
                    position=offset,
                    offset="the reset offset" if diverged.offset is None else diverged.offset,
                )
                if diverged.offset is None:
                    offset = await self.offset_at(self.auto_offset_reset)
                else:
                    offset = diverged.offset
                continue
            finally:
                first = None
            progress = self._progress(fetched, offset)
            if progress is not None:
                return progress

    def _progress(self, fetched: FetchedRecords, offset: int) -> FetchedRecords | None:
        """What *fetched* (at *offset*) gives the consumer; None: fetch again (a batch
        cut short grows the fetch size first, an answer that does not move past
        *offset* is asked again)."""
        if fetched.truncated:
            self.grow()
        elif fetched.next_offset > offset:
            return self._within_buffer(fetched) if self.max_buffer_size else fetched
        return None

    def grow(self) -> None:
        """Grow the fetch size: x16 (up to 1 MiB) below 1 MiB, then x2, up to the maximum.

        Raises :class:`~afkak.common.ConsumerFetchSizeTooSmall` when the fetch
        size is already ``max_buffer_size``.
        """
        size, limit = self.buffer_size, self.max_buffer_size
        if limit is not None and size >= limit:
            raise ConsumerFetchSizeTooSmall(
                f"a record batch of {self.topic}/{self.partition} is larger than "
                f"max_buffer_size={limit}"
            )
        size = min(size * 16, FAST_GROWTH_LIMIT) if size < FAST_GROWTH_LIMIT else size * 2
        self.buffer_size = size if limit is None else min(size, limit)

    def _within_buffer(self, fetched: FetchedRecords) -> FetchedRecords:
        """The batches that fit in ``max_buffer_size``, up to the first that does not.

        Brokers since Kafka 0.10.1 (KIP-74) return a first batch larger than
        the fetch size whole; afkak 21's promise holds anyway: the records
        before it are delivered, then :class:`ConsumerFetchSizeTooSmall` is
        raised when the fetch reaches it.
        """
        limit = self.max_buffer_size
        for i, batch in enumerate(fetched.batches):
            if batch.size_in_bytes > limit:  # type: ignore[operator]
                if i == 0:
                    raise ConsumerFetchSizeTooSmall(
                        f"a record batch of {self.topic}/{self.partition} at offset"
                        f" {batch.base_offset} ({batch.size_in_bytes} bytes) is larger than"
                        f" max_buffer_size={limit}"
                    )
                next_offset = max(fetched.offset, batch.base_offset)
                return FetchedRecords(fetched.batches[:i], fetched.offset, next_offset, False)
        return fetched

    async def _fetch(self, offset: int) -> FetchedRecords:
        leader = (await self.client.leaders_for([self.key]))[self.key]
        epoch = self.client.leader_epoch(self.key)
        if self.epochs.must_check(offset, epoch):
            await self.epochs.check(leader, offset, epoch)
        broker = self.replica.broker(leader)
        answer = await self._fetch_from(broker, offset, epoch)
        if answer[0] and broker is not leader and self.replica.failed():
            return await self._from_leader(leader, offset, epoch)
        return self._read(answer, offset, epoch, broker)

    async def _from_leader(self, leader: BrokerMetadata, offset: int, epoch: int) -> FetchedRecords:
        """The preferred replica failed (it may lag: even an out-of-range offset is
        not reset on its word): the leader is asked instead."""
        return self._read(await self._fetch_from(leader, offset, epoch), offset, epoch, leader)

    def _read(
        self, answer: PartitionAnswer, offset: int, epoch: int, broker: BrokerMetadata
    ) -> FetchedRecords:
        """The records of *broker*'s *answer* to a fetch at *offset*; raises its error."""
        error, data = answer
        if error:
            raise BrokerResponseError.from_errno(
                error, f"fetching {self.topic}/{self.partition} at offset {offset}"
            )
        if data is None:
            return read_fetched(None, offset)
        self.replica.answered(broker, data)
        fetched = read_fetched(
            data.records,
            offset,
            data.aborted_transactions if self.isolation_level else None,
            data.high_watermark,
            data.last_stable_offset,
        )
        self.epochs.fetched(fetched, epoch)
        return fetched

    def _fetch_from(
        self, broker: BrokerMetadata, offset: int, epoch: int
    ) -> Deferred[PartitionAnswer]:
        return self._fetches.fetcher(broker, self.isolation_level, self.rack).fetch(
            broker, self.key, offset, self.buffer_size, self.min_bytes, self.max_wait_ms, epoch
        )

    async def offset_at(self, time: int) -> int:
        """The partition's offset at ListOffsets *time* (OFFSET_EARLIEST or OFFSET_LATEST)."""
        return await self._retried(
            partial(self._list_offset, time), f"offset lookup for {self.topic}/{self.partition}"
        )

    def _retried(
        self,
        request: Callable[[], Awaitable[T]],
        what: str,
        first: Awaitable[T] | None = None,
    ) -> Coroutine[Any, Any, T]:
        """*request*, retried with the consumer's backoff, forgetting stale metadata;
        *first*: the outcome of a first attempt already under way."""
        return self.retry.run(
            self.client.reactor,
            lambda: self._in_topic(request()),
            self._forget,
            what,
            first=None if first is None else self._in_topic(first),
        )

    async def _in_topic(self, attempt: Awaitable[T]) -> T:
        """*attempt*; a partition the topic does not have (its metadata lists them all)
        fails with ValueError, as ``Producer.send``, rather than be retried forever."""
        try:
            return await attempt
        except PartitionUnavailableError:
            partitions = self.client.topic_partitions.get(self.topic)
            if partitions and self.partition not in partitions:
                raise ValueError(
                    f"topic {self.topic} has no partition {self.partition}"
                    f" (it has {len(partitions)})"
                ) from None
            raise

    async def _list_offset(self, time: int) -> int:
        [answer] = await self.client.send_offset_request(
            [OffsetRequest(self.topic, self.partition, time, 1)],
            isolation_level=self.isolation_level,
        )
        return int(answer.offsets[0])

    def _forget(self, error: BaseException) -> None:
        """Forget the metadata a failed request proved stale: the leader, or the topic."""
        if isinstance(error, BrokerResponseError) and error.errno in TOPIC_GONE:
            self.client.reset_topic_metadata(self.topic)
        else:
            self.client.note_stale_leaders([self.key])
