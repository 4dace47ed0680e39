"""What a group member does about each coordinator error, as Kafka's Java consumer does.

One table per API; an error code missing from a table is fatal (raised to
the application, as the Java consumer's ``poll`` would).
"""

from __future__ import annotations

import enum

from afkak._broker_errors import (
    ErrorCode,
)


class Reaction(enum.Enum):
    DONE = "success"
    RETRY = "send again at once (JoinGroup: with the member id given)"
    BACKOFF = "back off, then send again (SyncGroup: then join again)"
    REJOIN = "join the group again"
    FENCED = "the member's generation is over: partitions lost"
    IGNORE = "nothing: the next heartbeat tries again"
    FATAL = "stop, failing with the error"


R = Reaction
_COORDINATOR_MOVING: dict[int, Reaction] = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: R.BACKOFF,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: R.BACKOFF,
    ErrorCode.NOT_COORDINATOR: R.BACKOFF,
}
_FENCED: dict[int, Reaction] = {
    ErrorCode.UNKNOWN_MEMBER_ID: R.FENCED,
    ErrorCode.ILLEGAL_GENERATION: R.FENCED,
}

JOIN_GROUP: dict[int, Reaction] = {
    ErrorCode.NONE: R.DONE,
    ErrorCode.MEMBER_ID_REQUIRED: R.RETRY,
    ErrorCode.REBALANCE_IN_PROGRESS: R.BACKOFF,
    **_COORDINATOR_MOVING,
    **_FENCED,
}
SYNC_GROUP: dict[int, Reaction] = {
    ErrorCode.NONE: R.DONE,
    ErrorCode.REBALANCE_IN_PROGRESS: R.REJOIN,
    **_COORDINATOR_MOVING,
    **_FENCED,
}
HEARTBEAT: dict[int, Reaction] = {
    ErrorCode.NONE: R.DONE,
    ErrorCode.REBALANCE_IN_PROGRESS: R.REJOIN,
    **{code: R.IGNORE for code in _COORDINATOR_MOVING},
    **_FENCED,
}


def react(table: dict[int, Reaction], error_code: int) -> Reaction:
    return table.get(error_code, Reaction.FATAL)


#: KIP-848's ConsumerGroupHeartbeat, as Java's ``ConsumerHeartbeatRequestManager``.
CONSUMER_GROUP_HEARTBEAT: dict[int, Reaction] = {
    ErrorCode.NONE: R.DONE,
    **_COORDINATOR_MOVING,
    ErrorCode.UNKNOWN_MEMBER_ID: R.FENCED,
    ErrorCode.FENCED_MEMBER_EPOCH: R.FENCED,
}

#: KIP-932's ShareGroupHeartbeat, as Java's ``ShareHeartbeatRequestManager``.
SHARE_GROUP_HEARTBEAT = CONSUMER_GROUP_HEARTBEAT
