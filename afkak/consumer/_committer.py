"""Committing one partition's offsets for a Consumer's group.

Apart from the Consumer's fetch-and-process loop, which only reports what the
processor finished: this object holds the processed and committed offsets,
the auto-commit policy (every *n* messages, every *ms* milliseconds), the
single OffsetCommit in flight and the committed-offset lookup.  Commits store
Kafka's standard value, the next offset to consume.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.common import (
    OFFSET_EARLIEST,
    OFFSET_LATEST,
    CancelledError,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OperationInProgress,
    TopicAndPartition,
)
from afkak.metrics import GroupSensors, registry_of
from afkak.records.aborted import READ_COMMITTED

from ._options import Options
from .positions import OffsetAndMetadata, StartOffsets

#: The offset OffsetFetch answers for a group that has committed none.
_NOT_COMMITTED = -1


class Committer:
    """The processed and committed offsets of one partition, and the commits between them."""

    def __init__(
        self,
        client: ConsumerClient,
        topic: str,
        partition: int,
        options: Options,
        on_auto_commit_failure: Callable[[Failure], None],
    ) -> None:
        self._client = client
        self._topic = topic
        self._partition = partition
        self._options = options
        self._on_auto_commit_failure = on_auto_commit_failure
        self.member_id = options.commit_consumer_id
        self.generation_id = options.commit_generation_id
        self.last_processed: int | None = None
        self.last_committed: int | None = None
        # Where a group's many partitions start, looked up for all at once (by the group).
        self.start_offsets: StartOffsets | None = None
        # Auto-commits are on between start() and pause() / halt().
        self._auto = False
        self._uncommitted = 0
        self._looper: LoopingCall | None = None
        # The commit request in flight, the offset it commits, who waits for it.
        self._commit_d: Deferred[None] | None = None
        self._committing: int | None = None
        self._waiters: list[Deferred[int | None]] = []
        self._auto_commit_pending = False

    def reconfigure(self, options: Options) -> None:
        """Commit per *options* from now on (the auto-commit interval from the next start)."""
        self._options = options
        self.member_id = options.commit_consumer_id
        self.generation_id = options.commit_generation_id

    def start(self) -> None:
        """Auto-commit from now on, per the ``auto_commit_every_*`` options."""
        self._auto = True
        self._uncommitted = 0
        every_ms = self._options.auto_commit_every_ms
        if self._options.consumer_group and every_ms:
            self._looper = LoopingCall(self._auto_commit)
            self._looper.clock = self._client.reactor
            self._looper.start(every_ms / 1000, now=False)

    def pause(self) -> None:
        """No more auto-commits (a shutdown commits once, at its end)."""
        self._auto = False
        looper, self._looper = self._looper, None
        if looper is not None and looper.running:
            looper.stop()

    def halt(self) -> None:
        """No more auto-commits, and cancel the commit in flight."""
        self.pause()
        if self._commit_d is not None:
            self._commit_d.cancel()
        self._auto_commit_pending = False

    def processed(self, offset: int, count: int) -> None:
        """The processor finished *count* messages, up to *offset*: auto-commit if due."""
        self.last_processed = offset
        self._uncommitted += count
        every_n = self._options.auto_commit_every_n
        if self._auto and every_n and self._uncommitted >= every_n:
            self._auto_commit()

    async def committed_offset(self) -> int:
        """The group's committed offset; without one, afkak 21's rule says where to start.

        ``OFFSET_EARLIEST`` unless ``auto_offset_reset`` is ``OFFSET_LATEST``:
        a new group reads the backlog (Java's ``auto.offset.reset`` defaults
        to latest; see docs/changes-from-afkak-21.rst).  The first time, the
        :attr:`start_offsets` the group gave, if it found this partition's.
        """
        shared, self.start_offsets = self.start_offsets, None
        tp = TopicAndPartition(self._topic, self._partition)
        start = None if shared is None else await shared.start_of(tp)
        if start is not None:
            offset, committed = start
            if committed:
                self.last_committed = offset - 1
            return offset
        group = self._options.consumer_group
        assert group is not None  # start() refuses OFFSET_COMMITTED without a group
        [answer] = await self._options.retry.run(
            self._client.reactor,
            lambda: self._client.send_offset_fetch_request(
                group,
                [OffsetFetchRequest(self._topic, self._partition)],
                require_stable=self._options.isolation == READ_COMMITTED,
            ),
            None,
            f"committed offset lookup for {self._topic}/{self._partition}",
        )
        if answer.offset != _NOT_COMMITTED:
            self.last_committed = answer.offset - 1
            return int(answer.offset)
        if self._options.auto_offset_reset == OFFSET_LATEST:
            return OFFSET_LATEST
        return OFFSET_EARLIEST

    def commit(self) -> Deferred[int | None]:
        """Commit :attr:`last_processed` unless committed (see ``Consumer.commit``)."""
        if self._commit_d is not None:
            waiter: Deferred[int | None] = Deferred()
            self._waiters.append(waiter)
            if self.last_processed == self._committing:
                return waiter
            return fail(OperationInProgress(waiter))
        offset = self.last_processed
        if offset is None or offset == self.last_committed:
            return succeed(self.last_committed)
        self._committing = offset
        self._uncommitted = 0
        if self._looper is not None and self._looper.running:
            self._looper.reset()
        waiter = Deferred()
        self._waiters.append(waiter)
        d = self._commit_d = Deferred.fromCoroutine(self._send_commit(offset))
        d.addBoth(self._committed, offset)
        return waiter

    async def commit_last(self) -> None:
        """Wait for the commit in flight, then commit what it left (a shutdown's commit).

        Without a group, there is nothing to commit.
        """
        if not self._options.consumer_group:
            return
        while self._commit_d is not None:
            waiter: Deferred[int | None] = Deferred()
            self._waiters.append(waiter)
            await waiter
        await self.commit()

    def commit_chosen(
        self, chosen: dict[TopicAndPartition, OffsetAndMetadata]
    ) -> Deferred[dict[TopicAndPartition, OffsetAndMetadata]]:
        """Commit the offset the application chose (if any), with its metadata; fires with it."""
        if not chosen:
            return succeed({})
        [offset] = chosen.values()
        d = Deferred.fromCoroutine(self._commit_offset(offset.offset, offset.metadata))
        return d.addCallback(lambda _: chosen)

    async def _commit_offset(self, next_offset: int, metadata: str) -> None:
        """Commit *next_offset* (the next to consume) with *metadata*."""
        await self._send_commit(next_offset - 1, metadata)
        self.last_committed = next_offset - 1

    async def _send_commit(self, offset: int, metadata: str | bytes | None = None) -> None:
        group = self._options.consumer_group
        assert group is not None  # Consumer.commit() refuses to run without a group
        if metadata is None:
            metadata = self._options.commit_metadata
        request = OffsetCommitRequest(self._topic, self._partition, offset + 1, -1, metadata)
        sensors = registry_of(self._client).shared(GroupSensors, group)
        sent_at = sensors.now()
        await self._options.retry.run(
            self._client.reactor,
            lambda: self._client.send_offset_commit_request(
                group,
                [request],
                group_generation_id=self.generation_id,
                consumer_id=self.member_id,
            ),
            None,
            f"commit of {self._topic}/{self._partition} offset {offset + 1}",
        )
        sensors.committed(sent_at)

    def _committed(self, result: Any, offset: int) -> None:
        self._commit_d = None
        self._committing = None
        waiters, self._waiters = self._waiters, []
        if isinstance(result, Failure):
            if result.check(defer.CancelledError):
                result = Failure(CancelledError(message="commit cancelled"))
            for waiter in waiters:
                waiter.errback(result)
            return
        self.last_committed = offset
        for waiter in waiters:
            waiter.callback(offset)
        if self._auto_commit_pending:
            self._auto_commit_pending = False
            self._auto_commit()

    def _auto_commit(self) -> None:
        """Commit what was processed (by count or by timer); a failure stops the consumer."""
        if not self._auto:
            return
        if self._commit_d is not None:
            self._auto_commit_pending = True
            return
        self.commit().addErrback(self._auto_commit_failed)

    def _auto_commit_failed(self, failure: Failure) -> None:
        if not failure.check(CancelledError):
            self._on_auto_commit_failure(failure)
