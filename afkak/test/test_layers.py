"""The package's layers import only downwards, through each package's public names.

Wire protocol -> records and codecs -> one broker connection -> KafkaClient ->
producer / consumer -> consumer groups and admin -> integrations (testing kit,
Spark, the command line).
``afkak.common`` and its private parts sit below everything.  A module may
import from its own layer and from any layer below, never from above; and from
another package only what that package exports, never its private modules
(``afkak.connection``, not ``afkak.connection._connection``), or the names a
package keeps for afkak's own layers (``afkak.client._interlayer``), which are
not in its public ``__all__``.  Inside a package, modules import one another
without a circle (imports under ``TYPE_CHECKING`` count too).  Kafka error codes
are named through ``ErrorCode`` (the one table, which gives the error classes
their codes), never written as numbers: not declared as constants, not listed
in sets, not compared with, not passed to ``from_errno``.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import tempfile
import unittest
from collections.abc import Callable

import afkak

ROOT = os.path.dirname(afkak.__file__)

#: Top-level afkak module or package -> layer number (higher imports lower).
LAYERS = {
    "_version": 0,
    "_errors": 0,
    "_broker_errors": 0,
    "_structs": 0,
    "_retry": 0,
    "_transitions": 0,
    "_lazy": 0,
    "common": 0,
    "metrics": 0,
    "protocol": 1,
    "codec": 2,
    "records": 2,
    "message_set": 2,
    "kafkacodec": 2,
    "connection": 3,
    "brokerclient": 3,
    "client": 4,
    "partitioner": 5,
    "producer": 5,
    "consumer": 5,
    "group": 6,
    "_group": 6,  # afkak 21's private module name, kept for its Coordinator
    "admin": 6,
    "testing": 7,
    "spark": 7,
    "cli": 7,
    "tracing": 7,
    "schema_registry": 7,
    "__main__": 7,
}


def _tree(path: str) -> ast.Module:
    """*path* parsed once for every check (keyed by its size and time, so a file
    changed while the suite runs is parsed again)."""
    stat = os.stat(path)
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parse(path: str, mtime_ns: int, size: int) -> ast.Module:
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


@functools.cache
def _nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of *tree* (its walk made once for all the checks)."""
    return list(ast.walk(tree))


@functools.cache
def _import_nodes(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements anywhere in *tree*."""
    return [node for node in _nodes(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


@functools.cache
def _attribute_nodes(tree: ast.Module) -> list[ast.Attribute]:
    """The attribute accesses anywhere in *tree*."""
    return [node for node in _nodes(tree) if isinstance(node, ast.Attribute)]


def _afkak_imports(path: str) -> set[str]:
    """The top-level afkak names (``client``, ``records`` ...) that *path* imports."""
    names = set()
    for node in _import_nodes(_tree(path)):
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


def _library_files() -> list[tuple[str, str]]:
    """(top-level afkak name, path) of every library module, tests excluded."""
    files = []
    for top in LAYERS:
        base = os.path.join(ROOT, top)
        if os.path.isfile(base + ".py"):
            files.append((top, base + ".py"))
        for d, _, names in os.walk(base):
            files.extend((top, os.path.join(d, f)) for f in names if f.endswith(".py"))
    return files


_SHARED = [name for name, layer in LAYERS.items() if name.startswith("_") and layer == 0]
#: The one private module of a package that the layers above may import.
INTERLAYER = "_interlayer"


def private_imports(path: str, package: str) -> list[str]:
    """Modules private to another afkak package that *path*, in *package*, imports."""
    found = []
    for node in _import_nodes(_tree(path)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            # afkak._errors, afkak._version ...: the shared base every layer may use.
            if parts[0] != "afkak" or len(parts) < 3 or parts[1] in (package, *_SHARED):
                continue
            # A package's names for afkak's layers above it (not the public API).
            if parts[2] == INTERLAYER:
                continue
            if any(part.startswith("_") for part in parts[2:]):
                found.append(module)
    return found


def declared_error_codes(path: str) -> list[str]:
    """Module-level ``NAME = <int>`` where NAME is a Kafka error code's name."""
    from afkak.common import BrokerResponseError

    names = {cls.message for cls in BrokerResponseError.errnos.values()}
    found = []
    for node in _tree(path).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, (ast.Constant, ast.UnaryOp))
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.lstrip("_") in names
        ):
            found.append(f"{node.targets[0].id} at line {node.lineno}")
    return found


def _is_int(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_a_code(node: ast.expr) -> bool:
    """Whether *node* reads like an error code (``error``, ``p.error_code``, ``errno``)."""
    text = ast.unparse(node).lower()
    return any(word in text for word in ("error", "errno", "code"))


def raw_error_codes(path: str) -> list[str]:
    """Error codes written as numbers in *path*: sets, comparisons, ``from_errno(<int>)``."""
    found: list[tuple[int, str]] = []
    for node in _nodes(_tree(path)):
        if isinstance(node, ast.Set) and all(map(_is_int, node.elts)):
            found.append((node.lineno, "set of numbers"))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            numbers = [
                side
                for side in sides
                if _is_int(side)
                or (isinstance(side, (ast.Tuple, ast.List)) and any(map(_is_int, side.elts)))
            ]
            if numbers and any(_names_a_code(side) for side in sides if side not in numbers):
                found.append((node.lineno, "comparison with a number"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("from_errno", "raise_for_errno")
            and node.args
            and _is_int(node.args[0])
        ):
            found.append((node.lineno, f"{node.func.attr}(<number>)"))
    return [f"{what} at line {line}" for line, what in sorted(found)]


def _module_name(path: str, root: str) -> str:
    """``afkak.group._listener`` for ``<root>/group/_listener.py`` (``afkak.group`` for its
    ``__init__.py``)."""
    parts = os.path.relpath(path, root).removesuffix(".py").split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["afkak", *parts])


def _imported_modules(path: str, name: str, modules: set[str]) -> set[str]:
    """The modules among *modules* that module *name* at *path* imports, anywhere in it."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in _import_nodes(_tree(path)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_circles(root: str) -> list[list[str]]:
    """Circles of imports between the modules of one afkak package under *root*."""
    paths = {}
    modules = set()
    for d, _, files in os.walk(root):
        for f in files if os.path.basename(d) != "test" else ():
            path = os.path.join(d, f)
            if f.endswith(".py"):
                paths[_module_name(path, root)] = path
            # A compiled module (``_crecords.cpython-311-x86_64-linux-gnu.so``) imports nothing.
            modules.add(_module_name(os.path.join(d, f.split(".")[0] + ".py"), root))

    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    graph = {
        name: sorted(m for m in _imported_modules(path, name, modules) if top(m) == top(name))
        for name, path in paths.items()
    }
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            circle = trail[trail.index(name) :]
            first = circle.index(min(circle))
            circle = circle[first:] + circle[:first]
            if circle not in circles:
                circles.append(circle)
            return
        if name in done:
            return
        for imported in graph.get(name, ()):
            visit(imported, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return circles


ACCUMULATOR = os.path.join(ROOT, "producer", "_accumulator.py")
#: How code names the producer's accumulator (``self._accumulator``, ``acc`` ...).
_ACCUMULATOR_NAMES = {"acc", "accumulator", "_accumulator"}
#: Text a module must hold to access one of them (``acc._x``, ``self._accumulator._x``).
_MAYBE_ACCUMULATOR_ACCESS = re.compile(r"\b(?:acc|accumulator|_accumulator)\s*\.\s*_")


def accumulator_private_names() -> set[str]:
    """The private attributes and methods of ``RecordAccumulator``."""
    with open(ACCUMULATOR, encoding="utf-8") as f:
        tree = ast.parse(f.read(), ACCUMULATOR)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "RecordAccumulator":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets
                ):
                    names.update(ast.literal_eval(item.value))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def accumulator_internals(path: str, private: set[str]) -> list[str]:
    """Where *path* reads or writes a private name of the accumulator."""
    with open(path, encoding="utf-8") as f:
        if not _MAYBE_ACCUMULATOR_ACCESS.search(f.read()):
            return []  # (most modules: not parsed at all)
    found = []
    for node in _attribute_nodes(_tree(path)):
        if node.attr not in private:
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
        if name in _ACCUMULATOR_NAMES:
            found.append(f"{name}.{node.attr} at line {node.lineno}")
    return found


def _planted(source: str, check: Callable[[str], list[str]]) -> list[str]:
    """What *check* finds in a module holding *source*: each check is shown to fail."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "planted.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return check(path)


class LayeringTests(unittest.TestCase):
    @classmethod
    def tearDownClass(cls) -> None:
        """The library's trees are dropped once the checks are done: kept, their
        three-quarters of a million nodes made every later ``gc.collect()`` in the
        suite slower."""
        for cached in (_parse, _nodes, _import_nodes, _attribute_nodes):
            cached.cache_clear()

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

    def test_no_private_imports_across_packages(self) -> None:
        violations = [
            f"{os.path.relpath(path, ROOT)} imports {module}"
            for top, path in _library_files()
            for module in private_imports(path, top)
        ]
        self.assertEqual(violations, [])

    def test_a_planted_private_import_is_found(self) -> None:
        found = _planted(
            "from afkak.connection import BrokerConnection\n"
            "from afkak.connection._connection import Send\n"
            "import afkak.protocol._primitives\n"
            "from afkak.records import _varint\n"
            "from afkak.client._routing import x\n"
            "from afkak.connection._interlayer import Event\n"
            "from afkak.connection._lifecycle import Event\n"
            "from afkak._errors import KafkaError\n",
            lambda path: private_imports(path, "client"),
        )
        self.assertEqual(
            found,
            [
                "afkak.connection._connection",
                "afkak.connection._connection.Send",
                "afkak.protocol._primitives",
                "afkak.records._varint",
                "afkak.connection._lifecycle",
                "afkak.connection._lifecycle.Event",
            ],
        )

    def test_only_the_accumulator_touches_its_state(self) -> None:
        """Batches and the buffer are the accumulator's: no other module (its own tests
        aside) reads or changes its private names."""
        private = accumulator_private_names()
        self.assertIn("_buffered", private)
        tests = os.path.join(ROOT, "test")
        paths = [path for _, path in _library_files() if path != ACCUMULATOR]
        paths += [
            os.path.join(tests, f)
            for f in os.listdir(tests)
            if f.endswith(".py") and not f.startswith("test_accumulator")
        ]
        found = [
            f"{os.path.relpath(path, ROOT)}: {where}"
            for path in paths
            for where in accumulator_internals(path, private)
        ]
        self.assertEqual(found, [])

    def test_a_planted_accumulator_internal_is_found(self) -> None:
        found = _planted(
            "acc._buffered += 1\n"
            "self._accumulator._blocked.append(p)\n"
            "n = producer._accumulator.outstanding\n"
            "self._stopped = True\n",
            lambda path: accumulator_internals(path, accumulator_private_names()),
        )
        self.assertEqual(found, ["acc._buffered at line 1", "_accumulator._blocked at line 2"])

    def test_error_codes_are_named_not_numbered(self) -> None:
        generated = os.path.join(ROOT, "protocol", "messages")
        found = [
            f"{os.path.relpath(path, ROOT)}: {where}"
            for _, path in _library_files()
            for check in (declared_error_codes, raw_error_codes)
            if check is declared_error_codes or not path.startswith(generated)
            for where in check(path)
        ]
        self.assertEqual(found, [])

    def test_a_declared_error_code_is_found(self) -> None:
        found = _planted(
            "NOT_COORDINATOR = 16\n_UNKNOWN_SERVER_ERROR = -1\nDEFAULT_PORT = 9092\n",
            declared_error_codes,
        )
        self.assertEqual(found, ["NOT_COORDINATOR at line 1", "_UNKNOWN_SERVER_ERROR at line 2"])

    def test_planted_raw_error_codes_are_found(self) -> None:
        found = _planted(
            "GONE = frozenset({3, 100, 103})\n"
            "if p.error_code == 0: pass\n"
            "if error in (UNKNOWN, 25): pass\n"
            "e = BrokerResponseError.from_errno(-1, 'left out')\n"
            "if len(items) == 0 and code == ErrorCode.NONE: pass\n"
            "if errno in GONE: pass\n",
            raw_error_codes,
        )
        self.assertEqual(
            found,
            [
                "set of numbers at line 1",
                "comparison with a number at line 2",
                "comparison with a number at line 3",
                "from_errno(<number>) at line 4",
            ],
        )

    def test_no_import_circle_inside_a_package(self) -> None:
        circles = [" -> ".join([*circle, circle[0]]) for circle in import_circles(ROOT)]
        self.assertEqual(circles, [])

    def test_a_planted_import_circle_is_found(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            files = {
                "pkg/__init__.py": "from ._a import A\n",
                "pkg/_a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from ._b import B\n",
                "pkg/_b.py": "from afkak.pkg import _a\n",
                "pkg/_c.py": "from . import _b, _d\n",
                "pkg/_d.py": "import afkak.pkg._ext\nfrom afkak.pkg._c import C\n",
                "pkg/_ext.cpython-311-x86_64-linux-gnu.so": "",
                "other/__init__.py": "from afkak.pkg._c import C\n",
            }
            for name, source in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
                with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                    f.write(source)
            self.assertEqual(
                import_circles(root),
                [["afkak.pkg._a", "afkak.pkg._b"], ["afkak.pkg._c", "afkak.pkg._d"]],
            )
