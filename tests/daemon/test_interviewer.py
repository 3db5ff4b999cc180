"""The interviewer (daemon/interviews/interviewer.py): what a question is recorded as."""

from __future__ import annotations

from pathlib import Path

import pytest

from simreportd.daemon.cli.local import generate
from simreportd.daemon.service import Daemon
from simreportd.errors import UsageError
from simreportd.events.streams import report_stream

from ..conftest import make_config

pytestmark = pytest.mark.anyio


async def test_a_question_on_an_unknown_platform_is_refused_and_nothing_is_recorded(tmp_path: Path,
                                                                                    small_sim: Path) -> None:
    async with Daemon(make_config(tmp_path, reports={"auto": False}), folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        report_id = await daemon.reports.request(small_sim.name)
        await generate(daemon, report_id)
        before = len(await daemon.store.read_stream(report_stream(report_id)))
        with pytest.raises(UsageError, match="'mastodon' is neither twitter nor reddit"):
            await daemon.interviews.ask(report_id, 1, "Still against it?", "mastodon")
        after = await daemon.store.read_stream(report_stream(report_id))
        answered = await daemon.interviews.ask(report_id, 1, "Still against it?", "reddit")
        recorded = await daemon.store.read_stream(report_stream(report_id))
    assert len(after) == before
    assert answered["mode"] == "persona" and [r.data["platform"] for r in recorded[before:]] == ["reddit", "reddit"]
