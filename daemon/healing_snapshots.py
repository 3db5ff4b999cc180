"""Ingest snapshots that heal: a snapshot file that cannot be used is moved aside and started again.

Snapshots are a cache of folds of the log (daemon/ingest/snapshots.py): losing one costs a full fold of one
simulation's stream, never a stopped ingest.
"""

from __future__ import annotations

import sqlite3

from simreportd.projections.derived import damaged, set_aside

from .ingest.ingest_state import IngestState
from .ingest.snapshots import IngestSnapshots


class HealingSnapshots(IngestSnapshots):
    """`IngestSnapshots` whose file, once damaged (not a database, corrupt, unopenable), is set aside and made
    again, instead of failing the ingest that asked."""

    def load(self, simulation_id: str) -> tuple[int, str, IngestState] | None:
        """The newest snapshot, or None (also when the file had to be set aside: a full fold follows)."""
        try:
            return super().load(simulation_id)
        except sqlite3.DatabaseError as exc:
            self._set_aside(exc)
            return None

    def save(self, simulation_id: str, version: int, event_id: str, state: IngestState) -> None:
        """Save a snapshot, into a new file if the old one had to be set aside."""
        try:
            super().save(simulation_id, version, event_id, state)
        except sqlite3.DatabaseError as exc:
            self._set_aside(exc)
            super().save(simulation_id, version, event_id, state)

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        if not damaged(exc):
            raise exc
        set_aside(self.path, str(exc), "the ingest snapshots")
