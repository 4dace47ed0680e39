"""The Consumer's fetch-ahead slot: the one response fetched while the processor works.

::

    EMPTY ─fetch─▶ FETCHING ─fill─▶ FILLED
      ▲  ▲           │                │
      │  └──cancel───┘                │
      └────────────take / drop────────┘

A Consumer fetches when its slot is EMPTY, and takes what the slot holds
(a response, or the failure that ended fetching) when its processor is
idle; so at most one response waits, and the next fetch is sent as soon as
that one is taken.  ``cancel`` (pause, seek) drops only a fetch under way,
``drop`` (seek, stop) only a response waiting: each is a declared no-op in
the other states.
"""

from __future__ import annotations

import enum

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak._transitions import TransitionTable

from ._messages import FetchedRecords


class SlotState(enum.Enum):
    EMPTY = "empty"
    FETCHING = "fetching"
    FILLED = "filled"


class SlotEvent(enum.Enum):
    FETCH = "fetch"
    FILL = "fill"
    TAKE = "take"
    CANCEL = "cancel"
    DROP = "drop"


S, E = SlotState, SlotEvent

TABLE = TransitionTable(
    transitions={
        (S.EMPTY, E.FETCH): S.FETCHING,
        (S.FETCHING, E.FILL): S.FILLED,  # a response, or the failure that ended fetching
        (S.FILLED, E.TAKE): S.EMPTY,  # by the idle processor: the next fetch goes out
        # pause() and seek() cancel a fetch under way; seek() and stop() drop a response.
        (S.FETCHING, E.CANCEL): S.EMPTY,
        (S.FILLED, E.DROP): S.EMPTY,
    },
    ignored=[(S.EMPTY, E.CANCEL), (S.FILLED, E.CANCEL), (S.EMPTY, E.DROP), (S.FETCHING, E.DROP)],
)

Content = FetchedRecords | Failure


class FetchAhead:
    """One fetch in flight or one fetched response waiting, never both."""

    __slots__ = ("state", "_fetch", "_content")

    def __init__(self) -> None:
        self.state = SlotState.EMPTY
        self._fetch: Deferred[FetchedRecords] | None = None
        self._content: Content | None = None

    def _on(self, event: SlotEvent) -> None:
        new = TABLE.next(self.state, event)
        if new is not None:
            self.state = new

    def fetching(self, fetch: Deferred[FetchedRecords]) -> None:
        """*fetch* fills the slot (:meth:`fill`) when it answers."""
        self._on(SlotEvent.FETCH)
        self._fetch = fetch

    def fill(self, fetch: Deferred[FetchedRecords], content: Content) -> bool:
        """Hold what *fetch* gave; False (nothing held) if it is not the fetch under way."""
        if fetch is not self._fetch:
            return False  # cancelled: its late answer or its cancellation
        self._on(SlotEvent.FILL)
        self._fetch, self._content = None, content
        return True

    def take(self) -> Content:
        """What the slot held: a response for the processor, or the failure that ended fetching."""
        self._on(SlotEvent.TAKE)
        content, self._content = self._content, None
        assert content is not None
        return content

    @property
    def waiting(self) -> FetchedRecords | None:
        """The response held, if any (not a failure)."""
        content = self._content
        return content if isinstance(content, FetchedRecords) else None

    def cancel(self) -> None:
        """Cancel the fetch under way, if any; a response held stays."""
        self._on(SlotEvent.CANCEL)
        fetch, self._fetch = self._fetch, None
        if fetch is not None:
            fetch.cancel()

    def drop(self) -> None:
        """Forget the response held, if any; a fetch under way goes on."""
        self._on(SlotEvent.DROP)
        self._content = None
