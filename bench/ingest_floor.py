"""The least an ingest that keeps the store's guarantees can spend an action (bench/all.py's store floor).

The minimal floor parses each line and stores it as it came beside its type. What the daemon must do beyond
that, whatever its code, for the store to hold what it promises (docs/architecture.md#the-compact-row and
#untrusted-input): check each chunk's bytes for integers past 64 bits and nesting past 32 (two C calls a
chunk), check the fields an action must have, store the line as its event's text (`generation` and `platform`
put in front of its keys), give it a UUIDv7 id, and write the compact row: position, stream, version, type,
schema version, id, text, with the (stream, version) unique index and one batch row (time, meta) a transaction.
Nothing else: no events, no fold of ingest's state, no task or thread, rounds' lines stored as they came.
Written by the store's own schema and insert (`batch_values`, `insert_values`), 1,000 rows a transaction as
the minimal floor, so the two differ only by what the store keeps.

Run by hand: `python bench/ingest_floor.py ACTIONS` writes a simulation of that many actions (bench/ingest.py's)
and prints both floors' CPU an action, timed in turn.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

import orjson

from simreportd.daemon.ingest.values import has_long_integer, may_nest_deeper
from simreportd.events.batch import EventBatch
from simreportd.events.group_commit import encode_meta
from simreportd.events.ids import new_event_id
from simreportd.events.store import INSERT_BATCH, SCHEMA, batch_values, insert_values

ROWS_A_TRANSACTION = 1000
LEAD = b'{"generation":1,"platform":"%s",'


def store_floor(folder: Path, db: Path) -> None:
    """Ingest every actions.jsonl of `folder` into a fresh store at `db` doing only what the store must keep."""
    conn = sqlite3.connect(db, isolation_level=None)
    for pragma in ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"):
        conn.execute(pragma)
    for sql in SCHEMA:
        conn.execute(sql)
    conn.execute("INSERT INTO streams (name) VALUES ('simulation-floor')")
    position = 0
    for path in sorted(folder.glob("*/actions.jsonl")):
        lead = LEAD % path.parent.name.encode()
        with path.open("rb") as lines:
            while chunk := list(islice(lines, ROWS_A_TRANSACTION)):
                batch = _batch(chunk, lead)
                conn.execute("BEGIN")
                meta = encode_meta({"correlation_id": "ingest-" + new_event_id()})  # the daemon's, an append
                conn.execute(INSERT_BATCH, (position + 1, batch.ids[0], datetime.now(UTC).isoformat(), meta))
                insert_values(conn, batch_values(batch, position, 1, position))
                conn.execute("COMMIT")
                position += len(chunk)
    conn.close()


def _batch(chunk: list[bytes], lead: bytes) -> EventBatch:
    """A chunk's rows: each action's text with its lead, each other line as it came, typed by its event_type."""
    joined = b"".join(chunk)
    if has_long_integer(joined) or may_nest_deeper(joined):
        raise ValueError("the floor takes plain lines only")
    types, texts = [], []
    for line in chunk:
        obj = orjson.loads(line)
        kind = obj.get("action_type")
        if type(obj.get("round")) is int and type(obj.get("agent_id")) is int and type(kind) is str \
                and kind.isupper() and type(obj.get("action_args")) is dict:
            types.append("AgentActed")
            texts.append((lead + line[1:-1]).decode())
        else:
            types.append(str(obj.get("event_type")))
            texts.append(line[:-1].decode())
    return EventBatch(types, [3] * len(types), texts)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from all import minimal_floor  # a sibling bench script
    from ingest import write_big_folder

    actions = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sim_floor"
        lines = write_big_folder(folder, actions)
        figures = {}
        for name, floor in (("minimal floor", minimal_floor), ("store floor", store_floor)):
            started = cpu()
            floor(folder, Path(tmp) / f"{name.replace(' ', '_')}.sqlite3")
            figures[name] = round((cpu() - started) / lines * 1e6, 2)
    print(json.dumps({"lines": lines, "CPU per line, µs": figures}))


if __name__ == "__main__":
    main()
