"""Reads of one simulation run in the shapes of MiroFish's simulation API (docs/formats.md#simulation-routes).

MiroFish answers these from the simulation's own files (`backend/app/api/simulation.py`, and
`SimulationState`, `SimulationRunState`, `AgentAction` in `backend/app/services/`); we answer from
what ingest recorded: the simulation model's tables (simulation.py) and, for what needs every
action, the `AgentActed` events of the run, summarised here by pure functions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from .simulation_queries import KEY, Key, platforms, setup
from .sqlite import rows_as_dicts

PLATFORMS = ("twitter", "reddit")
# Our platform states -> MiroFish's (`SimulationState.twitter_status`, `SimulationStatus`)
PLATFORM_STATUS = {"running": "running", "finished": "completed"}


def _config_id(config: dict[str, Any], simulation_id: str) -> str:
    """The id MiroFish knows the simulation by: its config's `simulation_id`, else our id (the folder's name)."""
    return str(config.get("simulation_id") or simulation_id)


def info(conn: sqlite3.Connection, key: Key) -> dict[str, Any] | None:
    """`SimulationState.to_dict()` of the run, or None if it is unknown."""
    row = conn.execute(f"SELECT status, config FROM sim_generations WHERE {KEY}", key).fetchone()
    if row is None:
        return None
    config = json.loads(row[1] or "{}")
    states = {p: s for p, s in conn.execute(f"SELECT platform, status FROM sim_platforms WHERE {KEY}", key)}
    agents, types = conn.execute(f"SELECT count(*), json_group_array(DISTINCT entity_type) FROM sim_agents"
                                 f" WHERE {KEY} AND entity_type != ''", key).fetchone()
    total = conn.execute(f"SELECT count(*) FROM sim_agents WHERE {KEY}", key).fetchone()[0]
    return {"simulation_id": _config_id(config, key[0]), "project_id": config.get("project_id", ""),
            "graph_id": config.get("graph_id", ""),
            **{f"enable_{p}": p in states for p in PLATFORMS},
            "status": "completed" if row[0] == "completed" else "running",
            "entities_count": total, "profiles_count": total, "entity_types": json.loads(types) if agents else [],
            "config_generated": True, "config_reasoning": "", "current_round": current_round(conn, key),
            **{f"{p}_status": PLATFORM_STATUS.get(states.get(p, ""), "not_started") for p in PLATFORMS},
            "created_at": None, "updated_at": None, "error": None}


def current_round(conn: sqlite3.Connection, key: Key, platform: str | None = None) -> int:
    """The last round seen (of one platform, or of any)."""
    row = conn.execute(f"SELECT max(round) FROM sim_rounds WHERE {KEY} AND (?3 IS NULL OR platform = ?3)",
                       (*key, platform)).fetchone()
    return int(row[0] or 0)


def profiles(conn: sqlite3.Connection, key: Key, platform: str) -> list[dict[str, Any]]:
    """The agents as MiroFish's profile files give them: `reddit_profiles.json`'s fields, or for Twitter
    `twitter_profiles.csv`'s columns; in agent-id order, as the frontend numbers them."""
    rows = rows_as_dicts(conn.execute(
        "SELECT agent_id AS user_id, username, name, bio, persona, profession, stance, entity_type"
        f" FROM sim_agents WHERE {KEY} ORDER BY agent_id", key))
    if platform == "twitter":
        return [{"user_id": r["user_id"], "name": r["name"], "username": r["username"], "user_char": r["persona"],
                 "description": r["bio"]} for r in rows]
    return rows


def config(conn: sqlite3.Connection, key: Key) -> dict[str, Any] | None:
    """The simulation_config.json as ingest kept it: its summary, requirement and each agent's settings."""
    found = setup(conn, key)
    if found is None:
        return None
    requirement, summary = found
    agents = [{"agent_id": a, "entity_name": n, "entity_type": t, "stance": s, "influence_weight": w}
              for a, n, t, s, w in conn.execute(f"SELECT agent_id, name, entity_type, stance, influence FROM sim_agents"
                                                f" WHERE {KEY} ORDER BY agent_id", key)]
    events: dict[str, Any] = {k: summary[k] for k in ("hot_topics", "narrative_direction", "scheduled_events")
                              if k in summary}
    kept: dict[str, Any] = {k: summary[k] for k in ("project_id", "graph_id", "time_config", "llm_model") if k in summary}
    return {"simulation_id": _config_id(summary, key[0]), **kept, "simulation_requirement": requirement,
            "agent_configs": agents, "event_config": events}


def total_rounds(summary: dict[str, Any], announced: Iterable[int | None]) -> int:
    """The rounds the run was to have: as its platforms announced them, else its time_config's hours."""
    known = [r for r in announced if r]
    if known:
        return max(known)
    time_config = summary.get("time_config") or {}
    hours, minutes = time_config.get("total_simulation_hours") or 0, time_config.get("minutes_per_round") or 60
    return int(hours * 60 / max(minutes, 1)) if isinstance(hours, int | float) and isinstance(minutes, int) else 0


def run_status(conn: sqlite3.Connection, key: Key) -> dict[str, Any]:
    """`SimulationRunState.to_dict()` of the run, from its rounds, platforms and environment."""
    found = setup(conn, key)
    summary = found[1] if found else {}
    done = conn.execute(f"SELECT status FROM sim_generations WHERE {KEY}", key).fetchone()
    states = {p: s for p, s in conn.execute(f"SELECT platform, status FROM sim_platforms WHERE {KEY}", key)}
    per = platforms(conn, key)
    hours = {p: int(h or 0) for p, h in conn.execute(
        f"SELECT platform, max(simulated_hour) FROM sim_rounds WHERE {KEY} GROUP BY platform", key)}
    total, current = total_rounds(summary, (p["rounds"] for p in per.values())), current_round(conn, key)
    pid = conn.execute("SELECT pid FROM sim_env WHERE simulation_id = ?", (key[0],)).fetchone()
    counts = {p: int(per.get(p, {}).get("actions") or 0) for p in PLATFORMS}
    time_config = summary.get("time_config") or {}
    return {"simulation_id": _config_id(summary, key[0]),
            "runner_status": "completed" if done and done[0] == "completed" else "running" if states else "idle",
            "current_round": current, "total_rounds": total, "simulated_hours": max(hours.values(), default=0),
            "total_simulation_hours": time_config.get("total_simulation_hours", 0),
            "progress_percent": round(current / max(total, 1) * 100, 1),
            **{f"{p}_current_round": current_round(conn, key, p) for p in PLATFORMS},
            **{f"{p}_simulated_hours": hours.get(p, 0) for p in PLATFORMS},
            **{f"{p}_running": states.get(p) == "running" for p in PLATFORMS},
            **{f"{p}_completed": states.get(p) == "finished" for p in PLATFORMS},
            **{f"{p}_actions_count": counts[p] for p in PLATFORMS}, "total_actions_count": sum(counts.values()),
            "started_at": None, "updated_at": None, "completed_at": None, "error": None,
            "process_pid": pid[0] if pid else None}


def posts(conn: sqlite3.Connection, key: Key, platform: str, limit: int, offset: int) -> tuple[int, list[dict[str, Any]]]:
    """(how many, a page of) the platform's posts and quotes, newest first, as rows of OASIS's `post` table;
    `created_at` is the round, and the counts are the likes, dislikes and shares recorded (and not undone)."""
    where = f"{KEY} AND platform = ? AND kind IN ('post', 'quote')"
    total = conn.execute(f"SELECT count(*) FROM sim_posts WHERE {where}", (*key, platform)).fetchone()[0]
    rows = rows_as_dicts(conn.execute(
        "SELECT post_id, agent_id AS user_id, parent_post_id AS original_post_id, content,"
        " CASE kind WHEN 'quote' THEN content END AS quote_content, round AS created_at, ref"
        f" FROM sim_posts WHERE {where} ORDER BY round DESC, id DESC LIMIT ? OFFSET ?",
        (*key, platform, limit, offset)))
    counts = _reactions(conn, key, [r["ref"] for r in rows])
    for row in rows:
        likes, dislikes, shares = counts.get(row.pop("ref"), (0, 0, 0))
        row.update(num_likes=likes, num_dislikes=dislikes, num_shares=shares)
    return int(total), rows


def _reactions(conn: sqlite3.Connection, key: Key, refs: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per post ref: (likes, dislikes, shares) recorded and not undone."""
    return {ref: (likes, dislikes, shares) for ref, likes, dislikes, shares in conn.execute(
        "SELECT target_ref, sum(kind = 'like'), sum(kind = 'dislike'), sum(kind IN ('repost', 'quote'))"
        f" FROM sim_edges WHERE {KEY} AND undone = 0 AND target_ref IN (SELECT value FROM json_each(?))"
        " GROUP BY target_ref", (*key, json.dumps(refs)))}


def comments(conn: sqlite3.Connection, key: Key, post_id: int | None, limit: int, offset: int) -> list[dict[str, Any]]:
    """A page of Reddit's comments (on one post, if given), newest first, as rows of OASIS's `comment` table."""
    return rows_as_dicts(conn.execute(
        "SELECT post_id AS comment_id, parent_post_id AS post_id, agent_id AS user_id, content, round AS created_at"
        f" FROM sim_posts WHERE {KEY} AND platform = 'reddit' AND kind = 'comment'"
        " AND (?3 IS NULL OR parent_post_id = ?3) ORDER BY round DESC, id DESC LIMIT ?4 OFFSET ?5",
        (*key, post_id, limit, offset)))


def recorded_interviews(conn: sqlite3.Connection, key: Key, platform: str | None,
                        agent_id: int | None) -> list[dict[str, Any]]:
    """The interviews the simulator's databases recorded, in MiroFish's history shape, newest first."""
    return rows_as_dicts(conn.execute(
        "SELECT agent_id, response, prompt, NULL AS timestamp, platform FROM sim_interviews"
        f" WHERE {KEY} AND (?3 IS NULL OR platform = ?3) AND (?4 IS NULL OR agent_id = ?4) ORDER BY position DESC",
        (*key, platform, agent_id)))


def search_result(ours: dict[str, Any]) -> dict[str, Any]:
    """Our `quick_search` answer with the fields of MiroFish's `SearchResult.to_dict()` (`services/zep_tools.py`
    26-41): each statement found as a fact, `[ref] name: content`; the graph's nodes and edges are none here."""
    results = ours.get("results") or []
    facts = [f"[{r['ref']}] {r['agent']['name']}: {r['content']}" for r in results]
    return {**ours, "facts": facts, "edges": [], "nodes": [], "query": ours.get("query", ""),
            "total_count": len(facts)}


def graph_statistics(conn: sqlite3.Connection, key: Key, graph_id: str) -> dict[str, Any]:
    """MiroFish's `get_graph_statistics` fields (`services/zep_tools.py` 863-869) for the run: its agents as the
    nodes, by entity type, and who-reacted-to-whom links (not undone) as the edges, by kind."""
    kinds = dict(conn.execute(f"SELECT kind, sum(count - undone) FROM sim_links WHERE {KEY} GROUP BY kind"
                              " ORDER BY kind", key).fetchall())
    types = dict(conn.execute(f"SELECT entity_type, count(*) FROM sim_agents WHERE {KEY} GROUP BY entity_type"
                              " ORDER BY entity_type", key).fetchall())
    return {"graph_id": graph_id, "total_nodes": sum(types.values()), "total_edges": sum(kinds.values()),
            "entity_types": types, "relation_types": kinds}


# --- what needs every action: pure summaries of the run's actions (`acted_fields` dicts, in log order) ---------


def action_dict(acted: dict[str, Any]) -> dict[str, Any]:
    """`AgentAction.to_dict()` of one action."""
    return {"round_num": acted["round"], "timestamp": acted["timestamp"], "platform": acted["platform"],
            "agent_id": acted["agent_id"], "agent_name": acted["agent_name"], "action_type": acted["action_type"],
            "action_args": acted["action_args"], "result": None, "success": acted["success"]}


def timeline(actions: Iterable[dict[str, Any]], start: int, end: int | None) -> list[dict[str, Any]]:
    """Per round from `start` to `end`: actions per platform, the agents active, the action types, the first and
    last action's time (MiroFish's `SimulationRunner.get_timeline`)."""
    rounds: dict[int, dict[str, Any]] = {}
    for a in actions:
        if a["round"] < start or (end is not None and a["round"] > end):
            continue
        r = rounds.setdefault(a["round"], {"round_num": a["round"], "twitter_actions": 0, "reddit_actions": 0,
                                           "agents": {}, "action_types": {}, "first_action_time": a["timestamp"]})
        _count(r, a)
    return [{**{k: v for k, v in r.items() if k != "agents"}, "total_actions": r["twitter_actions"] + r["reddit_actions"],
             "active_agents_count": len(r["agents"]), "active_agents": list(r["agents"])}
            for _, r in sorted(rounds.items())]


def agent_stats(actions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per agent: its actions in all and per platform, their types, the first and last one's time, the most
    active first (MiroFish's `SimulationRunner.get_agent_stats`)."""
    agents: dict[int, dict[str, Any]] = {}
    for a in actions:
        s = agents.setdefault(a["agent_id"], {"agent_id": a["agent_id"], "agent_name": a["agent_name"],
                                              "twitter_actions": 0, "reddit_actions": 0, "agents": {},
                                              "action_types": {}, "first_action_time": a["timestamp"]})
        _count(s, a)
    stats = [{**{k: v for k, v in s.items() if k != "agents"}, "total_actions": s["twitter_actions"] + s["reddit_actions"]}
             for s in agents.values()]
    return sorted(stats, key=lambda s: -s["total_actions"])


def _count(into: dict[str, Any], a: dict[str, Any]) -> None:
    into[f"{a['platform']}_actions"] = into.get(f"{a['platform']}_actions", 0) + 1
    into["agents"][a["agent_id"]] = None
    into["action_types"][a["action_type"]] = into["action_types"].get(a["action_type"], 0) + 1
    into["last_action_time"] = a["timestamp"]
