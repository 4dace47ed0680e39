"""The package's layers import only downwards.

Wire protocol -> records and codecs -> one broker connection -> KafkaClient ->
producer / consumer -> consumer groups and admin -> integrations (testing kit,
Spark, the command line).
``afkak.common`` and its private parts sit below everything.  A module may
import from its own layer and from any layer below, never from above.
"""

from __future__ import annotations

import ast
import os
import unittest

import afkak

ROOT = os.path.dirname(afkak.__file__)

#: Top-level afkak module or package -> layer number (higher imports lower).
LAYERS = {
    "_version": 0,
    "_errors": 0,
    "_broker_errors": 0,
    "_structs": 0,
    "common": 0,
    "protocol": 1,
    "codec": 2,
    "records": 2,
    "message_set": 2,
    "connection": 3,
    "client": 4,
    "partitioner": 5,
    "producer": 5,
    "consumer": 5,
    "group": 6,
    "admin": 6,
    "testing": 7,
    "spark": 7,
    "cli": 7,
    "__main__": 7,
}


def _afkak_imports(path: str) -> set[str]:
    """The top-level afkak names (``client``, ``records`` ...) that *path* imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            if node.module == "afkak":
                modules = [f"afkak.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "afkak" and len(parts) > 1:
                names.add(parts[1])
    return names


class LayeringTests(unittest.TestCase):
    def test_every_top_level_module_has_a_layer(self) -> None:
        entries = {
            name.removesuffix(".py")
            for name in os.listdir(ROOT)
            if (name.endswith(".py") and name != "__init__.py")
            or os.path.isfile(os.path.join(ROOT, name, "__init__.py"))
        }
        self.assertEqual(entries - {"test"} - set(LAYERS), set())

    def test_imports_point_downwards(self) -> None:
        violations = []
        for top, layer in LAYERS.items():
            base = os.path.join(ROOT, top)
            paths = (
                [base + ".py"]
                if os.path.isfile(base + ".py")
                else [
                    os.path.join(d, f)
                    for d, _, files in os.walk(base)
                    for f in files
                    if f.endswith(".py")
                ]
            )
            for path in paths:
                for imported in _afkak_imports(path):
                    if LAYERS.get(imported, 99) > layer:
                        violations.append(f"{os.path.relpath(path, ROOT)} imports afkak.{imported}")
        self.assertEqual(violations, [])
