"""The read-model file's own bookkeeping: its checkpoint, the fingerprint of the schemas that made it, making its
tables anew, bringing an older file's indexes up to date, and a digest of its rows.

The runner (runner.py) folds; these functions keep the file it folds into, on a connection it holds.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from simreportd.events.positions import Position

from .projection import Projection, index_names, index_statement
from .sqlite import WRITER_CACHE_KIB, transaction

NAME = "views"  # the read models' row in projection_checkpoint and projection_schema
INDEX_BUILD_CACHE_KIB = 8_192
# Fingerprints of earlier read-model schemas whose tables are today's and only whose indexes differ: a file
# built by one gets today's indexes (seconds) instead of a fold of the whole log (minutes for a sweep of runs).
INDEX_ONLY_UPGRADES: frozenset[str] = frozenset()  # none since 2026-11-26's sim_sayings: earlier files fold again
META_SCHEMA = """
CREATE TABLE IF NOT EXISTS projection_checkpoint (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS projection_schema (name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projection_failures (projection TEXT NOT NULL, position INTEGER NOT NULL,
    type TEXT NOT NULL, error TEXT NOT NULL, PRIMARY KEY (projection, position));
"""


def stored_fingerprint(conn: sqlite3.Connection) -> str | None:
    """The fingerprint of the schemas the file was made with; None for a new file."""
    row = conn.execute("SELECT fingerprint FROM projection_schema WHERE name = ?", (NAME,)).fetchone()
    return row[0] if row else None


def read_checkpoint(conn: sqlite3.Connection) -> Position:
    """The log position the read models have folded."""
    row = conn.execute("SELECT position FROM projection_checkpoint WHERE name = ?", (NAME,)).fetchone()
    return Position(int(row[0]) if row else 0)


def checkpoint(conn: sqlite3.Connection) -> Position:
    """How far the read models have folded the log: the furthest projection's position."""
    return Position(int(conn.execute("SELECT coalesce(max(position), 0) FROM projection_checkpoint").fetchone()[0]))


def reset(conn: sqlite3.Connection, projections: Sequence[Projection], fingerprint: str) -> None:
    """Drop every read model and make its tables anew, empty, with the checkpoint at 0."""
    with transaction(conn):
        for projection in projections:
            for table in projection.tables + projection.extra_tables:
                conn.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 (names are ours)
        conn.execute("DELETE FROM projection_checkpoint")
        conn.execute("DELETE FROM projection_schema")
        conn.execute("DELETE FROM projection_failures")
    for projection in projections:
        conn.executescript(projection.schema)
        for index in projection.deferred_indexes:  # built once the log is folded: see create_deferred_indexes
            conn.execute(f"DROP INDEX IF EXISTS {index}")  # noqa: S608 (names are ours)
    with transaction(conn):  # OR REPLACE, IF EXISTS: the fold child may make a healed file anew at once
        conn.execute("INSERT OR REPLACE INTO projection_schema (name, fingerprint) VALUES (?, ?)",
                     (NAME, fingerprint))


def update_indexes(conn: sqlite3.Connection, projections: Sequence[Projection], fingerprint: str) -> None:
    """Make the indexes today's schemas create, in a read model built by one of INDEX_ONLY_UPGRADES: drop
    those it no longer creates or creates otherwise, create those missing. The indexes only queries use
    wait, as after a fold from empty, if the file had not caught up yet (none of them there)."""
    wanted = {name: (index_statement(p.schema, name), name in p.deferred_indexes)
              for p in projections for name in index_names(p.schema)}
    with transaction(conn):
        if stored_fingerprint(conn) not in INDEX_ONLY_UPGRADES:
            return  # another process (the fold child) made them first
        existing = dict(conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))  # not autoindexes
        caught_up = any(deferred and name in existing for name, (_, deferred) in wanted.items())
        for name, sql in existing.items():
            if name not in wanted or normal(sql) != normal(wanted[name][0]):
                conn.execute(f'DROP INDEX "{name}"')  # noqa: S608 (a name SQLite gave back)
        for statement, deferred in wanted.values():
            if caught_up or not deferred:
                conn.execute(statement)  # IF NOT EXISTS: only those dropped or missing
        conn.execute("UPDATE projection_schema SET fingerprint = ? WHERE name = ?", (fingerprint, NAME))


def create_deferred_indexes(conn: sqlite3.Connection, projections: Sequence[Projection]) -> None:
    """Create the indexes only queries use, if a fold from an empty read model left them out: one sort
    at the end costs far less than keeping them through millions of random inserts. Its sorter gets a
    small cache, so the memory it needs stays what the fold needed."""
    existing = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    missing = [(p.schema, name) for p in projections for name in p.deferred_indexes if name not in existing]
    if missing:
        conn.execute(f"PRAGMA cache_size=-{INDEX_BUILD_CACHE_KIB}")
        try:
            for schema, name in missing:
                conn.execute(index_statement(schema, name))
        finally:  # a failed build (a full disk) leaves the fold its own cache
            conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")


DIGEST_PAGE = 1000  # rows hashed as one text: fixed, so the same rows always hash the same


def digest(conn: sqlite3.Connection, projections: Sequence[Projection]) -> tuple[dict[str, str], Position]:
    """A SHA-256 of each read model's rows, and the position they were read at (one snapshot of the file)."""
    digests = {}
    conn.execute("BEGIN")  # one snapshot of the file: a fold child may commit while the tables are read
    try:
        position = read_checkpoint(conn)
        for projection in projections:
            h = hashlib.sha256()
            for table in projection.tables:
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                order = ", ".join(columns)
                rows = conn.execute(f"SELECT {order} FROM {table} ORDER BY {order}")  # noqa: S608 (ours)
                while page := rows.fetchmany(DIGEST_PAGE):  # a page a hash update: a rebuild digests twice
                    h.update(_page_bytes(page))
            digests[projection.name] = h.hexdigest()
    finally:
        conn.execute("COMMIT")
    return digests, position


def _page_bytes(page: list[Any]) -> bytes:
    """A page of rows as bytes to hash: orjson's (a third of `repr`'s time, which a digest of every row adds up
    to), `repr`'s for a page orjson cannot write (a BLOB). orjson writes an infinity as null: a digest does not
    tell the two apart, which no fold of ours writes."""
    try:
        return orjson.dumps(page)
    except TypeError:  # orjson.JSONEncodeError is one
        return repr(page).encode()


def normal(statement: str) -> str:
    """An index statement as SQLite keeps it (without IF NOT EXISTS), spaces folded: to compare two."""
    return " ".join(statement.replace("IF NOT EXISTS ", "").rstrip(";").split())

