"""A group's lag in a partition, and where an offset reset puts it."""

from __future__ import annotations

import attrs


@attrs.frozen
class PartitionLag:
    """A group's position in a partition: committed offset (-1: none), log end, lag."""

    committed: int
    log_end: int

    @property
    def lag(self) -> int:
        """Records not yet consumed; the whole log end when nothing is committed."""
        return self.log_end - max(self.committed, 0)


def reset_target(
    how: str, value: int | None, current: int, earliest: int, latest: int, found: int | None
) -> int:
    """The offset a reset moves a group to, kept within earliest..latest as
    kafka-consumer-groups does.

    *how* is "earliest", "latest", "offset", "shift" (from the committed
    offset, or from earliest when none) or "timestamp" (*found* is what
    ListOffsets answered for it: -1 when no record is that recent, so latest).
    """
    if how == "earliest":
        target = earliest
    elif how == "latest":
        target = latest
    elif how == "offset":
        target = int(value or 0)
    elif how == "shift":
        target = (current if current >= 0 else earliest) + int(value or 0)
    elif how == "timestamp":
        target = latest if found is None or found < 0 else found
    else:
        raise ValueError(f"unknown reset {how!r}")
    return min(max(target, earliest), latest)
