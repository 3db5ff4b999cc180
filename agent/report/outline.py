"""A report outline derived from the simulation context alone.

Used when the model cannot produce a valid outline, and by the offline writer. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..findings.phrases import ENGLISH, Phrases


def topic_of(context: Mapping[str, Any]) -> str:
    """The simulation's subject in a few words: its first hot topic, else the start of its requirement."""
    topics = context.get("hot_topics") or []
    if topics:
        return str(topics[0])
    requirement = str(context.get("requirement") or "the simulated debate")
    return requirement.split("?")[0][:60]


def run_summary(context: dict[str, Any], say: Phrases = ENGLISH) -> str:
    """The line under a report's title: how many actions, agents, rounds and platforms, and the question."""
    names = [p.capitalize() for p in sorted(context.get("platforms") or {})]
    return say("summary", actions=context.get("total_actions", 0), agents=context.get("agents_count", 0),
               rounds=context.get("rounds", 0), platforms=say.listing(names) or say("no_platform"),
               requirement=context.get("requirement") or say("no_question"))


def fallback_outline(context: dict[str, Any]) -> tuple[str, str, list[dict[str, str]]]:
    """(title, summary, sections) that answer the requirement from the data's own shape."""
    topic = topic_of(context)
    platforms = sorted((context.get("platforms") or {}).keys())
    title = f"{topic[:1].upper() + topic[1:]}: how the simulated debate unfolded"
    summary = run_summary(context)
    sections = [
        {"title": "How the conversation moved, round by round",
         "description": "Volume per round and platform, the turning points and what set them off."},
        {"title": "The camps and their strongest arguments",
         "description": "Which stances formed, what each camp argued, in the agents' own words."},
        {"title": "Who drove the debate",
         "description": "The most active and most engaged-with agents and the interaction chains between them."},
    ]
    if len(platforms) > 1:
        sections.insert(2, {"title": "Where Twitter and Reddit parted ways",
                            "description": "Platform divergence overall and by round, and what each platform "
                                           "kept talking about."})
    return title, summary, sections
