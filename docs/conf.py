"""Sphinx configuration for afkak's documentation."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

import afkak  # noqa: E402

project = "afkak"
author = "afkak contributors"
copyright = "afkak contributors"  # noqa: A001
release = afkak.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "afkak_docs",
]

# There is no network at build time: no intersphinx, no remote images.
exclude_patterns = ["_build"]
default_role = "py:obj"
autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
}
autodoc_typehints = "description"
autodoc_member_order = "alphabetical"
html_theme = "alabaster"
# Without intersphinx, a builtin such as ``type`` in an annotation fuzzy-matches
# any attribute of that name in afkak and warns that the target is ambiguous.
suppress_warnings = ["ref.python"]
