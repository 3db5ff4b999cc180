"""The PostgreSQL event store beside the eventsourcing package's PostgreSQL recorder, on one server.

Run by hand: `pip install -e ".[bench,postgresql]" "eventsourcing[postgres]"` and Debian's
`postgresql`, then `python bench/postgres.py`. It starts a throwaway cluster (fsync on, as
in production) and prints one table. Same event shape as bench/store.py; eventsourcing's
recorder is given pre-encoded bytes, ours encodes the models inside the timer.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore  # noqa: E402

import bench.store as sizes  # noqa: E402 (BATCH, BATCHES, CONCURRENT, ROUNDS: `--tiny` changes them there)
from bench.store import TINY, best, es_stored, event  # noqa: E402
from simreportd.events import (
    CaughtUp,  # noqa: E402
    PostgresEventStore,  # noqa: E402
)
from tests.postgres_server import database_url, running_cluster, server_binaries  # noqa: E402

SINGLES = 300  # one fsync'd transaction each: a few hundred are enough for a rate
LATENCIES = 500  # events appended one at a time in another process, for the commit-to-subscriber latency

APPENDER = """
import anyio, sys, time
from simreportd.events.models import PlanningStarted
from simreportd.events import PostgresEventStore

async def main(url, count):
    async with PostgresEventStore(url) as store:
        for i in range(int(count)):
            result = await store.append("report-latency", [PlanningStarted(report_id=str(i))])
            print(result.positions[0], time.time(), flush=True)  # when the commit was acknowledged
            await anyio.sleep(0.004)

anyio.run(main, sys.argv[1], sys.argv[2])
"""


async def ours_batched(url: str) -> float:
    batches = [[event(b * sizes.BATCH + i) for i in range(sizes.BATCH)] for b in range(sizes.BATCHES)]
    async with PostgresEventStore(url) as store:
        started = time.perf_counter()
        for batch in batches:
            await store.append("simulation-bench", batch)
        return sizes.BATCH * sizes.BATCHES / (time.perf_counter() - started)


async def ours_concurrent(url: str) -> float:
    events = [event(i) for i in range(sizes.CONCURRENT * sizes.ROUNDS)]
    async with PostgresEventStore(url) as store:
        started = time.perf_counter()
        for r in range(sizes.ROUNDS):
            await asyncio.gather(*(store.append(f"report-{i}", [events[r * sizes.CONCURRENT + i]])
                                   for i in range(sizes.CONCURRENT)))
        return sizes.CONCURRENT * sizes.ROUNDS / (time.perf_counter() - started)


async def subscriber_latency(url: str) -> list[float]:
    """Milliseconds from a commit acknowledged in another process to our subscriber receiving the event
    (negative when the subscriber was faster than the appender's own acknowledgement)."""
    received: dict[int, float] = {}
    async with PostgresEventStore(url) as store:
        async def follow() -> None:
            async for item in store.subscribe(after=await store.last_position()):
                if not isinstance(item, CaughtUp):
                    received[item.position] = time.time()
                    if len(received) == LATENCIES:
                        return

        follower = asyncio.ensure_future(follow())
        await asyncio.sleep(0.2)
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", APPENDER, url, str(LATENCIES),
                                                       stdout=asyncio.subprocess.PIPE)
        output, _ = await process.communicate()
        await asyncio.wait_for(follower, 60)
    committed = {int(p): float(t) for p, t in (line.split() for line in output.decode().splitlines())}
    return sorted((received[p] - t) * 1000 for p, t in committed.items())


def es_recorder(sockets: str, name: str) -> PostgresApplicationRecorder:
    datastore = PostgresDatastore(name, sockets, 5432, "simreportd", "", pool_size=4)
    recorder = PostgresApplicationRecorder(datastore)
    recorder.create_table()
    return recorder


def es_batched(sockets: str, name: str) -> float:
    recorder, originator = es_recorder(sockets, name), uuid.uuid4()
    batches = [[es_stored(event(b * sizes.BATCH + i), originator, b * sizes.BATCH + i + 1) for i in range(sizes.BATCH)]
               for b in range(sizes.BATCHES)]
    started = time.perf_counter()
    for batch in batches:
        recorder.insert_events(batch)
    rate = sizes.BATCH * sizes.BATCHES / (time.perf_counter() - started)
    recorder.datastore.close()  # its pool's threads would keep the process alive
    return rate


def es_single(sockets: str, name: str) -> float:
    recorder = es_recorder(sockets, name)
    events = [es_stored(event(i), uuid.uuid4(), 1) for i in range(SINGLES)]
    started = time.perf_counter()
    for stored in events:
        recorder.insert_events([stored])
    rate = SINGLES / (time.perf_counter() - started)
    recorder.datastore.close()
    return rate


def main() -> None:
    binaries = server_binaries()
    if binaries is None:
        sys.exit("PostgreSQL is not installed: apt-get install postgresql")
    with running_cluster(binaries, fsync=True) as sockets:
        names = iter(f"bench_{n}" for n in range(1000))

        def fresh() -> str:
            name = next(names)
            database_url(sockets, name)
            return name

        url = lambda name: f"postgresql://simreportd@/{name}?host={sockets}"  # noqa: E731
        ours_b = best(lambda: asyncio.run(ours_batched(url(fresh()))))
        es_b = best(lambda: es_batched(sockets, fresh()))
        ours_c = best(lambda: asyncio.run(ours_concurrent(url(fresh()))))
        es_c = es_single(sockets, fresh())
        latencies = asyncio.run(subscriber_latency(url(fresh())))
    print(f"{'measure (PostgreSQL 15, fsync on)':<48}{'simreportd':>14}{'eventsourcing':>16}{'ratio':>8}")
    print(f"{'batched append, 1000 events/call (events/s)':<48}{ours_b:>14,.0f}{es_b:>16,.0f}{ours_b / es_b:>8.2f}")
    print(f"{'64 concurrent appenders, 1 event each (ev/s)':<48}{ours_c:>14,.0f}{es_c:>16,.0f}{ours_c / es_c:>8.2f}")
    print(f"commit to subscriber in another process: p50 {statistics.median(latencies):.1f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99)]:.1f} ms ({len(latencies)} events)")
    print("(eventsourcing: one transaction per event for the concurrent row; its inserts get pre-encoded bytes)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--tiny"]:  # see bench/store.py
        vars(sizes).update(TINY)
        SINGLES, LATENCIES = TINY["SINGLES"], 20
    main()
