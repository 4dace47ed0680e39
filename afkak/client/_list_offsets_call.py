"""ListOffsets request (api key 2) for afkak's ``OffsetRequest`` payloads.

Versions 1+ answer a single offset per partition (``max_offsets`` is gone), so
each :class:`OffsetResponse` carries a 1-tuple of offsets.  The admin layer
extends the call to also report each offset's timestamp and leader epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from afkak.common import OffsetRequest, OffsetResponse
from afkak.protocol.messages import ListOffsetsRequest
from afkak.records.aborted import READ_UNCOMMITTED

from ._call import VersionedCall, group_by_topic

CONSUMER_REPLICA_ID = -1


class ListOffsetsCall(VersionedCall):
    """The offsets at the times given in each payload (-1 latest, -2 earliest).

    With ``read_committed`` (*isolation_level* 1), latest is the last stable
    offset (v2+), below the first open transaction.
    """

    request_class = ListOffsetsRequest

    def __init__(
        self,
        payloads: Sequence[OffsetRequest],
        timeout_ms: int,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        self.payloads = payloads
        self.timeout_ms = timeout_ms
        self.isolation_level = isolation_level
        if isolation_level != READ_UNCOMMITTED:
            self.min_version = 2  # the first version with an isolation level

    def build(self, version: int) -> Any:
        topic = ListOffsetsRequest.ListOffsetsTopic
        partition = ListOffsetsRequest.ListOffsetsPartition
        return ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            isolation_level=self.isolation_level,
            timeout_ms=self.timeout_ms,
            topics=[
                topic(
                    name=name,
                    partitions=[
                        partition(partition_index=p.partition, timestamp=p.time) for p in group
                    ],
                )
                for name, group in group_by_topic(self.payloads).items()
            ],
        )

    def parse(self, response: Any) -> list[OffsetResponse]:
        return [
            OffsetResponse(t.name, p.partition_index, p.error_code, (p.offset,))
            for t in response.topics
            for p in t.partitions
        ]
