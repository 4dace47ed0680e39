"""Where each admin request goes, and sending it again when its target moved.

Kafka routes admin requests four ways: topic creation and deletion to the
controller (items refused with NOT_CONTROLLER are sent again to the new one),
group calls to the group's coordinator (again when it moved or was loading),
records and offsets to each partition's leader (again when leadership moved),
the rest to any broker or to a named one.  :class:`Router` does the four, with
one fan-out (:meth:`Router.gather`) and one retry loop (:meth:`Router.resend`,
afkak's :func:`~afkak._retry.retrying`): bounded by ``retries``, spaced by the
admin client's policy (doubling to a cap, jittered from the client's ``rng``)
on the client's reactor.
:class:`~afkak.admin.KafkaAdminClient` builds the calls and shapes the answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence, Sized
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, gatherResults

from afkak._retry import RetryPolicy, retrying
from afkak.client import AdminClient
from afkak.client._interlayer import (
    COORDINATOR_MOVED,
    LEADER_MOVED,
    TRANSACTION_KEY_TYPE,
    FindCoordinatorCall,
)
from afkak.common import (
    BrokerConnectionError,
    BrokerMetadata,
    BrokerResponseError,
    ErrorCode,
    KafkaUnavailableError,
    LeaderNotAvailableError,
    TopicAndPartition,
    UnknownTopicOrPartitionError,
)
from afkak.protocol.messages import MetadataRequest

from ._types import ItemResult, _error_or_none

T = TypeVar("T")

#: COORDINATOR_LOAD_IN_PROGRESS, with the codes that mean the coordinator moved.
COORDINATOR_RETRY = COORDINATOR_MOVED | {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def _left(what: str) -> Callable[[Sized], str | None]:
    """*again* for :meth:`Router.resend`: items left to resend, or None when there are none."""
    return lambda left: f"{len(left)} {what}" if left else None


def errno_of(result: Any) -> int:
    """The errno of a result's ``error`` (0: none)."""
    error = getattr(result, "error", None)
    return getattr(error, "errno", 0) if error is not None else 0


class Router:
    """Sends admin calls where Kafka wants them, resending what was refused because
    the controller, a coordinator or a leader moved."""

    def __init__(self, client: AdminClient, retries: int, policy: RetryPolicy) -> None:
        self.client = client
        self.retries = retries
        #: Seconds to wait before the n-th resend.
        self.policy = policy

    # -- the one fan-out and the one retry ---------------------------------------

    @staticmethod
    async def gather(sends: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
        """Run *sends* at once; their results in order, or the first failure."""
        return await gatherResults(
            [Deferred.fromCoroutine(s) for s in sends], consumeErrors=True
        ).addErrback(lambda f: f.value.subFailure)

    def resend(
        self,
        attempt: Callable[[], Awaitable[T]],
        again: Callable[[T], str | None],
        what: str,
        retriable: Callable[[BaseException], bool] = lambda e: False,
        on_retry: Callable[[Any], None] | None = None,
    ) -> Coroutine[Any, Any, T]:
        """``attempt()`` again while *again* names something left to resend (or it
        failed *retriable*-ly), up to ``retries`` more times, spaced by ``policy``."""
        return retrying(
            self.client.reactor,
            attempt,
            self.policy,
            retriable=retriable,
            again=again,
            max_attempts=self.retries + 1,
            on_retry=on_retry,
            what=what,
        )

    # -- any broker, a named broker --------------------------------------------

    async def metadata(self, topics: Sequence[str] | None) -> Any:
        """Metadata, never auto-creating topics; ``None`` asks for all, ``()`` for none."""
        request = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return await self.client.send_request_to_any_broker(request, min_version=1)

    async def brokers(self) -> tuple[dict[int, BrokerMetadata], int]:
        """The cluster's brokers by node id, and the controller's id."""
        response = await self.metadata(())
        brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers}
        return brokers, response.controller_id

    async def to_any(self, call: Any) -> Any:
        response = await self.client.send_request_to_any_broker(call)
        return call.parse(response)

    async def to_broker(
        self, broker: BrokerMetadata, call: Any, timeout: float | None = None
    ) -> Any:
        response = await self.client.send_request_to_broker(broker, call, timeout=timeout)
        return call.parse(response)

    async def to_every_broker(self, make_call: Callable[[], Any]) -> list[Any]:
        """One call to each broker of the cluster; their parsed answers."""
        brokers, _ = await self.brokers()
        return await self.gather(self.to_broker(b, make_call()) for b in brokers.values())

    async def to_nodes(
        self, by_node: Mapping[int | None, Any], make_call: Callable[[Any], Any]
    ) -> dict[Any, Any]:
        """Each batch to its broker (``None``: to any broker); merged per-item results.

        The batch of a node the cluster lacks gets its call's ``failed(error)``.
        """
        brokers = (await self.brokers())[0] if set(by_node) - {None} else {}
        results: dict[Any, Any] = {}
        sends = []
        for node, batch in by_node.items():
            call = make_call(batch)
            if node is None:
                sends.append(self.to_any(call))
            elif node in brokers:
                sends.append(self.to_broker(brokers[node], call))
            else:
                error = BrokerResponseError.from_errno(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {node} in the cluster"
                )
                results.update(call.failed(error))
        for (answered,) in await self.gather(sends):
            results.update(answered)
        return results

    # -- the controller ---------------------------------------------------------

    async def to_controller(
        self,
        items: Sequence[Any],
        key: Callable[[Any], Any],
        make_call: Callable[[Sequence[Any]], Any],
        timeout_ms: int,
    ) -> dict[Any, Any]:
        """Send *items* to the controller; resend those it refused as NOT_CONTROLLER."""
        results: dict[Any, Any] = {}
        pending = list(items)

        async def attempt() -> list[Any]:
            nonlocal pending
            brokers, controller_id = await self.brokers()
            if not brokers:
                raise KafkaUnavailableError("the cluster's metadata names no brokers")
            controller = brokers.get(controller_id) or next(iter(brokers.values()))
            timeout = self.client.timeout + timeout_ms / 1000
            (answered,) = await self.to_broker(controller, make_call(pending), timeout)
            results.update(answered)
            pending = [
                i for i in pending if errno_of(answered.get(key(i))) == ErrorCode.NOT_CONTROLLER
            ]
            return pending

        await self.resend(attempt, _left("item(s) refused as NOT_CONTROLLER"), "controller request")
        return results

    # -- a group's coordinator -------------------------------------------------------

    async def to_coordinator(self, group: str, make_call: Callable[[], Any]) -> Any:
        """Send one call to *group*'s coordinator; again (up to ``retries``) if it moved."""

        async def attempt() -> Any:
            call = make_call()
            response = await self.client.send_request_to_coordinator(group, call)
            return call.parse(response)

        return await self._coordinated(
            f"group {group!r}",
            attempt,
            on_retry=lambda _: self.client.reset_consumer_group_metadata(group),
        )

    async def to_txn_coordinator(
        self, transactional_id: str, make_call: Callable[[BrokerMetadata], Any]
    ) -> Any:
        """Send one call to *transactional_id*'s coordinator (found afresh each attempt,
        so a moved one is found again); ``make_call(coordinator)`` builds it."""

        async def attempt() -> Any:
            (coordinator,) = await self.to_any(
                FindCoordinatorCall(transactional_id, TRANSACTION_KEY_TYPE)
            )
            return await self.to_broker(coordinator, make_call(coordinator))

        return await self._coordinated(f"transactional id {transactional_id!r}", attempt)

    def _coordinated(
        self,
        what: str,
        attempt: Callable[[], Awaitable[Any]],
        on_retry: Callable[[Any], None] | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """*attempt* again while its answer (or failure) says the coordinator moved."""

        def moved(results: Any) -> str | None:
            items = results[0].values() if isinstance(results[0], dict) else results
            moved = any(errno_of(r) in COORDINATOR_RETRY for r in items)
            return f"the coordinator of {what} moved" if moved else None

        def gone(error: BaseException) -> bool:
            # The coordinator went away, or moved: look it up again.
            return isinstance(error, BrokerConnectionError) or (
                isinstance(error, BrokerResponseError) and error.errno in COORDINATOR_RETRY
            )

        return self.resend(
            attempt,
            moved,
            f"request to the coordinator of {what}",
            retriable=gone,
            on_retry=on_retry,
        )

    async def per_group(
        self, groups: list[str], run: Callable[[str], Coroutine[Any, Any, Any]]
    ) -> dict[str, Any]:
        """``run(group)`` for every group at once; ``{group: its first result}``."""
        answers = await self.gather(run(g) for g in groups)
        return {g: a[0] for g, a in zip(groups, answers, strict=True)}

    async def commit_offsets(
        self, group: str, payloads: list[Any]
    ) -> dict[TopicAndPartition, ItemResult]:
        """OffsetCommit of *payloads* for *group*; again for those its moved coordinator refused."""
        results: dict[TopicAndPartition, ItemResult] = {}
        pending = payloads

        async def attempt() -> list[Any]:
            nonlocal pending
            responses = await self.client.send_offset_commit_request(
                group, pending, fail_on_error=False
            )
            retry = set()
            for r in responses:
                tp = TopicAndPartition(r.topic, r.partition)
                results[tp] = ItemResult(_error_or_none(r.error))
                if r.error in COORDINATOR_RETRY:
                    retry.add(tp)
            pending = [p for p in pending if TopicAndPartition(p.topic, p.partition) in retry]
            return pending

        await self.resend(
            attempt,
            _left(f"offset(s) refused by the coordinator of group {group!r}"),
            "offset commit",
        )
        return results

    # -- partition leaders ---------------------------------------------------

    async def to_leaders(
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

        async def attempt() -> dict[TopicAndPartition, Any]:
            nonlocal pending
            response = await self.metadata(sorted({tp.topic for tp in pending}))
            brokers = {
                b.node_id: BrokerMetadata(b.node_id, b.host, b.port) for b in response.brokers
            }
            leaders: dict[int, dict[TopicAndPartition, Any]] = {}
            problems: dict[TopicAndPartition, BrokerResponseError] = {}
            layout = {t.name: t for t in response.topics}
            for tp, item in pending.items():
                t = layout.get(tp.topic)
                part = (
                    next((p for p in t.partitions if p.partition_index == tp.partition), None)
                    if t
                    else None
                )
                if t is not None and t.error_code:
                    problems[tp] = BrokerResponseError.from_errno(t.error_code)
                elif part is None:
                    problems[tp] = UnknownTopicOrPartitionError()
                elif part.leader_id not in brokers:
                    problems[tp] = LeaderNotAvailableError()
                else:
                    leaders.setdefault(part.leader_id, {})[tp] = item
            answers = await self.gather(
                self.to_broker(brokers[n], make_call(batch), timeout)
                for n, batch in leaders.items()
            )
            for (answered,) in answers:
                results.update(answered)
            for tp, error in problems.items():
                results.update(make_call({tp: pending[tp]}).failed(error))
            pending = {
                tp: pending[tp] for tp in pending if errno_of(results.get(tp)) in LEADER_MOVED
            }
            return pending

        await self.resend(attempt, _left("partition(s) whose leader moved"), "leader requests")
        return results
