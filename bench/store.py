"""Event store throughput and latency, side by side with the eventsourcing package's SQLite recorder.

Run by hand: `pip install -e ".[bench]" && python bench/store.py`. Same event shape (an
AgentActed of about 330 bytes of JSON) for both; each figure is the best of three runs.
Fair by construction, and each row says so:
- durability: every write row runs at `synchronous=NORMAL` and again at `FULL`, both sides
  the same (eventsourcing's connections get the same PRAGMA as ours);
- work inside the timer: both sides start from the same pydantic models and encode them
  to JSON inside the timed loop (ours in `append`, eventsourcing's as it builds its
  StoredEvents), then insert and commit.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnectionPool,
    SQLiteDatastore,
)

from simreportd.events import SQLiteEventStore
from simreportd.events.models import AgentActed, Source

BATCH, BATCHES, CONCURRENT, ROUNDS, SINGLES, REPEAT = 1000, 20, 64, 40, 2000, 3
# `--tiny`: every row in a second or two, to check the script runs (tests/test_bench_scripts.py); no figure means much
TINY = {"BATCH": 50, "BATCHES": 2, "ROUNDS": 2, "SINGLES": 20, "REPEAT": 1}


def event(i: int) -> AgentActed:
    return AgentActed(simulation_id="sim_bench", generation=1, platform="twitter", round=i // 100, agent_id=i % 50,
                      agent_name="Agent Name", action_type="CREATE_POST", timestamp="2026-03-02T09:00:00",
                      action_args={"content": "The congestion charge is overdue: the trial cut bus journeys.",
                                   "post_id": i}, source=Source(file="twitter/actions.jsonl", ino=1, head="ab",
                                                                offset=i * 300, end=i * 300 + 300))


def best(fn) -> float:  # noqa: ANN001
    return max(fn() for _ in range(REPEAT))


async def ours_batched(path: Path, synchronous: str) -> float:
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    async with SQLiteEventStore(path, synchronous) as store:  # type: ignore[arg-type]
        started = time.perf_counter()
        for batch in batches:
            await store.append("simulation-bench", batch)
        return BATCH * BATCHES / (time.perf_counter() - started)


async def ours_concurrent(path: Path, synchronous: str) -> tuple[float, list[float]]:
    latencies: list[float] = []
    events = [event(i) for i in range(CONCURRENT * ROUNDS)]
    async with SQLiteEventStore(path, synchronous) as store:  # type: ignore[arg-type]
        async def one(i: int) -> None:
            t = time.perf_counter()
            await store.append(f"report-{i % CONCURRENT}", [events[i]])
            latencies.append(time.perf_counter() - t)

        started = time.perf_counter()
        for r in range(ROUNDS):
            await asyncio.gather(*(one(r * CONCURRENT + i) for i in range(CONCURRENT)))
        return CONCURRENT * ROUNDS / (time.perf_counter() - started), latencies


async def harness_alone() -> float:
    """`ours_concurrent` with no store: each of the 64 tasks a round yields once where it would append. What
    asyncio alone schedules on this machine, the ceiling of any store's figure in that row."""
    latencies: list[float] = []

    async def one() -> None:
        t = time.perf_counter()
        await asyncio.sleep(0)
        latencies.append(time.perf_counter() - t)  # as the real row records each append's

    started, rounds = time.perf_counter(), 10 * ROUNDS  # 2,560 tasks are over too soon to time well
    for _ in range(rounds):
        await asyncio.gather(*(one() for _ in range(CONCURRENT)))
    return CONCURRENT * rounds / (time.perf_counter() - started)


async def ours_read(path: Path) -> float:
    async with SQLiteEventStore(path) as store:
        started, position, n = time.perf_counter(), 0, 0
        while batch := await store.read_all(position, 1000):
            for recorded in batch:
                recorded.event  # noqa: B018 (decode into the model)
            position, n = batch[-1].position, n + len(batch)
        return n / (time.perf_counter() - started)


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
    data = model.model_dump(mode="json", exclude={"type"})
    return StoredEvent(originator, version, "simreportd.events.models:AgentActed",
                       json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def es_batched(path: Path, synchronous: str) -> float:
    recorder, originator = es_recorder(path, synchronous), uuid.uuid4()
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    started = time.perf_counter()
    for b, batch in enumerate(batches):
        recorder.insert_events([es_stored(m, originator, b * BATCH + i + 1) for i, m in enumerate(batch)])
    return BATCH * BATCHES / (time.perf_counter() - started)


def es_single(path: Path, synchronous: str) -> float:
    recorder = es_recorder(path, synchronous)
    events = [event(i) for i in range(SINGLES)]
    started = time.perf_counter()
    for model in events:
        recorder.insert_events([es_stored(model, uuid.uuid4(), 1)])
    return SINGLES / (time.perf_counter() - started)


def es_read(path: Path) -> float:
    recorder = es_recorder(path)
    started, start, n = time.perf_counter(), 1, 0
    while batch := recorder.select_notifications(start, 1000):
        for notification in batch:
            AgentActed.model_validate({**json.loads(notification.state), "type": "AgentActed"})
        start, n = batch[-1].id + 1, n + len(batch)
    return n / (time.perf_counter() - started)


def main() -> None:
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        runs = iter(range(1000))
        fresh = lambda name: d / f"{name}-{next(runs)}.sqlite3"  # noqa: E731
        latencies: dict[str, list[float]] = {}
        for sync in ("NORMAL", "FULL"):
            ours_b = best(lambda: asyncio.run(ours_batched(fresh("ours"), sync)))
            rows.append((f"batched append, 1000 events/call, {sync}", ours_b, best(lambda: es_batched(fresh("es"), sync))))
            conc = [asyncio.run(ours_concurrent(fresh("oursc"), sync)) for _ in range(REPEAT)]
            latencies[sync] = sorted(l for c in conc for l in c[1])
            rows.append((f"64 concurrent appenders, 1 event each, {sync}", max(c[0] for c in conc),
                         best(lambda: es_single(fresh("ess"), sync))))
        read_path, es_read_path = fresh("read"), fresh("esread")
        asyncio.run(ours_batched(read_path, "NORMAL"))
        es_batched(es_read_path, "NORMAL")
        rows.append(("read_all + decode into models", best(lambda: asyncio.run(ours_read(read_path))),
                     best(lambda: es_read(es_read_path))))
    print(f"{'measure (events/s; both sides at the same synchronous)':<56}{'simreportd':>12}{'eventsourcing':>15}"
          f"{'ratio':>7}")
    for name, ours, theirs in rows:
        print(f"{name:<56}{ours:>12,.0f}{theirs:>15,.0f}{ours / theirs:>7.2f}")
    for sync, values in latencies.items():
        print(f"single append latency under the 64-appender load, {sync}: p50 {statistics.median(values) * 1000:.2f} ms,"
              f" p99 {values[int(len(values) * 0.99)] * 1000:.2f} ms")
    print("Both sides encode the same models to JSON inside the timer. eventsourcing has no group commit: its\n"
          "concurrent row is one transaction per event, one writer at a time, as that recorder does it.")


if __name__ == "__main__":
    if sys.argv[1:] == ["--tiny"]:
        globals().update(TINY)
    main()
