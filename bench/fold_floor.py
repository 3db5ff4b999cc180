"""The least a fold can spend writing its read models: their rows inserted, nothing else (bench/all.py's fold floor).

A fold must read every event (the read floor) and must leave the read-model rows the reports need. The least
writing can cost is one insert of each row the fold left, in the tables, indexes and full-text index the
projections made (their schema, as the fold's file holds it), `executemany` in transactions of 1,000 rows. This
module reads a folded views file once (outside any timing) and replays exactly its rows into a fresh file:
what a fold that knew every final row in advance would write. Counters a fold updates, rows it replaces, lookups
it makes: none of that is in the floor.

`rebuild` says whether the read models it made are those it replaced: it reads and hashes every row of both.
The digest floor is one such read: every row selected in the file's order (no sort) and hashed a page at a time
as orjson writes it.

Run by hand, `python bench/fold_floor.py VIEWS_FILE` prints the rows of a views file and the CPU their insert
took; `python bench/fold_floor.py ACTIONS` first writes a simulation of that many actions (bench/ingest.py's) and
folds its simulation model in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import resource
import sqlite3
import sys
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import orjson

ROWS_A_TRANSACTION = 1000


class ReadModels(NamedTuple):
    """A views file's schema (tables first, then full-text tables, then indexes, as `sqlite_master` holds them)
    and every row of its tables; the full-text rows as (rowid, text) taken from the table they index."""

    schema: list[str]
    rows: dict[str, tuple[str, list[tuple[Any, ...]]]]  # table -> (its INSERT, its rows)
    searched: dict[str, tuple[str, list[tuple[Any, ...]]]]  # full-text table -> (its INSERT, (rowid, text) rows)

    @property
    def count(self) -> int:
        """Rows in all (full-text rows included)."""
        return sum(len(rows) for _, rows in (*self.rows.values(), *self.searched.values()))


def read_models(views: Path) -> ReadModels:
    """Everything a fold left in `views`, read into memory."""
    with contextlib.closing(sqlite3.connect(f"{views.as_uri()}?mode=ro", uri=True)) as conn:
        entries = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
                               " AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
        virtual = {name: sql for kind, name, _, sql in entries if kind == "table" and sql.upper().startswith(
            "CREATE VIRTUAL")}
        shadow = {name for _, name, _, _ in entries if any(name.startswith(v + "_") for v in virtual)}
        tables = [name for kind, name, _, _ in entries if kind == "table" and name not in virtual and name not in shadow]
        schema = [sql for kind, name, _, sql in sorted(entries, key=lambda e: (e[0] == "index", e[0] == "trigger"))
                  if name not in shadow]
        rows = {}
        for table in tables:
            columns = len(conn.execute(f'SELECT * FROM "{table}" LIMIT 0').description)  # noqa: S608 (bench)
            rows[table] = (f'INSERT INTO "{table}" VALUES ({", ".join("?" * columns)})',
                           conn.execute(f'SELECT * FROM "{table}"').fetchall())  # noqa: S608
        searched = {name: (f'INSERT INTO "{name}" (rowid, content) VALUES (?, ?)', _indexed_rows(conn, sql))
                    for name, sql in virtual.items()}
    return ReadModels(schema, rows, searched)


def _indexed_rows(conn: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    """The (rowid, text) rows of an external-content full-text table: those of the table it indexes."""
    options = dict(part.strip().split("=", 1) for part in sql[sql.index("(") + 1:sql.rindex(")")].split(",")
                   if "=" in part)
    content, rowid = options["content"].strip("'\""), options.get("content_rowid", "rowid").strip("'\"")
    return conn.execute(f'SELECT "{rowid}", content FROM "{content}"').fetchall()  # noqa: S608 (bench)


def insert_floor(models: ReadModels, db: Path) -> None:
    """Make `models`' schema in a fresh `db` (WAL, synchronous NORMAL, as the fold's file) and insert every row,
    `executemany` in transactions of ROWS_A_TRANSACTION."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        for sql in models.schema:
            conn.execute(sql)
        for insert, rows in (*models.rows.values(), *models.searched.values()):
            page = iter(rows)
            while chunk := list(islice(page, ROWS_A_TRANSACTION)):
                conn.execute("BEGIN")
                conn.executemany(insert, chunk)
                conn.execute("COMMIT")


def digest_floor(db: Path, tables: list[str]) -> str:
    """Read every row of `tables` in `db` and hash them, ROWS_A_TRANSACTION a page: the least a digest can do."""
    h = hashlib.sha256()
    with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"')  # noqa: S608 (bench: names from sqlite_master)
            while page := rows.fetchmany(ROWS_A_TRANSACTION):
                try:
                    h.update(orjson.dumps(page))
                except TypeError:  # a BLOB: what the daemon's digest does too
                    h.update(repr(page).encode())
    return h.hexdigest()


async def folded(root: Path, actions: int) -> Path:
    """The views file of a simulation of `actions` actions written in `root`, ingested and folded here."""
    from ingest import write_big_folder

    from simreportd.daemon.ingest.ingestor import SimulationIngestor
    from simreportd.events import SQLiteEventStore
    from simreportd.projections.runner import ProjectionRunner, views_path_for
    from simreportd.projections.simulation import SimulationModel

    folder, store_path = root / "sims" / "sim_floor", root / "events.sqlite3"
    write_big_folder(folder, actions)
    async with SQLiteEventStore(store_path) as store:
        await SimulationIngestor(store, folder).check()
        async with ProjectionRunner(store, views_path_for(store_path), [SimulationModel()]) as views:
            await views.catch_up()
    return views_path_for(store_path)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        given = sys.argv[1]
        views = Path(given) if not given.isdigit() else asyncio.run(folded(Path(tmp), int(given)))
        models = read_models(views)
        before = resource.getrusage(resource.RUSAGE_SELF)
        insert_floor(models, Path(tmp) / "floor.sqlite3")
        inserted = resource.getrusage(resource.RUSAGE_SELF)
        digest_floor(Path(tmp) / "floor.sqlite3", list(models.rows))
        after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = inserted.ru_utime + inserted.ru_stime - before.ru_utime - before.ru_stime
    hashed = after.ru_utime + after.ru_stime - inserted.ru_utime - inserted.ru_stime
    print(f"{models.count:,} rows in {len(models.rows)} tables and {len(models.searched)} full-text tables:"
          f" {cpu:.2f} s CPU to insert, {hashed:.2f} s to read and hash once")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))  # its sibling bench/ingest.py
    main()
