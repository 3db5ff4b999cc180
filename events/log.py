"""What every event store backend shares: one writer task, subscriptions, waits.

`EventLog` implements the `EventStore` contract (contract.py) once: it queues appends, lets one
writer task commit them a group at a time (group_commit.py plans each group), and wakes
subscribers. A backend (SQLite in `store.py`, PostgreSQL in `postgres.py`, memory in `memory.py`)
subclasses it and supplies the abstract hooks: connections, one transaction per group
(`_commit_group`) and the reads. The contract's values are re-exported here, where callers have
always imported them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from contextlib import AsyncExitStack
from typing import Self, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from simreportd.errors import AppendFailed, SimreportdError, StoreClosed, StoreFull, StoreReplaced, WaitTimeout

from .batch import EventBatch
from .codec import Encoded, Recorded, RecordedRow
from .contract import ANY_VERSION, AppendResult, CaughtUp, NewEvent, caused
from .group_commit import Pending, Row, gather_group
from .ids import new_event_id_bytes
from .models import DomainEvent
from .positions import Position

__all__ = ["ANY_VERSION", "AppendResult", "CaughtUp", "EventLog", "NewEvent", "caused", "redacted_url"]

log = logging.getLogger("simreportd.events.log")

MAX_QUEUED_APPENDS = 8192  # appenders beyond this wait (backpressure) instead of growing memory
CLOSE_TIMEOUT = 10.0  # how long close() lets the writer drain before it gives up on the rest
POLL_SECONDS = 0.5  # how often a subscriber looks for appends made by other processes


class EventLog(ABC):
    """The `EventStore` contract implemented once for every backend: appends go through one writer task
    that commits them in groups; a backend subclasses it and implements the abstract methods. Use as an
    async context manager.

    Beyond the contract, the daemon uses `problem` and `replaced` (health), `check_identity` (a store
    deleted or replaced under it) and `appended_elsewhere` (a commit another process reported)."""

    where = "the event store"  # named in messages (a path, a database)
    IDENTITY_EVERY_S = 1.0  # how often an append checks the store is still the one opened (a backend may say 0)

    def __init__(self) -> None:
        self._queue: MemoryObjectSendStream[Pending] | None = None
        self._stack = AsyncExitStack()
        self._writer_stopped = anyio.Event()
        self._closed = False
        self._head = 0  # highest position known committed, by anyone
        self._db_head = 0  # the same, as of our last write transaction (cache)
        self._versions: dict[str, int] = {}  # stream -> version as of our last commit (cache)
        self._committed = anyio.Event()
        # Every position in (`_own_from`, `_own_to`] was committed by this process, and `_types_at` holds the last
        # position it committed each type at: a subscriber to other types, woken by such commits, reads nothing.
        self._own_from = self._own_to = 0
        self._types_at: dict[str, int] = {}
        # Set, and replaced, once a group's appends are settled: their callers wake and find their outcome.
        # One event a group, not one an append: making an anyio event costs a backend lookup.
        self._settled = anyio.Event()
        self.problem: str | None = None  # why appends fail now (a full disk), for health checks
        self.replaced: StoreReplaced | None = None  # set for good once the store is not the one opened
        self._identity: object = None  # what names the store opened (None: the backend cannot tell)
        self._identity_checked = 0.0  # time.monotonic() of the last check

    # --- what a backend provides -------------------------------------------------------------

    @abstractmethod
    async def _open_connections(self) -> None:
        """Connect (and create the schema if needed); errors become ours here (StoreUnusable, ...)."""

    @abstractmethod
    async def _close_connections(self) -> None:
        """Close what `_open_connections` opened, even half of it; called once every user has returned."""

    @abstractmethod
    async def _commit_group(self, group: list[Pending]) -> None:
        """One transaction for the group: plan it with `group_commit.plan_group`, insert the rows, then call
        `_committed_rows` and `group_commit.settle`."""

    @abstractmethod
    async def _read_head(self) -> Position:
        """The highest committed position in the database, by anyone (0 when empty)."""

    async def _current_identity(self) -> object:
        """What names the store now: a file's (device, inode), a server's system identifier; None if it is gone.
        The base class cannot tell: it keeps what `__aenter__` saw."""
        return self._identity

    @abstractmethod
    async def read_all(self, after: int = 0, limit: int = 1000, types: Sequence[str] | None = None,
                       streams: Sequence[str] | None = None, until: int | None = None) -> list[Recorded]:
        """Up to `limit` events after global position `after` (and up to `until`), optionally of some
        types or streams."""

    async def read_rows(self, after: int = 0, limit: int = 1000) -> list[RecordedRow]:
        """`read_all` as plain tuples in `Recorded`'s argument order, the data not parsed: for a fold of every
        event, which needs no object an event. A backend may read them without making any."""
        return [(r.position, r.stream, r.version, r.type, r.schema_version, r.event_id, r.recorded_at, r.raw_data,
                 r.raw_meta) for r in await self.read_all(after, limit)]

    @abstractmethod
    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """The events of one stream after `after_version`, in order (the first `limit` of them), optionally
        only those of some types."""

    async def iter_stream(self, stream: str, after_version: int = 0, batch: int = 1000,
                          types: Sequence[str] | None = None) -> AsyncIterator[Recorded]:
        """The events of one stream in order (optionally of some types), read `batch` at a time: memory
        stays bounded however long the stream is (a simulation's holds one event per action)."""
        while chunk := await self.read_stream(stream, after_version, limit=batch, types=types):
            for recorded in chunk:
                yield recorded
            after_version = chunk[-1].version

    @abstractmethod
    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """(stream, version, last position) for every stream, by stream name: for `simreportd events` and
        status."""

    def _translate(self, exc: Exception) -> Exception:
        """A failed group's error as the callers see it: ours, with the driver's cause kept."""
        if isinstance(exc, SimreportdError):
            return exc
        error = AppendFailed(f"append failed: {exc}")
        error.__cause__ = exc
        return error

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Open both connections and start the writer in a task group this store owns."""
        try:
            await self._open_connections()
            self._head = self._db_head = await self._read_head()
            self._identity = await self._current_identity()
        except BaseException:
            await self._close_connections()
            raise
        send, receive = anyio.create_memory_object_stream[Pending](MAX_QUEUED_APPENDS)
        self._queue = send
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self.close)  # runs before the task group exits (LIFO)
        tasks.start_soon(self._write_loop, receive, name="event-store-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

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

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed()

    async def check_identity(self, every_s: float | None = None) -> None:
        """Raise StoreReplaced if the store is no longer the one opened (deleted, or another file or server in
        its place); from then on every append fails with it. Checked at most every `every_s` seconds
        (default IDENTITY_EVERY_S): the caller is a group commit or a timer."""
        if self.replaced is not None:
            raise self.replaced
        now = time.monotonic()
        if self._identity is None or now - self._identity_checked < (self.IDENTITY_EVERY_S if every_s is None
                                                                      else every_s):
            return
        self._identity_checked = now
        current = await self._current_identity()
        if current == self._identity:
            return
        self.replaced = StoreReplaced(self.where, "was deleted" if current is None else "was replaced")
        self.problem = str(self.replaced)
        log.error("%s", self.problem)
        raise self.replaced

    # --- writing ---------------------------------------------------------------------------

    async def append(
        self,
        stream: str,
        events: Sequence[DomainEvent | Encoded | NewEvent],
        expected_version: int | None = ANY_VERSION,
    ) -> AppendResult:
        """Append `events` to `stream` atomically.

        `expected_version` is the version the caller believes the stream is at (0 = new
        stream, None = any). Re-appending the same event ids writes nothing and returns the
        original positions.
        """
        self._check_open()
        wrapped = _wrapped(events)
        if not wrapped:
            raise ValueError("append needs at least one event")
        pending = Pending(stream, wrapped, expected_version)
        await self._enqueue(pending)
        while pending.outcome is None:
            await self._settled.wait()
        if isinstance(pending.outcome, Exception):
            raise pending.outcome
        assert pending.outcome is not None
        return pending.outcome

    async def _enqueue(self, pending: Pending) -> None:
        """Hand `pending` to the writer; wait only when the queue is full (backpressure)."""
        assert self._queue is not None
        try:
            try:
                self._queue.send_nowait(pending)  # `send` would yield first, a round trip of the loop an append
            except anyio.WouldBlock:
                await self._queue.send(pending)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StoreClosed() from None

    async def _write_loop(self, queue: MemoryObjectReceiveStream[Pending]) -> None:
        """Commit what arrives, a group at a time, until the queue is closed and drained.

        Shielded from the owner's cancellation: a group in flight always ends in COMMIT or
        ROLLBACK, and `close()` decides when the writer stops (after draining).
        """
        with anyio.CancelScope(shield=True) as self._writer_scope:
            try:
                async with queue:
                    async for first in queue:
                        await self._commit_safely(gather_group(first, queue))
            finally:
                self._writer_stopped.set()

    async def _commit_safely(self, group: list[Pending]) -> None:
        """Commit one group; a failed transaction fails every caller in it, not the writer."""
        try:
            await self.check_identity()
            await self._commit_group(group)
            self.problem = None
        except Exception as exc:
            if isinstance(self._translate(exc), StoreFull):  # the callers report it and retry; nothing was written
                self.problem = f"the disk holding {self.where} is full; appends wait until space is freed"
            elif not isinstance(exc, StoreReplaced):  # said once, when it was found
                log.exception("group commit of %d appends failed", len(group))
            for pending in group:
                pending.settle(self._translate(exc))
        settled, self._settled = self._settled, anyio.Event()
        settled.set()

    def _committed_rows(self, rows: list[Row]) -> None:
        """After a commit: remember the head and wake the subscribers."""
        if rows:
            self._committed_to(rows[-1][0])

    def _committed_own(self, first: int, last: int, types: Iterable[str]) -> None:
        """This process committed every position from `first` to `last`, of `types` (call before `_committed_to`)."""
        if first != self._own_to + 1 or self._head != self._own_to:  # a row between them is another's
            self._own_from = first - 1
        self._own_to = last
        for kind in types:
            self._types_at[kind] = last

    def _none_of(self, types: Sequence[str] | None, after: int, head: int) -> bool:
        """Whether no event of `types` is past `after` up to `head`: every one there this process committed,
        none of them of `types`."""
        return types is not None and self._own_from <= after and head == self._own_to \
            and all(self._types_at.get(kind, 0) <= after for kind in types)

    def _committed_to(self, position: int) -> None:
        """After a commit that wrote up to `position`: remember the head and wake the subscribers."""
        self._db_head = position
        self._head = max(self._head, position)
        self._wake_subscribers()

    def _wake_subscribers(self) -> None:
        committed, self._committed = self._committed, anyio.Event()
        committed.set()

    def appended_elsewhere(self, position: Position) -> None:
        """Another process says it committed up to `position`: wake subscribers now, not at their next poll."""
        self._head = max(self._head, position)
        self._wake_subscribers()

    # --- reading -----------------------------------------------------------------------------

    async def last_position(self) -> Position:
        """The highest committed position (0 for an empty store), including other processes' appends."""
        self._check_open()
        stored = await self._read_head()  # read first: a commit during the read moved `_head` past what it saw
        self._head = max(self._head, stored)
        return Position(self._head)

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
        async with contextlib.aclosing(self.subscribe_batches(after, types, streams, page)) as batches:
            async for item in batches:
                if isinstance(item, CaughtUp):
                    yield item
                    continue
                for recorded in item:
                    yield recorded

    async def subscribe_batches(
        self,
        after: int = 0,
        types: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        page: int = 500,
    ) -> AsyncGenerator[list[Recorded] | CaughtUp, None]:
        """`subscribe`, a read at a time: for a consumer that does its work once per batch (a fan-out
        writing each client one message per batch instead of one per event)."""
        position, caught_up, polled = after, False, True
        while True:
            woken = self._committed
            # Woken by a commit, the head is in hand (`_head`, moved before the wake-up): a read of it a wake-up
            # was 8.6% of a fan-out's CPU. Only a poll (another process's appends) reads it from the store.
            head = await self.last_position() if polled else Position(self._head)
            # this process's commits of other types (ingest's, thousands of actions each) are not read for them
            batch = [] if not polled and self._none_of(types, position, head) else \
                await self.read_all(position, page, types, streams)
            full = len(batch) == page
            if batch:
                position = batch[-1].position
                yield batch
            del batch  # else this generator holds its last page of rows until the next commit
            if full:
                continue
            position = max(position, head)
            if not caught_up:
                caught_up = True
                yield CaughtUp(Position(position))
            self._check_open()
            with anyio.move_on_after(POLL_SECONDS) as waited:
                await woken.wait()
            polled = waited.cancelled_caught

    async def wait_for(self, position: Position, timeout: float = 30.0) -> Position:
        """Return the highest position known committed once it is `position` or more; raise WaitTimeout after
        `timeout` seconds. The store is read at each poll (another process's appends) and on the first try,
        unless the caller waits for the commit after the head in hand (the broadcaster and the fold child's
        notifier, at every commit): a wake-up by a commit has the head in hand."""
        polled = position > self._head + 1
        try:
            with anyio.fail_after(timeout):
                while True:
                    self._check_open()  # a closed store sets its wake-up for good: this would never wait again
                    woken = self._committed  # taken before the head is read: a commit during the read wakes it
                    if self._head >= position or (polled and await self.last_position() >= position):
                        return Position(self._head)
                    with anyio.move_on_after(POLL_SECONDS) as waited:
                        await woken.wait()
                    polled = waited.cancelled_caught
        except TimeoutError:
            raise WaitTimeout(f"position {position}", timeout) from None


def redacted_url(url: str) -> str:
    """A database URL without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        credentials, _, host = rest.rpartition("@")
        rest = credentials.split(":")[0] + "@" + host
    return scheme + sep + rest


def _wrapped(events: Sequence[DomainEvent | Encoded | NewEvent]) -> Sequence[NewEvent]:
    """`events` as NewEvents, those without an id given fresh ones: the batch's ids in one call, not NewEvent's
    default of a call an event (each takes the lock and the clock and draws its own random bytes)."""
    if type(events) is EventBatch:  # its ids are made, its meta given: as it is
        return events
    if not any(isinstance(e, NewEvent) for e in events):  # a batch of models: no test an event to wrap it
        return list(map(NewEvent, cast(Sequence[DomainEvent | Encoded], events), new_event_id_bytes(len(events))))
    fresh = iter(new_event_id_bytes(sum(not isinstance(e, NewEvent) for e in events)))
    return [e if isinstance(e, NewEvent) else NewEvent(e, next(fresh)) for e in events]
