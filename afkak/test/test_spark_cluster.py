"""``format("afkak")`` on a real Spark standalone cluster, on Apache Kafka.

The test starts a master and two workers (1 core, 1 GiB each) on 127.0.0.1 from
the pip-installed PySpark's ``spark-class``, and a driver process
(``afkak.test.spark_cluster_driver``) reading a topic in eight tasks.  The tasks
must run on both executors, and SIGKILL to one executor's JVM in the middle of
the job must leave the read exact: every record once.  Skipped without PySpark
(failing instead when CI is "true").
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

from afkak.test.brokers import produce
from afkak.test.spark_processes import SparkProcessCase

PARTITIONS = 2
PER_PARTITION = 400
TASKS = 8
#: Seconds the cluster or the job may take on a loaded machine.
PATIENCE = 600.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    """The process ids whose parent is *pid* (from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(name))
    return found


def _java_descendant(pid: int, main_class: str) -> int | None:
    """The process below *pid* whose command line names *main_class*."""
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if main_class.encode() in f.read():
                    return child
        except OSError:
            continue
        found = _java_descendant(child, main_class)
        if found is not None:
            return found
    return None


class KafkaSparkClusterTests(SparkProcessCase):
    def start_cluster(self) -> tuple[str, list[subprocess.Popen]]:
        """A master and two workers; the master's URL and the workers' processes."""
        spark_class = os.path.join(self.env["SPARK_HOME"], "bin", "spark-class")
        port = _free_port()
        master = f"spark://127.0.0.1:{port}"
        self.spawn(
            "master",
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(port), "--webui-port", str(_free_port())],
        )
        workers = []
        for n in range(2):
            work = os.path.join(self.tmp, f"work-{n}")
            workers.append(
                self.spawn(
                    f"worker-{n}",
                    [spark_class, "org.apache.spark.deploy.worker.Worker", master]
                    + ["--host", "127.0.0.1", "--cores", "1", "--memory", "1g"]
                    + ["--webui-port", str(_free_port()), "--work-dir", work],
                )
            )
        deadline = time.monotonic() + PATIENCE
        while self.log("master").count("Registering worker") < 2:
            if time.monotonic() > deadline:
                self.fail(f"the workers did not register:\n{self.log('master')}")
            time.sleep(0.5)
        return master, workers

    def test_read_spreads_over_executors_and_survives_a_killed_one_kafka(self) -> None:
        topic = f"cluster-{os.getpid()}-{int(time.time())}"
        self.broker.create_topic(topic, PARTITIONS)
        for p in range(PARTITIONS):
            produce(self.broker.bootstrap, topic, [b"v"] * PER_PARTITION, partition=p, timeout=60)
        master, workers = self.start_cluster()
        marks = os.path.join(self.tmp, "marks")
        os.mkdir(marks)
        out = os.path.join(self.tmp, "rows.json")
        driver = self.spawn(
            "driver",
            [sys.executable, "-m", "afkak.test.spark_cluster_driver", master]
            + [self.broker.bootstrap, topic, str(TASKS), marks, out],
        )
        # Kill worker 0's executor once tasks run on both executors.
        deadline = time.monotonic() + PATIENCE
        while len({m.rsplit("-", 1)[1] for m in os.listdir(marks)}) < 2:
            if driver.poll() is not None or time.monotonic() > deadline:
                self.fail(f"tasks did not start on both executors:\n{self.log('driver')}")
            time.sleep(0.2)
        executor = _java_descendant(workers[0].pid, "CoarseGrainedExecutorBackend")
        self.assertIsNotNone(executor, "worker 0 runs no executor")
        assert executor is not None
        os.kill(executor, signal.SIGKILL)
        killed_at = set(os.listdir(marks))

        driver.wait(PATIENCE)
        self.assertEqual(driver.returncode, 0, self.log("driver"))
        with open(out) as f:
            rows = json.load(f)
        offsets = Counter((p, o) for p, o, _ in rows)
        expected = {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
        self.assertEqual(set(offsets), expected)
        self.assertEqual(max(offsets.values()), 1)
        # Both executors read rows; the killed executor's task ran again (attempt 1+).
        self.assertGreaterEqual(len({e for _, _, e in rows}), 2)
        retried = [m for m in os.listdir(marks) if m not in killed_at and m.split("-")[2] != "0"]
        self.assertTrue(retried, sorted(os.listdir(marks)))
