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

#: The special times that need a newer ListOffsets, with the first version (and the
#: KIP) that knows each.  An older broker reads them as a timestamp in the past and
#: answers offset 0 with no error (Kafka 2.1 and 2.8 for MAX_TIMESTAMP; 3.0 brought
#: v7), so they are refused before anything is sent, as Java's
#: ``ListOffsetsRequest.Builder`` does.
SPECIAL_TIMES = {
    -3: ("MAX_TIMESTAMP", 7, "KIP-734, Kafka 3.0"),
    -4: ("EARLIEST_LOCAL", 8, "KIP-405"),
    -5: ("LATEST_TIERED", 9, "KIP-1005"),
    -6: ("EARLIEST_PENDING_UPLOAD", 11, "KIP-1023"),
}


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
            self.min_version_reason = "read_committed needs v2"
        special = [SPECIAL_TIMES[p.time] for p in payloads if p.time in SPECIAL_TIMES]
        if special:
            name, version, where = max(special, key=lambda s: s[1])
            self.min_version = version
            self.min_version_reason = f"{name} needs v{version}: {where}"

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
