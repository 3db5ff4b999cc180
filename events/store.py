"""The append-only SQLite event store (DESIGN.md section 2).

One writer task owns the write connection and does group commit: every append waiting
when it wakes shares one transaction, yet each caller gets its own result or error.
Positions are assigned inside that write transaction, so they are gapless and
commit-ordered even with several processes on one file. Readers use their own
connection (WAL lets them run beside the writer). This is the only module that
imports aiosqlite.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from .codec import Recorded, encode
from .errors import ConcurrencyConflict, DuplicateEventMismatch, SimreportdError, StoreClosed, WaitTimeout
from .models import DomainEvent

log = logging.getLogger("simreportd.events.store")

ANY_VERSION: None = None
MAX_GROUP_APPENDS = 1024
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
CREATE INDEX IF NOT EXISTS events_by_type ON events (type, position);
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
    event_id: str = field(default_factory=lambda: str(uuid.uuid4()))
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
    stream: str
    events: list[NewEvent]
    expected_version: int | None
    future: asyncio.Future[AppendResult]


class EventStore:
    """Append-only event log in one SQLite file; use as an async context manager."""

    def __init__(self, path: str | Path, synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> None:
        self.path = Path(path)
        self.synchronous = synchronous
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._writer_task: asyncio.Task[None] | None = None
        self._closed = False
        self._head = 0
        self._committed = asyncio.Event()

    async def __aenter__(self) -> EventStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Create the file and schema if needed and start the writer task."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = await self._connect()
            await self._writer.executescript(SCHEMA)
            self._reader = await self._connect()
        except Exception as exc:  # sqlite3 errors become ours at this boundary
            raise SimreportdError(f"cannot open event store {self.path}: {exc}") from exc
        self._head = await self._read_head()
        self._writer_task = asyncio.create_task(self._write_loop(), name="event-store-writer")

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute(f"PRAGMA synchronous={'FULL' if self.synchronous == 'FULL' else 'NORMAL'}")
        await conn.execute("PRAGMA busy_timeout=10000")
        return conn

    async def close(self) -> None:
        """Drain accepted appends, stop the writer and close both connections. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._writer_task is not None:
            await self._queue.join()
            self._writer_task.cancel()
            await asyncio.gather(self._writer_task, return_exceptions=True)
        for conn in (self._writer, self._reader):
            if conn is not None:
                await conn.close()
        self._committed.set()

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
        future: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(stream, wrapped, expected_version, future))
        return await future

    async def _write_loop(self) -> None:
        while True:
            group = [await self._queue.get()]
            while not self._queue.empty() and len(group) < MAX_GROUP_APPENDS:
                group.append(self._queue.get_nowait())
            try:
                await self._commit_group(group)
            except Exception as exc:  # a failed transaction fails every caller in it, not the writer
                log.exception("group commit of %d appends failed", len(group))
                for pending in group:
                    if not pending.future.done():
                        pending.future.set_exception(SimreportdError(f"append failed: {exc}"))
            finally:
                for _ in group:
                    self._queue.task_done()

    async def _commit_group(self, group: list[_Pending]) -> None:
        conn = self._writer
        assert conn is not None
        await conn.execute("BEGIN IMMEDIATE")
        try:
            rows, outcomes = await self._plan_group(conn, group)
            if rows:
                await conn.executemany(INSERT, rows)
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        if rows:
            self._head = max(self._head, rows[-1][0])
            self._wake_subscribers()
        for pending, outcome in zip(group, outcomes):
            if pending.future.done():
                continue
            if isinstance(outcome, Exception):
                pending.future.set_exception(outcome)
            else:
                pending.future.set_result(outcome)

    async def _plan_group(
        self, conn: aiosqlite.Connection, group: list[_Pending]
    ) -> tuple[list[tuple[Any, ...]], list[AppendResult | Exception]]:
        """Decide, inside the write transaction, which appends succeed and at which positions."""
        head = await _scalar(conn, "SELECT coalesce(max(position), 0) FROM events")
        streams = sorted({p.stream for p in group})
        versions: dict[str, int] = dict.fromkeys(streams, 0)
        async with conn.execute(
            "SELECT stream, max(version) FROM events WHERE stream IN (SELECT value FROM json_each(?)) GROUP BY stream",
            (json.dumps(streams),),
        ) as cur:
            versions.update({s: v async for s, v in cur})
        all_ids = [e.event_id for p in group for e in p.events]
        known: dict[str, tuple[int, int]] = {}
        async with conn.execute(
            "SELECT event_id, position, version FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
            (json.dumps(all_ids),),
        ) as cur:
            known.update({eid: (pos, ver) async for eid, pos, ver in cur})
        recorded_at = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        rows: list[tuple[Any, ...]] = []
        outcomes: list[AppendResult | Exception] = []
        for pending in group:
            outcome = _plan_one(pending, versions, known, head + len(rows), recorded_at)
            if isinstance(outcome, tuple):
                new_rows, result = outcome
                rows.extend(new_rows)
                outcomes.append(result)
            else:
                outcomes.append(outcome)
        return rows, outcomes

    def _wake_subscribers(self) -> None:
        committed, self._committed = self._committed, asyncio.Event()
        committed.set()

    # --- reading ---------------------------------------------------------------------------

    async def read_stream(self, stream: str, after_version: int = 0) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order."""
        conn = self._check_open()
        sql = f"SELECT {SELECT_COLUMNS} FROM events WHERE stream = ? AND version > ? ORDER BY version"
        async with conn.execute(sql, (stream, after_version)) as cur:
            return [_recorded(row) for row in await cur.fetchall()]

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
        async with conn.execute(READ_ALL, params) as cur:
            return [_recorded(row) for row in await cur.fetchall()]

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
        async with conn.execute(sql) as cur:
            return [tuple(row) for row in await cur.fetchall()]  # type: ignore[misc]

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
            try:
                await asyncio.wait_for(woken.wait(), POLL_SECONDS)
            except TimeoutError:
                pass

    async def wait_for(self, position: int, timeout: float = 30.0) -> None:
        """Return once `position` is committed; raise WaitTimeout after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.last_position() < position:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise WaitTimeout(f"position {position}", timeout)
            woken = self._committed
            try:
                await asyncio.wait_for(woken.wait(), min(remaining, POLL_SECONDS))
            except TimeoutError:
                pass


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
             recorded_at, encode(event), json.dumps(new.meta, sort_keys=True))
        )
    versions[pending.stream] = current + len(rows)
    positions = tuple(r[0] for r in rows)
    return rows, AppendResult(pending.stream, positions, versions[pending.stream])


def _recorded(row: tuple[Any, ...]) -> Recorded:
    position, stream, version, type_name, schema_version, event_id, recorded_at, data, meta = row
    return Recorded(position, stream, version, type_name, schema_version, event_id, recorded_at,
                    json.loads(data), json.loads(meta))


async def _scalar(conn: aiosqlite.Connection, sql: str) -> int:
    async with conn.execute(sql) as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0
