"""Ingest throughput and memory: a 1,000,000-action simulation into the event store.

Run by hand: `python bench/ingest.py [ACTIONS]`. Writes a realistic folder (a small
simulated story, its rounds repeated until the action count is reached), then times
`SimulationIngestor.check()` end to end (read, parse, build events, append) and prints
lines per second and the peak RSS of the process. Then it times the simulation-model
projection over the same events.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.interpreter import tune_gc
from simreportd.events.store import SQLiteEventStore
from simreportd.projections.runner import ProjectionRunner, views_path_for
from simreportd.projections.simulation import SimulationModel
from simreportd.simulator.scenario import make_story
from simreportd.simulator.simulate import write_setup

ID_STRIDE = 1_000_000  # more post and comment ids than one pass of the story uses
POST_IDS = ("post_id", "comment_id", "new_post_id", "quoted_id")


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


async def main(actions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sim_big"
        lines = write_big_folder(folder, actions)
        size = sum(p.stat().st_size for p in folder.rglob("actions.jsonl"))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        async with SQLiteEventStore(Path(tmp) / "events.sqlite3") as store:
            started = time.perf_counter()
            await SimulationIngestor(store, folder).check()
            elapsed = time.perf_counter() - started
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            events = await store.last_position()
            async with ProjectionRunner(store, views_path_for(store.path), [SimulationModel()]) as views:
                started = time.perf_counter()
                await views.catch_up()
                projected = time.perf_counter() - started
    print(f"action lines          {lines:,} ({size / 1e6:.0f} MB of actions.jsonl, {events:,} events)")
    print(f"ingest into the store {lines / elapsed:,.0f} lines/s ({elapsed:.1f} s)")
    print(f"peak RSS              {rss:.0f} MB (the folder writer alone: {rss_before:.0f} MB)")
    print(f"simulation model      {events / projected:,.0f} events/s folded ({projected:.1f} s)")


if __name__ == "__main__":
    tune_gc()  # as the daemon does
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000))
