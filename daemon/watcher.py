"""Find simulation folders under the watched roots and keep their ingestors running.

watchfiles tells us quickly that something changed; a periodic rescan catches what it
misses (overflow, roots created or recreated later, network file systems). Either way a
change only means "check this folder again": `SimulationIngestor.check` is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import anyio
import watchfiles

from simreportd.events.store import EventStore

from .folder import is_simulation_folder
from .ingest import SimulationIngestor
from .leases import Leases, SoleNode

log = logging.getLogger("simreportd.daemon.watcher")


class Watcher:
    """Watches `roots` (folders of simulation folders) and `folders` (simulation folders themselves)."""

    def __init__(self, store: EventStore, roots: Sequence[Path], folders: Sequence[Path] = (),
                 rescan_seconds: float = 5.0, max_line_bytes: int = 1_048_576, leases: Leases | None = None) -> None:
        self.store, self.roots, self.folders = store, list(roots), list(folders)
        self.leases = leases or SoleNode()
        self.rescan_seconds, self.max_line_bytes = rescan_seconds, max_line_bytes
        self.ingestors: dict[Path, SimulationIngestor] = {}
        self.errors = 0

    async def run(self) -> None:
        """Rescan and watch until cancelled."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._rescan_forever)
            tasks.start_soon(self._watch_forever)

    async def rescan(self) -> None:
        """Check every simulation folder once."""
        for folder in await anyio.to_thread.run_sync(self._discover):
            await self.check(folder)

    async def check(self, folder: Path) -> None:
        """Ingest what is new in one folder; bad input is logged, never fatal."""
        ingestor = self.ingestors.get(folder)
        if ingestor is None:
            if not await anyio.to_thread.run_sync(is_simulation_folder, folder):
                return
            if not await self.leases.take(f"ingest:{folder.name}"):
                return  # another daemon on this store ingests it; it is ours if that one dies
            ingestor = self.ingestors[folder] = SimulationIngestor(self.store, folder, self.max_line_bytes)
        try:
            await ingestor.check()
        except (OSError, ValueError) as exc:
            self.errors += 1
            log.warning("ingest of %s failed, will retry on the next change: %s", folder, exc)

    def _discover(self) -> list[Path]:
        found = [f for f in self.folders if is_simulation_folder(f)]
        for root in self.roots:
            try:
                found.extend(sorted(c for c in root.iterdir() if is_simulation_folder(c)))
            except OSError:
                continue  # a root that does not exist yet, or vanished: the next rescan looks again
        return found

    async def _rescan_forever(self) -> None:
        while True:
            await self.rescan()
            await anyio.sleep(self.rescan_seconds)

    async def _watch_forever(self) -> None:
        while True:
            watched = [p for p in [*self.roots, *self.folders] if p.is_dir()]
            if not watched:
                await anyio.sleep(self.rescan_seconds)
                continue
            try:
                async for changes in watchfiles.awatch(*watched, debounce=50, step=20, yield_on_timeout=True,
                                                       rust_timeout=int(self.rescan_seconds * 1000)):
                    for folder in sorted({self._folder_of(Path(p)) for _, p in changes} - {None}):
                        await self.check(folder)
                    if [p for p in [*self.roots, *self.folders] if p.is_dir()] != watched:
                        break  # a root appeared or vanished: watch the new set
            except (OSError, RuntimeError) as exc:
                log.info("watch restarted: %s", exc)
                await anyio.sleep(self.rescan_seconds)

    def _folder_of(self, path: Path) -> Path | None:
        for folder in self.folders:
            if path == folder or folder in path.parents:
                return folder
        for root in self.roots:
            if root in path.parents:
                return root / path.relative_to(root).parts[0]
        return None
