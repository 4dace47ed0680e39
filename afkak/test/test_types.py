"""Public Deferreds say what they fire with (issue 21 item 9), for users' type checkers."""

from __future__ import annotations

from typing import get_overloads, get_type_hints

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import KafkaClient
from afkak.common import ProduceResponse
from afkak.consumer import Consumer
from afkak.producer import Producer, RecordMetadata


class DeferredTypesTests(SynchronousTestCase):
    def test_what_the_deferreds_fire_with(self) -> None:
        expected = {
            Producer.send: Deferred[RecordMetadata],
            Producer.send_messages: Deferred[ProduceResponse | None],
            Producer.flush: Deferred[None],
            Producer.stop: Deferred[None],
            Consumer.start: Deferred[int | None],
            # commit() without offsets, the first overload (commit(offsets) fires with them)
            get_overloads(Consumer.commit)[0]: Deferred[int | None],
            KafkaClient.load_metadata_for_topics: Deferred[bool | None],
            KafkaClient.close: Deferred[None],
        }
        for method, returns in expected.items():
            self.assertEqual(get_type_hints(method)["return"], returns, method.__qualname__)
