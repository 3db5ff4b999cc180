"""Read an OASIS v0.2.5 simulation database (docs/formats.md#oasis-databases): the actions it holds, its
interviews, and the targets the runner drops from actions.jsonl (docs/guide.md#what-is-read-from-where).

Every function takes a connection opened by `foreign.query` (read-only, with a deadline). The `trace` table
is read in rowid order; its `info` holds only ids (`oasis/social_platform/platform.py`), so names and texts
are joined back from the other tables, as MiroFish's runner does, plus the targets the runner leaves out: a
comment's post, a repost's original, a mute's target. Columns are looked up in the schema, never assumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from simreportd.daemon.ingest import values

from .rounds import RoundClock
from .tail import FileIdentity

NOT_ACTIONS = ("refresh", "sign_up")  # the runner never copies these rows (they embed feeds, or set up users)
INTERVIEW = "interview"
PAGE = 5000
KEPT = ("content", "post_id", "comment_id", "quoted_id", "new_post_id", "follow_id", "query", "like_id",
        "dislike_id")  # the info keys the runner copies into a line's action_args
POST_COLUMNS = ("post_id", "user_id", "original_post_id", "content", "quote_content")


class Interview(NamedTuple):
    """An `interview` trace row: an answer given in the live environment, not an action of a round."""

    rowid: int
    agent_id: Any
    prompt: str
    response: str
    interview_id: str
    timestamp: str


class Want(NamedTuple):
    """An action line that lacks a target the database holds: `nth` is its 0-based rank among the same agent's
    lines of that type (the only way to find a mute, whose line keeps no id)."""

    line: int
    action_type: str
    agent_id: int
    args: dict[str, Any]
    nth: int


def identify_db(conn: sqlite3.Connection, path: Path) -> FileIdentity | None:
    """Inode, last trace rowid (as the size) and a hash of the first trace row; None while `trace` is empty."""
    _check_trace(conn)
    first = conn.execute("SELECT rowid, user_id, created_at, action, info FROM trace ORDER BY rowid LIMIT 1").fetchone()
    if first is None:
        return None
    last = conn.execute("SELECT max(rowid) FROM trace").fetchone()[0]
    head = hashlib.sha1(json.dumps([str(v) for v in tuple(first)]).encode()).hexdigest()[:16]
    return FileIdentity(os.stat(path).st_ino, int(last), head)


def _check_trace(conn: sqlite3.Connection) -> None:
    """Raise when `trace` lacks the columns read (a schema we cannot read, said as such)."""
    columns = _columns(conn, "trace")
    missing = {"user_id", "action", "info"} - columns
    if missing:
        raise sqlite3.OperationalError(f"no trace table with {', '.join(sorted(missing))}")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))}


def read_rows(conn: sqlite3.Connection, after_rowid: int, clock: RoundClock, names: dict[int, str]
              ) -> tuple[int, list[tuple[int, dict[str, Any]] | Interview]]:
    """For a folder whose database is its only source: the last rowid looked at, and in rowid order the
    action lines rebuilt from the rows after `after_rowid` as (rowid, line), and the interviews among them."""
    _check_trace(conn)
    first = conn.execute("SELECT created_at FROM trace ORDER BY rowid LIMIT 1").fetchone()
    rows = conn.execute("SELECT rowid, user_id, created_at, action, info FROM trace WHERE rowid > ?"
                        " ORDER BY rowid LIMIT ?", (after_rowid, PAGE)).fetchall()
    items: list[tuple[int, dict[str, Any]] | Interview] = []
    for row in rows:
        if row["action"] == INTERVIEW:
            items.append(_interview(row))
        elif row["action"] not in NOT_ACTIONS:
            items.append((row["rowid"], _action(conn, row, first[0], clock, names)))
    return (rows[-1]["rowid"] if rows else after_rowid), items


def read_interviews(conn: sqlite3.Connection, after_rowid: int) -> tuple[int, list[Interview]]:
    """The interviews after `after_rowid` (a folder whose actions come from actions.jsonl), and the last rowid."""
    _check_trace(conn)
    last = conn.execute("SELECT max(rowid) FROM trace").fetchone()[0] or after_rowid
    rows = conn.execute("SELECT rowid, user_id, created_at, action, info FROM trace WHERE rowid > ? AND action = ?"
                        " ORDER BY rowid LIMIT ?", (after_rowid, INTERVIEW, PAGE)).fetchall()
    if len(rows) == PAGE:
        last = rows[-1]["rowid"]
    return int(last), [_interview(row) for row in rows]


def _info(row: sqlite3.Row) -> dict[str, Any]:
    try:
        info = values.loads(row["info"] or "{}", check_values=False)
    except values.BadValue:
        info = {"raw": str(row["info"])[:200]}
    return info if isinstance(info, dict) else {"value": info}


def _interview(row: sqlite3.Row) -> Interview:
    info = _info(row)
    return Interview(row["rowid"], row["user_id"], str(info.get("prompt") or ""), str(info.get("response") or ""),
                     str(info.get("interview_id") or ""), str(row["created_at"]))


def _action(conn: sqlite3.Connection, row: sqlite3.Row, start: Any, clock: RoundClock,
            names: dict[int, str]) -> dict[str, Any]:
    """The line the runner would have written for this row, with the targets it drops put back."""
    info, action = _info(row), str(row["action"])
    args = {k: info[k] for k in KEPT if k in info}
    args.update(_context(conn, action, info, names))
    return {"round": _round(row["created_at"], start, clock), "timestamp": str(row["created_at"]),
            "agent_id": row["user_id"], "agent_name": _name(conn, row["user_id"], names) or f"Agent_{row['user_id']}",
            "action_type": action.upper(), "action_args": args, "result": None, "success": True}


def _round(created_at: Any, start: Any, clock: RoundClock) -> int:
    """Twitter's `created_at` counts environment steps, the rounds `clock` says step (rounds.py); Reddit's is a
    scaled wall-clock time, turned into rounds since the first row (a guess)."""
    if isinstance(created_at, int):
        return clock.round_of_step(created_at)
    try:
        delta = datetime.fromisoformat(str(created_at)) - datetime.fromisoformat(str(start))
    except ValueError:
        return 0
    return max(0, int(delta.total_seconds() // (60 * max(1, clock.minutes_per_round))))


def _name(conn: sqlite3.Connection, user_id: Any, names: dict[int, str]) -> str:
    """An agent's name as the runner gives it: the simulation's own name for the agent, else OASIS's."""
    row = conn.execute("SELECT * FROM user WHERE user_id = ?", (user_id,)).fetchone()
    agent_id = row["agent_id"] if row is not None and "agent_id" in row.keys() else user_id
    if isinstance(agent_id, int) and agent_id in names:
        return names[agent_id]
    if row is None:
        return ""
    keys = row.keys()
    return str(next((row[k] for k in ("name", "user_name") if k in keys and row[k]), ""))


def _post(conn: sqlite3.Connection, post_id: Any) -> dict[str, Any] | None:
    wanted = [c for c in POST_COLUMNS if c in _columns(conn, "post")]  # names from a fixed list: never input
    if "post_id" not in wanted or post_id is None:
        return None
    row = conn.execute(f"SELECT {', '.join(wanted)} FROM post WHERE post_id = ?", (post_id,)).fetchone()
    return dict(row) if row is not None else None


def _context(conn: sqlite3.Connection, action: str, info: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    """What the runner joins into a line, and the targets it leaves out, from the ids `info` keeps."""
    if action in ("like_post", "dislike_post") and (post := _post(conn, info.get("post_id"))):
        return {"post_content": post.get("content"), "post_author_name": _name(conn, post.get("user_id"), names)}
    if action in ("repost", "quote_post"):
        return _shared(conn, action, info, names)
    if action in ("follow", "mute"):
        return _user_target(conn, action, info, names)
    if action in ("like_comment", "dislike_comment", "create_comment"):
        return _comment(conn, action, info, names)
    return {}


def _shared(conn: sqlite3.Connection, action: str, info: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    new = _post(conn, info.get("new_post_id")) or {}
    original_id = info.get("quoted_id") if action == "quote_post" else new.get("original_post_id")
    original = _post(conn, original_id if original_id is not None else info.get("reposted_id"))
    out: dict[str, Any] = {}
    if original:
        out.update(original_content=original.get("content"),
                   original_author_name=_name(conn, original.get("user_id"), names))
        if action == "repost":
            out["post_id"] = original["post_id"]  # the runner drops `reposted_id`: the original, put back
    if action == "quote_post" and new.get("quote_content"):
        out["quote_content"] = new["quote_content"]
    return out


def _user_target(conn: sqlite3.Connection, action: str, info: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    target = info.get("mutee_id")
    if action == "follow" and info.get("follow_id") is not None:
        row = conn.execute("SELECT followee_id FROM follow WHERE follow_id = ?", (info["follow_id"],)).fetchone()
        target = row[0] if row else None
    name = _name(conn, target, names) if target is not None else ""
    return {"target_user_name": name} if name else {}


def _comment(conn: sqlite3.Connection, action: str, info: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    if info.get("comment_id") is None:
        return {}
    row = conn.execute("SELECT * FROM comment WHERE comment_id = ?", (info["comment_id"],)).fetchone()
    if row is None:
        return {}
    row = dict(row)
    if action == "create_comment":
        return {"post_id": row.get("post_id")} if row.get("post_id") is not None else {}
    return {"comment_content": row.get("content"), "comment_author_name": _name(conn, row.get("user_id"), names)}


def fill_targets(conn: sqlite3.Connection, wants: list[Want], names: dict[int, str]) -> dict[int, dict[str, Any]]:
    """For action lines of actions.jsonl: what each `Want` lacks, from the database (by line index). Ids the
    line kept lead to their rows; a mute, which keeps none, is the agent's nth `mute` row of `trace`."""
    _check_trace(conn)
    found: dict[int, dict[str, Any]] = {}
    for want in wants:
        action, info = want.action_type.lower(), dict(want.args)
        if action == "mute":
            row = conn.execute("SELECT info FROM trace WHERE action = 'mute' AND user_id = ? ORDER BY rowid"
                               " LIMIT 1 OFFSET ?", (want.agent_id, want.nth)).fetchone()
            info.update(_info(row) if row else {})
        if action == "repost" and "new_post_id" not in info:
            continue
        extra = {k: v for k, v in _context(conn, action, info, names).items() if k not in want.args}
        if extra:
            found[want.line] = extra
    return found


def missing_target(action_type: str, args: dict[str, Any]) -> bool:
    """Whether a line of this type lacks the target the database could give it."""
    if action_type in ("CREATE_COMMENT", "REPOST"):
        return not isinstance(args.get("post_id"), int)
    if action_type in ("MUTE", "FOLLOW"):
        return not args.get("target_user_name")
    if action_type in ("LIKE_COMMENT", "DISLIKE_COMMENT"):
        return not args.get("comment_author_name")
    return False
