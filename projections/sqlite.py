"""The SQLite toolkit of the read models (docs/architecture.md#threads): connections, worker threads,
transactions.

Every reader of the read-model file (the fold runner, the agent's tools, the exporter, the server, the
CLI) opens it through `connect_views` or `reading`, runs blocking work through `in_thread`, which never
abandons a thread and interrupts its queries when the caller is cancelled, and writes in `transaction`.
The fold itself is runner.py's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import anyio

# The writer's page cache: a fold fills it by 100k actions' read models and holds it from then on, so the fold's
# memory is the same at 1M actions as at 100k; 32 MB filled only past 200k, and folded 1M no faster.
WRITER_CACHE_KIB = 16_384
WAL_CHECKPOINT_PAGES = 10_000
SQLITE_HEADER = b"SQLite format 3\x00"
PROGRESS_STEPS = 20_000  # SQLite instructions between checks whether a cancelled caller wants a query stopped

T = TypeVar("T")


class ViewsMissing(sqlite3.OperationalError):
    """The read-model file is not there (deleted, or not made yet): its runner makes it again from the log."""


def connect_views(path: Path, readonly: bool = True) -> sqlite3.Connection:
    """A sqlite3 connection to the read models, usable from worker threads (closed again if it fails);
    ViewsMissing when a read-only one finds no file."""
    if readonly:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.OperationalError:
            if path.exists():
                raise
            raise ViewsMissing(f"the read models {path} are missing; they are being rebuilt from the log") from None
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=10000")  # first: setting WAL waits for another process making the file
        if not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
    except BaseException:
        conn.close()
        raise
    return conn


def probe(path: Path) -> None:
    """Read the file's header and schema through a new connection: raises if it is no longer a database (the
    header is read by hand: a connection may take page 1 from the WAL and never look at the file's)."""
    with path.open("rb") as file:
        if file.read(16) not in (SQLITE_HEADER, b""):
            raise sqlite3.DatabaseError("file is not a database")
    conn = connect_views(path)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()


class _Interruption:
    """Set when a worker thread's caller is cancelled: its `reading()` queries then stop at once."""

    def __init__(self) -> None:
        self.requested = self.finished = False

    def __call__(self) -> bool:  # an SQLite progress handler: a true result aborts the statement
        return self.requested


_INTERRUPTION: ContextVar[_Interruption | None] = ContextVar("simreportd_interruption", default=None)


async def in_thread(func: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None) -> T:
    """Run `func` in a worker thread and wait for it, even when cancelled (docs/architecture.md#threads).

    A cancelled caller never abandons the thread; instead the queries it runs through
    `reading()` are interrupted, so a long scan ends at once and shutdown stays bounded.
    """
    interruption = _Interruption()
    token = _INTERRUPTION.set(interruption)  # the worker thread runs in a copy of this context
    try:
        async with anyio.create_task_group() as watch:  # exits with the cancellation, if there was one
            watch.start_soon(_interrupt_when_cancelled, interruption)
            try:
                result, error = await anyio.to_thread.run_sync(_outcome, func, *args, limiter=limiter)
            finally:
                interruption.finished = True
                watch.cancel_scope.cancel()
    finally:
        _INTERRUPTION.reset(token)
    if error is not None:
        if interruption.requested:
            await anyio.lowlevel.checkpoint()  # the cancellation that interrupted the query, raised here
        raise error  # outside the task group: the caller gets the error itself, not an ExceptionGroup
    return result  # type: ignore[return-value]


def _outcome(func: Callable[..., T], *args: Any) -> tuple[T | None, BaseException | None]:
    try:
        return func(*args), None
    except Exception as exc:
        return None, exc


async def _interrupt_when_cancelled(interruption: _Interruption) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        if not interruption.finished:  # cancelled while the thread still runs: the caller is being stopped
            interruption.requested = True


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the read models for the length of a `with` block (interruptible
    when opened in `in_thread`)."""
    conn = connect_views(path)
    if (interruption := _INTERRUPTION.get()) is not None:
        conn.set_progress_handler(interruption, PROGRESS_STEPS)
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


FLAGS = ("interview_unlocked", "live_environment", "resumable", "tokens_estimated", "forced", "all_rounds_ran")
LISTS = ("problems", "outline", "rejections")  # kept as JSON text in the read models


def typed(row: dict[str, Any]) -> dict[str, Any]:
    """A read-model row as the API and `status --json` show it: flags as booleans, lists and maps as JSON
    values, not text."""
    out = dict(row)
    for key in FLAGS:
        if key in out and out[key] is not None:
            out[key] = bool(out[key])
    for key in LISTS:
        if isinstance(out.get(key), str):
            out[key] = json.loads(out[key] or "null")
    out.pop("deleted", None)
    return out
