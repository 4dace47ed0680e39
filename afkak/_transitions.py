"""One shape for afkak's state machines: a table of transitions and the inputs each state ignores.

A state machine here is two enums and a :class:`TransitionTable`: the
connection (:mod:`afkak.connection._lifecycle`), the group member
(:mod:`afkak.group._states`) and the fake cluster's group coordinator
(:mod:`afkak.testing._group_state`).  As in Twisted's ``ClientService``, an
input that means nothing in some state is declared there (``ignored``), so
callers fire inputs without guarding them; any other input the table lacks
is a bug in the caller and raises.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)


class TransitionTable(Generic[S, E]):
    """``(state, input) -> next state``, and the ``(state, input)`` pairs that do nothing.

    :raises ValueError: a pair is both a transition and ignored.
    """

    def __init__(
        self, transitions: Mapping[tuple[S, E], S], ignored: Iterable[tuple[S, E]] = ()
    ) -> None:
        self.transitions = dict(transitions)
        self.ignored = frozenset(ignored)
        both = self.ignored & self.transitions.keys()
        if both:
            raise ValueError(f"both a transition and ignored: {sorted(map(str, both))}")

    def next(self, state: S, event: E) -> S | None:
        """The state *event* leads to from *state*; None for an input *state* ignores.

        :raises RuntimeError: the table has no such transition (a bug in the caller).
        """
        new = self.transitions.get((state, event))
        if new is None and (state, event) not in self.ignored:
            raise RuntimeError(f"no transition from {state.name} on {event.name}")
        return new
