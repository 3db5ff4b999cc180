"""A model server that is down is waited for (`[llm] down_wait_s`, bounded) before the report fails, and
`resume` says where the report goes on instead of repeating old failures as news. The scripted server over real
HTTP; the progress lines read from a real store."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from simreportd.agent.report.llm_calls import DOWN_POLL_S, down_wait
from simreportd.agent.report.state import ReportState
from simreportd.daemon.cli.progress import follow_report
from simreportd.daemon.service import Daemon
from simreportd.events.models import LLMFailed, ReportRules

from ..fake_llm import FakeLLM
from .test_report_llm import generate, llm_config, report_once, types

pytestmark = pytest.mark.anyio


def failure(kind: str, status: int | None = None) -> LLMFailed:
    return LLMFailed(report_id="r", call_id="c", attempt=1, kind=kind, message="down", status_code=status)


def test_a_server_that_is_down_is_polled_until_down_wait_has_passed_and_no_longer() -> None:
    s = ReportState(report_id="r", rules=ReportRules(max_retries=2, retry_backoff_s=1.0, down_wait_s=12.0))
    refused = failure("connection")
    polls = [down_wait(s, n, refused) for n in range(3, 7)]
    assert polls == [DOWN_POLL_S, 12.0 - 3.0 - DOWN_POLL_S, None, None]  # 1 + 2 s of retries, then 5 + 4
    assert down_wait(s, 3, failure("server_error", 503)) == DOWN_POLL_S  # a server still loading its model
    assert down_wait(s, 3, failure("timeout")) is None  # up but slow: max_retries bounds it
    assert down_wait(ReportState(report_id="r", rules=ReportRules(max_retries=2)), 3, refused) is None  # 0: off


@pytest.mark.parametrize("down_wait_s, completes", [(1.0, True), (0.0, False)])
async def test_a_server_down_past_its_retries_is_waited_for_then_the_report_completes(
        tmp_path: Path, small_sim: Path, down_wait_s: float, completes: bool) -> None:
    with FakeLLM() as llm:
        llm.faults.extend([("status", 503)] * 3)  # three failures: one more than max_retries allows
        config = llm_config(tmp_path, llm.base_url, down_wait_s=down_wait_s)
        _, _, (state, events) = await report_once(config, small_sim)
    assert types(events).count("LLMFailed") == 3
    assert state.report_completed is completes and (state.failed is None) is completes
    if not completes:
        assert state.failed is not None and "waited for" not in state.failed.error


async def test_resume_says_where_the_report_goes_on_not_its_old_failures(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM() as llm:
        config = llm_config(tmp_path, llm.base_url)
        llm.faults.extend([("status", 503)] * 3)
        _, report_id, (state, _) = await report_once(config, small_sim)
        assert state.failed is not None
        async with Daemon(config) as daemon:
            await daemon.reports.resume(report_id)
            out = io.StringIO()
            await generate(daemon, report_id)
            await follow_report(daemon.store, report_id, out)
    said = out.getvalue()
    assert said.startswith("Resuming: going on with the outline.")
    assert "Report failed" not in said and "LLM call failed" not in said and "Report completed" in said
