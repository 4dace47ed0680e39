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
            self.clock,
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
