"""The store contract on SQLite, with both durability settings."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.errors import ConcurrencyConflict, StoreClosed, StoreFull, StoreUnusable
from simreportd.events import CaughtUp, NewEvent, Position, SQLiteEventStore
from simreportd.events.contract import caused
from simreportd.events.ids import id_text, new_event_id, new_event_id_bytes, new_event_ids
from simreportd.events.models import ContextGathered, PlanningStarted

from ..store_contract import EventStoreContract


class SQLiteContract(EventStoreContract):
    async def execute_directly(self, store: SQLiteEventStore, sql: str) -> None:
        with sqlite3.connect(store.path) as conn:
            conn.execute(sql.format(table="event_log"))


class TestSQLiteStoreNormal(SQLiteContract):
    @pytest.fixture
    async def store(self, store_path: Path) -> AsyncIterator[SQLiteEventStore]:
        async with SQLiteEventStore(store_path) as store:
            yield store


class TestSQLiteStoreFull(SQLiteContract):
    @pytest.fixture
    async def store(self, store_path: Path) -> AsyncIterator[SQLiteEventStore]:
        async with SQLiteEventStore(store_path, synchronous="FULL") as store:
            yield store


@pytest.mark.anyio
async def test_closing_twice_is_safe_and_append_after_close_raises(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store:
        await store.close()
        await store.close()
        with pytest.raises(StoreClosed):
            await store.append("report-a", [PlanningStarted(report_id="a")])


@pytest.mark.anyio
async def test_appends_accepted_before_close_are_committed(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store, anyio.create_task_group() as tasks:
        for n in range(50):
            tasks.start_soon(store.append, f"report-{n}", [PlanningStarted(report_id=str(n))])
        await anyio.wait_all_tasks_blocked()
        await store.close()
    async with SQLiteEventStore(store_path) as store:
        assert await store.last_position() == 50


@pytest.mark.anyio
async def test_appenders_beyond_the_queue_bound_wait_for_room_and_every_append_lands(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simreportd.events.log.MAX_QUEUED_APPENDS", 4)
    async with SQLiteEventStore(store_path) as store:
        results = await asyncio.gather(*(store.append(f"report-{n}", [PlanningStarted(report_id=str(n))])
                                         for n in range(200)))
        assert sorted(p for r in results for p in r.positions) == list(range(1, 201))
        assert [r.version for r in results] == [1] * 200


@pytest.mark.anyio
async def test_a_file_that_is_not_a_database_is_refused_with_a_clear_error(store_path: Path) -> None:
    store_path.write_bytes(b"this is not an SQLite file" * 200)
    with pytest.raises(StoreUnusable, match="move it away"):
        async with SQLiteEventStore(store_path):
            pass


@pytest.mark.anyio
async def test_reopened_store_continues_positions(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store:
        await store.append("report-a", [PlanningStarted(report_id="a")] * 2)
    async with SQLiteEventStore(store_path) as store:
        result = await store.append("report-a", [PlanningStarted(report_id="a")], expected_version=2)
    assert result.positions == (3,)


@pytest.mark.anyio
async def test_a_full_disk_fails_the_append_with_store_full_and_the_store_recovers(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store:
        await store.append("report-a", [PlanningStarted(report_id="a")])
        await store._on_writer(store._writer.execute, "PRAGMA max_page_count = 1")  # the file cannot grow: SQLITE_FULL
        with pytest.raises(StoreFull):
            await store.append("report-b", [PlanningStarted(report_id="x" * 50_000)])
        assert store.problem and "full" in store.problem
        await store._on_writer(store._writer.execute, "PRAGMA max_page_count = 1073741823")  # space freed
        result = await store.append("report-b", [PlanningStarted(report_id="b")], expected_version=0)
        assert result.positions == (2,) and store.problem is None


class SmallWalStore(SQLiteEventStore):
    WAL_LEAST_BYTES = 256 * 1024


@pytest.mark.anyio
async def test_the_wal_a_reader_keeps_from_being_reset_is_truncated_once_the_reader_lets_go(
        store_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    wal, big = store_path.with_name(store_path.name + "-wal"), [PlanningStarted(report_id="x" * 2000)] * 50
    async with SmallWalStore(store_path) as store:
        reader = sqlite3.connect(store_path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchone()  # a snapshot held, as a slow fold's read would
        for _ in range(5):
            await store.append("report-a", big)
        assert wal.stat().st_size > SmallWalStore.WAL_LEAST_BYTES
        assert "could not be truncated (a reader held on)" in caplog.text
        reader.execute("COMMIT")
        sizes = []
        for _ in range(5):  # past the limit the refusal raised: tried again
            await store.append("report-a", big)
            sizes.append(wal.stat().st_size)
        assert min(sizes) == 0  # emptied after a group, once
        assert len(await store.read_all(0, 10_000)) == 500
        reader.close()


class TinyWalStore(SQLiteEventStore):
    WAL_LEAST_BYTES = 64 * 1024


@pytest.mark.anyio
async def test_the_wal_stays_within_a_sixth_of_the_store_while_a_reader_follows(store_path: Path) -> None:
    wal, group = store_path.with_name(store_path.name + "-wal"), [PlanningStarted(report_id="x" * 2000)] * 20
    async with TinyWalStore(store_path) as store:
        reader, seen = sqlite3.connect(store_path, isolation_level=None), 0
        for _ in range(150):  # 6 MB of events, a reader following them in short reads as the fold does
            await store.append("report-a", group)
            seen += len(reader.execute("SELECT position FROM events WHERE position > ?", (seen,)).fetchall())
            bound = max(TinyWalStore.WAL_LEAST_BYTES, store_path.stat().st_size // TinyWalStore.WAL_SHARE)
            assert wal.stat().st_size <= bound + 128 * 1024  # at most one group's pages past the bound
        assert seen == 3000
        reader.close()


@pytest.mark.anyio
async def test_a_subscriber_woken_by_each_commit_reads_the_head_from_the_store_only_at_its_first_try(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with SQLiteEventStore(store_path) as store:
        reads, read_head = [], store._read_head

        async def counted() -> int:
            reads.append(1)
            return await read_head()

        monkeypatch.setattr(store, "_read_head", counted)
        send, receive = anyio.create_memory_object_stream[int](100)
        async with anyio.create_task_group() as tasks:
            async def follow() -> None:
                async for item in store.subscribe():
                    if not isinstance(item, CaughtUp):
                        await send.send(item.position)

            tasks.start_soon(follow)
            for n in range(1, 31):  # each append waits for the subscriber to take it: 30 wake-ups
                await store.append("report-a", [PlanningStarted(report_id="a")])
                assert await receive.receive() == n
                assert await store.wait_for(Position(n)) == n
            tasks.cancel_scope.cancel()
    assert len(reads) <= 3  # the first try; a poll or two if the machine stalled past POLL_SECONDS


@pytest.mark.anyio
async def test_a_subscriber_to_some_types_reads_no_commit_of_this_process_without_them_and_every_other_one(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest commits thousands of actions at a time; a subscriber to reports' events does not read them. Another
    process's commit between two of ours is read all the same."""
    async with SQLiteEventStore(store_path) as store, SQLiteEventStore(store_path) as other:
        reads, read_all = [], store.read_all

        async def counted(*args: Any, **kwargs: Any) -> Any:
            reads.append(1)
            return await read_all(*args, **kwargs)

        monkeypatch.setattr(store, "read_all", counted)
        send, receive = anyio.create_memory_object_stream[int](100)
        async with anyio.create_task_group() as tasks:
            async def follow() -> None:
                async for item in store.subscribe(types=["PlanningStarted"]):
                    await send.send(item.position)

            tasks.start_soon(follow)
            assert await receive.receive() == 0  # caught up with the empty store
            for n in range(1, 31):  # each commit wakes the subscriber: none of them is read
                await store.append("report-b", [ContextGathered(report_id="b", context={"n": n})])
                await store.wait_for(Position(n))
            await store.append("report-a", [PlanningStarted(report_id="a")])
            assert await receive.receive() == 31
            assert len(reads) <= 4  # the first read, the last; a poll or two if the machine stalled
            await other.append("report-c", [PlanningStarted(report_id="c")])  # at 32, by another process
            await store.append("report-b", [ContextGathered(report_id="b", context={})])  # ours, at 33
            with anyio.fail_after(10):  # a subscriber that took 33 for ours alone would skip 32 for good
                assert await receive.receive() == 32
            tasks.cancel_scope.cancel()


def test_event_ids_are_uuid7_and_strictly_increasing_one_at_a_time_and_in_bulk() -> None:
    ids = [new_event_id(), *new_event_ids(10_000), new_event_id(), *new_event_ids(0), *new_event_ids(3)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)  # 10,000 at once borrow later milliseconds
    parsed = [uuid.UUID(i) for i in ids]
    assert {u.version for u in parsed} == {7} and {u.variant for u in parsed} == {uuid.RFC_4122}
    assert all(str(u) == i for u, i in zip(parsed, ids, strict=True))


def test_event_ids_in_bytes_are_uuid7_increasing_and_read_as_their_text() -> None:
    ids = [*new_event_id_bytes(5000), *new_event_id_bytes(1), *new_event_id_bytes(63), *new_event_id_bytes(64)]
    texts = [id_text(i) for i in ids]
    assert texts == sorted(texts) and len(set(texts)) == len(ids) and all(len(i) == 16 for i in ids)
    assert len({i[9:] for i in ids}) == len(ids)  # the random bits differ from id to id, in runs made at once too
    parsed = [uuid.UUID(t) for t in texts]
    assert {u.version for u in parsed} == {7} and {u.variant for u in parsed} == {uuid.RFC_4122}
    assert [u.bytes for u in parsed] == ids


# The schema of version 1, as stores were written before the compact row: what an old file holds.
OLD_SCHEMA = """
CREATE TABLE events (position INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL,
    version INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, recorded_at TEXT NOT NULL,
    data TEXT NOT NULL, meta TEXT NOT NULL, UNIQUE (stream, version));
CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END;
CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END;
"""


def write_old_store(path: Path) -> list[tuple[object, ...]]:
    """A store as the old code wrote it: two streams, two batches of one group, meta on one; its rows."""
    old = [new_event_id() for _ in range(4)]
    at = ["2026-11-01T10:00:00.000001+00:00"] * 3 + ["2026-11-01T10:00:01.000000+00:00"]
    meta = ['{"correlation_id":"c1"}', '{"correlation_id":"c1"}', "{}", "{}"]
    rows = [(n + 1, old[n], stream, version, "PlanningStarted", 1, at[n], f'{{"report_id":"{stream[-1]}"}}', meta[n])
            for n, (stream, version) in enumerate([("report-a", 1), ("report-a", 2), ("report-b", 1), ("report-a", 3)])]
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()
    return rows


@pytest.mark.anyio
async def test_a_store_of_the_old_format_opens_reads_and_appends_as_it_did(store_path: Path) -> None:
    rows = write_old_store(store_path)
    async with SQLiteEventStore(store_path) as store:
        read = [(r.position, r.event_id, r.stream, r.version, r.type, r.schema_version, r.recorded_at, r.raw_data,
                 r.raw_meta) for r in await store.read_all()]
        assert read == rows
        assert [r.version for r in await store.read_stream("report-a")] == [1, 2, 3]
        assert await store.stream_summaries() == [("report-a", 3, 4), ("report-b", 1, 3)]
        retried = await store.append("report-a", [NewEvent(PlanningStarted(report_id="a"), str(rows[3][1]))])
        assert retried.duplicate and retried.positions == (4,)
        result = await store.append("report-b", [PlanningStarted(report_id="b")], expected_version=1)
        assert result.positions == (5,) and result.version == 2
    with sqlite3.connect(store_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        assert conn.execute("SELECT position, event_id, stream FROM events ORDER BY position").fetchall()[:4] == [
            r[:3] for r in rows]
    conn.close()
    async with SQLiteEventStore(store_path) as store:  # opened again: nothing to bring up to date
        assert [r.position for r in await store.read_all()] == [1, 2, 3, 4, 5]


@pytest.mark.anyio
async def test_the_row_keeps_its_id_in_16_bytes_and_its_meta_once_a_batch(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store:
        events = [PlanningStarted(report_id="a")] * 3
        await store.append("report-a", caused(events, "work-1"))
        await store.append("report-a", events)
        read = await store.read_all()
    assert {r.meta.get("correlation_id") for r in read[:3]} == {"work-1"} and read[3].meta == {}
    with sqlite3.connect(store_path) as conn:
        assert {len(i) for (i,) in conn.execute("SELECT event_id FROM event_log")} == {16}
        assert conn.execute("SELECT position FROM batches ORDER BY position").fetchall() == [(1,), (4,)]
        unique = [i for i in conn.execute("PRAGMA index_list(event_log)").fetchall() if i[2]]
    conn.close()
    assert len(unique) == 1


@pytest.mark.anyio
async def test_big_appends_from_two_stores_on_one_file_stay_gapless_and_a_retry_finds_its_positions(
        store_path: Path) -> None:
    """250 events a call: rows inserted many to a statement, a stale cache caught by the constraint as before."""
    batches = [[NewEvent(PlanningStarted(report_id=f"r{b}-{i}")) for i in range(250)] for b in range(4)]
    async with SQLiteEventStore(store_path) as one, SQLiteEventStore(store_path) as other:
        results = [await (one if b % 2 == 0 else other).append("report-a", batch) for b, batch in enumerate(batches)]
        retried = await other.append("report-a", batches[2])
        stale = one.append("report-a", [NewEvent(PlanningStarted(report_id="x"))], expected_version=500)
        with pytest.raises(ConcurrencyConflict):
            await stale
        read = await other.read_stream("report-a")
    assert [p for r in results for p in r.positions] == list(range(1, 1001))
    assert retried.duplicate and retried.positions == results[2].positions
    assert [r.version for r in read] == [r.position for r in read] == list(range(1, 1001))
    assert [r.event_id for r in read] == [e.event_id for batch in batches for e in batch]
    assert [r.event.report_id for r in read[740:760]] == [f"r2-{i}" for i in range(240, 250)] + [
        f"r3-{i}" for i in range(10)]


def test_events_appended_without_meta_share_one_that_no_caller_can_write() -> None:
    first, second = NewEvent(PlanningStarted(report_id="r")), NewEvent(PlanningStarted(report_id="r"))
    assert first.meta is second.meta and dict(first.meta) == {}
    writable: Any = first.meta
    with pytest.raises(TypeError):
        writable["correlation_id"] = "c"  # would have become every such event's meta
