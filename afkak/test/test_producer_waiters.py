"""The Deferreds of waiting sends: what the application sees of them stays Twisted's.

With the compiled record module a send's Deferred waits untracked by the
cyclic GC and is tracked again when its batch settles, and an acknowledged
Deferred that nothing can see (dropped, no callback, no weak reference) is
not fired; without it every one is fired and tracked as usual.  Every test
here that does not name the compiled path runs on both (tools/test.sh runs
the suite with AFKAK_NO_EXTENSIONS=1 too).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import attrs
from twisted.internet.defer import (
    AlreadyCalledError,
    CancelledError,
    Deferred,
    DeferredList,
    ensureDeferred,
    gatherResults,
    setDebugging,
)
from twisted.python.failure import Failure
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.common import CancelledError as AfkakCancelledError, CorruptMessage, ProduceResponse
from afkak.producer import Producer, RecordMetadata, _batch, _waiters
from afkak.producer._deferred import SendDeferred
from afkak.producer._result import record_metadata
from afkak.records import gc_pause

from .test_producer import METADATA, PRODUCE, ProducerTestCase


def _scanned() -> int:
    """How many objects the cyclic GC tracks, once a young collection has untracked
    the tuples of plain values it was yet to look at (up to 700 of them, by chance)."""
    gc.collect(0)
    return len(gc.get_objects())


def _compiled() -> None:
    if gc_pause.untrack is None:
        raise SkipTest("the compiled record module is not built (or AFKAK_NO_EXTENSIONS is set)")


class WaitingSendsTests(ProducerTestCase):
    partitions = 1

    def test_a_waiting_send_is_untracked_until_its_batch_settles(self) -> None:
        _compiled()
        producer = self.producer(linger_ms=10)
        keyed = producer.send_messages("t", b"k", [b"b"])
        d = producer.send_messages("t", None, [b"a"])
        record = producer.send("t", b"c", headers=[("h", b"v")])
        for waiting in (d, keyed, record):
            self.assertFalse(gc.is_tracked(waiting))
        self.assertEqual(self.succeed(d), ProduceResponse("t", 0, 0, 1))
        self.assertEqual(self.succeed(record).offset, 2)
        for settled in (d, keyed):
            self.assertTrue(gc.is_tracked(settled))
        self.assertFalse(gc.is_tracked(record))  # holding nothing tracked: see below

    def test_an_acknowledged_send_held_without_callbacks_stays_untracked(self) -> None:
        """A send()'s Deferred that the application holds without a callback (to
        gather later) fires untracked, holding its untracked RecordMetadata and an
        empty callback list: thousands of them fed the cyclic GC's full collections
        (issue 39's 50 + 50 clients).  Gathered, they give their records."""
        _compiled()
        producer = self.producer(linger_ms=10)
        self.succeed(producer.send("t", b"first"))
        ds = [producer.send("t", b"r") for _ in range(1000)]
        self.succeed(producer.flush())
        self.assertEqual(sum(gc.is_tracked(d) for d in ds), 0)
        results = self.successResultOf(gatherResults(ds))
        self.assertEqual([r.offset for r in results], list(range(1, 1001)))

    def test_a_held_send_is_tracked_again_once_it_holds_what_the_collector_follows(
        self,
    ) -> None:
        """A callback's result the GC tracks, a Failure, a chain or a pause show the
        fired Deferred to the GC again (a cycle through it is then collected); one
        whose callback left its RecordMetadata stays untracked."""
        _compiled()
        producer = self.producer(linger_ms=10)
        ds = [producer.send("t", b"r") for _ in range(6)]
        self.succeed(producer.flush())
        waited_on: Deferred[Any] = Deferred()
        seen: list[Any] = []
        ds[0].addCallback(lambda r: r)
        ds[1].addCallback(lambda r: [r])
        ds[2].pause()
        ds[3].addCallback(lambda r: 1 / 0).addErrback(seen.append)
        ds[4].addCallback(lambda r: waited_on)
        ds[5].addBoth(lambda r: None)
        self.assertEqual([gc.is_tracked(d) for d in ds], [False, True, True, True, True, False])
        ds[2].unpause()
        waited_on.callback("done")
        self.assertEqual(self.successResultOf(ds[4]), "done")
        self.assertEqual(self.successResultOf(ds[1])[0].offset, 1)
        seen[0].trap(ZeroDivisionError)

        class Holder:
            d: Deferred[Any]

        holder = Holder()
        cycle = producer.send("t", b"c")
        self.succeed(producer.flush())
        self.assertFalse(gc.is_tracked(cycle))
        cycle.addCallback(lambda r, held=holder: held)
        holder.d = cycle
        ref = weakref.ref(holder)
        del holder, cycle
        gc.collect()
        self.assertIsNone(ref())

    def test_waiting_sends_add_nothing_the_collector_scans(self) -> None:
        _compiled()
        producer = self.producer(linger_ms=10)
        self.succeed(producer.send_messages("t", None, [b"first"]))  # routed, batch state made
        before = _scanned()
        ds = [producer.send_messages("t", None, [b"v"]) for _ in range(1000)]
        ds += [producer.send("t", b"r") for _ in range(1000)]
        self.assertLess(_scanned() - before, 50)  # not 2 per send
        self.assertEqual(self.succeed(ds[-1]).offset, 2000)

    def test_gathering_waiting_sends_adds_nothing_the_collector_scans(self) -> None:
        """An application gathering its sends before they are acknowledged (issue 39's
        50 + 50 clients gather 4,000 each) gives each a chain entry: three tuples and
        two bound methods, hidden with the waiting Deferred, shown again when its
        batch settles; the gathering then fires with every record."""
        _compiled()
        producer = self.producer(linger_ms=10)
        self.succeed(producer.send("t", b"first"))
        ds = [producer.send("t", b"r") for _ in range(1000)]
        before = _scanned()
        gathered = gatherResults(ds)
        awaited = [d.addBoth(lambda r: r) for d in ds[:10]]
        self.assertLess(_scanned() - before, 50)  # not 5 per send
        entry = ds[0]._callbacks[0]
        self.succeed(producer.flush())
        self.assertTrue(all(gc.is_tracked(o) for o in (entry, entry[0], entry[0][0])))
        results = self.successResultOf(gathered)
        self.assertEqual([r.offset for r in results], list(range(1, 1001)))
        self.assertEqual(self.successResultOf(awaited[9]).offset, 10)

    def test_a_gathering_holds_its_acknowledged_sends_untracked(self) -> None:
        """The ``(True, RecordMetadata)`` pair a gathering stores per send would stay
        tracked until the last send is acknowledged (the pair of an instance of a
        class is never untracked by the GC itself): issue 39's 50 + 50 gatherings
        held 200,000, three full collections' worth.  Untracked, they hold a
        RecordMetadata that the GC does not track either."""
        _compiled()
        producer = self.producer(linger_ms=10)
        self.succeed(producer.send("t", b"first"))
        ds = [producer.send("t", b"r") for _ in range(1000)]
        last: Deferred[Any] = Deferred()
        gathering = DeferredList([*ds, last])
        before = _scanned()
        self.succeed(producer.flush())
        self.assertLess(_scanned() - before, 50)  # not one per send
        self.assertEqual(gathering.resultList[999][1].offset, 1000)
        last.callback("done")
        results = self.successResultOf(gathering)
        self.assertEqual([r.offset for _, r in results[:-1]], list(range(1, 1001)))
        self.assertEqual(results[-1], (True, "done"))
        acknowledged = [producer.send("t", b"r") for _ in range(1000)]
        self.succeed(producer.flush())
        before = _scanned()
        late = DeferredList(acknowledged)  # gathered once acknowledged: the pairs at once
        self.assertLess(_scanned() - before, 50)
        self.assertEqual(self.successResultOf(late)[-1][1].offset, 2000)

    def test_an_entry_left_on_a_waiting_send_is_collected_through_a_cycle(self) -> None:
        """A gathering of sends that is dropped, its sends acknowledged, leaves no cycle
        the collector cannot see."""
        _compiled()
        producer = self.producer(linger_ms=10)
        self.succeed(producer.send("t", b"first"))

        class Holder:
            d: Deferred[Any]

        holder = Holder()
        d = producer.send("t", b"c")
        d.addCallback(lambda r, held=holder: held)
        holder.d = d
        ref = weakref.ref(holder)
        del holder, d
        self.succeed(producer.flush())
        gc.collect()
        self.assertIsNone(ref())

    def test_sends_waiting_for_metadata_add_nothing_the_collector_scans(self) -> None:
        """A producer's first sends wait for their topic's metadata (thousands of them
        in issue 39's 50 + 50 clients): untracked, as in their batch later."""
        _compiled()
        producer = self.producer(linger_ms=10)
        self.cluster.delay(METADATA, 1.0)
        first = producer.send("t", b"first")
        self.clock.advance(0.01)
        before = _scanned()
        ds = [producer.send("t", b"r") for _ in range(1000)]
        self.assertLess(_scanned() - before, 50)  # not 4 per send
        messages = producer.send_messages("t", None, [b"v"])  # (its list is the caller's)
        self.assertFalse(gc.is_tracked(messages))
        self.assertEqual(self.succeed(first).offset, 0)
        self.assertEqual(self.succeed(ds[-1]).offset, 1000)
        self.assertEqual(self.succeed(messages).offset, 1001)

    def test_a_send_refused_while_it_waits_is_tracked_again(self) -> None:
        _compiled()
        producer = Producer(self.client)
        self.cluster.delay(METADATA, 1.0)
        d = producer.send("t", b"a")
        self.clock.advance(0.01)
        self.assertFalse(gc.is_tracked(d))
        self.successResultOf(producer.stop())
        self.assertTrue(gc.is_tracked(d))
        self.failureResultOf(d, AfkakCancelledError)
        self.successResultOf(self.client.close())
        self.clock.advance(1.0)

    def test_record_metadata_is_never_scanned_by_the_collector(self) -> None:
        """What send() fires with holds a str and ints: gathered by the thousand, it
        would only feed the cyclic GC's full collections (issue 28)."""
        _compiled()
        producer = self.producer(linger_ms=10)
        ds = [producer.send("t", b"r") for _ in range(3)]
        ds.append(producer.send("t", b"h", headers=[("h", b"v")]))
        results = [self.succeed(d) for d in ds]
        self.assertEqual([r.offset for r in results], [0, 1, 2, 3])
        self.assertEqual([gc.is_tracked(r) for r in results], [False] * 4)

    def test_record_metadata_built_fast_is_the_attrs_instance(self) -> None:
        """What send() fires with is built by setting its slots (issue 28): equal,
        hashed, shown and frozen exactly as one built by its class."""
        fast = record_metadata("t", 1, 2, 3)
        made = RecordMetadata("t", 1, 2, 3)
        self.assertIs(type(fast), RecordMetadata)
        self.assertEqual((fast, hash(fast), repr(fast)), (made, hash(made), repr(made)))
        self.assertEqual(attrs.asdict(fast), attrs.asdict(made))
        self.assertRaises(attrs.exceptions.FrozenInstanceError, setattr, fast, "offset", 9)
        self.assertEqual(
            [a.name for a in attrs.fields(RecordMetadata)],
            ["topic", "partition", "offset", "timestamp"],  # every field is set
        )

    def test_one_batch_of_record_sends_keyed_and_not(self) -> None:
        """send() appends a record to an open batch itself (issue 28): unkeyed
        records before and after keyed ones, an explicit partition, a
        send_messages call and headers in between keep their keys, values,
        timestamps and offsets."""
        producer = self.producer(linger_ms=10)
        ds = [
            producer.send("t", b"a"),
            producer.send("t", b"b", timestamp=5),
            producer.send("t", b"c", key=b"k"),
            producer.send("t", b"d"),
            producer.send("t", b"e", key=b"l", partition=0),
            producer.send_messages("t", None, [b"f"]),
            producer.send("t", b"g", headers=[("x", b"1")]),
            producer.send("t", None, key=b"m"),
        ]
        results = [self.succeed(d) for d in ds]
        self.assertEqual([r.offset for r in results], list(range(8)))
        self.assertEqual(results[1].timestamp, 5)
        [batch] = self.stored_batches("t", 0)
        self.assertEqual(
            [(r.key, r.value, r.headers) for r in batch],
            [(None, b"a", ()), (None, b"b", ()), (b"k", b"c", ()), (None, b"d", ())]
            + [(b"l", b"e", ()), (None, b"f", ()), (None, b"g", (("x", b"1"),))]
            + [(b"m", None, ())],
        )
        self.assertEqual([r.timestamp for r in batch][1], 5)

    def test_an_acknowledged_batch_fires_with_the_collector_paused(self) -> None:
        """Its sends' callbacks run with the cyclic GC off (one collection after the
        batch, not several during it: issue 28); it is on again afterwards, and
        stays off if the application had turned it off."""
        producer = self.producer(linger_ms=10)
        seen: list[bool] = []
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                ds = [producer.send("t", b"r"), producer.send_messages("t", None, [b"m"])]
                for d in ds:
                    d.addCallback(lambda _: seen.append(gc.isenabled()))
                self.succeed(ds[-1])
                self.assertEqual(gc.isenabled(), enabled)
            finally:
                gc.enable()
        self.assertEqual(seen, [False] * 4)

    def test_a_lone_send_fires_without_pausing_the_collector(self) -> None:
        """An acknowledged batch of one send (an awaited send's) has nothing to pause
        the collector for: the pause's calls are saved (issue 39)."""
        producer = self.producer(linger_ms=10)
        seen: list[bool] = []
        for send in (
            lambda: producer.send("t", b"r"),
            lambda: producer.send_messages("t", None, [b"m"]),
        ):
            d = send()
            d.addCallback(lambda _: seen.append(gc.isenabled()))
            self.succeed(d)
        self.assertEqual(seen, [True, True])

    def test_dropped_sends_with_callbacks_fire(self) -> None:
        producer = self.producer(linger_ms=10)
        seen: list[Any] = []
        producer.send_messages("t", None, [b"a"]).addCallback(lambda r: seen.append(("cb", r)))
        producer.send_messages("t", None, [b"b"]).addBoth(lambda r: seen.append(("both", r)))
        producer.send_messages("t", None, [b"c"]).addCallbacks(
            lambda r: seen.append(("cbs", r)), seen.append
        )
        chained: Deferred[Any] = Deferred()
        chained.addCallback(lambda r: seen.append(("chained", r)))
        producer.send_messages("t", None, [b"d"]).chainDeferred(chained)
        del chained

        async def waits() -> None:
            seen.append(("await", await producer.send_messages("t", None, [b"e"])))

        ensureDeferred(waits())
        producer.send("t", b"f").addCallback(lambda r: seen.append(("send", r)))
        self.succeed(producer.flush())
        self.assertEqual(
            seen[:5],
            [
                (kind, ProduceResponse("t", 0, 0, offset))
                for offset, kind in enumerate(["cb", "both", "cbs", "chained", "await"])
            ],
        )
        self.assertEqual(seen[5][0], "send")
        self.assertEqual((seen[5][1].partition, seen[5][1].offset), (0, 5))

    def test_the_compiled_loop_fires_as_the_reference_does(self) -> None:
        """An acknowledged batch's send() Deferreds fired in one compiled loop (issue 28):
        the same ones as the Python loop fires (held, with callbacks, weakly referred
        to; not dropped ones), with the same RecordMetadata."""
        _compiled()
        outcomes = []
        for compiled in (True, False):
            if not compiled:
                self.patch(_batch, "compiled_fire_records", None)
            producer = self.producer(linger_ms=10)
            seen: list[Any] = []
            held = [producer.send("t", b"a"), producer.send("t", b"b", timestamp=7)]
            producer.send("t", b"c")  # dropped: never fired
            producer.send("t", b"d").addCallback(seen.append)
            ref = weakref.ref(producer.send("t", b"e"))
            self.succeed(producer.flush())
            results = [self.successResultOf(d) for d in held] + seen
            base = results[0].offset
            outcomes.append(
                (
                    [(r.topic, r.partition, r.offset - base) for r in results],
                    results[1].timestamp,
                    ref() is None,
                    [type(r) for r in results],
                )
            )
        self.assertEqual(
            outcomes[0], ([("t", 0, 0), ("t", 0, 1), ("t", 0, 3)], 7, True, [RecordMetadata] * 3)
        )
        self.assertEqual(outcomes[0], outcomes[1])

    def test_a_send_seen_through_a_weak_reference_fires(self) -> None:
        producer = self.producer(linger_ms=10)
        ref = weakref.ref(producer.send_messages("t", None, [b"a"]))
        seen: list[Any] = []

        def look(result: Any) -> None:
            # The first send's Deferred is alive while its batch fires.
            first = ref()
            assert first is not None
            seen.append(self.successResultOf(first))

        producer.send_messages("t", None, [b"b"]).addCallback(look)
        self.succeed(producer.flush())
        self.assertEqual(seen, [ProduceResponse("t", 0, 0, 0)])

    def test_a_cancelled_send_is_tracked_again_when_its_batch_settles(self) -> None:
        _compiled()
        producer = self.producer(linger_ms=10)
        d = producer.send_messages("t", None, [b"a"])
        d.cancel()
        self.assertFalse(gc.is_tracked(d))
        self.succeed(producer.flush())
        self.assertTrue(gc.is_tracked(d))
        self.failureResultOf(d)
        self.assertEqual(self.values(), [b"a"])

    def test_failed_sends_fail_every_deferred_even_dropped_ones(self) -> None:
        producer = self.producer(linger_ms=10, max_req_attempts=1)
        self.cluster.fail_next(PRODUCE, CorruptMessage)
        producer.send_messages("t", None, [b"a"])  # dropped: its failure is unhandled
        producer.send("t", b"b")  # dropped too
        held = producer.send_messages("t", None, [b"c"])
        self.run_until(held).trap(CorruptMessage)
        gc.collect()
        self.assertEqual(len(self.flushLoggedErrors(CorruptMessage)), 2)

    def test_one_batch_mixing_every_kind_of_send(self) -> None:
        """One-value sends (appended by send_messages itself) before and after keyed,
        multi-value and header-carrying ones, in one batch: each Deferred's offset and
        each record stay right."""
        producer = self.producer(linger_ms=10)
        ds = [
            producer.send_messages("t", None, [b"a"]),
            producer.send_messages("t", None, [b"b"]),
            producer.send_messages("t", b"k", [b"c"]),
            producer.send_messages("t", None, [b"d"]),
            producer.send_messages("t", None, [b"e", b"f"]),
            producer.send_messages("t", None, [b"g"]),
            producer.send("t", b"h", headers=[("x", b"1")]),
            producer.send_messages("t", None, [b"i"]),
        ]
        offsets = [self.succeed(d).offset for d in ds]
        self.assertEqual(offsets, [0, 1, 2, 3, 4, 6, 7, 8])
        [batch] = self.stored_batches("t", 0)
        self.assertEqual(
            [(r.key, r.value, r.headers) for r in batch],
            [(None, b"a", ()), (None, b"b", ()), (b"k", b"c", ())]
            + [(None, v, ()) for v in (b"d", b"e", b"f", b"g")]
            + [(None, b"h", (("x", b"1"),)), (None, b"i", ())],
        )


class ToFireTests(SynchronousTestCase):
    """_waiters.to_fire: which acknowledged Deferreds are fired."""

    def test_the_callback_list_of_this_twisted_is_found(self) -> None:
        self.assertIn(_waiters.CALLBACK_LIST, ("_callbacks", "callbacks"))

    def test_leaves_out_only_what_nothing_can_see(self) -> None:
        _compiled()
        waiters: list[Deferred[Any]] = [SendDeferred() for _ in range(5)]
        for i in range(5):  # (a loop variable would hold the last one)
            gc_pause.untrack(waiters[i])
        held = waiters[1]
        waiters[2].addCallback(lambda r: r)
        ref = weakref.ref(waiters[3])
        self.assertEqual(list(_waiters.to_fire(waiters)), [1, 2, 3])
        self.assertEqual([gc.is_tracked(d) for d in waiters], [False, True, True, True, False])
        self.assertIs(ref(), waiters[3])
        self.assertIs(held, waiters[1])

    def test_fires_any_other_deferred(self) -> None:
        """Only a SendDeferred may be left unfired: the shortcut is known for it alone."""
        _compiled()
        waiters: list[Deferred[Any]] = [Deferred(), SendDeferred()]
        for i in range(2):
            gc_pause.untrack(waiters[i])
        self.assertEqual(list(_waiters.to_fire(waiters)), [0])

    def test_fires_everything_in_debug_mode(self) -> None:
        self.addCleanup(setDebugging, False)
        setDebugging(True)
        waiters: list[Deferred[Any]] = [Deferred() for _ in range(3)]
        self.assertEqual(list(_waiters.to_fire(waiters)), [0, 1, 2])

    def test_fires_everything_without_the_compiled_module(self) -> None:
        self.patch(_waiters, "reachable", None)
        waiters: list[Deferred[Any]] = [Deferred() for _ in range(3)]
        self.assertEqual(list(_waiters.to_fire(waiters)), [0, 1, 2])

    def test_fail_all_fails_each(self) -> None:
        waiters: list[Deferred[Any]] = [Deferred() for _ in range(2)]
        _waiters.fail_all(waiters, Failure(CorruptMessage("x")))
        for d in waiters:
            self.failureResultOf(d, CorruptMessage)


class FireTests(SynchronousTestCase):
    """_waiters.fire: d.callback(), or for a Deferred without callbacks the same state set
    directly (issue 28)."""

    def test_this_twisted_is_seen_to_allow_recording(self) -> None:
        self.assertTrue(_waiters._QUIET)

    def test_a_deferred_without_callbacks_ends_as_callback_leaves_it(self) -> None:
        fired: Deferred[Any] = Deferred()
        fired.callback("r")
        recorded: Deferred[Any] = Deferred(lambda d: None)
        _waiters.fire(recorded, "r")
        self.assertEqual(vars(recorded), vars(fired))
        self.assertEqual(self.successResultOf(gatherResults([recorded])), ["r"])

    def test_callbacks_run(self) -> None:
        seen: list[Any] = []
        d: Deferred[Any] = Deferred()
        d.addCallback(seen.append)
        _waiters.fire(d, "r")
        self.assertEqual(seen, ["r"])

    def test_a_cancelled_deferred_stays_cancelled(self) -> None:
        d: Deferred[Any] = Deferred()
        d.cancel()
        _waiters.fire(d, "r")  # no AlreadyCalledError: Twisted's callback() ignores it
        self.failureResultOf(d, CancelledError)

    def test_fired_twice_raises(self) -> None:
        d: Deferred[Any] = Deferred()
        _waiters.fire(d, "r")
        self.assertRaises(AlreadyCalledError, _waiters.fire, d, "again")

    def test_a_paused_deferred_is_left_to_twisted(self) -> None:
        d: Deferred[Any] = Deferred()
        d.pause()
        _waiters.fire(d, "r")
        seen: list[Any] = []
        d.addCallback(seen.append)
        self.assertEqual(seen, [])
        d.unpause()
        self.assertEqual(seen, ["r"])

    def test_debug_mode_uses_callback(self) -> None:
        setDebugging(True)
        self.addCleanup(setDebugging, False)
        d: Deferred[Any] = Deferred()
        _waiters.fire(d, "r")
        self.assertIsNotNone(d._debugInfo)
        self.assertEqual(self.successResultOf(d), "r")
