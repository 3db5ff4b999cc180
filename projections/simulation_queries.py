"""Reads of the simulation model (its tables are in simulation.py): one function per question.

Every reader outside the agent's tools (the HTTP API, the CLI, interviews, the chart) asks here,
so a change of the simulation tables touches this module and the fold, nothing else.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .runner import rows_as_dicts

Key = tuple[str, int]  # (simulation_id, generation)


def simulations(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every simulation generation with its totals, platform states, rejections and environment."""
    rows = rows_as_dicts(conn.execute(
        "SELECT g.simulation_id, g.generation, g.status, g.requirement, g.all_rounds_ran, g.folder,"
        " (SELECT coalesce(sum(actions), 0) FROM sim_platforms p WHERE p.simulation_id = g.simulation_id"
        "  AND p.generation = g.generation) AS actions,"
        " (SELECT json_group_object(platform, status) FROM sim_platforms p WHERE p.simulation_id = g.simulation_id"
        "  AND p.generation = g.generation) AS platforms,"
        " (SELECT count(*) FROM sim_rejections r WHERE r.simulation_id = g.simulation_id) AS rejections,"
        " (SELECT status FROM sim_env e WHERE e.simulation_id = g.simulation_id) AS environment"
        " FROM sim_generations g ORDER BY g.simulation_id, g.generation"))
    for row in rows:
        row["platforms"] = json.loads(row["platforms"] or "{}")
    return rows


def latest_generation(conn: sqlite3.Connection, simulation_id: str) -> tuple[int, str] | None:
    """(generation, folder) of the simulation's newest generation, or None if it is unknown."""
    row = conn.execute("SELECT generation, folder FROM sim_generations WHERE simulation_id = ?"
                       " ORDER BY generation DESC LIMIT 1", (simulation_id,)).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def rounds(conn: sqlite3.Connection, key: Key) -> list[tuple[str, int, int]]:
    """(platform, round, actions) of one generation, in round order."""
    return [(str(p), int(r), int(a or 0)) for p, r, a in conn.execute(
        "SELECT platform, round, actions FROM sim_rounds WHERE simulation_id = ? AND generation = ?"
        " ORDER BY round, platform", key)]


def rejections(conn: sqlite3.Connection) -> int:
    """Lines and rows ingest refused, over every simulation."""
    return int(conn.execute("SELECT count(*) FROM sim_rejections").fetchone()[0])


def agents_by_activity(conn: sqlite3.Connection, key: Key) -> list[int]:
    """Agent ids, the most active first."""
    return [int(r[0]) for r in conn.execute(
        "SELECT agent_id FROM sim_activity WHERE simulation_id = ? AND generation = ? GROUP BY agent_id"
        " ORDER BY sum(actions) DESC, agent_id", key)]


def agent_stances(conn: sqlite3.Connection, key: Key) -> dict[int, dict[str, Any]]:
    """{agent_id: {agent_id, name, stance}} for every agent of the generation."""
    return {r[0]: {"agent_id": r[0], "name": r[1], "stance": r[2] or ""} for r in conn.execute(
        "SELECT agent_id, name, stance FROM sim_agents WHERE simulation_id = ? AND generation = ?", key)}


def agent_profile(conn: sqlite3.Connection, key: Key, agent_id: int) -> dict[str, Any] | None:
    """One agent's name, stance, entity type, bio and persona, or None if the generation has no such agent."""
    row = conn.execute("SELECT name, stance, entity_type, bio, persona FROM sim_agents WHERE simulation_id = ?"
                       " AND generation = ? AND agent_id = ?", (*key, agent_id)).fetchone()
    return dict(zip(("name", "stance", "entity_type", "bio", "persona"), row, strict=True)) if row else None


def agent_id_range(conn: sqlite3.Connection, key: Key) -> tuple[int | None, int | None]:
    """The lowest and highest agent id of the generation (for a message naming the valid ones)."""
    low, high = conn.execute("SELECT min(agent_id), max(agent_id) FROM sim_agents WHERE simulation_id = ?"
                             " AND generation = ?", key).fetchone()
    return low, high


def latest_statements(conn: sqlite3.Connection, key: Key, agent_id: int, limit: int = 3) -> list[dict[str, Any]]:
    """An agent's newest posts, quotes and comments: ref, content, round."""
    return rows_as_dicts(conn.execute(
        "SELECT ref, content, round FROM sim_posts WHERE simulation_id = ? AND generation = ? AND agent_id = ?"
        " AND kind IN ('post', 'quote', 'comment') ORDER BY round DESC, id DESC LIMIT ?", (*key, agent_id, limit)))


def is_known(conn: sqlite3.Connection, simulation_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sim_generations WHERE simulation_id = ?", (simulation_id,)).fetchone() is not None
