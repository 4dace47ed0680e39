"""afkak.testing's modules import one another without a cycle.

The request handlers change the cluster's state (``_cluster_state``); the
facade users build (``FakeKafkaCluster``, ``_cluster``) sits above both.  Every
import counts, those under ``TYPE_CHECKING`` and inside functions included:
a cycle there is the same knot, only hidden from the interpreter.
"""

from __future__ import annotations

import ast
import os
import tempfile
import unittest

import afkak.testing

PACKAGE = "afkak.testing"
ROOT = os.path.dirname(afkak.testing.__file__)


def imports_of(source: str, package: str = PACKAGE) -> set[str]:
    """The modules of ``package`` one module's source imports (``__init__`` for the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name == package:
                found.add("__init__")
            elif name.startswith(package + "."):
                found.add(name[len(package) + 1 :].split(".")[0])
    return found


def import_graph(root: str) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports, for every ``*.py`` in ``root``."""
    graph = {}
    for filename in sorted(os.listdir(root)):
        if filename.endswith(".py"):
            with open(os.path.join(root, filename), encoding="utf-8") as f:
                graph[filename[:-3]] = imports_of(f.read())
    return {module: deps & graph.keys() for module, deps in graph.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for dep in sorted(graph[module]):
            cycle = visit(dep, path + [module])
            if cycle:
                return cycle
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module, [])
        if cycle:
            return cycle
    return None


class TestingImportsTest(unittest.TestCase):
    def test_no_import_cycle(self) -> None:
        graph = import_graph(ROOT)
        self.assertIsNone(find_cycle(graph))

    def test_handlers_do_not_import_the_facade(self) -> None:
        graph = import_graph(ROOT)
        importers = sorted(m for m, deps in graph.items() if "_cluster" in deps)
        self.assertEqual(importers, ["__init__"])

    def test_a_planted_cycle_is_found(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            for name, source in {
                "_a.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from afkak.testing._b import B\n",
                "_b.py": "def f():\n    from afkak.testing import _a\n",
                "_c.py": "import afkak.testing._a\n",
            }.items():
                with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                    f.write(source)
            graph = import_graph(root)
        self.assertEqual(graph, {"_a": {"_b"}, "_b": {"_a"}, "_c": {"_a"}})
        self.assertEqual(find_cycle(graph), ["_a", "_b", "_a"])
