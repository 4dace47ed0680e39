"""Registers afkak's Spark data source as ``format("afkak")`` wherever PySpark looks
for ``pyspark_*`` modules (installed with the ``afkak[spark]`` extra).

PySpark imports every such module when it first looks up a data source, and
one failing import would break them all: without pyarrow (or a PySpark older
than 4.2) this module defines nothing, and ``import afkak.spark`` says why.
"""

try:
    from afkak.spark import AfkakDataSource as DefaultSource  # noqa: F401
except ImportError:
    pass
