"""The lifecycle of a broker connection, as one table of states and transitions.

::

    IDLE ──connect──▶ CONNECTING ──connected──▶ NEGOTIATING ──negotiated──▶ AUTHENTICATING
                        ▲     │                      │                           │
                        │  connect_failed         dropped                 authenticated
                      retry    ▼                     ▼                           ▼
                        └─ BACKING_OFF ◀──────────dropped──────────────────── READY
                                 ▲                                             │    ▲
                                 │                                   reauthenticate │
                                 │                                             ▼  authenticated
                                 └──────────────dropped────────────── REAUTHENTICATING

    every state except CLOSED ──close──▶ CLOSED

Declared no-ops (ignored): ``connect`` except when IDLE, ``dropped`` without a
connection, ``reauthenticate`` except when READY, ``close`` when CLOSED;
callers fire them without checking.

NEGOTIATING exchanges ApiVersions; AUTHENTICATING runs the authenticator
(SASL plugs in here) and passes straight through when there is none.  Only
READY writes queued requests: while REAUTHENTICATING (KIP-368: the
session the broker granted is about to end, and the authenticator runs again
on the same TCP connection) requests queue, and READY sends them in order.
``dropped`` covers everything that ends a connection after it was made: the
peer closing it, a response that fails to decode, a failed negotiation or
authentication (or re-authentication), :meth:`disconnect`.
"""

from __future__ import annotations

import enum

from afkak._transitions import TransitionTable


class State(enum.Enum):
    IDLE = "idle"
    CONNECTING = "connecting"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"
    REAUTHENTICATING = "re-authenticating"
    BACKING_OFF = "backing off"
    CLOSED = "closed"


class Event(enum.Enum):
    CONNECT = "connect"
    CONNECTED = "connected"
    CONNECT_FAILED = "connect failed"
    NEGOTIATED = "negotiated"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATE = "reauthenticate"
    DROPPED = "dropped"
    RETRY = "retry"
    CLOSE = "close"


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.IDLE, Event.CONNECT): State.CONNECTING,
    (State.CONNECTING, Event.CONNECTED): State.NEGOTIATING,
    (State.CONNECTING, Event.CONNECT_FAILED): State.BACKING_OFF,
    (State.NEGOTIATING, Event.NEGOTIATED): State.AUTHENTICATING,
    (State.NEGOTIATING, Event.DROPPED): State.BACKING_OFF,
    (State.AUTHENTICATING, Event.AUTHENTICATED): State.READY,
    (State.AUTHENTICATING, Event.DROPPED): State.BACKING_OFF,
    (State.READY, Event.DROPPED): State.BACKING_OFF,
    (State.READY, Event.REAUTHENTICATE): State.REAUTHENTICATING,
    (State.REAUTHENTICATING, Event.AUTHENTICATED): State.READY,
    (State.REAUTHENTICATING, Event.DROPPED): State.BACKING_OFF,
    (State.BACKING_OFF, Event.RETRY): State.CONNECTING,
    **{(state, Event.CLOSE): State.CLOSED for state in State if state is not State.CLOSED},
}

CONNECTED_STATES = frozenset(
    {State.NEGOTIATING, State.AUTHENTICATING, State.READY, State.REAUTHENTICATING}
)
"""States in which a TCP connection is open."""

AUTHENTICATED_STATES = frozenset({State.READY, State.REAUTHENTICATING})
"""States of a connection that was ready: its reading may be paused."""

TABLE = TransitionTable(
    TRANSITIONS,
    ignored=[
        *((state, Event.CONNECT) for state in State if state is not State.IDLE),
        *((state, Event.DROPPED) for state in State if state not in CONNECTED_STATES),
        *((state, Event.REAUTHENTICATE) for state in State if state is not State.READY),
        (State.CLOSED, Event.CLOSE),
    ],
)
