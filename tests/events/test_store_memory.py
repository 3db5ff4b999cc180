"""The store contract in memory: the backend the agent, fold and protocol tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from simreportd.errors import StoreClosed
from simreportd.events import MemoryEventStore
from simreportd.events.models import PlanningStarted

from ..store_contract import EventStoreContract


class TestMemoryStore(EventStoreContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[MemoryEventStore]:
        async with MemoryEventStore() as store:
            yield store

    async def execute_directly(self, store: MemoryEventStore, sql: str) -> None:
        """UPDATE assigns to the first event, DELETE deletes it: what the database statements would do."""
        if sql.startswith("UPDATE"):
            store.rows[0] = store.rows[0]
        else:
            del store.rows[0]


@pytest.mark.anyio
async def test_a_closed_memory_store_refuses_appends_and_reads() -> None:
    async with MemoryEventStore() as store:
        await store.append("report-a", [PlanningStarted(report_id="a")])
    with pytest.raises(StoreClosed):
        await store.append("report-a", [PlanningStarted(report_id="a")])
    with pytest.raises(StoreClosed):
        await store.read_all()
    assert [r.stream for r in store.rows] == ["report-a"]


@pytest.mark.anyio
async def test_stream_summaries_name_each_stream_with_its_version_and_last_position() -> None:
    async with MemoryEventStore() as store:
        await store.append("report-b", [PlanningStarted(report_id="b")] * 2)
        await store.append("report-a", [PlanningStarted(report_id="a")])
        assert await store.stream_summaries() == [("report-a", 1, 3), ("report-b", 2, 2)]
