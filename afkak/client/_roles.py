"""What the layers above the client use of it, as small typing.Protocols.

:class:`~afkak.client.KafkaClient` provides all of them; a layer types its
``client`` with the roles it needs (the producer: :class:`BrokerRequests` and
:class:`ClusterMetadata`), so a test double or another client only has to
provide those.  :class:`ProducerClient`, :class:`ConsumerClient` and
:class:`AdminClient` combine them for the producer, for consumers and groups,
and for the admin client.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol
from uuid import UUID

from twisted.internet.defer import Deferred
from typing_extensions import TypeVar

from afkak.common import (
    BrokerMetadata,
    FetchResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetRequest,
    OffsetResponse,
    ProduceResponse,
    TopicAndPartition,
)

T = TypeVar("T")
# What a batch request's Deferred fires with: a list of the API's responses, or
# of what the ``callback`` made of each (afkak 21's argument).
ProduceResult = TypeVar("ProduceResult", default=ProduceResponse)
FetchResult = TypeVar("FetchResult", default=FetchResponse)
OffsetResult = TypeVar("OffsetResult", default=OffsetResponse)
CommitResult = TypeVar("CommitResult", default=OffsetCommitResponse)
OffsetFetchResult = TypeVar("OffsetFetchResult", default=OffsetFetchResponse)

__all__ = [
    "AdminClient",
    "BrokerRequests",
    "ClusterMetadata",
    "ConsumerClient",
    "GroupRequests",
    "ProducerClient",
]


class BrokerRequests(Protocol):
    """Sending protocol requests to a broker, on the client's reactor and timeout."""

    #: IReactorTime (and what the endpoint factory needs): timers of the layers above.
    reactor: Any
    #: Seconds a request waits for its response by default.
    timeout: float
    #: The random source of the layers' jitter (seeded in tests, as the reactor is a Clock).
    rng: random.Random

    def send_request_to_broker(
        self,
        broker: BrokerMetadata,
        request: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> Deferred[Any]: ...

    def send_request_to_any_broker(
        self, request: Any, *, min_version: int | None = None, max_version: int | None = None
    ) -> Deferred[Any]: ...


class ClusterMetadata(Protocol):
    """The client's view of topics, partitions and their leaders."""

    @property
    def topic_partitions(self) -> Mapping[str, list[int]]: ...

    @property
    def topics_to_brokers(self) -> Mapping[TopicAndPartition, Any]: ...

    @property
    def topic_ids(self) -> Mapping[str, UUID]: ...

    def load_metadata_for_topics(self, *topics: str) -> Deferred[bool | None]: ...

    def reset_topic_metadata(self, *topics: str) -> None: ...

    def metadata_error_for_topic(self, topic: str) -> int: ...

    def leaders_for(
        self, partitions: Iterable[TopicAndPartition]
    ) -> Deferred[dict[TopicAndPartition, BrokerMetadata]]: ...

    def note_new_leader(
        self, partition: TopicAndPartition, current_leader: Any, node_endpoints: Any = ()
    ) -> bool: ...

    def note_stale_leaders(self, partitions: Iterable[TopicAndPartition]) -> None: ...

    def leader_epoch(self, key: TopicAndPartition) -> int: ...

    def broker_by_id(self, node_id: int) -> BrokerMetadata | None: ...

    @property
    def metadata_max_age(self) -> float | None: ...


class GroupRequests(Protocol):
    """Requests about consumer groups and offsets: to a group's coordinator, or by partition."""

    def consumer_group_to_brokers(self) -> dict[str, Any]: ...

    def reset_consumer_group_metadata(self, *groups: str) -> None: ...

    def send_request_to_coordinator(
        self,
        group: str,
        request: Any,
        *,
        min_version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> Deferred[Any]: ...

    def send_offset_request(
        self,
        payloads: Sequence[OffsetRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetResponse], OffsetResult] | None = None,
        *,
        isolation_level: str | int = "read_uncommitted",
    ) -> Deferred[list[OffsetResult]]: ...

    def send_offset_commit_request(
        self,
        group: str,
        payloads: Sequence[OffsetCommitRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetCommitResponse], CommitResult] | None = None,
        group_generation_id: int = -1,
        consumer_id: str = "",
    ) -> Deferred[list[CommitResult]]: ...

    def send_offset_fetch_request(
        self,
        group: str,
        payloads: Sequence[OffsetFetchRequest] | None = None,
        fail_on_error: bool = True,
        callback: Callable[[OffsetFetchResponse], OffsetFetchResult] | None = None,
        *,
        require_stable: bool = False,
    ) -> Deferred[list[OffsetFetchResult]]: ...


class ProducerClient(BrokerRequests, ClusterMetadata, GroupRequests, Protocol):
    """What the producer uses: requests to partition leaders, and the metadata to find
    them; a transactional producer also commits offsets at a group's coordinator."""

    #: The largest record batch to write, in bytes (the producer's default).
    max_request_size: int


class ConsumerClient(BrokerRequests, ClusterMetadata, GroupRequests, Protocol):
    """What consumers and groups use: fetches, offset lookups, commits and group requests,
    and the state the consumers of one client share (their fetch manager)."""

    def shared(self, factory: Callable[[Any], T]) -> T: ...


class AdminClient(BrokerRequests, GroupRequests, Protocol):
    """What :class:`~afkak.admin.KafkaAdminClient` uses: requests to brokers and coordinators."""
