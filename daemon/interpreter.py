"""How each daemon process (the daemon, its fold child) sets up the Python interpreter it runs in."""

from __future__ import annotations

import gc


def tune_gc() -> None:
    """Collect the young generation less often: ingest and folds allocate many short-lived dicts, and
    the default thresholds spent about a third of ingest time in the collector (bench/ingest.py)."""
    gc.set_threshold(50_000, 50, 100)
