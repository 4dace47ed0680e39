"""Cutting a partition's records into record batches the broker accepts.

afkak 21 wrote legacy message sets, where the broker checked each message
against ``message.max.bytes`` alone; a v2 record batch is checked whole, so
many large records written as one batch fail with MESSAGE_TOO_LARGE.  Records
are cut up front into batches whose size is at most *limit* (Kafka's
``max.request.size``, 1 MiB by default), estimated before compression with
each record's largest possible overhead; a batch the broker still refuses as
too large is halved and sent again (:func:`halve`), as Kafka's Java producer
splits batches.  A record that cannot fit alone is refused before anything is
sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from afkak.records import RECORD_SIZE_BOUND, split_points


def record_bound(message: Any) -> int:
    """An upper bound of the encoded size of *message* (a checked Message tuple) as a record."""
    size = RECORD_SIZE_BOUND
    if message[2] is not None:
        size += len(message[2])
    if message[3] is not None:
        size += len(message[3])
    for name, value in getattr(message, "headers", ()):
        size += 10 + len(name.encode("utf-8")) + (len(value) if value else 0)
    return size


def split_records(records: Sequence[Any], limit: int) -> list[list[Any]] | None:
    """*records* cut, in order, into batches of at most *limit* bytes; None if one cannot fit."""
    starts = split_points(map(record_bound, records), limit)
    if starts is None:
        return None
    return [list(records[i:j]) for i, j in zip(starts, [*starts[1:], len(records)], strict=True)]


def halve(records: list[Any]) -> list[list[Any]]:
    """A batch the broker refused as too large, as two batches (in order)."""
    middle = (len(records) + 1) // 2
    return [records[:middle], records[middle:]]
