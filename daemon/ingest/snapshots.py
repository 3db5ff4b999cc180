"""Snapshots of ingest states, so a restart folds only the events after the last one, not a million actions.

A snapshot is a cache, never the truth: it names the event it was taken at (stream version and event
id), and one whose event is not in the log as named (another store, a rebuilt log) is ignored. It lives
in a small SQLite file of its own beside the read models; deleting it costs one full fold per simulation.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from .ingest_state import FileMark, IngestState

EVERY = 20_000  # events of a stream between two snapshots of its ingest state

SCHEMA = ("CREATE TABLE IF NOT EXISTS ingest_snapshots (simulation_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
          " event_id TEXT NOT NULL, state TEXT NOT NULL)")


def snapshots_path_for(store_path: Path) -> Path:
    """The snapshot file that belongs to an event store file (or to a node's local files, with PostgreSQL)."""
    return store_path.with_name(store_path.stem + "-snapshots.sqlite3")


class IngestSnapshots:
    """Load and save ingest states by simulation; each call opens its own connection (worker threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, simulation_id: str) -> tuple[int, str, IngestState] | None:
        """The newest snapshot: (version, event id, state), or None."""
        if not self.path.exists():
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT version, event_id, state FROM ingest_snapshots WHERE simulation_id = ?",
                               (simulation_id,)).fetchone()
        return None if row is None else (row[0], row[1], state_from_json(row[2]))

    def save(self, simulation_id: str, version: int, event_id: str, state: IngestState) -> None:
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO ingest_snapshots VALUES (?, ?, ?, ?)",
                         (simulation_id, version, event_id, state_to_json(state)))

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            with conn:  # one transaction
                conn.execute(SCHEMA)
                yield conn
        finally:
            conn.close()


def state_to_json(state: IngestState) -> str:
    data = asdict(state)
    data["started"] = sorted(state.started)
    return json.dumps(data, sort_keys=True)


def state_from_json(text: str) -> IngestState:
    data = json.loads(text)
    return IngestState(**{
        **data, "started": set(data["started"]),
        "files": {k: FileMark(**m) for k, m in data["files"].items()},
        "retired": {k: [FileMark(**m) for m in marks] for k, marks in data["retired"].items()}})
