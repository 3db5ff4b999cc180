"""Event store CPU per event, side by side with the eventsourcing package's SQLite recorder.

Run by hand: `pip install -e ".[bench]" && python bench/store.py`. Same event shape (an AgentActed of about 330
bytes of JSON) for both, and fair by construction:
- the same encoder: both sides start from the same pydantic models and serialise them inside the timed loop with
  the same pydantic-core serializer (`simreportd.events.codec.encode`: ours in `append`, eventsourcing's as it
  builds its StoredEvents), then insert and commit;
- the same durability: every write row runs at `synchronous=NORMAL` and again at `FULL`, both sides alike
  (eventsourcing's connections get the same PRAGMA as ours);
- CPU time of the whole process (every thread: aiosqlite's too), not wall time, which a shared machine's load
  inflates; and interleaved: each repeat times one side then the other, so load falls on both alike.
Each figure is the best of REPEAT runs (the median beside it).

Beside the batched rows, a floor timed in the same repeat: the least any event store must do to append a
batch (the same serializer, then one `executemany` of each event's stream, version and data into a table keyed
by position with its unique (stream, version) index, and a commit, at the same synchronous). Eventsourcing's
figure over the floor's is the most a store could spend less than eventsourcing does.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnectionPool,
    SQLiteDatastore,
)
from pydantic_core import from_json

from simreportd.events import SQLiteEventStore
from simreportd.events.codec import encode
from simreportd.events.models import AgentActed, Source

BATCH, BATCHES, CONCURRENT, ROUNDS, SINGLES, REPEAT = 1000, 20, 64, 40, 2000, 3
# `--tiny`: every row in a second or two, to check the script runs (tests/stories/test_bench_scripts.py); no figure means much
TINY = {"BATCH": 50, "BATCHES": 2, "ROUNDS": 2, "SINGLES": 20, "REPEAT": 1}


def event(i: int) -> AgentActed:
    return AgentActed(simulation_id="sim_bench", generation=1, platform="twitter", round=i // 100, agent_id=i % 50,
                      agent_name="Agent Name", action_type="CREATE_POST", timestamp="2026-03-02T09:00:00",
                      action_args={"content": "The congestion charge is overdue: the trial cut bus journeys.",
                                   "post_id": i}, source=Source(file="twitter/actions.jsonl", ino=1, head="ab",
                                                                offset=i * 300, end=i * 300 + 300))


class Measured(NamedTuple):
    """Events handled in a timed loop, its CPU seconds (every thread of the process) and its wall seconds."""

    events: int
    cpu: float
    wall: float

    def cpu_us(self) -> float:
        return self.cpu / self.events * 1e6


class Timer:
    """CPU and wall time of a `with` block."""

    def __enter__(self) -> Timer:
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu, self.wall = time.process_time() - self.cpu, time.perf_counter() - self.wall

    def of(self, events: int) -> Measured:
        return Measured(events, self.cpu, self.wall)


async def ours_batched(path: Path, synchronous: str) -> Measured:
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    async with SQLiteEventStore(path, synchronous) as store:  # type: ignore[arg-type]
        with Timer() as timer:
            for batch in batches:
                await store.append("simulation-bench", batch)
        return timer.of(BATCH * BATCHES)


async def ours_concurrent(path: Path, synchronous: str) -> tuple[Measured, list[float]]:
    latencies: list[float] = []
    events = [event(i) for i in range(CONCURRENT * ROUNDS)]
    async with SQLiteEventStore(path, synchronous) as store:  # type: ignore[arg-type]
        async def one(i: int) -> None:
            t = time.perf_counter()
            await store.append(f"report-{i % CONCURRENT}", [events[i]])
            latencies.append(time.perf_counter() - t)

        with Timer() as timer:
            for r in range(ROUNDS):
                await asyncio.gather(*(one(r * CONCURRENT + i) for i in range(CONCURRENT)))
        return timer.of(CONCURRENT * ROUNDS), latencies


async def ours_read(path: Path) -> Measured:
    async with SQLiteEventStore(path) as store:
        position, n = 0, 0
        with Timer() as timer:
            while batch := await store.read_all(position, 1000):
                for recorded in batch:
                    recorded.event  # noqa: B018 (decode into the model)
                position, n = batch[-1].position, n + len(batch)
        return timer.of(n)


class SynchronousPool(SQLiteConnectionPool):
    """eventsourcing's connection pool, with our store's durability setting on every connection."""

    def __init__(self, db_name: str, synchronous: str) -> None:
        self.synchronous = synchronous
        super().__init__(db_name=db_name)

    def _create_connection(self):  # type: ignore[no-untyped-def]
        connection = super()._create_connection()
        connection._sqlite_conn.execute(f"PRAGMA synchronous={self.synchronous}")
        return connection


def es_recorder(path: Path, synchronous: str = "FULL") -> SQLiteApplicationRecorder:
    datastore = SQLiteDatastore(str(path))
    datastore.pool = SynchronousPool(str(path), synchronous)
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    return recorder


def es_stored(model: AgentActed, originator: uuid.UUID, version: int) -> StoredEvent:
    """The model as eventsourcing stores it, serialised by our own encoder: the same work as our `append`'s."""
    return StoredEvent(originator, version, "simreportd.events.models:AgentActed", encode(model).encode())


def floor_batched(path: Path, synchronous: str) -> Measured:
    """The least a batched append can do: encode each event, insert the batch's rows and commit."""
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("PRAGMA journal_mode=WAL", f"PRAGMA synchronous={synchronous}"):
        conn.execute(pragma)
    conn.execute("CREATE TABLE events (position INTEGER PRIMARY KEY, stream INTEGER NOT NULL, version INTEGER NOT NULL,"
                 " data BLOB NOT NULL, UNIQUE (stream, version))")
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    with Timer() as timer:
        for b, batch in enumerate(batches):
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO events (stream, version, data) VALUES (1, ?, ?)",
                             [(b * BATCH + i + 1, encode(m).encode()) for i, m in enumerate(batch)])
            conn.execute("COMMIT")
    conn.close()
    return timer.of(BATCH * BATCHES)


def es_batched(path: Path, synchronous: str) -> Measured:
    recorder, originator = es_recorder(path, synchronous), uuid.uuid4()
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    with Timer() as timer:
        for b, batch in enumerate(batches):
            recorder.insert_events([es_stored(m, originator, b * BATCH + i + 1) for i, m in enumerate(batch)])
    return timer.of(BATCH * BATCHES)


def es_single(path: Path, synchronous: str) -> Measured:
    recorder = es_recorder(path, synchronous)
    events = [event(i) for i in range(SINGLES)]
    with Timer() as timer:
        for model in events:
            recorder.insert_events([es_stored(model, uuid.uuid4(), 1)])
    return timer.of(SINGLES)


def es_read(path: Path) -> Measured:
    recorder = es_recorder(path)
    start, n = 1, 0
    with Timer() as timer:
        while batch := recorder.select_notifications(start, 1000):
            for notification in batch:
                AgentActed.model_validate({**from_json(notification.state), "type": "AgentActed"})
            start, n = batch[-1].id + 1, n + len(batch)
    return timer.of(n)


Pair = tuple[list[Measured], list[Measured], list[Measured]]  # ours, eventsourcing's, the floor's: a value a repeat


def compared(fresh: Callable[[str], Path]) -> dict[str, Pair]:
    """Every row, each repeat timing our side then theirs (interleaved); the single latencies under load too."""
    rows: dict[str, Pair] = {}
    latencies: dict[str, list[float]] = {}
    read_path, es_read_path = fresh("read"), fresh("esread")
    asyncio.run(ours_batched(read_path, "NORMAL"))
    es_batched(es_read_path, "NORMAL")
    for _ in range(REPEAT):
        for sync in ("NORMAL", "FULL"):
            pair = rows.setdefault(f"batched append, {BATCH} events a call, {sync}", ([], [], []))
            pair[0].append(asyncio.run(ours_batched(fresh("ours"), sync)))
            pair[1].append(es_batched(fresh("es"), sync))
            pair[2].append(floor_batched(fresh("floor"), sync))
            pair = rows.setdefault(f"{CONCURRENT} concurrent appenders, 1 event each, {sync}", ([], [], []))
            measured, waits = asyncio.run(ours_concurrent(fresh("oursc"), sync))
            pair[0].append(measured)
            latencies.setdefault(sync, []).extend(waits)
            pair[1].append(es_single(fresh("ess"), sync))
        pair = rows.setdefault("read_all + decode into models", ([], [], []))
        pair[0].append(asyncio.run(ours_read(read_path)))
        pair[1].append(es_read(es_read_path))
    for sync, values in latencies.items():
        values.sort()
        print(f"single append latency under the {CONCURRENT}-appender load, {sync}: p50 "
              f"{statistics.median(values) * 1000:.2f} ms, p99 {values[int(len(values) * 0.99)] * 1000:.2f} ms (wall)")
    return rows


def cpu_cell(values: list[Measured]) -> str:
    return f"{min(m.cpu_us() for m in values):.1f} ({statistics.median(m.cpu_us() for m in values):.1f})"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = iter(range(1000))
        rows = compared(lambda name: Path(tmp) / f"{name}-{next(runs)}.sqlite3")
    print(f"\nCPU µs per event, best of {REPEAT} (median), interleaved; both sides encode with the same serializer,"
          " at the same synchronous\n")
    print("| measure | simreportd | eventsourcing | eventsourcing / simreportd (CPU) | floor | eventsourcing / floor"
          " | wall events/s, ours / theirs |")
    print("|---|---|---|---|---|---|---|")
    for name, (ours, theirs, floor) in rows.items():
        best = min(m.cpu_us() for m in theirs)
        ratio = best / min(m.cpu_us() for m in ours)
        wall = max(m.events / m.wall for m in ours) / max(m.events / m.wall for m in theirs)
        floor_cells = f"{cpu_cell(floor)} | {best / min(m.cpu_us() for m in floor):.2f}x" if floor else " | "
        print(f"| {name} | {cpu_cell(ours)} | {cpu_cell(theirs)} | {ratio:.2f}x | {floor_cells} | {wall:.2f}x |")
    print("\neventsourcing has no group commit: its concurrent row is one transaction per event, one writer at a\n"
          "time, as that recorder does it. A ratio above 1 is ours spending less CPU an event; eventsourcing / floor\n"
          "is the most any store could.")


if __name__ == "__main__":
    if sys.argv[1:] == ["--tiny"]:
        globals().update(TINY)
    main()
