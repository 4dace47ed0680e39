"""Rack-aware fetching (KIP-392): read a partition from the replica its leader prefers.

A consumer with a ``client_rack`` sends it in every Fetch (v11+).  A broker
with a replica selector (Kafka's ``RackAwareReplicaSelector``) may answer
with a ``preferred_read_replica``: the consumer then fetches that partition
from that replica, as the Java client does, until the replica answers with an
error or the client's metadata age passes; then it goes back to the leader,
which may name a replica again.
"""

from __future__ import annotations

from typing import Any

from afkak.client import ConsumerClient
from afkak.common import BrokerMetadata, ReplicaNotAvailableError

__all__ = ["ReadReplica"]

#: Seconds a preferred replica is followed when the client never refreshes metadata.
DEFAULT_MAX_AGE = 300.0


class ReadReplica:
    """The replica one partition is read from: the leader, or the one it named."""

    __slots__ = ("client", "node_id", "_until")

    def __init__(self, client: ConsumerClient) -> None:
        self.client = client
        #: The preferred read replica's node id (None: read from the leader).
        self.node_id: int | None = None
        self._until = 0.0

    def broker(self, leader: BrokerMetadata) -> BrokerMetadata:
        """The broker to fetch from: the preferred replica while it lasts, else *leader*."""
        node_id = self.node_id
        if node_id is None:
            return leader
        if self.client.reactor.seconds() < self._until:
            replica = self.client.broker_by_id(node_id)
            if replica is not None:
                return replica
        self.node_id = None
        return leader

    def answered(self, fetched_from: BrokerMetadata, partition_data: Any) -> None:
        """Follow the ``preferred_read_replica`` a (leader's) Fetch answer names.

        A replica missing from the client's metadata raises the retriable
        :class:`~afkak.common.ReplicaNotAvailableError`: the fetch reloads the
        metadata and waits its backoff instead of asking the leader at once.
        """
        preferred = getattr(partition_data, "preferred_read_replica", -1)
        if preferred < 0 or preferred == fetched_from.node_id:
            return
        if self.client.broker_by_id(preferred) is None:
            raise ReplicaNotAvailableError(f"preferred read replica {preferred} is unknown")
        max_age = self.client.metadata_max_age
        self.node_id = preferred
        self._until = self.client.reactor.seconds() + (
            DEFAULT_MAX_AGE if max_age is None else max_age
        )

    def failed(self) -> bool:
        """Go back to the leader after an error; whether a replica was being read."""
        following, self.node_id = self.node_id is not None, None
        return following
