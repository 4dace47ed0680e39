"""A package's public names imported on first use (PEP 562), for ``afkak`` and ``afkak.spark``.

Each process pays for what it uses: a Spark planner or a command-line start
imports the client alone, not the whole library.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, str], namespace: dict[str, Any], public: list[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of *package*: a name in *where* is imported
    from its module on first use and kept in *namespace*; *public* is its ``__all__``."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
