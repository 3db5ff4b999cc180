"""Deadlines that fit local servers: streamed replies, failed on silence between chunks, cancelled by closing
the stream. Real HTTP to the scripted server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.llm.providers import OpenAIProvider
from simreportd.errors import LLMError
from simreportd.events.models import LLMRequested

from ..conftest import TIMEOUT
from ..fake_llm import FakeLLM
from .test_report_llm import llm_config, report_once

pytestmark = pytest.mark.anyio

STREAM = True
LONG = " ".join(f"word{n}" for n in range(48))  # 6 content chunks of 8 words


def long_text(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    return {"content": LONG}


def request() -> LLMRequested:
    return LLMRequested(report_id="r", call_id="llm-1", purpose="section", model="m", messages_added=[],
                        fingerprint="", params={"max_tokens": 64})


async def test_a_slow_server_still_writing_is_not_failed_when_streaming() -> None:
    with FakeLLM(script=long_text) as llm:
        llm.faults.append(("drip", 0.25))  # 8 chunks a quarter second apart: 2 s in all, never 1 s silent
        provider = OpenAIProvider(llm.base_url, "", timeout_s=1.0, max_concurrency=1, stream=True)
        completion = await provider.complete(request(), [{"role": "user", "content": "hi"}], 1)
        await provider.close()
    assert completion.content == LONG and completion.finish_reason == "stop"
    assert llm.requests[0]["stream"] is True


async def test_a_silent_stream_times_out_and_is_closed_so_the_server_cancels_it() -> None:
    with FakeLLM(script=long_text) as llm:
        llm.faults.append(("stall", TIMEOUT))  # one chunk, then silence until the client hangs up
        provider = OpenAIProvider(llm.base_url, "", timeout_s=0.5, max_concurrency=1, stream=True)
        with pytest.raises(LLMError) as failed:
            await provider.complete(request(), [{"role": "user", "content": "hi"}], 1)
        await provider.close()
        assert llm.cancel_seen.wait(TIMEOUT)  # the server saw the stream closed: llama.cpp stops computing
    assert failed.value.kind == "timeout" and "between streamed chunks" in failed.value.message
    assert llm.cancelled == 1


async def test_a_whole_report_streams_tool_calls_and_text(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM() as llm:
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url, stream=STREAM), small_sim)
    assert all(body.get("stream") for body in llm.requests)
    assert state.verdict is not None and state.verdict.status == "completed", state.verdict
    assert sum(e.type == "ToolObserved" for e in events) >= 3
