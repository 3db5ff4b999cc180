"""Bounded reads of a simulator's own SQLite database: every query has a deadline and runs in its own worker.

A database we did not write can hold anything: a `trace` that is a recursive view never returns, a file
named `.db` may not be SQLite, a simulator may hold a lock. A query here is stopped by an SQLite progress
handler when its deadline passes or its caller is cancelled (so a stopping daemon waits for no query), and
every failure comes back as `Unreadable` with a reason a person can act on, and whether trying again later
can help (`transient`: a lock, a file still being created).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import anyio.lowlevel

from .inputs import Confinement, NotReadable, open_regular

T = TypeVar("T")
DEADLINE_S = 2.0  # one query on a simulator's database; a sound one takes milliseconds
BUSY_S = 0.25  # how long to wait for a simulator's write lock (it commits every action: locks are short)
PROGRESS_STEPS = 1000  # SQLite VM steps between two looks at the deadline
HEADER = b"SQLite format 3\x00"


class Unreadable(Exception):
    """A simulator database we cannot read now (`transient`) or at all, and why."""

    def __init__(self, reason: str, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.transient = reason, transient


class _Guard:
    """An SQLite progress handler: a true result stops the statement (deadline passed, or caller cancelled)."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline = time.monotonic() + deadline_s
        self.cancelled = self.expired = False

    def __call__(self) -> bool:
        if not self.cancelled and time.monotonic() > self.deadline:
            self.expired = True
        return self.cancelled or self.expired


async def query(path: Path, confinement: Confinement, func: Callable[..., T], *args: Any,
                deadline_s: float = DEADLINE_S) -> T:
    """`func(conn, *args)` on a read-only connection to `path`, in a worker thread of its own, within
    `deadline_s`; `Unreadable` with the reason otherwise. A cancelled caller interrupts the query and waits
    the few milliseconds it takes to stop: the thread is never abandoned."""
    guard = _Guard(deadline_s)
    done = False

    async def interrupt_when_cancelled() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            guard.cancelled = not done

    async with anyio.create_task_group() as watch:
        watch.start_soon(interrupt_when_cancelled)
        try:
            result, error = await anyio.to_thread.run_sync(_outcome, path, confinement, guard, func, args,
                                                           limiter=anyio.CapacityLimiter(1))
        finally:
            done = True
            watch.cancel_scope.cancel()
    if error is not None:
        if guard.cancelled:
            await anyio.lowlevel.checkpoint()  # the cancellation that stopped the query, raised here
        raise error  # outside the task group: the caller gets the error itself, not a group of one
    return result  # type: ignore[return-value]


def _outcome(path: Path, confinement: Confinement, guard: _Guard, func: Callable[..., T],
             args: tuple[Any, ...]) -> tuple[T | None, Unreadable | None]:
    try:
        return run(path, confinement, guard, func, *args), None
    except Unreadable as exc:
        return None, exc


def run(path: Path, confinement: Confinement, guard: _Guard, func: Callable[..., T], *args: Any) -> T:
    """The blocking part of `query`: open, run, close, and translate sqlite3's errors at this one boundary."""
    conn = open_database(path, confinement)
    conn.set_progress_handler(guard, PROGRESS_STEPS)
    try:
        return func(conn, *args)
    except sqlite3.OperationalError as exc:
        raise _operational(path, guard, exc) from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
        raise Unreadable(f"{path.name} cannot be read as SQLite ({exc}); not read") from exc
    finally:
        conn.close()


def _operational(path: Path, guard: _Guard, exc: sqlite3.OperationalError) -> Unreadable:
    text = str(exc)
    if guard.expired:
        return Unreadable(f"a query on {path.name} ran past its {DEADLINE_S:g} s deadline (is `trace` a view that"
                          " never ends?); not read")
    if guard.cancelled:
        return Unreadable(f"reading {path.name} was stopped", transient=True)
    if "locked" in text or "busy" in text:
        return Unreadable(f"{path.name} is locked by another process; read again at the next change", transient=True)
    return Unreadable(f"{path.name} has a schema we cannot read ({text}); not read")


def open_database(path: Path, confinement: Confinement) -> sqlite3.Connection:
    """A read-only connection, after checking the path is a regular file inside the folder that starts as an
    SQLite database does (a FIFO would block SQLite; anything else gives a late, vaguer error)."""
    try:
        fd = open_regular(path, confinement)
    except FileNotFoundError as exc:
        raise Unreadable(f"{path.name} is gone", transient=True) from exc
    except NotReadable as exc:
        raise Unreadable(str(exc)) from exc
    except OSError as exc:
        raise Unreadable(f"{path.name} cannot be opened ({exc.strerror or exc}); not read") from exc
    try:
        head = os.read(fd, len(HEADER))
    finally:
        os.close(fd)
    if len(head) < len(HEADER):
        raise Unreadable(f"{path.name} is still being created ({len(head)} bytes)", transient=True)
    if head != HEADER:
        raise Unreadable(f"{path.name} is not an SQLite database (it starts with {head[:8]!r}); not read")
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=BUSY_S, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def signature(path: Path) -> tuple[int, int, int] | None:
    """Inode, size and modification time: a database found unreadable is tried again only once they change."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
