"""The fake cluster's operator state: feature levels and the client quotas' entities.

Feature levels start with ``metadata.version`` only (no ``transaction.version``, so
producers keep the transaction protocol they use against the fake cluster otherwise);
tests set ``cluster.state.features`` for more.
"""

from __future__ import annotations

import attrs

from afkak._broker_errors import InvalidUpdateVersion
from afkak.testing._lookup import code

#: Kafka's UpdateFeatures upgrade types (KIP-778).
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
#: A quota entity: its (type, name or None for the default) pairs, sorted.
Entity = tuple[tuple[str, str | None], ...]


@attrs.define
class FeatureLevels:
    """What the brokers support of each feature, the finalized levels, and the metadata
    offset (the features' epoch and the quorum's high watermark)."""

    supported: dict[str, tuple[int, int]] = attrs.field(
        factory=lambda: {"metadata.version": (7, 27)}
    )
    finalized: dict[str, int] = attrs.field(factory=lambda: {"metadata.version": 27})
    metadata_offset: int = 1

    def update(self, name: str, level: int, how: int) -> int:
        """Apply one update; the error code (0: applied)."""
        low, high = self.supported.get(name, (0, 0))
        current = self.finalized.get(name, 0)
        downgrade = level < current
        if (downgrade and how == UPGRADE) or (level and not low <= level <= high):
            return code(InvalidUpdateVersion)
        if level:
            self.finalized[name] = level
        else:
            self.finalized.pop(name, None)
        self.metadata_offset += 1
        return 0

    def copy(self) -> FeatureLevels:
        return attrs.evolve(self, finalized=dict(self.finalized))
