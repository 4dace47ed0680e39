"""afkak.records.gc_paused: the collector is off inside, as it was after."""

from __future__ import annotations

import gc

from twisted.trial.unittest import SynchronousTestCase

from afkak.records import gc_paused


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
