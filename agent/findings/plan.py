"""The plan of a report: its outline shaped by the run, which kind of section each is, and the tool calls a
section makes to gather its facts.

Pure. The offline writer follows this plan in its conversation; guided mode runs it itself.
"""

from __future__ import annotations

from typing import Any

from ..report.outline import run_summary, topic_of
from ..tools.tool_answers import Analytics, PlanningContext, Seen
from .facts import Facts, questions, spanned
from .phrases import EN, ZH, phrases_for
from .statements import largest_said

# What each kind of section is about, as its outline description says it (the dispatch key), in each language.
KINDS = {language: {kind: table[f"d_{kind}"] for kind in ("timeline", "camps", "platforms", "drivers", "answers")}
         for language, table in (("en", EN), ("zh", ZH))}
ToolCall = tuple[str, dict[str, Any]]


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


def kind_of(title: str, description: str) -> str:
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


def tool_calls(kind: str, background: PlanningContext, requirement: str, seen: Seen) -> list[ToolCall]:
    """The tool calls a section makes, with queries drawn from its own topic (3 to 4: the default budget is 5, and
    a section that spends it all is asked for its last word in a conversation the offline writer cannot place)."""
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
    asked: list[ToolCall] = [("quick_search", {"query": q, "limit": 5}) for q in questions(requirement)[:4]]
    return [("simulation_analytics", {}), *asked, ("panorama_search", {"query": topics[0]})][:max(3, 1 + len(asked))]


def _rise(analytics: Analytics, background: PlanningContext) -> list[ToolCall]:
    """The `calculate` call for how much busier the pivot round was than the rounds before it, in percent."""
    f = Facts({"simulation_analytics": [analytics]}, background, "", set())
    row, before = f.at(f.pivot), f.side(after=False)
    total = sum(r["total"] for r in before)
    if row is None or not total:
        return []
    return [("calculate", {"expression": f"({row['total']} / {total} * {spanned(before)} - 1) * 100"})]
