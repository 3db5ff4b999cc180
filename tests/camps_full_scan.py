"""The camps as a full scan finds them: every statement read in (round, ref) order, each placed on its own.

The reference that `agent/tools/camps.py` (which reads the fold's tally per agent and argument) must match:
it is how the camps were found before the fold kept a tally, and what the docs define them as.
"""

from __future__ import annotations

import sqlite3
from typing import Any, NamedTuple

from simreportd.agent.tools.camps import MAX_READINGS, Voices, _camp, _tallies
from simreportd.projections.tallies import argument_key


class Statement(NamedTuple):
    kind: str
    round: int
    agent: int
    name: str
    stance: str
    key: str
    ref: str
    content: str


def statements(conn: sqlite3.Connection, key: tuple[str, int]) -> list[Statement]:
    """Every post, quote and comment of the run, by round then ref, with its author's name and stance."""
    rows = conn.execute(
        "SELECT p.kind, coalesce(p.round, 0), p.agent_id, coalesce(a.name, ''), coalesce(a.stance, ''), p.ref,"
        " p.content FROM sim_posts p LEFT JOIN sim_agents a ON a.simulation_id = p.simulation_id"
        " AND a.generation = p.generation AND a.agent_id = p.agent_id WHERE p.simulation_id = ? AND p.generation = ?"
        " AND p.kind IN ('post', 'quote', 'comment') AND p.content != '' ORDER BY coalesce(p.round, 0), p.ref, p.id",
        key)
    return [Statement(kind, r, agent, name, stance, argument_key(content), ref, content)
            for kind, r, agent, name, stance, ref, content in rows]


def camps(said: list[Statement], top: int = 3) -> dict[str, Any]:
    shifts: list[dict[str, Any]] = []
    left_out: dict[int, dict[str, Any]] = {}
    for _ in range(MAX_READINGS):  # until a reading finds no one new, as the tally's does
        shifts = _shifts(said, _voices(said, _moved(list(left_out.values()))))
        new = any(s["agent_id"] not in left_out for s in shifts)
        left_out.update((s["agent_id"], s) for s in shifts)
        if not new:
            break
    voices = _voices(said, _moved(shifts))
    return {"arguments": _arguments(said, voices, top),
            "stance_shifts": [{k: v for k, v in s.items() if not k.startswith("_")} for s in shifts]}


def _moved(shifts: list[dict[str, Any]]) -> set[tuple[int, int]]:
    return {(s["agent_id"], r) for s in shifts for r in s["_rounds"]}


def _voices(said: list[Statement], moved: set[tuple[int, int]]) -> Voices:
    authors: Voices = {}
    for s in said:
        if s.stance and (s.agent, s.round) not in moved:
            authors.setdefault(s.key, set()).add((s.agent, s.stance))
    return authors


def _shifts(said: list[Statement], voices: Voices) -> list[dict[str, Any]]:
    by_agent: dict[int, list[tuple[Statement, str]]] = {}
    tallies = _tallies(voices)
    for s in said:
        own = s.key in voices and (s.agent, s.stance) in voices[s.key]
        if camp := _camp(tallies.get(s.key), s.stance if own else None):
            by_agent.setdefault(s.agent, []).append((s, camp))
    out: list[dict[str, Any]] = []
    for agent, placed in sorted(by_agent.items()):
        stated = placed[0][0].stance
        first = next((i for i, (_, camp) in enumerate(placed) if camp != stated), None)
        later = placed[first:] if first is not None else []
        spoken_for = {camp for _, camp in later}
        if len(later) >= 2 and len(spoken_for) == 1 and later[0][0].round > 0:
            example = later[0][0]
            held = placed[first - 1][0].round if first else -1  # the last statement for their own stance
            rounds = [s.round for s, _ in later]
            out.append({"agent": f"agent:{agent}", "agent_id": agent, "name": example.name, "stated_stance": stated,
                        "now_speaks_for": spoken_for.pop(), "from_round": example.round, "statements_after": len(later),
                        "statements_before": first, "example": {"ref": example.ref, "content": example.content},
                        "_rounds": list(range(min(held + 1, example.round), max(rounds) + 1))})
    return out


def _arguments(said: list[Statement], voices: Voices, top: int) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[Statement]] = {}
    for s in said:
        if s.kind in ("post", "quote"):
            groups.setdefault(s.key, []).append(s)
    ranked: dict[str, list[dict[str, Any]]] = {}
    tallies = _tallies(voices)
    for key, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        camp = _camp(tallies.get(key))
        if camp and len(ranked.setdefault(camp, [])) < top:
            first = items[0]
            ranked[camp].append({"statements": len(items), "authors": len({s.agent for s in items}),
                                 "example": {"ref": first.ref, "content": first.content,
                                             "agent": f"agent:{first.agent}", "name": first.name}})
    return {camp: ranked[camp] for camp in sorted(ranked) if ranked[camp]}
