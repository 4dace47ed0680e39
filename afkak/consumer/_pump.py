"""The Consumer's pump: one processor call at a time, one fetch ahead of it.

::

    processor call   IDLE ─call─▶ CALLING ─defer─▶ WAITING
                      ▲  ▲           │                │
                      │  └──finish───┘                │
                      └──────────finish───────────────┘
                     cancel (stop, abandon): CALLING, WAITING ─▶ IDLE

    pause            OPEN ─pause─▶ PAUSED ─resume─▶ OPEN   (across stop and start)

    loop             RESTING ─pump─▶ ROUND ─pump─▶ AGAIN ─next─▶ ROUND
                     rest: ROUND, AGAIN ─▶ RESTING

The pump runs when something may let the processor work: a fetch answered,
a response decoded (:class:`._delivery.Delivery`), the processor's call
finished, a seek, a resume.  While the consumer runs and is not PAUSED, it
hands the response waiting in the fetch-ahead slot (:class:`._fetch_ahead.
FetchAhead`) to the Delivery when the processor is IDLE, sends the next fetch
when the slot is EMPTY, and gives the processor the next block of a READY
Delivery when it is IDLE.  The processor is not called again while its call
is CALLING (it runs) or WAITING (for the Deferred it returned): that
Deferred is the backpressure.  A pump asked for while one runs (a fetch or
a call finishing synchronously) is a round more of the running loop
(AGAIN), so the stack stays flat.

Declared no-ops: ``cancel`` when IDLE (nothing to cancel), ``pause`` when
PAUSED, ``resume`` when OPEN, ``pump`` when AGAIN (a round is already due).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Protocol

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from afkak._transitions import TransitionTable
from afkak.common import SourcedMessage

from ._delivery import Delivery, DeliveryState
from ._fetch_ahead import FetchAhead, SlotState
from ._messages import FetchedRecords


class ProcessedOffsets(Protocol):
    """Counts what the processor finished (the Consumer's :class:`._committer.Committer`)."""

    def processed(self, offset: int, count: int) -> None: ...


class CallState(enum.Enum):
    IDLE = "idle"  # the processor may be given messages
    CALLING = "calling"  # inside processor(consumer, messages)
    WAITING = "waiting"  # for the Deferred it returned


class CallEvent(enum.Enum):
    CALL = "call"
    DEFER = "defer"  # the processor returned a Deferred
    FINISH = "finish"  # it returned a value or raised, or its Deferred fired
    CANCEL = "cancel"  # stop() or abandon(): the call's result no longer counts


class GateState(enum.Enum):
    OPEN = "open"
    PAUSED = "paused"  # neither fetch nor deliver, across stop() and start()


class GateEvent(enum.Enum):
    PAUSE = "pause"
    RESUME = "resume"


class LoopState(enum.Enum):
    RESTING = "resting"
    ROUND = "round"  # the pump runs a round
    AGAIN = "again"  # ...and was asked for meanwhile: one round more


class LoopEvent(enum.Enum):
    PUMP = "pump"
    NEXT = "next"
    REST = "rest"


C, CE = CallState, CallEvent
G, GE = GateState, GateEvent
L, LE = LoopState, LoopEvent

CALLS = TransitionTable(
    transitions={
        (C.IDLE, CE.CALL): C.CALLING,
        (C.CALLING, CE.DEFER): C.WAITING,
        (C.CALLING, CE.FINISH): C.IDLE,
        (C.WAITING, CE.FINISH): C.IDLE,
        (C.CALLING, CE.CANCEL): C.IDLE,  # stopped from within the processor
        (C.WAITING, CE.CANCEL): C.IDLE,
    },
    ignored=[(C.IDLE, CE.CANCEL)],
)

GATE = TransitionTable(
    transitions={(G.OPEN, GE.PAUSE): G.PAUSED, (G.PAUSED, GE.RESUME): G.OPEN},
    ignored=[(G.PAUSED, GE.PAUSE), (G.OPEN, GE.RESUME)],
)

LOOP = TransitionTable(
    transitions={
        (L.RESTING, LE.PUMP): L.ROUND,
        (L.ROUND, LE.PUMP): L.AGAIN,  # re-entered: a fetch or a call finished synchronously
        (L.AGAIN, LE.NEXT): L.ROUND,
        (L.ROUND, LE.REST): L.RESTING,
        (L.AGAIN, LE.REST): L.RESTING,  # stopped, paused or failed during the round
    },
    ignored=[(L.AGAIN, LE.PUMP)],
)


class Pump:
    """Drives a Consumer's fetch-ahead slot and Delivery; holds its processor call.

    The Consumer gives it those two rooms and what the pump cannot know:
    whether the consumer *runs*, how to *fetch* from its position, what a
    response *fetched* tells it (the next position, watermarks, metrics), how
    to *process* a block (its processor), what to do when a call *finished*
    (given the offset to fetch again from when the processor finished only
    part of its block), and how to *fail*.  Its *committer* counts the
    offsets processed.
    """

    __slots__ = (
        "call",
        "gate",
        "loop",
        "ahead",
        "delivery",
        "since",
        "_reactor",
        "_committer",
        "block_size",
        "_running",
        "_fetch",
        "_fetched",
        "_process",
        "_finished",
        "_fail",
        "_current",
        "_seek_cap",
    )

    def __init__(
        self,
        reactor: Any,
        ahead: FetchAhead,
        delivery: Delivery,
        committer: ProcessedOffsets,
        block_size: int,
        *,
        running: Callable[[], bool],
        fetch: Callable[[], Deferred[FetchedRecords]],
        fetched: Callable[[FetchedRecords], None],
        process: Callable[[list[SourcedMessage]], Any],
        finished: Callable[[int | None], None],
        fail: Callable[[Failure], None],
    ) -> None:
        self.call = CallState.IDLE
        self.gate = GateState.OPEN
        self.loop = LoopState.RESTING
        self.ahead = ahead
        self.delivery = delivery  # made ready, it runs the pump
        # When the call under way began (reactor.seconds()).
        self.since = 0.0
        self._reactor = reactor
        self._committer = committer
        # The most messages per processor call (0: a whole response).
        self.block_size = block_size
        self._running = running
        self._fetch = fetch
        self._fetched = fetched
        self._process = process
        self._finished = finished
        self._fail = fail
        # The call under way: the processor's Deferred, or a token while it runs.
        self._current: object | None = None
        # Set by a seek during a call: the last offset of it that counts.
        self._seek_cap: int | None = None

    # -- the loop ----------------------------------------------------------------

    def run(self) -> None:
        """Hand the waiting response to an idle processor; keep one fetch ahead.

        A response taken for processing frees the slot, so the next fetch is
        sent at once; the response is decoded two reactor turns later, once
        Twisted has written that fetch to the socket, so that the broker
        prepares the next response meanwhile.
        """
        resting = self.loop is LoopState.RESTING
        self._on_loop(LoopEvent.PUMP)
        if not resting:
            return  # the running loop does one round more
        try:
            while self._round():
                self._on_loop(LoopEvent.NEXT)
        finally:
            self._on_loop(LoopEvent.REST)

    def _round(self) -> bool:
        """One round of the loop; True if the pump was asked for meanwhile."""
        if not self._running() or self.gate is GateState.PAUSED:
            return False
        ahead, delivery = self.ahead, self.delivery
        idle = self.call is CallState.IDLE and delivery.state is DeliveryState.IDLE
        if idle and ahead.state is SlotState.FILLED:
            taken = ahead.take()
            if isinstance(taken, Failure):
                self._fail(taken)
                return False
            delivery.take(taken)
        if ahead.state is SlotState.EMPTY:
            self._send_fetch()
        if self.call is CallState.IDLE and delivery.state is DeliveryState.READY:
            self._deliver(delivery.next_block(self.block_size))
        return self.loop is LoopState.AGAIN

    def _on_loop(self, event: LoopEvent) -> None:
        new = LOOP.next(self.loop, event)
        if new is not None:
            self.loop = new

    # -- fetching ----------------------------------------------------------------

    def _send_fetch(self) -> None:
        d = self._fetch()
        self.ahead.fetching(d)
        d.addBoth(self._filled, d)  # one callback entry: fewer objects per fetch in flight

    def _filled(self, content: FetchedRecords | Failure, d: Deferred[FetchedRecords]) -> None:
        # A failure is held in place of a response: what was fetched before is processed first.
        if self.ahead.fill(d, content):  # else cancelled by stop(), seek() or pause()
            if not isinstance(content, Failure):
                self._fetched(content)
            self.run()
        return None

    def drop(self) -> None:
        """Cancel the fetch under way and forget every message not given to the processor."""
        self.ahead.cancel()
        self.ahead.drop()
        self.delivery.drop()

    def position(self, fetch_offset: int) -> int:
        """The offset of the next message for the processor (*fetch_offset*: none is held)."""
        offset = self.delivery.next_offset()
        if offset is not None:
            return offset
        waiting = self.ahead.waiting
        return fetch_offset if waiting is None else waiting.offset

    # -- the processor call ------------------------------------------------------

    def _on_call(self, event: CallEvent) -> None:
        new = CALLS.next(self.call, event)
        if new is not None:
            self.call = new

    def _deliver(self, messages: list[SourcedMessage]) -> None:
        self._on_call(CallEvent.CALL)
        token = self._current = object()
        self.since = self._reactor.seconds()
        self._seek_cap = None
        try:
            result = self._process(messages)
        except Exception:
            if token is self._current:
                self._end()
                self._fail(Failure())
            return
        first, last, count = messages[0].offset, messages[-1].offset, len(messages)
        if isinstance(result, Deferred):
            if token is not self._current:
                return  # stopped from within the processor
            self._on_call(CallEvent.DEFER)
            self._current = result
            result.addCallbacks(
                self._processed,
                self._processor_failed,
                callbackArgs=(first, last, count, result),
                errbackArgs=(result,),
            )
        else:
            self._processed(None, first, last, count, token)

    def _end(self) -> None:
        self._on_call(CallEvent.FINISH)
        self._current = None

    def _processed(self, result: Any, first: int, last: int, count: int, token: object) -> Any:
        if token is not self._current:
            return result  # stopped meanwhile: these messages do not count
        self._end()
        refetch = type(result) is int and result < last
        done = result if refetch else last
        cap, self._seek_cap = self._seek_cap, None
        if cap is not None:
            # Seeked during the call: the records from the seek target on are
            # delivered again (or were skipped), so they do not count now.
            refetch, done = False, min(done, cap)
        if done == last:
            self._committer.processed(last, count)
        elif done >= first:
            self._committer.processed(done, done - first + 1)
        self._finished(max(done + 1, first) if refetch else None)  # the rest is fetched again
        return result

    def _processor_failed(self, failure: Failure, token: object) -> None:
        if token is not self._current:
            return None  # cancelled by stop()
        self._end()
        self._fail(failure)
        return None

    def processing_since(self) -> float | None:
        """When the call under way began; None when IDLE."""
        return None if self.call is CallState.IDLE else self.since

    def seek(self, offset: int) -> None:
        """Drop what was fetched: the next fetch is from *offset* (the Consumer's position)."""
        self.drop()
        if self.call is not CallState.IDLE:
            # Of the call under way, only records before a concrete target count.
            self._seek_cap = offset - 1 if offset >= 0 else -1

    def _forget(self) -> Deferred[Any] | None:
        """The call under way no longer counts; its Deferred, if it returned one."""
        current, self._current = self._current, None
        self._on_call(CallEvent.CANCEL)
        return current if isinstance(current, Deferred) else None

    def abandon(self) -> Deferred[None]:
        """Forget the call under way, left to run: fires when it ends (at once when none is).

        Cancelling the Deferred returned does not cancel the call.
        """
        current = self._forget()
        ended: Deferred[None] = Deferred()
        if current is None:
            ended.callback(None)
        else:

            def end(result: Any) -> Any:
                if not ended.called:
                    ended.callback(None)
                return result

            current.addBoth(end)
        return ended

    def halt(self) -> None:
        """Drop everything fetched and cancel the call under way: the consumer stops."""
        self.drop()
        current = self._forget()
        if current is not None:
            current.cancel()

    # -- pausing -----------------------------------------------------------------

    def pause(self) -> None:
        """Neither fetch nor deliver (a call under way finishes) until :meth:`resume`."""
        new = GATE.next(self.gate, GateEvent.PAUSE)
        if new is not None:
            self.gate = new
        self.ahead.cancel()

    def resume(self) -> None:
        new = GATE.next(self.gate, GateEvent.RESUME)
        if new is not None:
            self.gate = new
            self.run()
