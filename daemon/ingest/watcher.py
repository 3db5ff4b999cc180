"""Find simulation folders under the watched roots and keep their ingestors running.

watchfiles tells us quickly that something changed; a periodic rescan catches what it
misses (overflow, roots created or recreated later, network file systems). Either way a
change only means "check this folder again": `SimulationIngestor.check` is idempotent.
A folder whose check fails is recorded (`IngestFailed`) and retried with backoff; the
failure never reaches the watcher or the other folders (docs/architecture.md#untrusted-input).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import watchfiles

from simreportd.daemon.leases import Leases, SoleNode
from simreportd.events import EventStore
from simreportd.events.models import IngestFailed

from .folder import is_simulation_folder
from .identity import simulation_id_for
from .ingestor import SimulationIngestor
from .inputs import Confinement
from .snapshots import IngestSnapshots
from .values import clean_text

FIRST_RETRY_S, LAST_RETRY_S = 1.0, 300.0

log = logging.getLogger("simreportd.daemon.ingest.watcher")


class Watcher:
    """Watches `roots` (folders of simulation folders) and `folders` (simulation folders themselves)."""

    def __init__(self, store: EventStore, roots: Sequence[Path], folders: Sequence[Path] = (),
                 rescan_seconds: float = 5.0, max_line_bytes: int = 1_048_576, leases: Leases | None = None,
                 follow_external_symlinks: bool = False, snapshots: IngestSnapshots | None = None) -> None:
        self.store, self.roots, self.folders, self.snapshots = store, list(roots), list(folders), snapshots
        self.leases = leases or SoleNode()
        self.rescan_seconds, self.max_line_bytes = rescan_seconds, max_line_bytes
        self.follow_external_symlinks = follow_external_symlinks
        self.ingestors: dict[Path, SimulationIngestor] = {}
        self.failing: dict[Path, tuple[int, float]] = {}  # folder -> (consecutive failures, retry at)
        self.missing: set[Path] = set()  # roots found missing and said so: each is said again once it appears
        self._opening = anyio.Lock()  # one folder's id decided at a time: two copies must not both take one id

    def announce(self) -> None:
        """Log what is watched: one line a root or folder, a warning for a root that does not exist (and a line
        when it appears). `simreportd run` says it as it starts; a command's own daemon watches its folders."""
        for root in self.roots:
            if root.is_dir():
                log.info("watching %s for simulation folders", root.absolute())
            else:
                self.missing.add(root)
                log.warning("the watched root %s does not exist: no simulation is found there until it does; "
                            "create it, or set [watch] roots in the config (-c) to where the simulator writes its "
                            "runs", root.absolute())
        for folder in self.folders:
            log.info("watching the simulation folder %s", folder.absolute())

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
        """Ingest what is new in one folder; a failure is recorded and retried later, never raised."""
        failures, retry_at = self.failing.get(folder, (0, 0.0))
        if time.monotonic() < retry_at:
            return
        try:
            ingestor = self.ingestors.get(folder) or await self._open(folder)
            if ingestor is None:
                return
            await ingestor.check()
        except Exception as exc:  # noqa: BLE001 (isolation: one folder's failure must not stop the others)
            await self._failed(folder, failures + 1, exc)
        else:
            self.failing.pop(folder, None)

    def simulation_id_of(self, folder: Path) -> str:
        """The id the folder's events are recorded under (its name until it has been checked)."""
        ingestor = self.ingestors.get(folder)
        return ingestor.simulation_id if ingestor else folder.name

    async def _open(self, folder: Path) -> SimulationIngestor | None:
        """The folder's ingestor, made once (a rescan and a watch may both get here: one ingestor, whose lock
        takes them in turn, not two racing to append); None if the folder is not ours to ingest."""
        async with self._opening:
            if folder in self.ingestors:
                return self.ingestors[folder]
            if not await anyio.to_thread.run_sync(self._admissible, folder):
                return None
            if not await self.leases.take(f"ingest:{folder.name}"):
                return None  # another daemon on this store ingests it; it is ours if that one dies
            claimed = {i.simulation_id: f for f, i in self.ingestors.items()}
            simulation_id = await simulation_id_for(
                self.store, folder, Confinement(folder, self.follow_external_symlinks), claimed)
            ingestor = self.ingestors[folder] = SimulationIngestor(
                self.store, folder, self.max_line_bytes, self.follow_external_symlinks, self.snapshots,
                simulation_id)
            return ingestor

    async def _failed(self, folder: Path, failures: int, exc: Exception) -> None:
        """Log, back off, and record the failure in the folder's stream (when the store takes it)."""
        delay = min(LAST_RETRY_S, FIRST_RETRY_S * 2 ** (failures - 1))
        self.failing[folder] = (failures, time.monotonic() + delay)
        log.warning("ingest of %s failed (%d in a row), retrying in %.0f s: %s", folder, failures, delay, exc,
                    exc_info=not isinstance(exc, OSError))
        ingestor = self.ingestors.get(folder)
        if ingestor is None:
            return
        generation = ingestor.state.generation if ingestor.state else 0
        ingestor.state = None  # fold the stream again on the next try
        event = IngestFailed(simulation_id=ingestor.simulation_id, generation=generation, failures=failures,
                             error=clean_text(f"{type(exc).__name__}: {exc}")[:500], retry_in_s=delay)
        try:
            await self.store.append(ingestor.stream, [event], expected_version=None)
        except Exception:  # noqa: BLE001 (the store itself failing is logged by the store)
            log.warning("could not record the ingest failure of %s", folder)

    def _discover(self) -> list[Path]:
        found = [f for f in self.folders if is_simulation_folder(f)]
        for root in self.roots:
            try:
                found.extend(sorted(c for c in root.iterdir() if self._admissible(c)))
            except OSError:
                continue  # a root that does not exist yet, or vanished: the next rescan looks again
            if root in self.missing:
                self.missing.discard(root)
                log.info("watching %s for simulation folders (it exists now)", root.absolute())
        return found

    def _admissible(self, folder: Path) -> bool:
        """A simulation folder given by name, or one inside its root (a symlink out is not followed)."""
        if folder not in self.folders and not self.follow_external_symlinks and folder.is_symlink():
            try:
                inside = folder.resolve().is_relative_to(folder.parent.resolve())
            except (OSError, RuntimeError):  # a symlink loop
                inside = False
            if not inside:
                log.debug("%s links outside its root; not followed ([watch] follow_external_symlinks)", folder)
                return False
        return is_simulation_folder(folder)

    async def _rescan_forever(self) -> None:
        while True:
            await self.rescan()
            await anyio.sleep(self.rescan_seconds)

    async def _watch_forever(self) -> None:
        """Watch the folders for changes. watchfiles waits for changes in a worker thread that a cancelled
        caller must wait for; `stopped`, set the moment this task is cancelled, ends that wait within
        `step` ms instead of at the next timeout (`rescan_seconds`: every stop took that long)."""
        stopped = threading.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_set_when_cancelled, stopped)
            await self._watch_until(stopped)

    async def _watch_until(self, stopped: threading.Event) -> None:
        while not stopped.is_set():
            watched = [p for p in [*self.roots, *self.folders] if p.is_dir()]
            if not watched:
                await anyio.sleep(self.rescan_seconds)
                continue
            try:
                async for changes in watchfiles.awatch(*watched, debounce=50, step=20, yield_on_timeout=True,
                                                       rust_timeout=int(self.rescan_seconds * 1000),
                                                       stop_event=stopped):
                    for folder in sorted({f for _, p in changes if (f := self._folder_of(Path(p))) is not None}):
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


async def _set_when_cancelled(event: threading.Event) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        event.set()
