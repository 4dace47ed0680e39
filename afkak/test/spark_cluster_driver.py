"""A Spark driver for ``test_spark_cluster``: one batch read on a standalone cluster.

``python -m afkak.test.spark_cluster_driver MASTER BOOTSTRAP TOPIC TASKS MARKS OUT`` reads
TOPIC with ``format("afkak")`` in at least TASKS tasks, each of which notes its
start in the directory MARKS and then pauses three seconds (so that the test
can kill an executor while the job runs), and writes the rows' (partition,
offset, executor id) to OUT as JSON.  The executor id is the name of the
Python worker's working directory: a standalone worker runs each executor in
``work/<app id>/<executor id>``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import Any


def _tag(rows: Iterable[Any], marks: str) -> list[tuple[int, int, str]]:
    """Runs in the executors, once per task: note the task's start, pause, tag its rows."""
    import time

    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None
    executor = os.path.basename(os.getcwd())
    mark = f"task-{context.partitionId()}-{context.attemptNumber()}-{executor}"
    open(os.path.join(marks, mark), "w").close()
    time.sleep(3.0)
    return [(row[0], row[1], executor) for row in rows]


def main(master: str, bootstrap: str, topic: str, tasks: str, marks: str, out: str) -> None:
    from afkak.test.spark_processes import driver_session

    executors = {
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
    }
    spark = driver_session(master, "afkak-cluster-driver", executors)
    df = (
        spark.read.format("afkak")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("minPartitions", tasks)
        .load()
        .select("partition", "offset")
    )
    rows = df.rdd.mapPartitions(lambda rows: _tag(rows, marks)).collect()
    with open(out, "w") as f:
        json.dump(rows, f)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:7])
