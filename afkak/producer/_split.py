"""One send too large for a record batch: refused, or cut into pieces sent in order.

The broker checks each record batch against ``message.max.bytes``.  A
``send_messages`` call is one batch when it fits; a larger one is cut into
pieces that each fit (in order, on the call's partition), and its Deferred
fires once every piece is written, with the first piece's result.  A record
that cannot fit in a batch alone fails its send with
:exc:`~afkak.common.MessageSizeTooLargeError` before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, FirstError
from twisted.python.failure import Failure

from afkak.records import RECORD_SIZE_BOUND, split_points

from ._batch import RECORD_OVERHEAD, Buffer

#: The types a key or value may have.
BYTES = (bytes, bytearray, memoryview)


def pieces(
    values: Sequence[Buffer | None], key: Buffer | None, headers_size: int, limit: int
) -> list[Sequence[Buffer | None]] | None:
    """*values* cut into runs whose batches stay within *limit* bytes; None if one cannot fit."""
    each = RECORD_SIZE_BOUND + (len(key) if key is not None else 0) + headers_size
    starts = split_points((each + (len(v) if v is not None else 0) for v in values), limit)
    if starts is None:
        return None
    return [values[i:j] for i, j in zip(starts, [*starts[1:], len(values)], strict=True)]


def joined(d: Deferred[Any], parts: list[Deferred[Any]]) -> None:
    """Fire *d* with the first part's result once all succeeded, or with the first failure."""

    def settle(results: list[tuple[bool, Any]]) -> None:
        d.callback(results[0][1])

    def failed(failure: Failure) -> None:
        first = failure.value
        d.errback(first.subFailure if isinstance(first, FirstError) else failure)

    DeferredList(parts, fireOnOneErrback=True, consumeErrors=True).addCallbacks(settle, failed)


def values_size(topic: str, values: Sequence[Any]) -> int:
    """The buffer size of message *values*: TypeError unless each is bytes or None."""
    size = len(values) * RECORD_OVERHEAD
    for m in values:
        if type(m) is bytes:
            size += len(m)
        elif m is not None:
            if not isinstance(m, BYTES):
                raise TypeError(
                    f"message to topic {topic} ({m!r:.100}) has type"
                    f" {type(m).__name__}, but must be bytes or None"
                )
            size += len(m)
    return size
