"""The ``afkak`` command end to end: ``python -m afkak`` subprocesses against Tansu
(and noida-db).

Round trip of 10,000 lines through produce and consume, lag and resets agreeing
with the library, and one-line errors with their exit codes for bad input.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import pty
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
from typing import Any, ClassVar

from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.trial.unittest import SynchronousTestCase

import afkak
from afkak.admin import KafkaAdminClient
from afkak.client import KafkaClient
from afkak.common import TopicAndPartition
from afkak.test.brokers import free_port, shared_broker
from afkak.test.helpers import wait

TP = TopicAndPartition
_names = itertools.count()
#: The worktree afkak runs from, for the subprocesses.
_ROOT = os.path.dirname(os.path.dirname(afkak.__file__))


def cli(
    *argv: str, stdin: bytes = b"", bootstrap: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": _ROOT}
    env.pop("AFKAK_BOOTSTRAP", None)
    if bootstrap is not None:
        env["AFKAK_BOOTSTRAP"] = bootstrap
    return subprocess.run(
        [sys.executable, "-m", "afkak", *argv],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
    )


class CliTests:
    """Mixed into one SynchronousTestCase per broker kind."""

    broker_name: ClassVar[str]

    def setUp(self: Any) -> None:
        self.broker = shared_broker(self.broker_name)
        self.bootstrap = self.broker.bootstrap
        n = next(_names)
        stamp = int(time.time() * 1000)
        self.topic = f"cli-{n}-{stamp}"
        self.group = f"cli-group-{n}-{stamp}"
        self.client = KafkaClient(self.bootstrap, endpoint_factory=TCP4ClientEndpoint)
        self.addCleanup(lambda: wait(self.client.close()))
        self.admin = KafkaAdminClient(self.client)

    def ok(self: Any, *argv: str, stdin: bytes = b"") -> bytes:
        done = cli(*argv, stdin=stdin, bootstrap=self.bootstrap)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout

    def json(self: Any, *argv: str) -> Any:
        return json.loads(self.ok("--json", *argv))

    def test_round_trip_of_10000_lines(self: Any) -> None:
        """10,000 lines (arbitrary bytes but newline) in through stdin, out identical."""
        self.ok("topics", "create", self.topic, "-p", "1")
        rng = random.Random(12)
        alphabet = bytes(b for b in range(256) if b != 0x0A)
        lines = [bytes(rng.choices(alphabet, k=rng.randrange(0, 200))) for _ in range(10_000)]
        data = b"".join(line + b"\n" for line in lines)
        started = time.monotonic()
        self.ok("produce", self.topic, "-z", "gzip", stdin=data)
        produced = time.monotonic() - started
        started = time.monotonic()
        out = self.ok("consume", self.topic, "-o", "beginning", "-e")
        consumed = time.monotonic() - started
        print(f"\nCLI: produced 10,000 lines in {produced:.2f} s, consumed in {consumed:.2f} s")
        self.assertEqual(out, data)

    def test_keys_headers_partition_and_format(self: Any) -> None:
        self.ok("topics", "create", self.topic, "-p", "2")
        self.ok(
            "produce", self.topic, "-K", ":", "-H", "src=cli", "-p", "1", stdin=b"k1:v1\nnokey\n"
        )
        out = self.ok("consume", self.topic, "-o", "beginning", "-e", "-f", "%p|%o|%K|%k|%s|%h\\n")
        self.assertEqual(out, b"1|0|2|k1|v1|src=cli\n1|1|-1||nokey|src=cli\n")
        records = [
            json.loads(x)
            for x in self.ok(
                "--json", "consume", self.topic, "-o", "beginning", "-c", "1"
            ).splitlines()
        ]
        self.assertEqual((records[0]["key"], records[0]["value"]), ("k1", "v1"))

    def test_produce_from_file_with_rate_and_codec(self: Any) -> None:
        self.ok("topics", "create", self.topic, "-p", "1")
        # Not trial's mktemp: it writes below the working directory, the checkout.
        directory = tempfile.mkdtemp(prefix="afkak-cli-")
        self.addCleanup(shutil.rmtree, directory, True)
        path = os.path.join(directory, "lines")
        with open(path, "wb") as f:
            f.write(b"".join(b"line %d\n" % i for i in range(50)))
        self.ok("produce", self.topic, "-f", path, "--rate", "2000", "-z", "gzip")
        with open(path, "rb") as f:
            self.assertEqual(self.ok("consume", self.topic, "-o", "beginning", "-e"), f.read())

    def test_reader_going_away_ends_consume_quietly(self: Any) -> None:
        """``afkak consume ... | head -1``: exit 0, nothing on stderr."""
        self.ok("topics", "create", self.topic, "-p", "1")
        self.ok("produce", self.topic, stdin=b"".join(b"%d\n" % i for i in range(5000)))
        env = {**os.environ, "PYTHONPATH": _ROOT, "AFKAK_BOOTSTRAP": self.bootstrap}
        reader = subprocess.Popen(
            [sys.executable, "-m", "afkak", "consume", self.topic, "-o", "beginning"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.assertEqual(reader.stdout.readline(), b"0\n")
        reader.stdout.close()
        self.assertEqual(reader.wait(60), 0)
        self.assertEqual(reader.stderr.read(), b"")
        reader.stderr.close()

    def test_group_lag_and_reset(self: Any) -> None:
        self.ok("topics", "create", self.topic, "-p", "1")
        self.ok("produce", self.topic, stdin=b"".join(b"%d\n" % i for i in range(20)))
        # A group member reads 5 records and commits where it stopped.
        out = self.ok("consume", self.topic, "-G", self.group, "-o", "beginning", "-c", "5")
        self.assertEqual(out, b"0\n1\n2\n3\n4\n")
        lag = self.json("groups", "lag", self.group, "--topic", self.topic)
        library = wait(self.admin.group_lag(self.group, [self.topic]))
        self.assertEqual(
            [(r["partition"], r["committed"], r["log_end"], r["lag"]) for r in lag],
            [(tp.partition, v.committed, v.log_end, v.lag) for tp, v in sorted(library.items())],
        )
        self.assertEqual(lag[0]["committed"], 5)
        # Without --topic: every partition the group committed (Tansu answered the
        # "all topics" OffsetFetch with a null array, shown as a DecodeError).
        self.assertEqual(self.json("groups", "lag", self.group), lag)
        before = wait(self.admin.list_consumer_group_offsets(self.group, [self.topic]))
        plan = self.json(
            "groups", "reset-offsets", self.group, "--topic", self.topic, "--to-earliest"
        )
        self.assertEqual([(r["current"], r["new"]) for r in plan], [(5, 0)])
        self.assertEqual(
            wait(self.admin.list_consumer_group_offsets(self.group, [self.topic])), before
        )
        self.json(
            "groups",
            "reset-offsets",
            self.group,
            "--topic",
            self.topic,
            "--to-earliest",
            "--execute",
        )
        self.assertEqual(
            wait(self.admin.list_consumer_group_offsets(self.group, [self.topic])),
            {TP(self.topic, 0): 0},
        )
        out = self.ok("consume", self.topic, "-G", self.group, "-c", "2")
        self.assertEqual(out, b"0\n1\n")

    def test_admin_commands(self: Any) -> None:
        self.ok("topics", "create", self.topic, "-p", "2", "--config", "retention.ms=60000")
        self.assertIn(self.topic, [t["name"] for t in self.json("topics", "list")])
        [described] = self.json("topics", "describe", self.topic, "--configs")
        self.assertEqual(len(described["partitions"]), 2)
        self.assertEqual(described["configs"]["retention.ms"], "60000")
        self.ok("topics", "alter-config", self.topic, "--set", "retention.ms=120000")
        [described] = self.json("topics", "describe", self.topic, "--configs")
        self.assertEqual(described["configs"]["retention.ms"], "120000")
        cluster = self.json("cluster")
        self.assertEqual(cluster["cluster_id"], wait(self.admin.describe_cluster()).cluster_id)
        self.ok("topics", "delete", self.topic)
        self.assertNotIn(self.topic, [t["name"] for t in self.json("topics", "list")])

    def assert_one_line_error(
        self: Any, done: subprocess.CompletedProcess[bytes], code: int
    ) -> str:
        lines = done.stderr.decode().splitlines()
        self.assertEqual(done.returncode, code, done.stderr.decode())
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("afkak: error: "), lines)
        return lines[0]

    def test_bad_input_exits_non_zero_with_one_line(self: Any) -> None:
        line = self.assert_one_line_error(
            cli("consume", "no-such-topic", bootstrap=self.bootstrap), 4
        )
        self.assertIn("UNKNOWN_TOPIC_OR_PARTITION", line)
        self.assert_one_line_error(cli("produce", "no-such-topic", bootstrap=self.bootstrap), 4)
        self.assert_one_line_error(
            cli("groups", "describe", "--bogus", bootstrap=self.bootstrap), 2
        )
        workdir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, workdir, True)
        config = os.path.join(workdir, "command.properties")
        with open(config, "w") as f:
            f.write("security.protocol=PLAINTEXT\nnot-a-pair\n")
        line = self.assert_one_line_error(
            cli("--command-config", config, "cluster", bootstrap=self.bootstrap), 2
        )
        self.assertIn(":2:", line)
        with open(config, "w") as f:
            f.write("unknown.key=1\n")
        line = self.assert_one_line_error(
            cli("--command-config", config, "cluster", bootstrap=self.bootstrap), 2
        )
        self.assertIn("unknown.key", line)
        self.assert_one_line_error(
            cli("topics", "create", self.topic, "--config", "novalue", bootstrap=self.bootstrap), 2
        )
        self.assert_one_line_error(cli("topics", "list", bootstrap=f"127.0.0.1:{free_port()}"), 3)
        self.assert_one_line_error(cli("topics", "list"), 2)  # no bootstrap at all

    def test_options_after_the_command(self: Any) -> None:
        """``afkak topics list -b HOST --json`` (issue 26): as kcat and Kafka's tools."""
        self.ok("topics", "create", self.topic, "-p", "1")
        done = cli("topics", "list", "-b", self.bootstrap, "--json")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertIn(self.topic, [t["name"] for t in json.loads(done.stdout)])

    def test_ctrl_c_in_consume_exits_130_without_a_traceback(self: Any) -> None:
        """docs/cli.rst promises 130 and one line; a fetch in flight made it a
        FailedPayloadsError dump and exit 1 (issue 26)."""
        self.ok("topics", "create", self.topic, "-p", "2")
        self.ok("produce", self.topic, stdin=b"".join(b"%d\n" % i for i in range(100)))
        for argv in (
            ("consume", self.topic, "-o", "beginning"),
            ("consume", self.topic, "-o", "beginning", "-G", self.group),
        ):
            with self.subTest(argv=argv):
                code, stdout, stderr = interrupted(self.bootstrap, *argv)
                self.assertEqual((code, stderr), (130, b"afkak: interrupted\n"))
                self.assertTrue(0 < len(stdout.splitlines()) <= 100, stdout[-200:])

    def test_progress_total_summary_and_ctrl_c_on_a_terminal(self: Any) -> None:
        """On a terminal ``consume -e`` shows a total and ends with a summary; after
        Ctrl-C nothing is drawn after the message (the prompt gets its own line)."""
        self.ok("topics", "create", self.topic, "-p", "2")
        self.ok("produce", self.topic, stdin=b"".join(b"%d\n" % i for i in range(300)))
        code, stdout, stderr = on_a_terminal(
            self.bootstrap, "consume", self.topic, "-o", "beginning", "-e"
        )
        self.assertEqual((code, len(stdout.splitlines())), (0, 300), stderr)
        # A total (from ListOffsets: Tansu's LATEST is not the log end, hence no number).
        self.assertRegex(stderr, rb"\d+/[1-9]\d*")
        self.assertTrue(
            stderr.rstrip().endswith(b"afkak: consumed 300 records from " + self.topic.encode()),
            stderr[-300:],
        )
        code, _, stderr = on_a_terminal(
            self.bootstrap, "consume", self.topic, "-o", "beginning", interrupt=True
        )
        self.assertEqual(code, 130, stderr)
        self.assertTrue(stderr.endswith(b"afkak: interrupted\r\n"), stderr[-300:])
        self.assertNotIn(b"Traceback", stderr)

    def test_ctrl_c_ends_produce_typed_at_a_terminal(self: Any) -> None:
        """Records typed at a terminal, then Ctrl-C: ``afkak produce`` ends at once with
        exit 130 and no traceback, the typed records written and counted (issue 36: it
        waited for the thread reading the terminal, a second Ctrl-C ignored too)."""
        self.ok("topics", "create", self.topic, "-p", "1")
        typing = Typing(self.bootstrap, "produce", self.topic)
        self.addCleanup(typing.close)
        typing.type(b"one\rtwo\r")
        written = self.ok("consume", self.topic, "-o", "beginning", "-c", "2")
        self.assertEqual(written.splitlines(), [b"one", b"two"])
        typing.type(b"\x03")  # Ctrl-C: the terminal sends SIGINT
        self.assertEqual(typing.exit_code(timeout=15), 130, typing.output()[-300:])
        output = typing.output()
        self.assertNotIn(b"Traceback", output)
        self.assertIn(b"afkak: produced 2 records to " + self.topic.encode(), output)
        self.assertTrue(output.rstrip().endswith(b"afkak: interrupted"), output[-300:])


class Typing:
    """``afkak -b BOOTSTRAP ARGV...`` on a pseudo-terminal of its own (stdin, stdout and
    stderr; its controlling terminal, so that Ctrl-C typed at it sends SIGINT)."""

    def __init__(self, bootstrap: str, *argv: str) -> None:
        self._master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "afkak", "-b", bootstrap, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**_env(), "COLUMNS": "100", "TERM": "xterm"},
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: the child closed its side
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def type(self, keys: bytes) -> None:
        os.write(self._master, keys)

    def exit_code(self, timeout: float) -> int | None:
        """The exit code, or None if it has not exited within *timeout* seconds."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self) -> bytes:
        return b"".join(self._chunks)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        os.close(self._master)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": _ROOT}
    env.pop("AFKAK_BOOTSTRAP", None)
    return env


def interrupted(bootstrap: str, *argv: str) -> tuple[int, bytes, bytes]:
    """Run ``afkak -b BOOTSTRAP ARGV...`` until its first output line, then SIGINT it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "afkak", "-b", bootstrap, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    time.sleep(0.5)  # into the next fetch (or the group's next poll)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, first + stdout, stderr


def on_a_terminal(bootstrap: str, *argv: str, interrupt: bool = False) -> tuple[int, bytes, bytes]:
    """Run ``afkak`` with stderr on a pseudo-terminal (so that it shows progress);
    with *interrupt*, SIGINT it once it has written a record."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "afkak", "-b", bootstrap, *argv],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**_env(), "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed its side
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    assert process.stdout is not None
    if interrupt:
        process.stdout.readline()
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    reader.join(10)
    os.close(master)
    return process.returncode, stdout, b"".join(chunks)


class KafkaCliTests(CliTests, SynchronousTestCase):
    broker_name = "kafka"


class TansuCliTests(CliTests, SynchronousTestCase):
    broker_name = "tansu"


class NoidaCliTests(CliTests, SynchronousTestCase):
    broker_name = "noida"
