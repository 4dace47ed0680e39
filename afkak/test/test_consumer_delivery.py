"""The Consumer's delivery: the response taken, decoded two reactor turns later, given in blocks."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.common import SourcedMessage
from afkak.consumer._delivery import Delivery, DeliveryState
from afkak.consumer._messages import FetchedRecords, read_fetched
from afkak.consumer._turns import Turns
from afkak.consumer.deserialize import deserializing
from afkak.records import build_batch


def fetched(*values: bytes, offset: int = 0) -> FetchedRecords:
    return read_fetched(build_batch(list(values), base_offset=offset), offset)


class Preparing:
    """A value deserializer whose ``prepare`` waits for the test to fire it."""

    def __init__(self) -> None:
        self.ready: Deferred[None] = Deferred()

    def __call__(self, data: bytes) -> bytes:
        return data.upper()

    def prepare(self, data: Any) -> Deferred[None]:
        return self.ready


class DeliveryTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.readied = 0
        self.failures: list[Failure] = []

    def delivery(self, value_deserializer: Any = None) -> Delivery:
        return Delivery(
            Turns(self.clock),
            "t",
            0,
            deserializing(None, value_deserializer),
            self.ready,
            self.failures.append,
        )

    def ready(self) -> None:
        self.readied += 1

    def offsets(self, block: list[SourcedMessage]) -> list[int]:
        return [m.offset for m in block]

    def test_a_response_is_decoded_after_reactor_turns_then_given_in_blocks(self) -> None:
        d = self.delivery()
        d.take(fetched(b"a", b"b", b"c", offset=5))
        self.assertEqual((d.state, d.next_offset()), (DeliveryState.TAKEN, 5))
        self.clock.advance(0)  # a Clock runs both turns' calls
        self.assertEqual((d.state, self.readied, d.next_offset()), (DeliveryState.READY, 1, 5))
        self.assertEqual(self.offsets(d.next_block(2)), [5, 6])
        self.assertEqual((d.state, d.next_offset()), (DeliveryState.READY, 7))
        self.assertEqual(self.offsets(d.next_block(2)), [7])
        self.assertEqual((d.state, d.next_offset()), (DeliveryState.IDLE, None))

    def test_a_response_without_messages_leaves_it_idle(self) -> None:
        d = self.delivery()
        d.take(FetchedRecords([], 3, 3, False))
        self.clock.advance(0)
        self.assertEqual((d.state, self.readied), (DeliveryState.IDLE, 1))

    def test_deserializers_prepare_before_the_messages_are_ready(self) -> None:
        value = Preparing()
        d = self.delivery(value)
        d.take(fetched(b"a"))
        self.clock.advance(0)
        self.assertEqual((d.state, self.readied), (DeliveryState.PREPARING, 0))
        value.ready.callback(None)
        self.assertIs(d.state, DeliveryState.READY)
        [message] = d.next_block(0)
        self.assertEqual(message.message.value, b"A")

    def test_drop_forgets_the_response_in_every_state_and_is_a_no_op_when_idle(self) -> None:
        value = Preparing()
        d = self.delivery(value)
        d.drop()
        self.assertIs(d.state, DeliveryState.IDLE)
        d.take(fetched(b"a"))
        d.drop()
        self.assertEqual((d.state, self.clock.getDelayedCalls()), (DeliveryState.IDLE, []))
        d.take(fetched(b"a"))
        self.clock.advance(0)
        d.drop()
        self.assertIs(d.state, DeliveryState.IDLE)
        self.assertTrue(value.ready.called)  # the wait is cancelled
        self.assertEqual(self.readied, 0)

    def test_the_deliveries_of_one_client_share_one_timed_call_per_turn(self) -> None:
        """Twenty partitions' responses taken in one turn wait on one reactor call, not
        a call per partition and turn (fifty consumers in one process promoted those
        DelayedCalls, and their bound methods, to the cyclic GC's oldest generation);
        one dropped is not decoded, the others are."""
        turns = Turns(self.clock)
        ds = [Delivery(turns, "t", p, None, self.ready, self.failures.append) for p in range(20)]
        for d in ds:
            d.take(fetched(b"a"))
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        ds[3].drop()
        self.clock.advance(0)
        self.assertEqual([d.state for d in ds].count(DeliveryState.READY), 19)
        self.assertEqual((self.readied, self.clock.getDelayedCalls()), (19, []))

    def test_a_failing_hop_is_logged_and_the_others_go_on(self) -> None:
        turns = Turns(self.clock)

        def ready() -> None:
            self.readied += 1
            if self.readied == 1:
                raise ZeroDivisionError()

        ds = [Delivery(turns, "t", p, None, ready, self.failures.append) for p in range(3)]
        for d in ds:
            d.take(fetched(b"a"))
        self.clock.advance(0)
        self.assertEqual(self.readied, 3)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)

    def test_a_deserializer_error_drops_the_response_and_is_reported(self) -> None:
        def broken(data: bytes) -> bytes:
            raise ValueError("not JSON")

        d = self.delivery(broken)
        d.take(fetched(b"a"))
        self.clock.advance(0)
        self.assertEqual((d.state, self.readied), (DeliveryState.IDLE, 0))
        [failure] = self.failures
        failure.trap(ValueError)

    def test_taking_while_not_idle_is_a_bug(self) -> None:
        d = self.delivery()
        d.take(fetched(b"a"))
        self.assertRaises(RuntimeError, d.take, fetched(b"b"))
