"""Turn one simulation folder into events of its `simulation-<id>` stream (DESIGN.md section 3).

`check()` is idempotent and cheap: every watch event, rescan or restart just calls it,
and it appends whatever the files hold beyond what the log already records.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from simreportd.errors import ConcurrencyConflict
from simreportd.events.ids import new_event_id
from simreportd.events.log import EventLog, caused
from simreportd.events.models import (
    DomainEvent,
    EnvironmentStatusChanged,
    IngestRejected,
    SimulationDiscovered,
    SimulationGenerationStarted,
)
from simreportd.events.streams import simulation_stream

from .folder import SourceFile, read_setup, snapshot
from .inputs import Confinement
from .oasis import read_actions
from .snapshots import EVERY, IngestSnapshots
from .state import (
    FileMark,
    IngestState,
    events_for_lines,
    events_for_rows,
    finished_from_hint,
)
from .tail import CHUNK, read_lines, tail_matches


def new_batch_id() -> str:
    """The correlation id of one append of ingested events: which lines arrived together."""
    return "ingest-" + new_event_id()


log = logging.getLogger("simreportd.daemon.ingest.ingestor")



class SimulationIngestor:
    """Keeps one folder's stream up to date with its files."""

    def __init__(self, store: EventLog, folder: Path, max_line_bytes: int = 1_048_576,
                 follow_external_symlinks: bool = False, snapshots: IngestSnapshots | None = None) -> None:
        self.store, self.folder, self.max_line_bytes = store, folder, max_line_bytes
        self.confinement = Confinement(folder, follow_external_symlinks)
        self.simulation_id = folder.name
        self.stream = simulation_stream(self.simulation_id)
        self.state: IngestState | None = None
        self.snapshots, self._snapshot_version = snapshots, 0
        self._lock = anyio.Lock()

    async def check(self) -> None:
        """Append everything new in the folder; on a conflict, re-read the stream and try once more."""
        async with self._lock:
            for attempt in (1, 2):
                try:
                    await self._check()
                    await self._snapshot_if_due()
                    return
                except ConcurrencyConflict:
                    self.state = None  # another writer moved the stream: fold it again
                    if attempt == 2:
                        raise

    async def _check(self) -> None:
        state = await self._state()
        snap = await anyio.to_thread.run_sync(snapshot, self.folder, self.confinement)
        if not snap.exists:
            return
        if state.generation == 0:
            await self._start_generation(SimulationDiscovered, "discovered")
        for source in snap.sources:
            await self._ingest(source, snap.minutes_per_round)
        await self._note_unreadable(snap.unreadable)
        if finished := finished_from_hint(state, snap.finished_hint):
            await self._append(finished)
        if (completed := state.completion(snap.present)) is not None:
            await self._append([completed])
        if snap.env is not None and snap.env.status != state.env_status:
            await self._append([EnvironmentStatusChanged(
                simulation_id=self.simulation_id, generation=state.generation, status=snap.env.status,
                twitter_available=snap.env.twitter_available, reddit_available=snap.env.reddit_available,
                pid=snap.env.pid)])

    async def _note_unreadable(self, unreadable: list[tuple[str, str]]) -> None:
        """An action file that is not one we read (a folder, a FIFO, a link out): recorded once, with why, so
        `status` and the log say why the run shows no actions, instead of nothing at every check."""
        state = await self._state()
        new = [(file, why) for file, why in unreadable if state.unreadable.get(file) != why]
        for _, why in new:
            log.warning("simulation %s: %s", self.simulation_id, why)
        if new:
            await self._append([IngestRejected(simulation_id=self.simulation_id, generation=state.generation,
                                               file=file, offset=0, reason=why, excerpt="") for file, why in new])

    async def _state(self) -> IngestState:
        if self.state is None:
            state = await self._from_snapshot() or IngestState(self.simulation_id)
            self._snapshot_version = state.version
            async for recorded in self.store.iter_stream(self.stream, state.version):  # never all at once
                state.apply_recorded(recorded)
            self.state = state
        return self.state

    async def _from_snapshot(self) -> IngestState | None:
        """The last snapshot's state, if the event it was taken at is in the log as it names it."""
        found = None if self.snapshots is None else \
            await anyio.to_thread.run_sync(self.snapshots.load, self.simulation_id)
        if found is None:
            return None
        version, event_id, state = found
        if await self._event_id_at(version) != event_id:
            log.warning("simulation %s: ignoring an ingest snapshot that does not match the log", self.simulation_id)
            return None
        return state

    async def _event_id_at(self, version: int) -> str | None:
        at = await self.store.read_stream(self.stream, version - 1, limit=1) if version > 0 else []
        return at[0].event_id if at and at[0].version == version else None

    async def _snapshot_if_due(self) -> None:
        """Keep a snapshot of the state every EVERY events, taken at an event the log holds."""
        state = self.state
        if self.snapshots is None or state is None or state.version - self._snapshot_version < EVERY:
            return
        if (event_id := await self._event_id_at(state.version)) is None:
            return  # the state is not in step with the log: no snapshot of it
        await anyio.to_thread.run_sync(self.snapshots.save, self.simulation_id, state.version, event_id, state)
        self._snapshot_version = state.version

    async def _start_generation(self, kind: type[SimulationDiscovered | SimulationGenerationStarted],
                                reason: str) -> None:
        state = await self._state()
        setup = await anyio.to_thread.run_sync(read_setup, self.folder, self.confinement)
        extra: dict[str, Any] = {"reason": reason} if kind is SimulationGenerationStarted else {}
        generation = state.generation + 1
        event = kind(simulation_id=self.simulation_id, generation=generation, folder=str(self.folder),
                     requirement=setup.requirement, config=setup.config, agents=setup.agents, **extra)
        rejected = [IngestRejected(simulation_id=self.simulation_id, generation=generation, file=file, offset=0,
                                   reason=why, excerpt="") for file, why in setup.problems]
        await self._append([event, *rejected])
        log.info("simulation %s generation %d %s", self.simulation_id, state.generation, reason)

    async def _ingest(self, source: SourceFile, minutes_per_round: int = 60) -> None:
        state = await self._state()
        decision = await anyio.to_thread.run_sync(state.classify, source.key, source.identity,
                                                  self._same_bytes(source))
        if decision == "stale":
            return
        if decision == "new_generation":
            await self._start_generation(SimulationGenerationStarted, f"{source.key} was replaced or rewritten")
        offset = state.offset_of(source.key)
        if source.kind == "oasis":
            await self._ingest_database(source, offset, minutes_per_round)
            return
        while lines := await anyio.to_thread.run_sync(read_lines, source.path, offset, self.max_line_bytes,
                                                      CHUNK, self.confinement):
            before = state.version
            try:
                events = events_for_lines(state, source.key, source.platform, source.identity, lines)
                await self.store.append(self.stream, caused(events, new_batch_id()), expected_version=before)
            except BaseException:
                self.state = None  # the fold ran ahead of the log; rebuild it from the log
                raise
            offset = lines[-1].end
            del lines, events  # before the next read: two reads' lines at once doubled the peak (500k lines a read)

    def _same_bytes(self, source: SourceFile) -> Callable[[FileMark], bool]:
        """Whether the file still holds, before a mark's end, the bytes it held when the mark was taken."""
        return lambda mark: mark.tail is None or tail_matches(source.path, mark.end, mark.tail, self.confinement)

    async def _ingest_database(self, source: SourceFile, after: int, minutes_per_round: int) -> None:
        state = await self._state()
        while True:
            try:
                scanned, rows = await anyio.to_thread.run_sync(read_actions, source.path, after, minutes_per_round)
            except sqlite3.Error as exc:  # locked or being rewritten: the next check tries again
                log.info("OASIS database %s not readable now: %s", source.path, exc)
                return
            if rows:
                before = state.version
                try:
                    events = events_for_rows(state, source.key, source.platform or "twitter", source.identity, rows)
                    await self.store.append(self.stream, caused(events, new_batch_id()), expected_version=before)
                except BaseException:
                    self.state = None
                    raise
            if scanned <= after:
                return
            after = scanned

    async def _append(self, events: list[DomainEvent]) -> None:
        state = await self._state()
        before = state.version
        await self.store.append(self.stream, caused(events, new_batch_id()), expected_version=before)
        for event in events:
            state.apply(event)
