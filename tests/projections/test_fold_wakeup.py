"""The log's head and the inline fold (`[service] fold = "inline"`): a commit that lands while the head is read
is in the head the read returns (a wake-up lost there left the fold asleep until its next poll, half a second
behind the log), and a caught-up fold is woken by each commit with the head in hand, without reading it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from simreportd.events import SQLiteEventStore
from simreportd.events import log as event_log
from simreportd.events.models import PlanningStarted
from simreportd.events.streams import report_stream
from simreportd.projections import runner
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for

from ..conftest import TIMEOUT

pytestmark = pytest.mark.anyio
STREAM = report_stream("report_wakeup")


class OvertakenHeadStore(SQLiteEventStore):
    """A real store whose next head read, once `overtake` is set, is overtaken by a commit: the read sees the
    log before the commit and returns after it (what a commit while the read's thread runs does)."""

    overtake = False

    async def _read_head(self) -> int:
        head = await super()._read_head()
        if self.overtake:
            self.overtake = False
            await self.append(STREAM, [PlanningStarted(report_id="report_wakeup")])
        return head


async def test_a_commit_during_a_head_read_is_in_the_head_it_returns(tmp_path: Path) -> None:
    async with OvertakenHeadStore(tmp_path / "events.sqlite3") as store:
        await store.append(STREAM, [PlanningStarted(report_id="report_wakeup")])
        store.overtake = True
        assert await store.last_position() == 2  # the head never goes back below a commit it was told of
        assert await store.last_position() == 2


class CountedHeadStore(SQLiteEventStore):
    """A real store that counts its reads of the log's head."""

    reads = 0

    async def _read_head(self) -> int:
        self.reads += 1
        return await super()._read_head()


async def test_the_caught_up_inline_fold_is_woken_by_a_commit_without_reading_the_head(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_log, "POLL_SECONDS", 3600)  # no poll moves the fold here:
    monkeypatch.setattr(runner, "FILE_CHECK_S", 3600)  # only the commit's own wake-up does
    path = tmp_path / "events.sqlite3"
    async with CountedHeadStore(path) as store, ProjectionRunner(store, views_path_for(path), projections()) as views:
        await store.append(STREAM, [PlanningStarted(report_id="report_wakeup")])
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(views.run)
            await views.wait_for(1, timeout=TIMEOUT)
            reads = store.reads
            await store.append(STREAM, [PlanningStarted(report_id="report_wakeup")])
            await views.wait_for(2, timeout=TIMEOUT)
            tasks.cancel_scope.cancel()
        assert views.position == 2 and store.reads == reads  # the commit handed over the head it made
