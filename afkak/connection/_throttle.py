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

from afkak.protocol import messages as m

CLIENT_THROTTLED_FROM: dict[int, int] = {
    m.ProduceRequest.API_KEY: 6,
    m.FetchRequest.API_KEY: 8,
    m.ListOffsetsRequest.API_KEY: 3,
    m.MetadataRequest.API_KEY: 6,
    m.OffsetCommitRequest.API_KEY: 4,
    m.OffsetFetchRequest.API_KEY: 4,
    m.FindCoordinatorRequest.API_KEY: 2,
    m.JoinGroupRequest.API_KEY: 3,
    m.HeartbeatRequest.API_KEY: 2,
    m.LeaveGroupRequest.API_KEY: 2,
    m.SyncGroupRequest.API_KEY: 2,
    m.DescribeGroupsRequest.API_KEY: 2,
    m.ListGroupsRequest.API_KEY: 2,
    m.ApiVersionsRequest.API_KEY: 2,
    m.CreateTopicsRequest.API_KEY: 3,
    m.DeleteTopicsRequest.API_KEY: 2,
    m.DeleteRecordsRequest.API_KEY: 1,
    m.InitProducerIdRequest.API_KEY: 1,
    m.OffsetForLeaderEpochRequest.API_KEY: 3,
    m.AddPartitionsToTxnRequest.API_KEY: 1,
    m.AddOffsetsToTxnRequest.API_KEY: 1,
    m.EndTxnRequest.API_KEY: 1,
    m.TxnOffsetCommitRequest.API_KEY: 1,
    m.DescribeAclsRequest.API_KEY: 1,
    m.CreateAclsRequest.API_KEY: 1,
    m.DeleteAclsRequest.API_KEY: 1,
    m.DescribeConfigsRequest.API_KEY: 2,
    m.AlterConfigsRequest.API_KEY: 1,
    m.AlterReplicaLogDirsRequest.API_KEY: 1,
    m.DescribeLogDirsRequest.API_KEY: 1,
    m.CreatePartitionsRequest.API_KEY: 1,
    m.DeleteGroupsRequest.API_KEY: 1,
}


def client_waits(request_class: Any, version: int) -> bool:
    """Whether a throttled response to this request means the client must hold its next ones."""
    return version >= CLIENT_THROTTLED_FROM.get(request_class.API_KEY, 0)
