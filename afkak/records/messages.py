"""Fetched record batches as afkak's message tuples: the hot loop of every read.

The client's ``FetchedMessages`` (``OffsetAndMessage``) and the consumer
(``SourcedMessage``) both turn fetched batches into tuples here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from afkak.common import Message
from afkak.records.batch import RecordBatch, compiled_records

__all__ = [
    "fetched_messages",
]


def fetched_messages(
    batches: Iterable[RecordBatch], offset: int, prefix: tuple[Any, ...], cls: type[tuple]
) -> list[Any]:
    """``cls(*prefix, offset, Message)`` for every data record of *batches* at or after *offset*.

    How fetched records reach afkak's API (``OffsetAndMessage`` with no
    prefix, ``SourcedMessage`` with ``(topic, partition)``): control batches
    are skipped, ``magic`` is the batch's, and the message carries the
    record's timestamp and headers.  This is the hot loop of every consumer:
    the compiled record code builds the tuples when it is built.
    """
    out: list[Any] = []
    for batch in batches:
        if batch.is_control or batch.last_offset < offset:
            continue
        out += _wrap(batch.fields(offset), batch.magic, prefix, cls, Message)
    return out


def _wrap_records(
    records: Sequence[tuple[Any, ...]],
    magic: int,
    prefix: tuple[Any, ...],
    cls: type[tuple[Any, ...]],
    message_cls: type[Message],
) -> list[Any]:
    """The reference for ``_crecords.wrap_records``: tuples built as the classes build them.

    ``tuple.__new__`` skips ``Message.__new__``'s checks (the record is
    already valid); unset headers stay the class default.
    """
    new = tuple.__new__
    out = []
    for r in records:
        # r is (offset, timestamp, timestamp_type, key, value, headers)
        message: Message = new(message_cls, (magic, 0, r[3], r[4]))
        message.timestamp = r[1]
        if r[5]:
            message.headers = r[5]
        out.append(new(cls, prefix + (r[0], message)))
    return out


_wrap = _wrap_records if compiled_records() is None else compiled_records().wrap_records
