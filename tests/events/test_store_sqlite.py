"""The store contract on SQLite, with both durability settings."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from simreportd.errors import StoreClosed, StoreFull, StoreUnusable
from simreportd.events import CaughtUp, Position, SQLiteEventStore
from simreportd.events.ids import new_event_id, new_event_ids
from simreportd.events.models import PlanningStarted

from ..store_contract import EventStoreContract


class SQLiteContract(EventStoreContract):
    async def execute_directly(self, store: SQLiteEventStore, sql: str) -> None:
        with sqlite3.connect(store.path) as conn:
            conn.execute(sql.format(table="events"))


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
    WAL_TRUNCATE_BYTES = 256 * 1024


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
        assert wal.stat().st_size > SmallWalStore.WAL_TRUNCATE_BYTES
        assert "could not be truncated (a reader held on)" in caplog.text
        reader.execute("COMMIT")
        for _ in range(5):  # past the limit the refusal raised: tried again
            await store.append("report-a", big)
        assert wal.stat().st_size == 0
        assert len(await store.read_all(0, 10_000)) == 500
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


def test_event_ids_are_uuid7_and_strictly_increasing_one_at_a_time_and_in_bulk() -> None:
    ids = [new_event_id(), *new_event_ids(10_000), new_event_id(), *new_event_ids(0), *new_event_ids(3)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)  # 10,000 at once borrow later milliseconds
    parsed = [uuid.UUID(i) for i in ids]
    assert {u.version for u in parsed} == {7} and {u.variant for u in parsed} == {uuid.RFC_4122}
    assert all(str(u) == i for u, i in zip(parsed, ids, strict=True))
