"""Is a simulation's environment alive for live interviews? Checked against the files, now."""

from __future__ import annotations

from pathlib import Path

import anyio

from simreportd.daemon.ingest.folder import read_env_status
from simreportd.projections import simulation_queries
from simreportd.projections.sqlite import in_thread, reading


class FolderEnvironment:
    """Looks up the simulation's folder in the read models and reads its env_status.json and pid."""

    def __init__(self, views_path: Path, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.views_path, self.limiter = views_path, limiter

    async def alive(self, simulation_id: str) -> bool:
        return await in_thread(self._alive, simulation_id, limiter=self.limiter)

    def _alive(self, simulation_id: str) -> bool:
        folder = self.folder_of(simulation_id)
        status = read_env_status(folder) if folder else None
        return status is not None and status.status == "alive"

    def folder_of(self, simulation_id: str) -> Path | None:
        with reading(self.views_path) as conn:
            latest = simulation_queries.latest_generation(conn, simulation_id)
        return Path(latest[1]) if latest else None
