"""Log-truncation detection (KIP-320): validate a position after a leader change.

A partition's fetch position carries the leader epoch of the last batch
fetched before it.  When the partition's leader epoch in the client's
metadata changes, the position is checked with OffsetForLeaderEpoch before
the next fetch: the new leader says where that epoch ends in its log.  An end
below the position means the log was truncated under the consumer (an
unclean leader election lost records it had read), and the consumer carries
on from the divergence as the Java client does, or fails with
:class:`~afkak.common.LogTruncationError` when it has no ``auto_offset_reset``.
"""

from __future__ import annotations

from twisted.logger import Logger

from afkak.client import ConsumerClient
from afkak.client._interlayer import EpochQuery, OffsetForLeaderEpochCall
from afkak.common import BrokerMetadata, BrokerResponseError, LogTruncationError, TopicAndPartition

from ._messages import FetchedRecords

__all__ = ["Diverged", "PositionEpochs"]

log = Logger()


class Diverged(Exception):
    """The position is past the end of its epoch on the new leader.

    ``offset`` is where the logs diverge (None: the leader does not know the
    epoch, so the divergence is unknown).
    """

    def __init__(self, position: int, offset: int | None) -> None:
        super().__init__(position, offset)
        self.position = position
        self.offset = offset


class PositionEpochs:
    """One partition's fetch position, its epoch, and the leader epoch it was checked at."""

    def __init__(self, client: ConsumerClient, key: TopicAndPartition) -> None:
        self.client = client
        self.key = key
        # (next fetch offset, leader epoch of the last batch before it).
        self._position: tuple[int, int] | None = None
        # The partition's leader epoch the position is known valid at (-1: none yet).
        self._checked = -1

    def fetched(self, fetched: FetchedRecords, leader_epoch: int) -> None:
        """Remember the epoch of the position a fetch at *leader_epoch* moved to."""
        self._checked = leader_epoch
        batches = fetched.batches
        if batches and batches[-1].partition_leader_epoch >= 0:
            self._position = (fetched.next_offset, batches[-1].partition_leader_epoch)
        elif self._position is not None and self._position[0] == fetched.offset:
            self._position = (fetched.next_offset, self._position[1])

    def must_check(self, offset: int, leader_epoch: int) -> bool:
        """Whether the leader changed since the position at *offset* was last valid."""
        position = self._position
        return (
            position is not None
            and position[0] == offset
            and leader_epoch >= 0
            and 0 <= self._checked != leader_epoch
        )

    async def check(self, leader: BrokerMetadata, offset: int, leader_epoch: int) -> None:
        """Ask *leader* where the position's epoch ends; raise :class:`Diverged` if below it.

        A broker error (FENCED_LEADER_EPOCH when the metadata is stale...)
        raises the broker's error, which the fetch retries after reloading.
        """
        assert self._position is not None
        epoch = self._position[1]
        call = OffsetForLeaderEpochCall([EpochQuery(self.key, epoch, leader_epoch)])
        [end] = call.parse(await self.client.send_request_to_broker(leader, call))
        if end.error:
            raise BrokerResponseError.from_errno(
                end.error, f"validating {self.key.topic}/{self.key.partition} at offset {offset}"
            )
        if end.end_offset < 0 or end.leader_epoch < 0:
            self._position = None
            raise Diverged(offset, None)
        if end.end_offset < offset:
            self._position = None
            raise Diverged(offset, end.end_offset)
        self._checked = leader_epoch

    def truncation_error(self, diverged: Diverged) -> LogTruncationError:
        """The error for a consumer without ``auto_offset_reset``."""
        where = "at an unknown offset" if diverged.offset is None else f"at {diverged.offset}"
        return LogTruncationError(
            f"the log of {self.key.topic}/{self.key.partition} was truncated below the "
            f"consumer's position {diverged.position} (the new leader diverges {where}); "
            f"set auto_offset_reset to carry on",
            self.key.topic,
            self.key.partition,
            diverged.position,
            diverged.offset,
        )
