"""Is a simulation's environment alive for live interviews? Checked against the files, now."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio

from simreportd.daemon.ingest.folder import EnvStatus, read_env_status
from simreportd.projections import simulation_queries
from simreportd.projections.sqlite import in_thread, reading


class FolderEnvironment:
    """Looks up the simulation's folder in the read models and reads its env_status.json and pid.

    An environment that said `alive` and then did not answer a command in `[interview] timeout_s` (a
    stale file whose simulator's pid is unknown, or reused) is remembered as silent: gone for every
    interview, the report's and the users', until its env_status.json is written anew (a restarted
    simulator writes it), so that each interview does not wait the timeout out again.
    """

    def __init__(self, views_path: Path, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.views_path, self.limiter = views_path, limiter
        self.silent: dict[Path, tuple[int, int] | None] = {}  # folder -> its env_status.json when it fell silent

    async def alive(self, simulation_id: str) -> bool:
        found = await self.status(simulation_id)
        return found is not None and found.status == "alive"

    async def status(self, simulation_id: str) -> EnvStatus | None:
        """The environment's env_status.json now (None without one); a dead simulator's or a silent `alive`
        reads `stale`."""
        return await in_thread(self._status, simulation_id, limiter=self.limiter)

    def _status(self, simulation_id: str) -> EnvStatus | None:
        folder = self.folder_of(simulation_id)
        status = read_env_status(folder) if folder else None
        if folder is not None and status is not None and status.status == "alive" and self._still_silent(folder):
            return dataclasses.replace(status, status="stale")
        return status

    def fell_silent(self, folder: Path) -> None:
        """Remember that the environment in `folder` did not answer (until its env_status.json changes)."""
        self.silent[folder] = _written(folder)

    def _still_silent(self, folder: Path) -> bool:
        if folder not in self.silent:
            return False
        if self.silent[folder] == _written(folder):
            return True
        del self.silent[folder]  # written anew: a simulator came back, ask it again
        return False

    def folder_of(self, simulation_id: str) -> Path | None:
        with reading(self.views_path) as conn:
            latest = simulation_queries.latest_generation(conn, simulation_id)
        return Path(latest[1]) if latest else None


def _written(folder: Path) -> tuple[int, int] | None:
    """When and how long env_status.json was written (None if it is not there): what tells a new one."""
    try:
        found = (folder / "env_status.json").stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size
