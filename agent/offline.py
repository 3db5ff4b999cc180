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

from .offline_chat import chat_reply
from .offline_facts import RESULT_BLOCK, questions, spanned
from .offline_facts import Facts as Facts  # re-exported: agent/guided.py reads Facts and WRITERS here
from .offline_phrases import EN, ZH, phrases_for
from .offline_writers import WRITERS as WRITERS
from .offline_writers import largest_said
from .outline import run_summary, topic_of
from .providers import Completion, estimate_tokens
from .tool_answers import Analytics, PlanningContext, Seen, add_answer, answered

DATA_BLOCK = re.compile(r"<simulation_data>\n(.*?)\n</simulation_data>", re.S)
SECTION_LINE = re.compile(r"^Write section (\d+): (.+?)\. (.*)$", re.M)
QUOTED_REF = re.compile(r'^> ".*" \((\w+:\w+:\w+)\)$', re.M)
# What each kind of section is about, as its outline description says it (the dispatch key), in each language.
KINDS = {language: {kind: table[f"d_{kind}"] for kind in ("timeline", "camps", "platforms", "drivers", "answers")}
         for language, table in (("en", EN), ("zh", ZH))}


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


def analyst_outline(context: dict[str, Any]) -> tuple[str, str, list[dict[str, str]]]:
    """(title, summary, sections) shaped by this simulation: its trigger, its largest camp, its platforms; in the
    language of its requirement."""
    say = phrases_for(str(context.get("requirement") or ""))
    topic = topic_of(context)
    topic = topic[:1].upper() + topic[1:]
    event, rounds = reached_event(context), int(context.get("rounds") or 0)
    unreached = (context.get("scheduled_events") or [None])[0] if event is None else None
    stances = context.get("stances") or {}
    platforms = sorted((context.get("platforms") or {}).keys())
    title = say("title_event", topic=topic, round=event["round"]) if event else \
        say("title_before", topic=topic, rounds=rounds, round=unreached["round"]) if unreached else \
        say("title_plain", topic=topic)
    sections = [{"title": say("s_event", round=event["round"]) if event else say("s_rounds"),
                 "description": KINDS[say.language]["timeline"]},
                {"title": largest_said(stances, say, "s_camps_largest", "s_camps_tied") or say("s_camps"),
                 "description": KINDS[say.language]["camps"]}]
    if len(platforms) > 1:
        sections.append({"title": say("s_platforms"), "description": KINDS[say.language]["platforms"]})
    sections.append({"title": say("s_drivers"), "description": KINDS[say.language]["drivers"]})
    sections.append({"title": say("s_answers"), "description": KINDS[say.language]["answers"]})
    return title, run_summary(context, say), sections


def reached_event(context: dict[str, Any]) -> dict[str, Any] | None:
    """The run's first scheduled event if the rounds recorded have reached it: a partial report's run may
    not have, and a title must not promise what has not happened."""
    events = context.get("scheduled_events") or []
    return events[0] if events and events[0]["round"] <= int(context.get("rounds") or 0) else None


# --- one section ---------------------------------------------------------------------------------


def _section(request: LLMRequested, messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    opening = next(m["content"] for m in messages if m["role"] == "user")
    match = SECTION_LINE.search(opening)
    kind = _kind(match.group(2) if match else "", match.group(3) if match else "")
    blocks = [b.replace("<\\/simulation_data", "</simulation_data") for b in DATA_BLOCK.findall(opening)]
    requirement = blocks[0] if blocks else ""
    background: PlanningContext = json.loads(blocks[1]) if len(blocks) > 1 else {}
    seen = _observations(messages)
    done = answered(seen)
    plan = _plan(kind, background, requirement, seen)
    if request.tools and done < len(plan):
        name, args = plan[done]
        return "", [ToolCallRequest(id=f"{request.call_id}-t1", name=name, arguments=args)]
    facts = Facts(seen, background, requirement, set(QUOTED_REF.findall(opening)))
    return WRITERS[kind](facts), []


def _kind(title: str, description: str) -> str:
    """Which kind of section this is: by its description when the outline is ours, else by its title."""
    for kind, text in (*KINDS["en"].items(), *KINDS["zh"].items()):
        if description.startswith(text[:30]):
            return kind
    t = title.lower()
    for kind, words in (("answers", ("answer", "question", "conclusion")), ("camps", ("camp", "argument")),
                        ("platforms", ("twitter", "reddit", "platform")), ("drivers", ("who", "drove", "agent"))):
        if any(w in t for w in words):
            return kind
    return "timeline"


def _observations(messages: list[dict[str, Any]]) -> Seen:
    found: Seen = {}
    for message in messages:
        for name, body in RESULT_BLOCK.findall(str(message.get("content") or "")):
            try:
                add_answer(found, name, json.loads(body.replace("<\\/tool_result", "</tool_result")))
            except ValueError:
                continue
    return found


def _plan(kind: str, background: PlanningContext, requirement: str, seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a section makes, with queries drawn from its own topic (3 to 4: the default budget is 5, and
    a section that spends it all is asked for its last word in a conversation this writer cannot place)."""
    topics = list(background.get("hot_topics") or []) or [topic_of(background)]
    events = background.get("scheduled_events") or []
    trigger = events[0].get("description", "") if events else topics[0]
    analytics = (seen.get("simulation_analytics") or [{}])[0]
    if kind == "timeline":
        return [("simulation_analytics", {}), ("quick_search", {"query": trigger, "limit": 10}),
                ("panorama_search", {"query": topics[0]}), *_rise(analytics, background)]
    if kind == "camps":
        return [("simulation_analytics", {}), ("insight_forge", {"query": questions(requirement)[-1] if requirement
                                                                 else topics[0]}),
                ("coalitions", {}), ("interview_agents", {"interview_topic": topics[0], "max_agents": 4})]
    if kind == "platforms":
        return [("simulation_analytics", {}), ("panorama_search", {"query": trigger}),
                ("quick_search", {"query": " ".join(topics[2:4]) or topics[0], "limit": 6})]
    if kind == "drivers":
        engaged = analytics.get("most_engaged_agents") or [{}]
        shifts = (analytics.get("camps") or {}).get("stance_shifts") or []
        about = shifts[0]["example"]["content"] if shifts else topics[0]
        profile = [("agent_profile", {"agent": engaged[0]["ref"]})] if engaged[0] else []
        return [("simulation_analytics", {}), ("quick_search", {"query": engaged[0].get("name") or topics[0],
                                                                "limit": 10}),
                ("insight_forge", {"query": about}), *profile]
    asked: list[tuple[str, dict[str, Any]]] = [("quick_search", {"query": q, "limit": 5})
                                               for q in questions(requirement)[:4]]
    return [("simulation_analytics", {}), *asked, ("panorama_search", {"query": topics[0]})][:max(3, 1 + len(asked))]


def _rise(analytics: Analytics, background: PlanningContext) -> list[tuple[str, dict[str, Any]]]:
    """The `calculate` call for how much busier the pivot round was than the rounds before it, in percent."""
    f = Facts({"simulation_analytics": [analytics]}, background, "", set())
    row, before = f.at(f.pivot), f.side(after=False)
    total = sum(r["total"] for r in before)
    if row is None or not total:
        return []
    return [("calculate", {"expression": f"({row['total']} / {total} * {spanned(before)} - 1) * 100"})]
