"""Write the raw OASIS SQLite database of one platform (docs/formats.md#oasis-databases) for a story."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

from .story import Story

SCHEMA = """
CREATE TABLE user (user_id INTEGER PRIMARY KEY, agent_id INTEGER, user_name TEXT, name TEXT, bio TEXT,
                   created_at DATETIME, num_followings INTEGER DEFAULT 0, num_followers INTEGER DEFAULT 0);
CREATE TABLE post (post_id INTEGER PRIMARY KEY, user_id INTEGER, original_post_id INTEGER, content TEXT,
                   quote_content TEXT, created_at DATETIME, num_likes INTEGER DEFAULT 0,
                   num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0);
CREATE TABLE comment (comment_id INTEGER PRIMARY KEY, post_id INTEGER, user_id INTEGER, content TEXT,
                      created_at DATETIME, num_likes INTEGER DEFAULT 0, num_dislikes INTEGER DEFAULT 0);
CREATE TABLE follow (follow_id INTEGER PRIMARY KEY, follower_id INTEGER, followee_id INTEGER, created_at DATETIME);
CREATE TABLE "like" (like_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER, created_at DATETIME);
CREATE TABLE dislike (dislike_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER, created_at DATETIME);
CREATE TABLE mute (mute_id INTEGER PRIMARY KEY, muter_id INTEGER, mutee_id INTEGER, created_at DATETIME);
CREATE TABLE trace (user_id INTEGER, created_at DATETIME, action TEXT, info TEXT);
"""


def write_oasis_db(path: Path, story: Story, platform: str) -> None:
    """Replay the story's lines into OASIS tables; `info` keeps only ids, as OASIS does."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    by_name = {a.name: a.agent_id for a in story.agents}
    with conn:
        for a in story.agents:
            conn.execute("INSERT INTO user VALUES (?, ?, ?, ?, ?, ?, 0, 0)",
                         (a.agent_id, a.agent_id, a.username, a.name, a.bio, story.start.isoformat()))
            conn.execute("INSERT INTO trace VALUES (?, ?, 'sign_up', ?)",
                         (a.agent_id, _when(story, platform, 0), json.dumps({"name": a.name})))
        for round_no, lines in enumerate(story.lines[platform]):
            when = _when(story, platform, round_no)
            for line in lines:
                _record(conn, line, when, by_name)
            conn.execute("INSERT INTO trace VALUES (0, ?, 'refresh', ?)", (when, json.dumps({"posts": []})))
    conn.close()


def _when(story: Story, platform: str, round_no: int) -> int | str:
    """Twitter stores an integer step, Reddit a datetime string: readers must cope with both."""
    return round_no if platform == "twitter" else (story.start + timedelta(hours=round_no)).isoformat(" ")


def _record(conn: sqlite3.Connection, line: dict[str, Any], when: int | str, by_name: dict[str, int]) -> None:
    kind, args, user = line["action_type"], line["action_args"], line["agent_id"]
    info: dict[str, Any] = {}
    if kind == "CREATE_POST":
        conn.execute("INSERT INTO post (post_id, user_id, content, created_at) VALUES (?, ?, ?, ?)",
                     (args["post_id"], user, args["content"], when))
        info = {"content": args["content"], "post_id": args["post_id"]}
    elif kind in ("REPOST", "QUOTE_POST"):
        original = args.get("post_id", args.get("quoted_id"))
        conn.execute("INSERT INTO post (post_id, user_id, original_post_id, content, quote_content, created_at)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     (args["new_post_id"], user, original, args["original_content"], args.get("quote_content"), when))
        info = {"new_post_id": args["new_post_id"]}
    elif kind in ("LIKE_POST", "DISLIKE_POST"):
        table = "like" if kind == "LIKE_POST" else "dislike"
        conn.execute(f'INSERT INTO "{table}" (user_id, post_id, created_at) VALUES (?, ?, ?)',
                     (user, args["post_id"], when))
        info = {"post_id": args["post_id"]}
    elif kind == "FOLLOW":
        cur = conn.execute("INSERT INTO follow (follower_id, followee_id, created_at) VALUES (?, ?, ?)",
                           (user, args.get("agent_id", by_name.get(args.get("target_user_name", ""))), when))
        info = {"follow_id": cur.lastrowid}
    elif kind == "CREATE_COMMENT":
        conn.execute("INSERT INTO comment (comment_id, post_id, user_id, content, created_at) VALUES (?, ?, ?, ?, ?)",
                     (args["comment_id"], args["post_id"], user, args["content"], when))
        info = {"content": args["content"], "comment_id": args["comment_id"]}
    else:
        info = {k: v for k, v in args.items() if k in ("comment_id", "query")}
    conn.execute("INSERT INTO trace VALUES (?, ?, ?, ?)", (user, when, kind.lower(), json.dumps(info)))
