"""The events layer's one face: the store contract, the values that cross it, and the backends.

Callers import from here and type against `EventStore` (docs/architecture.md#the-event-store): what a
caller may do with a store is the contract, whichever backend the daemon's wiring opened. The backends
load on first use, so importing the contract or the event models loads no database driver.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .codec import Recorded
from .contract import ANY_VERSION, AppendResult, CaughtUp, EventStore, NewEvent, caused
from .positions import Position

if TYPE_CHECKING:
    from .log import EventLog, redacted_url
    from .memory import MemoryEventStore
    from .postgres import PostgresEventStore
    from .store import SQLiteEventStore

__all__ = ["ANY_VERSION", "AppendResult", "CaughtUp", "EventLog", "EventStore", "MemoryEventStore", "NewEvent",
           "Position", "PostgresEventStore", "Recorded", "SQLiteEventStore", "caused", "redacted_url"]

_BACKENDS = {  # name -> the module that defines it, imported when first asked for
    "EventLog": ".log", "redacted_url": ".log", "SQLiteEventStore": ".store",
    "PostgresEventStore": ".postgres", "MemoryEventStore": ".memory",
}


def __getattr__(name: str) -> Any:
    """A backend, imported on first use (PEP 562): the SQLite one needs aiosqlite, PostgreSQL's asyncpg."""
    module = _BACKENDS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
