"""afkak.group's names for afkak's other modules: not afkak's public API."""

from __future__ import annotations

from typing import Any


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
