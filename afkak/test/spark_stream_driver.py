"""A Spark driver process for the exactly-once sink's crash test (``test_spark_exactly_once``).

``python -m afkak.test.spark_stream_driver BOOTSTRAP SOURCE SINK CHECKPOINT`` copies
SOURCE to SINK with ``format("afkak")`` and ``exactlyOnce``, 100 records a
partition per micro-batch, until it is killed.  Its own session (``start_new_session``
in the test) holds the JVM and Spark's Python workers, so one ``killpg`` ends all.
"""

from __future__ import annotations

import sys


def main(bootstrap: str, source: str, sink: str, checkpoint: str) -> None:
    from afkak.test.spark_processes import driver_session

    spark = driver_session("local[2]", "afkak-exactly-once-driver")
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
