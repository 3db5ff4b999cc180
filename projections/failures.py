"""Read the markers the projection runner leaves when one event cannot be folded (docs/architecture.md#untrusted-input).

A marker says which projection skipped which event and why; `status`, `/healthz` and
`/metrics` show them so a skipped event is never silent.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .sqlite import rows_as_dicts


def fold_failures(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every marker (projection, position, type, error) in log order; none before the runner made the table."""
    try:
        return rows_as_dicts(conn.execute(
            "SELECT projection, position, type, error FROM projection_failures ORDER BY position, projection"))
    except sqlite3.OperationalError:  # read models written before the table existed
        return []
