"""Fold the event log into the read-model database, checkpoint and rows in one transaction.

Read models live in their own SQLite file beside the event store, so projecting never
competes with appends for the event store's write lock, and `rebuild` can drop them
all without touching the log. A batch of events is folded in one worker-thread call on
a plain sqlite3 connection: one thread hop per batch instead of one per row. The connections,
threads and transactions it uses are sqlite.py's, shared with every reader of the file.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio

from simreportd.errors import StoreClosed, WaitTimeout
from simreportd.events import EventStore
from simreportd.events.codec import Recorded, RecordedRow
from simreportd.events.positions import Position

from . import bookkeeping
from .bookkeeping import (
    META_SCHEMA,
    NAME,
    create_deferred_indexes,
    digest,
    read_checkpoint,
    reset,
    stored_fingerprint,
    update_indexes,
)
from .derived import FileIdentity, damaged, identity, set_aside
from .projection import Projection, Run, Write, row_runs, runs_of
from .sqlite import connect_views, in_thread, probe

log = logging.getLogger("simreportd.projections.runner")

# Folding a big log is bound by the pages each commit dirties in the indexes, and by the checkpoints that
# copy them into the file: fewer, larger batches, a cache that holds the hot index pages and a checkpoint
# every 10,000 pages folded 1M actions in 36 s instead of 54 (2,000 a batch, SQLite's defaults).
PAGE = 5000
GROUP_PAGES = 4  # pages a transaction folds while the fold is behind (memory stays that of one page)
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 30.0  # backoff of a fold that cannot write
FILE_CHECK_S = 1.0  # how often an idle fold checks its file is still there and still a database
THREADS_PER_DATABASE = 4  # worker threads that may use the read-model file at once
T = TypeVar("T")
def views_path_for(store_path: Path) -> Path:
    """The read-model database that belongs to an event store file."""
    return store_path.with_name(store_path.stem + "-views.sqlite3")


class ProjectionRunner:
    """Keeps every projection's tables caught up with the log; an async context manager.

    It owns the read-model database: its write connection, and the `limiter` that every
    reader of that file (tools, exporter, HTTP) runs its worker threads under. A cancelled
    caller waits for its thread to return (docs/architecture.md#threads), so the connection is never
    closed under a thread that still uses it.
    """

    def __init__(self, store: EventStore, path: Path, projections: Sequence[Projection]) -> None:
        self.store, self.path, self.projections = store, path, list(projections)
        self._conn: sqlite3.Connection | None = None
        self._lock = anyio.Lock()
        self._position = Position(0)
        self._moved = anyio.Event()
        self.limiter = anyio.CapacityLimiter(THREADS_PER_DATABASE)
        self._problem: str | None = None
        self._identity: FileIdentity = None  # the file this runner has open
        self._stale: list[sqlite3.Connection] = []  # to files deleted or replaced under us (see _replace_file)
        # Called after each committed batch (the file export hangs here; `listen`): failures are logged, not fatal.
        self._listeners: list[Callable[[list[Recorded]], Awaitable[None]]] = []
        self.listened_types: set[str] | None = set()  # the types the listeners look at (None: every type)
        self._rebuilds = 0  # a reading of the checkpoint taken before a rebuild is stale after it
        self._made_because: str | None = None  # why opening made the read models anew (`created`, `changed`)
        # Where the projections' memory of their own folds ends (what `apply_batch` keeps, as the simulation
        # model's authors); a fold from any other checkpoint makes them `forget` it first. -1: held by no file.
        self._memory_at = Position(-1)
        self.fingerprint = hashlib.sha256("\n".join(p.schema for p in self.projections).encode()).hexdigest()

    async def __aenter__(self) -> ProjectionRunner:
        self._conn = await self.in_thread(self._open)
        if self._made_because and await self.store.last_position() > self._position:  # said only when it builds
            log.info("read models %s (%s); building them from the log", self._made_because, self.path)
        return self

    async def in_thread(self, func: Callable[..., T], *args: Any) -> T:
        """Run blocking work on the read-model file in a worker thread, under this database's limiter."""
        return await in_thread(func, *args, limiter=self.limiter)

    def _open(self) -> sqlite3.Connection:
        """Open the file, or make it; one that cannot be used is moved aside and made again (a fold of the log)."""
        try:
            return self._open_file()
        except sqlite3.DatabaseError as exc:
            if not damaged(exc):
                raise
            self._close()
            aside = set_aside(self.path, str(exc), "the read models")
            self.problem = (f"the read models {self.path} could not be used ({exc}); moved aside to "
                            f"{aside.name if aside else '(nothing)'}, rebuilding them from the log")
            return self._open_file()

    def _open_file(self) -> sqlite3.Connection:
        conn = connect_views(self.path, readonly=False)
        self._conn = conn
        conn.executescript(META_SCHEMA)
        self._identity = identity(self.path)  # a file deleted or replaced from now on is found by `check_file`
        stored = stored_fingerprint(conn)
        if stored in bookkeeping.INDEX_ONLY_UPGRADES:
            log.info("read models' indexes changed; making today's (their rows stay)")
            update_indexes(conn, self.projections, self.fingerprint)
        elif stored != self.fingerprint:
            self._made_because = "created" if stored is None else "changed"
            self._reset()
        self._position = self._read_checkpoint()
        return conn

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):  # the batch in flight commits or rolls back first
            async with self._lock:
                for conn in self._stale:  # first: see _replace_file
                    conn.close()
                self._stale.clear()
                self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def check_file(self) -> None:
        """Make the file again if it was deleted, replaced or damaged under us (found by a stat, and a fresh
        connection's first read): readers would fail until a restart, and folds would go to a file no one reads."""
        if identity(self.path) != self._identity:
            await self._heal("it was deleted or replaced", set_aside_first=False)
        else:
            try:
                await self.in_thread(probe, self.path)
                return await self._take_reset()
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                await self._heal(str(exc))
        await self.catch_up()  # here too: the folding process may not see that this one made the file anew

    async def _take_reset(self) -> None:
        """Another process made the file anew (a heal, a rebuild): fold again from where it is."""
        async with self._lock:
            stored = await self.in_thread(self._read_checkpoint)
            if stored < self._position:
                self._position, self._rebuilds = stored, self._rebuilds + 1

    async def _heal(self, reason: str, set_aside_first: bool = True) -> None:
        """Set the damaged file aside (unless another process did already) and fold the log into a new one."""
        async with self._lock:
            await self.in_thread(self._replace_file, reason, set_aside_first)
        self._wake_waiters()

    def _replace_file(self, reason: str, set_aside_first: bool) -> None:
        """Open a new file in place of ours. Ours stays open until this runner closes: SQLite deletes a WAL by
        its name when the last connection to its database closes, and the name is now the new file's."""
        if self._conn is not None:
            self._stale.append(self._conn)
            self._conn = None
        now = identity(self.path)
        if now is None or (set_aside_first and now == self._identity):
            set_aside(self.path, reason, "the read models")
        else:
            log.warning("the read models %s: %s; making them again from the log", self.path, reason)
        self.problem = f"the read models {self.path} were unusable ({reason}); rebuilding them from the log"
        self._conn = self._open()
        self._rebuilds += 1

    @property
    def problem(self) -> str | None:
        """Why the read models are degraded now (a full disk, a rebuild), for health checks; None when fine. A file
        deleted or replaced under us says so at once, before the fold's next check makes it again."""
        if self._problem is None and self._conn is not None and identity(self.path) != self._identity:
            return f"the read models {self.path} were deleted or replaced; rebuilding them from the log"
        return self._problem

    @problem.setter
    def problem(self, value: str | None) -> None:
        self._problem = value

    @property
    def position(self) -> Position:
        """The last event position folded into the read models."""
        return self._position

    def listen(self, listener: Callable[[list[Recorded]], Awaitable[None]], types: Iterable[str] | None) -> None:
        """Call `listener` with the events of `types` (None: all) after each batch is folded."""
        self._listeners.append(listener)
        self.listened_types = None if types is None or self.listened_types is None \
            else self.listened_types | set(types)

    async def rebuild(self) -> Position:
        """Drop every read model, fold the whole log again; return the position reached."""
        async with self._lock:
            await self.in_thread(self._reset)
            self._position, self._rebuilds = Position(0), self._rebuilds + 1
        return await self.catch_up()

    async def catch_up(self) -> Position:
        """Fold everything committed so far; return the position reached."""
        while batch := await self.store.read_rows(self._position, PAGE):
            async with self._lock:
                if batch[0][0] <= self._position:  # another caller folded it meanwhile
                    continue
                listened = await self._fold_pages(batch)
            self._wake_waiters()
            if listened:
                await self._notify(listened)
        return self._position

    async def _fold_pages(self, batch: list[RecordedRow]) -> list[Recorded]:
        """Fold `batch` and, while whole pages keep coming (the fold is behind), more of them up to
        GROUP_PAGES in one transaction; return their events of the types the listeners look at.

        A commit writes every page it dirtied once: the per-agent indexes are dirtied all over by any
        page of events, so four pages a commit write far fewer pages than four commits would.
        """
        listened: list[Recorded] = []
        await self.in_thread(self._require().execute, "BEGIN IMMEDIATE")
        try:
            for _ in range(GROUP_PAGES):
                reached = await self.in_thread(self._fold_page, batch)
                listened += self._listened(batch)
                if reached < batch[-1][0]:  # rebuilt by another process
                    break
                if len(batch) < PAGE or not (batch := await self.store.read_rows(reached, PAGE)):
                    # caught up: the queries come next
                    await self.in_thread(create_deferred_indexes, self._require(), self.projections)
                    break
            await self.in_thread(self._require().execute, "COMMIT")
        except BaseException:
            with anyio.CancelScope(shield=True):  # the thread is done with the connection: undo the pages
                await self.in_thread(self._roll_back)
            raise
        self._position = reached
        return listened

    def _listened(self, batch: list[RecordedRow]) -> list[Recorded]:
        """The events of `batch` the listeners look at, made `Recorded` (none, in a fold child: no row looked at)."""
        types = self.listened_types
        if types is None:
            return [Recorded(*r) for r in batch]
        return [Recorded(*r) for r in batch if r[3] in types] if types else []

    async def take_folded(self) -> None:
        """Take in what another process folded (a fold child): move to the stored checkpoint, handing the
        listeners the events it covered and waking the waiters, as if this runner had folded them."""
        if identity(self.path) not in (self._identity, None):  # made anew by the child: open it (never make it
            await self.check_file()  # here too, racing the child)
        async with self._lock:
            rebuilds, stored = self._rebuilds, await self.in_thread(self._read_checkpoint)
        types = None if self.listened_types is None else sorted(self.listened_types)
        while self._position < stored and rebuilds == self._rebuilds:
            after = self._position
            batch = await self.store.read_all(after, PAGE, types, until=stored) if types != [] else []
            reached = batch[-1].position if len(batch) == PAGE else stored
            if rebuilds != self._rebuilds or self._position != after:
                return  # rebuilt, or folded here meanwhile: the next call starts from where that left it
            self._position = reached
            self._wake_waiters()
            if batch:
                await self._notify(batch)

    def _wake_waiters(self) -> None:
        moved, self._moved = self._moved, anyio.Event()
        moved.set()

    async def run(self) -> None:
        """Fold forever, woken by each commit (or a poll for other processes' appends), checking the file
        while idle (`check_file`).

        A read-model file that cannot be written (disk full, I/O error) stalls folding, never
        the daemon: the log keeps every event, and folding resumes with backoff once it can.
        One that is damaged is made again from the log.
        """
        backoff, check = RETRY_FIRST_S, False
        while True:
            try:
                await self._fold_or_heal(check)
                self.problem, backoff = None, RETRY_FIRST_S
            except sqlite3.OperationalError as exc:
                self.problem = f"the read models {self.path} cannot be written ({exc}); retrying every {backoff:g}s"
                log.error("%s", self.problem)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            try:
                await self.store.wait_for(Position(self._position + 1), timeout=FILE_CHECK_S)
                check = False
            except WaitTimeout:
                check = True  # idle: look at the file too
            except StoreClosed:
                return

    async def _fold_or_heal(self, check: bool = False) -> None:
        """Catch up (after `check_file`, with `check`); a damaged file is set aside and folded anew."""
        try:
            if check:
                await self.check_file()
            await self.catch_up()
        except sqlite3.DatabaseError as exc:
            if not damaged(exc):
                raise
            await self._heal(str(exc))
            await self.catch_up()

    async def _notify(self, batch: list[Recorded]) -> None:
        for listener in self._listeners:
            try:
                await listener(batch)
            except Exception:
                log.exception("a read-model listener failed on events %d..%d", batch[0].position, batch[-1].position)

    async def wait_for(self, position: Position, timeout: float = 30.0) -> None:
        """Return once the read models include `position`."""
        try:
            with anyio.fail_after(timeout):
                while self._position < position:
                    await self._moved.wait()
        except TimeoutError:
            raise WaitTimeout(f"read models to reach position {position}", timeout) from None

    async def digest(self) -> dict[str, str]:
        """A SHA-256 of every read model's rows, so two builds can be compared."""
        return (await self.digest_at())[0]

    async def digest_at(self) -> tuple[dict[str, str], Position]:
        """`digest`, and the log position the read models had reached: two digests say something only of
        the same position (a simulation being ingested moves it)."""
        async with self._lock:
            return await self.in_thread(digest, self._require(), self.projections)

    def _roll_back(self) -> None:
        conn = self._require()
        if conn.in_transaction:  # SQLite itself ends some failed transactions (a full disk)
            conn.execute("ROLLBACK")

    def _fold_page(self, batch: list[RecordedRow]) -> Position:
        """Fold one page inside the open transaction, rows and checkpoint together; return the position
        the read models reach with it (below this runner's if another process rebuilt them)."""
        conn = self._require()
        conn.execute("SAVEPOINT page")
        try:
            done = self._fold_batch(conn, batch, guarded=False)
        except sqlite3.OperationalError:
            raise  # locked, disk full, read-only: the store's trouble, not one event's
        except Exception:  # noqa: BLE001 (a poison event: fold the page again, each event on its own)
            conn.execute("ROLLBACK TO page")
            self._forget()  # memory holds what was rolled back, and the guarded fold does not keep it
            done = self._fold_batch(conn, batch, guarded=True)
        conn.execute("RELEASE page")
        return done if done < self._position else Position(max(done, batch[-1][0]))

    def _fold_batch(self, conn: sqlite3.Connection, batch: list[RecordedRow], guarded: bool) -> Position:
        """Fold the events past the checkpoint; return the checkpoint found."""
        done = self._read_checkpoint()  # another process may have folded some: never twice
        if done < self._position:  # another process rebuilt the read models: fold again from there
            return done
        if done != self._memory_at:
            self._forget()
        for projection in self.projections:
            events = [r for r in batch if r[0] > done and r[3] in projection.types]
            if guarded:
                for row in events:
                    self._fold_guarded(conn, projection, Recorded(*row))
            else:
                _execute_runs(conn, row_runs(projection, events))
        conn.execute(
            "INSERT INTO projection_checkpoint (name, position) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)",
            (NAME, batch[-1][0]),
        )
        self._memory_at = Position(-1) if guarded else Position(max(done, batch[-1][0]))
        return done

    def _forget(self) -> None:
        """Let the projections drop what they hold in memory of their own folds (the file holds others now)."""
        for projection in self.projections:
            if (forget := getattr(projection, "forget", None)) is not None:
                forget()
        self._memory_at = Position(-1)

    @staticmethod
    def _fold(conn: sqlite3.Connection, projection: Projection, recorded: Recorded) -> None:
        _execute(conn, projection.apply(recorded))

    def _fold_guarded(self, conn: sqlite3.Connection, projection: Projection, recorded: Recorded) -> None:
        """Fold one event in a savepoint: if it fails, undo only it and leave a marker (docs/architecture.md#untrusted-input)."""
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
        reset(self._require(), self.projections, self.fingerprint)

    def _read_checkpoint(self) -> Position:
        return read_checkpoint(self._require())

    def _require(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("ProjectionRunner is not open; use `async with`")
        return self._conn


def _execute(conn: sqlite3.Connection, writes: Iterable[Write]) -> None:
    """Perform writes in order, runs of the same statement in one `executemany`."""
    _execute_runs(conn, runs_of(writes))


def _execute_runs(conn: sqlite3.Connection, runs: Iterable[Run]) -> None:
    """Perform runs of writes in order, each in one `executemany`."""
    for sql, params in runs:
        conn.executemany(sql, params)
