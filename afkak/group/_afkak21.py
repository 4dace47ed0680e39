"""afkak 21.5 compatibility: its ``Coordinator`` (``afkak._group``), and its members' identity.

afkak 21 called ``Coordinator`` private ("you almost certainly want
ConsumerGroup"), but an application could subclass it to be given partitions
without Consumers (as 21.5's own integration tests do).  It is kept, as a thin
front of :class:`afkak.group.GroupMember`: afkak 21's constructor, attributes,
hooks and Deferreds.  New code uses :class:`afkak.group.GroupMember` or
:class:`afkak.group.ConsumerGroup`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.python.failure import Failure

from afkak.client import ConsumerClient
from afkak.common import RestartError, RestopError, TopicAndPartition

from ._classic_member import GroupMember
from ._listener import Generation
from ._roundrobin import RoundRobinAssignor


class Afkak21Identity:
    """afkak 21's ``member_id``, ``generation_id`` and ``leader_id`` of a group member's
    front (:class:`~afkak.group.ConsumerGroup`, ``afkak._group.Coordinator``): ``None``
    outside a generation, as afkak 21 had them."""

    member: Any

    @property
    def member_id(self) -> str:
        return str(self.member.member_id)

    @property
    def generation_id(self) -> int | None:
        """The generation joined, ``None`` when not in one (afkak 21's value)."""
        generation: int = self.member.generation_id
        return None if generation < 0 else generation

    @property
    def leader_id(self) -> str | None:
        return self.member.leader_id or None


class Coordinator(Afkak21Identity):
    """Membership of consumer group *group_id* for *topics*, without Consumers.

    afkak 21's parameters and defaults (milliseconds); partitions are assigned
    round robin and rebalanced eagerly, as afkak 21 did.  Override (or set on
    the instance) :meth:`on_join_prepare`, :meth:`on_join_complete` and
    :meth:`on_group_leave`.
    """

    def __init__(
        self,
        client: ConsumerClient,
        group_id: str,
        topics: Sequence[str],
        session_timeout_ms: int = 30000,
        heartbeat_interval_ms: int = 5000,
        initial_backoff_ms: int = 1000,
        retry_backoff_ms: int = 100,
        fatal_backoff_ms: int = 10000,
    ) -> None:
        if not topics:
            raise ValueError("topics must be non-empty")
        self.client = client
        self.group_id = group_id
        self.topics = list(topics)
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.initial_backoff_ms = initial_backoff_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.fatal_backoff_ms = fatal_backoff_ms
        self.member = GroupMember(
            client,
            group_id,
            self.topics,
            _Hooks(self),
            [RoundRobinAssignor()],
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=session_timeout_ms,  # afkak 21's JoinGroup v0 had no other
            heartbeat_interval_ms=heartbeat_interval_ms,
            retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=max(fatal_backoff_ms, retry_backoff_ms),
            initial_backoff_ms=initial_backoff_ms,
        )
        self._start_d: Deferred[Coordinator] | None = None
        self._stop_waiters: list[Deferred[None]] = []

    def __repr__(self) -> str:
        return f"<Coordinator {self.member!r}>"

    def start(self) -> Deferred[Coordinator]:
        """Join and stay in the group; fires with this Coordinator once stopped, fails
        with a fatal error."""
        if self._start_d is not None:
            raise RestartError("Start called on already-started coordinator")
        started = self._start_d = Deferred()
        self.member.start().addBoth(self._stopped)
        return started

    def stop(self) -> Deferred[None]:
        """Leave the group; fires once left."""
        if self._start_d is None:
            raise RestopError("Shutdown called on non-running coordinator")
        waiter: Deferred[None] = Deferred()
        self._stop_waiters.append(waiter)
        self.member.stop()
        return waiter

    def _stopped(self, result: Any) -> None:
        started, self._start_d = self._start_d, None
        waiters, self._stop_waiters = self._stop_waiters, []
        for waiter in waiters:
            waiter.callback(None)
        if started is not None and isinstance(result, Failure):
            started.errback(result)
        elif started is not None:
            started.callback(self)

    # -- afkak 21's hooks ---------------------------------------------------------

    def on_join_prepare(self) -> Any:
        """Called before joining or rejoining the group; may return a Deferred."""

    def on_join_complete(self, assignments: dict[str, tuple[int, ...]]) -> Any:
        """Called after each rebalance with ``{topic: (partition, ...)}`` owned now."""

    def on_group_leave(self) -> Any:
        """Called when the member was put out of the group (fenced, its session lost)."""


class _Hooks:
    """The member's listener: afkak 21's hooks, looked up on the Coordinator each time."""

    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator

    def prepare_join(self) -> Any:
        return self.coordinator.on_join_prepare()

    def revoke(self, partitions: list[TopicAndPartition]) -> None:
        """Nothing to hand over: afkak 21's Coordinator had no Consumers."""

    def lose(self, partitions: list[TopicAndPartition]) -> Deferred[Any]:
        return maybeDeferred(self.coordinator.on_group_leave)

    def assign(self, partitions: list[TopicAndPartition], generation: Generation) -> Any:
        assignments: dict[str, tuple[int, ...]] = {}
        for tp in sorted(partitions):
            assignments[tp.topic] = (*assignments.get(tp.topic, ()), tp.partition)
        return self.coordinator.on_join_complete(assignments)
