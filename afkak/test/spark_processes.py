"""Spark in processes the tests can kill: the drivers' session and the tests' base class.

``test_spark_exactly_once`` and ``test_spark_cluster`` run Spark drivers (and
a standalone cluster) as child processes, each in its own session so that one
``killpg`` ends it with its JVM and Python workers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from afkak.test.brokers import shared_broker

try:
    import pyspark
except ImportError as e:
    if os.environ.get("CI") == "true":
        raise
    SKIP: str | None = f"afkak[spark] (pyspark, pyarrow) is not installed: {e}"
else:
    SKIP = None

_SMALL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def driver_session(master: str, app: str, config: Mapping[str, str] = {}) -> Any:
    """A driver's SparkSession on 127.0.0.1, afkak's data source registered."""
    from pyspark.sql import SparkSession

    from afkak.spark import AfkakDataSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", _SMALL_JVM)
        .config("spark.executor.extraJavaOptions", _SMALL_JVM)
    )
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(AfkakDataSource)
    return spark


class SparkProcessCase(SynchronousTestCase):
    """Apache Kafka, a temporary directory, and child processes killed at cleanup."""

    def setUp(self) -> None:
        if SKIP:
            raise SkipTest(SKIP)
        self.broker = shared_broker("kafka")
        self.tmp = tempfile.mkdtemp(prefix="afkak-spark-processes-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = {
            **os.environ,
            "SPARK_HOME": os.path.dirname(pyspark.__file__),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        }

    def spawn(self, name: str, argv: Sequence[str]) -> subprocess.Popen:
        """Start *argv* in its own session, logging to *name*.log; killed at cleanup."""
        log = open(os.path.join(self.tmp, f"{name}.log"), "wb")
        self.addCleanup(log.close)
        process = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.tmp,
            start_new_session=True,
        )
        self.addCleanup(self.kill, process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL *process*'s session: a driver with its JVM and Spark's Python workers."""
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def log(self, name: str) -> str:
        """The end of *name*.log."""
        with open(os.path.join(self.tmp, f"{name}.log"), "rb") as f:
            return f.read()[-4000:].decode(errors="replace")
