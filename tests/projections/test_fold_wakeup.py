"""The inline fold (`[service] fold = "inline"`) wakes at every commit, even one that lands while it is
reading the log's head: a wake-up lost there left it asleep until its next poll, half a second behind the log
(the store's head went back to what the read saw)."""

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


async def test_the_inline_fold_folds_a_commit_that_lands_while_it_reads_the_head(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_log, "POLL_SECONDS", 3600)  # no poll saves a lost wake-up here:
    monkeypatch.setattr(runner, "FILE_CHECK_S", 3600)  # only the commit's own wake-up moves the fold
    path = tmp_path / "events.sqlite3"
    async with OvertakenHeadStore(path) as store, ProjectionRunner(store, views_path_for(path), projections()) as views:
        await store.append(STREAM, [PlanningStarted(report_id="report_wakeup")])
        store.overtake = True  # the fold's first wait reads the head: the second event commits meanwhile
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(views.run)
            await views.wait_for(2, timeout=TIMEOUT)
            tasks.cancel_scope.cancel()
        assert views.position == 2 and not store.overtake
