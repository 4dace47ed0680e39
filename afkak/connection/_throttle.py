"""Broker throttling (KIP-219): how long a response tells the client to stay quiet.

Since Kafka 2.0 a broker over a client's quota answers at once with
``throttle_time_ms`` and mutes the connection; the client must send nothing
more to it until that time has passed.  Older request versions were throttled
by the broker delaying its answer, so a client that waited too would wait
twice: :data:`CLIENT_THROTTLED_FROM` holds the first version of each API that
KIP-219 moved to client-side throttling (as Java's
``AbstractResponse.shouldClientThrottle``); APIs born after 2.0 are throttled
client-side at every version.
"""

from __future__ import annotations

from typing import Any

from afkak.protocol.messages import API_KEYS

_THROTTLED_FROM_BY_NAME = {
    "ProduceRequest": 6,
    "FetchRequest": 8,
    "ListOffsetsRequest": 3,
    "MetadataRequest": 6,
    "OffsetCommitRequest": 4,
    "OffsetFetchRequest": 4,
    "FindCoordinatorRequest": 2,
    "JoinGroupRequest": 3,
    "HeartbeatRequest": 2,
    "LeaveGroupRequest": 2,
    "SyncGroupRequest": 2,
    "DescribeGroupsRequest": 2,
    "ListGroupsRequest": 2,
    "ApiVersionsRequest": 2,
    "CreateTopicsRequest": 3,
    "DeleteTopicsRequest": 2,
    "DeleteRecordsRequest": 1,
    "InitProducerIdRequest": 1,
    "OffsetForLeaderEpochRequest": 3,
    "AddPartitionsToTxnRequest": 1,
    "AddOffsetsToTxnRequest": 1,
    "EndTxnRequest": 1,
    "TxnOffsetCommitRequest": 1,
    "DescribeAclsRequest": 1,
    "CreateAclsRequest": 1,
    "DeleteAclsRequest": 1,
    "DescribeConfigsRequest": 2,
    "AlterConfigsRequest": 1,
    "AlterReplicaLogDirsRequest": 1,
    "DescribeLogDirsRequest": 1,
    "CreatePartitionsRequest": 1,
    "DeleteGroupsRequest": 1,
}
#: By API key; built from names so that importing this module imports no request's module.
CLIENT_THROTTLED_FROM: dict[int, int] = {
    API_KEYS[name]: version for name, version in _THROTTLED_FROM_BY_NAME.items()
}


def client_waits(request_class: Any, version: int) -> bool:
    """Whether a throttled response to this request means the client must hold its next ones."""
    return version >= CLIENT_THROTTLED_FROM.get(request_class.API_KEY, 0)
