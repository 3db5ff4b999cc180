"""Ingest and catch-up CPU against their floors: a big simulation into the event store, then folded.

Run by hand: `python bench/ingest.py [ACTIONS] [--repeat N] [--against PYTHON]` (default 1,000,000 actions).
Writes a realistic folder (a small simulated story, its rounds repeated until the action count is reached),
then, in turn and repeated, each in its own process: `SimulationIngestor.check()` end to end (read, check,
build events, append), the simulation model's catch-up from the log, and the tuned floor of ingest: the same
lines into the events table with both unique indexes and UUIDv7 ids made as the store makes them, the raw
line as the data and orjson as the parser. Figures are CPU time of every thread of the process (wall time on
a shared machine swings 5x), per action or event, best and median; the store's bytes per action beside.

`--against PYTHON`: an interpreter with another version of simreportd installed (say today's main:
`git worktree add /tmp/old main && python3 -m venv /tmp/old/.venv && /tmp/old/.venv/bin/pip install /tmp/old`),
run in turn with this one on the same folder: its ingest and its catch-up of its own store.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from simreportd.simulator.scenario import make_story
from simreportd.simulator.simulate import write_setup

ID_STRIDE = 1_000_000  # more post and comment ids than one pass of the story uses
POST_IDS = ("post_id", "comment_id", "new_post_id", "quoted_id")

# The floor's rows: as the issue measured it (no `recorded_at`, meta `{}`), and with the two as the store writes
# them for every ingested event (a timestamp, the batch's correlation id: docs/events.md).
ROWS = ("bare", "store")

# Each step in a fresh process (no warm caches shared between the two codes), its CPU time on stdout.
STEP = """
import asyncio, json, resource, sqlite3, sys
from pathlib import Path

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

async def ingest(folder, path):
    from simreportd.daemon.ingest.ingestor import SimulationIngestor
    from simreportd.events import SQLiteEventStore
    async with SQLiteEventStore(path) as store:
        started = cpu()
        await SimulationIngestor(store, folder).check()
        spent = cpu() - started
        events = await store.last_position()
    return spent, events

async def fold(folder, path):
    from simreportd.events import SQLiteEventStore
    from simreportd.projections.runner import ProjectionRunner, views_path_for
    from simreportd.projections.simulation import SimulationModel
    async with SQLiteEventStore(path) as store:
        async with ProjectionRunner(store, views_path_for(path), [SimulationModel()]) as views:
            started = cpu()
            await views.catch_up()
            spent = cpu() - started
            digest = (await views.digest())["simulation"]
        return spent, await store.last_position(), digest

def floor(folder, path, row):
    import orjson
    from simreportd.events.ids import new_event_ids
    # The row of before the compact one, both unique indexes: what this floor has always timed
    SCHEMA = ("CREATE TABLE events (position INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL,"
              " version INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, recorded_at TEXT NOT NULL,"
              " data TEXT NOT NULL, meta TEXT NOT NULL, UNIQUE (stream, version))")
    INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    started, version = cpu(), 0
    recorded_at, meta = ("", "{}") if row == "bare" else \
        ("2026-01-01T00:00:00.000000+00:00", json.dumps({"correlation_id": "ingest-" + new_event_ids(1)[0]}))
    for file in sorted(folder.glob("*/actions.jsonl")):
        with file.open("rb") as lines:
            while chunk := lines.readlines(1 << 20):
                rows = []
                for line, event_id in zip(chunk, new_event_ids(len(chunk))):
                    version += 1
                    rows.append((None, event_id, "simulation-floor", version, orjson.loads(line).get("action_type") or "x",
                                 1, recorded_at, line.decode(), meta))
                conn.execute("BEGIN")
                conn.executemany(INSERT, rows)
                conn.execute("COMMIT")
    spent = cpu() - started
    conn.close()
    return spent, version

step, folder, path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
from simreportd.daemon.interpreter import tune_gc
tune_gc()  # as the daemon does
result = floor(folder, path, step[6:]) if step.startswith("floor") else \
    asyncio.run({"ingest": ingest, "fold": fold}[step](folder, path))
print(json.dumps(list(result)))
"""


def shifted(line: dict, shift: int) -> dict:
    """The action's arguments with its post and comment ids moved by `shift`, so every pass has its own."""
    args = dict(line.get("action_args") or {})
    for key in POST_IDS:
        if isinstance(args.get(key), int):
            args[key] += shift
    return args


def write_big_folder(folder: Path, actions: int) -> int:
    """Both platforms' actions.jsonl with `actions` action lines in all, streamed to disk."""
    story = make_story(seed=7, agents=200, rounds=40)
    folder.mkdir(parents=True)
    write_setup(folder, story)
    written = 0
    for platform in ("twitter", "reddit"):
        rounds = [r for r in story.lines[platform][1:] if r]
        path = folder / platform / "actions.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        target = actions // 2
        with path.open("w", encoding="utf-8") as f:
            f.write(json.dumps({"event_type": "simulation_start", "platform": platform, "total_rounds": 0,
                                "agents_count": 200}) + "\n")
            n, round_no = 0, 0
            while n < target:
                round_no += 1
                f.write(json.dumps({"event_type": "round_start", "round": round_no, "simulated_hour": round_no % 24})
                        + "\n")
                shift = ID_STRIDE * (round_no // len(rounds))  # a repeated round's posts are new posts
                for line in rounds[round_no % len(rounds)][: target - n]:
                    f.write(json.dumps({**line, "round": round_no, "action_args": shifted(line, shift)},
                                       ensure_ascii=False) + "\n")
                    n += 1
                f.write(json.dumps({"event_type": "round_end", "round": round_no, "actions_count": 0}) + "\n")
            f.write(json.dumps({"event_type": "simulation_end", "platform": platform, "total_rounds": round_no,
                                "total_actions": n}) + "\n")
        written += n
    return written


def step(python: str, name: str, folder: Path, path: Path) -> list:
    """Run one step in a fresh process of `python`; what it printed."""
    done = subprocess.run([python, "-c", STEP, name, str(folder), str(path)], capture_output=True, text=True,
                          check=True, cwd=path.parent)  # not the checkout: its folders would shadow the install
    return json.loads(done.stdout)


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))  # with its WAL


def cell(values: list[float]) -> str:
    return f"{min(values):.2f} (median {statistics.median(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("actions", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", help="an interpreter with the simreportd to compare installed")
    args = parser.parse_args()
    codes = {"this": sys.executable, **({"against": args.against} if args.against else {})}
    ingest: dict[str, list[float]] = {code: [] for code in codes}
    fold: dict[str, list[float]] = {code: [] for code in codes}
    floor: dict[str, list[float]] = {row: [] for row in ROWS}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sim_big"
        lines = write_big_folder(folder, args.actions)
        raw = sum(p.stat().st_size for p in folder.glob("*/actions.jsonl"))
        digests = set()
        for i in range(args.repeat):  # interleaved: load on the machine falls on every column alike
            for code, python in codes.items():
                path = Path(tmp) / f"{code}{i}" / "events.sqlite3"
                path.parent.mkdir()
                spent, events = step(python, "ingest", folder, path)
                ingest[code].append(spent / lines * 1e6)
                sizes[code] = store_bytes(path)
                spent, events, digest = step(python, "fold", folder, path)
                fold[code].append(spent / events * 1e6)
                digests.add(digest)
            for row in ROWS:
                path = Path(tmp) / f"floor-{row}{i}" / "events.sqlite3"
                path.parent.mkdir()
                spent, _ = step(sys.executable, f"floor-{row}", folder, path)
                floor[row].append(spent / lines * 1e6)
                sizes[f"floor ({row})"] = store_bytes(path)
    best = min(floor["bare"])
    print(f"{lines:,} action lines ({raw / lines:.0f} bytes a line), best of {args.repeat} (median), CPU time\n")
    print("| measure | code | us a line or event | against |")
    print("|---|---|---|---|")
    print(f"| tuned floor: orjson + insert into the events table | | {cell(floor['bare'])} | |")
    print(f"| the same with the store's `recorded_at` and an ingest `meta` in each row | | {cell(floor['store'])} |"
          f" {min(floor['store']) / best:.2f}x the floor |")
    for code in codes:
        print(f"| ingest | {code} | {cell(ingest[code])} | {min(ingest[code]) / best:.2f}x the floor |")
    for code in codes:
        against = f"{min(fold['this']) / min(fold['against']):.2f}x against" if code == "this" and args.against else ""
        print(f"| catch-up of the simulation model | {code} | {cell(fold[code])} | {against} |")
    for code, size in sizes.items():
        print(f"| store bytes per action | {code} | {size / lines:.0f} | {size / lines / (raw / lines):.2f}x the line |")
    print(f"\nsimulation-model digests: {'the same' if len(digests) == 1 else 'DIFFERENT'} for every store")


if __name__ == "__main__":
    main()
