"""The Consumer's pump: its declared states, and one processor call at a time, one fetch ahead."""

from __future__ import annotations

import enum
from itertools import product
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak._transitions import TransitionTable
from afkak.common import SourcedMessage
from afkak.consumer._delivery import Delivery, DeliveryState
from afkak.consumer._fetch_ahead import FetchAhead, SlotState
from afkak.consumer._messages import FetchedRecords, read_fetched
from afkak.consumer._pump import (
    CALLS,
    GATE,
    LOOP,
    CallEvent,
    CallState,
    GateEvent,
    GateState,
    LoopEvent,
    LoopState,
    Pump,
)
from afkak.consumer._turns import Turns
from afkak.records import build_batch

C, CE = CallState, CallEvent
G, GE = GateState, GateEvent
L, LE = LoopState, LoopEvent


def fetched(*values: bytes, offset: int = 0) -> FetchedRecords:
    return read_fetched(build_batch(list(values), base_offset=offset), offset)


class TablesTests(SynchronousTestCase):
    """Each pair of a state and an input is a transition, a declared no-op or a bug."""

    def assert_table(
        self,
        table: TransitionTable[Any, Any],
        states: type[enum.Enum],
        events: type[enum.Enum],
        ignored: set[tuple[Any, Any]],
        illegal: set[tuple[Any, Any]],
    ) -> None:
        self.assertEqual(table.ignored, ignored)
        for state, event in ignored:
            self.assertIsNone(table.next(state, event))
        for state, event in illegal:
            self.assertRaises(RuntimeError, table.next, state, event)
        self.assertEqual(set(product(states, events)), table.transitions.keys() | ignored | illegal)

    def test_the_processor_call(self) -> None:
        self.assert_table(
            CALLS,
            CallState,
            CallEvent,
            ignored={(C.IDLE, CE.CANCEL)},
            illegal={
                (C.IDLE, CE.DEFER),
                (C.IDLE, CE.FINISH),
                (C.CALLING, CE.CALL),  # the processor is never called while it works
                (C.WAITING, CE.CALL),
                (C.WAITING, CE.DEFER),
            },
        )

    def test_the_pause(self) -> None:
        self.assert_table(
            GATE,
            GateState,
            GateEvent,
            ignored={(G.PAUSED, GE.PAUSE), (G.OPEN, GE.RESUME)},
            illegal=set(),
        )

    def test_the_loop(self) -> None:
        self.assert_table(
            LOOP,
            LoopState,
            LoopEvent,
            ignored={(L.AGAIN, LE.PUMP)},
            illegal={(L.RESTING, LE.NEXT), (L.RESTING, LE.REST), (L.ROUND, LE.NEXT)},
        )


class PumpTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.running = True
        self.fetches: list[Deferred[FetchedRecords]] = []
        self.answered: list[Deferred[FetchedRecords]] = []  # fetches that answer at once
        self.fetched_from: list[int] = []
        self.calls: list[list[int]] = []
        self.results: list[Any] = []
        self.counted: list[tuple[int, int]] = []
        self.finished: list[int | None] = []
        self.failures: list[Failure] = []
        self.fetch_offset = 0
        delivery = Delivery(
            Turns(self.clock), "t", 0, None, lambda: self.pump.run(), self.failures.append
        )
        self.pump = Pump(
            self.clock,
            FetchAhead(),
            delivery,
            self,
            0,
            running=lambda: self.running,
            fetch=self.fetch,
            fetched=self.fetched,
            process=self.process,
            finished=self.finished.append,
            fail=self.failures.append,
        )

    # The pump's collaborators.

    def fetch(self) -> Deferred[FetchedRecords]:
        self.fetched_from.append(self.fetch_offset)
        if self.answered:
            return self.answered.pop()
        d: Deferred[FetchedRecords] = Deferred()
        self.fetches.append(d)
        return d

    def fetched(self, records: FetchedRecords) -> None:
        self.fetch_offset = records.next_offset

    def process(self, messages: list[SourcedMessage]) -> Any:
        self.calls.append([m.offset for m in messages])
        result = self.results.pop(0) if self.results else None
        return result() if callable(result) else result

    def processed(self, offset: int, count: int) -> None:
        self.counted.append((offset, count))

    def deliver(self, *values: bytes, offset: int = 0) -> None:
        """Answer the fetch under way and let the Delivery decode it."""
        self.fetches[-1].callback(fetched(*values, offset=offset))
        self.clock.advance(0)

    def test_one_fetch_ahead_while_the_processor_waits(self) -> None:
        waiting: Deferred[None] = Deferred()
        self.results = [waiting]
        self.pump.run()
        self.deliver(b"a", b"b", offset=5)
        self.assertEqual(self.calls, [[5, 6]])
        self.assertIs(self.pump.call, CallState.WAITING)
        self.assertEqual(self.pump.processing_since(), 0.0)
        self.deliver(b"c", offset=7)  # held: the processor's Deferred is the backpressure
        self.assertEqual((len(self.calls), self.pump.ahead.state), (1, SlotState.FILLED))
        waiting.callback(None)
        self.assertEqual((self.counted, self.finished), ([(6, 2)], [None]))
        self.assertIs(self.pump.call, CallState.IDLE)
        self.assertIsNone(self.pump.processing_since())
        self.pump.run()  # the Consumer runs the pump when a call finished
        self.clock.advance(0)
        self.assertEqual(self.calls, [[5, 6], [7]])
        self.assertEqual(len(self.fetches), 3)

    def test_a_pump_asked_for_during_a_round_is_a_round_more(self) -> None:
        self.answered = [succeed(fetched(b"a"))]
        self.pump.run()
        # The first fetch answered at once, re-entering the pump: the next
        # round took its response and sent the next fetch.
        self.assertIs(self.pump.loop, LoopState.RESTING)
        self.assertIs(self.pump.delivery.state, DeliveryState.TAKEN)
        self.assertEqual((self.pump.ahead.state, len(self.fetches)), (SlotState.FETCHING, 1))

    def test_blocks_of_block_size(self) -> None:
        self.pump.block_size = 2
        self.pump.run()
        self.deliver(b"a", b"b", b"c")
        self.assertEqual(self.calls, [[0, 1]])
        self.pump.run()
        self.assertEqual(self.calls, [[0, 1], [2]])
        self.assertEqual(self.counted, [(1, 2), (2, 1)])

    def test_nothing_while_not_running(self) -> None:
        self.running = False
        self.pump.run()
        self.assertEqual((self.fetches, self.pump.loop), ([], LoopState.RESTING))

    def test_pause_cancels_the_fetch_and_holds_until_resumed(self) -> None:
        self.pump.run()
        self.pump.pause()
        self.pump.pause()  # a declared no-op
        self.assertTrue(self.fetches[0].called)  # cancelled
        self.assertEqual((self.pump.gate, self.pump.ahead.state), (G.PAUSED, SlotState.EMPTY))
        self.pump.run()
        self.assertEqual(len(self.fetches), 1)
        self.pump.resume()
        self.assertEqual((self.pump.gate, len(self.fetches)), (G.OPEN, 2))

    def test_resume_when_open_does_nothing(self) -> None:
        self.pump.resume()
        self.assertEqual((self.pump.gate, self.fetches), (G.OPEN, []))

    def test_halt_and_abandon_when_idle(self) -> None:
        self.assertIsNone(self.successResultOf(self.pump.abandon()))
        self.pump.halt()
        self.assertIs(self.pump.call, CallState.IDLE)

    def test_halt_cancels_the_call_and_its_result_does_not_count(self) -> None:
        waiting: Deferred[None] = Deferred()
        self.results = [waiting]
        self.pump.run()
        self.deliver(b"a")
        self.pump.halt()
        self.assertTrue(waiting.called)  # cancelled
        self.assertEqual((self.pump.call, self.counted, self.failures), (C.IDLE, [], []))

    def test_abandon_leaves_the_call_alone(self) -> None:
        waiting: Deferred[int] = Deferred()
        self.results = [waiting]
        self.pump.run()
        self.deliver(b"a")
        ended = self.pump.abandon()
        self.assertIs(self.pump.call, CallState.IDLE)
        self.pump.halt()  # stop() after abandon(): the call is not cancelled
        self.assertNoResult(ended)
        self.assertNoResult(waiting)
        waiting.callback(0)
        self.assertIsNone(self.successResultOf(ended))
        self.assertEqual((self.successResultOf(waiting), self.counted, self.finished), (0, [], []))

    def test_stopped_from_within_the_processor(self) -> None:
        self.results = [lambda: self.pump.halt()]
        self.pump.run()
        self.deliver(b"a")
        self.assertEqual((self.pump.call, self.counted, self.finished), (C.IDLE, [], []))

    def test_a_processor_that_raises_fails_the_consumer(self) -> None:
        def bad() -> None:
            raise ValueError("bad")

        self.results = [bad]
        self.pump.run()
        self.deliver(b"a")
        [failure] = self.failures
        failure.trap(ValueError)
        self.assertEqual((self.pump.call, self.counted), (C.IDLE, []))

    def test_a_failed_deferred_fails_the_consumer(self) -> None:
        waiting: Deferred[None] = Deferred()
        self.results = [waiting]
        self.pump.run()
        self.deliver(b"a")
        waiting.errback(ValueError("bad"))
        self.assertEqual(len(self.failures), 1)
        self.assertIs(self.pump.call, CallState.IDLE)

    def test_a_failed_fetch_fails_the_consumer_when_taken(self) -> None:
        self.pump.run()
        self.fetches[0].errback(ValueError("bad"))
        [failure] = self.failures
        failure.trap(ValueError)

    def test_an_offset_below_the_last_counts_up_to_it_and_refetches_the_rest(self) -> None:
        self.results = [succeed(11)]
        self.pump.run()
        self.deliver(b"a", b"b", b"c", offset=10)
        self.assertEqual((self.counted, self.finished), ([(11, 2)], [12]))

    def test_a_seek_during_a_call_caps_what_counts(self) -> None:
        waiting: Deferred[None] = Deferred()
        self.results = [waiting]
        self.pump.run()
        self.deliver(b"a", b"b", b"c", offset=10)
        self.pump.seek(11)
        self.fetch_offset = 11
        self.assertIs(self.pump.ahead.state, SlotState.EMPTY)  # the fetch ahead was cancelled
        self.assertEqual(self.pump.position(self.fetch_offset), 11)
        waiting.callback(None)
        self.assertEqual((self.counted, self.finished), ([(10, 1)], [None]))

    def test_position_of_what_is_held(self) -> None:
        waiting: Deferred[None] = Deferred()
        self.results = [waiting]
        self.pump.block_size = 1
        self.fetch_offset = 3
        self.pump.run()
        self.assertEqual(self.pump.position(self.fetch_offset), 3)  # nothing held: the next fetch's
        self.deliver(b"a", b"b", offset=3)
        self.assertEqual(self.pump.position(self.fetch_offset), 4)  # the next block's
        self.deliver(b"c", offset=5)
        waiting.callback(None)
        self.pump.run()
        self.assertEqual(self.pump.position(self.fetch_offset), 5)  # the response waiting
        self.assertEqual(self.fetched_from, [3, 5])  # each fetch from where the last ended
