"""What a group member does about each coordinator error, as Kafka's Java consumer does.

One table per API; an error code missing from a table is fatal (raised to
the application, as the Java consumer's ``poll`` would).
"""

from __future__ import annotations

import enum

from afkak._broker_errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedInstanceId,
    IllegalGeneration,
    MemberIdRequired,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
    error_code,
)

COORDINATOR_LOAD_IN_PROGRESS = error_code(CoordinatorLoadInProgress)
COORDINATOR_NOT_AVAILABLE = error_code(CoordinatorNotAvailable)
NOT_COORDINATOR = error_code(NotCoordinator)
ILLEGAL_GENERATION = error_code(IllegalGeneration)
UNKNOWN_MEMBER_ID = error_code(UnknownMemberId)
REBALANCE_IN_PROGRESS = error_code(RebalanceInProgress)
MEMBER_ID_REQUIRED = error_code(MemberIdRequired)
FENCED_INSTANCE_ID = error_code(FencedInstanceId)


class Reaction(enum.Enum):
    DONE = "success"
    RETRY = "send again at once (JoinGroup: with the member id given)"
    BACKOFF = "back off, then send again (SyncGroup: then join again)"
    REJOIN = "join the group again"
    FENCED = "the member's generation is over: partitions lost"
    IGNORE = "nothing: the next heartbeat tries again"
    FATAL = "stop, failing with the error"


R = Reaction
_COORDINATOR_MOVING = {
    COORDINATOR_LOAD_IN_PROGRESS: R.BACKOFF,
    COORDINATOR_NOT_AVAILABLE: R.BACKOFF,
    NOT_COORDINATOR: R.BACKOFF,
}
_FENCED = {UNKNOWN_MEMBER_ID: R.FENCED, ILLEGAL_GENERATION: R.FENCED}

JOIN_GROUP: dict[int, Reaction] = {
    0: R.DONE,
    MEMBER_ID_REQUIRED: R.RETRY,
    REBALANCE_IN_PROGRESS: R.BACKOFF,
    **_COORDINATOR_MOVING,
    **_FENCED,
}
SYNC_GROUP: dict[int, Reaction] = {
    0: R.DONE,
    REBALANCE_IN_PROGRESS: R.REJOIN,
    **_COORDINATOR_MOVING,
    **_FENCED,
}
HEARTBEAT: dict[int, Reaction] = {
    0: R.DONE,
    REBALANCE_IN_PROGRESS: R.REJOIN,
    **{code: R.IGNORE for code in _COORDINATOR_MOVING},
    **_FENCED,
}


def react(table: dict[int, Reaction], error_code: int) -> Reaction:
    return table.get(error_code, Reaction.FATAL)
