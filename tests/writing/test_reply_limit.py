"""A runaway reply is refused, not recorded: `[llm] max_reply_bytes` bounds what one model call can add to the log.

Every reply is kept whole in the log and the read models (replay serves it again), so a 30 MB reply once
became 2.7 GB of store and 4.4 GB of memory. Over real HTTP from the scripted server, whole and streamed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ..conftest import TIMEOUT
from ..fake_llm import FakeLLM
from .test_report_llm import llm_config, report_once, types

pytestmark = pytest.mark.anyio
HUGE = "The camps argued for rounds on end. " * 90_000  # about 3 MB


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_past_the_limit_fails_the_report_resumably_and_is_not_stored(
        tmp_path: Path, small_sim: Path, stream: bool) -> None:
    def script(body: dict, message: dict) -> dict | None:
        section = "Plan the report" not in body["messages"][0]["content"]
        return {"content": HUGE} if section and not message.get("tool_calls") else None

    with FakeLLM(script=script) as llm:
        # the scripted server builds the whole 3 MB reply before its first byte: the default 2 s could run out
        config = llm_config(tmp_path, llm.base_url, max_reply_bytes=100_000, stream=stream, timeout_s=TIMEOUT)
        _, report_id, (_, events) = await report_once(config, small_sim)
    failures = [e.data for e in events if e.type == "LLMFailed"]
    assert failures and failures[-1]["kind"] == "reply_too_large" and not failures[-1]["retryable"]
    assert "max_reply_bytes" in failures[-1]["message"] and types(events)[-1] == "ReportFailed"
    assert events[-1].data["resumable"] is True
    store = sqlite3.connect(tmp_path / "state" / "events.sqlite3")
    assert store.execute("SELECT max(length(data)) FROM events").fetchone()[0] < 200_000
