"""Running one command on the reactor and turning its outcome into an exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ._output import INTERRUPTED, OK, error_of


def run(command: Callable[[Any], Coroutine[Any, Any, int | None]], reactor: Any = None) -> int:
    """Run ``command(reactor)`` until it finishes; its exit code (errors: one line on stderr)."""
    if reactor is None:
        from twisted.internet import reactor
    outcome: list[Any] = []

    def start() -> None:
        d = Deferred.fromCoroutine(command(reactor))
        d.addBoth(outcome.append)
        d.addBoth(lambda _: reactor.stop() if reactor.running else None)

    reactor.callWhenRunning(start)
    reactor.run()
    if not outcome:
        sys.stderr.write("afkak: interrupted\n")
        return INTERRUPTED
    result = outcome[0]
    if isinstance(result, Failure):
        error = error_of(result.value)
        sys.stderr.write(f"afkak: error: {error}\n")
        return error.code
    return OK if result is None else int(result)
