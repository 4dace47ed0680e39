"""The fake cluster's share-partitions (KIP-932): which records are acquired, by whom, how often.

A share-partition is one topic partition as one share group sees it: a
start offset (everything before it is done with), and the state of each
record from there on.  A record is acquired by one member for the lock
duration (the cluster's reactor times it); accepted or rejected, it is done;
released or timed out, it is available again, until its delivery count
reaches the limit and it is archived.  Each record's lifecycle is
:data:`TABLE`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from afkak._transitions import TransitionTable

#: Kafka's group.share.record.lock.duration.ms and group.share.delivery.count.limit.
LOCK_DURATION_MS = 30000
DELIVERY_COUNT_LIMIT = 5


class RecordState(enum.Enum):
    AVAILABLE = "available"
    ACQUIRED = "acquired"
    ACKNOWLEDGED = "acknowledged"
    ARCHIVED = "archived"


class RecordEvent(enum.Enum):
    ACQUIRE = "a ShareFetch acquired it"
    ACCEPT = "acknowledged ACCEPT"
    RELEASE = "acknowledged RELEASE, or its member left"
    REJECT = "acknowledged REJECT"
    GAP = "acknowledged GAP (no record at that offset)"
    LOCK_TIMEOUT = "the acquisition lock timed out"
    EXHAUSTED = "available again with its delivery count at the limit"


S, E = RecordState, RecordEvent

#: ::
#:
#:     AVAILABLE ─acquire─▶ ACQUIRED ─accept─▶ ACKNOWLEDGED
#:     ACQUIRED ─release, lock timeout─▶ AVAILABLE ─exhausted─▶ ARCHIVED
#:     ACQUIRED ─reject, gap─▶ ARCHIVED
TABLE = TransitionTable(
    {
        (S.AVAILABLE, E.ACQUIRE): S.ACQUIRED,
        (S.ACQUIRED, E.ACCEPT): S.ACKNOWLEDGED,
        (S.ACQUIRED, E.RELEASE): S.AVAILABLE,
        (S.ACQUIRED, E.LOCK_TIMEOUT): S.AVAILABLE,
        (S.ACQUIRED, E.REJECT): S.ARCHIVED,
        (S.ACQUIRED, E.GAP): S.ARCHIVED,
        (S.AVAILABLE, E.EXHAUSTED): S.ARCHIVED,
    }
)
#: AcknowledgeTypes on the wire: 0 gap, 1 accept, 2 release, 3 reject.
ACK_EVENTS = {0: E.GAP, 1: E.ACCEPT, 2: E.RELEASE, 3: E.REJECT}


@attrs.define
class InFlight:
    """A record past the start offset that was delivered at least once."""

    state: RecordState = S.AVAILABLE
    delivery_count: int = 0
    member: str | None = None
    #: The acquisition holding the lock (a number), so a late timer leaves a newer one alone.
    lock: int = 0


class SharePartition:
    """One partition of one share group: its start offset and its records in flight."""

    def __init__(
        self, start: int, reactor: Any, on_available: Callable[[], None], lock_ms: int, limit: int
    ) -> None:
        self.start = start
        self.records: dict[int, InFlight] = {}
        self._reactor = reactor
        self._on_available = on_available
        self._lock_ms = lock_ms
        self._limit = limit
        self._locks = 0
        self._timers: dict[int, Any] = {}

    def _apply(self, offset: int, event: RecordEvent) -> None:
        record = self.records.setdefault(offset, InFlight())
        new = TABLE.next(record.state, event)
        assert new is not None
        record.state = new
        if new is S.ACQUIRED:
            record.delivery_count += 1
        elif new is S.AVAILABLE:
            record.member = None
            if record.delivery_count >= self._limit:
                record.state = TABLE.next(new, E.EXHAUSTED) or new

    def acquire(self, member: str, end: int, max_records: int) -> list[tuple[int, int]]:
        """Acquire up to *max_records* available records below *end*: ``(offset, count)``."""
        got: list[tuple[int, int]] = []
        offset = self.start
        while offset < end and len(got) < max_records:
            record = self.records.get(offset)
            if record is None or record.state is S.AVAILABLE:
                self._apply(offset, E.ACQUIRE)
                record = self.records[offset]
                record.member = member
                got.append((offset, record.delivery_count))
            offset += 1
        if got:
            self._locks += 1
            lock = self._locks
            for offset, _ in got:
                self.records[offset].lock = lock
            self._timers[lock] = self._reactor.callLater(
                self._lock_ms / 1000.0, self._lock_expired, lock
            )
        return got

    def _lock_expired(self, lock: int) -> None:
        self._timers.pop(lock, None)
        for offset, record in list(self.records.items()):
            if record.state is S.ACQUIRED and record.lock == lock:
                self._apply(offset, E.LOCK_TIMEOUT)
        self._on_available()

    def acknowledge(self, member: str, first: int, last: int, types: list[int]) -> bool:
        """Apply one acknowledgement batch; False (nothing applied): a record not *member*'s."""
        offsets = range(first, last + 1)
        if not types or (len(types) != 1 and len(types) != len(offsets)):
            return False
        kinds = types * len(offsets) if len(types) == 1 else types
        for offset, kind in zip(offsets, kinds, strict=True):
            record = self.records.get(offset)
            if kind not in ACK_EVENTS or record is None or record.state is not S.ACQUIRED:
                return False
            if record.member != member:
                return False
        released = False
        for offset, kind in zip(offsets, kinds, strict=True):
            self._apply(offset, ACK_EVENTS[kind])
            released |= kind == 2
        self._advance()
        if released:
            self._on_available()
        return True

    def release_member(self, member: str) -> None:
        """The member left or closed its share session: its acquired records are available."""
        released = [o for o, r in self.records.items() if r.member == member]
        for offset in released:
            self._apply(offset, E.RELEASE)
        if released:
            self._on_available()

    def _advance(self) -> None:
        while (record := self.records.get(self.start)) is not None and record.state in (
            S.ACKNOWLEDGED,
            S.ARCHIVED,
        ):
            del self.records[self.start]
            self.start += 1

    def reset(self, start: int) -> None:
        """A new start offset (AlterShareGroupOffsets): every record's state is forgotten."""
        self.stop()
        self.records.clear()
        self.start = start

    def stop(self) -> None:
        for timer in self._timers.values():
            if timer.active():
                timer.cancel()
        self._timers.clear()

    def done_beyond_start(self) -> int:
        """Records past the start offset that are accepted or archived (not lag)."""
        return sum(r.state in (S.ACKNOWLEDGED, S.ARCHIVED) for r in self.records.values())

    def states(self) -> Iterator[tuple[int, InFlight]]:
        return iter(sorted(self.records.items()))


def ranges(acquired: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``(first, last, delivery count)`` runs of consecutive offsets with one count."""
    runs: list[tuple[int, int, int]] = []
    for offset, count in acquired:
        if runs and runs[-1][1] == offset - 1 and runs[-1][2] == count:
            runs[-1] = (runs[-1][0], offset, count)
        else:
            runs.append((offset, offset, count))
    return runs
