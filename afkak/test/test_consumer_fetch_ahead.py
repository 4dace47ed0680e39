"""The Consumer's fetch-ahead slot: one fetch in flight or one response waiting."""

from __future__ import annotations

from twisted.internet.defer import CancelledError, Deferred
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.consumer._fetch_ahead import FetchAhead, SlotState
from afkak.consumer._messages import FetchedRecords


def records(offset: int) -> FetchedRecords:
    return FetchedRecords([], offset, offset + 1, False)


class FetchAheadTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.slot = FetchAhead()

    def fetch(self) -> Deferred[FetchedRecords]:
        d: Deferred[FetchedRecords] = Deferred()
        d.addErrback(lambda f: (self.slot.fill(d, f), f)[1])
        self.slot.fetching(d)
        return d

    def test_a_fetch_fills_the_slot_until_taken(self) -> None:
        d = self.fetch()
        self.assertIs(self.slot.state, SlotState.FETCHING)
        response = records(5)
        self.assertTrue(self.slot.fill(d, response))
        self.assertEqual((self.slot.state, self.slot.waiting), (SlotState.FILLED, response))
        self.assertIs(self.slot.take(), response)
        self.assertEqual((self.slot.state, self.slot.waiting), (SlotState.EMPTY, None))

    def test_a_failure_is_held_in_place_of_a_response(self) -> None:
        d = self.fetch()
        failure = Failure(ValueError("bad"))
        self.assertTrue(self.slot.fill(d, failure))
        self.assertIsNone(self.slot.waiting)
        self.assertIs(self.slot.take(), failure)

    def test_cancel_drops_the_fetch_and_its_late_answer(self) -> None:
        d = self.fetch()
        self.slot.cancel()
        self.assertIs(self.slot.state, SlotState.EMPTY)
        self.assertTrue(d.called)  # the errback's fill() was refused
        self.failureResultOf(d, CancelledError)
        self.assertFalse(self.slot.fill(d, records(0)))
        self.assertIs(self.slot.state, SlotState.EMPTY)

    def test_cancel_keeps_a_response_and_drop_keeps_a_fetch(self) -> None:
        d = self.fetch()
        self.slot.drop()
        self.assertIs(self.slot.state, SlotState.FETCHING)
        self.slot.fill(d, records(1))
        self.slot.cancel()
        self.assertIs(self.slot.state, SlotState.FILLED)
        self.slot.drop()
        self.assertEqual((self.slot.state, self.slot.waiting), (SlotState.EMPTY, None))

    def test_a_second_fetch_while_one_is_under_way_is_a_bug(self) -> None:
        self.fetch()
        self.assertRaises(RuntimeError, self.fetch)
