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
    said = sorted(((s, argument_key(s["content"])) for s in statements), key=lambda sk: (sk[0]["round"], sk[0]["ref"]))
    shifts = _shifts(said, _voices(said, set()))
    shifts = _shifts(said, _voices(said, _moved(shifts)))
    voices = _voices(said, _moved(shifts))
    return {"arguments": _arguments(said, voices, top),
            "stance_shifts": [{k: v for k, v in s.items() if not k.startswith("_")} for s in shifts]}


Said = list[tuple[Statement, str]]  # statements with their argument key, in (round, ref) order
Voices = dict[str, set[tuple[int, str]]]  # per argument key, its distinct (author, stance spoken for)


def _moved(shifts: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """(agent, round) of what side-changers said after they changed: left out of the votes."""
    return {(s["agent_id"], r) for s in shifts for r in s["_rounds"]}


def _voices(said: Said, moved: set[tuple[int, int]]) -> Voices:
    """Per argument, its distinct authors with the stance each spoke for (side-changers' later words left out)."""
    authors: Voices = {}
    for s, key in said:
        if s["stance"] and (s["agent"], s["round"]) not in moved:
            authors.setdefault(key, set()).add((s["agent"], s["stance"]))
    return authors


def _tallies(voices: Voices) -> dict[str, Counter[str]]:
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


def _shifts(said: Said, voices: Voices) -> list[dict[str, Any]]:
    by_agent: dict[int, list[tuple[Statement, str]]] = {}
    tallies = _tallies(voices)
    camps: dict[tuple[str, str | None], str] = {}  # (argument, abstaining stance) -> camp: asked per statement
    for s, key in said:
        own = key in voices and (s["agent"], s["stance"]) in voices[key]  # never a vote on one's own words
        asked = (key, s["stance"] if own else None)
        if (camp := camps.get(asked)) is None:
            camp = camps[asked] = _camp(tallies.get(key), asked[1])
        if camp:
            by_agent.setdefault(s["agent"], []).append((s, camp))
    out = []
    for agent, placed in sorted(by_agent.items()):
        stated = placed[0][0]["stance"]
        first = next((i for i, (_, camp) in enumerate(placed) if camp != stated), None)
        later = placed[first:] if first is not None else []
        spoken_for = {camp for _, camp in later}
        if len(later) >= 2 and len(spoken_for) == 1 and later[0][0]["round"] > 0:
            example = later[0][0]
            out.append({"agent": f"agent:{agent}", "agent_id": agent, "name": example["name"], "stated_stance": stated,
                        "now_speaks_for": spoken_for.pop(), "from_round": example["round"], "statements_after": len(later),
                        "statements_before": first, "example": {"ref": example["ref"], "content": example["content"]},
                        "_rounds": sorted({s["round"] for s, _ in later})})
    for s in out:
        s["_rounds"] = [r for r in range(s["from_round"], max(s["_rounds"]) + 1)]
    return out


def _arguments(said: Said, voices: Voices, top: int) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[Statement]] = {}
    for s, key in said:
        if s["kind"] in ("post", "quote"):
            groups.setdefault(key, []).append(s)
    ranked: dict[str, list[dict[str, Any]]] = {}
    tallies = _tallies(voices)
    for key, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        camp = _camp(tallies.get(key))
        if camp and len(ranked.setdefault(camp, [])) < top:
            first = items[0]  # in (round, ref) order already
            ranked[camp].append({"statements": len(items), "authors": len({s["agent"] for s in items}),
                                 "example": {"ref": first["ref"], "content": first["content"],
                                             "agent": f"agent:{first['agent']}", "name": first["name"]}})
    return {camp: ranked[camp] for camp in sorted(ranked) if ranked[camp]}
