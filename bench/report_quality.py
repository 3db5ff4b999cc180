"""Report quality against the simulator's ground truth.

Run by hand: `python bench/report_quality.py --provider offline --runs 10`, or against any
OpenAI-compatible server: `python bench/report_quality.py --provider openai --base-url
http://127.0.0.1:8080/v1 --model qwen2.5-coder-0.5b --runs 10` (or `-c config.toml` for its
`[llm]` table). Each run simulates a seeded story (`simreportd simulate`, which writes
`ground_truth.json`), ingests it, writes one report and scores it with
`simreportd.simulator.quality`: facts recovered, wrong numbers, hallucinated names, grounded
and ungrounded quotes, requirement questions answered. Prints one row per seed and a total.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from simreportd.daemon.cli.local import completed_generation, running
from simreportd.daemon.config import Config, find_config, load_config
from simreportd.daemon.reports import auto_report_id
from simreportd.daemon.service import Daemon
from simreportd.simulator.quality import Score, score_report, table
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH


def bench_config(args: argparse.Namespace, root: Path) -> Config:
    """The `[llm]` table of `-c` (or the defaults), with the command line's provider, server and model."""
    config = load_config(find_config(args.config)) if args.config else Config()
    updates = {"provider": args.provider, "base_url": args.base_url, "model": args.model}
    llm = config.llm.model_copy(update={k: v for k, v in updates.items() if v is not None})
    reports = config.reports.model_copy(update={"auto": False})
    config = config.model_copy(update={"llm": llm, "reports": reports})
    return config.with_paths(store=root / "state" / "events.sqlite3", roots=[root / "sims"],
                             output_dir=root / "reports")


async def one_report(config: Config, folder: Path) -> str:
    """Ingest `folder` and write its report; the report's Markdown ('' when it failed)."""
    async with Daemon(config) as daemon:
        await daemon.watcher.rescan()
        generation = await completed_generation(daemon.store, folder.name)
        report_id = await daemon.reports.request(folder.name, generation, trigger="cli",
                                                 report_id=auto_report_id(folder.name, generation))
        async with running(daemon):
            state = await daemon.reports.wait(report_id)
            await daemon.views.wait_for(await daemon.store.last_position(), timeout=600)
            await daemon.exporter.export(report_id)
    if state.failed is not None:
        print(f"  {folder.name}: report failed during {state.failed.stage}: {state.failed.error}", file=sys.stderr)
        return ""
    return (config.reports.output_dir / report_id / "full_report.md").read_text(encoding="utf-8")


async def main(args: argparse.Namespace) -> None:
    scores: list[tuple[int, Score]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp).resolve()
        config = bench_config(args, root)
        started = time.perf_counter()
        for seed in range(args.first_seed, args.first_seed + args.runs):
            folder = root / "sims" / f"sim_seed{seed}"
            simulate(folder, agents=args.agents, rounds=args.rounds, seed=seed)
            markdown = await one_report(config, folder)
            truth = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
            scores.append((seed, score_report(markdown, truth)))
        elapsed = time.perf_counter() - started
    writer = config.llm.model if config.llm.resolved_provider() == "openai" else "offline writer"
    print(f"Report quality: {writer} ({config.llm.resolved_provider()}), {args.runs} seeds from {args.first_seed}, "
          f"{args.agents} agents x {args.rounds} rounds, {elapsed:.1f} s\n")
    print(table(scores))
    facts = sum(len(s.facts) for _, s in scores)
    share = sum(s.recovered for _, s in scores) / max(facts, 1)
    wrong = sum(len(s.wrong_numbers) for _, s in scores)
    invented = sum(len(s.hallucinated) for _, s in scores)
    met = share >= 0.9 and wrong == 0 and invented == 0
    print(f"\nGoal (>= 90% facts recovered, 0 wrong numbers, 0 hallucinated names): {'met' if met else 'NOT met'}")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--provider", choices=["offline", "openai"], default="offline")
    p.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", help="the model name sent to the server")
    p.add_argument("-c", "--config", help="a config.toml whose [llm] and [agent] tables to use")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--agents", type=int, default=40)
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--keep", help="write simulations, store and reports under this folder instead of a temporary one")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
