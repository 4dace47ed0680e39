"""afkak.group's names for afkak's other modules: not afkak's public API."""

from ._afkak21 import Coordinator

__all__ = ["Coordinator"]
