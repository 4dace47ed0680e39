"""Running one command on the reactor and turning its outcome into an exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ._output import INTERRUPTED, OK, error_of


def run(command: Callable[[Any], Coroutine[Any, Any, int | None]], reactor: Any = None) -> int:
    """Run ``command(reactor)`` until it finishes; its exit code (errors: one line on stderr).

    Interrupted (Ctrl-C stops the reactor), the command is cancelled and the
    shutdown waits for it to unwind (progress display removed, connections
    closed, a group left); whatever it failed with then, the exit code is 130.
    """
    if reactor is None:
        from twisted.internet import reactor
    outcome: list[Any] = []
    interrupted: list[bool] = []
    running: list[Deferred[Any]] = []

    def start() -> None:
        d = Deferred.fromCoroutine(command(reactor))
        running.append(d)
        d.addBoth(outcome.append)
        d.addBoth(lambda _: reactor.stop() if reactor.running else None)

    def before_shutdown() -> Deferred[Any] | None:
        if outcome or not running:
            return None
        interrupted.append(True)
        unwound: Deferred[Any] = Deferred()
        running[0].addBoth(lambda _: unwound.callback(None))
        running[0].cancel()
        return unwound

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)
    reactor.run()
    if interrupted or not outcome:
        sys.stderr.write("afkak: interrupted\n")
        return INTERRUPTED
    result = outcome[0]
    if isinstance(result, Failure):
        error = error_of(result.value)
        sys.stderr.write(f"afkak: error: {error}\n")
        return error.code
    return OK if result is None else int(result)
