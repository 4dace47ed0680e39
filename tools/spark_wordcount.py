"""Example pipeline: count the words of each key per time window, from one topic to another.

Reads the text records of ``--source`` through afkak's Spark data source,
counts the words of each record key in tumbling windows of the records'
timestamps, and writes JSON records (key: the record key; value: ``{"start",
"end", "key", "words"}``) to ``--sink``: in append mode (the default) one per
(window, key) once the watermark has passed the window's end; in complete
mode every count after each micro-batch.  See docs/spark.rst for running it
with spark-submit.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark.sql import SparkSession, functions as F

from afkak.spark import AfkakDataSource


def word_counts(lines: Any, window: str, watermark: str) -> Any:
    """(key, value) rows of JSON word counts per key and window of *lines* (Kafka rows)."""
    words = lines.select(
        "key",
        "timestamp",
        F.explode(F.split(F.col("value").cast("string"), r"\s+")).alias("word"),
    ).where(F.col("word") != "")
    counts = (
        words.withWatermark("timestamp", watermark)
        .groupBy(F.window("timestamp", window), "key")
        .agg(F.count("*").alias("words"))
    )
    return counts.select(
        "key",
        F.to_json(
            F.struct(
                F.col("window.start").alias("start"),
                F.col("window.end").alias("end"),
                F.col("key").cast("string").alias("key"),
                "words",
            )
        ).alias("value"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="host:port,... of the Kafka brokers")
    parser.add_argument("--source", required=True, help="topic of text records to read")
    parser.add_argument("--sink", required=True, help="topic to write the counts to")
    parser.add_argument("--checkpoint", required=True, help="directory of the query's checkpoint")
    parser.add_argument("--window", default="1 minute")
    parser.add_argument("--watermark", default="5 minutes", help="how late records may arrive")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--max-offsets-per-trigger", help="records per micro-batch at most")
    parser.add_argument("--output-mode", choices=("append", "complete"), default="append")
    parser.add_argument(
        "--available-now",
        action="store_true",
        help="process what is in the topic now, then stop (default: run until interrupted)",
    )
    args = parser.parse_args()

    spark = SparkSession.builder.appName("afkak-wordcount").getOrCreate()
    spark.dataSource.register(AfkakDataSource)
    reader = (
        spark.readStream.format("afkak")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", args.starting_offsets)
    )
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    writer = (
        word_counts(reader.load(), args.window, args.watermark)
        .writeStream.format("afkak")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.sink)
        .option("checkpointLocation", args.checkpoint)
        .outputMode(args.output_mode)
    )
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    writer.start().awaitTermination()


if __name__ == "__main__":
    main()
