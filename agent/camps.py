"""Camps read from what agents wrote: each camp's most repeated arguments, and who changed sides.

Pure. Statements with the same text once digits are masked ("a £7 charge", "a £12 charge")
make one argument. An argument's camp is the stance most common among its authors; an
agent whose statements, from some round on, all belong to one other camp changed sides.
Authors of a statement never vote on their own statement's camp.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

Statement = dict[str, Any]  # ref, kind, round, content, agent (id), name, stance (the profile's)


DIGITS, SPACES = re.compile(r"\d+"), re.compile(r"\s+")


@functools.lru_cache(maxsize=1 << 16)  # asked several times per statement, and arguments repeat
def argument_key(text: str) -> str:
    """The text of a statement with digits masked and spaces folded: one key per argument."""
    return SPACES.sub(" ", DIGITS.sub("#", text.strip().lower()))


def camps_from_statements(statements: list[Statement], top: int = 3) -> dict[str, Any]:
    """`arguments`: per camp its most repeated arguments; `stance_shifts`: agents who changed sides."""
    shifts = _shifts(statements, _voices(statements, set()))
    moved = {(s["agent_id"], r) for s in shifts for r in s["_rounds"]}
    shifts = _shifts(statements, _voices(statements, moved))
    voices = _voices(statements, {(s["agent_id"], r) for s in shifts for r in s["_rounds"]})
    return {"arguments": _arguments(statements, voices, top),
            "stance_shifts": [{k: v for k, v in s.items() if not k.startswith("_")} for s in shifts]}


def _voices(statements: list[Statement], moved: set[tuple[int, int]]) -> dict[str, Counter[tuple[int, str]]]:
    """Per argument, its distinct authors with the stance each spoke for (side-changers' later words left out)."""
    authors: dict[str, Counter[tuple[int, str]]] = {}
    for s in statements:
        if (s["agent"], s["round"]) not in moved and s["stance"]:
            authors.setdefault(argument_key(s["content"]), Counter())[(s["agent"], s["stance"])] = 1
    return authors


def _tallies(voices: dict[str, Counter[tuple[int, str]]]) -> dict[str, Counter[str]]:
    """Per argument, how many of its authors speak for each stance (counted once, not per statement)."""
    return {key: Counter(stance for _, stance in authors) for key, authors in voices.items()}


def _camp(votes: Counter[str] | None, abstaining: str | None = None) -> str:
    """The stance most of an argument's authors hold ('' when none, or a tie); `abstaining` is the stance
    of an author whose own statement is being placed: theirs is not counted."""
    best, top, tied = "", 0, False
    for stance, count in (votes or {}).items():
        count -= stance == abstaining
        if count > top:
            best, top, tied = stance, count, False
        elif count == top and count > 0:
            tied = True
    return "" if tied else best


def _shifts(statements: list[Statement], voices: dict[str, Counter[tuple[int, str]]]) -> list[dict[str, Any]]:
    by_agent: dict[int, list[tuple[Statement, str]]] = {}
    tallies = _tallies(voices)
    for s in sorted(statements, key=lambda s: (s["round"], s["ref"])):
        key = argument_key(s["content"])
        votes = tallies.get(key)
        own = votes is not None and (s["agent"], s["stance"]) in voices[key]  # never a vote on one's own words
        camp = _camp(votes, s["stance"] if own else None)
        if camp:
            by_agent.setdefault(s["agent"], []).append((s, camp))
    out = []
    for agent, said in sorted(by_agent.items()):
        stated = said[0][0]["stance"]
        first = next((i for i, (_, camp) in enumerate(said) if camp != stated), None)
        later = said[first:] if first is not None else []
        camps = {camp for _, camp in later}
        if len(later) >= 2 and len(camps) == 1 and later[0][0]["round"] > 0:
            example = later[0][0]
            out.append({"agent": f"agent:{agent}", "agent_id": agent, "name": example["name"], "stated_stance": stated,
                        "now_speaks_for": camps.pop(), "from_round": example["round"], "statements_after": len(later),
                        "statements_before": first, "example": {"ref": example["ref"], "content": example["content"]},
                        "_rounds": sorted({s["round"] for s, _ in later})})
    for s in out:
        s["_rounds"] = [r for r in range(s["from_round"], max(s["_rounds"]) + 1)]
    return out


def _arguments(statements: list[Statement], voices: dict[str, Counter[tuple[int, str]]],
               top: int) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[Statement]] = {}
    for s in statements:
        if s["kind"] in ("post", "quote"):
            groups.setdefault(argument_key(s["content"]), []).append(s)
    ranked: dict[str, list[dict[str, Any]]] = {}
    tallies = _tallies(voices)
    for key, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        camp = _camp(tallies.get(key))
        if camp and len(ranked.setdefault(camp, [])) < top:
            first = min(items, key=lambda s: (s["round"], s["ref"]))
            ranked[camp].append({"statements": len(items), "authors": len({s["agent"] for s in items}),
                                 "example": {"ref": first["ref"], "content": first["content"],
                                             "agent": f"agent:{first['agent']}", "name": first["name"]}})
    return {camp: ranked[camp] for camp in sorted(ranked) if ranked[camp]}
