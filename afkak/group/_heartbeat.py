"""The heartbeat timer: one beat at a time, every interval, while a member is in a generation.

Heartbeats run on the reactor whatever the processors are doing, so a slow
processor never costs a member its session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred


class HeartbeatTimer:
    """Calls ``beat()`` *interval* seconds after the previous beat was answered.

    ``beat`` sends a heartbeat and returns a Deferred that fires once its
    answer is handled.
    """

    def __init__(self, reactor: Any, interval: float, beat: Callable[[], Deferred[Any]]) -> None:
        self.reactor = reactor
        self.interval = interval
        self._beat = beat
        self._call: Any = None
        self._in_flight = False
        self.running = False

    def run(self) -> None:
        """Start beating (no effect if already running)."""
        self.running = True
        self._schedule()

    def stop(self) -> None:
        self.running = False
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _schedule(self) -> None:
        if self.running and not self._in_flight and (self._call is None or not self._call.active()):
            self._call = self.reactor.callLater(self.interval, self._fire)

    def _fire(self) -> None:
        self._call = None
        self._in_flight = True
        self._beat().addBoth(self._answered)

    def _answered(self, _: Any) -> None:
        self._in_flight = False
        self._schedule()
