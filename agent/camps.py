"""Camps read from what agents wrote: each camp's most repeated arguments, and who changed sides.

Pure. Statements with the same text once digits are masked ("a £7 charge", "a £12 charge")
make one argument. An argument's camp is the stance most common among its authors; an
agent whose statements, from some round on, all belong to one other camp changed sides.
Authors of a statement never vote on their own statement's camp.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

DIGITS, SPACES = re.compile(r"\d+"), re.compile(r"\s+")


class Statement(NamedTuple):
    """A post, quote or comment as the camps need it: its text only as its argument key. The ref and text of
    the few shown as examples are read back by row id: a dict per statement with its text took 320 MB for the
    473,082 statements of a run of a million actions."""

    kind: str
    round: int
    agent: int
    name: str
    stance: str
    key: str
    row: int


Row = tuple[int, str, int | None, str, int, str, str]  # row id, kind, round, content, agent, name, stance


@functools.lru_cache(maxsize=4096)  # the same texts repeat (a repost, a template)
def argument_key(text: str) -> str:
    """The text of a statement with digits masked and spaces folded: one key per argument."""
    return SPACES.sub(" ", DIGITS.sub("#", text.strip().lower()))


def statement(row: Row) -> Statement:
    row_id, kind, round_no, content, agent, name, stance = row
    return Statement(sys.intern(kind), round_no or 0, agent, name, stance, argument_key(content), row_id)


def camps_from_statements(rows: Iterable[Row], texts: Callable[[list[int]], dict[int, tuple[str, str]]],
                          top: int = 3) -> dict[str, Any]:
    """`arguments`: per camp its most repeated arguments; `stance_shifts`: agents who changed sides. `rows`
    come in (round, ref) order; `texts` reads the ref and text of statements by row id (for the examples)."""
    said = list(map(statement, rows))
    shifts = _shifts(said, _voices(said, set()))
    shifts = _shifts(said, _voices(said, _moved(shifts)))
    voices = _voices(said, _moved(shifts))
    arguments = _arguments(said, voices, top)
    stance_shifts = [{k: v for k, v in s.items() if not k.startswith("_")} for s in shifts]
    examples = [a["example"] for camp in arguments.values() for a in camp] + [s["example"] for s in stance_shifts]
    text_of = texts(sorted({e["_row"] for e in examples}))
    for example in examples:
        example["ref"], example["content"] = text_of.get(example.pop("_row"), ("", ""))
    return {"arguments": arguments, "stance_shifts": stance_shifts}


Said = list[Statement]  # in (round, ref) order
Voices = dict[str, set[tuple[int, str]]]  # per argument key, its distinct (author, stance spoken for)


def _moved(shifts: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """(agent, round) of what side-changers said after they changed: left out of the votes."""
    return {(s["agent_id"], r) for s in shifts for r in s["_rounds"]}


def _voices(said: Said, moved: set[tuple[int, int]]) -> Voices:
    """Per argument, its distinct authors with the stance each spoke for (side-changers' later words left out)."""
    authors: Voices = {}
    for s in said:
        if s.stance and (s.agent, s.round) not in moved:
            authors.setdefault(s.key, set()).add((s.agent, s.stance))
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
    for s in said:
        own = s.key in voices and (s.agent, s.stance) in voices[s.key]  # never a vote on one's own words
        asked = (s.key, s.stance if own else None)
        if (camp := camps.get(asked)) is None:
            camp = camps[asked] = _camp(tallies.get(s.key), asked[1])
        if camp:
            by_agent.setdefault(s.agent, []).append((s, camp))
    out: list[dict[str, Any]] = []
    for agent, placed in sorted(by_agent.items()):
        stated = placed[0][0].stance
        first = next((i for i, (_, camp) in enumerate(placed) if camp != stated), None)
        later = placed[first:] if first is not None else []
        spoken_for = {camp for _, camp in later}
        if len(later) >= 2 and len(spoken_for) == 1 and later[0][0].round > 0:
            example = later[0][0]
            out.append({"agent": f"agent:{agent}", "agent_id": agent, "name": example.name, "stated_stance": stated,
                        "now_speaks_for": spoken_for.pop(), "from_round": example.round, "statements_after": len(later),
                        "statements_before": first, "example": _example(example),
                        "_rounds": sorted({s.round for s, _ in later})})
    for shift in out:
        shift["_rounds"] = list(range(shift["from_round"], max(shift["_rounds"]) + 1))
    return out


def _arguments(said: Said, voices: Voices, top: int) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[Statement]] = {}
    for s in said:
        if s.kind in ("post", "quote"):
            groups.setdefault(s.key, []).append(s)
    ranked: dict[str, list[dict[str, Any]]] = {}
    tallies = _tallies(voices)
    for key, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        camp = _camp(tallies.get(key))
        if camp and len(ranked.setdefault(camp, [])) < top:
            first = items[0]  # in (round, ref) order already
            ranked[camp].append({"statements": len(items), "authors": len({s.agent for s in items}),
                                 "example": {**_example(first), "agent": f"agent:{first.agent}", "name": first.name}})
    return {camp: ranked[camp] for camp in sorted(ranked) if ranked[camp]}


def _example(s: Statement) -> dict[str, Any]:
    """An example: its ref and text, once read by its row id (`_row`)."""
    return {"ref": "", "content": "", "_row": s.row}
