"""The Deferred a send returns: Twisted's own, with its commonest moves compiled.

An application that gathers its sends (``gatherResults``) or awaits them
adds a callback to each send's Deferred, most of them already acknowledged;
Twisted's ``addCallbacks`` then builds a chain entry and runs its whole loop
for that one callback, which costs more than the rest of the send.
:class:`SendDeferred` is a :class:`~twisted.internet.defer.Deferred` whose
``addCallbacks``, ``addCallback``, ``addBoth``, ``addErrback`` and
``callback`` take a shortcut, in the compiled record module, when the move is
simple: a callback added to a Deferred that has fired with a success, and is
not paused, running its chain or debugging, runs at once; a Deferred with no
callback or one, fired with a success, records its result or runs that one
callback.  Everything else (failures, pauses, chained Deferreds, a callback
returning a Deferred or adding callbacks, cancellation, debug mode) goes
through Twisted's own code, and the state left is Twisted's.  Without the
compiled module, or with a Twisted whose private names differ, the class adds
nothing to Twisted's.
"""

from __future__ import annotations

from typing import Any, TypeVar

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.python.deprecate import warnAboutFunction
from twisted.python.failure import Failure

from afkak.records.batch import compiled_records
from afkak.records.gc_pause import track_all

__all__ = ["COMPILED", "SendDeferred"]

_T = TypeVar("_T")


class SendDeferred(Deferred[_T]):
    """A Deferred: the one ``Producer.send`` and ``send_messages`` return."""

    def pause(self) -> None:
        """Deferred.pause; one fired and left untracked by the cyclic GC (see
        :mod:`._waiters`) is shown to it first: another Deferred's chain may then
        append to its callbacks without going through its methods."""
        if self.called and track_all is not None:
            track_all([self])
        super().pause()


def _learn_attributes() -> None:
    """Set every attribute Twisted gives a Deferred on a first instance.

    CPython (3.11+) keeps a class's instance attributes in one key table shared
    by all its instances, and stops adding names to it once a few dozen
    instances exist: a name first set later gives each instance a dict of its
    own (one more object for the cyclic GC, slower attribute access).  Sends
    create thousands of these before the first one fires, so the names are set
    here first, as Twisted's own use does early for :class:`Deferred`.
    """
    d: SendDeferred[Any] = SendDeferred()
    d.pause()
    d.addCallback(lambda r: r)
    d.errback(Failure(ZeroDivisionError()))
    d.unpause()
    d.addErrback(lambda f: None)
    cancelled: SendDeferred[Any] = SendDeferred()
    cancelled.cancel()  # _suppressAlreadyCalled
    cancelled.addErrback(lambda f: None)


_learn_attributes()


def _bind() -> bool:
    """Give :class:`SendDeferred` the compiled methods, if this Twisted has the names
    they use; whether it did."""
    compiled = compiled_records()
    bind = getattr(compiled, "bind_deferred", None)
    names = ("_DEFERRED_SUBCLASSES", "_NONE_KWARGS", "_CONTINUE")
    if bind is None or not all(hasattr(defer, name) for name in names):
        return False
    probe: Deferred[Any] = Deferred()
    if not all(
        hasattr(probe, name)
        for name in ("_callbacks", "_runningCallbacks", "_chainedTo", "_debugInfo")
    ) or not all(hasattr(Deferred, name) for name in ("_runCallbacks", "_continuation")):
        return False
    bind(
        Deferred,
        Failure,
        defer._DEFERRED_SUBCLASSES,
        defer._NONE_KWARGS,
        defer._CONTINUE,
        warnAboutFunction,
        gathering=getattr(defer.DeferredList, "_cbDeferred", None),
    )
    SendDeferred.addCallbacks = compiled.deferred_add_callbacks  # type: ignore[method-assign]
    SendDeferred.addCallback = compiled.deferred_add_callback  # type: ignore[method-assign]
    SendDeferred.addErrback = compiled.deferred_add_errback  # type: ignore[method-assign]
    SendDeferred.addBoth = compiled.deferred_add_both  # type: ignore[method-assign]
    SendDeferred.callback = compiled.deferred_callback  # type: ignore[method-assign]
    return True


#: Whether :class:`SendDeferred`'s shortcuts are compiled in.
COMPILED = _bind()
