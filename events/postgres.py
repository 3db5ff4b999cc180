"""The PostgreSQL event store (docs/architecture.md#scale-out-on-postgresql): one log shared by daemons on several machines.

The driver is asyncpg: a maintained, native asyncio driver (no worker thread per call, as
aiosqlite or psycopg's thread-backed pool would need), with LISTEN/NOTIFY built in;
simreportd already runs on anyio's asyncio backend.

Positions stay gapless and in commit order with appenders on any number of machines: each
group's transaction takes `LOCK TABLE ... IN EXCLUSIVE MODE` before it reads the highest
position, and holds it until COMMIT. Writers are thus serialised on the lock, and a reader
can never see position N+1 while the transaction that will fill N is still in flight (the
gap a reader of Marten's async daemon could skip, discussion #4953). Readers are not
blocked: EXCLUSIVE still allows plain SELECTs. Every commit sends a NOTIFY, so subscribers
on every node wake at once; the poll of `EventLog.subscribe` remains the fallback.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import anyio
import asyncpg

from simreportd.errors import StoreFull, StoreNotEmpty, StoreUnusable

from .codec import Recorded
from .group_commit import ROW_COLUMNS, Pending, plan_group, settle
from .log import EventLog, redacted_url
from .positions import Position

log = logging.getLogger("simreportd.events.postgres")

TABLE = "simreportd_events"
CHANNEL = "simreportd_events"
SCHEMA_LOCK = 0x51_4D_52_45  # advisory lock id: two processes creating the schema at once must take turns
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    position BIGINT PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    stream TEXT NOT NULL,
    version BIGINT NOT NULL,
    type TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    recorded_at TEXT NOT NULL,
    data TEXT NOT NULL,
    meta TEXT NOT NULL,
    UNIQUE (stream, version)
);
CREATE OR REPLACE FUNCTION simreportd_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'events are append-only: % refused', TG_OP; END $$;
DROP TRIGGER IF EXISTS simreportd_events_append_only ON {TABLE};
CREATE TRIGGER simreportd_events_append_only BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION simreportd_refuse_change();
DROP TRIGGER IF EXISTS simreportd_events_no_truncate ON {TABLE};
CREATE TRIGGER simreportd_events_no_truncate BEFORE TRUNCATE ON {TABLE}
    FOR EACH STATEMENT EXECUTE FUNCTION simreportd_refuse_change();
"""
COLUMNS = "position, stream, version, type, schema_version, event_id, recorded_at, data, meta"
READ_ALL = (f"SELECT {COLUMNS} FROM {TABLE} WHERE position > $1"
            " AND ($2::text[] IS NULL OR type = ANY($2)) AND ($3::text[] IS NULL OR stream = ANY($3))"
            " AND ($5::bigint IS NULL OR position <= $5) ORDER BY position LIMIT $4")
READ_STREAM = (f"SELECT {COLUMNS} FROM {TABLE} WHERE stream = $1 AND version > $2"
               " AND ($4::text[] IS NULL OR type = ANY($4)) ORDER BY version LIMIT $3")
READ_POOL_SIZE = 4


class PostgresEventStore(EventLog):
    """The event log in a PostgreSQL database; the `EventStore` contract, as `SQLiteEventStore` keeps it."""

    def __init__(self, url: str, password: str | None = None) -> None:
        super().__init__()
        self.url, self._password = url, password
        self.where = redacted_url(url)
        self._writer: asyncpg.Connection | None = None
        self._listener: asyncpg.Connection | None = None
        self._pool: asyncpg.Pool | None = None

    async def _open_connections(self) -> None:
        try:
            self._writer = await asyncpg.connect(self.url, password=self._password)
            async with self._writer.transaction():
                await self._writer.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK)
                await self._writer.execute(SCHEMA)
            self._pool = await asyncpg.create_pool(self.url, password=self._password, min_size=1,
                                                   max_size=READ_POOL_SIZE)
            self._listener = await asyncpg.connect(self.url, password=self._password)
            await self._listener.add_listener(CHANNEL, self._notified)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreUnusable(self.where, f"{type(exc).__name__}: {exc}",
                                "Check that the server runs and takes connections, that the database exists, and "
                                "[store] url and the password (in the variable [store] password_env names)") from exc

    async def _close_connections(self) -> None:
        with anyio.CancelScope(shield=True):
            for conn in (self._listener, self._writer):
                if conn is not None and not conn.is_closed():
                    await conn.close()
            if self._pool is not None:
                await self._pool.close()
            self._writer = self._listener = self._pool = None

    async def _current_identity(self) -> object:
        """The server's system identifier: another cluster answering at the same URL has another one. One that
        cannot be read now (no right to pg_control_system, the server unreachable) counts as unchanged."""
        if self._pool is None:
            return self._identity
        try:
            return await self._pool.fetchval("SELECT system_identifier FROM pg_control_system()")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return self._identity

    def _notified(self, connection: object, pid: int, channel: str, payload: str) -> None:
        """Another node (or this one) committed up to `payload`: wake our subscribers."""
        try:
            self.appended_elsewhere(Position(int(payload)))
        except ValueError:
            return

    def _translate(self, exc: Exception) -> Exception:
        if isinstance(exc, asyncpg.DiskFullError):
            error = StoreFull(str(exc))
            error.__cause__ = exc
            return error
        return super()._translate(exc)

    async def _commit_group(self, group: list[Pending]) -> None:
        """One transaction for the group, planned under the table lock from what the database holds."""
        conn = self._writer
        assert conn is not None
        streams = sorted({p.stream for p in group})
        ids = [e.event_id for p in group for e in p.events]
        async with conn.transaction():
            await conn.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
            head = await conn.fetchval(f"SELECT coalesce(max(position), 0) FROM {TABLE}")
            rows = await conn.fetch(f"SELECT stream, max(version) FROM {TABLE} WHERE stream = ANY($1) GROUP BY stream",
                                    streams)
            versions = {**dict.fromkeys(streams, 0), **{r[0]: r[1] for r in rows}}
            known = {r[0]: (r[1], r[2]) for r in await conn.fetch(
                f"SELECT event_id, position, version FROM {TABLE} WHERE event_id = ANY($1)", ids)}
            planned, outcomes = plan_group(group, versions, known, head)
            if planned:
                await conn.copy_records_to_table(TABLE, records=planned, columns=ROW_COLUMNS)
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, str(planned[-1][0]))  # sent at COMMIT
        self._committed_rows(planned)
        settle(group, outcomes)

    async def import_recorded(self, batch: Sequence[Recorded]) -> None:
        """Copy events as they are (positions, ids, versions, times) onto the end of this log (`migrate`)."""
        conn = self._writer
        assert conn is not None
        async with conn.transaction():
            await conn.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
            head = await conn.fetchval(f"SELECT coalesce(max(position), 0) FROM {TABLE}")
            if batch and batch[0].position != head + 1:
                raise StoreNotEmpty(f"{self.where} holds events up to position {head}; the copy continues at "
                                      f"{batch[0].position}: migrate into an empty database")
            await conn.copy_records_to_table(TABLE, columns=ROW_COLUMNS, records=[
                (r.position, r.event_id, r.stream, r.version, r.type, r.schema_version, r.recorded_at, r.raw_data,
                 r.raw_meta) for r in batch])

    async def _read_head(self) -> Position:
        return Position(int(await self._reader().fetchval(f"SELECT coalesce(max(position), 0) FROM {TABLE}")))

    def _reader(self) -> asyncpg.Pool:
        self._check_open()
        assert self._pool is not None
        return self._pool

    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order (the first `limit`),
        optionally only those of some types."""
        rows = await self._reader().fetch(READ_STREAM, stream, after_version, limit,
                                          list(types) if types is not None else None)
        return [Recorded(*row) for row in rows]

    async def read_all(self, after: int = 0, limit: int = 1000, types: Sequence[str] | None = None,
                       streams: Sequence[str] | None = None, until: int | None = None) -> list[Recorded]:
        """Up to `limit` events after global position `after` (and up to `until`), optionally of some
        types or streams."""
        rows = await self._reader().fetch(READ_ALL, after, list(types) if types is not None else None,
                                          list(streams) if streams is not None else None, limit, until)
        return [Recorded(*row) for row in rows]

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        rows = await self._reader().fetch(
            f"SELECT stream, max(version), max(position) FROM {TABLE} GROUP BY stream ORDER BY stream")
        return [(r[0], int(r[1]), int(r[2])) for r in rows]



LEASES = "simreportd_leases"


class AdvisoryLeases:
    """Work leases of one node, held as PostgreSQL session advisory locks on a connection of their own.

    A lease is held for as long as this connection lives: when the node dies, even by
    kill -9, the server drops its session and every lease lapses at once, so another node
    can take the work over. A small table maps lock keys back to names, for `status`.
    """

    def __init__(self, url: str, password: str | None, node: str) -> None:
        self.url, self._password, self.node = url, password, node
        self._conn: asyncpg.Connection | None = None
        self._lock = anyio.Lock()
        self.held: set[str] = set()

    async def __aenter__(self) -> AdvisoryLeases:
        self._conn = await asyncpg.connect(self.url, password=self._password,
                                           server_settings={"application_name": self.node[:63]})
        async with self._conn.transaction():
            await self._conn.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK)
            await self._conn.execute(f"CREATE TABLE IF NOT EXISTS {LEASES} (key BIGINT PRIMARY KEY, name TEXT NOT NULL)")
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            if self._conn is not None:
                await self._conn.close()  # ends the session: every lease lapses
            self._conn, self.held = None, set()

    async def take(self, name: str) -> bool:
        """Hold the lease `name` unless another node does; True when this node holds it."""
        if name in self.held:
            return True
        assert self._conn is not None
        key = lease_key(name)
        async with self._lock:  # one connection: one call at a time
            await self._conn.execute(f"INSERT INTO {LEASES} (key, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                                     key, name)
            taken = bool(await self._conn.fetchval("SELECT pg_try_advisory_lock($1)", key))
        if taken:
            self.held.add(name)
        return taken

    async def release(self, name: str) -> None:
        if name in self.held and self._conn is not None:
            async with self._lock:
                await self._conn.fetchval("SELECT pg_advisory_unlock($1)", lease_key(name))
            self.held.discard(name)

    async def owners(self) -> dict[str, str]:
        """Every lease held by any node now: name -> node."""
        assert self._conn is not None
        async with self._lock:
            rows = await self._conn.fetch(
                f"SELECT l.name, a.application_name FROM pg_locks k JOIN pg_stat_activity a ON a.pid = k.pid"
                f" JOIN {LEASES} l ON ((l.key >> 32) & x'ffffffff'::bigint) = k.classid::bigint"
                f" AND (l.key & x'ffffffff'::bigint) = k.objid::bigint"
                f" WHERE k.locktype = 'advisory' AND k.granted ORDER BY l.name")
        return {r[0]: r[1] for r in rows}


def lease_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a lease name."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
