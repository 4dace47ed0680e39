"""FindCoordinator request (api key 10): which broker coordinates a consumer group
(key type 0) or a transactional id (key type 1).

From v4 on the request carries a list of keys (``coordinator_keys``) and the
response a list of coordinators; older brokers take the single ``key`` form.
The negotiated version picks the form.
"""

from __future__ import annotations

from typing import Any

from afkak.common import BrokerMetadata, BrokerResponseError, ErrorCode
from afkak.protocol.messages import FindCoordinatorRequest

from ._call import VersionedCall

BATCHED_VERSION = 4
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


class FindCoordinatorCall(VersionedCall):
    """Find the coordinator of one consumer group (or, *key_type* 1, transactional id)."""

    request_class = FindCoordinatorRequest

    def __init__(self, group: str, key_type: int = GROUP_KEY_TYPE) -> None:
        self.group = group
        self.key_type = key_type
        if key_type != GROUP_KEY_TYPE:
            self.min_version = 1

    def build(self, version: int) -> Any:
        if version >= BATCHED_VERSION:
            return FindCoordinatorRequest(key_type=self.key_type, coordinator_keys=[self.group])
        return FindCoordinatorRequest(key=self.group, key_type=self.key_type)

    def parse(self, response: Any) -> list[BrokerMetadata]:
        """The coordinator, or raise the broker's error for the group."""
        if self.version >= BATCHED_VERSION:
            found = [c for c in response.coordinators if c.key == self.group]
            if not found:
                raise BrokerResponseError.from_errno(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    f"no coordinator entry for group {self.group!r}",
                )
            entry = found[0]
        else:
            entry = response
        detail = (entry.error_message,) if entry.error_message else ()
        BrokerResponseError.raise_for_errno(entry.error_code, *detail)
        return [BrokerMetadata(entry.node_id, entry.host, entry.port)]
