"""The records a batch holds, and the markers of control batches.

:class:`Record` is a tuple subclass (like a namedtuple) rather than an attrs
class: decoding creates one per record, and building a tuple is several times
cheaper than running an ``__init__``.
"""

from __future__ import annotations

import enum
from operator import itemgetter

import attrs

__all__ = ["Record", "TimestampType", "ControlType", "ControlMarker", "Header"]

#: A record header: a string key and a nullable bytes value.
Header = tuple[str, bytes | None]


class TimestampType(enum.IntEnum):
    """What a record's timestamp means."""

    #: Magic-0 messages carry no timestamp (their timestamp is -1).
    NO_TIMESTAMP = -1
    #: Set by the producer.
    CREATE_TIME = 0
    #: Set by the broker when it appended the batch.
    LOG_APPEND_TIME = 1


class Record(tuple):
    """One record: ``(offset, timestamp, timestamp_type, key, value, headers)``.

    ``key`` and ``value`` are bytes or None; ``headers`` is a tuple of
    ``(str, bytes | None)`` pairs.  Compare and hash like the plain tuple.
    """

    __slots__ = ()

    offset: int = property(itemgetter(0))  # type: ignore[assignment]
    timestamp: int = property(itemgetter(1))  # type: ignore[assignment]
    timestamp_type: TimestampType = property(itemgetter(2))  # type: ignore[assignment]
    key: bytes | None = property(itemgetter(3))  # type: ignore[assignment]
    value: bytes | None = property(itemgetter(4))  # type: ignore[assignment]
    headers: tuple[Header, ...] = property(itemgetter(5))  # type: ignore[assignment]

    def __new__(
        cls,
        offset: int,
        timestamp: int,
        timestamp_type: TimestampType,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...] = (),
    ) -> Record:
        return tuple.__new__(cls, (offset, timestamp, timestamp_type, key, value, headers))

    def __repr__(self) -> str:
        return (
            f"Record(offset={self[0]!r}, timestamp={self[1]!r}, "
            f"timestamp_type={self[2]!r}, key={self[3]!r}, value={self[4]!r}, "
            f"headers={self[5]!r})"
        )

    def __getnewargs__(self) -> tuple:
        return tuple(self)


class ControlType(enum.IntEnum):
    """The type of a transaction marker (the key of a control record)."""

    ABORT = 0
    COMMIT = 1


@attrs.frozen
class ControlMarker:
    """The decoded record of a control batch: a transaction commit or abort."""

    type: ControlType | int
    version: int = 0
    coordinator_epoch: int = 0

    @property
    def is_commit(self) -> bool:
        return self.type == ControlType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlType.ABORT
