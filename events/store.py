"""The append-only SQLite event store (docs/architecture.md#the-event-store), the embedded default.

`EventLog` (log.py) keeps the contract (contract.py): it queues appends and lets one writer task commit them a group
at a time; this module supplies the SQLite half: the schema, one transaction per group,
and the reads. Positions are assigned inside the write transaction, so they are gapless
and commit-ordered even with several processes on one file. Readers use their own
connection (WAL lets them run beside the writer). This is the only module that imports
aiosqlite.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import aiosqlite
import anyio

from simreportd.errors import ConcurrencyConflict, StoreClosed, StoreFull, StoreReadOnly, StoreUnusable

from .codec import Recorded
from .contract import ANY_VERSION, AppendResult, CaughtUp, NewEvent
from .group_commit import Outcome, Pending, Replan, Row, plan_group, settle
from .log import POLL_SECONDS, EventLog
from .positions import Position

__all__ = ["ANY_VERSION", "POLL_SECONDS", "AppendResult", "CaughtUp", "NewEvent", "SQLiteEventStore"]

log = logging.getLogger("simreportd.events.store")

T = TypeVar("T")

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
READ_STREAM = (f"SELECT {SELECT_COLUMNS} FROM events WHERE stream = ?1 AND version > ?2"
               " AND (?4 IS NULL OR type IN (SELECT value FROM json_each(?4))) ORDER BY version LIMIT ?3")
READ_ALL = (
    f"SELECT {SELECT_COLUMNS} FROM events WHERE position > ?"
    " AND (?2 IS NULL OR type IN (SELECT value FROM json_each(?2)))"
    " AND (?3 IS NULL OR stream IN (SELECT value FROM json_each(?3)))"
    " AND position <= coalesce(?5, 9223372036854775807)"
    " ORDER BY position LIMIT ?4"
)


# A checkpoint copies the WAL into the file and syncs it: every 1,000 pages (SQLite's default) it was a
# seventh of a big ingest. Every 10,000 pages (40 MB of WAL) instead, with a cache of 8 MB (the default is 2):
# 1M actions ingested in 20 s instead of 23 (bench/ingest.py).
CACHE_KIB = 8192
WAL_CHECKPOINT_PAGES = 10_000
# Those checkpoints are passive: a fold reading beside a big ingest keeps them from ever emptying the WAL, which
# grew to 229 MB at 1M actions. Past twice their size (`SQLiteEventStore.WAL_TRUNCATE_BYTES`), the writer truncates
# it, waiting a little for the readers' short reads to end (docs/architecture.md#the-wal-while-the-fold-reads).
WAL_TRUNCATE_WAIT_MS = 250  # not BUSY_TIMEOUT_MS: a reader that holds on must not stall the writer for long
BUSY_TIMEOUT_MS = 10_000


class SQLiteEventStore(EventLog):
    """Append-only event log in one SQLite file; use as an async context manager."""

    IDENTITY_EVERY_S = 0.0  # a stat: cheap enough for every group commit
    WAL_TRUNCATE_BYTES = 2 * WAL_CHECKPOINT_PAGES * 4096

    def __init__(self, path: str | Path, synchronous: Literal["NORMAL", "FULL"] = "NORMAL", create: bool = True) -> None:
        super().__init__()
        self.path, self.create = Path(path), create  # without `create`, a missing file is refused, not made
        self.where = str(self.path)
        self.synchronous = synchronous
        self._writer: sqlite3.Connection | None = None  # used by one thread at a time, under `_writing`
        self._writing = anyio.CapacityLimiter(1)
        self._reader: aiosqlite.Connection | None = None
        self._wal = self.path.with_name(self.path.name + "-wal")
        self._wal_limit = self.WAL_TRUNCATE_BYTES

    async def _open_connections(self) -> None:
        """Create the file and schema if needed; sqlite3 errors become ours at this boundary."""
        if not self.create and not self.path.exists():  # checked first: a failed aiosqlite connect leaves a
            raise StoreUnusable(self.path, "it does not exist")  # thread that may outlive the event loop
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = await self._on_writer(self._connect_writer)
            self._reader = await self._connect()
        except OSError as exc:
            raise read_only_or(exc, self.path) from exc
        except sqlite3.DatabaseError as exc:
            if "readonly" in str(exc) or not _writable(self.path):
                raise StoreReadOnly(self.path, str(exc)) from exc
            raise StoreUnusable(self.path, str(exc)) from exc

    async def _current_identity(self) -> object:
        """The file's (device, inode); None once it is gone."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def _uri(self) -> str:
        return f"{self.path.resolve().as_uri()}?mode={'rwc' if self.create else 'rw'}"

    def _pragmas(self) -> list[str]:
        return ["PRAGMA journal_mode=WAL", f"PRAGMA synchronous={'FULL' if self.synchronous == 'FULL' else 'NORMAL'}",
                f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}", f"PRAGMA cache_size=-{CACHE_KIB}",
                f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}"]

    def _connect_writer(self) -> sqlite3.Connection:
        """The writer's connection, with the schema (in a worker thread): a plain sqlite3 one, so that a group is
        planned, inserted and committed in one call on its thread, not one hop of the event loop a statement."""
        conn = sqlite3.connect(self._uri(), uri=True, isolation_level=None, check_same_thread=False)
        try:
            for pragma in self._pragmas():
                conn.execute(pragma)
            conn.executescript(SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    async def _on_writer(self, work: Callable[..., T], *args: object) -> T:
        """Run `work(*args)` on the writer's connection's thread; a cancelled caller waits for it to end."""
        return await anyio.to_thread.run_sync(work, *args, limiter=self._writing)

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self._uri(), uri=True, isolation_level=None)
        try:
            for pragma in self._pragmas():
                await conn.execute(pragma)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await conn.close()  # else its worker thread would keep the process from exiting
            raise
        return conn

    async def _close_connections(self) -> None:
        with anyio.CancelScope(shield=True):
            if self._reader is not None:
                await self._reader.close()
            if self._writer is not None:
                await self._on_writer(self._writer.close)
            self._writer = self._reader = None

    def _reader_conn(self) -> aiosqlite.Connection:
        if self._closed or self._reader is None:
            raise StoreClosed()
        return self._reader

    def _translate(self, exc: Exception) -> Exception:
        if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
            error = StoreFull(str(exc))
            error.__cause__ = exc
            return error
        return super()._translate(exc)

    async def _commit_group(self, group: list[Pending]) -> None:
        """One transaction for the whole group, planned, inserted and committed in one call on the writer's thread
        (`_commit_on_writer`); then the head moves, the subscribers wake and the callers get their outcomes."""
        versions, rows, outcomes = await self._on_writer(self._commit_on_writer, group)
        self._versions = versions
        self._committed_rows(rows)
        settle(group, outcomes)
        await self._bound_wal()

    def _commit_on_writer(self, group: list[Pending]) -> tuple[dict[str, int], list[Row], list[Outcome]]:
        """Plan the group optimistically against the cached versions and head, insert and commit (on the writer's
        thread).

        The fast path trusts the cached head position and stream versions and looks up no
        event ids: if another process appended meanwhile, or an append is a retry of one
        already committed, the insert violates a UNIQUE constraint or the plan shows a
        version conflict, and only then is the group planned again from the database.
        """
        conn = self._writer
        assert conn is not None
        self._fill_versions(conn, {p.stream for p in group})
        versions = dict(self._versions)
        rows, outcomes = plan_group(group, versions, {}, self._db_head)
        try:
            if any(isinstance(o, ConcurrencyConflict) for o in outcomes):
                raise Replan
            conn.execute("BEGIN IMMEDIATE")
            if rows:
                conn.executemany(INSERT, rows)
        except (sqlite3.IntegrityError, Replan):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            versions, rows, outcomes = self._replan(conn, group)
            if rows:
                conn.executemany(INSERT, rows)
        except BaseException:
            self._abandon(conn)
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            self._abandon(conn)
            raise
        return versions, rows, outcomes

    async def _bound_wal(self) -> None:
        """Truncate the WAL once it passes `_wal_limit` (the group is settled: a failure here is no caller's)."""
        try:
            size = os.stat(self._wal).st_size
        except OSError:  # no WAL yet
            return
        if size <= self._wal_limit:
            return
        try:
            busy = await self._on_writer(self._truncate_wal)
            why = "a reader held on" if busy else None
        except (OSError, sqlite3.Error) as exc:
            why = f"it failed: {exc}"
        if why is None:
            self._wal_limit = self.WAL_TRUNCATE_BYTES
            return
        self._wal_limit = size + self.WAL_TRUNCATE_BYTES // 4  # tried again once it has grown this much more
        log.warning("the WAL of %s holds %d MB and could not be truncated (%s); trying again past %d MB", self.path,
                    size >> 20, why, self._wal_limit >> 20)

    def _truncate_wal(self) -> int:
        """Checkpoint and empty the WAL, waiting at most WAL_TRUNCATE_WAIT_MS for readers; non-zero if one held on."""
        conn = self._writer
        assert conn is not None
        conn.execute(f"PRAGMA busy_timeout={WAL_TRUNCATE_WAIT_MS}")
        try:
            return int(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def _replan(self, conn: sqlite3.Connection, group: list[Pending]) -> tuple[
            dict[str, int], list[Row], list[Outcome]]:
        """Plan the group again, inside the write transaction, from what the database holds."""
        self._versions = {}
        self._db_head = _scalar(conn, "SELECT coalesce(max(position), 0) FROM events")
        self._fill_versions(conn, {p.stream for p in group})
        versions = dict(self._versions)
        known = _known_ids(conn, [e.event_id for p in group for e in p.events])
        rows, outcomes = plan_group(group, versions, known, self._db_head)
        return versions, rows, outcomes

    def _abandon(self, conn: sqlite3.Connection) -> None:
        """Roll back and distrust the version cache (a stale head is caught by the constraints)."""
        self._versions = {}
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _fill_versions(self, conn: sqlite3.Connection, streams: set[str]) -> None:
        """Cache the versions of streams not seen yet (a stale cache is caught by the constraints)."""
        missing = sorted(streams - self._versions.keys())
        if missing:
            rows = conn.execute(
                "SELECT stream, max(version) FROM events WHERE stream IN (SELECT value FROM json_each(?))"
                " GROUP BY stream", (json.dumps(missing),))
            self._versions.update({**dict.fromkeys(missing, 0), **{stream: version for stream, version in rows}})

    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order (the first `limit`),
        optionally only those of some types."""
        conn = self._reader_conn()
        params = (stream, after_version, -1 if limit is None else limit,
                  json.dumps(list(types)) if types is not None else None)
        return [Recorded(*row) for row in await conn.execute_fetchall(READ_STREAM, params)]

    async def read_all(
        self,
        after: int = 0,
        limit: int = 1000,
        types: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        until: int | None = None,
    ) -> list[Recorded]:
        """Up to `limit` events after global position `after` (and up to `until`), optionally of some
        types or streams."""
        conn = self._reader_conn()
        params = (
            after,
            json.dumps(list(types)) if types is not None else None,
            json.dumps(list(streams)) if streams is not None else None,
            limit,
            until,
        )
        return [Recorded(*row) for row in await conn.execute_fetchall(READ_ALL, params)]

    async def _read_head(self) -> Position:
        conn = self._reader
        assert conn is not None
        rows = list(await conn.execute_fetchall("SELECT coalesce(max(position), 0) FROM events"))
        return Position(int(rows[0][0]) if rows else 0)

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        conn = self._reader_conn()
        sql = "SELECT stream, max(version), max(position) FROM events GROUP BY stream ORDER BY stream"
        return [(str(s), int(v), int(p)) for s, v, p in await conn.execute_fetchall(sql)]


def read_only_or(exc: OSError, path: Path) -> Exception:
    """`exc` as ours: StoreReadOnly for a read-only file system or a refused write, else the error itself."""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreReadOnly(path, exc.strerror or str(exc))
    return exc


def _writable(path: Path) -> bool:
    """Whether this process may write the file and its folder (a read-only mount says no even to root)."""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def _known_ids(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[int, int]]:
    rows = conn.execute(
        "SELECT event_id, position, version FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),))
    return {event_id: (position, version) for event_id, position, version in rows}


def _scalar(conn: sqlite3.Connection, sql: str) -> int:
    rows = conn.execute(sql).fetchall()
    return int(rows[0][0]) if rows else 0
