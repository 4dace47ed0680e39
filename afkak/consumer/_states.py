"""The lifecycle of a Consumer, as one table of states and transitions.

::

    STOPPED ─start─▶ RUNNING ─shutdown─▶ SHUTTING_DOWN
       ▲  ▲            │  │                 │  │
       │  └───stop─────┘  fail             stop fail
       │                  ▼                 │  ▼
       ├──────stop───── FAILED ◀────────────┼──┘
       └────────────────────────────────────┘

FAILED is where an error that cannot be retried left the consumer: it is
halted and ``start()``'s Deferred has failed, but, as in afkak 21.5, the
application still calls ``stop()`` once (it returns the last processed
offset); only a second ``stop()`` raises ``RestopError``.  A failed consumer
may be started again (a ConsumerGroup restarts one a rebalance stopped).
"""

from __future__ import annotations

import enum

from afkak._transitions import TransitionTable


class ConsumerState(enum.Enum):
    STOPPED = "stopped"
    RUNNING = "running"
    SHUTTING_DOWN = "shutting down"
    FAILED = "failed"


class ConsumerEvent(enum.Enum):
    START = "start"
    SHUTDOWN = "shutdown"
    STOP = "stop"
    FAIL = "fail"


S, E = ConsumerState, ConsumerEvent

TRANSITIONS: dict[tuple[ConsumerState, ConsumerEvent], ConsumerState] = {
    (S.STOPPED, E.START): S.RUNNING,
    (S.FAILED, E.START): S.RUNNING,
    (S.RUNNING, E.SHUTDOWN): S.SHUTTING_DOWN,
    (S.RUNNING, E.STOP): S.STOPPED,
    (S.SHUTTING_DOWN, E.STOP): S.STOPPED,
    (S.FAILED, E.STOP): S.STOPPED,
    (S.RUNNING, E.FAIL): S.FAILED,
    (S.SHUTTING_DOWN, E.FAIL): S.FAILED,
}

# An error after the consumer stopped or failed changes nothing.
TABLE = TransitionTable(TRANSITIONS, ignored=[(S.STOPPED, E.FAIL), (S.FAILED, E.FAIL)])
