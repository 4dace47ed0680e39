"""One timed call per reactor turn for all of a client's consumers' deliveries.

A delivery decodes the response it took two reactor turns later (see
:mod:`._delivery`).  One ``callLater(0)`` per hop and partition gave the
cyclic GC five objects each (the DelayedCall, its bound methods, its keyword
dict); fifty consumers of twenty partitions in one process promoted thousands
of them to the oldest generation between full collections.  The client
keeps one :class:`Turns` (``client.shared(client_turns)``) that hops every
waiting delivery with one call per turn.
"""

from __future__ import annotations

from typing import Any, Protocol

from twisted.logger import Logger

log = Logger()


class Hopping(Protocol):
    def hop(self) -> None:
        """The reactor turn it waited for has come."""


class Turns:
    """The deliveries waiting for the next reactor turn, called then in the order added."""

    __slots__ = ("_reactor", "_due", "_call")

    def __init__(self, reactor: Any) -> None:
        self._reactor = reactor
        self._due: dict[Hopping, None] = {}
        self._call: Any = None

    def add(self, waiting: Hopping) -> None:
        """Call ``waiting.hop()`` on the next turn (once, however often added)."""
        self._due[waiting] = None
        if self._call is None:
            self._call = self._reactor.callLater(0, self._run)

    def discard(self, waiting: Hopping) -> None:
        """Not call it after all (a no-op unless added)."""
        self._due.pop(waiting, None)
        if not self._due and self._call is not None:
            self._call.cancel()
            self._call = None

    def _run(self) -> None:
        self._call = None
        due, self._due = self._due, {}
        for waiting in due:  # those it adds go to the next turn
            try:
                waiting.hop()
            except Exception:
                log.failure("A delivery's turn failed: {waiting!r}", waiting=waiting)


def client_turns(client: Any) -> Turns:
    """The one :class:`Turns` of *client* (``client.shared(client_turns)``)."""
    return Turns(client.reactor)
