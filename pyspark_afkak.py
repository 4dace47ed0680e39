"""Registers afkak's Spark data source as ``format("afkak")`` wherever PySpark looks
for ``pyspark_*`` modules (installed with the ``afkak[spark]`` extra)."""

from afkak.spark import AfkakDataSource as DefaultSource

__all__ = ["DefaultSource"]
