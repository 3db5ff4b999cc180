"""Every throughput figure of the pipeline, each beside the baseline measured in the same run, as one table.

Run by hand: `python bench/all.py [ACTIONS] [--repeat N] [--tiny]` (default 100,000 actions, 3 repeats; `1000000`
for the issue's scale). Prints one Markdown table, best and median of the repeats. Each repeat times a row
and its baseline one after the other (interleaved, not all of one then all of the other), and the main rows
are given in CPU time too (this process's and its ended children's, the daemons' fold children: `cpu_now`),
which a shared machine's load does not inflate as it does wall time:

- ingest: `simreportd`'s ingestor (read, check, build events, append) against a bare `json.loads` +
  `executemany` of the same lines into a table with the events table's columns;
- catch-up: the simulation model folding those events, against ingest (it must never be slower, or the
  read models fall behind a big run) and against the eventsourcing package selecting and decoding events;
  and the two together as the daemon runs them (`[service] fold`, child and inline): the most events the
  read models were behind, and how long they took to catch up once ingest ended;
- appends: batched, and 64 concurrent appenders, against the eventsourcing package's SQLite recorder at the
  same `synchronous` (when `pip install -e ".[bench]"` installed it), and the same 64 tasks with no store:
  what asyncio alone schedules here, the ceiling of that row;
- end to end: a daemon started on the written folder to the report completed by the offline writer (ingest,
  fold and report at once, as `simreportd run` does them), and a daemon following the simulator as it writes
  (last line to report completed), against the bare parse + insert of the same lines;
- `simreportd report --wait` run as a user runs it (its own process, a fresh store, the offline writer):
  folder written -> report completed, wall and CPU (its fold child's included), against the same baseline;
- the peak RSS of every process in each phase (bench/peaks.py): this one (the in-process daemon's rows
  include the bench's own memory: its RSS as the phase started is the row under each), each fold child, the
  CLI command and its fold child (the daemon in a process of its own); the largest of the repeats;
- the report tools' p50/p95 on the run, and the store's size beside the raw `actions.jsonl`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from ingest import write_big_folder  # noqa: E402  (a sibling bench script)
from peaks import Peaks  # noqa: E402
from tools import measure, p95  # noqa: E402

from simreportd.daemon.config import Config, LogConfig, StoreConfig  # noqa: E402
from simreportd.daemon.fold_child import ChildSpec, FoldChild  # noqa: E402
from simreportd.daemon.ingest.ingestor import SimulationIngestor  # noqa: E402
from simreportd.daemon.interpreter import tune_gc  # noqa: E402
from simreportd.daemon.service import Daemon  # noqa: E402
from simreportd.events import (
    CaughtUp,  # noqa: E402
    SQLiteEventStore,  # noqa: E402
)
from simreportd.events.codec import decode  # noqa: E402
from simreportd.events.ids import new_event_ids  # noqa: E402
from simreportd.events.store import INSERT
from simreportd.events.store import SCHEMA as events_schema  # noqa: E402
from simreportd.projections.catalogue import projections  # noqa: E402
from simreportd.projections.runner import PAGE, ProjectionRunner, views_path_for  # noqa: E402
from simreportd.projections.simulation import SimulationModel  # noqa: E402

Row = tuple[str, list[float], list[float], str, str]  # measure, ours, baseline, unit, goal


class Spent(NamedTuple):
    wall: float
    cpu: float
BARE_TABLE = ("CREATE TABLE events (position INTEGER PRIMARY KEY, event_id TEXT, stream TEXT, version INTEGER,"
              " type TEXT, schema_version INTEGER, recorded_at TEXT, data TEXT, meta TEXT)")  # no constraint
FOLLOWED_RATE = 20_000  # lines/s the simulator writes while the daemon follows it: far above an LLM-driven run


def cpu_now() -> float:
    """CPU seconds of this process (every thread) and of its children that have ended (a daemon's fold child
    once the daemon stopped it): what a shared machine's load does not inflate, unlike wall time."""
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def bare_insert(folder: Path, db: Path, constrained: bool = False) -> float:
    """Seconds to parse every action line and insert it into a table with the events table's columns.

    `constrained`: into the events table itself, with its unique event ids and stream versions, and ids made
    as the store makes them: the fastest an ingest could go that keeps the store's guarantees (idempotent,
    ordered appends) and did no other work, no check of a line, no event built.
    """
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(events_schema if constrained else BARE_TABLE)
    started, version = time.perf_counter(), 0
    for path in sorted(folder.glob("*/actions.jsonl")):
        with path.open(encoding="utf-8") as lines:
            while chunk := lines.readlines(1 << 20):
                ids = new_event_ids(len(chunk)) if constrained else [str(version + n) for n in range(1, len(chunk) + 1)]
                rows = []
                for line, event_id in zip(chunk, ids, strict=True):
                    version += 1
                    rows.append((None, event_id, "simulation-bare", version, json.loads(line).get("action_type", "x"),
                                 1, "", line, "{}"))
                conn.execute("BEGIN")
                conn.executemany(INSERT, rows)
                conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - started


async def reading_alone(store_path: Path) -> float:
    """Events a second read from the log a page at a time and their data decoded, as the fold reads them
    before it writes anything: the fastest a catch-up could go."""
    async with SQLiteEventStore(store_path) as store:
        started, position, events = time.perf_counter(), 0, 0
        while batch := await store.read_all(position, PAGE):
            for recorded in batch:
                recorded.data  # noqa: B018 (decoded as the fold decodes it)
            position, events = batch[-1].position, events + len(batch)
        return events / (time.perf_counter() - started)


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


async def spent_awaiting(work: Awaitable[object]) -> Spent:
    """Wall and CPU seconds (the daemon's fold child included: it has ended by then) `work` takes."""
    started, cpu = time.perf_counter(), cpu_now()
    await work
    return Spent(time.perf_counter() - started, cpu_now() - cpu)


async def folding_while_ingesting(folder: Path, store_path: Path, fold: str) -> tuple[int, float]:
    """The read models following an ingest as the daemon runs them (`[service] fold`: in a child process,
    or inline in the ingesting one): the most events they were behind, and the seconds they took to catch up
    once ingest ended."""
    lag = 0
    async with SQLiteEventStore(store_path) as store, \
            ProjectionRunner(store, views_path_for(store_path), projections()) as views:
        async with anyio.create_task_group() as tasks:
            spec = ChildSpec(store=StoreConfig(path=store_path), views=views.path, log=LogConfig())
            tasks.start_soon(views.run if fold == "inline" else FoldChild(views, spec, 10).run)
            done = anyio.Event()

            async def ingest_then_signal() -> None:
                await SimulationIngestor(store, folder).check()
                done.set()

            tasks.start_soon(ingest_then_signal)
            while not done.is_set():
                lag = max(lag, await store.last_position() - views.position)
                await anyio.sleep(0.05)
            ended = time.perf_counter()
            await views.wait_for(await store.last_position(), timeout=3600)
            tasks.cancel_scope.cancel()
    return lag, time.perf_counter() - ended


async def end_to_end(root: Path, folder: Path, fold: str) -> float:
    """Seconds from a fresh daemon seeing the written folder to its report completed (offline writer), the
    daemon running as `simreportd run` does: ingesting, folding (`[service] fold`) and reporting at once."""
    config = Config().with_paths(root / f"e2e-{fold}" / "events.sqlite3", [folder.parent],
                                 root / f"e2e-{fold}" / "reports")
    config = config.model_copy(update={"reports": config.reports.model_copy(update={"auto": False}),
                                       "service": config.service.model_copy(update={"fold": fold})})
    started = time.perf_counter()
    async with Daemon(config, folders=[folder]) as daemon, anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.run)
        async for recorded in daemon.store.subscribe(types=["SimulationCompleted"]):
            if not isinstance(recorded, CaughtUp):
                break
        report_id = await daemon.reports.request(folder.name)
        state = await daemon.reports.wait(report_id)
        tasks.cancel_scope.cancel()
    assert state.verdict is not None, "the report did not complete"
    return time.perf_counter() - started


def report_by_cli(root: Path, folder: Path) -> None:
    """`simreportd report --wait` (offline writer) on the written folder, a fresh store in `root` (its working
    folder: no config.toml, the defaults): the command a user runs, in its own process, which ingests, folds in
    its child and reports."""
    root.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "simreportd.entry", "report", str(folder), "--wait", "--provider", "offline"],
                   cwd=root, stdout=subprocess.DEVNULL, check=True)


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
    """Our store against eventsourcing's recorder, both at NORMAL, both encoding inside the timer."""
    if importlib.util.find_spec("eventsourcing") is None:
        return []
    import store
    from store import es_batched, es_single, harness_alone, ours_batched, ours_concurrent

    with tempfile.TemporaryDirectory() as tmp:
        runs = iter(range(100))
        fresh: Callable[[str], Path] = lambda name: Path(tmp) / f"{name}-{next(runs)}.sqlite3"  # noqa: E731
        repeats = range(store.REPEAT)
        ours_b = [asyncio.run(ours_batched(fresh("o"), "NORMAL")) for _ in repeats]
        es_b = [es_batched(fresh("e"), "NORMAL") for _ in repeats]
        ours_c = [asyncio.run(ours_concurrent(fresh("oc"), "NORMAL"))[0] for _ in repeats]
        es_c = [es_single(fresh("ec"), "NORMAL") for _ in repeats]
        alone = [asyncio.run(harness_alone()) for _ in repeats]
    return [("batched append, 1000 events a call (NORMAL)", ours_b, es_b, "events/s", ">= 1.2x eventsourcing"),
            ("64 concurrent appenders (NORMAL)", ours_c, es_c, "events/s", ">= 10x eventsourcing, one a txn"),
            ("64 concurrent tasks, no store (the harness alone)", alone, es_c, "events/s",
             "the ceiling of the row above")]


def eventsourcing_reads(store_path: Path, repeat: int) -> list[float]:
    """eventsourcing's recorder selecting the run's own events and decoding them into our models (the catch-up
    goal's baseline): the events of the store at `store_path`, copied into its table first."""
    if importlib.util.find_spec("eventsourcing") is None:
        return []
    from eventsourcing.persistence import StoredEvent
    from store import es_recorder

    with tempfile.TemporaryDirectory() as tmp, contextlib.closing(sqlite3.connect(store_path)) as log:
        recorder, originator = es_recorder(Path(tmp) / "es.sqlite3", "NORMAL"), uuid.uuid4()
        rows = log.execute("SELECT position, type, schema_version, data FROM events ORDER BY position")
        while chunk := rows.fetchmany(1000):
            recorder.insert_events([StoredEvent(originator, position, f"{type_name}:{schema}", data.encode())
                                    for position, type_name, schema, data in chunk])
        return [es_read_models(recorder) for _ in range(repeat)]


def es_read_models(recorder: Any) -> float:
    """Events a second eventsourcing's recorder selects and we decode into models (upcast as the log's are)."""
    started, start, count = time.perf_counter(), 1, 0
    while batch := recorder.select_notifications(start, 1000):
        for notification in batch:
            type_name, schema = notification.topic.rsplit(":", 1)
            decode(type_name, int(schema), json.loads(notification.state))
        start, count = batch[-1].id + 1, count + len(batch)
    return count / (time.perf_counter() - started)


def best_of(values: list[float], unit: str) -> float:
    """The best of the repeats; for memory (MB), the worst: a peak is a ceiling to stay under."""
    return (min if unit in ("s", "ms", "B") else max)(values)


def number(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def cell(values: list[float], unit: str) -> str:
    median = f" (median {number(statistics.median(values))})" if len(values) > 1 else ""
    return number(best_of(values, unit)) + median


def table(rows: list[Row]) -> str:
    out = ["| measure | simreportd | baseline | ratio | unit | goal |", "|---|---|---|---|---|---|"]
    for name, ours, base, unit, goal in rows:
        pick = lambda values: best_of(values, unit)  # noqa: E731
        ratio = f"{pick(ours) / pick(base):.2f}x" if base and pick(base) else ""
        out.append(f"| {name} | {cell(ours, unit)} | {cell(base, unit) if base else ''} | {ratio} | {unit} | {goal} |")
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
        for role, name in names.items():
            if role in peaks.mb:
                self.note(f"{phase}: {name}", peaks.mb[role])
            if role == "this process":
                self.note(f"{phase}: {STARTED}", peaks.started_mb)

    def note(self, name: str, mb: float) -> None:
        self.mb.setdefault(f"peak RSS, {name}", []).append(mb)

    def rows(self) -> list[Row]:
        return [(name, values, [], "MB", "part of the row above" if name.endswith(STARTED) else "<= 150 MB at 1M actions")
                for name, values in self.mb.items()]


DAEMON_HERE = {"this process": "the daemon (this process, the bench's own memory included)", "fold child": "fold child"}


async def run(actions: int, repeat: int, tool_calls: int) -> list[Row]:
    rows: list[Row] = []
    peaks = PeakRows()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "sims" / "sim_all"
        lines = write_big_folder(folder, actions)
        raw = sum(p.stat().st_size for p in folder.glob("*/actions.jsonl"))
        bare: list[Spent] = []
        constrained: list[Spent] = []
        ingests: list[Spent] = []
        folds: list[Spent] = []
        for i in range(repeat):  # interleaved: each row's baseline timed beside it, not minutes before
            bare.append(spent_on(lambda: bare_insert(folder, root / f"bare{i}.sqlite3")))  # noqa: B023 (called at once)
            constrained.append(spent_on(lambda: bare_insert(folder, root / f"constrained{i}.sqlite3",  # noqa: B023
                                                            constrained=True)))
            with peaks.watch("ingest, then the simulation model folded", {"this process": "this process"}):
                ingest, folded, events = await ingest_and_fold(folder, root / f"store{i}" / "events.sqlite3")
            ingests.append(ingest)
            folds.append(folded)
        reads = [await reading_alone(root / "store0" / "events.sqlite3") for _ in range(repeat)]
        store_path = root / "store0" / "events.sqlite3"
        log_bytes = sum(p.stat().st_size for p in store_path.parent.glob(store_path.name + "*"))  # with its WAL
        size = (store_path.stat().st_size + views_path_for(store_path).stat().st_size) / 1e6
        following: dict[str, tuple[int, float]] = {}
        for fold in ("child", "inline"):
            with peaks.watch(f"folding ({fold}) while ingesting", DAEMON_HERE):
                following[fold] = await folding_while_ingesting(folder, root / f"live-{fold}" / "events.sqlite3", fold)
        e2e: dict[str, list[tuple[Spent, Spent]]] = {"child": [], "inline": []}  # (ours, bare beside it)
        followed: list[tuple[Spent, Spent]] = []
        by_cli: list[tuple[Spent, Spent]] = []
        for i in range(repeat):
            for fold in e2e:
                beside = root / f"e2e-bare{i}{fold}.sqlite3"
                with peaks.watch(f"end to end ({fold} fold)", DAEMON_HERE):
                    ours = await spent_awaiting(end_to_end(root / f"e2e{i}", folder, fold))
                e2e[fold].append((ours, spent_on(lambda: bare_insert(folder, beside))))  # noqa: B023 (called at once)
            beside = root / f"following-bare{i}.sqlite3"
            with peaks.watch("the daemon following the simulator", DAEMON_HERE):
                after = await following_the_simulator(root / f"following{i}", folder, FOLLOWED_RATE)
            followed.append((Spent(after, 0.0), spent_on(lambda: bare_insert(folder, beside))))  # noqa: B023
            beside = root / f"cli-bare{i}.sqlite3"
            with peaks.watch("`simreportd report --wait`", {"command": "the command", "fold child": "its fold child"}):
                ours = spent_on(lambda: report_by_cli(root / f"cli{i}", folder))  # noqa: B023 (called at once)
            by_cli.append((ours, spent_on(lambda: bare_insert(folder, beside))))  # noqa: B023 (called at once)
        with peaks.watch("the report tools", {"this process": "this process"}):
            tools = await measure(folder, store_path, tool_calls, [])  # as bench/tools.py: the p95 of 20 calls
        es_reads = eventsourcing_reads(store_path, repeat)
    rows += [
        ("ingest", [lines / t.wall for t in ingests], [lines / t.wall for t in bare], "lines/s",
         ">= 1.0x bare parse + insert"),
        ("ingest, CPU per line", [t.cpu / lines * 1e6 for t in ingests], [t.cpu / lines * 1e6 for t in bare], "µs",
         "<= 1.0x bare parse + insert"),
        ("bare parse + insert into the events table itself (unique ids and versions)",
         [lines / t.wall for t in constrained], [lines / t.wall for t in bare], "lines/s", "the most ingest could reach"),
        ("bare parse + insert into the events table itself, CPU per line", [t.cpu / lines * 1e6 for t in constrained],
         [t.cpu / lines * 1e6 for t in bare], "µs", "the least ingest could spend"),
        ("simulation-model catch-up", [events / t.wall for t in folds], [lines / t.wall for t in ingests], "events/s",
         ">= 1.0x ingest (lag stays bounded)"),
        ("simulation-model catch-up, CPU per event", [t.cpu / events * 1e6 for t in folds],
         [t.cpu / lines * 1e6 for t in ingests], "µs", "<= 1.0x ingest's per line"),
        ("simulation-model catch-up", [events / t.wall for t in folds], es_reads, "events/s",
         ">= 1.5x eventsourcing select + decode"),
        ("reading and decoding the log alone, no write", reads, es_reads, "events/s", "the most catch-up could reach"),
    ]
    for fold, (lag, behind) in following.items():
        rows += [(f"folding ({fold}) while ingesting: most events behind", [lag], [], "events", "bounded"),
                 (f"folding ({fold}) while ingesting: caught up after ingest ended", [behind], [], "s", "bounded")]
    for fold, runs in e2e.items():
        rows += [(f"end to end ({fold} fold): folder written -> report completed", [o.wall for o, _ in runs],
                  [b.wall for _, b in runs], "s", "<= 2.5x bare parse + insert"),
                 (f"end to end ({fold} fold), CPU (the fold child's included)", [o.cpu for o, _ in runs],
                  [b.cpu for _, b in runs], "s", "<= 2.5x bare parse + insert")]
    rows += [("`simreportd report --wait`: folder written -> report completed", [o.wall for o, _ in by_cli],
              [b.wall for _, b in by_cli], "s", "<= 2.5x bare parse + insert"),
             ("`simreportd report --wait`, CPU (its fold child's included)", [o.cpu for o, _ in by_cli],
              [b.cpu for _, b in by_cli], "s", "<= 2.5x bare parse + insert")]
    rows += [(f"end to end, the daemon following the simulator ({FOLLOWED_RATE:,} lines/s): last line -> report "
              "completed", [o.wall for o, _ in followed], [b.wall for _, b in followed], "s", "<= 2x bare parse + insert")]
    rows += peaks.rows() + [
        ("event store on disk (with its WAL), bytes per action", [log_bytes / lines], [raw / lines], "B",
         "<= 600 B (the baseline: the raw line)"),
        ("store + read models on disk", [size], [raw / 1e6], "MB", "beside the raw actions.jsonl"),
    ]
    rows += [(f"tool {name} p95", [p95(sorted(times))], [], "ms", "< 200 ms") for name, (times, _, _) in tools.items()]
    first = tools["simulation_analytics"][0][0]  # it finds the run's camps, kept for the others
    return rows + [("tool simulation_analytics, first call", [first], [], "ms", "< 500 ms at 1M actions")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("actions", type=int, nargs="?", default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one pass of everything, tool calls and appends few: "
                        "to check the script runs (tests/test_bench_scripts.py), not to measure")
    args = parser.parse_args()
    tune_gc()  # as the daemon does
    if args.tiny:
        import store
        vars(store).update(store.TINY)
        args.repeat = 1
    rows = asyncio.run(run(args.actions, args.repeat, 1 if args.tiny else 20)) + appends()
    print(f"{args.actions:,} actions, best of {args.repeat} (median beside it; peak RSS: the largest),"
          f" {time.strftime('%Y-%m-%d %H:%M')}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
