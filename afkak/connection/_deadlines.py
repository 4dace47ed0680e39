"""One timer per broker connection for its requests' timeouts.

A ``DelayedCall`` per request costs its creation, its place in the reactor's
heap and its cancellation when the answer comes, about every request; Kafka's
Java client instead checks the expiry of its requests in flight as it polls.
Here requests are kept in the order they were made, one lane per timeout
value: each lane's deadlines are in order (the reactor's clock moves forward),
so the next request to expire heads one of a few lanes, and one timer is kept
at or before the earliest head's deadline.  An answered request leaves its lane
when it heads it; one that failed otherwise (cancelled, its connection lost)
is dropped when it comes to the head.  The timer fires at the earliest
deadline, expires what is due by then and moves on to the next deadline, so
each request times out when its own ``DelayedCall`` would have fired.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IDelayedCall

from afkak.connection._request import PendingRequest


class RequestDeadlines:
    """The deadlines of one connection's requests, and the timer that expires them.

    :param reactor: provides ``seconds()`` and ``callLater`` (IReactorTime).
    :param expire: called with each request whose deadline has come (and that
        has not settled meanwhile), earliest deadline first.
    """

    def __init__(self, reactor: Any, expire: Callable[[PendingRequest], None]) -> None:
        self._reactor = reactor
        self._expire = expire
        self._lanes: dict[float, deque[PendingRequest]] = {}
        self._timer: IDelayedCall | None = None
        self._at = math.inf

    def add(self, request: PendingRequest, timeout: float) -> None:
        """Time *request* out *timeout* seconds from now unless it settles first."""
        deadline = request.deadline = self._reactor.seconds() + timeout
        request.timeout = timeout
        lane = self._lanes.get(timeout)
        if lane is None:
            lane = self._lanes[timeout] = deque()
        else:
            while lane and lane[0].deferred.called:  # settled otherwise: leave
                lane.popleft()
        lane.append(request)
        if deadline < self._at:
            self._arm(deadline)

    def answered(self, request: PendingRequest) -> None:
        """*request* is answered: it leaves its lane if it heads it (answers come in order)."""
        lane = self._lanes.get(request.timeout)
        if lane and lane[0] is request:
            lane.popleft()

    def stop(self) -> None:
        """Forget every request and cancel the timer (the connection is closed)."""
        self._lanes.clear()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self._at = math.inf

    def _arm(self, deadline: float) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        now = self._reactor.seconds()
        delay = max(deadline - now, 0.0)
        while delay > 0 and now + delay > deadline:  # never past it by rounding
            delay = math.nextafter(delay, 0.0)
        self._at = deadline
        self._timer = self._reactor.callLater(delay, self._fired)

    def _fired(self) -> None:
        self._timer = None
        self._at = math.inf
        now = self._reactor.seconds()
        due: list[PendingRequest] = []
        for timeout, lane in list(self._lanes.items()):
            while lane and (lane[0].deferred.called or lane[0].deadline <= now):
                request = lane.popleft()
                if not request.deferred.called:
                    due.append(request)
            if not lane:
                del self._lanes[timeout]
        due.sort(key=_deadline)
        for request in due:
            if not request.deferred.called:  # not failed by an earlier one's expiry
                self._expire(request)
        heads = [lane[0].deadline for lane in self._lanes.values() if lane]
        if heads and min(heads) < self._at:
            self._arm(min(heads))


def _deadline(request: PendingRequest) -> float:
    return request.deadline
