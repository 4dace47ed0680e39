"""Local Sphinx helpers: the broker error code table, tidy class bases."""

from __future__ import annotations

from typing import Any, get_origin

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx


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


def _public_bases(
    app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]
) -> None:
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


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("afkak-error-table", ErrorTable)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-skip-member", _skip_errnos)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
