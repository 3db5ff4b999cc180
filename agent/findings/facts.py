"""The facts of a section: the tools' results read as `Facts`, and the phrasing of an agent, a quote, rounds.

Shared by the statements (findings/statements.py), the offline writer, guided mode and chat.
"""

from __future__ import annotations

import re

from simreportd.events.base import Platform

from ..tools.tool_answers import Analytics, Camps, Named, PlanningContext, RoundRow, ScheduledEvent, Seen, Statement
from .phrases import ENGLISH, Phrases, phrases_for

RESULT_BLOCK = re.compile(r'<tool_result name="(\w+)">\n(.*?)\n</tool_result>', re.S)


class Facts:
    """What the tools returned for a section, with the derived figures every writer needs."""

    def __init__(self, seen: Seen, background: PlanningContext, requirement: str,
                 quoted_before: set[str]) -> None:
        self.seen, self.background, self.requirement, self.quoted_before = seen, background, requirement, quoted_before
        self.say = phrases_for(requirement)  # the report is written in the requirement's language
        self.analytics: Analytics = (seen.get("simulation_analytics") or [{}])[0]
        self.rounds: list[RoundRow] = [r for r in self.analytics.get("per_round", [])]
        self.camps: Camps = self.analytics.get("camps") or {}
        events = background.get("scheduled_events") or []
        points = self.analytics.get("turning_points") or []
        busiest = self.analytics.get("busiest_round")
        last = max((last_round(r) for r in self.rounds), default=None)
        # A partial report's run may not have reached its scheduled event yet: then it is no pivot.
        self.event: ScheduledEvent | None = events[0] if events and (last is None or events[0]["round"] <= last) else None
        self.unreached = events[0] if events and self.event is None else None
        self.pivot: int | None = (self.event["round"] if self.event else points[0]["round"] if points
                                  else busiest["round"] if busiest else None)

    def posts(self) -> list[Statement]:
        """Every statement the searches returned, once each, fresh ones (not quoted by earlier sections) first."""
        found: dict[str, Statement] = {}
        for search in self.seen.get("quick_search", []):
            for post in search.get("results", []):
                found.setdefault(post["ref"], post)
        for forge in self.seen.get("insight_forge", []):
            for finding in forge.get("sub_questions", []):
                for post in finding.get("evidence", []):
                    found.setdefault(post["ref"], post)
        for panorama in self.seen.get("panorama_search", []):
            for post in panorama.get("current_statements", []) + [t["first"] for t in panorama.get("timeline", [])]:
                found.setdefault(post["ref"], post)
        usable = [p for p in found.values() if p.get("kind") in ("post", "quote", "comment") and p.get("content")]
        return sorted(usable, key=lambda p: p["ref"] in self.quoted_before)

    def at(self, round_no: int | None) -> RoundRow | None:
        """The row of exactly that round; None if a long run's rows sum it into a span with others."""
        return next((r for r in self.rounds if r["round"] == round_no and last_round(r) == round_no), None)

    def volume_at(self, round_no: int | None) -> int | None:
        """The actions of exactly that round: its row, or, where a long run's rows sum spans, the busiest round's
        or a turning point's figure when it is that round."""
        row, busiest = self.at(round_no), self.analytics.get("busiest_round")
        if row is not None:
            return int(row["total"])
        if busiest and busiest["round"] == round_no and last_round(busiest) == round_no:
            return int(busiest["total"])
        return next((int(p["volume"]) for p in self.analytics.get("turning_points") or [] if p["round"] == round_no),
                    None)

    def side(self, after: bool) -> list[RoundRow]:
        """The rows wholly after the pivot, or wholly before it (round 0 left out): a span of rounds that
        holds the pivot belongs to neither."""
        if self.pivot is None:
            return []
        pivot = self.pivot
        return [r for r in self.rounds if (r["round"] > pivot if after else 0 < r["round"] and last_round(r) < pivot)]

    def means(self, platform: Platform, after: bool) -> tuple[float, int]:
        """Mean actions per round on a platform after the pivot (or before it), and the rounds."""
        rows = self.side(after)
        return (round(sum(r[platform] for r in rows) / spanned(rows), 2) if rows else 0.0), spanned(rows)

    def loud(self) -> tuple[Platform, Platform]:
        """(the platform busier after the pivot, the other one)."""
        tw, rd = self.means("twitter", True)[0], self.means("reddit", True)[0]
        return ("reddit", "twitter") if rd >= tw else ("twitter", "reddit")


def cap(platform: str) -> str:
    """A platform's name as a sentence shows it."""
    return platform.capitalize()


def who(agent: Named) -> str:
    """An agent as the text names it: its name and, opened, its ref."""
    return f"{agent.get('name') or agent['ref']} ({agent['ref']}"


def quote(post: Statement, say: Phrases = ENGLISH) -> str:
    """A post quoted verbatim with who said it, their stance, the round and the platform."""
    agent = post["agent"]
    return (say("quote_lead", who=who(agent), stance=say.stance(agent["stance"]) or say("no_stance"),
                round=post["round"], platform=cap(post["platform"]))
            + f"\n\n> \"{post['content']}\" ({post['ref']})")


def listing(items: list[str], say: Phrases = ENGLISH) -> str:
    """Items joined as the report's language lists them."""
    return say.listing(items)


def last_round(row: RoundRow) -> int:
    """The last round a per-round row counts (rows of long runs sum spans of rounds)."""
    return int(row.get("last_round", row["round"]))


def spanned(rows: list[RoundRow]) -> int:
    """How many rounds the rows count."""
    return sum(last_round(r) - r["round"] + 1 for r in rows)


def covered(rows: list[RoundRow], say: Phrases) -> str:
    """`rounds A-B` for the rows' rounds."""
    return say.rounds(rows[0]["round"], last_round(rows[-1]))


def camp_sizes(background: PlanningContext, say: Phrases) -> str:
    """Each camp with its size, largest first."""
    stances = background.get("stances") or {}
    ordered = sorted((s for s in stances if s), key=lambda s: (-stances[s], s))
    return say.listing([say.camp_size(stances[s], s) for s in ordered])


def questions(requirement: str) -> list[str]:
    """The requirement's questions, one by one ('How ..., which ..., and how ...?' is three)."""
    parts = re.split(r"[?？]\s*|,\s*(?:and\s+)?(?=(?:which|what|how|where|who|why|when)\b)", requirement)
    out = [p.strip().rstrip(",") for p in parts if len(p.strip()) > 3]
    return [q[:1].upper() + q[1:] + ("？" if re.search(r"[\u4e00-\u9fff]", q) else "?") for q in out]
