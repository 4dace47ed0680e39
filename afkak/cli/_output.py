"""What the command line prints: tables or JSON on stdout, one-line errors on stderr,
exit codes, and a progress display on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from twisted.internet.error import ConnectError

from afkak.common import (
    BrokerConnectionError,
    BrokerResponseError,
    GroupIdNotFound,
    KafkaUnavailableError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

#: Exit codes (see docs/cli.rst).
OK, FAILED, USAGE, UNREACHABLE, NOT_FOUND, INTERRUPTED = 0, 1, 2, 3, 4, 130


class CommandError(Exception):
    """A failure to report in one line, with its exit code."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def error_of(exc: BaseException) -> CommandError:
    """The one-line message and exit code for what went wrong."""
    if isinstance(exc, CommandError):
        return exc
    if isinstance(exc, (KafkaUnavailableError, BrokerConnectionError, ConnectError)):
        return CommandError(f"cannot reach the cluster: {_line(exc)}", UNREACHABLE)
    if isinstance(exc, RequestTimedOutError) and "not sent" in str(exc):
        return CommandError(f"cannot reach the cluster: {_line(exc)}", UNREACHABLE)
    if isinstance(exc, (UnknownTopicOrPartitionError, GroupIdNotFound)):
        return CommandError(_line(exc), NOT_FOUND)
    if isinstance(exc, BrokerResponseError):
        return CommandError(_line(exc), FAILED)
    if isinstance(exc, (ValueError, TypeError)):
        return CommandError(_line(exc), USAGE)
    if isinstance(exc, OSError) and exc.filename is not None:  # an input file
        return CommandError(f"{exc.filename}: {exc.strerror}", USAGE)
    return CommandError(f"{type(exc).__name__}: {_line(exc)}", FAILED)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def item_error(what: str, error: BrokerResponseError) -> CommandError:
    """A failed item (topic, group, partition) as a CommandError."""
    found = error_of(error)
    return CommandError(f"{what}: {found}", found.code)


class Output:
    """Tables for people, JSON (``--json``) for scripts."""

    def __init__(self, as_json: bool, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stream = stream if stream is not None else sys.stdout

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if self.as_json:
            self.json([dict(zip(headers, row, strict=True)) for row in rows])
            return
        cells = [[str(h) for h in headers]] + [[_cell(c) for c in row] for row in rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
        for row in cells:
            line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
            self.stream.write(line.rstrip() + "\n")

    def lines(self, text: Sequence[str], data: Any) -> None:
        """Plain lines, or *data* as JSON."""
        if self.as_json:
            self.json(data)
        else:
            for line in text:
                self.stream.write(line + "\n")

    def json(self, data: Any) -> None:
        self.stream.write(json.dumps(data, default=str) + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class _NoProgress:
    def advance(self, amount: float = 1) -> None:
        pass


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)


@contextmanager
def progress(description: str, total: float | None, enabled: bool, unit: str) -> Iterator[Any]:
    """A rate and ETA display on stderr when *enabled* (a terminal) and rich is installed."""
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text
    except ImportError:
        enabled = False
    if not enabled:
        yield _NoProgress()
        return

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Any:
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{speed:,.0f} {unit}/s")

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate()]
    columns += [TimeRemainingColumn()] if total else [TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield _RichProgress(bar, bar.add_task(description, total=total))
