"""Fold the event log into the read-model database, checkpoint and rows in one transaction.

Read models live in their own SQLite file beside the event store, so projecting never
competes with appends for the event store's write lock, and `rebuild` can drop them
all without touching the log. A batch of events is folded in one worker-thread call on
a plain sqlite3 connection: one thread hop per batch instead of one per row.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from simreportd.events.codec import Recorded
from simreportd.events.errors import StoreClosed, WaitTimeout
from simreportd.events.store import EventStore

from .base import Projection

log = logging.getLogger("simreportd.projections.runner")

PAGE = 2000
META_SCHEMA = """
CREATE TABLE IF NOT EXISTS projection_checkpoint (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS projection_schema (name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projection_failures (projection TEXT NOT NULL, position INTEGER NOT NULL,
    type TEXT NOT NULL, error TEXT NOT NULL, PRIMARY KEY (projection, position));
"""


def views_path_for(store_path: Path) -> Path:
    """The read-model database that belongs to an event store file."""
    return store_path.with_name(store_path.stem + "-views.sqlite3")


class ProjectionRunner:
    """Keeps every projection's tables caught up with the log; an async context manager."""

    NAME = "views"

    def __init__(self, store: EventStore, path: Path, projections: Sequence[Projection]) -> None:
        self.store, self.path, self.projections = store, path, list(projections)
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._position = 0
        self._moved = asyncio.Event()
        # Called after each committed batch (the file export hangs here): failures are logged, not fatal.
        self.listeners: list[Callable[[list[Recorded]], Awaitable[None]]] = []
        self.fingerprint = hashlib.sha256("\n".join(p.schema for p in self.projections).encode()).hexdigest()

    async def __aenter__(self) -> ProjectionRunner:
        self._conn = await asyncio.to_thread(self._open)
        return self

    def _open(self) -> sqlite3.Connection:
        conn = connect_views(self.path, readonly=False)
        conn.executescript(META_SCHEMA)
        self._conn = conn
        stored = self._stored_fingerprint()
        if stored != self.fingerprint:
            log.info("read models %s; building them from the log", "created" if stored is None else "changed")
            self._reset()
        self._position = self._read_checkpoint()
        return conn

    async def __aexit__(self, *exc: object) -> None:
        async with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def position(self) -> int:
        """The last event position folded into the read models."""
        return self._position

    async def rebuild(self) -> int:
        """Drop every read model, fold the whole log again; return the position reached."""
        async with self._lock:
            await asyncio.to_thread(self._reset)
            self._position = 0
        return await self.catch_up()

    async def catch_up(self) -> int:
        """Fold everything committed so far; return the position reached."""
        while batch := await self.store.read_all(self._position, PAGE):
            async with self._lock:
                if batch[0].position <= self._position:  # another caller folded it meanwhile
                    continue
                await asyncio.to_thread(self._apply_batch, batch)
            moved, self._moved = self._moved, asyncio.Event()
            moved.set()
            await self._notify(batch)
        return self._position

    async def run(self) -> None:
        """Fold forever, woken by each commit (or a poll for other processes' appends)."""
        while True:
            await self.catch_up()
            try:
                await self.store.wait_for(self._position + 1, timeout=3600)
            except WaitTimeout:
                continue
            except StoreClosed:
                return

    async def _notify(self, batch: list[Recorded]) -> None:
        for listener in self.listeners:
            try:
                await listener(batch)
            except Exception:
                log.exception("a read-model listener failed on events %d..%d", batch[0].position, batch[-1].position)

    async def wait_for(self, position: int, timeout: float = 30.0) -> None:
        """Return once the read models include `position`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._position < position:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise WaitTimeout(f"read models to reach position {position}", timeout)
            moved = self._moved
            try:
                await asyncio.wait_for(moved.wait(), remaining)
            except TimeoutError:
                pass

    async def digest(self) -> dict[str, str]:
        """A SHA-256 of every read model's rows, so two builds can be compared."""
        async with self._lock:
            return await asyncio.to_thread(self._digest)

    def _digest(self) -> dict[str, str]:
        conn = self._require()
        digests = {}
        for projection in self.projections:
            h = hashlib.sha256()
            for table in projection.tables:
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                order = ", ".join(columns)
                for row in conn.execute(f"SELECT {order} FROM {table} ORDER BY {order}"):  # noqa: S608 (names are ours)
                    h.update(repr(row).encode())
            digests[projection.name] = h.hexdigest()
        return digests

    def _apply_batch(self, batch: list[Recorded]) -> None:
        try:
            self._fold_batch(batch, guarded=False)
        except sqlite3.OperationalError:
            raise  # locked, disk full, read-only: the store's trouble, not one event's
        except Exception:  # noqa: BLE001 (a poison event: fold the batch again, each event on its own)
            self._fold_batch(batch, guarded=True)
        self._position = batch[-1].position

    def _fold_batch(self, batch: list[Recorded], guarded: bool) -> None:
        conn = self._require()
        with transaction(conn):  # rows and checkpoint together
            for recorded in batch:
                for projection in self.projections:
                    if recorded.type in projection.types:
                        (self._fold_guarded if guarded else self._fold)(conn, projection, recorded)
            conn.execute(
                "INSERT INTO projection_checkpoint (name, position) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET position = excluded.position",
                (self.NAME, batch[-1].position),
            )

    @staticmethod
    def _fold(conn: sqlite3.Connection, projection: Projection, recorded: Recorded) -> None:
        for sql, params in projection.apply(recorded):
            conn.execute(sql, params)

    def _fold_guarded(self, conn: sqlite3.Connection, projection: Projection, recorded: Recorded) -> None:
        """Fold one event in a savepoint: if it fails, undo only it and leave a failure marker (issue 12)."""
        conn.execute("SAVEPOINT fold")
        try:
            self._fold(conn, projection, recorded)
        except sqlite3.OperationalError:
            raise
        except Exception as exc:  # noqa: BLE001 (skipping the event's effect keeps every later start alive)
            conn.execute("ROLLBACK TO fold")
            log.error("projection %s skipped event %d (%s): %s", projection.name, recorded.position,
                      recorded.type, exc, exc_info=True)
            conn.execute("INSERT OR REPLACE INTO projection_failures (projection, position, type, error)"
                         " VALUES (?, ?, ?, ?)", (projection.name, recorded.position, recorded.type,
                                                  f"{type(exc).__name__}: {exc}"[:500]))
        conn.execute("RELEASE fold")

    def _reset(self) -> None:
        conn = self._require()
        with transaction(conn):
            for projection in self.projections:
                for table in projection.tables + projection.extra_tables:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 (names are ours)
            conn.execute("DELETE FROM projection_checkpoint")
            conn.execute("DELETE FROM projection_schema")
            conn.execute("DELETE FROM projection_failures")
        for projection in self.projections:
            conn.executescript(projection.schema)
        with transaction(conn):
            conn.execute(
                "INSERT INTO projection_schema (name, fingerprint) VALUES (?, ?)", (self.NAME, self.fingerprint)
            )

    def _stored_fingerprint(self) -> str | None:
        row = self._require().execute(
            "SELECT fingerprint FROM projection_schema WHERE name = ?", (self.NAME,)
        ).fetchone()
        return row[0] if row else None

    def _read_checkpoint(self) -> int:
        row = self._require().execute(
            "SELECT position FROM projection_checkpoint WHERE name = ?", (self.NAME,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _require(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("ProjectionRunner is not open; use `async with`")
        return self._conn

def connect_views(path: Path, readonly: bool = True) -> sqlite3.Connection:
    """A sqlite3 connection to the read models, usable from worker threads."""
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the read models for the length of a `with` block."""
    conn = connect_views(path)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT on an autocommit connection; ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def rows_as_dicts(cur: sqlite3.Cursor) -> list[dict[str, Any]]:
    """Fetch a cursor's rows as dicts (column name -> value)."""
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]
