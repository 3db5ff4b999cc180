"""Chat on a report written guided: the engine makes the tool calls and answers, the model only phrases, the claim
check drops what the answer does not support. The scripted server over real HTTP, a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from simreportd.agent.report.guided import NO_MODEL
from simreportd.daemon.cli.local import generate
from simreportd.daemon.service import Daemon
from simreportd.events.streams import chat_stream

from ..fake_llm import FakeLLM
from .test_guided import INVENTED, SYSTEM, copies_the_sheet, guided_config

pytestmark = pytest.mark.anyio


async def test_a_guided_chat_answer_is_the_engines_phrased_by_the_model_with_the_invented_dropped(
        tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=copies_the_sheet) as llm:
        async with Daemon(guided_config(tmp_path, llm.base_url, mode="guided"), folders=[small_sim]) as daemon:
            await daemon.watcher.check(small_sim)
            report_id = await daemon.reports.request(small_sim.name)
            await generate(daemon, report_id)
            asked = len(llm.requests)
            chat_id = await daemon.chats.open(report_id, "cli")
            answered = await daemon.chats.ask(chat_id, "Who changed sides, and which platform was busier?")
            events = await daemon.store.read_stream(chat_stream(chat_id))
    chat_requests = llm.requests[asked:]
    assert chat_requests and all(r["messages"][0]["content"] == SYSTEM and "tools" not in r for r in chat_requests)
    assert [e.data["call"]["tool"] for e in events if e.type == "ChatToolCalled"][:2] == \
        ["simulation_analytics", "quick_search"]  # the engine's calls, not the model's
    assert answered.answer.startswith("_The model's sentences only restated")  # it copied the sheet: no reading
    assert "From the data:" in answered.answer
    assert "Facebook" not in answered.answer and [u.sentence for u in answered.claims.unsupported] == [INVENTED]
    assert not answered.no_evidence and answered.sources


async def test_a_guided_chat_answers_from_the_engine_alone_when_the_model_is_down(
        tmp_path: Path, small_sim: Path) -> None:
    """The engine has the answer before the model is asked: a model server that is down leaves the turn answered
    from the data, said to be no phrasing of the model's, instead of a failed turn."""
    with FakeLLM(script=copies_the_sheet) as llm:
        config = guided_config(tmp_path, llm.base_url, mode="guided")
        config = config.model_copy(update={"llm": config.llm.model_copy(update={"max_retries": 1,
                                                                               "retry_backoff_s": 0.0})})
        async with Daemon(config, folders=[small_sim]) as daemon:
            await daemon.watcher.check(small_sim)
            report_id = await daemon.reports.request(small_sim.name)
            await generate(daemon, report_id)
            llm.__exit__(None, None, None)  # the server goes away between the report and the chat
            chat_id = await daemon.chats.open(report_id, "cli")
            answered = await daemon.chats.ask(chat_id, "Who changed sides, and which platform was busier?")
            events = await daemon.store.read_stream(chat_stream(chat_id))
    assert answered.answer.startswith(NO_MODEL[0]) and "Twitter" in answered.answer
    assert [e.type for e in events if e.type in ("ChatLLMFailed", "ChatTurnFailed")] == ["ChatLLMFailed"] * 2
    assert not answered.no_evidence and answered.claims.unsupported == []
