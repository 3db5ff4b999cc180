"""The store contract on SQLite, with both durability settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simreportd.events.errors import StoreClosed
from simreportd.events.models import PlanningStarted
from simreportd.events.store import EventStore

from .store_contract import EventStoreContract


class TestSQLiteStoreNormal(EventStoreContract):
    @pytest.fixture
    async def store(self, store_path: Path) -> AsyncIterator[EventStore]:
        async with EventStore(store_path) as store:
            yield store


class TestSQLiteStoreFull(EventStoreContract):
    @pytest.fixture
    async def store(self, store_path: Path) -> AsyncIterator[EventStore]:
        async with EventStore(store_path, synchronous="FULL") as store:
            yield store


@pytest.mark.anyio
async def test_closing_twice_is_safe_and_append_after_close_raises(store_path: Path) -> None:
    store = EventStore(store_path)
    await store.open()
    await store.close()
    await store.close()
    with pytest.raises(StoreClosed):
        await store.append("report-a", [PlanningStarted(report_id="a")])


@pytest.mark.anyio
async def test_reopened_store_continues_positions(store_path: Path) -> None:
    async with EventStore(store_path) as store:
        await store.append("report-a", [PlanningStarted(report_id="a")] * 2)
    async with EventStore(store_path) as store:
        result = await store.append("report-a", [PlanningStarted(report_id="a")], expected_version=2)
    assert result.positions == (3,)
