"""A stop asked for (SIGTERM, SIGINT) before the CLI takes the signals over: remembered, not acted on.

`entry.py` installs the handlers before it imports anything slow; the CLI asks `stop_requested()` before it
starts its work. Its own module, so that the CLI need not import the entry point that imports the CLI.
"""

from __future__ import annotations

import signal
from types import FrameType

_requested: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    _requested.append(signum)


def remember_stops() -> None:
    """Remember SIGTERM and SIGINT instead of dying of them, until the CLI installs its own handlers."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _remember)


def stop_requested() -> bool:
    """Whether SIGTERM or SIGINT arrived before the CLI took the signals over."""
    return bool(_requested)
