"""The append-only SQLite event store (DESIGN.md section 2).

One writer task owns the write connection and does group commit: every append waiting
when it wakes shares one transaction, yet each caller gets its own result or error.
Positions are assigned inside that write transaction, so they are gapless and
commit-ordered even with several processes on one file. Readers use their own
connection (WAL lets them run beside the writer). This is the only module that
imports aiosqlite.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import aiosqlite
import anyio
from anyio.streams.memory import MemoryObjectSendStream

from .codec import Recorded, encode
from .ids import new_event_id
from .errors import (ConcurrencyConflict, DuplicateEventMismatch, SimreportdError, StoreClosed, StoreFull,
                     StoreUnusable, WaitTimeout)
from .models import DomainEvent

log = logging.getLogger("simreportd.events.store")

ANY_VERSION: None = None
MAX_GROUP_APPENDS = 1024
MAX_QUEUED_APPENDS = 8192  # appenders beyond this wait (backpressure) instead of growing memory
CLOSE_TIMEOUT = 10.0  # how long close() lets the writer drain before it gives up on the rest
POLL_SECONDS = 0.5  # how often a subscriber looks for appends made by other processes

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    stream TEXT NOT NULL,
    version INTEGER NOT NULL,
    type TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    recorded_at TEXT NOT NULL,
    data TEXT NOT NULL,
    meta TEXT NOT NULL,
    UNIQUE (stream, version)
);
CREATE TRIGGER IF NOT EXISTS events_refuse_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS events_refuse_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END;
"""

INSERT = (
    "INSERT INTO events (position, event_id, stream, version, type, schema_version, recorded_at, data, meta)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SELECT_COLUMNS = "position, stream, version, type, schema_version, event_id, recorded_at, data, meta"
READ_ALL = (
    f"SELECT {SELECT_COLUMNS} FROM events WHERE position > ?"
    " AND (?2 IS NULL OR type IN (SELECT value FROM json_each(?2)))"
    " AND (?3 IS NULL OR stream IN (SELECT value FROM json_each(?3)))"
    " ORDER BY position LIMIT ?4"
)


@dataclass(frozen=True)
class NewEvent:
    """An event ready to append, with the id that makes a retried append idempotent."""

    event: DomainEvent
    event_id: str = field(default_factory=new_event_id)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AppendResult:
    """Where an append landed: one position per event and the stream's version after it."""

    stream: str
    positions: tuple[int, ...]
    version: int
    duplicate: bool = False


@dataclass(frozen=True)
class CaughtUp:
    """Marker a subscription yields once it has delivered the history up to `position`."""

    position: int


@dataclass
class _Pending:
    """One caller's append, waiting in the writer's queue for its outcome."""

    stream: str
    events: list[NewEvent]
    expected_version: int | None
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: AppendResult | Exception | None = None

    def settle(self, outcome: AppendResult | Exception) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


class EventStore:
    """Append-only event log in one SQLite file; use as an async context manager."""

    def __init__(self, path: str | Path, synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> None:
        self.path = Path(path)
        self.synchronous = synchronous
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: MemoryObjectSendStream[_Pending] | None = None
        self._stack = AsyncExitStack()
        self._writer_stopped = anyio.Event()
        self._closed = False
        self._head = 0  # highest position known committed, by anyone
        self._db_head = 0  # the same, as of our last write transaction (cache)
        self._versions: dict[str, int] = {}  # stream -> version as of our last commit (cache)
        self._committed = anyio.Event()
        self.problem: str | None = None  # why appends fail now (a full disk), for health checks

    async def __aenter__(self) -> EventStore:
        """Open both connections and start the writer in a task group this store owns."""
        try:
            await self._open_connections()
            self._head = self._db_head = await self._read_head()
        except BaseException:
            await self._close_connections()
            raise
        send, receive = anyio.create_memory_object_stream[_Pending](MAX_QUEUED_APPENDS)
        self._queue = send
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self.close)  # runs before the task group exits (LIFO)
        tasks.start_soon(self._write_loop, receive, name="event-store-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _open_connections(self) -> None:
        """Create the file and schema if needed; sqlite3 errors become ours at this boundary."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = await self._connect()
            await self._writer.executescript(SCHEMA)
            self._reader = await self._connect()
        except sqlite3.DatabaseError as exc:
            raise StoreUnusable(self.path, str(exc)) from exc

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(f"PRAGMA synchronous={'FULL' if self.synchronous == 'FULL' else 'NORMAL'}")
            await conn.execute("PRAGMA busy_timeout=10000")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await conn.close()  # else its worker thread would keep the process from exiting
            raise
        return conn

    async def close(self) -> None:
        """Drain accepted appends, stop the writer and close both connections. Safe to call twice.

        Shielded: a store closed while its owner is being cancelled still lets the writer finish
        the appends it accepted (up to CLOSE_TIMEOUT), and closes each connection only after its
        last user returned (aiosqlite runs a close after every call already queued).
        """
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._queue is not None:
                self._queue.close()
                with anyio.move_on_after(CLOSE_TIMEOUT):
                    await self._writer_stopped.wait()
            await self._close_connections()
        self._committed.set()

    async def _close_connections(self) -> None:
        with anyio.CancelScope(shield=True):
            for conn in (self._writer, self._reader):
                if conn is not None:
                    await conn.close()
            self._writer = self._reader = None

    def _check_open(self) -> aiosqlite.Connection:
        if self._closed or self._reader is None:
            raise StoreClosed()
        return self._reader

    # --- writing ---------------------------------------------------------------------------

    async def append(
        self,
        stream: str,
        events: Sequence[DomainEvent | NewEvent],
        expected_version: int | None = ANY_VERSION,
    ) -> AppendResult:
        """Append `events` to `stream` atomically.

        `expected_version` is the version the caller believes the stream is at (0 = new
        stream, None = any). Re-appending the same event ids writes nothing and returns the
        original positions.
        """
        self._check_open()
        wrapped = [e if isinstance(e, NewEvent) else NewEvent(e) for e in events]
        if not wrapped:
            raise ValueError("append needs at least one event")
        pending = _Pending(stream, wrapped, expected_version)
        assert self._queue is not None
        try:
            await self._queue.send(pending)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StoreClosed() from None
        await pending.done.wait()
        if isinstance(pending.outcome, Exception):
            raise pending.outcome
        assert pending.outcome is not None
        return pending.outcome

    async def _write_loop(self, queue: anyio.abc.ObjectReceiveStream[_Pending]) -> None:
        """Commit what arrives, a group at a time, until the queue is closed and drained.

        Shielded from the owner's cancellation: a group in flight always ends in COMMIT or
        ROLLBACK, and `close()` decides when the writer stops (after draining).
        """
        with anyio.CancelScope(shield=True) as self._writer_scope:
            try:
                async with queue:
                    async for first in queue:
                        await self._commit_safely(_gather_group(first, queue))
            finally:
                self._writer_stopped.set()

    async def _commit_safely(self, group: list[_Pending]) -> None:
        """Commit one group; a failed transaction fails every caller in it, not the writer."""
        try:
            await self._commit_group(group)
            self.problem = None
        except Exception as exc:
            if isinstance(_translate(exc), StoreFull):  # the callers report it and retry; nothing was written
                self.problem = f"the disk holding {self.path} is full; appends wait until space is freed"
            else:
                log.exception("group commit of %d appends failed", len(group))
            for pending in group:
                pending.settle(_translate(exc))

    async def _commit_group(self, group: list[_Pending]) -> None:
        """One transaction for the whole group, planned optimistically against cached versions.

        The fast path trusts the cached head position and stream versions and looks up no
        event ids: if another process appended meanwhile, or an append is a retry of one
        already committed, the insert violates a UNIQUE constraint or the plan shows a
        version conflict, and only then is the group planned again from the database.
        """
        conn = self._writer
        assert conn is not None
        await self._fill_versions(conn, {p.stream for p in group})
        versions = dict(self._versions)
        rows, outcomes = _plan_group(group, versions, {}, self._db_head)
        try:
            if any(isinstance(o, ConcurrencyConflict) for o in outcomes):
                raise _Replan
            await conn.execute("BEGIN IMMEDIATE")
            if rows:
                await conn.executemany(INSERT, rows)
        except (sqlite3.IntegrityError, _Replan):
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            await conn.execute("BEGIN IMMEDIATE")
            versions, rows, outcomes = await self._replan(conn, group)
            if rows:
                await conn.executemany(INSERT, rows)
        except BaseException:
            await self._abandon(conn)
            raise
        try:
            await conn.execute("COMMIT")
        except BaseException:
            await self._abandon(conn)
            raise
        self._versions = versions
        if rows:
            self._db_head = rows[-1][0]
            self._head = max(self._head, self._db_head)
            self._wake_subscribers()
        _settle(group, outcomes)

    async def _replan(self, conn: aiosqlite.Connection, group: list[_Pending]) -> tuple[
            dict[str, int], list[tuple[Any, ...]], list[AppendResult | Exception]]:
        """Plan the group again, inside the write transaction, from what the database holds."""
        self._versions = {}
        self._db_head = await _scalar(conn, "SELECT coalesce(max(position), 0) FROM events")
        await self._fill_versions(conn, {p.stream for p in group})
        versions = dict(self._versions)
        known = await _known_ids(conn, [e.event_id for p in group for e in p.events])
        rows, outcomes = _plan_group(group, versions, known, self._db_head)
        return versions, rows, outcomes

    async def _abandon(self, conn: aiosqlite.Connection) -> None:
        """Roll back and distrust the version cache (a stale head is caught by the constraints)."""
        self._versions = {}
        if conn.in_transaction:
            await conn.execute("ROLLBACK")

    async def _fill_versions(self, conn: aiosqlite.Connection, streams: set[str]) -> None:
        """Cache the versions of streams not seen yet (a stale cache is caught by the constraints)."""
        missing = sorted(streams - self._versions.keys())
        if missing:
            rows = await conn.execute_fetchall(
                "SELECT stream, max(version) FROM events WHERE stream IN (SELECT value FROM json_each(?))"
                " GROUP BY stream", (json.dumps(missing),))
            self._versions.update({**dict.fromkeys(missing, 0), **{stream: version for stream, version in rows}})

    def _wake_subscribers(self) -> None:
        committed, self._committed = self._committed, anyio.Event()
        committed.set()

    # --- reading ---------------------------------------------------------------------------

    async def read_stream(self, stream: str, after_version: int = 0) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order."""
        conn = self._check_open()
        sql = f"SELECT {SELECT_COLUMNS} FROM events WHERE stream = ? AND version > ? ORDER BY version"
        return [Recorded(*row) for row in await conn.execute_fetchall(sql, (stream, after_version))]

    async def read_all(
        self,
        after: int = 0,
        limit: int = 1000,
        types: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
    ) -> list[Recorded]:
        """Up to `limit` events after global position `after`, optionally of some types or streams."""
        conn = self._check_open()
        params = (
            after,
            json.dumps(list(types)) if types is not None else None,
            json.dumps(list(streams)) if streams is not None else None,
            limit,
        )
        return [Recorded(*row) for row in await conn.execute_fetchall(READ_ALL, params)]

    async def last_position(self) -> int:
        """The highest committed position (0 for an empty store), including other processes' appends."""
        self._check_open()
        self._head = max(self._head, await self._read_head())
        return self._head

    async def _read_head(self) -> int:
        conn = self._reader or self._writer
        assert conn is not None
        return await _scalar(conn, "SELECT coalesce(max(position), 0) FROM events")

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        conn = self._check_open()
        sql = "SELECT stream, max(version), max(position) FROM events GROUP BY stream ORDER BY stream"
        return [tuple(row) for row in await conn.execute_fetchall(sql)]  # type: ignore[misc]

    async def subscribe(
        self,
        after: int = 0,
        types: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        page: int = 500,
    ) -> AsyncIterator[Recorded | CaughtUp]:
        """Yield the history after `after`, then one `CaughtUp`, then live events as they commit.

        Appends in this process wake the subscriber at once; appends by other processes
        are found by a poll every POLL_SECONDS.
        """
        position, caught_up = after, False
        while True:
            woken = self._committed
            head = await self.last_position()
            batch = await self.read_all(position, page, types, streams)
            for recorded in batch:
                position = recorded.position
                yield recorded
            if len(batch) == page:
                continue
            position = max(position, head)
            if not caught_up:
                caught_up = True
                yield CaughtUp(position)
            self._check_open()
            with anyio.move_on_after(POLL_SECONDS):
                await woken.wait()

    async def wait_for(self, position: int, timeout: float = 30.0) -> None:
        """Return once `position` is committed; raise WaitTimeout after `timeout` seconds."""
        try:
            with anyio.fail_after(timeout):
                while await self.last_position() < position:
                    woken = self._committed
                    with anyio.move_on_after(POLL_SECONDS):
                        await woken.wait()
        except TimeoutError:
            raise WaitTimeout(f"position {position}", timeout) from None


def _gather_group(first: _Pending, queue: anyio.abc.ObjectReceiveStream[_Pending]) -> list[_Pending]:
    """`first` and every append already waiting behind it, up to MAX_GROUP_APPENDS."""
    group = [first]
    while len(group) < MAX_GROUP_APPENDS:
        try:
            group.append(queue.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
    return group


def _translate(exc: Exception) -> Exception:
    """A failed group's error as the callers see it: ours, with the sqlite3 cause kept."""
    if isinstance(exc, SimreportdError):
        return exc
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
        error: SimreportdError = StoreFull(str(exc))
    else:
        error = SimreportdError(f"append failed: {exc}")
    error.__cause__ = exc
    return error


class _Replan(Exception):
    """The optimistic plan needs checking against the database."""


def _settle(group: list[_Pending], outcomes: list[AppendResult | Exception]) -> None:
    for pending, outcome in zip(group, outcomes):
        pending.settle(outcome)


def _plan_group(group: list[_Pending], versions: dict[str, int], known: dict[str, tuple[int, int]],
                head: int) -> tuple[list[tuple[Any, ...]], list[AppendResult | Exception]]:
    """Decide which appends of a group succeed and at which positions; updates `versions`."""
    recorded_at = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    rows: list[tuple[Any, ...]] = []
    outcomes: list[AppendResult | Exception] = []
    for pending in group:
        outcome = _plan_one(pending, versions, known, head + len(rows), recorded_at)
        if isinstance(outcome, tuple):
            rows.extend(outcome[0])
            outcomes.append(outcome[1])
        else:
            outcomes.append(outcome)
    return rows, outcomes


async def _known_ids(conn: aiosqlite.Connection, ids: list[str]) -> dict[str, tuple[int, int]]:
    rows = await conn.execute_fetchall(
        "SELECT event_id, position, version FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),))
    return {event_id: (position, version) for event_id, position, version in rows}


def _plan_one(
    pending: _Pending,
    versions: dict[str, int],
    known: dict[str, tuple[int, int]],
    head: int,
    recorded_at: str,
) -> tuple[list[tuple[Any, ...]], AppendResult] | Exception:
    """Rows and result for one append, or the error it gets; updates `versions` and `known`."""
    ids = [e.event_id for e in pending.events]
    seen = [known[i] for i in ids if i in known]
    if seen:
        if len(seen) != len(ids):
            return DuplicateEventMismatch(pending.stream, [i for i in ids if i in known])
        return AppendResult(pending.stream, tuple(p for p, _ in seen), max(v for _, v in seen), duplicate=True)
    current = versions[pending.stream]
    if pending.expected_version is not None and pending.expected_version != current:
        return ConcurrencyConflict(pending.stream, pending.expected_version, current)
    rows = []
    for offset, new in enumerate(pending.events, start=1):
        event = new.event
        position, version = head + offset, current + offset
        known[new.event_id] = (position, version)
        rows.append(
            (position, new.event_id, pending.stream, version, event.type_name, event.SCHEMA_VERSION,
             recorded_at, encode(event), json.dumps(new.meta, sort_keys=True) if new.meta else "{}")
        )
    versions[pending.stream] = current + len(rows)
    positions = tuple(r[0] for r in rows)
    return rows, AppendResult(pending.stream, positions, versions[pending.stream])


async def _scalar(conn: aiosqlite.Connection, sql: str) -> int:
    rows = list(await conn.execute_fetchall(sql))
    return int(rows[0][0]) if rows else 0
