"""An `EventBatch` (events as the columns of their rows) is stored as its events would be one by one: the same
rows, positions and ids, a retry found by its ids, on SQLite (written column by column) and in memory."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from simreportd.errors import ConcurrencyConflict
from simreportd.events import MemoryEventStore, NewEvent, SQLiteEventStore
from simreportd.events.batch import EventBatch, raw_ids
from simreportd.events.codec import encode
from simreportd.events.models import PlanningStarted

META = {"correlation_id": "ingest-1"}


def batch(count: int, first: int = 0) -> EventBatch:
    """`count` events, every third a model's text, the others an action's line as ingest stores it."""
    types, versions, datas = [], [], []
    for i in range(first, first + count):
        if i % 3 == 0:
            types.append("PlanningStarted")
            versions.append(PlanningStarted.SCHEMA_VERSION)
            datas.append(encode(PlanningStarted(report_id=f"r{i}")))
        else:
            types.append("AgentActed")
            versions.append(3)
            datas.append(f'{{"generation":1,"platform":"twitter","round":{i},"agent_id":1,"action_type":"LIKE_POST",'
                          '"action_args":{}}')
    return EventBatch(types, versions, datas, META)


@pytest.mark.anyio
async def test_a_batch_is_stored_as_its_events_one_by_one(tmp_path: Path) -> None:
    made = batch(250)
    async with SQLiteEventStore(tmp_path / "batch.sqlite3") as columns, \
            SQLiteEventStore(tmp_path / "list.sqlite3") as rows:
        by_columns = await columns.append("simulation-s", made, expected_version=0)
        by_rows = await rows.append("simulation-s", list(made), expected_version=0)
        read = [await store.read_all(0, 1000) for store in (columns, rows)]
    assert by_columns.positions == by_rows.positions == tuple(range(1, 251)) and by_columns.version == 250
    shape = [[(r.position, r.version, r.type, r.schema_version, r.event_id, r.raw_data, r.meta) for r in got]
             for got in read]
    assert shape[0] == shape[1]
    assert [r.event_id for r in read[0]] == [NewEvent(None, i).event_id for i in made.ids]  # type: ignore[arg-type]
    with sqlite3.connect(tmp_path / "batch.sqlite3") as conn:
        assert conn.execute("SELECT position, meta FROM batches").fetchall() == [(1, '{"correlation_id": "ingest-1"}')]
    conn.close()


@pytest.mark.anyio
async def test_a_batch_appended_again_is_found_by_its_ids_and_a_stale_one_conflicts(tmp_path: Path) -> None:
    first, second = batch(120), batch(7, first=120)
    async with SQLiteEventStore(tmp_path / "events.sqlite3") as store:
        landed = await store.append("simulation-s", first, expected_version=0)
        async with anyio.create_task_group() as tasks:  # in one group, most likely: positions still in order
            tasks.start_soon(store.append, "simulation-s", second)
            tasks.start_soon(store.append, "report-r", [PlanningStarted(report_id="r")])
        again = await store.append("simulation-s", first)
        with pytest.raises(ConcurrencyConflict):
            await store.append("simulation-s", batch(2, first=500), expected_version=120)
        read = await store.read_stream("simulation-s")
        head = await store.last_position()
    assert again.duplicate and again.positions == landed.positions
    assert [r.version for r in read] == list(range(1, 128)) and head == 128
    assert [r.raw_data for r in read] == first.datas + second.datas


@pytest.mark.anyio
async def test_the_memory_store_takes_a_batch_as_its_events() -> None:
    made = batch(5)
    async with MemoryEventStore() as store:
        result = await store.append("simulation-s", made, expected_version=0)
        read = await store.read_all()
    assert result.positions == (1, 2, 3, 4, 5)
    assert [(r.type, r.raw_data, r.meta) for r in read] == [(t, d, META) for t, d in zip(made.types, made.datas,
                                                                                        strict=True)]


def test_a_batch_reads_as_the_new_events_it_stands_for() -> None:
    made = batch(4)
    events = list(made)
    assert [e.raw_id for e in events] == raw_ids(made) == made.ids and len(made) == 4
    assert [e.event.type_name for e in made[1:3]] == ["AgentActed", "AgentActed"] and made[3].meta == META
    with pytest.raises(ValueError, match="one type, version, data"):
        EventBatch(["AgentActed"], [3], [])
