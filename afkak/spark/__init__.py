"""Kafka topics as Spark DataFrames and streams, through afkak (the ``afkak[spark]`` extra).

``spark.dataSource.register(AfkakDataSource)``, then ``spark.read.format("afkak")``,
``readStream``, ``write`` and ``writeStream`` with the options of Spark's Kafka
connector; :func:`from_confluent_avro` decodes a column of Confluent-framed
Avro records (``docs/schema-registry.rst``).  Installing the extra also
registers the format by itself (through the top-level module ``pyspark_afkak``).
See ``docs/spark.rst``.
"""

try:
    import pyarrow  # noqa: F401
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow  # noqa: F401 (4.2+)
except ImportError as e:
    raise ImportError(
        f"afkak.spark needs PySpark 4.2+ and pyarrow: pip install 'afkak[spark]' ({e})"
    ) from e

from afkak._lazy import lazy_names
from afkak.spark._options import OptionError
from afkak.spark._source import AfkakDataSource

#: Where the other public names live, imported on first use (PEP 562): every
#: Python process Spark starts for a query unpickles the source through this
#: package, and most of them need neither the Avro decoder nor afkak's client.
_LAZY = {
    "DataLossError": "afkak.spark._planning",
    "RowError": "afkak.spark._rows",
    "from_confluent_avro": "afkak.spark._confluent_avro",
}

__all__ = ["AfkakDataSource", "DataLossError", "OptionError", "RowError", "from_confluent_avro"]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
