"""Spark's own Kafka connector (``format("kafka")``), resolved from Maven Central.

PySpark from pip ships no Kafka jars.  :func:`connector_jars` copies the four a
Kafka read or write needs (``spark-sql-kafka-0-10_2.13``,
``spark-token-provider-kafka-0-10_2.13`` and their ``kafka-clients`` and
``commons-pool2``) into ``$XDG_CACHE_HOME/afkak/spark-kafka/<version>`` with
``mvn``, once; :func:`spark_jars_option` is the value of ``spark.jars``.

Checked on the project's machines (2026-11-29, Maven 3.8.7): the four jars resolve for
Spark 4.2.0 (kafka-clients 3.9.2, commons-pool2 2.13.1), 4.1.1 (3.9.1, 2.12.1) and 4.0.0
(3.9.0, 2.12.0); not for 4.3.0 (the installed PySpark) or 4.2.1 (no connector), nor for
4.1.2, 4.1.3, 4.0.1 or 4.0.2 (no ``spark-token-provider-kafka``).  The 4.2.0 connector
loads and runs in Spark 4.3.0, so the newest release not newer than PySpark that
resolves is used; ``AFKAK_SPARK_KAFKA_VERSION`` picks one.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

from afkak.test.brokers.maven import cached_jars
from afkak.testing.apache_kafka import ApacheKafkaUnavailable

#: Connector releases tried after PySpark's own version, newest first.
CONNECTOR_VERSIONS = ("4.3.0", "4.2.0", "4.1.1", "4.0.0")
ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
_POM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark-kafka-pom.xml")
_AVRO_POM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark-avro-pom.xml")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def candidate_versions(pyspark_version: str) -> list[str]:
    """PySpark's version, then each known release older than it, newest first."""
    older = [v for v in CONNECTOR_VERSIONS if _key(v) < _key(pyspark_version)]
    return [pyspark_version, *older]


def connector_jars(pyspark_version: str | None = None) -> list[str]:
    """The connector's four jars for the installed PySpark (see the module docstring).

    Raises :exc:`ApacheKafkaUnavailable` when no candidate version resolves."""
    return _first_resolving("Spark's Kafka connector", _cached, pyspark_version)


def avro_jar(pyspark_version: str | None = None) -> str:
    """``spark-avro_2.13`` (``from_avro``) for the installed PySpark, as the connector's
    versions are chosen."""
    return _first_resolving("Spark's Avro functions", _cached_avro, pyspark_version)[0]


def _first_resolving(
    what: str, resolve: Callable[[str], list[str]], pyspark_version: str | None
) -> list[str]:
    if pyspark_version is None:
        import pyspark

        pyspark_version = pyspark.__version__
    wanted = os.environ.get("AFKAK_SPARK_KAFKA_VERSION")
    failures = []
    for version in [wanted] if wanted else candidate_versions(pyspark_version):
        try:
            return resolve(version)
        except ApacheKafkaUnavailable as e:
            failures.append(f"{version}: {e}")
    raise ApacheKafkaUnavailable(f"{what} did not resolve:\n" + "\n".join(failures))


def spark_jars_option(pyspark_version: str | None = None) -> str:
    """``spark.jars``: the connector's jars, comma-separated."""
    return ",".join(connector_jars(pyspark_version))


def connector_version(jars: list[str]) -> str:
    """The Spark release of the connector among *jars*."""
    prefix = "spark-sql-kafka-0-10_2.13-"
    [jar] = [os.path.basename(j) for j in jars if os.path.basename(j).startswith(prefix)]
    return jar.removeprefix(prefix).removesuffix(".jar")


def _cached(version: str) -> list[str]:
    directory = cached_jars(
        "spark-kafka",
        version,
        _POM,
        {"includeArtifactIds": ",".join(ARTIFACTS), "spark.version": version},
        lambda staging: len(os.listdir(staging)) == len(ARTIFACTS),
    )
    return sorted(glob.glob(os.path.join(directory, "*.jar")))


def _cached_avro(version: str) -> list[str]:
    directory = cached_jars(
        "spark-avro",
        version,
        _AVRO_POM,
        {"includeArtifactIds": "spark-avro_2.13", "spark.version": version},
        lambda staging: len(os.listdir(staging)) == 1,
    )
    return sorted(glob.glob(os.path.join(directory, "*.jar")))
