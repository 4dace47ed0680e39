"""A share consumer's records and acknowledgements: what was delivered, what is to be sent.

Records come from ShareFetch as byte batches plus the offset ranges this
member acquired (with their delivery counts); only records inside those
ranges are delivered, and an acquired offset with no record to deliver (a
transaction marker, a compacted-away record) is acknowledged as a gap at
once, as the broker expects every acquired offset back.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs

from afkak.common import TopicAndPartition
from afkak.records import read_batches

__all__ = ["AcknowledgeType", "Acknowledgements", "ShareRecord"]

GAP = 0


class AcknowledgeType(enum.IntEnum):
    """How a share consumer settles a record (the wire values of KIP-932)."""

    #: Processed: never delivered again.
    ACCEPT = 1
    #: Not processed: back to the group for another delivery (a higher delivery count).
    RELEASE = 2
    #: Unprocessable: never delivered again (archived).
    REJECT = 3


@attrs.frozen(slots=True)
class ShareRecord:
    """One record a share consumer acquired, and how many times it was delivered."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    #: bytes, or what the consumer's key deserializer made of them.
    key: Any
    #: bytes, or what the consumer's value deserializer made of them.
    value: Any
    headers: tuple[tuple[str, bytes | None], ...]
    #: 1 on the first delivery; more after releases and lock timeouts.
    delivery_count: int


class Acknowledgements:
    """Delivered records not acknowledged yet, and acknowledgements not sent yet."""

    def __init__(self) -> None:
        self.delivered: dict[TopicAndPartition, dict[int, ShareRecord]] = {}
        self.pending: dict[TopicAndPartition, dict[int, int]] = {}

    def deliver(
        self, tp: TopicAndPartition, data: Any, acquired: Iterable[Any]
    ) -> list[ShareRecord]:
        """The records of *data* inside the *acquired* ranges, now delivered; gaps pending."""
        counts: dict[int, int] = {}
        for run in acquired:
            for offset in range(run.first_offset, run.last_offset + 1):
                counts[offset] = run.delivery_count
        out: list[ShareRecord] = []
        for batch in read_batches(data):
            if batch.is_control:
                continue
            for r in batch.records():
                count = counts.pop(r.offset, None)
                if count is not None:
                    out.append(
                        ShareRecord(
                            tp.topic, tp.partition, r.offset, r.timestamp, r.key, r.value,
                            r.headers, count,
                        )
                    )  # fmt: skip
        if out:
            self.delivered.setdefault(tp, {}).update((r.offset, r) for r in out)
        if counts:
            self.pending.setdefault(tp, {}).update(dict.fromkeys(counts, GAP))
        return out

    def handed_out(self, records: list[ShareRecord]) -> None:
        """Delivered records as the application got them (keys and values deserialized)."""
        for r in records:
            self.delivered[TopicAndPartition(r.topic, r.partition)][r.offset] = r

    def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None:
        """Settle one delivered record (ValueError: not delivered, or settled already)."""
        tp = TopicAndPartition(record.topic, record.partition)
        delivered = self.delivered.get(tp, {})
        if delivered.get(record.offset) != record:
            raise ValueError(f"{record!r} is not a delivered, unacknowledged record")
        del delivered[record.offset]
        if not delivered:
            del self.delivered[tp]
        self.pending.setdefault(tp, {})[record.offset] = int(kind)

    def settle_all(self, kind: AcknowledgeType) -> None:
        """Settle every delivered record not acknowledged yet as *kind*."""
        for tp, records in self.delivered.items():
            self.pending.setdefault(tp, {}).update(dict.fromkeys(records, int(kind)))
        self.delivered.clear()

    def unsettled(self) -> int:
        return sum(map(len, self.delivered.values()))

    def take(self, tps: Iterable[TopicAndPartition]) -> dict[TopicAndPartition, list[Any]]:
        """The pending acknowledgements of *tps* as ``(first, last, types)`` batches, removed."""
        out: dict[TopicAndPartition, list[Any]] = {}
        for tp in tps:
            kinds = self.pending.pop(tp, None)
            if kinds:
                out[tp] = batches(kinds)
        return out

    def forget(self, tps: Iterable[TopicAndPartition]) -> None:
        """The share session that acquired these records is gone: they will be redelivered."""
        for tp in tps:
            self.delivered.pop(tp, None)
            self.pending.pop(tp, None)


def batches(kinds: dict[int, int]) -> list[tuple[int, int, list[int]]]:
    """Consecutive offsets as one batch; one type for a batch that has only one."""
    runs: list[list[Any]] = []
    for offset in sorted(kinds):
        if runs and runs[-1][1] == offset - 1:
            runs[-1][1] = offset
            runs[-1][2].append(kinds[offset])
        else:
            runs.append([offset, offset, [kinds[offset]]])
    return [(f, last, t if len(set(t)) > 1 else t[:1]) for f, last, t in runs]
