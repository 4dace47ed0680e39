"""What a group member tells the application, and asks it: the listener, liveness, the generation.

Each member (:mod:`._classic_member`, :mod:`._kip848_member`) and the
:mod:`._membership_loop` they share speak to the application through these.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs
from twisted.internet.defer import Deferred

from afkak.common import TopicAndPartition


@attrs.frozen
class Generation:
    """Who this member is in which generation: what its commits must carry."""

    generation_id: int
    member_id: str


class RebalanceListener(Protocol):
    def revoke(self, partitions: list[TopicAndPartition]) -> Deferred[Any] | None: ...

    def lose(self, partitions: list[TopicAndPartition]) -> Deferred[Any] | None: ...

    def prepare_join(self) -> Deferred[Any] | None: ...

    def assign(
        self, partitions: list[TopicAndPartition], generation: Generation
    ) -> Deferred[Any] | None: ...


class Liveness(Protocol):
    """The application side of ``max_poll_interval_ms``."""

    def stuck(self) -> str | None:
        """Why the application is not live (None: it is)."""

    def until_live(self) -> Deferred[None]:
        """Fires once the calls that were stuck have returned."""
