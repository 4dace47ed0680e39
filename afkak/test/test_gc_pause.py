"""afkak.records.gc_pause: gc_paused (the collector is off inside, as it was after), and the
compiled untrack / track_all / reachable."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.records import gc_pause, gc_paused


class GcPausedTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.addCleanup(gc.enable if gc.isenabled() else gc.disable)

    def test_paused_inside_and_restored_after(self) -> None:
        gc.enable()
        with gc_paused():
            self.assertFalse(gc.isenabled())
        self.assertTrue(gc.isenabled())

    def test_restored_when_the_block_raises(self) -> None:
        gc.enable()
        with self.assertRaises(KeyError), gc_paused():
            raise KeyError("x")
        self.assertTrue(gc.isenabled())

    def test_leaves_a_disabled_collector_disabled(self) -> None:
        gc.disable()
        with gc_paused():
            self.assertFalse(gc.isenabled())
        self.assertFalse(gc.isenabled())


class _Holder:
    """An object with a list of its own, as a Deferred has."""

    def __init__(self) -> None:
        self.items: list[Any] = []


class UntrackTests(SynchronousTestCase):
    """untrack / track_all / reachable (compiled record module only)."""

    def setUp(self) -> None:
        if gc_pause.untrack is None:
            raise SkipTest("the compiled record module is not built (or AFKAK_NO_EXTENSIONS)")

    def test_untrack_hides_the_object_and_the_lists_only_it_holds(self) -> None:
        owned, shared = _Holder(), _Holder()
        keep = shared.items
        gc_pause.untrack(owned)
        gc_pause.untrack(shared)
        self.assertEqual((gc.is_tracked(owned), gc.is_tracked(owned.items)), (False, False))
        self.assertEqual((gc.is_tracked(shared), gc.is_tracked(keep)), (False, True))

    def test_track_all_shows_them_again(self) -> None:
        holders = [_Holder(), _Holder()]
        gc_pause.untrack(holders[0])
        gc_pause.track_all(holders)  # the second was never untracked
        self.assertTrue(all(gc.is_tracked(h) and gc.is_tracked(h.items) for h in holders))

    def test_a_cycle_made_while_untracked_is_collected_once_tracked_again(self) -> None:
        holder = _Holder()
        gc_pause.untrack(holder)
        holder.items.append(holder)
        ref = weakref.ref(holder)
        gc_pause.track_all([holder])
        del holder
        gc.collect()
        self.assertIsNone(ref())

    def test_reachable(self) -> None:
        objs = [_Holder() for _ in range(6)]
        for i in range(6):  # (a loop variable would hold the last one)
            gc_pause.untrack(objs[i])
        held = objs[1]
        objs[2].items.append(1)
        ref = weakref.ref(objs[3])
        objs[4] = _Other()
        self.assertEqual(gc_pause.reachable(objs, _Holder, "items"), [1, 2, 3, 4])
        self.assertEqual([gc.is_tracked(o) for o in objs], [False, True, True, True, True, False])
        self.assertEqual(gc_pause.reachable(objs, _Holder, "missing"), list(range(6)))
        self.assertIs(held, objs[1])
        self.assertIs(ref(), objs[3])


class _Other(_Holder):
    """Not exactly the class reachable() is asked about."""
