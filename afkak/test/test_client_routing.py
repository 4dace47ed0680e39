"""Fan-out bookkeeping (afkak.client._routing), metadata load coalescing
(afkak.client._coalesce) and argument checks (afkak.client._validate)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from afkak.client import _validate as check
from afkak.client._coalesce import MetadataCoalescer, SharedResult
from afkak.client._routing import gather, group_by_broker
from afkak.common import (
    BrokerConnectionError,
    FetchRequest,
    NoResponseError,
    OffsetFetchRequest,
    OffsetFetchResponse,
)


def R(topic: str, partition: int, error: int = 0) -> OffsetFetchResponse:
    return OffsetFetchResponse(topic, partition, 0, None, error)


def P(topic: str, partition: int) -> OffsetFetchRequest:
    return OffsetFetchRequest(topic, partition)


def missing(payload: Any) -> Failure:
    return Failure(NoResponseError(repr(payload)))


class GroupByBrokerTests(SynchronousTestCase):
    def test_keeps_relative_order(self) -> None:
        payloads = [P("a", 0), P("a", 1), P("b", 0), P("a", 2)]
        leader = {("a", 0): 1, ("a", 1): 2, ("b", 0): 1, ("a", 2): 2}
        grouped = group_by_broker(payloads, lambda p: leader[p.topic, p.partition])
        self.assertEqual(grouped, {1: [P("a", 0), P("b", 0)], 2: [P("a", 1), P("a", 2)]})


class GatherTests(SynchronousTestCase):
    def test_responses_in_payload_order(self) -> None:
        payloads = [P("a", 0), P("b", 0), P("a", 1)]
        outcomes = [
            ([P("b", 0)], [R("b", 0)]),
            ([P("a", 0), P("a", 1)], [R("a", 1), R("a", 0), R("x", 9)]),
        ]
        gathered = gather(payloads, outcomes, missing)
        self.assertEqual(gathered.responses, [R("a", 0), R("b", 0), R("a", 1)])
        self.assertEqual(gathered.failed, [])

    def test_failed_broker_fails_its_payloads(self) -> None:
        payloads = [P("a", 0), P("b", 0), P("a", 1)]
        failure = Failure(BrokerConnectionError("lost"))
        gathered = gather(
            payloads, [([P("a", 0), P("a", 1)], failure), ([P("b", 0)], [R("b", 0)])], missing
        )
        self.assertEqual(gathered.responses, [R("b", 0)])
        self.assertEqual(gathered.failed, [(P("a", 0), failure), (P("a", 1), failure)])

    def test_left_out_partition_fails(self) -> None:
        gathered = gather([P("a", 0), P("a", 1)], [([P("a", 0), P("a", 1)], [R("a", 1)])], missing)
        self.assertEqual(gathered.responses, [R("a", 1)])
        [(payload, failure)] = gathered.failed
        self.assertEqual(payload, P("a", 0))
        self.assertTrue(failure.check(NoResponseError))

    def test_no_response_expected(self) -> None:
        gathered = gather([P("a", 0)], [([P("a", 0)], [])], None)
        self.assertEqual((gathered.responses, gathered.failed), ([], []))

    @given(
        st.lists(
            st.tuples(st.sampled_from("abc"), st.integers(0, 5), st.integers(1, 3)),
            unique_by=lambda t: t[:2],
        )
    )
    def test_every_payload_answered_once(self, spec: list[tuple[str, int, int]]) -> None:
        payloads = [P(t, p) for t, p, _ in spec]
        brokers = group_by_broker(spec, lambda s: s[2])
        outcomes = [
            ([P(t, p) for t, p, _ in batch], [R(t, p) for t, p, _ in reversed(batch)])
            for batch in brokers.values()
        ]
        gathered = gather(payloads, outcomes, missing)
        self.assertEqual(
            [(r.topic, r.partition) for r in gathered.responses], [(t, p) for t, p, _ in spec]
        )


class CoalescerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.fetches: list[tuple[tuple[str, ...] | None, Deferred[Any]]] = []
        self.coalescer = MetadataCoalescer(self.fetch)

    def fetch(self, topics: tuple[str, ...] | None) -> Deferred[Any]:
        d: Deferred[Any] = Deferred()
        self.fetches.append((topics, d))
        return d

    def test_covered_request_waits_for_the_current_load(self) -> None:
        first = self.coalescer.load(["a", "b"])
        second = self.coalescer.load(["b"])
        self.assertEqual([t for t, _ in self.fetches], [("a", "b")])
        self.fetches[0][1].callback(None)
        self.assertIsNone(self.successResultOf(first))
        self.assertIsNone(self.successResultOf(second))

    def test_other_topics_join_one_next_load(self) -> None:
        self.coalescer.load(["a"])
        waiting = [self.coalescer.load(["b"]), self.coalescer.load(["c", "b"])]
        self.assertEqual(len(self.fetches), 1)
        self.fetches[0][1].callback(None)
        self.assertEqual([t for t, _ in self.fetches], [("a",), ("b", "c")])
        for d in waiting:
            self.assertNoResult(d)
        self.fetches[1][1].callback(None)
        for d in waiting:
            self.successResultOf(d)

    def test_all_topics_covers_everything(self) -> None:
        self.coalescer.load(None)
        d = self.coalescer.load(["z"])
        self.assertEqual(len(self.fetches), 1)
        self.fetches[0][1].callback(None)
        self.successResultOf(d)
        self.coalescer.load(["a"])
        self.coalescer.load(None)
        self.fetches[1][1].callback(None)
        self.assertIsNone(self.fetches[2][0])

    def test_failure_reaches_every_waiter_and_next_load_runs(self) -> None:
        a = self.coalescer.load(["a"])
        b = self.coalescer.load(["a"])
        c = self.coalescer.load(["c"])
        self.fetches[0][1].errback(BrokerConnectionError("nope"))
        self.failureResultOf(a, BrokerConnectionError)
        self.failureResultOf(b, BrokerConnectionError)
        self.assertNoResult(c)
        self.assertEqual(self.fetches[1][0], ("c",))

    def test_cancelling_one_waiter_leaves_the_others(self) -> None:
        a = self.coalescer.load(["a"])
        b = self.coalescer.load(["a"])
        a.cancel()
        self.failureResultOf(a)
        self.fetches[0][1].callback(None)
        self.successResultOf(b)

    def test_shared_result_passes_values(self) -> None:
        shared = SharedResult()
        waiters = [shared.wait(), shared.wait()]
        shared.settle(42)
        self.assertEqual([self.successResultOf(d) for d in waiters], [42, 42])


class ValidateTests(SynchronousTestCase):
    def test_topic_names(self) -> None:
        self.assertEqual(check.topic_name("a.b_c-1"), "a.b_c-1")
        for bad in ("", "a b", "x" * 250, ".", "..", "ä"):
            self.assertRaises(ValueError, check.topic_name, bad)
        self.assertRaises(TypeError, check.topic_name, b"topic")

    def test_group_names(self) -> None:
        self.assertRaises(ValueError, check.group_name, "")
        self.assertRaises(TypeError, check.group_name, None)

    def test_integer(self) -> None:
        self.assertEqual(check.integer("n", 3, 0, 5), 3)
        self.assertRaises(TypeError, check.integer, "n", True, 0, 5)
        self.assertRaises(TypeError, check.integer, "n", 1.0, 0, 5)
        self.assertRaises(ValueError, check.integer, "n", 6, 0, 5)

    def test_payload_list(self) -> None:
        self.assertEqual(
            check.payload_list((p for p in [FetchRequest("t", 0, 0, 1)]), FetchRequest),
            [FetchRequest("t", 0, 0, 1)],
        )
        self.assertRaises(TypeError, check.payload_list, None, FetchRequest)
        self.assertRaises(TypeError, check.payload_list, [("t", 0, 0, 1)], FetchRequest)
        self.assertRaises(
            TypeError, check.payload_list, [FetchRequest("t", "0", 0, 1)], FetchRequest
        )
        self.assertRaises(ValueError, check.payload_list, [], FetchRequest)
        self.assertRaises(
            ValueError, check.payload_list, [FetchRequest("t", -1, 0, 1)], FetchRequest
        )
        self.assertRaises(
            ValueError,
            check.payload_list,
            [FetchRequest("t", 0, 0, 1), FetchRequest("t", 0, 5, 1)],
            FetchRequest,
        )
