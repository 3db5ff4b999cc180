"""The offline writer: a deterministic, data-only stand-in for a language model, written as an analyst.

It answers the very requests the runner records, through the same loop: it plans an outline
that follows this simulation (its trigger, its camps, its platforms), calls the tools with
queries drawn from each section's topic, and writes each section only from what those tools
returned: real figures with their baselines stated, verbatim quotes with their ids, side-changers
and coalitions where the data shows them, and a closing section that answers the requirement's
questions. No network, no randomness, no clock; the byline is in the summary, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simreportd.events.models import LLMRequested, TokenUsage, ToolCallRequest

from ..findings.facts import RESULT_BLOCK, Facts
from ..findings.phrases import phrases_for
from ..findings.plan import analyst_outline, kind_of, tool_calls
from ..findings.statements import WRITERS
from ..llm.providers import Completion, estimate_tokens
from ..tools.tool_answers import PlanningContext, Seen, add_answer, answered
from .offline_chat import chat_reply

DATA_BLOCK = re.compile(r"<simulation_data>\n(.*?)\n</simulation_data>", re.S)
SECTION_LINE = re.compile(r"^Write section (\d+): (.+?)\. (.*)$", re.M)
QUOTED_REF = re.compile(r'^> ".*" \((\w+:\w+:\w+)\)$', re.M)


class OfflineProvider:
    name = "offline"

    async def context_window(self, model: str) -> int:
        """The offline writer reads any length: its conversations are never shortened."""
        return 1_000_000

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        if request.purpose == "chat":
            content, calls = chat_reply(request, messages)
        else:
            content, calls = _outline(messages) if request.purpose == "outline" else _section(request, messages)
        if request.protocol == "text" and calls:
            content = "".join(f'<tool_call>{json.dumps({"name": c.name, "parameters": c.arguments})}</tool_call>'
                              for c in calls[:1])
            calls = []
        elif request.protocol == "text":
            content = f"Final Answer: {content}"
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        usage = TokenUsage(prompt_tokens=prompt, completion_tokens=estimate_tokens(content), estimated=True)
        return Completion(content, calls, usage, "tool_calls" if calls else "stop")


# --- the outline ---------------------------------------------------------------------------------


def _outline(messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    blocks = DATA_BLOCK.findall(messages[-1]["content"])
    context = json.loads(blocks[-1].replace("<\\/simulation_data", "</simulation_data")) if blocks else {}
    title, summary, sections = analyst_outline(context)
    say = phrases_for(str(context.get("requirement") or ""))
    return json.dumps({"title": title, "summary": f"{summary} {say('note')}", "sections": sections}), []


# --- one section ---------------------------------------------------------------------------------


def _section(request: LLMRequested, messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    opening = next(m["content"] for m in messages if m["role"] == "user")
    match = SECTION_LINE.search(opening)
    kind = kind_of(match.group(2) if match else "", match.group(3) if match else "")
    blocks = [b.replace("<\\/simulation_data", "</simulation_data") for b in DATA_BLOCK.findall(opening)]
    requirement = blocks[0] if blocks else ""
    background: PlanningContext = json.loads(blocks[1]) if len(blocks) > 1 else {}
    seen = _observations(messages)
    done = answered(seen)
    plan = tool_calls(kind, background, requirement, seen)
    if request.tools and done < len(plan):
        name, args = plan[done]
        return "", [ToolCallRequest(id=f"{request.call_id}-t1", name=name, arguments=args)]
    facts = Facts(seen, background, requirement, set(QUOTED_REF.findall(opening)))
    return WRITERS[kind](facts), []


def _observations(messages: list[dict[str, Any]]) -> Seen:
    found: Seen = {}
    for message in messages:
        for name, body in RESULT_BLOCK.findall(str(message.get("content") or "")):
            try:
                add_answer(found, name, json.loads(body.replace("<\\/tool_result", "</tool_result")))
            except ValueError:
                continue
    return found
