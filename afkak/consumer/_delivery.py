"""The response a Consumer took for its processor: decoded a reactor turn later, given in blocks.

::

    IDLE ─take─▶ TAKEN ─decode─▶ READY ─deplete─▶ IDLE
                   │               ▲
                prepare          decode
                   ▼               │
                 PREPARING ────────┘

    drop (seek, stop, shutdown, an error): TAKEN, PREPARING, READY ─▶ IDLE

A response taken from the fetch-ahead slot (:mod:`._fetch_ahead`) is decoded
two reactor turns later: Twisted writes to sockets after running due timed
calls, so the fetch sent when it was taken is on the wire first and the
broker prepares the next response meanwhile.  Its records become messages
(after the deserializers' ``prepare``, when they have one: PREPARING), which
the processor gets a block at a time; the last block given (or a response
without messages) leaves the room IDLE, ready to take the next response.
``drop`` forgets all of it, and is a declared no-op when IDLE.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak._transitions import TransitionTable
from afkak.common import SourcedMessage

from ._messages import FetchedRecords
from ._turns import Turns
from .deserialize import Deserializing


class DeliveryState(enum.Enum):
    IDLE = "idle"
    TAKEN = "taken"
    PREPARING = "preparing"
    READY = "ready"


class DeliveryEvent(enum.Enum):
    TAKE = "take"
    PREPARE = "prepare"
    DECODE = "decode"
    DEPLETE = "deplete"
    DROP = "drop"


S, E = DeliveryState, DeliveryEvent

TABLE = TransitionTable(
    transitions={
        (S.IDLE, E.TAKE): S.TAKEN,
        (S.TAKEN, E.PREPARE): S.PREPARING,  # the deserializers prepare the batch first
        (S.TAKEN, E.DECODE): S.READY,
        (S.PREPARING, E.DECODE): S.READY,
        (S.READY, E.DEPLETE): S.IDLE,  # the last block given, or no messages at all
        (S.TAKEN, E.DROP): S.IDLE,
        (S.PREPARING, E.DROP): S.IDLE,
        (S.READY, E.DROP): S.IDLE,
    },
    ignored=[(S.IDLE, E.DROP)],
)


class Delivery:
    """One fetched response on its way to the processor.

    *ready* is called when messages are READY; *failed* with the failure of
    decoding or deserializing, after which the room is IDLE.
    """

    __slots__ = (
        "state",
        "_turns",
        "_topic",
        "_partition",
        "_deserialize",
        "_ready",
        "_failed",
        "_current",
        "_hops",
        "_preparing",
        "_messages",
        "_next",
    )

    def __init__(
        self,
        turns: Turns,
        topic: str,
        partition: int,
        deserialize: Deserializing | None,
        ready: Callable[[], None],
        failed: Callable[[Failure], None],
    ) -> None:
        self.state = DeliveryState.IDLE
        self._turns = turns
        self._topic = topic
        self._partition = partition
        self._deserialize = deserialize
        self._ready = ready
        self._failed = failed
        # The response taken, until decoded.
        self._current: FetchedRecords | None = None
        # The reactor turns to wait before decoding it.
        self._hops = 0
        # The wait for the deserializers to be ready to decode it.
        self._preparing: Deferred[Any] | None = None
        # Its messages, and where the next block starts.
        self._messages: list[SourcedMessage] = []
        self._next = 0

    def _on(self, event: DeliveryEvent) -> None:
        new = TABLE.next(self.state, event)
        if new is not None:
            self.state = new

    def take(self, fetched: FetchedRecords) -> None:
        """Decode *fetched* two reactor turns from now (see above)."""
        self._on(DeliveryEvent.TAKE)
        self._current = fetched
        self._hops = 2
        self._turns.add(self)

    def hop(self) -> None:
        """A reactor turn has come (:class:`~._turns.Turns`)."""
        if not self._hops:
            return  # dropped
        self._hops -= 1
        if self._hops:
            self._turns.add(self)
        else:
            self._decode()

    def _decode(self) -> None:
        fetched = self._current
        if fetched is None:
            return
        try:
            messages = fetched.messages(self._topic, self._partition)
            deserialize = self._deserialize
            ready = None if deserialize is None else deserialize.prepare(messages)
        except Exception:
            self._fail(Failure())
            return
        if ready is None:
            self._convert(messages)
            return
        # The response stays current (nothing else is taken) until its
        # deserializers are ready; drop() cancels the wait.
        self._on(DeliveryEvent.PREPARE)
        self._preparing = ready
        ready.addCallbacks(self._prepared, lambda _: None, callbackArgs=(ready, messages))

    def _prepared(self, _: object, ready: Deferred[Any], messages: list[SourcedMessage]) -> None:
        if self._preparing is not ready:
            return
        self._preparing = None
        self._convert(messages)

    def _convert(self, messages: list[SourcedMessage]) -> None:
        self._current = None
        try:
            if self._deserialize is not None:
                messages = self._deserialize(messages)
        except Exception:
            self._fail(Failure())
            return
        self._on(DeliveryEvent.DECODE)
        self._messages, self._next = messages, 0
        if not messages:
            self._on(DeliveryEvent.DEPLETE)
        self._ready()

    def _fail(self, failure: Failure) -> None:
        self.drop()
        self._failed(failure)

    def next_block(self, size: int) -> list[SourcedMessage]:
        """The next *size* messages (0: all of them) for the processor."""
        messages, start = self._messages, self._next
        end = len(messages) if not size else min(start + size, len(messages))
        block = messages if start == 0 and end == len(messages) else messages[start:end]
        if end == len(messages):
            self._messages, self._next = [], 0
            self._on(DeliveryEvent.DEPLETE)
        else:
            self._next = end
        return block

    def next_offset(self) -> int | None:
        """The offset of the next message for the processor; None when IDLE."""
        if self._next < len(self._messages):
            return int(self._messages[self._next].offset)
        fetched = self._current
        return None if fetched is None else fetched.offset

    def drop(self) -> None:
        """Forget the response and its messages not given to the processor yet."""
        self._on(DeliveryEvent.DROP)
        self._current = None
        self._messages, self._next = [], 0
        preparing, self._preparing = self._preparing, None
        if preparing is not None:
            preparing.cancel()
        if self._hops:
            self._hops = 0
            self._turns.discard(self)
