"""Read an OASIS simulation database (docs/formats.md#oasis-databases) as a source of agent actions.

Used when a folder has no actions.jsonl. The `trace` table is read in rowid order,
read-only, and what its `info` leaves out is joined back from the other tables, so the
actions look like the runner's enriched actions.jsonl lines. Older databases lack some
columns: columns are looked up in the schema, never assumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from simreportd.daemon.ingest import values

from .inputs import ANYWHERE, Confinement, open_regular
from .tail import FileIdentity

SKIPPED = ("refresh", "trend", "sign_up")
PAGE = 5000


def connect(path: Path, confinement: Confinement = ANYWHERE) -> sqlite3.Connection:
    """A read-only connection, after checking the path is a regular file (a FIFO would block SQLite)."""
    try:
        os.close(open_regular(path, confinement))
    except OSError as exc:
        raise sqlite3.OperationalError(str(exc)) from exc
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
    conn.row_factory = sqlite3.Row
    return conn


def identify_db(path: Path, confinement: Confinement = ANYWHERE) -> FileIdentity | None:
    """Inode, last trace rowid (as the size) and a hash of the first trace row; None if unreadable."""
    try:
        conn = connect(path, confinement)
        try:
            first = conn.execute("SELECT rowid, * FROM trace ORDER BY rowid LIMIT 1").fetchone()
            last = conn.execute("SELECT max(rowid) FROM trace").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # missing, locked or not yet created: look again on the next change
    if first is None:
        return None
    head = hashlib.sha1(json.dumps([str(v) for v in tuple(first)]).encode()).hexdigest()[:16]
    return FileIdentity(path.stat().st_ino, int(last), head)


def read_actions(path: Path, after_rowid: int, minutes_per_round: int) -> tuple[int, list[tuple[int, dict[str, Any]]]]:
    """The last rowid looked at, and (rowid, action line) pairs after `after_rowid`, without refreshes and sign-ups."""
    conn = connect(path)
    try:
        columns = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in ("post", "comment", "user")}
        first = conn.execute("SELECT created_at FROM trace ORDER BY rowid LIMIT 1").fetchone()
        rows = conn.execute("SELECT rowid, user_id, created_at, action, info FROM trace WHERE rowid > ?"
                            " ORDER BY rowid LIMIT ?", (after_rowid, PAGE)).fetchall()
        out = []
        for row in rows:
            if row["action"] in SKIPPED:
                continue
            out.append((row["rowid"], _action(conn, columns, row, first[0], minutes_per_round)))
        return (rows[-1]["rowid"] if rows else after_rowid), out
    finally:
        conn.close()


def _action(conn: sqlite3.Connection, columns: dict[str, set[str]], row: sqlite3.Row, start: Any,
            minutes_per_round: int) -> dict[str, Any]:
    try:
        info = values.loads(row["info"] or "{}", check_values=False)
    except values.BadValue:
        info = {"raw": str(row["info"])[:200]}
    info = info if isinstance(info, dict) else {"value": info}
    return {"round": _round(row["created_at"], start, minutes_per_round), "timestamp": str(row["created_at"]),
            "agent_id": row["user_id"], "agent_name": _user_name(conn, row["user_id"]),
            "action_type": str(row["action"]).upper(), "action_args": _enrich(conn, columns, row["action"], info),
            "result": None, "success": True}


def _round(created_at: Any, start: Any, minutes_per_round: int) -> int:
    """Twitter stores an integer step; Reddit a datetime, turned into rounds since the first row."""
    if isinstance(created_at, int):
        return created_at
    try:
        delta = datetime.fromisoformat(str(created_at)) - datetime.fromisoformat(str(start))
    except ValueError:
        return 0
    return max(0, int(delta.total_seconds() // (60 * max(1, minutes_per_round))))


def _user_name(conn: sqlite3.Connection, user_id: Any) -> str:
    row = conn.execute("SELECT name FROM user WHERE user_id = ?", (user_id,)).fetchone()
    return str(row[0]) if row and row[0] is not None else ""


def _post(conn: sqlite3.Connection, columns: dict[str, set[str]], post_id: Any) -> sqlite3.Row | None:
    wanted = [c for c in ("post_id", "user_id", "original_post_id", "content", "quote_content") if c in columns["post"]]
    if "post_id" not in wanted:
        return None  # no post table (or a foreign one): nothing to join
    row: sqlite3.Row | None = conn.execute(f"SELECT {', '.join(wanted)} FROM post WHERE post_id = ?", (post_id,)).fetchone()
    return row


def _enrich(conn: sqlite3.Connection, columns: dict[str, set[str]], action: str,
            info: dict[str, Any]) -> dict[str, Any]:
    """The runner's enriched `action_args`, rebuilt from the ids OASIS keeps in `info`."""
    args = dict(info)
    if action in ("like_post", "dislike_post") and (post := _post(conn, columns, info.get("post_id"))):
        args.update(post_content=post["content"], post_author_name=_user_name(conn, post["user_id"]))
    elif action in ("repost", "quote_post") and (post := _post(conn, columns, info.get("new_post_id"))):
        original = _post(conn, columns, post["original_post_id"]) if "original_post_id" in post.keys() else None
        key = "post_id" if action == "repost" else "quoted_id"
        args.update({key: post["original_post_id"] if original else None,
                     "original_content": original["content"] if original else post["content"],
                     "original_author_name": _user_name(conn, original["user_id"]) if original else ""})
        if action == "quote_post" and "quote_content" in post.keys():
            args["quote_content"] = post["quote_content"]
    elif action == "follow" and info.get("follow_id") is not None:
        row = conn.execute("SELECT followee_id FROM follow WHERE follow_id = ?", (info["follow_id"],)).fetchone()
        if row:
            args["target_user_name"] = _user_name(conn, row[0])
    elif action == "create_comment" and info.get("comment_id") is not None:
        row = conn.execute("SELECT post_id, content FROM comment WHERE comment_id = ?", (info["comment_id"],)).fetchone()
        if row:
            args.update(post_id=row[0], content=row[1])
    return args
