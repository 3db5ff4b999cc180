"""Memory hygiene for a long-lived process: what a crowd of short-lived objects left behind, given back.

CPython frees reference cycles only at a full collection, never shrinks a set's table as items leave,
keeps the names of recent attribute lookups in its type cache, and glibc keeps freed pages until asked.
A daemon that served a crowd of connections would hold all of that for minutes or for ever
(docs/architecture.md#concurrency-and-ownership). These functions do the giving back; the caller
decides when (the server, once a crowd has gone: `daemon/server/app.py`).
"""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any


def collect() -> None:
    """Free the reference cycles that cancelled tasks leave (exceptions, tracebacks, frames holding buffers)."""
    gc.collect()


def shrink(grown: Iterable[set[Any]]) -> None:
    """Rebuild each set at the size of what it holds now, in place (its holders keep the same object)."""
    for items in grown:
        held = items.copy()
        items.clear()
        items.update(held)


def forget_lookups() -> None:
    """Clear Python's type attribute cache: it keeps the names of recent lookups, strings made during a crowd."""
    sys._clear_type_cache()


def trim_heap() -> None:
    """Hand the C allocator's free pages back to the system (glibc's malloc_trim; nothing elsewhere)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
        return trim
    except (OSError, AttributeError):
        return None
