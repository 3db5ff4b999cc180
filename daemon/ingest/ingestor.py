"""Turn one simulation folder into events of its `simulation-<id>` stream (docs/architecture.md#ingest).

`check()` is idempotent and cheap: every watch event, rescan or restart just calls it,
and it appends whatever the files hold beyond what the log already records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import Any

import anyio

from simreportd.errors import ConcurrencyConflict
from simreportd.events import EventStore, caused
from simreportd.events.ids import new_event_id
from simreportd.events.models import (
    DomainEvent,
    EnvironmentStatusChanged,
    IngestRejected,
    SimulationDiscovered,
    SimulationGenerationStarted,
)
from simreportd.events.streams import simulation_stream

from . import foreign, oasis
from .chunk import lead_of, parse_chunk
from .folder import FolderSnapshot, SourceFile, read_setup, snapshot
from .ingest_state import (
    FileMark,
    IngestState,
    SeedPlan,
    batch_for_lines,
    events_for_interviews,
    events_for_rows,
    finished_from_hint,
    plan_seeds,
)
from .inputs import Confinement
from .parse import Bad, Parsed
from .rounds import UNKNOWN, RoundClock
from .snapshots import EVERY, IngestSnapshots
from .tail import CHUNK, Line, read_chunk, tail_matches

FileIdentityKey = tuple[int, str]


def new_batch_id() -> str:
    """The correlation id of one append of ingested events: which lines arrived together."""
    return "ingest-" + new_event_id()


log = logging.getLogger("simreportd.daemon.ingest.ingestor")



class SimulationIngestor:
    """Keeps one folder's stream up to date with its files."""

    def __init__(self, store: EventStore, folder: Path, max_line_bytes: int = 1_048_576,
                 follow_external_symlinks: bool = False, snapshots: IngestSnapshots | None = None,
                 simulation_id: str = "") -> None:
        """`simulation_id`: what the folder's events are recorded under (`identity.simulation_id_for`); by
        default the folder's name."""
        self.store, self.folder, self.max_line_bytes = store, folder, max_line_bytes
        self.confinement = Confinement(folder, follow_external_symlinks)
        self.simulation_id = simulation_id or folder.name
        self.stream = simulation_stream(self.simulation_id)
        self.state: IngestState | None = None
        self.snapshots, self._snapshot_version = snapshots, 0
        self._lock = anyio.Lock()
        self._problems: list[tuple[str, str]] = []  # databases found unreadable during this check, and why
        self._names: dict[int, str] | None = None  # agent id -> the name the runner gives it (from the setup)
        self._bad: dict[str, tuple[int, int, int] | None] = {}  # database -> its signature when found unreadable
        self._scanned: dict[str, tuple[FileIdentityKey, int]] = {}  # database -> (identity, last rowid scanned)

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
        problems = list(snap.unreadable)
        databases = await self._databases(snap, problems)
        for source in snap.sources:
            await self._ingest(source, databases.get(source.platform) if source.platform else None)
        for database in databases.values():
            if snap.databases_only:
                await self._ingest(database, clock=snap.clock)
            elif database.platform in state.finished:  # interviews come after the last round
                await self._ingest_interviews(database)
        await self._note_unreadable(problems + self._problems)
        self._problems = []
        if finished := finished_from_hint(state, snap.finished_hint, snap.rounds_ran):
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

    async def _databases(self, snap: FolderSnapshot, problems: list[tuple[str, str]]) -> dict[str, SourceFile]:
        """The OASIS databases we can read now, by platform; each one we cannot goes into `problems` with why,
        and one that cannot be read at all is not tried again until it changes."""
        out: dict[str, SourceFile] = {}
        for platform, path in snap.databases.items():
            key = path.name
            if key in self._bad and self._bad[key] == foreign.signature(path):
                continue
            try:
                identity = await self._query(path, oasis.identify_db, path)
            except foreign.Unreadable as exc:
                problems.append((key, exc.reason))
                if not exc.transient:
                    self._bad[key] = foreign.signature(path)
                continue
            self._bad.pop(key, None)
            if identity is not None:
                out[platform] = SourceFile(key, platform, path, identity, kind="oasis")
        return out

    async def _query(self, path: Path, func: Callable[..., Any], *args: Any) -> Any:
        return await foreign.query(path, self.confinement, func, *args)

    async def _agent_names(self) -> dict[int, str]:
        """The agents' names from the setup, as the runner names them in its lines (read once)."""
        if self._names is None:
            setup = await anyio.to_thread.run_sync(read_setup, self.folder, self.confinement)
            self._names = {a["agent_id"]: str(a.get("name") or "") for a in setup.agents if a.get("name")}
        return self._names

    async def _ingest(self, source: SourceFile, database: SourceFile | None = None,
                      clock: RoundClock = UNKNOWN) -> None:
        state = await self._state()
        decision = await anyio.to_thread.run_sync(state.classify, source.key, source.identity,
                                                  self._same_bytes(source))
        if decision == "stale":
            return
        if decision == "new_generation":
            await self._start_generation(SimulationGenerationStarted, f"{source.key} was replaced or rewritten")
        offset = state.offset_of(source.key)
        if source.kind == "oasis":
            await self._ingest_database(source, offset, clock)
            return
        while True:
            lines, joined = await anyio.to_thread.run_sync(read_chunk, source.path, offset, self.max_line_bytes,
                                                           CHUNK, self.confinement)
            if not lines:
                return
            taken = await self._take_lines(state, source, database, lines, joined)
            if taken == 0:
                return  # seed posts waiting for their copies, or a database locked for a moment
            offset, complete = lines[taken - 1].end, taken == len(lines)
            del lines, joined  # before the next read: two reads' lines at once doubled the peak (500k lines a read)
            if not complete:
                return

    async def _take_lines(self, state: IngestState, source: SourceFile, database: SourceFile | None,
                          lines: list[Line], joined: bytes | None = None) -> int:
        """Append the events of as many of `lines` as can be taken now (seed posts wait for their copies;
        targets a line dropped come from the database beside it); how many were taken."""
        # light: no plain action's fields kept, unless the database fills what lines dropped (it reads them all)
        # or the read starts the file (its seeds are planned from theirs)
        chunk = parse_chunk(lines, source.platform,
                            lead_of(state.generation, source.platform).encode() if source.platform else None,
                            light=database is None and lines[0].offset > 0, joined=joined)
        parsed = chunk.parsed
        plan = plan_seeds(parsed, full=lines[-1].end - lines[0].offset >= CHUNK // 2) if chunk.seeded else \
            SeedPlan(len(parsed), frozenset(), {})
        if plan.cut == 0:
            return 0
        extra: dict[int, dict[str, Any]] = dict(plan.ids)
        if database is not None:
            try:
                found = await self._fill(state, database, parsed[:plan.cut], plan.skip)
            except foreign.Unreadable as exc:
                if exc.transient:
                    return 0  # a lock: these lines are read again, with their targets, at the next check
                self._problems.append((database.key, exc.reason))
                self._bad[database.key] = foreign.signature(database.path)
                found = {}
            for index, args in found.items():
                extra[index] = {**extra.get(index, {}), **args}
        before = state.version
        try:
            batch = batch_for_lines(state, source.key, source.platform, source.identity, lines[:plan.cut],
                                    parsed[:plan.cut], plan.skip, extra, {"correlation_id": new_batch_id()}, chunk)
            await self.store.append(self.stream, batch, expected_version=before)
        except BaseException:
            self.state = None  # the fold ran ahead of the log; rebuild it from the log
            raise
        return plan.cut

    async def _fill(self, state: IngestState, database: SourceFile, parsed: list[Parsed | Bad],
                    skip: frozenset[int]) -> dict[int, dict[str, Any]]:
        """What the database holds of the targets these lines dropped, by line index."""
        wants, seen = [], dict(state.mutes)
        for i, item in enumerate(parsed):
            if i in skip or not isinstance(item, Parsed) or item.kind != "action":
                continue
            f = item.fields
            nth = 0
            if f["action_type"] == "MUTE":
                key = f"{item.platform}:{f['agent_id']}"
                nth, seen[key] = seen.get(key, 0), seen.get(key, 0) + 1
            if oasis.missing_target(f["action_type"], f["action_args"]):
                wants.append(oasis.Want(i, f["action_type"], f["agent_id"], f["action_args"], nth))
        if not wants:
            return {}
        found: dict[int, dict[str, Any]] = await self._query(database.path, oasis.fill_targets, wants,
                                                             await self._agent_names())
        return found

    async def _ingest_interviews(self, database: SourceFile) -> None:
        """Record the interviews of a finished platform, read from its database's `trace`."""
        state = await self._state()
        decision = await anyio.to_thread.run_sync(state.classify, database.key, database.identity,
                                                  self._same_bytes(database))
        if decision != "tail" and decision != "adopt":
            return  # a database replaced while its actions.jsonl was not: the actions file decides generations
        identity_key = (database.identity.ino, database.identity.head)
        scanned = self._scanned.get(database.key)
        after = max(state.offset_of(database.key), scanned[1] if scanned and scanned[0] == identity_key else 0)
        if after >= database.identity.size:
            return
        try:
            last, interviews = await self._query(database.path, oasis.read_interviews, after)
        except foreign.Unreadable as exc:
            self._problems.append((database.key, exc.reason))
            return
        self._scanned[database.key] = (identity_key, last)
        if interviews:
            events = events_for_interviews(state, database.key, database.platform or "twitter", database.identity,
                                           interviews, await self._agent_names())
            await self._append_folded(events)

    def _same_bytes(self, source: SourceFile) -> Callable[[FileMark], bool]:
        """Whether the file still holds, before a mark's end, the bytes it held when the mark was taken."""
        return lambda mark: mark.tail is None or tail_matches(source.path, mark.end, mark.tail, self.confinement)

    async def _ingest_database(self, source: SourceFile, after: int, clock: RoundClock) -> None:
        """A folder with no actions.jsonl: the database's actions, and its interviews as interviews."""
        state = await self._state()
        platform = source.platform or "twitter"
        while True:
            try:
                scanned, items = await self._query(source.path, oasis.read_rows, after, clock,
                                                   await self._agent_names())
            except foreign.Unreadable as exc:
                self._problems.append((source.key, exc.reason))
                return
            events: list[Any] = []
            for is_interview, run in groupby(items, key=lambda item: isinstance(item, oasis.Interview)):
                group = list(run)
                events += events_for_interviews(state, source.key, platform, source.identity, group,
                                                await self._agent_names()) if is_interview \
                    else events_for_rows(state, source.key, platform, source.identity, group)
            await self._append_folded(events)
            if scanned <= after:
                return
            after = scanned

    async def _append_folded(self, events: list[Any]) -> None:
        """Append events `state` has already folded; on any failure the state is folded again from the log."""
        if not events:
            return
        state = await self._state()
        before = state.version - len(events)
        try:
            await self.store.append(self.stream, caused(events, new_batch_id()), expected_version=before)
        except BaseException:
            self.state = None
            raise

    async def _append(self, events: list[DomainEvent]) -> None:
        state = await self._state()
        before = state.version
        await self.store.append(self.stream, caused(events, new_batch_id()), expected_version=before)
        for event in events:
            state.apply(event)
