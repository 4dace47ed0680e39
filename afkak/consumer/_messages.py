"""One partition's fetched records, and the messages the processor is given.

A fetch response is split into record batches when it arrives (headers only:
enough to know where the next fetch starts); the records are decoded into
:class:`~afkak.common.SourcedMessage` tuples only when they are delivered.
"""

from __future__ import annotations

from typing import Any

from afkak.common import SourcedMessage
from afkak.records import RecordBatch, gc_paused, read_batches
from afkak.records.aborted import AbortedTransactions
from afkak.records.messages import fetched_messages

__all__ = ["FetchedRecords", "read_fetched"]


class FetchedRecords:
    """The complete data batches of one fetch response that reach the fetch offset.

    ``next_offset`` is where the following fetch starts: past every complete
    batch, control batches (transaction markers, never delivered) included.
    ``truncated`` means the response held bytes but not one complete batch:
    the fetch size is too small for the next batch.  ``high_watermark`` and
    ``last_stable_offset`` are the partition's as the response gave them
    (-1: unknown).
    """

    __slots__ = (
        "batches",
        "offset",
        "next_offset",
        "truncated",
        "high_watermark",
        "last_stable_offset",
    )

    def __init__(
        self,
        batches: list[RecordBatch],
        offset: int,
        next_offset: int,
        truncated: bool,
        high_watermark: int = -1,
        last_stable_offset: int = -1,
    ) -> None:
        self.batches = batches
        self.offset = offset
        self.next_offset = next_offset
        self.truncated = truncated
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset

    def messages(self, topic: str, partition: int) -> list[SourcedMessage]:
        """The records from the fetch offset on, as the processor gets them (once).

        Each message is a :class:`~afkak.common.Message` with the batch's
        magic, attributes 0 (compression applies to whole batches), and the
        record's key, value, timestamp and headers.  The batches are released
        afterwards.  Raises :class:`~afkak.common.DecodeError` for a malformed
        batch.
        """
        batches, self.batches = self.batches, []
        with gc_paused():
            messages = _sourced_messages(topic, partition, batches, self.offset)
            # The batches' decoded records go now, not after the collection
            # that the end of the pause lets run (which would scan them).
            del batches
        return messages


def _sourced_messages(
    topic: str, partition: int, batches: list[RecordBatch], offset: int
) -> list[SourcedMessage]:
    return fetched_messages(batches, offset, (topic, partition), SourcedMessage)


def read_fetched(
    records: bytes | memoryview | None,
    offset: int,
    aborted: list[Any] | None = None,
    high_watermark: int = -1,
    last_stable_offset: int = -1,
) -> FetchedRecords:
    """Split one partition's fetched *records* (fetched from *offset*) into batches.

    Batches that end before *offset* are left out (a fetch returns the whole
    batch holding the offset, which may start earlier), and so are control
    batches and the batches of the *aborted* transactions (a
    ``read_committed`` response's AbortedTransactions), which still move
    ``next_offset`` on.  A partial batch at the end,
    cut by the fetch size, is dropped: the next fetch starts at it.  Checks
    each batch's CRC; raises :class:`~afkak.common.DecodeError` for
    malformed data.
    """
    batches = []
    next_offset = offset
    complete = False
    skip = AbortedTransactions(aborted)
    for batch in read_batches(records):
        complete = True
        if skip and skip.drops(batch):
            if batch.last_offset >= offset:
                next_offset = batch.last_offset + 1
            continue
        if batch.last_offset < offset:
            continue
        next_offset = batch.last_offset + 1
        if not batch.is_control:
            batches.append(batch)
    return FetchedRecords(
        batches,
        offset,
        next_offset,
        bool(records) and not complete,
        high_watermark,
        last_stable_offset,
    )
