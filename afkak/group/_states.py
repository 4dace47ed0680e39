"""The lifecycle of a group member, as one table of states and transitions.

::

    STOPPED ─start─▶ UNJOINED ─join─▶ PREPARING ─prepared─▶ JOINING ─joined─▶ SYNCING
                        ▲                 ▲  │                 │                 │
                        │                 │  too_slow        rejoin         synced│rejoin
                      fenced           rejoin ▼                ▼                 ▼
                        │                 │ UNJOINED        PREPARING         STABLE/PREPARING
                        └──── (PREPARING, JOINING, SYNCING, STABLE) ──fenced──▶ UNJOINED

    every state except STOPPED ──stop──▶ LEAVING ──left──▶ STOPPED
    every state except STOPPED ──fail──▶ STOPPED

PREPARING gives up partitions before (re)joining: all of them when rebalancing
eagerly, those that must move when rebalancing cooperatively; it runs the
revocation callbacks and commits.  If that outlasts the rebalance timeout
(``too_slow``) the member leaves the group and joins again as a new member.
JOINING covers JoinGroup (and its MEMBER_ID_REQUIRED second round), SYNCING
SyncGroup.  STABLE heartbeats; so does PREPARING while it revokes.
``fenced`` is UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION: the member's partitions
are lost (given up without committing) and it joins again.  ``poll timeout``
(a processor, or a pull-style application, silent for longer than
``max_poll_interval_ms``): the member leaves the group, loses its partitions
and joins again as a new member.  ``fail`` is a
fatal error (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, a processor
error, ...): everything stops and the group's ``start()`` Deferred fails.
"""

from __future__ import annotations

import enum

from afkak._transitions import TransitionTable


class MemberState(enum.Enum):
    STOPPED = "stopped"
    UNJOINED = "unjoined"
    PREPARING = "preparing"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    LEAVING = "leaving"


class MemberEvent(enum.Enum):
    START = "start"
    JOIN = "join"
    PREPARED = "prepared"
    JOINED = "joined"
    SYNCED = "synced"
    REJOIN = "rejoin"
    TOO_SLOW = "too slow"
    FENCED = "fenced"
    POLL_TIMEOUT = "poll timeout"
    STOP = "stop"
    LEFT = "left"
    FAIL = "fail"


S, E = MemberState, MemberEvent
_IN_GROUP = (S.PREPARING, S.JOINING, S.SYNCING, S.STABLE)

TRANSITIONS: dict[tuple[MemberState, MemberEvent], MemberState] = {
    (S.STOPPED, E.START): S.UNJOINED,
    (S.UNJOINED, E.JOIN): S.PREPARING,
    (S.PREPARING, E.PREPARED): S.JOINING,
    (S.PREPARING, E.TOO_SLOW): S.UNJOINED,
    (S.JOINING, E.JOINED): S.SYNCING,
    (S.JOINING, E.REJOIN): S.PREPARING,
    (S.SYNCING, E.SYNCED): S.STABLE,
    (S.SYNCING, E.REJOIN): S.PREPARING,
    (S.STABLE, E.REJOIN): S.PREPARING,
    (S.STABLE, E.POLL_TIMEOUT): S.UNJOINED,
    **{(state, E.FENCED): S.UNJOINED for state in _IN_GROUP},
    **{(state, E.STOP): S.LEAVING for state in S if state not in (S.STOPPED, S.LEAVING)},
    (S.LEAVING, E.LEFT): S.STOPPED,
    **{(state, E.FAIL): S.STOPPED for state in S if state is not S.STOPPED},
}

#: The member ignores no input: each one it gets is a transition.
TABLE = TransitionTable(TRANSITIONS)
