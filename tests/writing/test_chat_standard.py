"""Chat held to the report's standard: a named tool after a tool-less reply, the claim check, and an answer
with no evidence flagged as such on every surface. The scripted server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect

from simreportd.daemon.cli.local import generate
from simreportd.events.streams import chat_stream

from ..daemon.test_server import Running
from ..fake_llm import FakeLLM
from ..stories.test_chat import llm_config, post

pytestmark = pytest.mark.anyio

NON_ANSWER = "The report does not contain any tool calls for this question."


def evasive(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """A weak model in a chat: never calls a tool unless the request names one, then answers with nothing."""
    if "follow-up questions" not in body["messages"][0]["content"]:
        return None
    if isinstance(body.get("tool_choice"), dict):
        return None  # the grammar forces the named call: the faithful model's call stands
    return {"content": NON_ANSWER + " Instagram had 4,321 likes."}


async def test_a_tool_less_reply_gets_a_named_tool_and_an_answer_without_evidence_is_flagged_everywhere(
        tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=evasive) as llm:
        async with Running(llm_config(tmp_path, llm.base_url), [small_sim]) as running:
            report_id = await running.daemon.reports.request(small_sim.name)
            await generate(running.daemon, report_id)
            async with connect(f"ws://{running.base}/ws") as ws:
                await ws.send(json.dumps({"op": "chat", "report_id": report_id}))
                chat_id = json.loads(await ws.recv())["chat_id"]
                await ws.send(json.dumps({"op": "chat", "chat_id": chat_id, "question": "Who was loudest?"}))
                while not (frame := json.loads(await ws.recv())).get("done"):
                    pass
            status, reply = await anyio.to_thread.run_sync(post, running.base, json.dumps({
                "report_id": report_id, "message": "Which platform was busier?"}).encode())
            events = await running.daemon.store.read_stream(chat_stream(chat_id))
    chat_requests = [r for r in llm.requests if "follow-up questions" in r["messages"][0]["content"]]
    assert isinstance(chat_requests[0].get("tool_choice"), str | type(None))  # the model chooses first
    named = chat_requests[1]["tool_choice"]
    assert named["type"] == "function" and named["function"]["name"] == "insight_forge"
    [answered] = [e.data for e in events if e.type == "ChatAnswered"]
    assert answered["no_evidence"] is True and "Instagram" not in answered["answer"]
    assert answered["claims"]["unsupported"][0]["claims"] == ["4,321", "instagram"]
    assert frame["no_evidence"] is True and frame["unsupported"]
    assert status == 200 and reply["data"]["no_evidence"] is True and reply["data"]["unsupported"]


def test_the_cli_warns_of_an_answer_without_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    from simreportd.daemon.cli.chat_command import show_answer

    show_answer({"answer": NON_ANSWER, "turn": 1, "tool_calls": [], "sources": [], "grounding": {},
                 "no_evidence": True, "unsupported": [{"sentence": "Instagram had 4,321 likes.", "claims": ["4,321"]}]})
    err = capsys.readouterr().err
    assert "rests on no evidence from the simulation" in err and "1 sentence(s) with figures" in err


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_the_chats_own_prompts_echoed_by_a_model_leave_no_answer(protocol: str) -> None:
    """A small model that plans in prose until the limit, then repeats 'The tool budget for this question is
    spent.': every line of the chat's own instructions is an echo, so nothing of it is shown as an answer."""
    from simreportd.agent.chat import chat_prompts
    from simreportd.agent.report.interpret import strip_echoes
    from simreportd.agent.tools.toolspec import REPORT_TOOLS

    said = [chat_prompts.system_message(protocol, list(REPORT_TOOLS), 1, 3)["content"],
            chat_prompts.answer_now(protocol)["content"], chat_prompts.too_few_tools(0, 1),
            chat_prompts.question_text(2, "Who was loudest?").replace("Who was loudest?", ""), chat_prompts.NO_REPORT]
    kept = [strip_echoes(line, chat_prompts.ECHOES)[0] for text in said for line in text.splitlines()]
    assert [k for k in kept if k and k not in ("Tools:", "Question 2:") and not k.startswith(("- ", "<", "{"))] == []
    assert strip_echoes("Kofi Sato drew the most reactions.\nThe tool budget for this question is spent.",
                        chat_prompts.ECHOES)[0] == "Kofi Sato drew the most reactions."
