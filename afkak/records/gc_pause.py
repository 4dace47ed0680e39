"""Pausing the cyclic garbage collector while fetched records are decoded.

Decoding creates several GC-tracked objects per record and no reference
cycle, so the collector's passes over them (dozens per megabyte fetched, then
full collections as they pile up) would find nothing to free, yet cost as
much as the decoding itself.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC for the block, unless the application already had.

    Keep the block synchronous (no user code, no yield to a caller): a
    collection due meanwhile runs at the first allocation after it.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
