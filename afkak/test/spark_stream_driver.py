"""A Spark driver process for the exactly-once sink's crash test (``test_spark_exactly_once``).

``python -m afkak.test.spark_stream_driver BOOTSTRAP SOURCE SINK CHECKPOINT`` copies
SOURCE to SINK with ``format("afkak")`` and ``exactlyOnce``, 100 records a
partition per micro-batch, until it is killed.  Its own session (``start_new_session``
in the test) holds the JVM and Spark's Python workers, so one ``killpg`` ends all.
"""

from __future__ import annotations

import os
import sys


def main(bootstrap: str, source: str, sink: str, checkpoint: str) -> None:
    from pyspark.sql import SparkSession

    from afkak.spark import AfkakDataSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("afkak-exactly-once-driver")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(AfkakDataSource)
    rows = (
        spark.readStream.format("afkak")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "200")
        .load()
        .select("key", "value")
    )
    query = (
        rows.writeStream.format("afkak")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
