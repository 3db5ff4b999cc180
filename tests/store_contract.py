"""The contract every event store must keep (subclassed once per backend, eventsourcing style)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from simreportd.errors import ConcurrencyConflict, DuplicateEventMismatch, StoreClosed
from simreportd.events import CaughtUp, EventStore, NewEvent, Position
from simreportd.events.models import PlanningStarted, ReportResumed

from .conftest import TIMEOUT


def planning(report_id: str) -> PlanningStarted:
    return PlanningStarted(report_id=report_id)


class EventStoreContract:
    """Subclasses provide a `store` fixture yielding an open store of their backend, and `execute_directly`."""

    @pytest.mark.anyio
    async def test_a_wait_for_a_position_not_committed_ends_with_store_closed_when_the_store_closes(
            self, store: EventStore) -> None:
        await store.append("report-a", [planning("a")])
        waiting = asyncio.create_task(store.wait_for(Position(5), timeout=TIMEOUT))
        await anyio.wait_all_tasks_blocked()  # it waits for a commit
        await store.close()
        with pytest.raises(StoreClosed):
            await waiting

    @pytest.mark.anyio
    async def test_append_returns_gapless_positions_and_versions(self, store: EventStore) -> None:
        first = await store.append("report-a", [planning("a"), planning("a")], expected_version=0)
        second = await store.append("report-b", [planning("b")], expected_version=0)
        assert first.positions == (1, 2) and first.version == 2
        assert second.positions == (3,) and second.version == 1
        assert await store.last_position() == 3

    @pytest.mark.anyio
    async def test_positions_are_gapless_and_commit_ordered_under_32_concurrent_appenders(
        self, store: EventStore
    ) -> None:
        async def appender(n: int) -> list[int]:
            positions = []
            for i in range(20):
                result = await store.append(f"report-{n}", [planning(str(n))] * (1 + i % 3), expected_version=None)
                positions.extend(result.positions)
            return positions

        results = await asyncio.gather(*(appender(n) for n in range(32)))
        everything = await store.read_all(0, limit=100_000)
        assert [r.position for r in everything] == list(range(1, len(everything) + 1))
        assert sorted(p for ps in results for p in ps) == [r.position for r in everything]
        for n in range(32):
            versions = [r.version for r in await store.read_stream(f"report-{n}")]
            assert versions == list(range(1, len(versions) + 1))

    @pytest.mark.anyio
    async def test_a_stream_reads_in_pages_and_iterates_in_bounded_batches(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a")] * 7, expected_version=0)
        await store.append("report-b", [planning("b")] * 2, expected_version=0)
        page = await store.read_stream("report-a", after_version=2, limit=3)
        assert [r.version for r in page] == [3, 4, 5]
        assert [r.version async for r in store.iter_stream("report-a", batch=2)] == list(range(1, 8))
        assert [r.version async for r in store.iter_stream("report-a", after_version=6, batch=4)] == [7]

    @pytest.mark.anyio
    async def test_a_stream_reads_only_the_types_asked_for(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a"), ReportResumed(report_id="a"), planning("a"),
                                        ReportResumed(report_id="a")])
        await store.append("report-b", [ReportResumed(report_id="b")])
        resumed = [(r.stream, r.version) async for r in store.iter_stream("report-a", batch=1, types=["ReportResumed"])]
        assert resumed == [("report-a", 2), ("report-a", 4)]
        assert [r.version for r in await store.read_stream("report-a", 2, types=["ReportResumed"])] == [4]
        assert await store.read_stream("report-a", types=[]) == []

    @pytest.mark.anyio
    async def test_reappending_the_same_event_ids_writes_nothing_and_returns_original_positions(
        self, store: EventStore
    ) -> None:
        batch = [NewEvent(planning("a")), NewEvent(planning("a"))]
        original = await store.append("report-a", batch, expected_version=0)
        retried = await store.append("report-a", batch, expected_version=0)
        assert retried.positions == original.positions and retried.duplicate
        assert len(await store.read_stream("report-a")) == 2

    @pytest.mark.anyio
    async def test_append_reusing_only_some_event_ids_is_refused(self, store: EventStore) -> None:
        used = NewEvent(planning("a"))
        await store.append("report-a", [used])
        with pytest.raises(DuplicateEventMismatch):
            await store.append("report-a", [used, NewEvent(planning("a"))])

    @pytest.mark.anyio
    async def test_append_with_stale_version_raises_conflict(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a")], expected_version=0)
        with pytest.raises(ConcurrencyConflict) as caught:
            await store.append("report-a", [planning("a")], expected_version=0)
        assert (caught.value.expected, caught.value.actual) == (0, 1)
        assert "version 1" in str(caught.value)

    @pytest.mark.anyio
    async def test_a_conflict_in_a_group_fails_only_its_own_caller(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a")], expected_version=0)
        good, bad = await asyncio.gather(
            store.append("report-b", [planning("b")], expected_version=0),
            store.append("report-a", [planning("a")], expected_version=5),
            return_exceptions=True,
        )
        assert not isinstance(good, Exception) and isinstance(bad, ConcurrencyConflict)
        assert [r.stream for r in await store.read_all()] == ["report-a", "report-b"]

    async def execute_directly(self, store: EventStore, sql: str) -> None:
        """Run `sql` on the backend's database behind the store's back ({table} names the events)."""
        raise NotImplementedError

    @pytest.mark.anyio
    async def test_update_and_delete_are_refused_by_the_database(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a")])
        for sql in ("UPDATE {table} SET data = '{{}}'", "DELETE FROM {table}"):
            with pytest.raises(Exception, match="append-only"):
                await self.execute_directly(store, sql)
        assert len(await store.read_all()) == 1

    @pytest.mark.anyio
    async def test_read_all_filters_by_type_and_stream(self, store: EventStore) -> None:
        await store.append("report-a", [planning("a"), ReportResumed(report_id="a")])
        await store.append("report-b", [planning("b")])
        assert [r.type for r in await store.read_all(types=["ReportResumed"])] == ["ReportResumed"]
        assert [r.stream for r in await store.read_all(streams=["report-b"])] == ["report-b"]
        assert [r.position for r in await store.read_all(after=1, limit=1)] == [2]
        assert [r.position for r in await store.read_all(after=1, until=2)] == [2]
        assert [r.type for r in await store.read_all(types=["ReportResumed"], until=1)] == []

    @pytest.mark.anyio
    async def test_events_decode_into_their_models(self, store: EventStore) -> None:
        await store.append("report-a", [ReportResumed(report_id="a", reason="user")])
        [recorded] = await store.read_stream("report-a")
        assert recorded.event == ReportResumed(report_id="a", reason="user")

    @pytest.mark.anyio
    async def test_subscriber_started_mid_stream_gets_every_later_event_once_in_order(
        self, store: EventStore
    ) -> None:
        for _ in range(10):
            await store.append("report-a", [planning("a")])
        received: list[int] = []
        caught_up = asyncio.Event()

        async def consume() -> None:
            async for item in store.subscribe(after=5):
                if isinstance(item, CaughtUp):
                    caught_up.set()
                    continue
                received.append(item.position)
                if item.position == 210:
                    return

        task = asyncio.create_task(consume())
        await asyncio.wait_for(caught_up.wait(), TIMEOUT)
        for _ in range(100):
            await store.append("report-a", [planning("a"), planning("a")])
        await asyncio.wait_for(task, TIMEOUT)
        assert received == list(range(6, 211))

    @pytest.mark.anyio
    async def test_wait_for_returns_once_the_position_commits(self, store: EventStore) -> None:
        waiter = asyncio.create_task(store.wait_for(3, timeout=TIMEOUT))
        await store.append("report-a", [planning("a")] * 3)
        await asyncio.wait_for(waiter, TIMEOUT)
        assert await store.last_position() == 3
