"""afkak 21's private module path: its ``Coordinator``, and ``ConsumerGroup``.

Kept so that afkak 21 applications importing it keep working; the
implementation is ``afkak.group._afkak21``.  New code uses
:class:`afkak.group.GroupMember` or :class:`afkak.group.ConsumerGroup`.
"""

from afkak.group import ConsumerGroup
from afkak.group._interlayer import Coordinator

__all__ = ["ConsumerGroup", "Coordinator"]
