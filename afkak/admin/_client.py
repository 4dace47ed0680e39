"""KafkaAdminClient: topics, cluster, configs, groups, offsets, records, ACLs, SCRAM.

Each call builds its request with one of the ``_*_calls`` builders and routes
it as Kafka requires: topic creation and deletion to the controller (items
refused with NOT_CONTROLLER are sent again to the new one), group calls to the
group's coordinator (sent again when it moved), records and offsets to each
partition's leader (again when leadership moved), the rest to any broker.
Retries are bounded (``retries``) and spaced on the client's reactor.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence, Sized
from typing import Any, TypeVar
from uuid import UUID

from twisted.internet.defer import Deferred, gatherResults
from twisted.logger import Logger

from afkak._retry import backoff_policy, retrying
from afkak.client import AdminClient, KafkaClient
from afkak.client._interlayer import (
    COORDINATOR_MOVED,
    INT32_MAX,
    LEADER_MOVED,
    group_name,
    integer,
    topic_name,
)
from afkak.common import (
    BrokerConnectionError,
    BrokerMetadata,
    BrokerResponseError,
    ErrorCode,
    KafkaUnavailableError,
    OffsetCommitRequest,
    OffsetRequest,
    TopicAndPartition,
)
from afkak.protocol.messages import MetadataRequest
from afkak.records.aborted import isolation_level as isolation_level_of

from ._config_calls import DescribeConfigsCall, IncrementalAlterConfigsCall
from ._group_calls import (
    CommittedOffsetsCall,
    DeleteGroupsCall,
    DescribeGroupsCall,
    GroupDescription,
    GroupListing,
    ListGroupsCall,
    OffsetDeleteCall,
)
from ._lag import PartitionLag, reset_target
from ._log_calls import DeleteRecordsCall, ListedOffsetsCall
from ._security_calls import (
    AlterScramCall,
    CreateAclsCall,
    DeleteAclsCall,
    DescribeAclsCall,
    DescribeScramCall,
)
from ._topic_calls import CreatePartitionsCall, CreateTopicsCall, DeleteTopicsCall
from ._types import (
    AclBinding,
    AclDeletion,
    ClusterDescription,
    ConfigChange,
    ConfigResource,
    CreatedTopic,
    DeletedRecords,
    DeletedTopic,
    IsolationLevel,
    ItemResult,
    ListedOffset,
    NewPartitions,
    NewTopic,
    OffsetReset,
    OffsetSpec,
    PartitionDescription,
    ResourceConfig,
    ResourceType,
    ScramDeletion,
    ScramUpsertion,
    TopicDescription,
    TopicListing,
    UserScramCredentials,
    _error_or_none,
)

log = Logger()
T = TypeVar("T")

_INT64_MAX = 2**63 - 1
NOT_CONTROLLER = ErrorCode.NOT_CONTROLLER
#: Kafka's internal topics (some brokers do not flag them ``is_internal``).
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)
#: COORDINATOR_LOAD_IN_PROGRESS, with the codes that mean the coordinator moved.
COORDINATOR_RETRY = COORDINATOR_MOVED | {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def _left(what: str) -> Callable[[Sized], str | None]:
    """*again* for :func:`retrying`: items left to resend, or None when there are none."""
    return lambda left: f"{len(left)} {what}" if left else None


def _errno(result: Any) -> int:
    error = getattr(result, "error", None)
    return getattr(error, "errno", 0) if error is not None else 0


class KafkaAdminClient:
    """Administer a Kafka cluster through a :class:`~afkak.KafkaClient`.

    Every method returns a cancellable Deferred.  Calls about several items
    fire with a dict keyed by item whose values carry a per-item ``error``
    (``None`` on success); a failure of the whole call (no broker reachable,
    a malformed response) fails the Deferred instead.

    :param client: the KafkaClient to send requests with (not closed by this class).
    :param timeout_ms: default server-side time limit of the operations that
        take one (create/delete topics, create partitions, delete records).
    :param retries: how often a request refused because the controller,
        coordinator or a leader moved is sent again.
    :param retry_backoff: seconds before the first resend, doubling each time.
    """

    def __init__(
        self,
        client: AdminClient,
        *,
        timeout_ms: int = 30000,
        retries: int = 5,
        retry_backoff: float = 0.1,
    ) -> None:
        if not isinstance(client, KafkaClient):
            raise TypeError(f"client must be a KafkaClient, not {client!r}")
        self.client = client
        self.timeout_ms = _ms("timeout_ms", timeout_ms)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, not {retries!r}")
        if not isinstance(retry_backoff, (int, float)) or retry_backoff < 0:
            raise ValueError(f"retry_backoff must be seconds >= 0, not {retry_backoff!r}")
        self.retries = retries
        self.retry_backoff = float(retry_backoff)

    def __repr__(self) -> str:
        return f"<KafkaAdminClient on {self.client!r}>"

    # -- plumbing ---------------------------------------------------------------

    @staticmethod
    def _run(coro: Coroutine[Any, Any, Any]) -> Deferred[Any]:
        return Deferred.fromCoroutine(coro)

    def _retrying(
        self,
        attempt: Callable[[], Awaitable[T]],
        again: Callable[[T], str | None],
        what: str,
        retriable: Callable[[BaseException], bool] = lambda e: False,
        on_retry: Callable[[Any], None] | None = None,
    ) -> Awaitable[T]:
        """Up to ``retries`` more attempts, ``retry_backoff`` seconds apart, doubling."""
        return retrying(
            self.client.reactor,
            attempt,
            backoff_policy(self.retry_backoff, math.inf, jitter=0.0),
            retriable=retriable,
            again=again,
            max_attempts=self.retries + 1,
            on_retry=on_retry,
            what=what,
        )

    def _server_timeout(self, timeout_ms: int | None) -> int:
        return self.timeout_ms if timeout_ms is None else _ms("timeout_ms", timeout_ms)

    async def _metadata(self, topics: Sequence[str] | None) -> Any:
        """Metadata, never auto-creating topics; ``None`` asks for all, ``()`` for none."""
        request = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return await self.client.send_request_to_any_broker(request, min_version=1)

    async def _brokers(self) -> tuple[dict[int, BrokerMetadata], int]:
        response = await self._metadata(())
        brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers}
        return brokers, response.controller_id

    async def _to_any(self, call: Any) -> Any:
        response = await self.client.send_request_to_any_broker(call)
        return call.parse(response)

    async def _to_broker(
        self, broker: BrokerMetadata, call: Any, timeout: float | None = None
    ) -> Any:
        response = await self.client.send_request_to_broker(broker, call, timeout=timeout)
        return call.parse(response)

    async def _to_controller(
        self,
        items: Sequence[Any],
        key: Callable[[Any], Any],
        make_call: Callable[[Sequence[Any]], Any],
        timeout_ms: int,
    ) -> dict[Any, Any]:
        """Send *items* to the controller; resend those it refused as NOT_CONTROLLER."""
        results: dict[Any, Any] = {}
        pending = list(items)

        async def send() -> list[Any]:
            nonlocal pending
            brokers, controller_id = await self._brokers()
            if not brokers:
                raise KafkaUnavailableError("the cluster's metadata names no brokers")
            controller = brokers.get(controller_id) or next(iter(brokers.values()))
            timeout = self.client.timeout + timeout_ms / 1000
            (answered,) = await self._to_broker(controller, make_call(pending), timeout)
            results.update(answered)
            pending = [i for i in pending if _errno(answered.get(key(i))) == NOT_CONTROLLER]
            return pending

        await self._retrying(send, _left("item(s) refused as NOT_CONTROLLER"), "controller request")
        return results

    async def _to_coordinator(self, group: str, make_call: Callable[[], Any]) -> Any:
        """Send one call to *group*'s coordinator; again (up to ``retries``) if it moved."""

        async def send() -> Any:
            call = make_call()
            response = await self.client.send_request_to_coordinator(group, call)
            return call.parse(response)

        def moved(results: Any) -> str | None:
            items = results[0].values() if isinstance(results[0], dict) else results
            moved = any(_errno(r) in COORDINATOR_RETRY for r in items)
            return f"the coordinator of group {group!r} moved" if moved else None

        def gone(error: BaseException) -> bool:
            # The coordinator went away, or moved: look it up again.
            return isinstance(error, BrokerConnectionError) or (
                isinstance(error, BrokerResponseError) and error.errno in COORDINATOR_RETRY
            )

        return await self._retrying(
            send,
            moved,
            f"request to the coordinator of group {group!r}",
            retriable=gone,
            on_retry=lambda _: self.client.reset_consumer_group_metadata(group),
        )

    async def _to_leaders(
        self,
        items: Mapping[TopicAndPartition, Any],
        make_call: Callable[[dict[TopicAndPartition, Any]], Any],
        timeout: float,
    ) -> dict[TopicAndPartition, Any]:
        """Send each partition's item to its leader; resend those whose leader moved.

        A partition the cluster lacks (or that has no leader) gets its call's
        ``failed(error)`` result.
        """
        results: dict[TopicAndPartition, Any] = {}
        pending = dict(items)

        async def send() -> dict[TopicAndPartition, Any]:
            nonlocal pending
            response = await self._metadata(sorted({tp.topic for tp in pending}))
            brokers = {
                b.node_id: BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers
            }
            leaders: dict[int, dict[TopicAndPartition, Any]] = {}
            problems: dict[TopicAndPartition, int] = {}
            layout = {t.name: t for t in response.topics}
            for tp, item in pending.items():
                t = layout.get(tp.topic)
                part = (
                    next((p for p in t.partitions if p.partition_index == tp.partition), None)
                    if t
                    else None
                )
                if t is None or t.error_code or part is None:
                    problems[tp] = (t and t.error_code) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif part.leader_id not in brokers:
                    problems[tp] = ErrorCode.LEADER_NOT_AVAILABLE
                else:
                    leaders.setdefault(part.leader_id, {})[tp] = item
            answers = await gatherResults(
                [
                    Deferred.fromCoroutine(self._to_broker(brokers[n], make_call(batch), timeout))
                    for n, batch in leaders.items()
                ],
                consumeErrors=True,
            ).addErrback(lambda f: f.value.subFailure)
            for (answered,) in answers:
                results.update(answered)
            for tp, errno in problems.items():
                error = BrokerResponseError.from_errno(errno)
                results.update(make_call({tp: pending[tp]}).failed(error))
            pending = {tp: pending[tp] for tp in pending if _errno(results.get(tp)) in LEADER_MOVED}
            return pending

        await self._retrying(send, _left("partition(s) whose leader moved"), "leader requests")
        return results

    # -- topics -------------------------------------------------------------

    def create_topics(
        self,
        topics: Iterable[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> Deferred[dict[str, CreatedTopic]]:
        """Create topics at the controller; fires ``{name: CreatedTopic}``.

        With *validate_only* the controller checks the request and creates nothing.
        """
        new = list(topics)
        for t in new:
            if not isinstance(t, NewTopic):
                raise TypeError(f"topics must be NewTopic values, not {t!r}")
            topic_name(t.name)
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._to_controller(
                new,
                lambda t: t.name,
                lambda batch: CreateTopicsCall(batch, timeout, bool(validate_only)),
                timeout,
            )
        )

    def delete_topics(
        self, topics: Iterable[str | UUID], *, timeout_ms: int | None = None
    ) -> Deferred[dict[str | UUID, DeletedTopic]]:
        """Delete topics, each given by name or by topic id.

        Fires ``{name or id: DeletedTopic}``.
        """
        names = [t if isinstance(t, UUID) else topic_name(t) for t in topics]
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._to_controller(
                names, lambda t: t, lambda batch: DeleteTopicsCall(batch, timeout), timeout
            )
        )

    def create_partitions(
        self,
        new_partitions: Mapping[str, int | NewPartitions],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> Deferred[dict[str, ItemResult]]:
        """Grow topics to the given partition counts; fires ``{name: ItemResult}``."""
        counts = {
            topic_name(name): n if isinstance(n, NewPartitions) else NewPartitions(_count(n))
            for name, n in new_partitions.items()
        }
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._to_controller(
                list(counts),
                lambda t: t,
                lambda batch: CreatePartitionsCall(
                    {t: counts[t] for t in batch}, timeout, bool(validate_only)
                ),
                timeout,
            )
        )

    def list_topics(self, *, internal: bool = False) -> Deferred[list[TopicListing]]:
        """Every topic, by name; internal ones (``__consumer_offsets`` ...) only if asked."""
        return self._run(self._list_topics(internal))

    async def _list_topics(self, internal: bool) -> list[TopicListing]:
        response = await self._metadata(None)
        listings = [
            TopicListing(t.name, _topic_id(t.topic_id), bool(t.is_internal))
            for t in response.topics
            if t.name is not None and (internal or not (t.is_internal or t.name in INTERNAL_TOPICS))
        ]
        return sorted(listings, key=lambda t: t.name)

    def describe_topics(self, topics: Iterable[str]) -> Deferred[dict[str, TopicDescription]]:
        """Partitions, leaders, replicas, ISR and id of each topic.

        Fires ``{name: TopicDescription}``; never auto-creates a topic.
        """
        names = [topic_name(t) for t in topics]
        return self._run(self._describe_topics(names))

    async def _describe_topics(self, names: list[str]) -> dict[str, TopicDescription]:
        response = await self._metadata(names)
        found = {t.name: t for t in response.topics}
        results = {}
        for name in names:
            t = found.get(name)
            if t is None:
                results[name] = TopicDescription(name, None, False, (), _error_or_none(3))
                continue
            results[name] = TopicDescription(
                name=name,
                topic_id=_topic_id(t.topic_id),
                internal=bool(t.is_internal),
                partitions=tuple(
                    PartitionDescription(
                        p.partition_index,
                        p.leader_id,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        tuple(p.offline_replicas or ()),
                        _error_or_none(p.error_code),
                    )
                    for p in sorted(t.partitions, key=lambda p: p.partition_index)
                ),
                error=_error_or_none(t.error_code),
            )
        return results

    # -- cluster ---------------------------------------------------------------

    def describe_cluster(self) -> Deferred[ClusterDescription]:
        """Cluster id, controller and brokers (from Metadata, which every broker answers)."""
        return self._run(self._describe_cluster())

    async def _describe_cluster(self) -> ClusterDescription:
        response = await self._metadata(())
        brokers = sorted(
            (BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers),
            key=lambda b: b.node_id,
        )
        return ClusterDescription(response.cluster_id, response.controller_id, tuple(brokers))

    # -- configs ----------------------------------------------------------------

    def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        keys: Sequence[str] | None = None,
        include_synonyms: bool = False,
    ) -> Deferred[dict[ConfigResource, ResourceConfig]]:
        """Configs (with their sources, and synonyms if asked) of topics and brokers.

        *keys* limits the answer to those config names.  A broker's configs
        are asked of that broker.  Fires ``{resource: ResourceConfig}``.
        """
        wanted = _resources(resources)
        return self._run(
            self._per_resource_broker(
                wanted, lambda batch: DescribeConfigsCall(batch, keys, bool(include_synonyms))
            )
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[ConfigChange]],
        *,
        validate_only: bool = False,
    ) -> Deferred[dict[ConfigResource, ItemResult]]:
        """Set, delete, append to or subtract from config values.

        Fires ``{resource: ItemResult}``.
        """
        wanted = {r: list(c) for r, c in zip(_resources(changes), changes.values(), strict=True)}
        for c in (c for cs in wanted.values() for c in cs):
            if not isinstance(c, ConfigChange):
                raise TypeError(f"changes must be ConfigChange values, not {c!r}")
        return self._run(
            self._per_resource_broker(
                list(wanted),
                lambda batch: IncrementalAlterConfigsCall(
                    {r: wanted[r] for r in batch}, bool(validate_only)
                ),
            )
        )

    async def _per_resource_broker(
        self, resources: list[ConfigResource], make_call: Callable[[list[ConfigResource]], Any]
    ) -> dict[ConfigResource, Any]:
        """One request for the resources any broker answers, one per named broker."""
        by_node: dict[int | None, list[ConfigResource]] = {}
        for r in resources:
            node = int(r.name) if r.type == ResourceType.BROKER and r.name else None
            by_node.setdefault(node, []).append(r)
        brokers = (await self._brokers())[0] if set(by_node) - {None} else {}
        results: dict[ConfigResource, Any] = {}
        sends = []
        for node, batch in by_node.items():
            call = make_call(batch)
            if node is None:
                sends.append(Deferred.fromCoroutine(self._to_any(call)))
            elif node in brokers:
                sends.append(Deferred.fromCoroutine(self._to_broker(brokers[node], call)))
            else:
                error = BrokerResponseError.from_errno(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {node} in the cluster"
                )
                results.update(call.failed(error))
        answers = await gatherResults(sends, consumeErrors=True).addErrback(
            lambda f: f.value.subFailure
        )
        for (answered,) in answers:
            results.update(answered)
        return results

    # -- consumer groups -----------------------------------------------------------

    def list_consumer_groups(
        self, *, states: Iterable[str] | None = None
    ) -> Deferred[list[GroupListing]]:
        """Every group of the cluster (ListGroups at every broker), sorted by id.

        *states* (``"Stable"``, ``"Empty"`` ...) keeps only groups in those states.
        """
        wanted = None if states is None else [str(s) for s in states]
        return self._run(self._list_groups(wanted))

    async def _list_groups(self, states: list[str] | None) -> list[GroupListing]:
        brokers, _ = await self._brokers()
        answers = await gatherResults(
            [
                Deferred.fromCoroutine(self._to_broker(b, ListGroupsCall(states)))
                for b in brokers.values()
            ],
            consumeErrors=True,
        ).addErrback(lambda f: f.value.subFailure)
        listings = {g.group_id: g for answer in answers for g in answer}
        return [listings[k] for k in sorted(listings)]

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> Deferred[dict[str, GroupDescription]]:
        """State, protocol and members of each group; fires ``{group: GroupDescription}``."""
        groups = [group_name(g) for g in group_ids]
        return self._per_group(
            groups, lambda g: self._to_coordinator(g, lambda: DescribeGroupsCall(g))
        )

    def delete_consumer_groups(self, group_ids: Iterable[str]) -> Deferred[dict[str, ItemResult]]:
        """Delete empty groups and their offsets; fires ``{group: ItemResult}``."""
        groups = [group_name(g) for g in group_ids]
        return self._per_group(
            groups, lambda g: self._to_coordinator(g, lambda: DeleteGroupsCall(g))
        )

    def _per_group(
        self, groups: list[str], run: Callable[[str], Coroutine[Any, Any, Any]]
    ) -> Deferred[dict[str, Any]]:
        async def all_groups() -> dict[str, Any]:
            answers = await gatherResults(
                [Deferred.fromCoroutine(run(g)) for g in groups], consumeErrors=True
            ).addErrback(lambda f: f.value.subFailure)
            return {g: a[0] for g, a in zip(groups, answers, strict=True)}

        return self._run(all_groups())

    def list_consumer_group_offsets(
        self, group_id: str, topics: Iterable[str] | None = None
    ) -> Deferred[dict[TopicAndPartition, int]]:
        """The group's committed offsets: of every partition of *topics* (-1 where none),
        or of every partition it committed when *topics* is None."""
        group = group_name(group_id)
        names = None if topics is None else [topic_name(t) for t in topics]
        return self._run(self._committed(group, names))

    async def _committed(
        self, group: str, topics: list[str] | None
    ) -> dict[TopicAndPartition, int]:
        wanted = None
        if topics is not None:
            layout = await self._metadata(topics)
            wanted = {
                t.name: sorted(p.partition_index for p in t.partitions)
                for t in layout.topics
                if not t.error_code
            }
        outcome, offsets = await self._to_coordinator(
            group, lambda: CommittedOffsetsCall(group, wanted)
        )
        if outcome.error is not None:
            raise outcome.error
        return offsets

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicAndPartition, int]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Commit these offsets for a group that has no active members.

        Fires ``{partition: ItemResult}``; a group with members answers
        UNKNOWN_MEMBER_ID (or similar) for every partition.
        """
        group = group_name(group_id)
        payloads = [
            OffsetCommitRequest(topic_name(tp.topic), tp.partition, _offset(o), -1, None)
            for tp, o in offsets.items()
        ]
        return self._run(self._alter_offsets(group, payloads))

    async def _alter_offsets(
        self, group: str, payloads: list[Any]
    ) -> dict[TopicAndPartition, ItemResult]:
        results: dict[TopicAndPartition, ItemResult] = {}
        pending = payloads

        async def send() -> list[Any]:
            nonlocal pending
            responses = await self.client.send_offset_commit_request(
                group, pending, fail_on_error=False
            )
            for r in responses:
                results[TopicAndPartition(r.topic, r.partition)] = ItemResult(
                    _error_or_none(r.error)
                )
            retry = {
                TopicAndPartition(r.topic, r.partition)
                for r in responses
                if r.error in COORDINATOR_RETRY
            }
            pending = [p for p in pending if TopicAndPartition(p.topic, p.partition) in retry]
            return pending

        await self._retrying(send, _left("offset(s) whose coordinator moved"), "offset commit")
        return results

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicAndPartition]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Forget the group's committed offsets of *partitions* (not of ones it consumes)."""
        group = group_name(group_id)
        parts = [TopicAndPartition(topic_name(tp.topic), tp.partition) for tp in partitions]

        async def delete() -> dict[TopicAndPartition, ItemResult]:
            (results,) = await self._to_coordinator(group, lambda: OffsetDeleteCall(group, parts))
            return results

        return self._run(delete())

    def group_lag(
        self,
        group_id: str,
        topics: Iterable[str] | None = None,
        *,
        isolation_level: str | int = "read_uncommitted",
    ) -> Deferred[dict[TopicAndPartition, PartitionLag]]:
        """Committed offset, log end and lag of each partition the group committed
        (of every partition of *topics* when given).

        For a group of ``read_committed`` consumers pass that *isolation_level*:
        the end is then the last stable offset, as far as those consumers can
        read (records of open transactions are not lag yet).
        """
        group = group_name(group_id)
        names = None if topics is None else [topic_name(t) for t in topics]
        level = IsolationLevel(isolation_level_of(isolation_level))
        return self._run(self._lag(group, names, level))

    async def _lag(
        self, group: str, topics: list[str] | None, level: IsolationLevel
    ) -> dict[TopicAndPartition, PartitionLag]:
        committed = await self._committed(group, topics)
        if not committed:
            return {}
        ends = await self._list_offsets({tp: OffsetSpec.LATEST for tp in committed}, level)
        lags = {}
        for tp in sorted(committed):
            end = ends[tp]
            if end.error is not None:
                raise end.error
            lags[tp] = PartitionLag(committed[tp], end.offset)
        return lags

    def plan_offset_reset(
        self,
        group_id: str,
        partitions: Iterable[str | TopicAndPartition],
        *,
        to_earliest: bool = False,
        to_latest: bool = False,
        to_timestamp: int | None = None,
        to_offset: int | None = None,
        shift_by: int | None = None,
    ) -> Deferred[dict[TopicAndPartition, OffsetReset]]:
        """Compute (and do not apply) new positions for a group, as kafka-consumer-groups
        ``--reset-offsets`` does: exactly one of the ``to_*``/``shift_by`` options.

        *partitions* are topics (all their partitions) or single partitions.
        Targets are kept within each partition's earliest..latest offsets; a
        timestamp past the last record resets to the latest offset.  Apply
        the plan with :meth:`reset_offsets`.
        """
        chosen = [
            (name, v)
            for name, v in (
                ("earliest", to_earliest or None),
                ("latest", to_latest or None),
                ("timestamp", to_timestamp),
                ("offset", to_offset),
                ("shift", shift_by),
            )
            if v is not None
        ]
        if len(chosen) != 1:
            raise ValueError(
                "give exactly one of to_earliest, to_latest, to_timestamp, to_offset, shift_by"
            )
        how, value = chosen[0]
        if how in ("timestamp", "offset", "shift"):
            value = _offset(value) if how != "shift" else int(value)
        group = group_name(group_id)
        wanted = [p if isinstance(p, TopicAndPartition) else topic_name(p) for p in partitions]
        return self._run(self._plan(group, wanted, how, value))

    async def _plan(
        self, group: str, wanted: list[Any], how: str, value: Any
    ) -> dict[TopicAndPartition, OffsetReset]:
        topics = sorted({w.topic if isinstance(w, TopicAndPartition) else w for w in wanted})
        layout = await self._metadata(topics)
        parts = []
        for t in layout.topics:
            if t.error_code:
                raise BrokerResponseError.from_errno(t.error_code, f"topic {t.name!r}")
            for p in t.partitions:
                tp = TopicAndPartition(t.name, p.partition_index)
                if t.name in wanted or tp in wanted:
                    parts.append(tp)
        missing = [w for w in wanted if isinstance(w, TopicAndPartition) and w not in parts]
        if missing:
            raise BrokerResponseError.from_errno(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {missing[0]}"
            )
        committed = await self._committed(group, topics)
        earliest = await self._list_offsets(
            {tp: OffsetSpec.EARLIEST for tp in parts}, IsolationLevel.READ_UNCOMMITTED
        )
        latest = await self._list_offsets(
            {tp: OffsetSpec.LATEST for tp in parts}, IsolationLevel.READ_UNCOMMITTED
        )
        at_time = {}
        if how == "timestamp":
            at_time = await self._list_offsets(
                {tp: value for tp in parts}, IsolationLevel.READ_UNCOMMITTED
            )
        plan = {}
        for tp in sorted(parts):
            for listed in (earliest[tp], latest[tp], at_time.get(tp)):
                if listed is not None and listed.error is not None:
                    raise listed.error
            current = committed.get(tp, -1)
            found = at_time[tp].offset if tp in at_time else None
            plan[tp] = OffsetReset(
                current,
                reset_target(how, value, current, earliest[tp].offset, latest[tp].offset, found),
            )
        return plan

    def reset_offsets(
        self, group_id: str, plan: Mapping[TopicAndPartition, OffsetReset | int]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Apply a :meth:`plan_offset_reset` plan (or plain target offsets)."""
        targets = {tp: r.target if isinstance(r, OffsetReset) else r for tp, r in plan.items()}
        return self.alter_consumer_group_offsets(group_id, targets)

    # -- records and offsets -----------------------------------------------------

    def list_offsets(
        self,
        specs: Mapping[TopicAndPartition, int],
        *,
        isolation_level: IsolationLevel | int = IsolationLevel.READ_UNCOMMITTED,
    ) -> Deferred[dict[TopicAndPartition, ListedOffset]]:
        """Offsets by time at each partition's leader: :class:`OffsetSpec` ``EARLIEST``,
        ``LATEST``, ``MAX_TIMESTAMP`` (the record with the largest timestamp) or a
        timestamp in ms (the first record at or after it; offset -1 if none).

        With READ_COMMITTED, LATEST is the last stable offset.
        """
        checked = {
            TopicAndPartition(topic_name(tp.topic), tp.partition): _time(t)
            for tp, t in specs.items()
        }
        level = IsolationLevel(isolation_level)
        return self._run(self._list_offsets(checked, level))

    async def _list_offsets(
        self, specs: Mapping[TopicAndPartition, int], level: IsolationLevel
    ) -> dict[TopicAndPartition, ListedOffset]:
        timeout_ms = int(self.client.timeout * 1000)

        def make_call(batch: dict[TopicAndPartition, int]) -> ListedOffsetsCall:
            payloads = [OffsetRequest(tp.topic, tp.partition, t, 1) for tp, t in batch.items()]
            return ListedOffsetsCall(payloads, timeout_ms, int(level))

        return await self._to_leaders(specs, make_call, self.client.timeout)

    def delete_records(
        self, before: Mapping[TopicAndPartition, int], *, timeout_ms: int | None = None
    ) -> Deferred[dict[TopicAndPartition, DeletedRecords]]:
        """Delete each partition's records before the given offset (-1: all of them).

        Fires ``{partition: DeletedRecords}`` with the new log start offsets.
        """
        checked = {
            TopicAndPartition(topic_name(tp.topic), tp.partition): _offset(o, allow_latest=True)
            for tp, o in before.items()
        }
        timeout = self._server_timeout(timeout_ms)

        def make_call(batch: dict[TopicAndPartition, int]) -> DeleteRecordsCall:
            return DeleteRecordsCall(batch, timeout)

        return self._run(self._to_leaders(checked, make_call, self.client.timeout + timeout / 1000))

    # -- ACLs and SCRAM ---------------------------------------------------------

    def describe_acls(self, acl_filter: AclBinding) -> Deferred[list[AclBinding]]:
        """The ACLs matching *acl_filter* (``None`` names and ANY values match all)."""
        _binding_check(acl_filter)
        return self._run(self._to_any(DescribeAclsCall(acl_filter)))

    def create_acls(self, bindings: Iterable[AclBinding]) -> Deferred[list[ItemResult]]:
        """Create ACLs; fires one ItemResult per binding, in order."""
        new = [_binding_check(b) for b in bindings]
        return self._run(self._to_any(CreateAclsCall(new)))

    def delete_acls(self, filters: Iterable[AclBinding]) -> Deferred[list[AclDeletion]]:
        """Delete the ACLs each filter matches; fires one AclDeletion per filter."""
        wanted = [_binding_check(f) for f in filters]
        return self._run(self._to_any(DeleteAclsCall(wanted)))

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> Deferred[dict[str, UserScramCredentials]]:
        """SCRAM mechanisms and iterations of *users* (of every user when None)."""
        names = None if users is None else [str(u) for u in users]

        async def describe() -> dict[str, UserScramCredentials]:
            (results,) = await self._to_any(DescribeScramCall(names))
            return results

        return self._run(describe())

    def alter_user_scram_credentials(
        self, changes: Iterable[ScramUpsertion | ScramDeletion]
    ) -> Deferred[dict[str, ItemResult]]:
        """Set or delete users' SCRAM credentials; fires ``{user: ItemResult}``."""
        wanted = list(changes)
        for c in wanted:
            if not isinstance(c, (ScramUpsertion, ScramDeletion)):
                raise TypeError(f"changes must be ScramUpsertion or ScramDeletion, not {c!r}")
        call = AlterScramCall(wanted)

        async def alter() -> dict[str, ItemResult]:
            (results,) = await self._to_any(call)
            return results

        return self._run(alter())


def _topic_id(value: UUID | None) -> UUID | None:
    return None if value is None or value.int == 0 else value


def _ms(name: str, value: object) -> int:
    return integer(name, value, 0, INT32_MAX)


def _count(value: object) -> int:
    return integer("a partition count", value, 1, INT32_MAX)


def _offset(value: object, allow_latest: bool = False) -> int:
    """An offset to commit or delete before; -1 (the log end) where *allow_latest*."""
    return integer("an offset", value, -1 if allow_latest else 0, _INT64_MAX)


def _time(value: object) -> int:
    """A ListOffsets time: a timestamp >= 0 or an :class:`OffsetSpec`."""
    return integer("a ListOffsets time", value, OffsetSpec.MAX_TIMESTAMP, _INT64_MAX)


def _resources(resources: Iterable[ConfigResource]) -> list[ConfigResource]:
    checked = list(resources)
    for r in checked:
        if not isinstance(r, ConfigResource):
            raise TypeError(f"resources must be ConfigResource values, not {r!r}")
        if r.type == ResourceType.TOPIC:
            topic_name(r.name)
        elif r.type == ResourceType.BROKER and r.name and not r.name.isdigit():
            raise ValueError(f"a broker config resource names a node id, not {r.name!r}")
    return checked


def _binding_check(binding: object) -> AclBinding:
    if not isinstance(binding, AclBinding):
        raise TypeError(f"expected an AclBinding, not {binding!r}")
    return binding
