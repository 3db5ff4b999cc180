"""Whole reports through the scripted server playing a weak local model: what such models and servers do."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.report import prompts
from simreportd.daemon.report_replay import replay_report
from simreportd.daemon.server import http_api, mirofish
from simreportd.projections.runner import views_path_for

from ..conftest import PYTHON, TIMEOUT, write_config
from ..fake_llm import FakeLLM
from ..writing.test_report_llm import llm_config, report_once, types

pytestmark = pytest.mark.anyio


def is_section(body: dict[str, Any]) -> bool:
    return "Plan the report" not in body["messages"][0]["content"]


def is_forced(body: dict[str, Any]) -> bool:
    return prompts.FORCED_FINAL in str(body["messages"][-1].get("content"))


def fenced(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """Qwen with its own template: tool calls as fenced JSON in the content, never native."""
    calls = message.get("tool_calls")
    if not calls:
        return None
    f = calls[0]["function"]
    return {"content": "I will look this up.\n```json\n" + json.dumps(
        {"name": f["name"], "arguments": json.loads(f["arguments"])}) + "\n```"}


def never_calls_tools(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    return {"content": "The simulation data provided does not contain any tool calls."} if is_section(body) else None


async def test_tool_calls_written_as_fenced_json_are_executed(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=fenced) as llm:
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url, tool_protocol="native"), small_sim)
    assert state.verdict is not None and state.verdict.status == "completed", state.verdict
    done = [e.data for e in events if e.type == "SectionCompleted"]
    assert all(d["tool_calls"] >= 3 and d["problems"] == [] for d in done)
    assert "raw_tool_call_as_content" not in str([e.data for e in events if e.type == "ResponseRejected"])


async def test_a_server_that_ignores_tools_gets_tool_choice_then_the_text_protocol(tmp_path: Path,
                                                                                 small_sim: Path) -> None:
    with FakeLLM() as llm:
        llm.ignore_tools = True
        _, report_id, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    offered = [b for b in llm.requests if "tools" in b]
    named = {"type": "function", "function": {"name": "insight_forge"}}  # asked for by name after one refusal
    assert [b["tool_choice"] for b in offered] == ["auto", named]
    chosen = [e.data for e in events if e.type == "ToolProtocolChosen"]
    assert [c["protocol"] for c in chosen] == ["native", "text"]
    assert "ignored the offered tools in 2 replies" in chosen[1]["reason"]
    assert state.verdict.status == "completed"
    result = await replay_report_in(tmp_path, report_id)
    assert result.divergence is None


async def replay_report_in(tmp_path: Path, report_id: str):  # type: ignore[no-untyped-def]
    from simreportd.events import SQLiteEventStore
    async with SQLiteEventStore(tmp_path / "state" / "events.sqlite3") as store:
        return await replay_report(store, report_id, tmp_path / "replay" / "events.sqlite3")


async def test_a_reply_cut_by_the_length_limit_is_sent_back_for_a_brief_answer(tmp_path: Path,
                                                                              small_sim: Path) -> None:
    with FakeLLM() as llm:
        llm.faults.extend([("ok",), ("length", 40)])  # the outline, then the first section reply is cut
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    [cut] = [e.data for e in events if e.type == "ResponseRejected"]
    assert cut["reason"] == "length_cut"
    assert any("cut off at the length limit" in str(m.get("content")) for m in llm.requests[2]["messages"])
    assert state.report_completed


async def test_a_context_length_400_shrinks_the_request_and_retries(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM() as llm:
        llm.faults.extend([("ok",), ("ok",), ("ok",), ("overflow", 1024)])
        _, report_id, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    failed = [e.data for e in events if e.type == "LLMFailed"]
    assert [f["kind"] for f in failed] == ["context_overflow"], failed
    compacted, *later = [e.data for e in events if e.type == "ContextCompacted"]
    assert "refused the request as too long" in compacted["reason"] and compacted["target_tokens"] <= 1024
    assert all(c["target_tokens"] <= compacted["target_tokens"] for c in later)  # the server's limit holds on
    assert state.report_completed and state.failed is None
    after = llm.requests[4]
    assert after["max_tokens"] <= 2048
    assert (await replay_report_in(tmp_path, report_id)).divergence is None


@pytest.mark.parametrize("raw", [
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}, "finish_reason": "stop"}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": ["quick_search"]},
                  "finish_reason": "tool_calls"}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "",
                                          "tool_calls": [{"id": "a", "function": {"name": 7}}]}}]},
], ids=["content-number", "tool-calls-strings", "tool-name-number"])
async def test_a_reply_with_wrong_field_types_is_a_failed_attempt_that_is_retried(
        tmp_path: Path, small_sim: Path, raw: dict) -> None:
    with FakeLLM() as llm:
        llm.faults.extend([("ok",), ("raw", {"id": "x", "object": "chat.completion", "created": 0, "model": "m", **raw})])
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    [failed] = [e.data for e in events if e.type == "LLMFailed"]
    assert failed["kind"] == "invalid_response" and failed["retryable"]
    assert state.report_completed and "ReportFailed" not in types(events)


async def test_a_forced_answer_echoing_our_prompt_is_sent_back_and_the_clean_text_kept(
        tmp_path: Path, small_sim: Path) -> None:
    echoed: list[int] = []

    def echo_once(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
        if is_forced(body) and not echoed:
            echoed.append(1)
            return {"content": prompts.forced_final("native") + "\n</tool_result>"}
        return None

    with FakeLLM(script=echo_once) as llm:
        config = llm_config(tmp_path, llm.base_url)
        config = config.model_copy(update={"agent": config.agent.model_copy(update={"max_tool_calls": 3})})
        _, report_id, (state, events) = await report_once(config, small_sim)
    rejected = [e.data["reason"] for e in events if e.type == "ResponseRejected"]
    assert rejected[:2] == ["echoed_prompt", "empty_section"]
    for done in (e.data for e in events if e.type == "SectionCompleted"):
        assert prompts.FORCED_FINAL not in done["content"] and "tool_result" not in done["content"]
        assert prompts.PLACEHOLDER not in done["content"]


async def test_sections_without_tool_calls_make_a_degraded_report_everywhere_it_shows(
        tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=never_calls_tools) as llm:
        config_path = write_config(tmp_path, f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\n'
                                             'model = "scripted"\nretry_backoff_s = 0.01\n', auto=False)
        run = [PYTHON, "-m", "simreportd", "-c", str(config_path), "report", str(small_sim), "--wait"]
        lenient = subprocess.run(run, capture_output=True, text=True, timeout=TIMEOUT)
        strict = subprocess.run(run + ["--strict"], capture_output=True, text=True, timeout=TIMEOUT)
    assert lenient.returncode == 0, lenient.stderr
    assert "WARNING: report ready but degraded" in lenient.stderr
    assert "0 tool call(s), fewer than [agent] min_tool_calls = 3" in lenient.stderr
    assert strict.returncode == 1 and "degraded" in strict.stderr
    report_id = lenient.stdout.split()[-1]
    meta = json.loads((tmp_path / "reports" / report_id / "meta.json").read_text())
    assert meta["status"] == "completed" and meta["quality"] == "degraded" and meta["problems"]  # MiroFish's five
    progress = json.loads((tmp_path / "reports" / report_id / "progress.json").read_text())
    assert progress["status"] == "completed" and "problem(s)" in progress["message"]  # MiroFish knows no other
    conn = sqlite3.connect(views_path_for(tmp_path / "state" / "events.sqlite3"))
    conn.row_factory = sqlite3.Row
    _, _, body = http_api.reports(conn, {})
    [row] = [r for r in json.loads(body)["reports"] if r["report_id"] == report_id]
    assert row["status"] == "completed_degraded" and any("min_tool_calls" in p for p in row["problems"])
    progress_reply = mirofish.get_progress(conn, mirofish.Ask({"report_id": report_id}))
    assert "problem(s)" in progress_reply.body["data"]["message"]
    conn.close()


def calls_only_named_tools(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """llama.cpp serving a weak model: it writes prose instead of calling tools, unless the request names
    a tool, which the server's grammar then forces it to call."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        arguments = json.dumps({"query": "congestion charge"})
        return {"content": None, "tool_calls": [{"id": f"named{len(body['messages'])}", "type": "function",
                                                 "function": {"name": choice["function"]["name"],
                                                              "arguments": arguments}}]}
    return {"content": "Students were worried about it."} if message.get("tool_calls") else None


async def test_a_model_that_writes_before_it_looks_is_asked_for_named_tools(tmp_path: Path,
                                                                           small_sim: Path) -> None:
    with FakeLLM(script=calls_only_named_tools) as llm:
        _, report_id, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    assert state.verdict is not None and not any("tool call" in p for p in state.verdict.problems)
    done = [e.data for e in events if e.type == "SectionCompleted"]
    assert done and all(d["tool_calls"] >= 3 and not d["forced"] for d in done)
    named = [b["tool_choice"]["function"]["name"] for b in llm.requests if isinstance(b.get("tool_choice"), dict)]
    called = [e.data["tool"] for e in events if e.type == "ToolCalled"]
    assert named and called == named  # every call was one the request named, none made up by the script
    assert [e.data["protocol"] for e in events if e.type == "ToolProtocolChosen"] == ["native"]
    assert (await replay_report_in(tmp_path, report_id)).divergence is None
