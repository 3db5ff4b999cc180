"""Is a simulation's environment alive for live interviews? Checked against the files, now, and by asking it."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import anyio

from simreportd.daemon.ingest.folder import EnvStatus, read_env_status
from simreportd.errors import RPCFailed
from simreportd.projections import simulation_queries
from simreportd.projections.sqlite import in_thread, reading

from . import rpc

log = logging.getLogger("simreportd.daemon.interviews.environment")
Written = tuple[int, int] | None  # env_status.json's mtime and size: what tells a new one


class FolderEnvironment:
    """Looks up the simulation's folder in the read models and reads its env_status.json and pid.

    An `alive` the environment has not confirmed since its env_status.json was written is asked first: a `ping`
    command, answered within `[interview] probe_s` by any environment that reads its commands (MiroFish answers an
    unknown command `failed` at once: run_parallel_simulation.py:599-601). One that does not answer, or leaves a
    command unanswered for `[interview] timeout_s`, is remembered as silent: gone for every interview, the
    report's and the users', until its env_status.json is written anew (a restarted simulator writes it), so a
    report never waits out a stale `alive` (docs/formats.md#interview-file-rpc).
    """

    def __init__(self, views_path: Path, limiter: anyio.CapacityLimiter | None = None, probe_s: float = 5.0) -> None:
        self.views_path, self.limiter, self.probe_s = views_path, limiter, probe_s
        self.silent: dict[Path, Written] = {}  # folder -> its env_status.json when it fell silent
        self.heard: dict[Path, Written] = {}  # folder -> its env_status.json when it last answered a command
        self._asking: dict[Path, int] = {}  # folder -> commands of ours waiting for an answer
        self._probes: dict[Path, anyio.Lock] = {}  # one ping at a time per folder

    async def alive(self, simulation_id: str) -> bool:
        """`alive` in its env_status.json and answering commands (asked with a ping if not known since the file
        was written)."""
        return (await self.liveness(simulation_id))[0]

    async def liveness(self, simulation_id: str) -> tuple[bool, str]:
        """Whether the environment takes live interviews now; when a ping has just gone unanswered, also why
        not, in words."""
        found = await self.status(simulation_id)
        folder = self.folder_of(simulation_id) if found is not None and found.status == "alive" else None
        return await self._answering(folder, simulation_id) if folder is not None else (False, "")

    async def status(self, simulation_id: str) -> EnvStatus | None:
        """The environment's env_status.json now (None without one); a dead simulator's or a silent `alive`
        reads `stale`."""
        return await in_thread(self._status, simulation_id, limiter=self.limiter)

    async def call(self, folder: Path, command_type: str, args: dict[str, Any], timeout_s: float) -> Any:
        """Send one command (rpc.call) and note what its answer, or its silence, says of the environment."""
        self._asking[folder] = self._asking.get(folder, 0) + 1
        try:
            result = await rpc.call(folder, command_type, args, timeout_s)
        except rpc.Unanswered:
            self.fell_silent(folder)
            raise
        except RPCFailed:
            self.heard[folder] = _written(folder)  # it answered, if only to refuse: it reads its commands
            raise
        finally:
            self._asking[folder] -= 1
        self.heard[folder] = _written(folder)
        return result

    async def _answering(self, folder: Path, simulation_id: str) -> tuple[bool, str]:
        async with self._probes.setdefault(folder, anyio.Lock()):
            if self._asking.get(folder) or (folder in self.heard and self.heard[folder] == _written(folder)):
                return True, ""  # a command of ours is out (its own timeout decides), or it answered since written
            if self._still_silent(folder):
                return False, ""
            try:
                await self.call(folder, "ping", {}, self.probe_s)
            except rpc.Unanswered as exc:
                log.warning("simulation %s: its env_status.json says alive but it answered no ping in %g s; "
                            "interviews are answered in persona until the file is written anew ([interview] "
                            "probe_s)", simulation_id, self.probe_s)
                return False, str(exc)
            except RPCFailed:
                pass  # refused, so it reads its commands
            return True, ""

    def _status(self, simulation_id: str) -> EnvStatus | None:
        folder = self.folder_of(simulation_id)
        status = read_env_status(folder) if folder else None
        if folder is not None and status is not None and status.status == "alive" and self._still_silent(folder):
            return dataclasses.replace(status, status="stale")
        return status

    def fell_silent(self, folder: Path) -> None:
        """Remember that the environment in `folder` did not answer (until its env_status.json changes)."""
        self.silent[folder] = _written(folder)
        self.heard.pop(folder, None)

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


def _written(folder: Path) -> Written:
    """When and how long env_status.json was written (None if it is not there)."""
    try:
        found = (folder / "env_status.json").stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size
