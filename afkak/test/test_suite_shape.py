"""The suite's two parts: every module is either a Clock module or marked ``brokers``."""

from __future__ import annotations

import ast
import os

from twisted.trial.unittest import SynchronousTestCase

from afkak.test.conftest import BROKER_MODULES, is_broker_module

HERE = os.path.dirname(os.path.abspath(__file__))
#: What only a broker or subprocess test needs: a module using one is marked.
_OUTSIDE_THE_CLOCK = ("afkak.test.brokers", "subprocess", "afkak.testing.EmbeddedBroker")
#: Modules whose subprocess lasts a second, no broker: this Python (a fresh
#: interpreter), or tools/venv.sh with a stand-in python.
QUICK_SUBPROCESS = frozenset(
    {"test_import_cost", "test_protocol_generator", "test_spark_planning", "test_tools_venv"}
)


def _modules() -> list[str]:
    return sorted(
        name[:-3] for name in os.listdir(HERE) if name.startswith("test_") and name.endswith(".py")
    )


def _source(module: str) -> str:
    with open(os.path.join(HERE, module + ".py"), encoding="utf-8") as f:
        return f.read()


def _may_leave_the_clock(source: str) -> bool:
    """Whether *source* spells the last part of a name in ``_OUTSIDE_THE_CLOCK``, as an
    import of it must: the others are not parsed (parsing all was a second of the suite)."""
    return any(name.rpartition(".")[2] in source for name in _OUTSIDE_THE_CLOCK)


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


class SuiteShapeTests(SynchronousTestCase):
    def test_broker_modules_exist(self) -> None:
        self.assertEqual(BROKER_MODULES - set(_modules()), set())

    def test_modules_that_start_brokers_are_marked(self) -> None:
        unmarked = [
            module
            for module in _modules()
            if not is_broker_module(module)
            and module not in QUICK_SUBPROCESS
            and _may_leave_the_clock(source := _source(module))
            and any(i.startswith(_OUTSIDE_THE_CLOCK) for i in _imports(source))
        ]
        self.assertEqual(unmarked, [])

    def test_marking_by_name(self) -> None:
        self.assertTrue(is_broker_module("test_group_brokers"))
        self.assertTrue(is_broker_module("test_chaos"))
        self.assertFalse(is_broker_module("test_group_member"))
