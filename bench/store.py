"""Event store throughput and latency, side by side with the eventsourcing package's SQLite recorder.

Run by hand: `pip install -e ".[bench]" && python bench/store.py`. Same event shape (an
AgentActed of about 330 bytes of JSON) for both; each figure is the best of three runs.
Both sides get ready-made events; our appends still encode the pydantic models to JSON,
eventsourcing's recorder is given bytes that are already encoded.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

from simreportd.events.models import AgentActed, Source
from simreportd.events.store import EventStore

BATCH, BATCHES, CONCURRENT, ROUNDS, SINGLES = 1000, 20, 64, 40, 2000


def event(i: int) -> AgentActed:
    return AgentActed(simulation_id="sim_bench", generation=1, platform="twitter", round=i // 100, agent_id=i % 50,
                      agent_name="Agent Name", action_type="CREATE_POST", timestamp="2026-03-02T09:00:00",
                      action_args={"content": "The congestion charge is overdue: the trial cut bus journeys.",
                                   "post_id": i}, source=Source(file="twitter/actions.jsonl", ino=1, head="ab",
                                                                offset=i * 300, end=i * 300 + 300))


def best(fn, repeat: int = 3) -> float:
    return max(fn() for _ in range(repeat))


async def ours_batched(path: Path) -> float:
    batches = [[event(b * BATCH + i) for i in range(BATCH)] for b in range(BATCHES)]
    async with EventStore(path) as store:
        started = time.perf_counter()
        for batch in batches:
            await store.append("simulation-bench", batch)
        return BATCH * BATCHES / (time.perf_counter() - started)


async def ours_concurrent(path: Path) -> tuple[float, list[float]]:
    latencies: list[float] = []
    events = [event(i) for i in range(CONCURRENT * ROUNDS)]
    async with EventStore(path) as store:
        async def one(i: int) -> None:
            t = time.perf_counter()
            await store.append(f"report-{i % CONCURRENT}", [events[i]])
            latencies.append(time.perf_counter() - t)

        started = time.perf_counter()
        for r in range(ROUNDS):
            await asyncio.gather(*(one(r * CONCURRENT + i) for i in range(CONCURRENT)))
        return CONCURRENT * ROUNDS / (time.perf_counter() - started), latencies


async def ours_read(path: Path) -> float:
    async with EventStore(path) as store:
        started, position, n = time.perf_counter(), 0, 0
        while batch := await store.read_all(position, 1000):
            for recorded in batch:
                recorded.event  # noqa: B018 (decode into the model)
            position, n = batch[-1].position, n + len(batch)
        return n / (time.perf_counter() - started)


def es_recorder(path: Path) -> SQLiteApplicationRecorder:
    recorder = SQLiteApplicationRecorder(SQLiteDatastore(str(path)))
    recorder.create_table()
    return recorder


def es_stored(i: int, originator: uuid.UUID, version: int) -> StoredEvent:
    data = event(i).model_dump(mode="json", exclude={"type"})
    return StoredEvent(originator, version, "simreportd.events.models:AgentActed",
                       json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def es_batched(path: Path) -> float:
    recorder, originator = es_recorder(path), uuid.uuid4()
    batches = [[es_stored(b * BATCH + i, originator, b * BATCH + i + 1) for i in range(BATCH)] for b in range(BATCHES)]
    started = time.perf_counter()
    for batch in batches:
        recorder.insert_events(batch)
    return BATCH * BATCHES / (time.perf_counter() - started)


def es_single(path: Path) -> float:
    recorder = es_recorder(path)
    events = [es_stored(i, uuid.uuid4(), 1) for i in range(SINGLES)]
    started = time.perf_counter()
    for stored in events:
        recorder.insert_events([stored])
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
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        runs = iter(range(1000))
        fresh = lambda name: d / f"{name}-{next(runs)}.sqlite3"  # noqa: E731
        ours_b = best(lambda: asyncio.run(ours_batched(fresh("ours"))))
        es_b = best(lambda: es_batched(fresh("es")))
        conc = [asyncio.run(ours_concurrent(fresh("oursc"))) for _ in range(3)]
        ours_c = max(c[0] for c in conc)
        latencies = sorted(l for c in conc for l in c[1])
        es_c = best(lambda: es_single(fresh("ess")))
        read_path, es_read_path = fresh("read"), fresh("esread")
        asyncio.run(ours_batched(read_path))
        es_batched(es_read_path)
        ours_r = best(lambda: asyncio.run(ours_read(read_path)))
        es_r = best(lambda: es_read(es_read_path))
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    print(f"{'measure':<48}{'simreportd':>14}{'eventsourcing':>16}{'ratio':>8}")
    print(f"{'batched append, 1000 events/call (events/s)':<48}{ours_b:>14,.0f}{es_b:>16,.0f}{ours_b / es_b:>8.2f}")
    print(f"{'64 concurrent appenders, 1 event each (ev/s)':<48}{ours_c:>14,.0f}{es_c:>16,.0f}{ours_c / es_c:>8.2f}")
    print(f"{'read_all + decode into models (events/s)':<48}{ours_r:>14,.0f}{es_r:>16,.0f}{ours_r / es_r:>8.2f}")
    print(f"single append latency under that load: p50 {statistics.median(latencies) * 1000:.2f} ms, "
          f"p99 {p99:.2f} ms")
    print("(eventsourcing: one transaction per event for the concurrent row; its inserts get pre-encoded bytes)")


if __name__ == "__main__":
    main()
