"""The report tools, reading the simulation model (DESIGN.md section 4).

Every result is canonical JSON with ids (`post:twitter:42`, `agent:7`) so sentences can
cite evidence, and every query orders its rows fully, so the same model gives the same
bytes on every machine: replay depends on it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Protocol

import anyio

from simreportd.events.errors import SimreportdError
from simreportd.projections.chart import activity_rows, turning_points
from simreportd.projections.runner import in_thread, reading, rows_as_dicts

from .toolspec import REPORT_TOOLS

KEY = "simulation_id = ? AND generation = ?"
STOPWORDS = frozenset("a an and are as at be by did do does for from has have how in is it its of on or that the "
                      "their them they this to was were what when where which who why will with".split())


class ToolError(SimreportdError):
    """A tool call that cannot run as asked (bad arguments); the model is told and goes on."""


class Interviews(Protocol):
    async def report_interview(self, simulation_id: str, generation: int, topic: str, max_agents: int = 5) -> str:
        """The interview_agents tool's result (JSON text), live or in persona."""
        ...


class SimulationTools:
    """Tool implementations over the read-model database, run in worker threads.

    `interview_agents` reaches outside the database (the simulator's file RPC), so it is
    delegated to an `Interviews` implementation the daemon provides.
    """

    def __init__(self, views_path: Path, interviews: Interviews | None = None,
                 limiter: anyio.CapacityLimiter | None = None) -> None:
        self.views_path, self.interviews, self.limiter = views_path, interviews, limiter

    async def run(self, name: str, arguments: dict[str, Any], simulation_id: str, generation: int) -> str:
        """Run tool `name` and return its result as JSON text."""
        if name not in REPORT_TOOLS:
            raise ToolError(f"unknown tool {name!r}")
        if name == "interview_agents":
            return await self._interview(arguments, simulation_id, generation)
        method = getattr(self, name)
        return await in_thread(self._call, method, arguments, (simulation_id, generation),
                                              limiter=self.limiter)

    async def _interview(self, arguments: dict[str, Any], simulation_id: str, generation: int) -> str:
        topic = arguments.get("interview_topic")
        if not isinstance(topic, str) or not topic.strip():
            raise ToolError("interview_agents needs interview_topic (a non-empty string)")
        if self.interviews is None:
            raise ToolError("interviews are not available here")
        max_agents = arguments.get("max_agents", 5)
        return await self.interviews.report_interview(simulation_id, generation, topic,
                                                      max_agents if isinstance(max_agents, int) else 5)

    async def context(self, simulation_id: str, generation: int) -> dict[str, Any]:
        """What planning needs: statistics, requirement, agent types, stances, sample posts."""
        return await in_thread(self._call_raw, self.gather_context, {}, (simulation_id, generation),
                                              limiter=self.limiter)

    def _call(self, method: Any, arguments: dict[str, Any], key: tuple[str, int]) -> str:
        return json.dumps(self._call_raw(method, arguments, key), sort_keys=True, ensure_ascii=False)

    def _call_raw(self, method: Any, arguments: dict[str, Any], key: tuple[str, int]) -> Any:
        with reading(self.views_path) as conn:
            try:
                return method(conn, key, **_clean_args(arguments))
            except TypeError as exc:
                raise ToolError(f"bad arguments {sorted(arguments)}: {exc}") from None

    # --- the tools --------------------------------------------------------------------------

    def simulation_analytics(self, conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, Any]:
        per_round = _per_round(conn, key)
        totals = {p: sum(r[p] for r in per_round) for p in ("twitter", "reddit")}
        total = sum(totals.values())
        return {
            "simulation_id": key[0], "generation": key[1], "total_actions": total,
            "actions_by_platform": totals,
            "per_round": per_round,
            "turning_points": turning_points(per_round),
            "divergence": {"overall": round(abs(totals["twitter"] - totals["reddit"]) / total, 3) if total else 0.0,
                           "by_round": [{"round": r["round"], "value": r["divergence"]} for r in per_round]},
            "most_active_agents": _most_active(conn, key, 5),
            "most_engaged_agents": _most_engaged_agents(conn, key, 5),
            "action_mix": _action_mix(conn, key),
        }

    def quick_search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str,
                     limit: int = 10) -> dict[str, Any]:
        limit = max(1, min(int(limit), 50))
        return {"query": query, "results": _search(conn, key, query, limit, kinds=None)}

    def panorama_search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str,
                        include_expired: bool = True) -> dict[str, Any]:
        hits = sorted(_search(conn, key, query, 200, kinds=("post", "quote", "comment")),
                      key=lambda h: (h["round"], h["ref"]))
        latest: dict[int, dict[str, Any]] = {}
        for hit in hits:
            latest[hit["agent"]["id"]] = hit
        current = sorted(latest.values(), key=lambda h: (h["round"], h["ref"]))
        superseded = [h for h in hits if latest[h["agent"]["id"]] is not h]
        by_round: dict[tuple[int, str], list[dict[str, Any]]] = {}
        for hit in hits:
            by_round.setdefault((hit["round"], hit["platform"]), []).append(hit)
        result = {
            "query": query, "matches": len(hits),
            "timeline": [{"round": r, "platform": p, "statements": len(items), "first": items[0]}
                         for (r, p), items in sorted(by_round.items())],
            "current_statements": current[-12:],
            "undone_actions": _undone(conn, key),
        }
        if include_expired:
            result["superseded_statements"] = superseded[-8:]
        return result

    def insight_forge(self, conn: sqlite3.Connection, key: tuple[str, int], query: str) -> dict[str, Any]:
        questions = sub_questions(query)
        findings = [{"question": q, "evidence": _search(conn, key, q, 4, kinds=("post", "quote", "comment"))}
                    for q in questions]
        agent_ids = sorted({e["agent"]["id"] for f in findings for e in f["evidence"]})
        return {"query": query, "sub_questions": findings, "agents": _profiles(conn, key, agent_ids),
                "interaction_chains": _chains(conn, key, agent_ids)}

    def gather_context(self, conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, Any]:
        gen = conn.execute(f"SELECT requirement, config FROM sim_generations WHERE {KEY}", key).fetchone()
        if gen is None:
            raise ToolError(f"simulation {key[0]} generation {key[1]} is not in the simulation model")
        config = json.loads(gen[1] or "{}")
        platforms = {row["platform"]: {"actions": row["actions"], "rounds": row["total_rounds"],
                                       "all_rounds_ran": bool(row["all_rounds_ran"])}
                     for row in rows_as_dicts(conn.execute(
                         "SELECT platform, actions, all_rounds_ran, coalesce(total_rounds, (SELECT max(r.round) FROM"
                         " sim_rounds r WHERE r.simulation_id = p.simulation_id AND r.generation = p.generation AND"
                         f" r.platform = p.platform)) AS total_rounds FROM sim_platforms p WHERE {KEY}"
                         " ORDER BY platform", key))}
        stances = dict(conn.execute(f"SELECT stance, count(*) FROM sim_agents WHERE {KEY} GROUP BY stance"
                                    " ORDER BY stance", key).fetchall())
        types = dict(conn.execute(f"SELECT entity_type, count(*) FROM sim_agents WHERE {KEY} GROUP BY entity_type"
                                  " ORDER BY count(*) DESC, entity_type LIMIT 8", key).fetchall())
        return {
            "simulation_id": key[0], "generation": key[1], "requirement": gen[0] or "",
            "platforms": platforms, "total_actions": sum(p["actions"] or 0 for p in platforms.values()),
            "rounds": max([p["rounds"] or 0 for p in platforms.values()] or [0]),
            "agents_count": sum(stances.values()), "stances": stances, "agent_types": types,
            "hot_topics": config.get("hot_topics", []), "scheduled_events": config.get("scheduled_events", []),
            "narrative_direction": config.get("narrative_direction", ""),
            "sample_posts": _most_engaged(conn, key, 5),
        }


def sub_questions(query: str) -> list[str]:
    """Split a question into its parts (on '?', ';', ' and ', ','), keeping the whole as the first."""
    parts = [p.strip() for p in re.split(r"[?;,]|\band\b", query) if len(p.strip()) > 3]
    unique = list(dict.fromkeys([query.strip(), *parts]))
    return unique[:4]


def fts_query(text: str) -> str:
    """An FTS5 expression matching any meaningful word of `text`; user text never becomes syntax."""
    words = [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS and len(w) > 1]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))


def _clean_args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if not k.startswith("_")}


def _per_round(conn: sqlite3.Connection, key: tuple[str, int]) -> list[dict[str, Any]]:
    return activity_rows(conn, *key)


def _most_active(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT a.agent_id, coalesce(g.name, ''), coalesce(g.stance, ''), sum(a.actions), sum(a.posts)"
        " FROM sim_activity a LEFT JOIN sim_agents g USING (simulation_id, generation, agent_id)"
        " WHERE a.simulation_id = ? AND a.generation = ? GROUP BY a.agent_id"
        " ORDER BY sum(a.actions) DESC, a.agent_id LIMIT ?", (*key, limit)).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "actions": c, "posts": p} for a, n, s, c, p in rows]


def _most_engaged_agents(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    """Agents others reacted to most (likes, reposts, quotes, comments, follows received)."""
    rows = conn.execute(
        "SELECT e.dst_agent, coalesce(g.name, ''), coalesce(g.stance, ''), count(*),"
        " sum(e.kind IN ('repost', 'quote')), sum(e.kind = 'comment'), sum(e.kind IN ('like', 'like_comment'))"
        " FROM sim_edges e LEFT JOIN sim_agents g ON g.simulation_id = e.simulation_id"
        " AND g.generation = e.generation AND g.agent_id = e.dst_agent"
        " WHERE e.simulation_id = ? AND e.generation = ? AND e.dst_agent IS NOT NULL AND e.undone = 0"
        " AND e.dst_agent != e.src_agent GROUP BY e.dst_agent ORDER BY count(*) DESC, e.dst_agent LIMIT ?",
        (*key, limit)).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "reactions": c, "shares": sh, "comments": cm, "likes": lk}
            for a, n, s, c, sh, cm, lk in rows]


def _action_mix(conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, list[dict[str, Any]]]:
    """Per platform, the actions most common first (a list: JSON objects would lose the order)."""
    mix: dict[str, list[dict[str, Any]]] = {}
    for platform, action, count in conn.execute(
            f"SELECT platform, action_type, count FROM sim_action_mix WHERE {KEY}"
            " ORDER BY platform, count DESC, action_type", key):
        mix.setdefault(platform, []).append({"action": action, "count": count})
    return mix


POST_COLUMNS = ("p.ref, p.kind, p.platform, p.round, p.content, p.quoted_content, p.quoted_author, p.agent_id,"
                " coalesce(g.name, ''), coalesce(g.stance, '')")
AGENT_JOIN = ("LEFT JOIN sim_agents g ON g.simulation_id = p.simulation_id"
              " AND g.generation = p.generation AND g.agent_id = p.agent_id")
POST_JOIN = f"sim_posts p {AGENT_JOIN}"


def _post(row: tuple[Any, ...]) -> dict[str, Any]:
    ref, kind, platform, round_no, content, quoted, quoted_author, agent, name, stance = row
    post = {"ref": ref, "kind": kind, "platform": platform, "round": round_no, "content": content,
            "agent": {"id": agent, "ref": f"agent:{agent}", "name": name, "stance": stance}}
    if quoted:
        post["quoting"] = {"author": quoted_author, "content": quoted}
    return post


def _search(conn: sqlite3.Connection, key: tuple[str, int], query: str, limit: int,
            kinds: tuple[str, ...] | None) -> list[dict[str, Any]]:
    expression = fts_query(query)
    if not expression:
        return []
    kinds_json = json.dumps(list(kinds)) if kinds else None
    rows = conn.execute(
        f"SELECT {POST_COLUMNS} FROM sim_posts_fts JOIN sim_posts p ON p.id = sim_posts_fts.rowid {AGENT_JOIN}"
        " WHERE sim_posts_fts MATCH ? AND p.simulation_id = ? AND p.generation = ?"
        " AND (? IS NULL OR p.kind IN (SELECT value FROM json_each(?)))"
        " ORDER BY bm25(sim_posts_fts), p.id LIMIT ?",
        (expression, *key, kinds_json, kinds_json, limit)).fetchall()
    return [_post(r) for r in rows]


def _most_engaged(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    rows = conn.execute(
        f"SELECT {POST_COLUMNS}, (SELECT count(*) FROM sim_edges e WHERE e.simulation_id = p.simulation_id"
        " AND e.generation = p.generation AND e.target_ref = p.ref) AS engagement"
        f" FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ? AND p.kind IN ('post', 'quote')"
        " ORDER BY engagement DESC, p.id LIMIT ?", (*key, limit)).fetchall()
    return [{**_post(r[:-1]), "engagement": r[-1]} for r in rows]


def _profiles(conn: sqlite3.Connection, key: tuple[str, int], agent_ids: list[int]) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT g.agent_id, g.name, g.stance, g.entity_type, g.bio,"
        " (SELECT coalesce(sum(actions), 0) FROM sim_activity a WHERE a.simulation_id = g.simulation_id"
        "  AND a.generation = g.generation AND a.agent_id = g.agent_id)"
        " FROM sim_agents g WHERE g.simulation_id = ? AND g.generation = ?"
        " AND g.agent_id IN (SELECT value FROM json_each(?)) ORDER BY g.agent_id",
        (*key, json.dumps(agent_ids))).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "type": t, "bio": b, "actions": c}
            for a, n, s, t, b, c in rows]


def _chains(conn: sqlite3.Connection, key: tuple[str, int], agent_ids: list[int]) -> list[dict[str, Any]]:
    """Who reposted, quoted, commented on, liked or followed whom, among and around these agents."""
    rows = conn.execute(
        "SELECT e.src_agent, coalesce(s.name, ''), e.kind, e.dst_agent, coalesce(d.name, e.dst_name, ''),"
        " count(*), sum(e.undone) FROM sim_edges e"
        " LEFT JOIN sim_agents s ON s.simulation_id = e.simulation_id AND s.generation = e.generation"
        "  AND s.agent_id = e.src_agent"
        " LEFT JOIN sim_agents d ON d.simulation_id = e.simulation_id AND d.generation = e.generation"
        "  AND d.agent_id = e.dst_agent"
        " WHERE e.simulation_id = ? AND e.generation = ? AND e.dst_agent IS NOT NULL"
        " AND (e.src_agent IN (SELECT value FROM json_each(?)) OR e.dst_agent IN (SELECT value FROM json_each(?)))"
        " GROUP BY e.src_agent, e.kind, e.dst_agent ORDER BY count(*) DESC, e.src_agent, e.kind, e.dst_agent"
        " LIMIT 15", (*key, json.dumps(agent_ids), json.dumps(agent_ids))).fetchall()
    return [{"from": f"agent:{s}", "from_name": sn, "kind": k, "to": f"agent:{d}", "to_name": dn, "count": c,
             "undone": u} for s, sn, k, d, dn, c, u in rows]


def _undone(conn: sqlite3.Connection, key: tuple[str, int]) -> int:
    return conn.execute(f"SELECT count(*) FROM sim_edges WHERE {KEY} AND undone = 1", key).fetchone()[0]
