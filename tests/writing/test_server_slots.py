"""A model server with fewer slots than the report asks for at once: the provider sends it fewer requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..fake_llm import FakeLLM
from .test_report_llm import llm_config, report_once


@pytest.mark.anyio
async def test_a_one_slot_server_that_times_out_under_parallel_sections_gets_fewer_requests_at_once(
        tmp_path: Path, small_sim: Path) -> None:
    """Requests queued by a one-slot server time out; the provider halves its limit instead of failing."""
    with FakeLLM(latency_s=0.25, slots=1) as llm:
        config = llm_config(tmp_path, llm.base_url, max_concurrency=4, timeout_s=0.6)
        config = config.model_copy(update={"reports": config.reports.model_copy(update={"parallel_sections": 4})})
        daemon, _, (state, events) = await report_once(config, small_sim)
    timeouts = [r for r in events if r.type == "LLMFailed" and r.data["kind"] == "timeout"]
    assert state.report_completed and state.failed is None
    assert timeouts  # the server did queue past the deadline at first
    assert daemon.runner.writers("openai").slots.limit < 4  # and was then sent fewer at once
