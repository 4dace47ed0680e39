"""Local Sphinx helpers: the broker error code table, tidy class bases, and
references to afkak names resolved where those names are documented."""

from __future__ import annotations

import builtins
import importlib
import sys
from typing import Any, get_origin

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform


class ErrorTable(Directive):
    """``.. afkak-error-table::`` renders BrokerResponseError.errnos as a table."""

    def run(self) -> list[nodes.Node]:
        from afkak.common import BrokerResponseError

        headers = ["Code", "Kafka name", "afkak class", "Retriable"]
        rows = [
            [str(code), cls.message or "", cls.__name__, "yes" if cls.retriable else "no"]
            for code, cls in sorted(BrokerResponseError.errnos.items())
        ]
        table = nodes.table()
        group = nodes.tgroup(cols=len(headers))
        table += group
        group.extend(nodes.colspec(colwidth=width) for width in (1, 4, 4, 1))
        group += nodes.thead("", self._row(headers))
        group += nodes.tbody("", *(self._row(row) for row in rows))
        return [table]

    @staticmethod
    def _row(cells: list[str]) -> nodes.row:
        row = nodes.row()
        for text in cells:
            row += nodes.entry("", nodes.paragraph(text=text))
        return row


def _public_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    """Show plain public bases: ``list`` for ``list[Message]``, and a private
    base (e.g. Message's field tuple) as its own bases."""
    plain = [get_origin(base) or base for base in bases]
    bases[:] = [
        public
        for base in plain
        for public in (base.__bases__ if base.__name__.startswith("_") else (base,))
    ]


def _skip_errnos(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """Leave out ``BrokerResponseError.errnos``: the error table shows it, readably."""
    return True if what in ("class", "exception") and name == "errnos" else None


def _named(path: str) -> Any:
    """The object *path* (``package.module.Name.attr``) names, or None."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _documented_as(app: Sphinx, env: Any) -> dict[int, str]:
    """Each documented afkak object (by id) -> the name it is documented under."""
    index: dict[int, str] | None = getattr(app, "_afkak_documented", None)
    if index is None:
        index = {}
        for name in sorted(env.get_domain("py").objects, key=len, reverse=True):
            obj = _named(name)
            if obj is not None and not isinstance(obj, (int, str, bytes, float, tuple)):
                index[id(obj)] = name  # the shortest name wins
        app._afkak_documented = index  # type: ignore[attr-defined]
    return index


def _resolve_afkak(app: Sphinx, env: Any, node: pending_xref, contnode: nodes.Element) -> Any:
    """A reference to an afkak object by another of its names (``afkak.KafkaClient``,
    ``KafkaUnavailableError`` inside ``afkak.client``) links where it is documented
    (``afkak.client.KafkaClient``, ``afkak.common.KafkaUnavailableError``)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        if cls:
            candidates.insert(0, f"{module}.{cls}.{target}")
        candidates.insert(1 if cls else 0, f"{module}.{target}")
    if module and cls:  # names the class's own (private) module imports
        owner = _named(f"{module}.{cls.split('.')[0]}")
        if getattr(owner, "__module__", None):
            candidates.append(f"{owner.__module__}.{target}")
    found = {id(o): o for o in (_named(p) for p in candidates if p.startswith("afkak")) if o}
    if not found and "." not in target:
        # An unqualified name in a docstring: the one afkak object of that name.
        found = {
            id(o): o
            for m in list(sys.modules.values())
            if getattr(m, "__name__", "").startswith("afkak")
            for o in [getattr(m, target, None)]
            if o is not None and not isinstance(o, (int, str))
        }
    documented = _documented_as(app, env)
    names = {documented[i] for i in found if i in documented}
    py = env.get_domain("py")
    if not names:  # constants (ints, strs) by the name they are documented under
        modules = [m for m in list(sys.modules) if m.startswith("afkak")]
        paths = candidates + ([f"{m}.{target}" for m in modules] if "." not in target else [])
        names = {p for p in paths if p in py.objects}
    if len(names) == 1:
        return py.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], names.pop(), node, contnode
        )
    if any(part.startswith("_") for part in target.split(".")[1:]) and target.startswith("afkak"):
        return contnode  # a private type in a public signature: text, nothing to link to
    if found and all(_is_alias(o) for o in found.values()):
        return contnode  # a type alias (``Callback = Callable[...]``): its name, as text
    return None


def _is_alias(obj: Any) -> bool:
    """A ``typing`` alias (``Callable[...]``, ``X | None``), not a class or function."""
    return get_origin(obj) is not None


class _BuiltinsAreExact(SphinxPostTransform):
    """A builtin in an annotation (``type[Exception]``) is looked up exactly, not
    fuzzily: ``type`` would otherwise match every ``.type`` attribute in afkak.
    Sphinx's builtin resolver then renders it unlinked (no intersphinx offline)."""

    default_priority = 5

    def run(self, **kwargs: Any) -> None:
        for node in self.document.findall(pending_xref):
            if node.get("refdomain") == "py" and hasattr(builtins, node["reftarget"]):
                node.attributes.pop("refspecific", None)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("afkak-error-table", ErrorTable)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-skip-member", _skip_errnos)
    app.connect("missing-reference", _resolve_afkak)
    app.add_post_transform(_BuiltinsAreExact)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
