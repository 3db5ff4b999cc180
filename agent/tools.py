"""The report tools, reading the simulation model (DESIGN.md section 4).

Every result is canonical JSON with ids (`post:twitter:42`, `agent:7`) so sentences can
cite evidence, and every query orders its rows fully, so the same model gives the same
bytes on every machine: replay depends on it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import anyio

from simreportd.errors import ToolError
from simreportd.projections.chart import activity_rows, turning_points
from simreportd.projections.runner import in_thread, reading, rows_as_dicts
from simreportd.projections.simulation import han_spaced

from .camps import camps_from_statements
from .toolspec import REPORT_TOOLS

KEY = "simulation_id = ? AND generation = ?"
MAX_RESULT = 16 * 1024  # bytes of JSON a tool result may take, whatever the simulation's size
MAX_SERIES = 60  # per-round rows in an analytics result; longer runs are summed into spans of rounds
MAX_POINTS = 10  # turning points in an analytics result, the sharpest first
MAX_RANKED, WINDOWS = 4000, 8  # full-text matches a search ranks at most, and in how many stretches of the run
MAX_TIMELINE = 24  # entries in a panorama timeline; longer ones are grouped by spans of rounds
STOPWORDS = frozenset("a an and are as at be by did do does for from has have how in is it its of on or that the "
                      "their them they this to was were what when where which who why will with".split())


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
        result = await self.interviews.report_interview(simulation_id, generation, topic,
                                                        max_agents if isinstance(max_agents, int) else 5)
        return result if len(result.encode()) <= MAX_RESULT else bounded_json(json.loads(result), MAX_RESULT)

    async def context(self, simulation_id: str, generation: int) -> dict[str, Any]:
        """What planning needs: statistics, requirement, agent types, stances, sample posts."""
        return await in_thread(self._call_raw, self.gather_context, {}, (simulation_id, generation),
                                              limiter=self.limiter)

    def _call(self, method: Any, arguments: dict[str, Any], key: tuple[str, int]) -> str:
        return bounded_json(self._call_raw(method, arguments, key), MAX_RESULT)

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
        series = compress_rounds(per_round, MAX_SERIES)
        return {
            "simulation_id": key[0], "generation": key[1], "total_actions": total,
            "actions_by_platform": totals, "rounds": max(0, len(per_round) - 1),
            "busiest_round": max(per_round, key=lambda r: (r["total"], -r["round"]), default=None),
            "per_round": series,
            "turning_points": _sharpest(turning_points(per_round), MAX_POINTS),
            "divergence": {"overall": round(abs(totals["twitter"] - totals["reddit"]) / total, 3) if total else 0.0,
                           "by_round": [{"round": r["round"], "value": r["divergence"]} for r in series]},
            "most_active_agents": _most_active(conn, key, 5),
            "most_engaged_agents": _most_engaged_agents(conn, key, 5),
            "action_mix": _action_mix(conn, key),
            "camps": camps_from_statements(_statements(conn, key)),
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
        result = {
            "query": query, "matches": len(hits), "timeline": _timeline(hits, MAX_TIMELINE),
            "current_statements": current[-12:],
            "undone_actions": _undone(conn, key),
        }
        if include_expired:
            result["superseded_statements"] = superseded[-8:]
        return result

    def insight_forge(self, conn: sqlite3.Connection, key: tuple[str, int], query: str) -> dict[str, Any]:
        questions = sub_questions(query)
        findings: list[dict[str, Any]] = [
            {"question": q, "evidence": _search(conn, key, q, 4, kinds=("post", "quote", "comment"))} for q in questions]
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


def bounded_json(result: dict[str, Any], limit: int) -> str:
    """`result` as canonical JSON of at most `limit` bytes: its largest lists lose their last items until it fits."""
    text = _dumps(result)
    while len(text.encode()) > limit:
        largest = max(_lists(result), key=lambda items: len(_dumps(items)), default=None)
        if not largest:
            break
        size = len(_dumps(largest).encode())
        cut = max(1, -(-len(largest) * (len(text.encode()) - limit) // size))
        del largest[max(0, len(largest) - cut):]
        result["truncated"] = f"shortened to fit {limit // 1024} KB: lists keep their first items"
        text = _dumps(result)
    return text


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _lists(value: Any) -> Iterator[list[Any]]:
    """Every non-empty list inside a JSON value."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    if isinstance(value, list) and value:
        yield value
    for child in children:
        yield from _lists(child)


def compress_rounds(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Per-round rows as they are, or, past `limit` rows, summed over spans of rounds (`round`..`last_round`)."""
    if len(rows) <= limit:
        return rows
    span = -(-len(rows) // limit)
    out = []
    for i in range(0, len(rows), span):
        part = rows[i:i + span]
        t, d = sum(r["twitter"] for r in part), sum(r["reddit"] for r in part)
        out.append({"round": part[0]["round"], "last_round": part[-1]["round"], "twitter": t, "reddit": d,
                    "total": t + d, "divergence": round(abs(t - d) / (t + d), 3) if t + d else 0.0})
    return out


def _timeline(hits: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Statements per round and platform with the first of each; past `limit` entries, per span of rounds."""
    index = {r: i for i, r in enumerate(sorted({h["round"] for h in hits}))}
    span = max(1, -(-len(index) * 2 // limit))  # two platforms per span
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for hit in hits:  # sorted by round already
        groups.setdefault((index[hit["round"]] // span, hit["platform"]), []).append(hit)
    entries = []
    for (_, platform), items in sorted(groups.items()):
        entry = {"round": items[0]["round"], "platform": platform, "statements": len(items), "first": items[0]}
        if span > 1:
            entry["last_round"] = items[-1]["round"]
        entries.append(entry)
    return entries


def _sharpest(points: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The `limit` turning points with the highest ratio, in round order."""
    return sorted(sorted(points, key=lambda p: (-p["ratio"], p["round"]))[:limit], key=lambda p: p["round"])


def fts_query(text: str) -> str:
    """An FTS5 expression matching any meaningful word of `text`; user text never becomes syntax.

    Chinese has no spaces: a run of Han characters becomes its two-character phrases, as the index
    holds one token per character (`han_spaced`)."""
    words = []
    for w in re.findall(r"\w+", text.lower()):
        chars = han_spaced(w).split()
        words += [f"{a} {b}" for a, b in zip(chars, chars[1:])] if len(chars) > 1 else chars
    words = [w for w in words if w not in STOPWORDS and len(w) > 1]
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
    """Agents others reacted to most (likes, reposts, quotes, comments, follows received), from the counters."""
    rows = conn.execute(
        "SELECT n.agent_id, coalesce(g.name, ''), coalesce(g.stance, ''), n.reactions, n.shares, n.comments, n.likes"
        " FROM sim_engagement n LEFT JOIN sim_agents g USING (simulation_id, generation, agent_id)"
        " WHERE n.simulation_id = ? AND n.generation = ? AND n.reactions > 0"
        " ORDER BY n.reactions DESC, n.agent_id LIMIT ?", (*key, limit)).fetchall()
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
    within, bounds = in_windows(match_windows(conn, expression, key))
    rows = conn.execute(
        f"SELECT {POST_COLUMNS} FROM sim_posts_fts CROSS JOIN sim_posts p ON p.id = sim_posts_fts.rowid {AGENT_JOIN}"
        f" WHERE sim_posts_fts MATCH ? AND {within} AND p.simulation_id = ? AND p.generation = ?"
        " AND (? IS NULL OR p.kind IN (SELECT value FROM json_each(?)))"
        " ORDER BY bm25(sim_posts_fts), p.id LIMIT ?",
        (expression, *bounds, *key, kinds_json, kinds_json, limit)).fetchall()
    return [_post(r) for r in rows]


def in_windows(windows: list[tuple[int, int]]) -> tuple[str, list[int]]:
    """A WHERE term keeping `sim_posts_fts` rows inside `windows`, and its parameters.

    The outer range is handed to FTS5 (it skips what lies outside); the windows are
    tested by SQLite before anything is ranked, so only their rows are scored.
    """
    if not windows:
        return "0", []
    ranges = " OR ".join(["sim_posts_fts.rowid BETWEEN ? AND ?"] * len(windows))
    return (f"sim_posts_fts.rowid BETWEEN ? AND ? AND ({ranges})",
            [windows[0][0], windows[-1][1], *(b for w in windows for b in w)])


def match_windows(conn: sqlite3.Connection, expression: str, key: tuple[str, int]) -> list[tuple[int, int]]:
    """Row-id ranges of `sim_posts` to rank `expression`'s matches in, holding MAX_RANKED matches at most.

    Ranking costs a few microseconds per match, so a common word in a million-action run
    would take a second: past MAX_RANKED matches, the ranges are WINDOWS evenly spaced
    stretches of the run, each holding its share of matches (a sample over all rounds).
    """
    first = conn.execute(f"SELECT id FROM sim_posts WHERE {KEY} ORDER BY id LIMIT 1", key).fetchone()
    last = conn.execute(f"SELECT id FROM sim_posts WHERE {KEY} ORDER BY id DESC LIMIT 1", key).fetchone()
    if first is None:
        return []
    whole = (first[0], last[0])
    matches = conn.execute("SELECT count(*) FROM (SELECT rowid FROM sim_posts_fts WHERE sim_posts_fts MATCH ?"
                           " AND rowid BETWEEN ? AND ? LIMIT ?)", (expression, *whole, MAX_RANKED + 1)).fetchone()[0]
    if matches <= MAX_RANKED:
        return [whole]
    step = (whole[1] - whole[0] + 1) / WINDOWS
    starts = [whole[0] + int(i * step) for i in range(WINDOWS)] + [whole[1] + 1]
    windows = []
    for start, end in zip(starts, starts[1:]):
        cap = conn.execute("SELECT rowid FROM sim_posts_fts WHERE sim_posts_fts MATCH ? AND rowid BETWEEN ? AND ?"
                           " ORDER BY rowid LIMIT 1 OFFSET ?", (expression, start, end - 1,
                                                                MAX_RANKED // WINDOWS - 1)).fetchone()
        windows.append((start, cap[0] if cap else end - 1))
    return windows


def _most_engaged(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    """The posts and quotes others reacted to most, read from the engagement counter's index."""
    rows = conn.execute(
        f"SELECT {POST_COLUMNS}, p.engagement FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ?"
        " AND p.kind IN ('post', 'quote') ORDER BY p.engagement DESC, p.id LIMIT ?", (*key, limit)).fetchall()
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
    ids = json.dumps(agent_ids)
    rows = conn.execute(
        "SELECT l.src_agent, coalesce(s.name, ''), l.kind, l.dst_agent, coalesce(d.name, ''), l.count, l.undone"
        " FROM (SELECT * FROM sim_links WHERE simulation_id = ?1 AND generation = ?2"
        "  AND src_agent IN (SELECT value FROM json_each(?3))"
        "  UNION SELECT * FROM sim_links WHERE simulation_id = ?1 AND generation = ?2"
        "  AND dst_agent IN (SELECT value FROM json_each(?3))) l"
        " LEFT JOIN sim_agents s ON s.simulation_id = ?1 AND s.generation = ?2 AND s.agent_id = l.src_agent"
        " LEFT JOIN sim_agents d ON d.simulation_id = ?1 AND d.generation = ?2 AND d.agent_id = l.dst_agent"
        " ORDER BY l.count DESC, l.src_agent, l.kind, l.dst_agent LIMIT 15", (*key, ids)).fetchall()
    return [{"from": f"agent:{s}", "from_name": sn, "kind": k, "to": f"agent:{d}", "to_name": dn, "count": c,
             "undone": u} for s, sn, k, d, dn, c, u in rows]


def _statements(conn: sqlite3.Connection, key: tuple[str, int]) -> list[dict[str, Any]]:
    """Every post, quote and comment with its author's name and stated stance, in log order."""
    rows = conn.execute(f"SELECT p.ref, p.kind, p.round, p.content, p.agent_id, coalesce(g.name, ''),"
                        f" coalesce(g.stance, '') FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ?"
                        " AND p.kind IN ('post', 'quote', 'comment') AND p.content != '' ORDER BY p.id", key).fetchall()
    return [{"ref": r, "kind": k, "round": n or 0, "content": c, "agent": a, "name": nm, "stance": st}
            for r, k, n, c, a, nm, st in rows]


def _undone(conn: sqlite3.Connection, key: tuple[str, int]) -> int:
    """Undone actions (unlikes, unfollows...) that took back an earlier one, from the per-platform counters."""
    return int(conn.execute(f"SELECT coalesce(sum(undone), 0) FROM sim_platforms WHERE {KEY}", key).fetchone()[0])
