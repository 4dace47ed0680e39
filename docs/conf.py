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

# There is no network at build time: no intersphinx, no remote images.  Every
# reference must resolve (sphinx-build -n -W); names of other projects that only
# intersphinx could link render as text instead:
nitpicky = True
nitpick_ignore_regex = [
    # The standard library and Twisted (their inventories are online only).
    (r"py:.*", r"(collections|enum|uuid|typing|logging|random|ssl|re|twisted|zope)(\..*)?"),
    (r"py:.*", r"<InterfaceClass twisted\..*>"),
    # ... and those names as annotations spell them (``from uuid import UUID``).
    (r"py:.*", r"(UUID|Deferred|IStreamClientEndpoint|HostnameEndpoint|abc\.ABC)"),
    # PySpark's data source classes (afkak.spark's bases and return types).
    (r"py:.*", r"(pyspark(\..*)?|StructType|DataSource\w*(\.__init__)?)"),
    # The optional exporters' libraries (extras prometheus and otel).
    (r"py:.*", r"(prometheus_client|opentelemetry)(\..*)?"),
    (r"py:.*", r"TracerProvider"),
    # The schema registry's libraries (extra schema-registry), and its treq seam.
    (r"py:.*", r"(google\.protobuf|treq|fastavro|jsonschema)(\..*)?"),
    (r"py:.*", r"HTTPClient"),
]
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
