"""The exactly-once streaming sink (``exactlyOnce``) through a driver crash, on Apache Kafka.

A driver process (``afkak.test.spark_stream_driver``) copies a topic in
micro-batches of 200 records; the test kills it (SIGKILL to its whole process
group: the Python driver, its JVM and Spark's Python workers) once some batches
have committed, and rolls its checkpoint back to just before the driver logged
the last batch's commit: the crash Spark's own Kafka sink answers with
duplicates, since the restarted query writes that batch again.  A second driver
resumes from the checkpoint; Kafka's Java console consumer (read_committed)
must then see every record exactly once.  Skipped without PySpark (failing
instead when CI is "true").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

from afkak.test.brokers import produce
from afkak.test.brokers.java_tools import console_consume
from afkak.test.spark_processes import SparkProcessCase

PARTITIONS = 2
PER_PARTITION = 1000
#: 200 records a batch (maxOffsetsPerTrigger in the driver).
BATCHES = PARTITIONS * PER_PARTITION // 200
#: Seconds a driver may take to reach a batch on a loaded machine.
PATIENCE = 900.0


def _batches(checkpoint: str, log: str) -> list[int]:
    """The batch ids in the checkpoint's ``offsets`` or ``commits`` log."""
    path = os.path.join(checkpoint, log)
    if not os.path.isdir(path):
        return []
    return sorted(int(name) for name in os.listdir(path) if name.isdigit())


def _forget(checkpoint: str, log: str, batch: int) -> None:
    """Remove *batch* (and its checksum file) from a checkpoint log."""
    for name in (str(batch), f".{batch}.crc"):
        path = os.path.join(checkpoint, log, name)
        if os.path.exists(path):
            os.remove(path)


class KafkaSparkExactlyOnceTests(SparkProcessCase):
    def start_driver(self, source: str, sink: str, checkpoint: str, n: int) -> subprocess.Popen:
        return self.spawn(
            f"driver-{n}",
            [sys.executable, "-m", "afkak.test.spark_stream_driver", self.broker.bootstrap]
            + [source, sink, checkpoint],
        )

    def wait_for_commit(
        self, driver: subprocess.Popen, checkpoint: str, batch: int, n: int
    ) -> None:
        deadline = time.monotonic() + PATIENCE
        while not any(b >= batch for b in _batches(checkpoint, "commits")):
            if driver.poll() is not None:
                self.fail(f"driver exited with {driver.returncode}:\n{self.log(f'driver-{n}')}")
            if time.monotonic() > deadline:
                self.fail(f"batch {batch} not committed in {PATIENCE} s")
            time.sleep(0.5)

    def test_driver_crash_writes_each_record_once_kafka(self) -> None:
        name = f"eos-{os.getpid()}-{int(time.time())}"
        source, sink = f"{name}-in", f"{name}-out"
        self.broker.create_topic(source, PARTITIONS)
        self.broker.create_topic(sink, PARTITIONS)
        expected = []
        for p in range(PARTITIONS):
            values = [b"p%d-%04d" % (p, i) for i in range(PER_PARTITION)]
            produce(self.broker.bootstrap, source, values, partition=p, timeout=60.0)
            expected += [v.decode() for v in values]
        checkpoint = os.path.join(self.tmp, "checkpoint")

        first = self.start_driver(source, sink, checkpoint, 1)
        self.wait_for_commit(first, checkpoint, 2, 1)
        self.kill(first)
        # Roll back to the crash between the tasks' commits of the last batch and
        # the driver's commit log entry: the restart must replay that batch.
        last = _batches(checkpoint, "commits")[-1]
        self.assertLess(last, BATCHES - 1, "the driver finished before it was killed")
        for batch in _batches(checkpoint, "offsets"):
            if batch > last:
                _forget(checkpoint, "offsets", batch)
        _forget(checkpoint, "commits", last)

        second = self.start_driver(source, sink, checkpoint, 2)
        self.wait_for_commit(second, checkpoint, BATCHES - 1, 2)
        self.kill(second)

        records = console_consume(
            self.broker.bootstrap,
            sink,
            2 * len(expected),  # room for every duplicate
            timeout=15.0,
            isolation_level="read_committed",
        )
        values = Counter(r.value for r in records)
        duplicates = sorted(v for v, n in values.items() if n > 1)
        missing = sorted(set(expected) - set(values))
        self.assertEqual((duplicates[:10], missing[:10]), ([], []))
        self.assertEqual(sorted(values.elements()), sorted(expected))
