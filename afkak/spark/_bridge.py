"""Running Twisted code from Spark's Python workers, which are plain threads.

The global reactor runs once per process, in a daemon thread started on first
use (``installSignalHandlers=False``: it is not the main thread).  Spark forks
its workers, and a reactor inherited through a fork has no thread left to run
it, so the reactor is started by the process that uses it, guarded by process
id.  Every call carries a timeout, applied to its Deferred in the reactor
thread, since a blocked worker would otherwise hang its Spark task forever.
Calls cost tens of microseconds: make one per fetch or produce batch, never
one per record.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

#: Extra seconds a caller waits beyond a call's own timeout before giving up on
#: the reactor thread itself (a wedged reactor never fires the timeout).
_GRACE = 5.0

_lock = threading.Lock()
_reactor_pid: int | None = None
_reactor_thread: threading.Thread | None = None


class ReactorError(RuntimeError):
    """The reactor cannot serve this process (inherited through fork, or wedged)."""


def _reactor() -> Any:
    """The global reactor, running in this process's daemon thread."""
    global _reactor_pid, _reactor_thread
    from twisted.internet import reactor

    pid = os.getpid()
    if _reactor_pid != pid:
        with _lock:
            if _reactor_pid != pid:
                if reactor.running:
                    raise ReactorError(
                        "the global reactor is already running in this process but not in "
                        "afkak's thread (inherited through fork, or started by other code)"
                    )
                thread = threading.Thread(
                    target=reactor.run,
                    kwargs={"installSignalHandlers": False},
                    name="afkak-reactor",
                    daemon=True,
                )
                thread.start()
                _reactor_pid, _reactor_thread = pid, thread
    return reactor


def submit(timeout: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run ``fn(*args, **kwargs)`` in the reactor thread; a Future of its (Deferred's) result.

    The Deferred is cancelled after *timeout* seconds, failing the Future with
    :exc:`twisted.internet.defer.TimeoutError`.
    """
    reactor = _reactor()
    if threading.current_thread() is _reactor_thread:
        raise ReactorError("blocking on the reactor from its own thread would deadlock")
    future: Future[Any] = Future()

    def settle(result: Any) -> None:
        if isinstance(result, Failure):
            future.set_exception(result.value)
        else:
            future.set_result(result)

    def start() -> None:
        d = defer.maybeDeferred(fn, *args, **kwargs)
        d.addTimeout(timeout, reactor)
        d.addBoth(settle)

    reactor.callFromThread(start)
    return future


def result(future: Future[Any], timeout: float) -> Any:
    """Wait for a :func:`submit` Future started with *timeout*; raise its failure."""
    try:
        return future.result(timeout + _GRACE)
    except TimeoutError:
        if not future.done():
            raise ReactorError(
                f"the reactor thread did not answer within {timeout + _GRACE} s"
            ) from None
        raise


def call(timeout: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` in the reactor thread and wait for its result."""
    return result(submit(timeout, fn, *args, **kwargs), timeout)
