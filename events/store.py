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
from itertools import chain
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiosqlite
import anyio

from simreportd.errors import ConcurrencyConflict, StoreClosed, StoreFull, StoreReadOnly, StoreUnusable

from .batch import EventBatch, raw_ids
from .codec import Encoded, Recorded, RecordedRow, encode
from .contract import ANY_VERSION, AppendResult, CaughtUp, NewEvent
from .group_commit import Outcome, Pending, Replan, Row, RowsFor, encode_meta, plan_group, settle, written
from .ids import id_bytes
from .log import POLL_SECONDS, EventLog
from .positions import Position

__all__ = ["ANY_VERSION", "POLL_SECONDS", "AppendResult", "CaughtUp", "NewEvent", "SQLiteEventStore"]

log = logging.getLogger("simreportd.events.store")

T = TypeVar("T")

# The row holds what cannot be derived (docs/architecture.md#the-compact-row): the event's id in 16 bytes, its
# stream as a number (`streams`), its data as written; when it was recorded and its meta live once per batch
# (`batches`: one an append, or a run of one meta within it), the batch an event belongs to being the last that
# starts at or before its position. One unique index on the events, (stream, version); a retried append is
# known by its first event's id, unique among the batches.
SCHEMA_VERSION = 2
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS streams (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS batches (position INTEGER PRIMARY KEY, first_id BLOB NOT NULL UNIQUE,"
    " recorded_at TEXT NOT NULL, meta TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS event_log (position INTEGER PRIMARY KEY, stream INTEGER NOT NULL,"
    " version INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, event_id BLOB NOT NULL,"
    " data TEXT NOT NULL, UNIQUE (stream, version))",
    *(f"CREATE TRIGGER IF NOT EXISTS {table}_refuse_{verb.lower()} BEFORE {verb} ON {table}"
      f" BEGIN SELECT RAISE(ABORT, 'events are append-only: {verb} refused'); END"
      for table in ("event_log", "batches", "streams") for verb in ("UPDATE", "DELETE")),
    # What the rows meant before, for a person or a script with the sqlite3 shell: not read by the store.
    "CREATE VIEW IF NOT EXISTS events AS SELECT e.position,"
    " lower(substr(hex(e.event_id), 1, 8) || '-' || substr(hex(e.event_id), 9, 4) || '-' ||"
    " substr(hex(e.event_id), 13, 4) || '-' || substr(hex(e.event_id), 17, 4) || '-' || substr(hex(e.event_id), 21))"
    " AS event_id, s.name AS stream, e.version, e.type, e.schema_version, b.recorded_at, e.data, b.meta"
    " FROM event_log e JOIN streams s ON s.id = e.stream"
    " JOIN batches b ON b.position = (SELECT max(position) FROM batches WHERE position <= e.position)",
]
# Schema version 1 (no user_version): one `events` table, every fact in every row, ids as text.
MIGRATE_FROM_1 = [
    "ALTER TABLE events RENAME TO events_v1",
    *SCHEMA,
    "INSERT INTO streams (name) SELECT stream FROM events_v1 GROUP BY stream ORDER BY min(position)",
    "INSERT INTO batches (position, first_id, recorded_at, meta) SELECT position, id_bytes(event_id), recorded_at,"
    " meta FROM (SELECT position, event_id, stream, recorded_at, meta, lag(stream) OVER w AS s0,"
    " lag(recorded_at) OVER w AS r0, lag(meta) OVER w AS m0 FROM events_v1 WINDOW w AS (ORDER BY position))"
    " WHERE s0 IS NULL OR s0 != stream OR r0 != recorded_at OR m0 != meta",
    "INSERT INTO event_log (position, stream, version, type, schema_version, event_id, data)"
    " SELECT o.position, s.id, o.version, o.type, o.schema_version, id_bytes(o.event_id), o.data"
    " FROM events_v1 o JOIN streams s ON s.name = o.stream ORDER BY o.position",
    "DROP TABLE events_v1",
]

INSERT_COLUMNS = ("position", "stream", "version", "type", "schema_version", "event_id", "data")
INSERT = ("INSERT INTO event_log (position, stream, version, type, schema_version, event_id, data)"
          " VALUES (?, ?, ?, ?, ?, ?, ?)")
# A group's rows, ROWS_A_STATEMENT to one statement: one step of SQLite's machine for so many rows, not one each,
# cut the insert's CPU by a fifth. The statement is a constant, the same placeholders repeated.
ROWS_A_STATEMENT = 100
INSERT_ROWS = ("INSERT INTO event_log (position, stream, version, type, schema_version, event_id, data) VALUES "
               + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * ROWS_A_STATEMENT))
INSERT_BATCH = "INSERT INTO batches (position, first_id, recorded_at, meta) VALUES (?, ?, ?, ?)"
# The stream as its number: the reader names it from its own map (`_names`).
SELECT_FROM = ("SELECT e.position, e.stream, e.version, e.type, e.schema_version, e.event_id, b.recorded_at, e.data,"
               " b.meta FROM event_log e"
               " JOIN batches b ON b.position = (SELECT max(position) FROM batches WHERE position <= e.position)")
READ_STREAM = (f"{SELECT_FROM} WHERE e.stream = (SELECT id FROM streams WHERE name = ?1) AND e.version > ?2"
               " AND (?4 IS NULL OR e.type IN (SELECT value FROM json_each(?4))) ORDER BY e.version LIMIT ?3")
READ_ALL = (
    f"{SELECT_FROM} WHERE e.position > ?1"
    " AND (?2 IS NULL OR e.type IN (SELECT value FROM json_each(?2)))"
    " AND (?3 IS NULL OR e.stream IN (SELECT id FROM streams WHERE name IN (SELECT value FROM json_each(?3))))"
    " AND e.position <= coalesce(?5, 9223372036854775807)"
    " ORDER BY e.position LIMIT ?4"
)
HEAD = "SELECT coalesce(max(position), 0) FROM event_log"


# A checkpoint copies the WAL into the file and syncs it: every 1,000 pages (SQLite's default) it was a
# seventh of a big ingest. Every 10,000 pages (40 MB of WAL) instead, with a cache of 8 MB (the default is 2):
# 1M actions ingested in 20 s instead of 23 (bench/ingest.py).
CACHE_KIB = 8192
WAL_CHECKPOINT_PAGES = 10_000
# Those checkpoints are passive: a fold reading beside a big ingest keeps them from ever emptying the WAL, which
# grew to 229 MB at 1M actions. Once it holds more than a sixth of the store (`SQLiteEventStore.WAL_SHARE`, and at
# least SQLite's own checkpoint size), the writer truncates it, waiting a little for the readers' short reads to
# end (docs/architecture.md#the-wal-while-the-fold-reads).
WAL_TRUNCATE_WAIT_MS = 250  # not BUSY_TIMEOUT_MS: a reader that holds on must not stall the writer for long
BUSY_TIMEOUT_MS = 10_000


class SQLiteEventStore(EventLog):
    """Append-only event log in one SQLite file; use as an async context manager."""

    IDENTITY_EVERY_S = 0.0  # a stat: cheap enough for every group commit
    WAL_SHARE = 6  # the WAL is truncated past a sixth of the store: the two together stay within 1.2x the store
    WAL_LEAST_BYTES = 1000 * 4096  # SQLite's default checkpoint size: below it a truncation costs more than it saves

    def __init__(self, path: str | Path, synchronous: Literal["NORMAL", "FULL"] = "NORMAL", create: bool = True) -> None:
        super().__init__()
        self.path, self.create = Path(path), create  # without `create`, a missing file is refused, not made
        self.where = str(self.path)
        self.synchronous = synchronous
        self._writer: sqlite3.Connection | None = None  # used by one thread at a time, under `_writing`
        self._writing = anyio.CapacityLimiter(1)
        self._reader: aiosqlite.Connection | None = None
        self._wal = self.path.with_name(self.path.name + "-wal")
        self._wal_limit = self.WAL_LEAST_BYTES
        self._stream_ids: dict[str, int] = {}  # the writer's, as of its open transaction
        self._names: dict[int, str] = {}  # the readers': a stream's number -> its name (streams are never renamed)

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
            ensure_schema(conn, self.path)
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
        versions, head, outcomes = await self._on_writer(self._commit_on_writer, group)
        self._versions = versions
        if head is not None:
            if (wrote := written(group, outcomes)) is not None:
                self._committed_own(wrote[0], head, wrote[1])
            self._committed_to(head)
        settle(group, outcomes)
        await self._bound_wal()

    def _commit_on_writer(self, group: list[Pending]) -> tuple[dict[str, int], int | None, list[Outcome]]:
        """Plan the group optimistically against the cached versions and head, insert and commit (on the writer's
        thread).

        The fast path trusts the cached head position and stream versions and looks up no
        event ids: if another process appended meanwhile, or an append is a retry of one
        already committed, the insert violates a UNIQUE constraint or the plan shows a
        version conflict, and only then is the group planned again from the database.
        """
        conn = self._writer
        assert conn is not None
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                versions, head, outcomes = self._plan(conn, group, {})
                if any(isinstance(o, ConcurrencyConflict) for o in outcomes):
                    raise Replan
            except (sqlite3.IntegrityError, Replan):
                self._abandon(conn)
                conn.execute("BEGIN IMMEDIATE")
                self._db_head = _scalar(conn, HEAD)
                versions, head, outcomes = self._plan(conn, group, _known_ids(conn, group))
            conn.execute("COMMIT")
        except BaseException:
            self._abandon(conn)
            raise
        return versions, head, outcomes

    def _plan(self, conn: sqlite3.Connection, group: list[Pending], known: dict[Any, tuple[int, int]]) -> tuple[
            dict[str, int], int | None, list[Outcome]]:
        """Plan the group and insert its rows and batches, inside the write transaction; the position of its last
        row (None: it wrote none)."""
        self._fill_versions(conn, {p.stream for p in group})
        versions = dict(self._versions)
        batches: list[Row] = []
        columns: list[list[Any]] = []  # the rows of `EventBatch` appends, as statements' values
        rows, outcomes = plan_group(group, versions, known, self._db_head, self._rows_for(batches, columns), id_bytes,
                                     keep_known=False)
        if batches:
            conn.executemany(INSERT_BATCH, batches)
            _insert_rows(conn, rows)
            insert_values(conn, columns)
        written = [o.positions[-1] for o in outcomes if isinstance(o, AppendResult) and not o.duplicate]
        return versions, max(written, default=None), outcomes

    def _rows_for(self, batches: list[Row], columns: list[list[Any]]) -> RowsFor:
        """What makes an append's compact rows, adding the batches they start to `batches`; an `EventBatch`'s go
        to `columns`, as the values of whole statements, column by column (no tuple an event)."""
        ids = self._stream_ids

        def rows_for(pending: Pending, position: int, version: int, recorded_at: str) -> list[Row]:
            stream, meta, events = ids[pending.stream], None, pending.events
            rows: list[Row] = []
            if type(events) is EventBatch:
                batches.append((position + 1, events.ids[0], recorded_at, encode_meta(events.meta)))
                columns.extend(batch_values(events, position, stream, version))
                return rows
            for new in events:
                event, event_id = new.event, new.raw_id
                if type(event_id) is not bytes:
                    event_id = id_bytes(event_id)
                position, version = position + 1, version + 1
                if meta is None or (new.meta is not meta and new.meta != meta):  # an append starts a batch
                    meta = new.meta
                    batches.append((position, event_id, recorded_at, encode_meta(meta)))
                if type(event) is Encoded:
                    rows.append((position, stream, version, event.type_name, event.SCHEMA_VERSION, event_id,
                                 event.data))
                else:  # a model: its type's name and version as class attributes, not a property call each
                    kind = type(event)
                    rows.append((position, stream, version, kind.__name__, kind.SCHEMA_VERSION, event_id,
                                 encode(event)))
            return rows

        return rows_for

    async def _bound_wal(self) -> None:
        """Truncate the WAL once it passes `_wal_limit` and a sixth of the store (the group is settled: a failure
        here is no caller's)."""
        try:
            size = os.stat(self._wal).st_size
            if size <= self._wal_limit or size <= os.stat(self.path).st_size // self.WAL_SHARE:
                return
        except OSError:  # no WAL yet, or the store is gone (the next group says so)
            return
        try:
            busy = await self._on_writer(self._truncate_wal)
            why = "a reader held on" if busy else None
        except (OSError, sqlite3.Error) as exc:
            why = f"it failed: {exc}"
        if why is None:
            self._wal_limit = self.WAL_LEAST_BYTES
            return
        self._wal_limit = size + max(self.WAL_LEAST_BYTES, size // 4)  # tried again once it has grown this much more
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

    def _abandon(self, conn: sqlite3.Connection) -> None:
        """Roll back and distrust the caches of versions and stream numbers (a stale head is caught by the
        constraints)."""
        self._versions, self._stream_ids = {}, {}
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _fill_versions(self, conn: sqlite3.Connection, streams: set[str]) -> None:
        """Number the streams not numbered yet (a new one gets its number in this transaction) and cache the
        versions of those not seen yet (a stale cache is caught by the constraints)."""
        for stream in streams - self._stream_ids.keys():
            found = conn.execute("SELECT id FROM streams WHERE name = ?", (stream,)).fetchone() or \
                conn.execute("INSERT INTO streams (name) VALUES (?) RETURNING id", (stream,)).fetchone()
            self._stream_ids[stream] = int(found[0])
        for stream in streams - self._versions.keys():
            self._versions[stream] = _scalar(conn, "SELECT coalesce(max(version), 0) FROM event_log WHERE stream = ?",
                                             self._stream_ids[stream])

    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order (the first `limit`),
        optionally only those of some types."""
        conn = self._reader_conn()
        params = (stream, after_version, -1 if limit is None else limit,
                  json.dumps(list(types)) if types is not None else None)
        return [Recorded(p, stream, v, t, sv, i, at, d, m)
                for p, _, v, t, sv, i, at, d, m in await conn.execute_fetchall(READ_STREAM, params)]

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
        rows = await conn.execute_fetchall(READ_ALL, params)
        names = await self._stream_names({row[1] for row in rows})
        return [Recorded(p, names[s], v, t, sv, i, at, d, m) for p, s, v, t, sv, i, at, d, m in rows]

    async def read_rows(self, after: int = 0, limit: int = 1000) -> list[RecordedRow]:
        """Up to `limit` events after `after` as the rows SQLite gives, the stream named: no object an event."""
        rows = await self._reader_conn().execute_fetchall(READ_ALL, (after, None, None, limit, None))
        names = await self._stream_names({row[1] for row in rows})
        return [(p, names[s], v, t, sv, i, at, d, m) for p, s, v, t, sv, i, at, d, m in rows]

    async def _stream_names(self, numbers: set[int]) -> dict[int, str]:
        """The readers' map of stream numbers to names, read again when it lacks one of `numbers` (a new stream)."""
        if not numbers <= self._names.keys():
            rows = await self._reader_conn().execute_fetchall("SELECT id, name FROM streams")
            self._names = {int(n): str(name) for n, name in rows}
        return self._names

    async def _read_head(self) -> Position:
        conn = self._reader
        assert conn is not None
        rows = list(await conn.execute_fetchall(HEAD))
        return Position(int(rows[0][0]) if rows else 0)

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        conn = self._reader_conn()
        sql = ("SELECT s.name, max(e.version), max(e.position) FROM event_log e JOIN streams s ON s.id = e.stream"
               " GROUP BY e.stream ORDER BY s.name")
        return [(str(s), int(v), int(p)) for s, v, p in await conn.execute_fetchall(sql)]


def read_only_or(exc: OSError, path: Path) -> Exception:
    """`exc` as ours: StoreReadOnly for a read-only file system or a refused write, else the error itself."""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreReadOnly(path, exc.strerror or str(exc))
    return exc


def _writable(path: Path) -> bool:
    """Whether this process may write the file and its folder (a read-only mount says no even to root)."""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def _insert_rows(conn: sqlite3.Connection, rows: list[Row]) -> None:
    """Insert planned rows, ROWS_A_STATEMENT at a time while they last, then the rest one a statement."""
    whole = len(rows) - len(rows) % ROWS_A_STATEMENT
    if whole:
        values, width = list(chain.from_iterable(rows[:whole])), ROWS_A_STATEMENT * len(rows[0])
        conn.executemany(INSERT_ROWS, [values[i:i + width] for i in range(0, len(values), width)])
    if whole < len(rows):
        conn.executemany(INSERT, rows[whole:])


def batch_values(batch: EventBatch, position: int, stream: int, version: int) -> list[list[Any]]:
    """The values of a batch's rows, after `position` and `version`, ROWS_A_STATEMENT rows a list and the rest a
    row a list: every column written at once by a slice of one list."""
    count, width = len(batch), len(INSERT_COLUMNS)
    values: list[Any] = [None] * (count * width)
    values[0::width] = range(position + 1, position + count + 1)
    values[1::width] = [stream] * count
    values[2::width] = range(version + 1, version + count + 1)
    values[3::width], values[4::width], values[5::width], values[6::width] = (batch.types, batch.versions, batch.ids,
                                                                             batch.datas)
    whole, statement = count - count % ROWS_A_STATEMENT, ROWS_A_STATEMENT * width
    return [values[i:i + statement] for i in range(0, whole * width, statement)] + \
        [values[i:i + width] for i in range(whole * width, count * width, width)]


def insert_values(conn: sqlite3.Connection, columns: list[list[Any]]) -> None:
    """Insert `batch_values`' lists: those of a whole statement's rows by INSERT_ROWS, the rest by INSERT."""
    statement = ROWS_A_STATEMENT * len(INSERT_COLUMNS)
    conn.executemany(INSERT_ROWS, (values for values in columns if len(values) == statement))
    conn.executemany(INSERT, (values for values in columns if len(values) != statement))


def _known_ids(conn: sqlite3.Connection, group: list[Pending]) -> dict[Any, tuple[int, int]]:
    """The group's event ids already stored, with their (position, version): a retried append is found by its
    first event's id among the batches, then its events' ids are compared one by one."""
    known: dict[Any, tuple[int, int]] = {}
    for pending in group:
        given = raw_ids(pending.events)
        ids = {id_bytes(i) for i in given}
        found = conn.execute("SELECT position FROM batches WHERE first_id = ?", (id_bytes(given[0]),)).fetchone()
        if found is not None:
            rows = conn.execute("SELECT event_id, position, version FROM event_log WHERE position >= ?1"
                                " AND position < ?1 + ?2", (found[0], len(pending.events)))
            known.update((event_id, (position, version)) for event_id, position, version in rows if event_id in ids)
    return known


def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Make the schema, or bring an older store's to this one in place, once: the first process to open it does,
    inside a write transaction (another may be trying at the same moment)."""
    if _scalar(conn, "PRAGMA user_version") == SCHEMA_VERSION:
        return
    conn.create_function("id_bytes", 1, id_bytes, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _scalar(conn, "PRAGMA user_version")
        if found > SCHEMA_VERSION:
            raise StoreUnusable(path, f"it was written by a newer simreportd (schema {found}, this one reads "
                                      f"{SCHEMA_VERSION})", "Run the newer simreportd, or point this one at another store")
        if found < SCHEMA_VERSION:
            old = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").fetchone()
            if old:
                log.info("bringing the event store %s to schema %d (once)", path, SCHEMA_VERSION)
            for sql in MIGRATE_FROM_1 if old else SCHEMA:
                conn.execute(sql)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _scalar(conn: sqlite3.Connection, sql: str, *params: object) -> int:
    rows = conn.execute(sql, params).fetchall()
    return int(rows[0][0]) if rows else 0
