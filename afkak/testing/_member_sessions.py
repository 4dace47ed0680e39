"""Member session timeouts of the fake cluster's heartbeat-based coordinators (KIP-848's
consumer groups and KIP-932's share groups), on the cluster's reactor."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class MemberSessions(ABC):
    """A member that sends no heartbeat for ``session_timeout_ms`` is removed.

    The coordinator has ``cluster`` (with its ``reactor``), ``session_timeout_ms``,
    and removes a member with :meth:`_remove`; a member has ``member_id`` and
    ``session`` (its timer), a group ``members`` by id.
    """

    cluster: Any
    session_timeout_ms: int

    @abstractmethod
    def _remove(self, group: Any, member: Any) -> None:
        """Take *member* out of *group* (its session is over)."""

    def _touch(self, group: Any, member: Any) -> None:
        """A heartbeat: the session starts again."""
        self._stop_session(member)
        member.session = self.cluster.reactor.callLater(
            self.session_timeout_ms / 1000.0, self._expire, group, member
        )

    def _stop_session(self, member: Any) -> None:
        if member.session is not None and member.session.active():
            member.session.cancel()
        member.session = None

    def _expire(self, group: Any, member: Any) -> None:
        member.session = None
        if group.members.get(member.member_id) is member:
            self._remove(group, member)
