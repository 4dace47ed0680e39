"""Child processes of the test harness: spawn, stop for sure, never leave one behind.

Every process started here is stopped at interpreter exit (atexit) and, where the
util-linux ``setpriv`` tool exists, also gets SIGTERM from the kernel if the test
process dies without running atexit (SIGKILL, os._exit). That parent-death signal is
tied to the thread that spawned the process, so start brokers from the test thread.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import unittest
from collections.abc import Mapping, Sequence
from typing import IO, Any, NoReturn

from afkak.testing.apache_kafka import file_tail


class BrokerUnavailable(RuntimeError):
    """A test broker cannot run here; raised instead of SkipTest when CI is "true"."""


def unavailable(reason: str) -> NoReturn:
    """Skip the calling test because a broker cannot run, or fail loudly on CI."""
    if os.environ.get("CI") == "true":
        raise BrokerUnavailable(reason)
    raise unittest.SkipTest(reason)


_running: set[ManagedProcess] = set()


class ManagedProcess:
    """One child process with its own temporary directory (its log file lives there)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = None,
        workdir: str | None = None,
    ) -> None:
        """Start ``argv``; its stderr (and stdout unless ``stdout`` is given) go to a log.

        ``workdir``: the directory of a process that was killed, to start
        again with its data (by default a new temporary one).
        Raises OSError if the executable cannot be run.
        """
        if shutil.which(argv[0]) is None:
            raise FileNotFoundError(f"not an executable file: {argv[0]}")
        self.name = name
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"afkak-{name}-")
        self.log_path = os.path.join(self.workdir, "broker.log")
        with open(self.log_path, "ab") as log:
            try:
                self._popen = subprocess.Popen(
                    _with_parent_death_signal(argv),
                    stdin=stdin,
                    stdout=log if stdout is None else stdout,
                    stderr=log,
                    env=dict(os.environ if env is None else env),
                    cwd=self.workdir,
                    close_fds=True,
                )
            except OSError:
                shutil.rmtree(self.workdir, ignore_errors=True)
                raise
        _running.add(self)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def stdin(self) -> IO[bytes] | None:
        return self._popen.stdin

    @property
    def stdout(self) -> IO[bytes] | None:
        return self._popen.stdout

    def exit_code(self) -> int | None:
        """The exit status if the process has ended, else None."""
        return self._popen.poll()

    def log_tail(self, size: int = 2000) -> str:
        """The last ``size`` bytes of the process's log, for error messages."""
        return file_tail(self.log_path, size)

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` s; reap it and remove its directory."""
        try:
            if self._popen.poll() is None:
                self._popen.send_signal(signal.SIGTERM)
                try:
                    self._popen.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._popen.kill()
                    self._popen.wait(timeout)
        finally:
            for pipe in (self._popen.stdin, self._popen.stdout):
                if pipe is not None:
                    _close_quietly(pipe)
            shutil.rmtree(self.workdir, ignore_errors=True)
            _running.discard(self)

    def kill(self) -> None:
        """SIGKILL (a crash) and reap it; its directory stays, for a restart."""
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait(10)
        _running.discard(self)

    def wait(self, timeout: float) -> int:
        """Wait for the process to end by itself; raises subprocess.TimeoutExpired."""
        return self._popen.wait(timeout)


def pid_exists(pid: int) -> bool:
    """Whether a process (not a zombie) with this pid exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return list(argv)
    return [setpriv, "--pdeathsig", "TERM", "--", *argv]


def _close_quietly(pipe: Any) -> None:
    try:
        pipe.close()
    except OSError:
        pass


@atexit.register
def _stop_all() -> None:
    for process in list(_running):
        process.stop(timeout=2.0)
