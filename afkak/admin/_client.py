"""KafkaAdminClient: topics, cluster, configs, groups, offsets, records, ACLs, SCRAM,
transactions, log dirs, features, the metadata quorum, client quotas, reassignments and
leader elections.

Each call checks its arguments, builds its request with one of the
``_*_calls`` builders, and has :mod:`._routing` send it where Kafka requires
(controller, coordinator, leaders, any broker) and resend what was refused
because that target moved.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from twisted.internet.defer import Deferred

from afkak._retry import RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS, backoff_policy
from afkak.client import AdminClient
from afkak.client._interlayer import (
    INT32_MAX,
    group_name,
    integer,
    number,
    topic_name,
)
from afkak.common import (
    BrokerMetadata,
    BrokerResponseError,
    ErrorCode,
    NoCommonVersionError,
    OffsetCommitRequest,
    OffsetRequest,
    TopicAndPartition,
)
from afkak.records.aborted import isolation_level as isolation_level_of

from ._cluster_calls import (
    ApiVersionsFeaturesCall,
    DescribeLogDirsCall,
    DescribeQuorumCall,
    FeatureMetadata,
    FeatureUpdate,
    FeatureUpgradeType,
    LogDirDescription,
    QuorumInfo,
    UpdateFeaturesCall,
)
from ._config_calls import (
    AlterConfigsCall,
    DescribeConfigsCall,
    IncrementalAlterConfigsCall,
    ListConfigResourcesCall,
    replaced_configs,
)
from ._describe_topics import (
    PARTITION_LIMIT,
    DescribeTopicPartitionsCall,
    _topic_id,
    described,
    partitions_of,
    unknown_topic,
)
from ._group_calls import (
    CommittedOffsetsCall,
    ConsumerGroupDescribeCall,
    DeleteGroupsCall,
    DescribeGroupsCall,
    GroupDescription,
    GroupListing,
    ListGroupsCall,
    OffsetDeleteCall,
)
from ._lag import PartitionLag, reset_target
from ._log_calls import DeleteRecordsCall, ListedOffsetsCall
from ._quota_calls import (
    ENTITY_TYPES,
    AlterQuotasCall,
    DescribeQuotasCall,
    QuotaEntity,
    QuotaFilter,
    QuotaMatch,
)
from ._reassign_calls import (
    AlterReassignmentsCall,
    ElectionType,
    ElectLeadersCall,
    ListReassignmentsCall,
    PartitionReassignment,
)
from ._routing import Router, errno_of
from ._security_calls import (
    AlterScramCall,
    CreateAclsCall,
    DeleteAclsCall,
    DescribeAclsCall,
    DescribeScramCall,
)
from ._share_group_calls import (
    AlterShareGroupOffsetsCall,
    DeleteShareGroupOffsetsCall,
    DescribeShareGroupOffsetsCall,
    ShareGroupDescribeCall,
    ShareGroupDescription,
    SharePartitionOffset,
)
from ._topic_calls import CreatePartitionsCall, CreateTopicsCall, DeleteTopicsCall
from ._txn_calls import (
    AbortMarkerCall,
    AbortTransactionSpec,
    DescribeProducersCall,
    DescribeTransactionsCall,
    HangingTransaction,
    ListTransactionsCall,
    PartitionProducers,
    TransactionDescription,
    TransactionListing,
    hanging,
)
from ._types import (
    AclBinding,
    AclDeletion,
    ClusterDescription,
    ConfigChange,
    ConfigResource,
    ConfigResourceType,
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
    ScramDeletion,
    ScramUpsertion,
    TopicDescription,
    TopicListing,
    UserScramCredentials,
)

_INT64_MAX = 2**63 - 1
#: ConsumerGroupDescribe's answers that send the describe to DescribeGroups, as Java's.
CLASSIC_OR_UNSUPPORTED = frozenset({ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION})

#: Kafka's internal topics (some brokers do not flag them ``is_internal``).
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)


class KafkaAdminClient:
    """Administer a Kafka cluster through a :class:`~afkak.KafkaClient`.

    Every method returns a cancellable Deferred.  Calls about several items
    fire with a dict keyed by item whose values carry a per-item ``error``
    (``None`` on success); a failure of the whole call (no broker reachable,
    a malformed response) fails the Deferred instead.

    :param client: the :class:`~afkak.client.KafkaClient` to send requests with (not
        closed by this class), or any object with its :class:`~afkak.client.AdminClient`
        calls (a wrapper that records or throttles them, say).
    :param timeout_ms: default server-side time limit of the operations that
        take one (create/delete topics, create partitions, delete records).
    :param retries: how often a request refused because the controller,
        coordinator or a leader moved is sent again.
    :param retry_backoff: seconds before the first resend, doubling each time up to
        *retry_backoff_max*, each wait jittered by ±20 % from the client's ``rng``
        (Kafka's ``retry.backoff.ms`` and ``retry.backoff.max.ms``).
    """

    def __init__(
        self,
        client: AdminClient,
        *,
        timeout_ms: int = 30000,
        retries: int = 5,
        retry_backoff: float = RETRY_BACKOFF_MS / 1000,
        retry_backoff_max: float = RETRY_BACKOFF_MAX_MS / 1000,
    ) -> None:
        self.client = _admin_client(client)
        self.timeout_ms = _ms("timeout_ms", timeout_ms)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, not {retries!r}")
        for name, seconds in (
            ("retry_backoff", retry_backoff),
            ("retry_backoff_max", retry_backoff_max),
        ):
            if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
                raise ValueError(f"{name} must be seconds >= 0, not {seconds!r}")
        self.retries = retries
        self.retry_backoff = float(retry_backoff)
        self.retry_backoff_max = max(float(retry_backoff_max), self.retry_backoff)
        policy = backoff_policy(
            self.retry_backoff, self.retry_backoff_max, uniform=self.client.rng.uniform
        )
        self._router = Router(self.client, retries, policy)

    def __repr__(self) -> str:
        return f"<KafkaAdminClient on {self.client!r}>"

    # -- plumbing ---------------------------------------------------------------

    @staticmethod
    def _run(coro: Coroutine[Any, Any, Any]) -> Deferred[Any]:
        return Deferred.fromCoroutine(coro)

    def _one_answer(self, call: Any) -> Deferred[Any]:
        """*call* at any broker; the one result its ``parse`` gives."""

        async def send() -> Any:
            (result,) = await self._router.to_any(call)
            return result

        return self._run(send())

    def _server_timeout(self, timeout_ms: int | None) -> int:
        return self.timeout_ms if timeout_ms is None else _ms("timeout_ms", timeout_ms)

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
        new = _items("topics", topics)
        for t in new:
            if not isinstance(t, NewTopic):
                raise TypeError(f"topics must be NewTopic values, not {t!r}")
            topic_name(t.name)
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._router.to_controller(
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
        names = [t if isinstance(t, UUID) else topic_name(t) for t in _items("topics", topics)]
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._router.to_controller(
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
            for name, n in _mapping("new_partitions", new_partitions).items()
        }
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._router.to_controller(
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
        response = await self._router.metadata(None)
        listings = [
            TopicListing(t.name, _topic_id(t.topic_id), bool(t.is_internal))
            for t in response.topics
            if t.name is not None and (internal or not (t.is_internal or t.name in INTERNAL_TOPICS))
        ]
        return sorted(listings, key=lambda t: t.name)

    def describe_topics(
        self, topics: Iterable[str], *, partition_limit: int = PARTITION_LIMIT
    ) -> Deferred[dict[str, TopicDescription]]:
        """Partitions, leaders (and their epochs), replicas, ISR, eligible leader
        replicas and id of each topic.

        Through DescribeTopicPartitions (KIP-966, Kafka 3.8+; paged by
        *partition_limit* partitions an answer), where the brokers have it, else
        through Metadata (no ELR).  Fires ``{name: TopicDescription}``; never
        auto-creates a topic.
        """
        names = [topic_name(t) for t in _items("topics", topics)]
        limit = integer("partition_limit", partition_limit, 1, INT32_MAX)
        return self._run(self._describe_topics(names, limit))

    async def _describe_topics(self, names: list[str], limit: int) -> dict[str, TopicDescription]:
        found: dict[str, tuple[Any, tuple[PartitionDescription, ...]]] = {}
        if names:
            try:
                found = await self._describe_topic_partitions(sorted(set(names)), limit)
            except NoCommonVersionError:
                response = await self._router.metadata(names)
                found = {t.name: (t, partitions_of(t)) for t in response.topics}
        results = {}
        for name in names:
            if name in found:
                topic, partitions = found[name]
                results[name] = described(name, topic, partitions)
            else:
                results[name] = unknown_topic(name)
        return results

    async def _describe_topic_partitions(
        self, names: list[str], limit: int
    ) -> dict[str, tuple[Any, tuple[PartitionDescription, ...]]]:
        """Every page of DescribeTopicPartitions, each topic's partitions joined."""
        found: dict[str, tuple[Any, tuple[PartitionDescription, ...]]] = {}
        cursor: tuple[str, int] | None = None
        while True:
            page, cursor = await self._router.to_any(
                DescribeTopicPartitionsCall(names, limit, cursor)
            )
            for name, (topic, partitions) in page.items():
                earlier = found.get(name, (topic, ()))[1]
                found[name] = (topic, earlier + partitions)
            if cursor is None:
                return found

    # -- cluster ---------------------------------------------------------------

    def describe_cluster(self) -> Deferred[ClusterDescription]:
        """Cluster id, controller and brokers (from Metadata, which every broker answers)."""
        return self._run(self._describe_cluster())

    async def _describe_cluster(self) -> ClusterDescription:
        response = await self._router.metadata(())
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
        names = None if keys is None else [_text("keys", k) for k in _items("keys", keys)]
        return self._per_resource_broker(
            wanted, lambda batch: DescribeConfigsCall(batch, names, bool(include_synonyms))
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[ConfigChange]],
        *,
        validate_only: bool = False,
    ) -> Deferred[dict[ConfigResource, ItemResult]]:
        """Set, delete, append to or subtract from config values.

        Fires ``{resource: ItemResult}``.  Brokers before Kafka 2.3 have no
        IncrementalAlterConfigs: afkak then reads each resource's dynamic configs
        (DescribeConfigs) and sends them, changed, through AlterConfigs, as
        ``kafka-configs`` did; not atomic (a change made in between by another
        client is undone), and refused for a resource with sensitive dynamic
        configs, whose values DescribeConfigs hides.
        """
        _mapping("changes", changes)
        wanted = {
            r: _items("changes", c)
            for r, c in zip(_resources(changes), changes.values(), strict=True)
        }
        for c in (c for cs in wanted.values() for c in cs):
            if not isinstance(c, ConfigChange):
                raise TypeError(f"changes must be ConfigChange values, not {c!r}")
        return self._run(self._incremental_alter_configs(wanted, bool(validate_only)))

    async def _incremental_alter_configs(
        self, wanted: dict[ConfigResource, list[ConfigChange]], validate_only: bool
    ) -> dict[ConfigResource, ItemResult]:
        try:
            return await self._per_resource_broker(
                list(wanted),
                lambda batch: IncrementalAlterConfigsCall(
                    {r: wanted[r] for r in batch}, validate_only
                ),
            )
        except NoCommonVersionError as e:
            if e.api_key != IncrementalAlterConfigsCall.request_class.API_KEY:
                raise
        # Kafka before 2.3: AlterConfigs replaces a resource's whole set of dynamic
        # configs, so read them first (not atomic: a change in between is lost).
        described = await self._per_resource_broker(
            list(wanted), lambda batch: DescribeConfigsCall(batch, None, False)
        )
        results: dict[ConfigResource, ItemResult] = {}
        configs: dict[ConfigResource, dict[str, str | None]] = {}
        for resource, changes in wanted.items():
            config = described[resource]
            try:
                if config.error is not None:
                    raise config.error
                configs[resource] = replaced_configs(config, changes)
            except BrokerResponseError as error:
                results[resource] = ItemResult(error)
        if configs:
            results.update(
                await self._per_resource_broker(
                    list(configs),
                    lambda batch: AlterConfigsCall({r: configs[r] for r in batch}, validate_only),
                )
            )
        return {r: results[r] for r in wanted}

    def list_config_resources(
        self, types: Iterable[ConfigResourceType | int] = ()
    ) -> Deferred[list[ConfigResource]]:
        """The config resources of *types* that hold configs (Kafka 4.1's
        ListConfigResources, KIP-1142), as ``kafka-configs --describe --entity-type``
        without a name; no types is the broker's default set.  Brokers from 3.7 to
        4.0 list client metrics resources only (ListClientMetricsResources): asking
        them for another type fails with :class:`~afkak.common.NoCommonVersionError`.
        """
        wanted = [ConfigResourceType(t) for t in _items("types", types)]
        return self._one_answer(ListConfigResourcesCall(wanted))

    def list_client_metrics_resources(self) -> Deferred[list[ConfigResource]]:
        """The client metrics subscriptions (KIP-714's resources of type
        :attr:`ConfigResourceType.CLIENT_METRICS`), as Java's
        ``listClientMetricsResources``; their configs come from :meth:`describe_configs`."""
        return self.list_config_resources([ConfigResourceType.CLIENT_METRICS])

    def _per_resource_broker(
        self, resources: list[ConfigResource], make_call: Callable[[list[ConfigResource]], Any]
    ) -> Deferred[dict[ConfigResource, Any]]:
        """One request for the resources any broker answers, one per named broker."""
        by_node: dict[int | None, list[ConfigResource]] = {}
        for r in resources:
            node = int(r.name) if r.type == ConfigResourceType.BROKER and r.name else None
            by_node.setdefault(node, []).append(r)
        return self._run(self._router.to_nodes(by_node, make_call))

    # -- consumer groups -----------------------------------------------------------

    def list_consumer_groups(
        self, *, states: Iterable[str] | None = None
    ) -> Deferred[list[GroupListing]]:
        """Every group of the cluster (ListGroups at every broker), sorted by id.

        *states* (``"Stable"``, ``"Empty"`` ...) keeps only groups in those states.
        """
        wanted = None if states is None else [_text("states", s) for s in _items("states", states)]
        return self._run(self._list_groups(wanted))

    async def _list_groups(
        self, states: list[str] | None, types: Sequence[str] = ()
    ) -> list[GroupListing]:
        answers = await self._router.to_every_broker(lambda: ListGroupsCall(states, types))
        listings = {g.group_id: g for answer in answers for g in answer}
        return [listings[k] for k in sorted(listings)]

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> Deferred[dict[str, GroupDescription]]:
        """State, protocol and members of each group; fires ``{group: GroupDescription}``.

        As Java's admin client: ConsumerGroupDescribe first (KIP-848's groups, with
        epochs and target assignments), DescribeGroups for the groups it does not
        know (classic ones) or where the brokers lack it.
        """
        groups = [group_name(g) for g in _items("group_ids", group_ids)]
        router = self._router
        return self._run(router.per_group(groups, self._describe_group))

    async def _describe_group(self, group: str) -> list[GroupDescription]:
        router = self._router
        try:
            described = await router.to_coordinator(group, lambda: ConsumerGroupDescribeCall(group))
        except NoCommonVersionError:
            pass  # brokers before Kafka 4.0, or with the new group coordinator off
        else:
            if errno_of(described[0]) not in CLASSIC_OR_UNSUPPORTED:
                return described
        return await router.to_coordinator(group, lambda: DescribeGroupsCall(group))

    def delete_consumer_groups(self, group_ids: Iterable[str]) -> Deferred[dict[str, ItemResult]]:
        """Delete empty groups and their offsets; fires ``{group: ItemResult}``."""
        groups = [group_name(g) for g in _items("group_ids", group_ids)]
        return self._per_group(groups, DeleteGroupsCall)

    def _per_group(
        self, groups: list[str], make_call: Callable[[str], Any]
    ) -> Deferred[dict[str, Any]]:
        router = self._router
        return self._run(
            router.per_group(groups, lambda g: router.to_coordinator(g, lambda: make_call(g)))
        )

    # -- share groups (KIP-932) -------------------------------------------------------

    def list_share_groups(
        self, *, states: Iterable[str] | None = None
    ) -> Deferred[list[GroupListing]]:
        """Every share group of the cluster (ListGroups by type), sorted by id."""
        wanted = None if states is None else [_text("states", s) for s in _items("states", states)]
        return self._run(self._list_groups(wanted, ["share"]))

    def describe_share_groups(
        self, group_ids: Iterable[str]
    ) -> Deferred[dict[str, ShareGroupDescription]]:
        """State, epochs and members (with their assignments) of each share group."""
        groups = [group_name(g) for g in _items("group_ids", group_ids)]
        return self._per_group(groups, ShareGroupDescribeCall)

    def describe_share_group_offsets(
        self, group_id: str, partitions: Iterable[TopicAndPartition] | None = None
    ) -> Deferred[dict[TopicAndPartition, SharePartitionOffset]]:
        """Start offset and lag of each share-partition: of *partitions*, or of every
        partition the group has read when None."""
        group = group_name(group_id)
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = {}
            for tp in _items("partitions", partitions):
                tp = _partition(tp)
                wanted.setdefault(tp.topic, []).append(tp.partition)
        return self._one_group(group, lambda: DescribeShareGroupOffsetsCall(group, wanted))

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicAndPartition, int]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Move an empty share group's start offsets (the records before are skipped)."""
        group = group_name(group_id)
        _mapping("offsets", offsets)
        wanted = {_partition(tp): _offset(o) for tp, o in offsets.items()}
        return self._one_group(group, lambda: AlterShareGroupOffsetsCall(group, wanted))

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> Deferred[dict[str, ItemResult]]:
        """Forget an empty share group's state of *topics* (it starts again by its reset)."""
        group = group_name(group_id)
        names = [topic_name(t) for t in _items("topics", topics)]
        return self._one_group(group, lambda: DeleteShareGroupOffsetsCall(group, names))

    def _one_group(self, group: str, make_call: Callable[[], Any]) -> Deferred[Any]:
        """One call at *group*'s coordinator; its one result."""

        async def run() -> Any:
            (result,) = await self._router.to_coordinator(group, make_call)
            return result

        return self._run(run())

    def list_consumer_group_offsets(
        self, group_id: str, topics: Iterable[str] | None = None
    ) -> Deferred[dict[TopicAndPartition, int]]:
        """The group's committed offsets: of every partition of *topics* (-1 where none),
        or of every partition of the cluster's topics it committed when *topics* is None."""
        group = group_name(group_id)
        names = None if topics is None else [topic_name(t) for t in _items("topics", topics)]
        return self._run(self._committed(group, names))

    async def _committed(
        self, group: str, topics: list[str] | None
    ) -> dict[TopicAndPartition, int]:
        # Every partition is asked for by name: a null topic list ("all") is answered
        # with a null array by some brokers (Tansu), which is no answer at all.
        layout = await self._router.metadata(topics)
        wanted = {
            t.name: sorted(p.partition_index for p in t.partitions)
            for t in layout.topics
            if not t.error_code and t.name is not None
        }
        outcome, offsets = await self._router.to_coordinator(
            group, lambda: CommittedOffsetsCall(group, wanted)
        )
        if outcome.error is not None:
            raise outcome.error
        if topics is None:
            return {tp: o for tp, o in offsets.items() if o >= 0}
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
            OffsetCommitRequest(*_partition(tp), _offset(o), -1, None)
            for tp, o in _mapping("offsets", offsets).items()
        ]
        return self._run(self._router.commit_offsets(group, payloads))

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicAndPartition]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Forget the group's committed offsets of *partitions* (not of ones it consumes)."""
        group = group_name(group_id)
        parts = [_partition(tp) for tp in _items("partitions", partitions)]

        async def delete() -> dict[TopicAndPartition, ItemResult]:
            (results,) = await self._router.to_coordinator(
                group, lambda: OffsetDeleteCall(group, parts)
            )
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
        names = None if topics is None else [topic_name(t) for t in _items("topics", topics)]
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
        wanted = [
            _partition(p) if isinstance(p, tuple) else topic_name(p)
            for p in _items("partitions", partitions)
        ]
        return self._run(self._plan(group, wanted, how, value))

    async def _plan(
        self, group: str, wanted: list[Any], how: str, value: Any
    ) -> dict[TopicAndPartition, OffsetReset]:
        topics = sorted({w.topic if isinstance(w, TopicAndPartition) else w for w in wanted})
        parts = await self._wanted_partitions(topics, wanted)
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

    async def _partitions(
        self, topics: list[str] | None, keep: Callable[[TopicAndPartition, Any], bool]
    ) -> list[TopicAndPartition]:
        """The partitions of *topics* (None: all) that ``keep(tp, partition_metadata)``
        keeps, by Metadata; a topic's error is raised."""
        layout = await self._router.metadata(topics)
        parts = []
        for t in layout.topics:
            if t.error_code:
                raise BrokerResponseError.from_errno(t.error_code, f"topic {t.name!r}")
            for p in t.partitions:
                tp = TopicAndPartition(t.name, p.partition_index)
                if keep(tp, p):
                    parts.append(tp)
        return parts

    async def _wanted_partitions(
        self, topics: list[str], wanted: list[Any]
    ) -> list[TopicAndPartition]:
        """The partitions of *wanted* (topics, or partitions that must exist), by Metadata."""
        parts = await self._partitions(topics, lambda tp, _: tp.topic in wanted or tp in wanted)
        missing = [w for w in wanted if isinstance(w, TopicAndPartition) and w not in parts]
        if missing:
            raise BrokerResponseError.from_errno(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {missing[0]}"
            )
        return parts

    def reset_offsets(
        self, group_id: str, plan: Mapping[TopicAndPartition, OffsetReset | int]
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Apply a :meth:`plan_offset_reset` plan (or plain target offsets)."""
        targets = {
            tp: r.target if isinstance(r, OffsetReset) else r
            for tp, r in _mapping("plan", plan).items()
        }
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
        checked = {_partition(tp): _time(t) for tp, t in _mapping("specs", specs).items()}
        level = IsolationLevel(isolation_level)
        return self._run(self._list_offsets(checked, level))

    async def _list_offsets(
        self, specs: Mapping[TopicAndPartition, int], level: IsolationLevel
    ) -> dict[TopicAndPartition, ListedOffset]:
        timeout_ms = int(self.client.timeout * 1000)

        def make_call(batch: dict[TopicAndPartition, int]) -> ListedOffsetsCall:
            payloads = [OffsetRequest(tp.topic, tp.partition, t, 1) for tp, t in batch.items()]
            return ListedOffsetsCall(payloads, timeout_ms, int(level))

        return await self._router.to_leaders(specs, make_call, self.client.timeout)

    def delete_records(
        self, before: Mapping[TopicAndPartition, int], *, timeout_ms: int | None = None
    ) -> Deferred[dict[TopicAndPartition, DeletedRecords]]:
        """Delete each partition's records before the given offset (-1: all of them).

        Fires ``{partition: DeletedRecords}`` with the new log start offsets.
        """
        checked = {
            _partition(tp): _offset(o, allow_latest=True)
            for tp, o in _mapping("before", before).items()
        }
        timeout = self._server_timeout(timeout_ms)

        def make_call(batch: dict[TopicAndPartition, int]) -> DeleteRecordsCall:
            return DeleteRecordsCall(batch, timeout)

        return self._run(
            self._router.to_leaders(checked, make_call, self.client.timeout + timeout / 1000)
        )

    # -- ACLs and SCRAM ---------------------------------------------------------

    def describe_acls(self, acl_filter: AclBinding) -> Deferred[list[AclBinding]]:
        """The ACLs matching *acl_filter* (``None`` names and ANY values match all)."""
        _binding_check(acl_filter)
        return self._run(self._router.to_any(DescribeAclsCall(acl_filter)))

    def create_acls(self, bindings: Iterable[AclBinding]) -> Deferred[list[ItemResult]]:
        """Create ACLs; fires one ItemResult per binding, in order."""
        new = [_binding_check(b) for b in _items("bindings", bindings)]
        return self._run(self._router.to_any(CreateAclsCall(new)))

    def delete_acls(self, filters: Iterable[AclBinding]) -> Deferred[list[AclDeletion]]:
        """Delete the ACLs each filter matches; fires one AclDeletion per filter."""
        wanted = [_binding_check(f) for f in _items("filters", filters)]
        return self._run(self._router.to_any(DeleteAclsCall(wanted)))

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> Deferred[dict[str, UserScramCredentials]]:
        """SCRAM mechanisms and iterations of *users* (of every user when None)."""
        names = None if users is None else [_text("users", u) for u in _items("users", users)]

        return self._one_answer(DescribeScramCall(names))

    def alter_user_scram_credentials(
        self, changes: Iterable[ScramUpsertion | ScramDeletion]
    ) -> Deferred[dict[str, ItemResult]]:
        """Set or delete users' SCRAM credentials; fires ``{user: ItemResult}``."""
        wanted = _items("changes", changes)
        for c in wanted:
            if not isinstance(c, (ScramUpsertion, ScramDeletion)):
                raise TypeError(f"changes must be ScramUpsertion or ScramDeletion, not {c!r}")
        call = AlterScramCall(wanted)

        return self._one_answer(call)

    # -- log dirs, features, the metadata quorum ---------------------------------

    def describe_log_dirs(
        self,
        brokers: Iterable[int] | None = None,
        *,
        partitions: Iterable[TopicAndPartition] | None = None,
    ) -> Deferred[dict[int, dict[str, LogDirDescription]]]:
        """Each broker's log directories (every broker's when *brokers* is None) with
        their replicas (only of *partitions* when given), as ``kafka-log-dirs``.

        Fires ``{broker id: {path: LogDirDescription}}``; a broker id the cluster
        lacks fails the call (BROKER_NOT_AVAILABLE).
        """
        nodes = (
            None
            if brokers is None
            else [integer("brokers", b, 0, INT32_MAX) for b in _items("brokers", brokers)]
        )
        parts = (
            None
            if partitions is None
            else [_partition(tp) for tp in _items("partitions", partitions)]
        )
        return self._run(self._describe_log_dirs(nodes, parts))

    async def _describe_log_dirs(
        self, nodes: list[int] | None, parts: list[TopicAndPartition] | None
    ) -> dict[int, dict[str, LogDirDescription]]:
        known, _ = await self._router.brokers()
        wanted = sorted(known) if nodes is None else list(dict.fromkeys(nodes))
        missing = [n for n in wanted if n not in known]
        if missing:
            raise BrokerResponseError.from_errno(
                ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {missing[0]} in the cluster"
            )
        answers = await self._router.gather(
            self._router.to_broker(known[n], DescribeLogDirsCall(parts)) for n in wanted
        )
        return {n: dirs for n, (dirs,) in zip(wanted, answers, strict=True)}

    def describe_features(self) -> Deferred[FeatureMetadata]:
        """The cluster's finalized feature levels (``metadata.version``,
        ``transaction.version`` ...) and what the answering broker supports
        (ApiVersions v3+, Kafka 2.7+), as ``kafka-features describe``."""
        return self._one_answer(ApiVersionsFeaturesCall())

    def update_features(
        self,
        updates: Mapping[str, FeatureUpdate | int],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> Deferred[dict[str, ItemResult]]:
        """Upgrade (or, with a :class:`FeatureUpdate` of a downgrade type, downgrade)
        feature levels; an int is an upgrade to that level.  Sent to any broker, which
        forwards it to the controller (KRaft).  Fires ``{feature: ItemResult}``."""
        checked = {}
        for name, u in _mapping("updates", updates).items():
            level = u.max_version_level if isinstance(u, FeatureUpdate) else u
            how = u.upgrade_type if isinstance(u, FeatureUpdate) else FeatureUpgradeType.UPGRADE
            checked[_text("updates", name)] = FeatureUpdate(_level(level), FeatureUpgradeType(how))
        if not checked:
            raise ValueError("updates must name at least one feature")
        call = UpdateFeaturesCall(checked, self._server_timeout(timeout_ms), bool(validate_only))

        return self._one_answer(call)

    def describe_metadata_quorum(self) -> Deferred[QuorumInfo]:
        """The KRaft metadata quorum: its leader, epoch, high watermark, voters and
        observers with their lag (DescribeQuorum, forwarded to the controller), as
        ``kafka-metadata-quorum describe --status/--replication``."""
        return self._one_answer(DescribeQuorumCall())

    # -- client quotas -------------------------------------------------------------

    def describe_client_quotas(
        self, filters: Iterable[QuotaFilter] = (), *, strict: bool = False
    ) -> Deferred[dict[QuotaEntity, dict[str, float]]]:
        """The quotas of the entities every filter matches (with *strict*, of entities
        of exactly the filters' types); no filter matches every entity.

        Fires ``{QuotaEntity: {"producer_byte_rate": 1024.0, ...}}``.
        """
        wanted = _items("filters", filters)
        for f in wanted:
            if not isinstance(f, QuotaFilter):
                raise TypeError(f"filters must be QuotaFilter values, not {f!r:.100}")
            _entity_type(f.entity_type)
            if (f.match_type == QuotaMatch.EXACT) != isinstance(f.match, str):
                raise ValueError(f"an EXACT filter (and only one) names an entity: {f!r}")

        return self._one_answer(DescribeQuotasCall(wanted, bool(strict)))

    def alter_client_quotas(
        self,
        changes: Mapping[QuotaEntity, Mapping[str, float | None]],
        *,
        validate_only: bool = False,
    ) -> Deferred[dict[QuotaEntity, ItemResult]]:
        """Set quota values (``None`` removes one) per entity; fires ``{entity: ItemResult}``."""
        checked: dict[QuotaEntity, dict[str, float | None]] = {}
        for entity, ops in _mapping("changes", changes).items():
            if not isinstance(entity, QuotaEntity):
                raise TypeError(f"changes must be keyed by QuotaEntity, not {entity!r:.100}")
            for t, name in entity.parts:
                _entity_type(t)
                if name is not None:
                    _text("an entity name", name)
            values = {}
            for key, value in _mapping("a quota change", ops).items():
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0
                ):
                    raise ValueError(f"quota {key!r} must be a number > 0 or None, not {value!r}")
                values[_text("a quota key", key)] = None if value is None else float(value)
            checked[entity] = values
        call = AlterQuotasCall(checked, bool(validate_only))

        return self._one_answer(call)

    # -- reassignments and leader elections ----------------------------------------

    def alter_partition_reassignments(
        self,
        targets: Mapping[TopicAndPartition, Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Move partitions to new replica lists (the first the preferred leader); ``None``
        cancels a partition's ongoing move.  At the controller; fires ``{partition:
        ItemResult}`` once each move has started (follow it with
        :meth:`list_partition_reassignments`)."""
        checked: dict[TopicAndPartition, tuple[int, ...] | None] = {}
        for tp, replicas in _mapping("targets", targets).items():
            if replicas is None:
                checked[_partition(tp)] = None
                continue
            nodes = tuple(
                integer("a replica", r, 0, INT32_MAX) for r in _items("replicas", replicas)
            )
            if not nodes or len(set(nodes)) != len(nodes):
                raise ValueError(f"replicas of {tp} must be distinct broker ids, not {replicas!r}")
            checked[_partition(tp)] = nodes
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._router.to_controller(
                list(checked),
                lambda tp: tp,
                lambda batch: AlterReassignmentsCall({tp: checked[tp] for tp in batch}, timeout),
                timeout,
            )
        )

    def list_partition_reassignments(
        self, partitions: Iterable[TopicAndPartition] | None = None
    ) -> Deferred[dict[TopicAndPartition, PartitionReassignment]]:
        """The ongoing reassignments (of *partitions*, or all), at the controller."""
        parts = (
            None
            if partitions is None
            else [_partition(tp) for tp in _items("partitions", partitions)]
        )
        timeout = self.timeout_ms
        return self._run(
            self._router.to_controller(
                [None], lambda i: i, lambda _: ListReassignmentsCall(parts, timeout), timeout
            )
        )

    def elect_leaders(
        self,
        election_type: ElectionType | int = ElectionType.PREFERRED,
        partitions: Iterable[TopicAndPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> Deferred[dict[TopicAndPartition, ItemResult]]:
        """Elect the preferred (or, UNCLEAN, any live) replica as leader of *partitions*
        (of every partition that needs it when None), at the controller, as
        ``kafka-leader-election``.  A partition already led by its preferred replica
        answers ELECTION_NOT_NEEDED."""
        election = ElectionType(election_type)
        parts = (
            None
            if partitions is None
            else [_partition(tp) for tp in _items("partitions", partitions)]
        )
        timeout = self._server_timeout(timeout_ms)
        return self._run(
            self._router.to_controller(
                parts if parts is not None else [None],
                lambda tp: tp,
                lambda batch: ElectLeadersCall(
                    election, None if parts is None else list(batch), timeout
                ),
                timeout,
            )
        )

    # -- transactions ----------------------------------------------------------

    def describe_producers(
        self, partitions: Iterable[TopicAndPartition], *, broker_id: int | None = None
    ) -> Deferred[dict[TopicAndPartition, PartitionProducers]]:
        """The producers each partition's leader (or, with *broker_id*, that replica)
        keeps state for, with their open transactions' first offsets.

        Fires ``{partition: PartitionProducers}``.
        """
        parts = [_partition(tp) for tp in _items("partitions", partitions)]
        if broker_id is not None:
            node = integer("broker_id", broker_id, 0, INT32_MAX)
            return self._run(self._router.to_nodes({node: parts}, DescribeProducersCall))
        return self._run(
            self._router.to_leaders(
                dict.fromkeys(parts),
                lambda batch: DescribeProducersCall(batch),
                self.client.timeout,
            )
        )

    def list_transactions(
        self,
        *,
        states: Iterable[str] | None = None,
        producer_ids: Iterable[int] | None = None,
        min_duration_ms: int | None = None,
        pattern: str | None = None,
    ) -> Deferred[list[TransactionListing]]:
        """Every transactional id the cluster's coordinators know (ListTransactions at
        every broker), sorted; only those in *states* (``"Ongoing"`` ...), of
        *producer_ids*, open at least *min_duration_ms* (Kafka 3.8+) or matching the
        regular expression *pattern* (Kafka 4.1+) when given."""
        wanted = [] if states is None else [_text("states", x) for x in _items("states", states)]
        pids = (
            []
            if producer_ids is None
            else [_producer_id(p) for p in _items("producer_ids", producer_ids)]
        )
        duration = -1 if min_duration_ms is None else _offset(min_duration_ms)
        regex = None if pattern is None else _text("pattern", pattern)
        return self._run(self._list_transactions(wanted, pids, duration, regex))

    async def _list_transactions(
        self, states: list[str], pids: list[int], duration: int, pattern: str | None
    ) -> list[TransactionListing]:
        answers = await self._router.to_every_broker(
            lambda: ListTransactionsCall(states, pids, duration, pattern)
        )
        found = {t.transactional_id: t for answer in answers for t in answer}
        return [found[k] for k in sorted(found)]

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> Deferred[dict[str, TransactionDescription]]:
        """Each transactional id's state at its coordinator.

        Fires ``{id: TransactionDescription}`` (TRANSACTIONAL_ID_NOT_FOUND for an unknown id).
        """
        ids = [
            _text("transactional_ids", t) for t in _items("transactional_ids", transactional_ids)
        ]
        return self._run(self._describe_transactions(ids))

    async def _describe_transactions(self, ids: list[str]) -> dict[str, TransactionDescription]:
        router = self._router

        async def describe(tid: str) -> Any:
            return await router.to_txn_coordinator(
                tid, lambda c: DescribeTransactionsCall(tid, c.node_id)
            )

        return await router.per_group(list(dict.fromkeys(ids)), describe)

    def abort_transaction(self, spec: AbortTransactionSpec) -> Deferred[ItemResult]:
        """Write an ABORT marker for an open (hanging) transaction into one partition, at
        its leader, as ``kafka-transactions abort`` does.  Use it only for a transaction
        its coordinator lost (:meth:`find_hanging_transactions`): the marker ends the
        transaction in that partition whatever its producer does next."""
        if not isinstance(spec, AbortTransactionSpec):
            raise TypeError(f"spec must be an AbortTransactionSpec, not {spec!r:.100}")
        tp = _partition(spec.partition)
        _producer_id(spec.producer_id)
        integer("producer_epoch", spec.producer_epoch, 0, 2**15 - 1)
        integer("coordinator_epoch", spec.coordinator_epoch, -1, INT32_MAX)

        async def abort() -> ItemResult:
            results = await self._router.to_leaders(
                {tp: spec}, AbortMarkerCall, self.client.timeout
            )
            return results[tp]

        return self._run(abort())

    def find_hanging_transactions(
        self,
        *,
        partitions: Iterable[str | TopicAndPartition] | None = None,
        broker_id: int | None = None,
        max_transaction_timeout_ms: int = 900_000,
    ) -> Deferred[list[HangingTransaction]]:
        """Open transactions their coordinator no longer holds, as ``kafka-transactions
        find-hanging`` finds them: in *partitions* (topics, or single partitions), or in
        every partition *broker_id* hosts (exactly one of the two).

        Only transactions whose producer wrote nothing for *max_transaction_timeout_ms*
        (the brokers' ``transaction.max.timeout.ms``, Kafka's default 15 minutes) by the
        client's reactor clock are candidates; of those, hanging are the ones whose
        producer id no coordinator lists, or whose transaction (by its coordinator) is
        not open in that partition under that producer id.
        """
        if (partitions is None) == (broker_id is None):
            raise ValueError("give exactly one of partitions and broker_id")
        wanted = (
            None
            if partitions is None
            else [
                _partition(p) if isinstance(p, tuple) else topic_name(p)
                for p in _items("partitions", partitions)
            ]
        )
        node = None if broker_id is None else integer("broker_id", broker_id, 0, INT32_MAX)
        timeout = integer("max_transaction_timeout_ms", max_transaction_timeout_ms, 0, INT32_MAX)
        return self._run(self._find_hanging(wanted, node, timeout))

    async def _find_hanging(
        self, wanted: list[Any] | None, node: int | None, timeout_ms: int
    ) -> list[HangingTransaction]:
        topics = None if wanted is None else sorted({_topic_of(w) for w in wanted})
        parts = await self._partitions(
            topics,
            lambda tp, p: (
                (node is not None and node in p.replica_nodes)
                or (wanted is not None and (tp.topic in wanted or tp in wanted))
            ),
        )
        if not parts:
            return []
        producers = await self.describe_producers(parts, broker_id=node)
        cutoff = int(self.client.reactor.seconds() * 1000) - timeout_ms
        candidates = []
        for tp in sorted(producers):
            found = producers[tp]
            if found.error is not None:
                raise found.error
            candidates += [
                (tp, s)
                for s in found.active_producers
                if s.current_txn_start_offset >= 0 and s.last_timestamp <= cutoff
            ]
        if not candidates:
            return []
        pids = sorted({s.producer_id for _, s in candidates})
        listed = await self._list_transactions([], pids, -1, None)
        ids = {t.producer_id: t.transactional_id for t in listed}
        described = await self._describe_transactions(sorted(set(ids.values())))
        return hanging(candidates, ids, described)


#: What the admin client calls on its client (:class:`~afkak.client.AdminClient`).
_ADMIN_CALLS = (
    "send_request_to_broker",
    "send_request_to_any_broker",
    "send_request_to_coordinator",
    "reset_consumer_group_metadata",
    "send_offset_commit_request",
)


def _admin_client(client: object) -> AdminClient:
    """*client* if it has the :class:`~afkak.client.AdminClient` calls, a reactor and a
    timeout (checked structurally: a KafkaClient, or a wrapper of one)."""
    missing = [name for name in _ADMIN_CALLS if not callable(getattr(client, name, None))]
    if missing:
        raise TypeError(
            f"client must be an AdminClient such as a KafkaClient, not {client!r:.100} "
            f"(it has no {', '.join(missing)})"
        )
    if not callable(getattr(getattr(client, "reactor", None), "callLater", None)):
        raise TypeError(f"client.reactor must provide callLater, not {client!r:.100}")
    if not isinstance(getattr(client, "rng", None), random.Random):
        raise TypeError(f"client.rng must be a random.Random, not {client!r:.100}")
    number("client.timeout", getattr(client, "timeout", None))
    return client  # type: ignore[return-value]


def _ms(name: str, value: object) -> int:
    return integer(name, value, 0, INT32_MAX)


def _entity_type(value: object) -> str:
    if value not in ENTITY_TYPES:
        raise ValueError(f"a quota entity type is one of {sorted(ENTITY_TYPES)}, not {value!r}")
    return str(value)


def _level(value: object) -> int:
    return integer("a feature level", value, 0, 2**15 - 1)


def _producer_id(value: object) -> int:
    return integer("a producer id", value, 0, _INT64_MAX)


def _topic_of(wanted: str | TopicAndPartition) -> str:
    return wanted.topic if isinstance(wanted, TopicAndPartition) else wanted


def _count(value: object) -> int:
    return integer("a partition count", value, 1, INT32_MAX)


def _offset(value: object, allow_latest: bool = False) -> int:
    """An offset to commit or delete before; -1 (the log end) where *allow_latest*."""
    return integer("an offset", value, -1 if allow_latest else 0, _INT64_MAX)


def _time(value: object) -> int:
    """A ListOffsets time: a timestamp >= 0 or an :class:`OffsetSpec`."""
    return integer("a ListOffsets time", value, OffsetSpec.MAX_TIMESTAMP, _INT64_MAX)


def _items(what: str, values: object) -> list[Any]:
    """The items of a collection argument: one bare ``str``/``bytes`` is refused, not split."""
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
        raise TypeError(f"{what} must be a collection, not {values!r:.100}")
    return list(values)


def _mapping(what: str, values: object) -> Mapping[Any, Any]:
    if not isinstance(values, Mapping):
        raise TypeError(f"{what} must be a mapping, not {values!r:.100}")
    return values


def _partition(tp: object) -> TopicAndPartition:
    if not isinstance(tp, TopicAndPartition):
        raise TypeError(f"expected a TopicAndPartition, not {tp!r:.100}")
    return TopicAndPartition(
        topic_name(tp.topic), integer("a partition", tp.partition, 0, INT32_MAX)
    )


def _text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must hold str values, not {value!r:.100}")
    return value


def _resources(resources: Iterable[ConfigResource]) -> list[ConfigResource]:
    checked = _items("resources", resources)
    for r in checked:
        if not isinstance(r, ConfigResource):
            raise TypeError(f"resources must be ConfigResource values, not {r!r}")
        if r.type == ConfigResourceType.TOPIC:
            topic_name(r.name)
        elif r.type == ConfigResourceType.BROKER and r.name and not r.name.isdigit():
            raise ValueError(f"a broker config resource names a node id, not {r.name!r}")
    return checked


def _binding_check(binding: object) -> AclBinding:
    if not isinstance(binding, AclBinding):
        raise TypeError(f"expected an AclBinding, not {binding!r}")
    return binding
