"""Report tool latency and result size at 10k, 100k and 1M actions (goal: p95 < 200 ms, results <= 16 KB).

Run by hand: `python bench/tools.py [--data DIR] [SIZE ...]` with SIZE among 10k, 100k, 1m
(default: all three), or tiny (a few hundred actions, to check the script runs). Each size is a
`simreportd simulate` folder, ingested once into an event store with its read models; both are kept
under DIR (default ./bench-data, not in git) and reused by later runs, since building the 1M one takes
a while on a small machine. Then every tool runs through the project's own `SimulationTools` and
`Interviewer` (persona mode, offline writer), on the simulation's hot topics, and the table shows ms per
call (p50/p95/max) and the largest result, and the first `simulation_analytics` call's wall and CPU time
(it finds the run's camps; the calls after reuse them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from simreportd.agent.offline.offline import OfflineProvider
from simreportd.agent.tools.simulation_tools import SimulationTools
from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.interviews.interviewer import Interviewer
from simreportd.events import SQLiteEventStore
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for
from simreportd.simulator.simulate import simulate

SIZES = {"tiny": (12, 10), "10k": (200, 100), "100k": (400, 500), "1m": (1000, 2000)}  # (agents, rounds) -> about
# that many actions (100k: 172,000; 1m: 1,040,000)
GOAL_MS, GOAL_INTERVIEW_MS, GOAL_KB = 200, 500, 16
GOAL_FIRST_ANALYTICS_MS = {"100k": 200, "1m": 500}  # the first simulation_analytics call on a run (its camps)


async def prepare(data: Path, size: str) -> tuple[Path, Path]:
    """The simulation folder and its ingested event store for `size`, made on the first run only."""
    folder, store_path = data / f"sim_{size}", data / f"state_{size}" / "events.sqlite3"
    if not (folder / "simulation_config.json").exists():
        agents, rounds = SIZES[size]
        print(f"[{size}] simulating {agents} agents x {rounds} rounds into {folder}", flush=True)
        simulate(folder, agents=agents, rounds=rounds, seed=3)
    done = store_path.with_suffix(".ingested")
    if not done.exists():
        store_path.parent.mkdir(parents=True, exist_ok=True)
        print(f"[{size}] ingesting into {store_path}", flush=True)
        async with SQLiteEventStore(store_path) as store:
            started = time.perf_counter()
            await SimulationIngestor(store, folder).check()
            print(f"[{size}] ingested in {time.perf_counter() - started:.0f} s", flush=True)
        done.touch()
    return folder, store_path


async def catch_up(store_path: Path) -> None:
    """Fold the read models (a schema change rebuilds them from the log: timed, it can take a while)."""
    async with SQLiteEventStore(store_path) as store, \
            ProjectionRunner(store, views_path_for(store_path), projections()) as views:
        started = time.perf_counter()
        await views.catch_up()
        if (elapsed := time.perf_counter() - started) > 1:
            print(f"read models caught up in {elapsed:.0f} s", flush=True)


async def timed(call: Any, calls: int) -> tuple[list[float], int, float]:
    """Milliseconds per call in the order made (the first is the cold one), the largest result in bytes, and
    the first call's CPU milliseconds (this process's, worker threads included: a busy machine inflates wall)."""
    times, largest, first_cpu = [], 0, 0.0
    for n in range(calls):
        started, cpu = time.perf_counter(), time.process_time()
        result = await call(n)
        times.append((time.perf_counter() - started) * 1000)
        first_cpu = first_cpu or (time.process_time() - cpu) * 1000
        largest = max(largest, len(result.encode()))
    return times, largest, first_cpu


async def measure(folder: Path, store_path: Path, calls_each: int,
                  only: list[str]) -> dict[str, tuple[list[float], int, float]]:
    topics = json.loads((folder / "simulation_config.json").read_text())["event_config"]["hot_topics"]
    key = (folder.name, 1)  # the folder names the simulation
    views = views_path_for(store_path)
    async with SQLiteEventStore(store_path) as store:
        interviewer = Interviewer(store, views, OfflineProvider(), "", 10.0)
        tools = SimulationTools(views, interviewer)
        queries = [f"What did people say about {t}?" for t in topics] + topics
        calls = {
            "gather_context": lambda n: _context(tools, key),
            "quick_search": lambda n: tools.run("quick_search", {"query": queries[n % len(queries)]}, *key),
            "panorama_search": lambda n: tools.run("panorama_search", {"query": queries[n % len(queries)]}, *key),
            "insight_forge": lambda n: tools.run("insight_forge", {"query": queries[n % len(queries)]}, *key),
            "simulation_analytics": lambda n: tools.run("simulation_analytics", {}, *key),
            "interview_agents": lambda n: tools.run("interview_agents", {"interview_topic": topics[n % len(topics)]},
                                                    *key),
            "agent_profile": lambda n: tools.run("agent_profile", {"agent": f"agent:{n * 7 % 200}"}, *key),
            "coalitions": lambda n: tools.run("coalitions", {"min_size": 2 + n % 3}, *key),
            "calculate": lambda n: tools.run("calculate", {"expression": f"({n} + 126) / 42 * 100"}, *key),
        }
        return {name: await timed(call, calls_each) for name, call in calls.items() if not only or name in only}


async def _context(tools: SimulationTools, key: tuple[str, int]) -> str:
    return json.dumps(await tools.context(*key), sort_keys=True, ensure_ascii=False)


def p95(times: list[float]) -> float:
    return times[min(len(times) - 1, round(len(times) * 0.95) - 1)]


async def main(data: Path, sizes: list[str], calls: int, only: list[str]) -> None:
    results, actions = {}, {}
    for size in sizes:
        folder, store_path = await prepare(data, size)
        await catch_up(store_path)
        actions[size] = sum(1 for p in folder.glob("*/actions.jsonl") for line in p.open() if '"action_type"' in line)
        results[size] = await measure(folder, store_path, calls, only)
    print(f"\nms per call, p50/p95/max of {calls} (largest result in KB); goals: p95 < {GOAL_MS} ms "
          f"(interview_agents < {GOAL_INTERVIEW_MS} ms), results <= {GOAL_KB} KB")
    print(f"{'tool':<22}" + "".join(f"{f'{actions[s]:,} actions':>32}" for s in sizes))
    for name in next(iter(results.values())):
        cells = []
        for size in sizes:
            times, largest, _ = results[size][name]
            cells.append(f"{statistics.median(times):.0f}/{p95(sorted(times)):.0f}/{max(times):.0f}"
                         f" ({largest / 1024:.1f} KB)")
        print(f"{name:<22}" + "".join(f"{c:>32}" for c in cells))
    if "simulation_analytics" in next(iter(results.values())):
        cells = [f"{times[0]:.0f} ms, CPU {cpu:.0f} (goal < {GOAL_FIRST_ANALYTICS_MS.get(s, '-')})"
                 for s in sizes for times, _, cpu in [results[s]["simulation_analytics"]]]
        print(f"{'first analytics call':<22}" + "".join(f"{c:>32}" for c in cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("bench-data"))
    parser.add_argument("--calls", type=int, default=20, help="calls per tool and size")
    parser.add_argument("--tool", action="append", default=[], help="measure only this tool (repeatable)")
    parser.add_argument("sizes", nargs="*", help=f"among {', '.join(SIZES)} (default: all)")
    args = parser.parse_args()
    asyncio.run(main(args.data.resolve(), args.sizes or list(SIZES), args.calls, args.tool))
