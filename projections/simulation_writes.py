"""The statements the simulation model writes, and what an action's arguments name (docs/architecture.md#read-models):
shared by the fold of one event (`simulation.py`) and the fold of a page of them (`simulation_batch.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from simreportd.events.positions import Position

from .projection import Write
from .tallies import citation

# Action -> (edge kind, how the target is named in action_args)
EDGES = {
    "LIKE_POST": ("like", "post_id", "post_author_name"),
    "DISLIKE_POST": ("dislike", "post_id", "post_author_name"),
    "REPOST": ("repost", "post_id", "original_author_name"),
    "QUOTE_POST": ("quote", "quoted_id", "original_author_name"),
    "CREATE_COMMENT": ("comment", "post_id", None),
    "LIKE_COMMENT": ("like_comment", None, "comment_author_name"),
    "DISLIKE_COMMENT": ("dislike_comment", None, "comment_author_name"),
    "FOLLOW": ("follow", None, "target_user_name"),
    "MUTE": ("mute", None, "target_user_name"),
}
UNDO = {"UNFOLLOW": "follow", "UNLIKE_POST": "like", "UNDO_LIKE_POST": "like", "UNDO_DISLIKE_POST": "dislike",
        "UNMUTE": "mute", "UNDO_REPOST": "repost"}

KEY = "simulation_id = ? AND generation = ?"
AUTHOR_OF_POST = (f"(SELECT agent_id FROM sim_posts WHERE {KEY} AND platform = ? AND post_id = ?"
                  " AND kind IN ('post', 'quote') LIMIT 1)")  # comments number their own ids: not a post's author
# A name two agents hold names neither: a follow by a shared name has no target, not the first agent of the name.
AGENT_NAMED = f"(SELECT min(agent_id) FROM sim_agents WHERE {KEY} AND name = ? HAVING count(*) = 1)"


# A post's row and its search row, by explicit rowids: a run's posts take the ids after the table's last, in
# order (what autoincrement gave them one at a time), and its search rows the same ids, counted back from the
# last: two `executemany` a run, where `last_insert_rowid()` made each post two statements of its own.
POST = ("INSERT INTO sim_posts (id, simulation_id, generation, platform, ref, kind, post_id, parent_post_id,"
        " agent_id, round, content, quoted_content, quoted_author, position)"
        " VALUES ((SELECT coalesce(max(id), 0) + 1 FROM sim_posts), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
POST_SEARCH = "INSERT INTO sim_posts_fts (rowid, content) VALUES ((SELECT max(id) FROM sim_posts) - ?, ?)"


HAN = re.compile(r"([\u3400-\u9fff\uf900-\ufaff])")


def han_spaced(text: str) -> str:
    """Han characters as single tokens (Chinese has no spaces, so unicode61 would index whole clauses).
    ASCII text, most posts of most runs, skips the search (2.4 us a post)."""
    return text if text.isascii() else HAN.sub(r" \1 ", text)


EDGE = (f"INSERT INTO sim_edges VALUES (?, ?, ?, ?, ?, ?, ?, coalesce({AUTHOR_OF_POST}, ?, {AGENT_NAMED}, ?), ?, ?, 0)")
EDGE_KNOWN = "INSERT INTO sim_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"  # its target found in memory


SHARES, COMMENTS, LIKES = ("repost", "quote"), ("comment",), ("like", "like_comment")
EDGE_LINKS = ("INSERT INTO sim_links SELECT simulation_id, generation, src_agent, kind, dst_agent, count(*), 0"
              " FROM sim_edges WHERE position BETWEEN ? AND ? AND dst_agent IS NOT NULL"
              " GROUP BY simulation_id, generation, src_agent, kind, dst_agent"
              " ON CONFLICT DO UPDATE SET count = count + excluded.count")
EDGE_ENGAGEMENT = ("INSERT INTO sim_engagement SELECT simulation_id, generation, dst_agent, count(*),"
                   f" sum(kind IN {SHARES}), sum(kind IN ('{COMMENTS[0]}')), sum(kind IN {LIKES})"
                   " FROM sim_edges WHERE position BETWEEN ? AND ? AND dst_agent != src_agent"
                   " GROUP BY simulation_id, generation, dst_agent ON CONFLICT DO UPDATE SET"
                   " reactions = reactions + excluded.reactions, shares = shares + excluded.shares,"
                   " comments = comments + excluded.comments, likes = likes + excluded.likes")
POST_ENGAGEMENT = f"UPDATE sim_posts SET engagement = engagement + ? WHERE {KEY} AND platform = ? AND post_id = ? AND ref = ?"


def target_agent(edge: str, args: dict[str, Any]) -> int | None:
    """A follow's or mute's target by id, when its name is missing: the native environment writes the followee
    under `agent_id` (docs/formats.md#action-lines; SimSwarm's coalition detector missed it), OASIS under `followee_id`."""
    if edge not in ("follow", "mute"):
        return None
    return next((args[k] for k in ("agent_id", "followee_id") if type(args.get(k)) is int), None)


def undone_target(edge: str, args: dict[str, Any], p: str) -> tuple[str | None, str, int | None]:
    """What an undo names: (target name, target post ref, target agent id). A follow or mute undone by the
    target's id alone (OASIS's `followee_id`) matches on that id, not on every follow without a name."""
    name = args.get("target_user_name") or args.get("post_author_name") or ""
    target_id = target_agent(edge, args) if not name else None
    return (None if target_id is not None else name), citation("post", p, args.get("post_id"), Position(0)), target_id


def undo_writes(key: tuple[str, int], p: str, agent: int, edge: str,
          target: tuple[str | None, str, int | None]) -> Iterable[Write]:
    """Mark the agent's latest live `edge` to `target` (a name, a post ref or an agent id) undone, and take it off
    the counters."""
    undone = (f"(SELECT max(position) FROM sim_edges WHERE {KEY} AND platform = ? AND kind = ? AND src_agent = ?"
              " AND undone = 0 AND (dst_name = ? OR target_ref = ? OR dst_agent = ?))")
    args = (*key, p, edge, agent, *target)
    yield (f"UPDATE sim_links SET undone = undone + 1 WHERE {KEY} AND src_agent = ? AND kind = ? AND dst_agent ="
           f" (SELECT dst_agent FROM sim_edges WHERE position = {undone})", (*key, agent, edge, *args))
    yield (f"UPDATE sim_engagement SET reactions = reactions - 1, shares = shares - ?, comments = comments - ?,"
           f" likes = likes - ? WHERE {KEY} AND agent_id = (SELECT dst_agent FROM sim_edges WHERE position = {undone}"
           " AND dst_agent != src_agent)", (*reaction(edge), *key, *args))
    yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, undone) SELECT ?, ?, ?, 'running', 1"
           f" WHERE EXISTS (SELECT 1 FROM sim_edges WHERE position = {undone}) ON CONFLICT DO UPDATE SET"
           " undone = undone + 1", (*key, p, *args))  # an upsert: a batch writes the row's counters last
    yield f"UPDATE sim_edges SET undone = 1 WHERE position = {undone}", args


def reaction(edge: str) -> tuple[int, int, int]:
    """How an edge counts in its target's engagement: (shares, comments, likes)."""
    return int(edge in SHARES), int(edge in COMMENTS), int(edge in LIKES)
