"""Reads of the simulation model (its tables are in simulation.py): one function per question.

Every reader outside the agent's tools (the HTTP API, the CLI, interviews, the chart) asks here,
so a change of the simulation tables touches this module and the fold, nothing else.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from .simulation_writes import han_spaced
from .sqlite import rows_as_dicts

Key = tuple[str, int]  # (simulation_id, generation)
KEY = "simulation_id = ? AND generation = ?"
MAX_RANKED, WINDOWS = 4000, 8  # full-text matches a search ranks at most, and in how many stretches of the run
STOPWORDS = frozenset("a an and are as at be by did do does for from has have how in is it its of on or that the "
                      "their them they this to was were what when where which who why will with".split())


def simulations(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every simulation generation with its totals, platform states, rejections and environment."""
    rows = rows_as_dicts(conn.execute(
        "SELECT g.simulation_id, g.generation, g.status, g.requirement, g.all_rounds_ran, g.folder,"
        " (SELECT coalesce(sum(actions), 0) FROM sim_platforms p WHERE p.simulation_id = g.simulation_id"
        "  AND p.generation = g.generation) AS actions,"
        " (SELECT json_group_object(platform, status) FROM sim_platforms p WHERE p.simulation_id = g.simulation_id"
        "  AND p.generation = g.generation) AS platforms,"
        " (SELECT coalesce(sum(lines), 0) FROM sim_rejections r WHERE r.simulation_id = g.simulation_id)"
        " AS rejections,"
        " (SELECT status FROM sim_env e WHERE e.simulation_id = g.simulation_id) AS environment,"
        " (SELECT count(*) FROM sim_interviews i WHERE i.simulation_id = g.simulation_id"
        "  AND i.generation = g.generation) AS interviews"
        " FROM sim_generations g ORDER BY g.simulation_id, g.generation"))
    for row in rows:
        row["platforms"] = json.loads(row["platforms"] or "{}")
    return rows


def resolve(conn: sqlite3.Connection, given: str) -> str | None:
    """The simulation a client names: by its id, by the `simulation_id` its simulation_config.json gives, or
    by its folder's name (an alias: docs/formats.md#simulation-ids); None if none does. The newest run wins
    where two folders answer to one name."""
    row = conn.execute(
        "SELECT simulation_id, 0, started_position FROM sim_generations WHERE simulation_id = ?1 UNION ALL"
        " SELECT simulation_id, 1, started_position FROM sim_generations"
        " WHERE json_extract(config, '$.simulation_id') = ?1 UNION ALL"
        " SELECT simulation_id, 2, started_position FROM sim_generations WHERE instr(?1, '/') = 0"
        " AND instr(?1, char(92)) = 0 AND substr(folder, -length(?1) - 1) IN ('/' || ?1, char(92) || ?1)"
        " ORDER BY 2, 3 DESC LIMIT 1", (given,)).fetchone()
    return str(row[0]) if row else None


def resolve_graph(conn: sqlite3.Connection, graph_id: str) -> str | None:
    """The simulation of the knowledge graph MiroFish names (`graph_id` in its simulation_config.json): the one
    ingested last, when several runs share the graph; None if none does."""
    row = conn.execute("SELECT simulation_id FROM sim_generations WHERE json_extract(config, '$.graph_id') = ?"
                       " ORDER BY started_position DESC LIMIT 1", (graph_id,)).fetchone()
    return str(row[0]) if row else None


def interviews(conn: sqlite3.Connection, key: Key) -> list[dict[str, Any]]:
    """The interviews the simulator recorded for one generation (after its run), in the order they came."""
    return rows_as_dicts(conn.execute(
        f"SELECT platform, agent_id, agent_name, prompt, response FROM sim_interviews WHERE {KEY} ORDER BY position",
        key))


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


def setup(conn: sqlite3.Connection, key: Key) -> tuple[str, dict[str, Any]] | None:
    """The generation's requirement and its simulation_config summary, or None if it is unknown."""
    row = conn.execute(f"SELECT requirement, config FROM sim_generations WHERE {KEY}", key).fetchone()
    return (row[0] or "", json.loads(row[1] or "{}")) if row else None


def platforms(conn: sqlite3.Connection, key: Key) -> dict[str, dict[str, Any]]:
    """Per platform: actions, rounds (as announced, else the last seen) and whether all rounds ran."""
    return {row["platform"]: {"actions": row["actions"], "rounds": row["total_rounds"],
                              "all_rounds_ran": bool(row["all_rounds_ran"])}
            for row in rows_as_dicts(conn.execute(
                "SELECT platform, actions, all_rounds_ran, coalesce(total_rounds, (SELECT max(r.round) FROM"
                " sim_rounds r WHERE r.simulation_id = p.simulation_id AND r.generation = p.generation AND"
                f" r.platform = p.platform)) AS total_rounds FROM sim_platforms p WHERE {KEY}"
                " ORDER BY platform", key))}


def stance_counts(conn: sqlite3.Connection, key: Key) -> dict[str, int]:
    return dict(conn.execute(f"SELECT stance, count(*) FROM sim_agents WHERE {KEY} GROUP BY stance"
                             " ORDER BY stance", key).fetchall())


def entity_type_counts(conn: sqlite3.Connection, key: Key, limit: int) -> dict[str, int]:
    """The most common entity types of the agents, with their counts."""
    return dict(conn.execute(f"SELECT entity_type, count(*) FROM sim_agents WHERE {KEY} GROUP BY entity_type"
                             " ORDER BY count(*) DESC, entity_type LIMIT ?", (*key, limit)).fetchall())


def rejections(conn: sqlite3.Connection) -> int:
    """Lines and rows ingest refused, over every simulation."""
    return int(conn.execute("SELECT coalesce(sum(lines), 0) FROM sim_rejections").fetchone()[0])


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


# --- what the report agent's tools read --------------------------------------------------

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


def most_active(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT a.agent_id, coalesce(g.name, ''), coalesce(g.stance, ''), sum(a.actions), sum(a.posts)"
        " FROM sim_activity a LEFT JOIN sim_agents g USING (simulation_id, generation, agent_id)"
        " WHERE a.simulation_id = ? AND a.generation = ? GROUP BY a.agent_id"
        " ORDER BY sum(a.actions) DESC, a.agent_id LIMIT ?", (*key, limit)).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "actions": c, "posts": p} for a, n, s, c, p in rows]


def most_engaged_agents(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    """Agents others reacted to most (likes, reposts, quotes, comments, follows received), from the counters."""
    rows = conn.execute(
        "SELECT n.agent_id, coalesce(g.name, ''), coalesce(g.stance, ''), n.reactions, n.shares, n.comments, n.likes"
        " FROM sim_engagement n LEFT JOIN sim_agents g USING (simulation_id, generation, agent_id)"
        " WHERE n.simulation_id = ? AND n.generation = ? AND n.reactions > 0"
        " ORDER BY n.reactions DESC, n.agent_id LIMIT ?", (*key, limit)).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "reactions": c, "shares": sh, "comments": cm, "likes": lk}
            for a, n, s, c, sh, cm, lk in rows]


def action_mix(conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, list[dict[str, Any]]]:
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


def post_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    ref, kind, platform, round_no, content, quoted, quoted_author, agent, name, stance = row
    post = {"ref": ref, "kind": kind, "platform": platform, "round": round_no, "content": content,
            "agent": {"id": agent, "ref": f"agent:{agent}", "name": name, "stance": stance}}
    if quoted:
        post["quoting"] = {"author": quoted_author, "content": quoted}
    return post


def search(conn: sqlite3.Connection, key: tuple[str, int], query: str, limit: int,
            kinds: tuple[str, ...] | None) -> list[dict[str, Any]]:
    expression = fts_query(query)
    if not expression:
        return []
    kinds_json = json.dumps(list(kinds)) if kinds else None
    within, bounds = in_windows(match_windows(conn, expression, key))
    # Ranked first, joined after: the author and the text of the few kept, not of every match (at 1M actions
    # a search took 49 ms at the median and 181 at most, now 37 and 105; the same posts).
    rows = conn.execute(
        f"SELECT {POST_COLUMNS} FROM (SELECT p.id, bm25(sim_posts_fts) AS score"
        " FROM sim_posts_fts CROSS JOIN sim_posts p ON p.id = sim_posts_fts.rowid"
        f" WHERE sim_posts_fts MATCH ? AND {within} AND p.simulation_id = ? AND p.generation = ?"
        " AND (? IS NULL OR p.kind IN (SELECT value FROM json_each(?))) ORDER BY score, p.id LIMIT ?) AS ranked"
        f" CROSS JOIN sim_posts p ON p.id = ranked.id {AGENT_JOIN} ORDER BY ranked.score, p.id",
        (expression, *bounds, *key, kinds_json, kinds_json, limit)).fetchall()
    return [post_dict(r) for r in rows]


def posts_by_refs(conn: sqlite3.Connection, key: Key, refs: list[str]) -> list[dict[str, Any]]:
    """The statements these citation ids name, in the order given (ids not in the run are left out)."""
    rows = conn.execute(f"SELECT {POST_COLUMNS} FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ?"
                        " AND p.ref IN (SELECT value FROM json_each(?)) ORDER BY p.id", (*key, json.dumps(refs)))
    found = {row[0]: post_dict(row) for row in rows}
    return [found[r] for r in refs if r in found]


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


def most_engaged_posts(conn: sqlite3.Connection, key: tuple[str, int], limit: int) -> list[dict[str, Any]]:
    """The posts and quotes others reacted to most, read from the engagement counter's index."""
    rows = conn.execute(
        f"SELECT {POST_COLUMNS}, p.engagement FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ?"
        " AND p.kind IN ('post', 'quote') ORDER BY p.engagement DESC, p.id LIMIT ?", (*key, limit)).fetchall()
    return [{**post_dict(r[:-1]), "engagement": r[-1]} for r in rows]


def profiles(conn: sqlite3.Connection, key: tuple[str, int], agent_ids: list[int]) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT g.agent_id, g.name, g.stance, g.entity_type, g.bio,"
        " (SELECT coalesce(sum(actions), 0) FROM sim_activity a WHERE a.simulation_id = g.simulation_id"
        "  AND a.generation = g.generation AND a.agent_id = g.agent_id)"
        " FROM sim_agents g WHERE g.simulation_id = ? AND g.generation = ?"
        " AND g.agent_id IN (SELECT value FROM json_each(?)) ORDER BY g.agent_id",
        (*key, json.dumps(agent_ids))).fetchall()
    return [{"ref": f"agent:{a}", "name": n, "stance": s, "type": t, "bio": b, "actions": c}
            for a, n, s, t, b, c in rows]


def chains(conn: sqlite3.Connection, key: tuple[str, int], agent_ids: list[int]) -> list[dict[str, Any]]:
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


def last_statement(conn: sqlite3.Connection, key: Key) -> int:
    """The row id of the run's newest post, quote, comment or profile (0 before any): it moves when they do."""
    row = conn.execute(f"SELECT id FROM sim_posts WHERE {KEY} ORDER BY id DESC LIMIT 1", key).fetchone()
    return int(row[0]) if row else 0


def statement_places(conn: sqlite3.Connection, key: Key) -> list[tuple[str, int, int]]:
    """(ref, agent, round) of every post, quote and comment of the run, in the order of the log: what a sample
    of statements to label is chosen from."""
    return conn.execute(f"SELECT ref, agent_id, round FROM sim_posts WHERE {KEY} AND kind IN ('post', 'quote',"
                        " 'comment') ORDER BY id", key).fetchall()


def sayings(conn: sqlite3.Connection, key: tuple[str, int]) -> list[tuple[Any, ...]]:
    """What the fold kept per agent and argument for the camps (`simulation.Sayings`), with the agent's name
    and stated stance: (agent, argument, name, stance, statements, first round, ref, position, text, last
    round, ref, position, posts and quotes, first post's round, ref, position, text). A row per agent and
    argument, however many times each was said: the camps of a run of a million actions read 7,852 rows,
    not 474,082 statements."""
    return conn.execute(
        "SELECT s.agent_id, s.argument, coalesce(a.name, ''), coalesce(a.stance, ''), s.statements, s.first_round,"
        " s.first_ref, s.first_position, s.first_content, s.last_round, s.last_ref, s.last_position, s.posts,"
        " s.post_round, s.post_ref, s.post_position, s.post_content FROM sim_sayings s LEFT JOIN sim_agents a"
        " ON a.simulation_id = s.simulation_id AND a.generation = s.generation AND a.agent_id = s.agent_id"
        " WHERE s.simulation_id = ? AND s.generation = ?", key).fetchall()


def undone_actions(conn: sqlite3.Connection, key: tuple[str, int]) -> int:
    """Undone actions (unlikes, unfollows...) that took back an earlier one, from the per-platform counters."""
    return int(conn.execute(f"SELECT coalesce(sum(undone), 0) FROM sim_platforms WHERE {KEY}", key).fetchone()[0])


def topic_writers(conn: sqlite3.Connection, key: Key, topic: str) -> list[int]:
    """Agents by how many of their statements match `topic` (in the sample `match_windows` keeps)."""
    expression = fts_query(topic)
    if not expression:
        return []
    within, bounds = in_windows(match_windows(conn, expression, key))
    return [r[0] for r in conn.execute(
        "SELECT p.agent_id FROM sim_posts_fts CROSS JOIN sim_posts p ON p.id = sim_posts_fts.rowid"  # the match drives
        f" WHERE sim_posts_fts MATCH ? AND {within} AND p.simulation_id = ? AND p.generation = ?"
        " AND p.kind != 'profile' GROUP BY p.agent_id ORDER BY count(*) DESC, p.agent_id", (expression, *bounds, *key))]


def relevant_statements(conn: sqlite3.Connection, key: Key, agent_ids: list[int],
                        question: str) -> dict[int, list[dict[str, Any]]]:
    """Each agent's three statements that match `question` best (in the sample `match_windows` keeps), in one
    pass over the matches for all of them: an interview asks five agents (1M actions: 317 -> 101 ms)."""
    found: dict[int, list[dict[str, Any]]] = {agent_id: [] for agent_id in agent_ids}
    expression = fts_query(question)
    if not expression:
        return found
    within, bounds = in_windows(match_windows(conn, expression, key))
    for agent_id, ref, content, round_no in conn.execute(
            "SELECT agent_id, ref, content, round FROM (SELECT p.agent_id, p.ref, p.content, p.round,"
            " row_number() OVER (PARTITION BY p.agent_id ORDER BY bm25(sim_posts_fts), p.id) AS n"
            " FROM sim_posts_fts CROSS JOIN sim_posts p ON p.id = sim_posts_fts.rowid"
            f" WHERE sim_posts_fts MATCH ? AND {within} AND p.simulation_id = ? AND p.generation = ?"
            " AND p.agent_id IN (SELECT value FROM json_each(?)) AND p.kind IN ('post', 'quote', 'comment'))"
            " WHERE n <= 3 ORDER BY agent_id, n", (expression, *bounds, *key, json.dumps(agent_ids))):
        found[agent_id].append({"ref": ref, "content": content, "round": round_no})
    return found


# --- one agent's trajectory, and the coalitions (agent_profile, coalitions) --------------------------

def agents_named(conn: sqlite3.Connection, key: Key, name: str, limit: int = 5) -> list[dict[str, Any]]:
    """Agents whose name or username is `name` (any case); failing that, those whose name contains it."""
    exact = rows_as_dicts(conn.execute(
        f"SELECT agent_id, name FROM sim_agents WHERE {KEY} AND (lower(name) = lower(?) OR lower(username) = lower(?))"
        " ORDER BY agent_id LIMIT ?", (*key, name, name, limit)))
    return exact or rows_as_dicts(conn.execute(
        f"SELECT agent_id, name FROM sim_agents WHERE {KEY} AND instr(lower(name), lower(?)) > 0"
        " ORDER BY agent_id LIMIT ?", (*key, name, limit)))


def agent_rounds(conn: sqlite3.Connection, key: Key, agent_id: int) -> list[tuple[str, int, int]]:
    """(platform, round, actions) of one agent's posts, quotes, comments and reactions (likes, reposts, follows...),
    in round order; searches and idle turns leave no row to count by round."""
    # `+platform`: grouped by the bare column, SQLite walked every post of the run in the order of the index
    # that starts with the platform (sim_posts_by_id) instead of the agent's few (150 ms -> 2 ms at 1M actions).
    return [(str(p), int(r), int(a)) for p, r, a in conn.execute(
        "SELECT platform, round, sum(n) FROM (SELECT platform, round, count(*) AS n FROM sim_posts"
        f" WHERE {KEY} AND agent_id = ? AND kind IN ('post', 'quote', 'comment') GROUP BY +platform, round"
        " UNION ALL SELECT platform, round, count(*) FROM sim_edges"  # a quote or comment is a post and an edge
        f" WHERE {KEY} AND src_agent = ? AND kind NOT IN ('quote', 'comment') GROUP BY platform, round)"
        " GROUP BY platform, round ORDER BY round, platform", (*key, agent_id, *key, agent_id))]


def agent_statements(conn: sqlite3.Connection, key: Key, agent_id: int, limit: int,
                     newest: bool) -> list[dict[str, Any]]:
    """An agent's first (or newest) posts, quotes and comments with their ids and the reactions each drew."""
    rows = conn.execute(
        f"SELECT {POST_COLUMNS}, p.engagement FROM {POST_JOIN} WHERE p.simulation_id = ? AND p.generation = ?"
        f" AND p.agent_id = ? AND p.kind IN ('post', 'quote', 'comment') ORDER BY p.id {'DESC' if newest else ''}"
        " LIMIT ?", (*key, agent_id, limit)).fetchall()
    return [{**post_dict(r[:-1]), "engagement": r[-1]} for r in rows]


def agent_statement_count(conn: sqlite3.Connection, key: Key, agent_id: int) -> int:
    return int(conn.execute(f"SELECT count(*) FROM sim_posts WHERE {KEY} AND agent_id = ?"
                            " AND kind IN ('post', 'quote', 'comment')", (*key, agent_id)).fetchone()[0])


def agent_reactions(conn: sqlite3.Connection, key: Key, agent_id: int) -> dict[str, int]:
    """The reactions others gave an agent (likes, reposts and quotes, comments, follows...), from the counter."""
    row = conn.execute(f"SELECT reactions, shares, comments, likes FROM sim_engagement WHERE {KEY} AND agent_id = ?",
                       (*key, agent_id)).fetchone()
    return dict(zip(("reactions", "shares", "comments", "likes"), row or (0, 0, 0, 0), strict=True))


def mutual_follows(conn: sqlite3.Connection, key: Key) -> list[tuple[int, int]]:
    """Pairs (a < b) of agents who follow each other, neither follow undone."""
    return [(int(a), int(b)) for a, b in conn.execute(
        "SELECT f.src_agent, f.dst_agent FROM sim_links f JOIN sim_links back ON back.simulation_id = f.simulation_id"
        " AND back.generation = f.generation AND back.src_agent = f.dst_agent AND back.kind = 'follow'"
        " AND back.dst_agent = f.src_agent WHERE f.simulation_id = ? AND f.generation = ? AND f.kind = 'follow'"
        " AND f.src_agent < f.dst_agent AND f.count > f.undone AND back.count > back.undone ORDER BY 1, 2", key)]


def follow_rounds(conn: sqlite3.Connection, key: Key, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """{(follower, followee): the first round of a follow still standing} for these pairs."""
    return {(int(s), int(d)): int(r) for s, d, r in conn.execute(
        "SELECT e.src_agent, e.dst_agent, min(e.round) FROM json_each(?) j CROSS JOIN sim_edges e"
        " ON e.simulation_id = ? AND e.generation = ? AND e.src_agent = json_extract(j.value, '$[0]') AND e.kind = 'follow'"
        " AND e.dst_agent = json_extract(j.value, '$[1]') AND e.undone = 0 GROUP BY e.src_agent, e.dst_agent",
        (json.dumps(pairs), *key))}
