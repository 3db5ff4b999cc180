"""Every throughput figure of the pipeline, each beside the floor measured in the same run, as one table.

Run by hand: `python bench/all.py [ACTIONS] [--repeat N] [--tiny] [--daemon-only [--report]]` (default 100,000
actions, 3 repeats; `1000000 --repeat 1 --daemon-only` for the issue's scale in minutes, `--report` to add
`report --wait` to it). Prints one Markdown table, best
and median of the repeats. Every ratio is CPU time (getrusage for this process and its ended children, /proc for
a process still running: a daemon and its fold child), against a floor timed in the same repeat, interleaved
(each repeat times the floors and then each row), so a shared machine's load does not fall on one side only:

- the minimal floor of ingest: orjson parses each raw line, which is stored as it came (a BLOB) beside its
  action type, `executemany` in transactions of 1,000 rows, WAL, `synchronous=NORMAL`: the least any ingest
  that parses and stores every line can spend;
- the store floor: the minimal floor plus what the store must keep an action whatever the code (the checks a
  line needs, its text with its lead, a UUIDv7 id, the compact row with its unique index, a batch row a
  transaction: bench/ingest_floor.py), the block floor of the daemon's ingest;
- the read floor: a plain `SELECT` of the store's own events in position order and `orjson.loads` of each
  row's data: the least any fold can spend before it writes anything;
- the floors a block needs (the "block floor" column): a fold must also leave the read-model rows the reports
  need. The fold floor is the read floor plus inserting exactly the rows the daemon's fold child left, into the
  projections' own tables, indexes and full-text index, `executemany` 1,000 a transaction
  (bench/fold_floor.py); the daemon's floor is the store floor plus the fold floor; `rebuild`'s is the fold
  floor plus reading and hashing those rows twice (it compares the read models it made with those it
  replaced). Each fold, rebuild and daemon row gives its ratio to both floors, the issue's and this one;
- `simreportd run` as users run it: a daemon process (its fold child beside it) on a config.toml in its own
  folder, a written simulation folder dropped (renamed) into its watched root; CPU of both processes from
  /proc, the daemon's alone when the run's `SimulationCompleted` is stored (its ingest), both when the fold has
  caught up; their peak RSS (VmHWM); the store and its WAL sampled on disk while the fold reads, and the store
  once the daemon stopped;
- `simreportd rebuild` on that store (its own process), against the read floor per event;
- `simreportd report --wait` as a user runs it (its own process, a fresh store, the offline writer), against
  the minimal floor;
- the library path: `SimulationIngestor.check()` and the simulation model's catch-up in this process, and the
  store's own `read_all` + `.data`;
- without `--daemon-only`: the daemon following the simulator (last line -> report completed, wall), the
  report tools' p50/p95, eventsourcing selecting and decoding the same events, and bench/store.py's appends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).parent))

from fold_floor import digest_floor, insert_floor, read_models  # noqa: E402  (a sibling bench script)
from ingest import write_big_folder  # noqa: E402
from ingest_floor import store_floor  # noqa: E402
from peaks import Peaks, children, cpu_seconds, high_water_mb, role  # noqa: E402
from tools import measure, p95  # noqa: E402

from simreportd.daemon.config import Config  # noqa: E402
from simreportd.daemon.ingest.ingestor import SimulationIngestor  # noqa: E402
from simreportd.daemon.interpreter import tune_gc  # noqa: E402
from simreportd.daemon.service import Daemon  # noqa: E402
from simreportd.events import CaughtUp, SQLiteEventStore  # noqa: E402
from simreportd.events.codec import decode  # noqa: E402
from simreportd.projections.runner import PAGE, ProjectionRunner, views_path_for  # noqa: E402
from simreportd.projections.simulation import SimulationModel  # noqa: E402

# measure, ours, baseline, unit, goal, and for a fold or daemon row its block floor (bench/fold_floor.py)
Row = tuple[str, list[float], list[float], str, str] | tuple[str, list[float], list[float], str, str, list[float]]


class Spent(NamedTuple):
    wall: float
    cpu: float


FLOOR_TABLE = "CREATE TABLE events (position INTEGER PRIMARY KEY, type TEXT NOT NULL, data BLOB NOT NULL)"
FLOOR_ROWS = 1000  # lines a transaction
FOLLOWED_RATE = 20_000  # lines/s the simulator writes while the daemon follows it: far above an LLM-driven run
RUN_CONFIG = """[store]
path = "state/events.sqlite3"
[watch]
roots = ["sims"]
[reports]
auto = false
[server]
port = 0
"""
SAMPLE_S = 0.1  # how often the running daemon's store, WAL and progress are looked at
RUN_TIMEOUT_S = 3600.0


def cpu_now() -> float:
    """CPU seconds of this process (every thread) and of its children that have ended (a daemon's fold child
    once the daemon stopped it): what a shared machine's load does not inflate, unlike wall time."""
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def minimal_floor(folder: Path, db: Path) -> None:
    """Parse every line with orjson and store it as it came beside its action type, 1,000 rows a transaction:
    the least an ingest that parses and keeps every line can spend."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(FLOOR_TABLE)
    for path in sorted(folder.glob("*/actions.jsonl")):
        with path.open("rb") as lines:
            while chunk := list(islice(lines, FLOOR_ROWS)):
                conn.execute("BEGIN")
                conn.executemany("INSERT INTO events (type, data) VALUES (?, ?)",
                                 [(orjson.loads(line).get("action_type") or "", line) for line in chunk])
                conn.execute("COMMIT")
    conn.close()


def read_floor(store_path: Path) -> int:
    """Select the store's events in position order and decode each one's data with orjson: the least a fold
    can spend before it writes anything. Returns the events read."""
    with contextlib.closing(sqlite3.connect(store_path)) as conn:
        rows, events = conn.execute(f"SELECT position, stream, type, data FROM {log_table(conn)} ORDER BY position"), 0
        while page := rows.fetchmany(FLOOR_ROWS):
            for row in page:
                orjson.loads(row[3])
            events += len(page)
    return events


async def reading_alone(store_path: Path) -> int:
    """Read the log a page at a time through the store and decode each event's data, as the fold reads it
    before it writes anything. Returns the events read."""
    async with SQLiteEventStore(store_path) as store:
        position, events = 0, 0
        while batch := await store.read_all(position, PAGE):
            for recorded in batch:
                recorded.data  # noqa: B018 (decoded as the fold decodes it)
            position, events = batch[-1].position, events + len(batch)
        return events


async def ingest_and_fold(folder: Path, store_path: Path) -> tuple[Spent, Spent, int]:
    """Wall and CPU seconds to ingest the folder, the same to fold the simulation model, and the events appended."""
    async with SQLiteEventStore(store_path) as store:
        started, cpu = time.perf_counter(), cpu_now()
        await SimulationIngestor(store, folder).check()
        ingest = Spent(time.perf_counter() - started, cpu_now() - cpu)
        events = await store.last_position()
        async with ProjectionRunner(store, views_path_for(store_path), [SimulationModel()]) as views:
            started, cpu = time.perf_counter(), cpu_now()
            await views.catch_up()
            fold = Spent(time.perf_counter() - started, cpu_now() - cpu)
    return ingest, fold, events


def spent_on(work: Callable[[], object]) -> Spent:
    """Wall and CPU seconds `work` takes."""
    started, cpu = time.perf_counter(), cpu_now()
    work()
    return Spent(time.perf_counter() - started, cpu_now() - cpu)


def fold_floor(views: Path, db: Path) -> tuple[Spent, Spent, int]:
    """What inserting exactly the read-model rows of `views` into a fresh `db` takes (bench/fold_floor.py; the rows
    read before the clock starts), what reading and hashing them once takes (a digest), and how many rows."""
    models = read_models(views)
    inserted = spent_on(lambda: insert_floor(models, db))
    return inserted, spent_on(lambda: digest_floor(db, list(models.rows))), models.count


async def spent_awaiting(work: Awaitable[object]) -> Spent:
    """Wall and CPU seconds `work` takes."""
    started, cpu = time.perf_counter(), cpu_now()
    await work
    return Spent(time.perf_counter() - started, cpu_now() - cpu)


class DaemonRun(NamedTuple):
    """What `simreportd run` spent on one folder dropped into its watched root."""

    ingest_cpu: float  # the daemon process, drop -> SimulationCompleted stored
    daemon_cpu: float  # the daemon process, drop -> the fold caught up
    child_cpu: float  # the fold child, the same
    wall: float  # drop -> the fold caught up
    daemon_mb: float
    child_mb: float
    live_bytes: int  # the most the store and its WAL held on disk while the fold read
    store_bytes: int  # the store once the daemon stopped (its WAL checkpointed)


class RunningDaemon:
    """`simreportd run` in `root` (its own process group), with its fold child found in /proc."""

    def __init__(self, root: Path, python: str) -> None:
        (root / "sims").mkdir(parents=True)
        (root / "config.toml").write_text(RUN_CONFIG)
        self.store, self.log = root / "state" / "events.sqlite3", (root / "daemon.log").open("w")
        self.process = subprocess.Popen([python, "-m", "simreportd.entry", "-c", "config.toml", "run"],
                                        cwd=root, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.child = self._fold_child()

    def _fold_child(self) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = [pid for pid in children(self.process.pid) if role(pid) == "fold child"]
            if found and views_path_for(self.store).exists():
                return found[0]
            if self.process.poll() is not None:
                break
            time.sleep(SAMPLE_S)
        raise RuntimeError(f"the daemon started no fold child: {self.process.args} (see {self.log.name})")

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far of the daemon process and of its fold child."""
        return cpu_seconds(self.process.pid) or 0.0, cpu_seconds(self.child) or 0.0

    def on_disk(self) -> int:
        """Bytes of the store and its WAL now."""
        return sum(p.stat().st_size for p in self.store.parent.glob(self.store.name + "*") if p.exists())

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


def log_table(conn: sqlite3.Connection) -> str:
    """The table a store's events are rows of: `event_log` (the compact row), `events` in a store of before it
    (`--against` an older simreportd)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_log'").fetchone()
    return "event_log" if found else "events"


def head_and_folded(store: Path) -> tuple[int, int, bool]:
    """The store's head, the read models' checkpoint, and whether the run's SimulationCompleted is stored."""
    with contextlib.closing(sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True)) as log, \
            contextlib.closing(sqlite3.connect(f"{views_path_for(store).as_uri()}?mode=ro", uri=True)) as views:
        table = log_table(log)
        head = log.execute(f"SELECT coalesce(max(position), 0) FROM {table}").fetchone()[0]
        # the newest rows only: a scan of the whole type column every sample would cost the machine
        done = log.execute(f"SELECT count(*) FROM {table} WHERE position > ?1 - 64 AND type = 'SimulationCompleted'",
                           (head,)).fetchone()[0] > 0
        folded = views.execute("SELECT coalesce(max(position), 0) FROM projection_checkpoint").fetchone()[0]
    return head, folded, done


def run_as_users_run_it(root: Path, folder: Path, python: str) -> DaemonRun:
    """`simreportd run` (of the simreportd `python` has installed) on its own config.toml; `folder` (copied first)
    renamed into its watched root; its CPU and memory until the fold caught up, the store and WAL on disk sampled
    meanwhile."""
    staged = root / "staged" / folder.name
    shutil.copytree(folder, staged)
    daemon = RunningDaemon(root / "daemon", python)
    try:
        time.sleep(1.0)  # the daemon's start-up settles: its CPU then is not the folder's
        before, started, live = daemon.cpu(), time.perf_counter(), 0
        staged.rename(root / "daemon" / "sims" / folder.name)
        ingested: float | None = None
        while time.perf_counter() - started < RUN_TIMEOUT_S:
            time.sleep(SAMPLE_S)
            live = max(live, daemon.on_disk())
            head, folded, done = head_and_folded(daemon.store)
            if done and ingested is None:
                ingested = daemon.cpu()[0]
            if done and folded >= head:
                break
        else:
            raise RuntimeError("the daemon did not ingest and fold the folder in time")
        wall, (own, child) = time.perf_counter() - started, daemon.cpu()
        mb = (high_water_mb(daemon.process.pid) or 0.0, high_water_mb(daemon.child) or 0.0)
    finally:
        daemon.stop()
    assert ingested is not None
    return DaemonRun(ingested - before[0], own - before[0], child - before[1], wall, *mb, live,
                     daemon.store.stat().st_size)


def rebuild_by_cli(root: Path, python: str) -> None:
    """`simreportd rebuild` on the stopped daemon's store, as a user runs it; it must find every digest the same."""
    subprocess.run([python, "-m", "simreportd.entry", "-c", "config.toml", "rebuild"], cwd=root / "daemon",
                   stdout=subprocess.DEVNULL, check=True)


def report_by_cli(root: Path, folder: Path) -> None:
    """`simreportd report --wait` (offline writer) on the written folder, a fresh store in `root` (its working
    folder: no config.toml, the defaults): the command a user runs, in its own process, which ingests, folds in
    its child and reports."""
    root.mkdir(parents=True)
    with (root / "report.log").open("w") as progress:
        subprocess.run([sys.executable, "-m", "simreportd.entry", "report", str(folder), "--wait", "--provider",
                        "offline"], cwd=root, stdout=subprocess.DEVNULL, stderr=progress, check=True)


async def following_the_simulator(root: Path, folder: Path, rate: int) -> float:
    """Seconds from the simulator's last line to the report completed, the daemon running all along (auto
    reports, fold in a child) while the simulator writes the folder's lines at `rate` lines a second."""
    live = root / "sims" / folder.name
    shutil.copytree(folder, live, ignore=shutil.ignore_patterns("actions.jsonl"))
    config = Config().with_paths(root / "events.sqlite3", [live.parent], root / "out")
    async with Daemon(config) as daemon, anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.run)
        last_line = await anyio.to_thread.run_sync(write_paced, folder, live, rate)
        async for recorded in daemon.store.subscribe(types=["ReportCompleted"]):
            if not isinstance(recorded, CaughtUp):
                break
        tasks.cancel_scope.cancel()
    return time.perf_counter() - last_line


def write_paced(source: Path, target: Path, rate: int) -> float:
    """Append `source`'s action lines to `target`'s files as a running simulation does, both platforms at
    once, `rate` lines a second in all; return when the last line was written (`time.perf_counter()`)."""
    inputs = {p.relative_to(source): p.open("rb") for p in sorted(source.glob("*/actions.jsonl"))}
    outputs = {name: (target / name).open("ab") for name in inputs}
    tick, started, written = 0.05, time.perf_counter(), 0
    while inputs:
        for name in list(inputs):
            lines = [line for _, line in zip(range(max(1, int(rate * tick / len(outputs)))), inputs[name])]
            outputs[name].write(b"".join(lines))
            outputs[name].flush()
            written += len(lines)
            if not lines:
                inputs.pop(name).close()
                outputs.pop(name).close()
        time.sleep(max(0.0, started + written / rate - time.perf_counter()))
    return time.perf_counter()


def appends() -> list[Row]:
    """Our store against eventsourcing's recorder (bench/store.py: the same encoder, the same synchronous, CPU per
    event, interleaved)."""
    if importlib.util.find_spec("eventsourcing") is None:
        return []
    from store import compared

    with tempfile.TemporaryDirectory() as tmp:
        runs = iter(range(1000))
        rows = compared(lambda name: Path(tmp) / f"{name}-{next(runs)}.sqlite3")
    goals = {"batched": ">= 1.2x less CPU than eventsourcing", "concurrent": "one transaction an event theirs"}
    return [(f"{name}: CPU per event (baseline: eventsourcing's; block floor: encode, insert, commit)",
             [m.cpu_us() for m in ours], [m.cpu_us() for m in theirs], "µs",
             next((g for k, g in goals.items() if k in name), ""), *([[m.cpu_us() for m in floor]] if floor else []))
            for name, (ours, theirs, floor) in rows.items() if "NORMAL" in name or "read" in name]


def eventsourcing_reads(store_path: Path, repeat: int) -> list[float]:
    """eventsourcing's recorder selecting the run's own events and decoding them into our models (the catch-up
    goal's baseline): the events of the store at `store_path`, copied into its table first."""
    if importlib.util.find_spec("eventsourcing") is None:
        return []
    from eventsourcing.persistence import StoredEvent
    from store import es_recorder

    with tempfile.TemporaryDirectory() as tmp, contextlib.closing(sqlite3.connect(store_path)) as log:
        recorder, originator = es_recorder(Path(tmp) / "es.sqlite3", "NORMAL"), uuid.uuid4()
        rows = log.execute("SELECT position, stream, type, schema_version, data FROM events ORDER BY position")
        while chunk := rows.fetchmany(1000):  # the topic carries the stream too: an action's data needs it
            recorder.insert_events([StoredEvent(originator, position, f"{stream}|{type_name}:{schema}", data.encode())
                                    for position, stream, type_name, schema, data in chunk])
        return [es_read_models(recorder) for _ in range(repeat)]


def es_read_models(recorder: Any) -> float:
    """Events a second eventsourcing's recorder selects and we decode into models (upcast as the log's are)."""
    started, start, count = time.perf_counter(), 1, 0
    while batch := recorder.select_notifications(start, 1000):
        for notification in batch:
            stream, _, topic = notification.topic.rpartition("|")
            type_name, schema = topic.rsplit(":", 1)
            decode(type_name, int(schema), json.loads(notification.state), stream)
        start, count = batch[-1].id + 1, count + len(batch)
    return count / (time.perf_counter() - started)


def best_of(values: list[float], unit: str) -> float:
    """The best of the repeats; for memory (MB), the worst: a peak is a ceiling to stay under."""
    return (min if unit in ("s", "ms", "µs", "B") else max)(values)


def number(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def cell(values: list[float], unit: str) -> str:
    median = f" (median {number(statistics.median(values))})" if len(values) > 1 else ""
    return number(best_of(values, unit)) + median


def table(rows: list[Row]) -> str:
    out = ["| measure | simreportd | baseline | ratio | block floor | ratio to it | unit | goal |",
           "|---|---|---|---|---|---|---|---|"]
    for name, ours, base, unit, goal, *more in rows:
        block = more[0] if more else []
        pick = lambda values: best_of(values, unit)  # noqa: E731
        ratio = f"{pick(ours) / pick(base):.2f}x" if base and pick(base) else ""
        to_block = f"{pick(ours) / pick(block):.2f}x" if block and pick(block) else ""
        out.append(f"| {name} | {cell(ours, unit)} | {cell(base, unit) if base else ''} | {ratio} | "
                   f"{cell(block, unit) if block else ''} | {to_block} | {unit} | {goal} |")
    return "\n".join(out)


STARTED = "this process's RSS as the phase started (the bench's own)"


class PeakRows:
    """Each phase's peak RSS per process, a value a repeat: `watch` a phase, naming the processes it runs."""

    def __init__(self) -> None:
        self.mb: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def watch(self, phase: str, names: dict[str, str]) -> Iterator[None]:
        """Note the peaks of the processes `names` maps (a `Peaks` role to a row's name) while the block runs."""
        with Peaks() as peaks:
            yield
        for kind, name in names.items():
            if kind in peaks.mb:
                self.note(f"{phase}: {name}", peaks.mb[kind])
            if kind == "this process":
                self.note(f"{phase}: {STARTED}", peaks.started_mb)

    def note(self, name: str, mb: float) -> None:
        self.mb.setdefault(f"peak RSS, {name}", []).append(mb)

    def rows(self) -> list[Row]:
        return [(name, values, [], "MB", "part of the row above" if name.endswith(STARTED) else "<= 150 MB at 1M actions")
                for name, values in self.mb.items()]


DAEMON_HERE = {"this process": "the daemon (this process, the bench's own memory included)", "fold child": "fold child"}


class Repeats:
    """Each repeat's figures, floors and rows side by side (a list each, one value a repeat)."""

    def __init__(self) -> None:
        self.floor: list[Spent] = []
        self.floor_bytes: list[int] = []
        self.store_floor: list[Spent] = []  # the minimal floor + what the store keeps (bench/ingest_floor.py)
        self.read_floor: list[Spent] = []
        self.inserts: list[Spent] = []  # the read-model rows the run's fold left, inserted (bench/fold_floor.py)
        self.digests: list[Spent] = []  # those rows read and hashed once, as a digest must (bench/fold_floor.py)
        self.read_model_rows: list[int] = []
        self.ingests: list[Spent] = []
        self.folds: list[Spent] = []
        self.reads: list[Spent] = []
        self.runs: list[DaemonRun] = []
        self.rebuilds: list[Spent] = []
        self.against_runs: list[DaemonRun] = []  # `--against`: the same two of another simreportd
        self.against_rebuilds: list[Spent] = []
        self.by_cli: list[Spent] = []


async def repeat_once(root: Path, folder: Path, i: int, figures: Repeats, peaks: PeakRows, report: bool,
                      against: str | None) -> int:
    """One repeat: the floors, then each row, one after the other. Returns the events of the run's store."""
    floor_db = root / f"floor{i}.sqlite3"
    figures.floor.append(spent_on(lambda: minimal_floor(folder, floor_db)))
    figures.floor_bytes.append(floor_db.stat().st_size)
    figures.store_floor.append(spent_on(lambda: store_floor(folder, root / f"store_floor{i}.sqlite3")))
    store_path = root / f"store{i}" / "events.sqlite3"
    with peaks.watch("library ingest, then the simulation model folded", {"this process": "this process"}):
        ingest, folded, events = await ingest_and_fold(folder, store_path)
    figures.ingests.append(ingest)
    figures.folds.append(folded)
    figures.read_floor.append(spent_on(lambda: read_floor(store_path)))
    figures.reads.append(await spent_awaiting(reading_alone(store_path)))
    figures.runs.append(run_as_users_run_it(root / f"run{i}", folder, sys.executable))
    inserted, digested, count = fold_floor(views_path_for(root / f"run{i}" / "daemon" / "state" / "events.sqlite3"),
                                           root / f"fold_floor{i}.sqlite3")
    figures.inserts.append(inserted)
    figures.digests.append(digested)
    figures.read_model_rows.append(count)
    with peaks.watch("`simreportd rebuild`", {"command": "the command", "fold child": "its fold child"}):
        figures.rebuilds.append(spent_on(lambda: rebuild_by_cli(root / f"run{i}", sys.executable)))
    if against:
        figures.against_runs.append(run_as_users_run_it(root / f"against{i}", folder, against))
        figures.against_rebuilds.append(spent_on(lambda: rebuild_by_cli(root / f"against{i}", against)))
    if report:
        with peaks.watch("`simreportd report --wait`", {"command": "the command", "fold child": "its fold child"}):
            figures.by_cli.append(spent_on(lambda: report_by_cli(root / f"cli{i}", folder)))
    return events


def floor_rows(f: Repeats, lines: int, events: int, raw: int) -> list[Row]:
    """The rows of the daemon as users run it, the library path and the store, against the floors."""
    floor = [t.cpu / lines * 1e6 for t in f.floor]
    kept = [t.cpu / lines * 1e6 for t in f.store_floor]
    reads = [t.cpu / events * 1e6 for t in f.read_floor]
    folds = [(t.cpu + w.cpu) / events * 1e6 for t, w in zip(f.read_floor, f.inserts, strict=True)]
    rebuilds = [(t.cpu + w.cpu + 2 * d.cpu) / events * 1e6
                for t, w, d in zip(f.read_floor, f.inserts, f.digests, strict=True)]
    daemons = [(k.cpu + t.cpu + w.cpu) / lines * 1e6
               for k, t, w in zip(f.store_floor, f.read_floor, f.inserts, strict=True)]
    runs = f.runs
    rows: list[Row] = [
        ("minimal floor: orjson, the raw line stored, executemany 1,000 a transaction, WAL, NORMAL; CPU per action",
         floor, [], "µs", "the baseline of each ingest row below"),
        (f"fold floor: the read floor + inserting the {f.read_model_rows[0]:,} read-model rows the fold left "
         "(projections' schema, FTS included, executemany 1,000 a transaction); CPU per event", folds, reads, "µs",
         "the block floor of each fold row"),
        ("daemon floor: the store floor + the fold floor; CPU per action", daemons, floor, "µs",
         "the block floor of each daemon row"),
        ("`simreportd run`: daemon process + fold child, CPU per action", [(r.daemon_cpu + r.child_cpu) / lines * 1e6
                                                                           for r in runs], floor, "µs", "<= 4x the floor",
         daemons),
        ("store floor: the minimal floor + what the store keeps an action (the checks a line needs, its text with "
         "its lead, a UUIDv7 id, the compact row with its index and a batch row a transaction: "
         "bench/ingest_floor.py); CPU per action", kept, floor, "µs", "the block floor of the ingest row below"),
        ("`simreportd run`: the daemon process until SimulationCompleted is stored (its ingest), CPU per action",
         [r.ingest_cpu / lines * 1e6 for r in runs], floor, "µs", "<= 2x the floor", kept),
        ("`simreportd run`: the daemon process until the fold caught up, CPU per action",
         [r.daemon_cpu / lines * 1e6 for r in runs], floor, "µs", "part of the first row"),
        ("`simreportd run`: folder dropped -> read models caught up, wall", [r.wall for r in runs],
         [t.wall for t in f.floor], "s", "(wall: the machine's load falls on it)"),
        ("library ingest (`SimulationIngestor.check`, no daemon around it), CPU per action",
         [t.cpu / lines * 1e6 for t in f.ingests], floor, "µs", ""),
        ("read floor: SELECT in position order + orjson.loads of the data; CPU per event", reads, [], "µs",
         "the baseline of each read row below"),
        ("`simreportd run`: the fold child, CPU per event", [r.child_cpu / events * 1e6 for r in runs], reads, "µs",
         "<= 4x the read floor", folds),
        ("rebuild floor: the fold floor + two digests of those rows (read and hashed, no sort: `rebuild` compares the read "
         "models it made with those it replaced); CPU per event", rebuilds, reads, "µs", "the block floor of the row below"),
        ("`simreportd rebuild`, CPU (its own process) per event", [t.cpu / events * 1e6 for t in f.rebuilds], reads,
         "µs", "<= 5x the read floor", rebuilds),
        ("library catch-up of the simulation model alone, CPU per event", [t.cpu / events * 1e6 for t in f.folds],
         reads, "µs", "", folds),
        ("the store's `read_all` + `.data`, CPU per event", [t.cpu / events * 1e6 for t in f.reads], reads, "µs", ""),
    ]
    if f.against_runs:
        rows += against_rows(f, lines, events)
    if f.by_cli:
        rows.append(("`simreportd report --wait`: folder -> report completed, CPU (its fold child's included) per "
                     "action", [t.cpu / lines * 1e6 for t in f.by_cli], floor, "µs", "<= 4x the floor", daemons))
    return rows + [
        ("peak RSS, `simreportd run`: the daemon", [r.daemon_mb for r in runs], [], "MB", "<= 150 MB"),
        ("peak RSS, `simreportd run`: its fold child", [r.child_mb for r in runs], [], "MB", "flat from 100k to 1M"),
        ("event store once the daemon stopped, bytes per action", [r.store_bytes / lines for r in runs],
         [b / lines for b in f.floor_bytes], "B", f"<= 500 B at 1M (the raw line: {raw / lines:.0f} B)"),
        ("event store + its WAL while the fold reads, the most, bytes per action", [r.live_bytes / lines for r in runs],
         [r.store_bytes / lines for r in runs], "B", "<= 1.2x the store once stopped"),
    ]


def against_rows(f: Repeats, lines: int, events: int) -> list[Row]:
    """`--against`: this simreportd's daemon, fold child and rebuild beside the other's, timed in turn."""
    ours, theirs = f.runs, f.against_runs
    return [
        ("`simreportd run`, daemon process + fold child: this code against `--against`'s, CPU per action",
         [(r.daemon_cpu + r.child_cpu) / lines * 1e6 for r in ours],
         [(r.daemon_cpu + r.child_cpu) / lines * 1e6 for r in theirs], "µs", "before and after"),
        ("`simreportd run`, the daemon's ingest: this code against `--against`'s, CPU per action",
         [r.ingest_cpu / lines * 1e6 for r in ours], [r.ingest_cpu / lines * 1e6 for r in theirs], "µs", ""),
        ("`simreportd run`, the fold child: this code against `--against`'s, CPU per event",
         [r.child_cpu / events * 1e6 for r in ours], [r.child_cpu / events * 1e6 for r in theirs], "µs", ""),
        ("`simreportd run`, the fold child's peak RSS: this code against `--against`'s",
         [r.child_mb for r in ours], [r.child_mb for r in theirs], "MB", ""),
        ("`simreportd run`, the store + WAL while the fold reads: this code against `--against`'s, B per action",
         [r.live_bytes / lines for r in ours], [r.live_bytes / lines for r in theirs], "B", ""),
        ("`simreportd rebuild`: this code against `--against`'s, CPU per event",
         [t.cpu / events * 1e6 for t in f.rebuilds], [t.cpu / events * 1e6 for t in f.against_rebuilds], "µs", ""),
    ]


async def the_rest(root: Path, folder: Path, store_path: Path, repeat: int, tool_calls: int,
                   peaks: PeakRows) -> list[Row]:
    """What `--daemon-only` leaves out: the daemon following the simulator, the tools, eventsourcing's reads."""
    with peaks.watch("the daemon following the simulator", DAEMON_HERE):
        after = await following_the_simulator(root / "following", folder, FOLLOWED_RATE)
    with peaks.watch("the report tools", {"this process": "this process"}):
        tools = await measure(folder, store_path, tool_calls, [])  # as bench/tools.py: the p95 of 20 calls
    es_reads = eventsourcing_reads(store_path, repeat)
    rows: list[Row] = [(f"end to end, the daemon following the simulator ({FOLLOWED_RATE:,} lines/s): last line "
                        "-> report completed, wall", [after], [], "s", "bounded")]
    if es_reads:
        events = read_floor(store_path)
        rows.append(("eventsourcing's recorder selecting + decoding into our models, events/s", es_reads, [],
                     "events/s", f"beside: {events:,} events"))
    rows += [(f"tool {name} p95", [p95(sorted(times))], [], "ms", "< 200 ms") for name, (times, _, _) in tools.items()]
    first = tools["simulation_analytics"][0][0]  # it finds the run's camps, kept for the others
    return rows + [("tool simulation_analytics, first call", [first], [], "ms", "< 500 ms at 1M actions")]


async def run(actions: int, repeat: int, tool_calls: int, daemon_only: bool, against: str | None,
              report: bool) -> list[Row]:
    peaks, figures = PeakRows(), Repeats()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "sims" / "sim_all"
        lines = write_big_folder(folder, actions)
        raw = sum(p.stat().st_size for p in folder.glob("*/actions.jsonl"))
        for i in range(repeat):  # interleaved: each row's floor timed beside it, not minutes before
            events = await repeat_once(root, folder, i, figures, peaks, report or not daemon_only, against)
        rows = floor_rows(figures, lines, events, raw)
        if not daemon_only:
            rows += await the_rest(root, folder, root / "store0" / "events.sqlite3", repeat, tool_calls, peaks)
    return rows + peaks.rows()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("actions", type=int, nargs="?", default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one pass of everything, tool calls and appends few: "
                        "to check the script runs (tests/stories/test_bench_scripts.py), not to measure")
    parser.add_argument("--daemon-only", action="store_true", help="the floors, `simreportd run`, `rebuild` and the "
                        "library path only: the issue's 1M actions in minutes")
    parser.add_argument("--report", action="store_true", help="with --daemon-only, `simreportd report --wait` too, "
                        "against the same repeat's floors")
    parser.add_argument("--against", metavar="PYTHON", help="an interpreter with another simreportd installed (say "
                        "main's, `pip install` of a `git archive`): its `run` and `rebuild` timed in turn with this one's")
    args = parser.parse_args()
    tune_gc()  # as the daemon does
    if args.tiny:
        import store
        vars(store).update(store.TINY)
        args.repeat = 1
    load = os.getloadavg()
    rows = asyncio.run(run(args.actions, args.repeat, 1 if args.tiny else 20, args.daemon_only, args.against,
                           args.report))
    rows += [] if args.daemon_only else appends()
    print(f"{args.actions:,} actions, best of {args.repeat} (median beside it; peak RSS: the largest),"
          f" {time.strftime('%Y-%m-%d %H:%M')}, load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(table(rows))


if __name__ == "__main__":
    main()
