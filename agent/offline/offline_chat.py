"""The offline writer's chat answers: the tools the question calls for, then an answer written only from
what they returned (figures with their baselines, verbatim quotes with their ids), saying it was
answered without a language model. Pure and deterministic, like the rest of the offline writer.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from simreportd.events.models import LLMRequested, ToolCallRequest

from ..chat.chat_prompts import BACKGROUND, QUESTION_TAG
from ..findings.facts import RESULT_BLOCK, Facts, quote, who
from ..findings.statements import agent_profile, camp_arguments, coalitions, divergence_sentence, reacted_to, stance_shifts
from ..tools.tool_answers import PlanningContext, Seen, add_answer, answered

QUESTION = re.compile(rf"<{QUESTION_TAG}>\n(.*?)\n</{QUESTION_TAG}>", re.S)
BACKGROUND_BLOCK = re.compile(rf'<simulation_data kind="{BACKGROUND}">\n(.*?)\n</simulation_data>', re.S)
AGENT = re.compile(r"\bagent[:\s#]*(\d+)\b", re.I)
TOPICS = {  # what a question asks about, by its words (English and Chinese), and the tool that answers it
    "platforms": ("twitter", "reddit", "platform", "diverg", "平台"),
    "timeline": ("round", "spike", "turning", "when", "peak", "busiest", "轮", "峰"),
    "sides": ("mind", "side", "chang", "shift", "switch", "camp", "stance", "立场", "阵营"),
    "groups": ("coalition", "group", "follow", "together", "alliance", "联盟", "互相关注"),
    "reactions": ("react", "attention", "most engag", "responded to", "受关注", "关注最多", "回应最多", "反应最多", "互动最多"),
    "concerns": ("concern", "worr", "argument", "fear", "担忧", "观点", "顾虑", "论点", "担心"),
    "drivers": ("who", "active", "influen", "drove", "engag", "谁"),
}


def chat_reply(request: LLMRequested, messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    """The next tool call the question needs, or the answer once every planned call has returned."""
    asked = _last_question(messages)
    question = asked[1] if asked else ""
    seen = _results_since(messages, asked[0] if asked else 0)
    background = _background(messages)
    plan = tool_calls(question)
    done = answered(seen)
    if request.tools and done < len(plan):
        name, args = plan[done]
        return "", [ToolCallRequest(id=f"{request.call_id}-t1", name=name, arguments=args)]
    return answer(question, Facts(seen, background, question, set())), []  # worded in the question's language


def _last_question(messages: list[dict[str, Any]]) -> tuple[int, str] | None:
    for i in range(len(messages) - 1, -1, -1):
        found = QUESTION.findall(str(messages[i].get("content") or ""))
        if found and messages[i].get("role") == "user":
            return i, found[-1].replace(f"<\\/{QUESTION_TAG}", f"</{QUESTION_TAG}")
    return None


def _results_since(messages: list[dict[str, Any]], start: int) -> Seen:
    """The tool results that answer the latest question, by tool."""
    found: Seen = {}
    for message in messages[start:]:
        for name, body in RESULT_BLOCK.findall(str(message.get("content") or "")):
            try:
                add_answer(found, name, json.loads(body.replace("<\\/tool_result", "</tool_result")))
            except ValueError:
                add_answer(found, name, {})  # a tool error: the call was made, nothing to cite
    return found


def _background(messages: list[dict[str, Any]]) -> PlanningContext:
    for message in messages:
        if match := BACKGROUND_BLOCK.search(str(message.get("content") or "")):
            try:
                value = json.loads(match.group(1).replace("<\\/simulation_data", "</simulation_data"))
            except ValueError:
                return {}
            return cast(PlanningContext, value) if isinstance(value, dict) else {}
    return {}


def topics(question: str) -> list[str]:
    q = question.lower()
    return [name for name, words in TOPICS.items() if any(w in q for w in words)]


def tool_calls(question: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a question needs: analytics and a search on the question's own words, plus an agent's
    profile or the coalitions when asked (the offline writer's chat and guided chat make the same)."""
    calls: list[tuple[str, dict[str, Any]]] = [("simulation_analytics", {}),
                                               ("quick_search", {"query": question[:200] or "debate", "limit": 5})]
    if match := AGENT.search(question):
        calls.append(("agent_profile", {"agent": f"agent:{match.group(1)}"}))
    if "groups" in topics(question):
        calls.append(("coalitions", {}))
    return calls


def answer(question: str, f: Facts, lead: bool = True) -> str:
    """The answer: what the tools say about each thing the question asks, then what agents said (`lead`: first
    the line saying it was answered without a language model)."""
    say, used = f.say, sorted(f.seen)
    parts = [say("chat_lead", tools=", ".join(used) or say("chat_no_tools"))] if lead else []
    asked = topics(question)
    profile = (f.seen.get("agent_profile") or [{}])[0]
    general = not asked and not profile  # nothing in particular: the run's shape
    if "timeline" in asked or general:
        parts.append(_turning_point(f))
    if "platforms" in asked or general:
        parts.append(divergence_sentence(f) or _totals(f))
    if "sides" in asked:
        parts += stance_shifts(f)
    if "groups" in asked:
        parts.append(coalitions(f))
    if "reactions" in asked:
        parts.append(reacted_to(f))
    if "concerns" in asked:
        parts += camp_arguments(f, follow_up=False)
    if "drivers" in asked and ("reactions" not in asked or "activ" in question.lower() or "活跃" in question):
        parts.append(_active(f))
    parts.append(agent_profile(f))
    if statements := profile.get("latest_statements"):
        parts.append(say("chat_latest") + "\n\n" + quote(statements[0], say))
    if not asked:  # what the analysis answered is not padded with statements that only resemble the question
        parts.append(_matches(f))
    return "\n\n".join(p for p in parts if p)


def _matches(f: Facts) -> str:
    """What agents said that the search found for the question (or that it found nothing)."""
    if posts := f.posts()[:2]:
        return f.say("chat_matches") + "\n\n" + "\n\n".join(quote(p, f.say) for p in posts)
    return f.say("chat_no_match") if "quick_search" in f.seen else ""


def _turning_point(f: Facts) -> str:
    points = f.analytics.get("turning_points") or []
    if not points:
        busiest = f.analytics.get("busiest_round")
        return f.say("chat_busiest", round=busiest["round"], total=busiest["total"]) if busiest else ""
    p = points[0]
    return f.say("chat_turning", round=p["round"], volume=p["volume"], ratio=p["ratio"], mean=p["rolling_mean"])


def _totals(f: Facts) -> str:
    totals = f.analytics.get("actions_by_platform") or {}
    if not totals:
        return ""
    return f.say("chat_totals", total=f.analytics.get("total_actions", 0), twitter=totals.get("twitter", 0),
                 reddit=totals.get("reddit", 0))


def _active(f: Facts) -> str:
    active, say = f.analytics.get("most_active_agents") or [], f.say
    if not active:
        return ""
    return say("most_active", agents=say.listing(
        [say("active_agent", who=who(x), stance=say.stance(x["stance"]), actions=x["actions"], posts=x["posts"])
         for x in active[:3]]))
