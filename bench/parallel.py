"""Wall time of a report with sections in parallel: `[reports] parallel_sections` N=1 against N=4.

Run by hand: `python bench/parallel.py [LATENCY_S] [RUNS] [MAX_CONCURRENCY]` (defaults 0.5, 3, 4). The
model is the scripted OpenAI-compatible server of the tests over real HTTP on 127.0.0.1, answering
like the offline writer after LATENCY_S seconds, with a 4-section outline; the daemon is the real
one (store, tools, the provider's `[llm] max_concurrency` shared by the sections and the persona
interviews of `interview_agents`). Prints the best and median wall time of each N and the ratio;
the goal is N=4 <= 0.35x N=1.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' scripted server

from simreportd.daemon.cli.local import generate  # noqa: E402
from simreportd.daemon.config import Config  # noqa: E402
from simreportd.daemon.service import Daemon  # noqa: E402
from simreportd.simulator.simulate import simulate  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

SECTIONS = 4


def four_sections(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """Keep the offline writer's outline to its first four sections, so N=4 writes them all at once."""
    if "Plan the report" not in body["messages"][0]["content"]:
        return None
    outline = json.loads(message["content"])
    outline["sections"] = outline["sections"][:SECTIONS]
    return {"content": json.dumps(outline)}


async def one_report(base: Path, folder: Path, url: str, parallel: int, concurrency: int) -> tuple[float, int]:
    """Seconds from the request to the completed report, and the sections it wrote."""
    config = Config().with_paths(store=base / "state" / "events.sqlite3", roots=[folder.parent],
                                 output_dir=base / "reports")
    config = config.model_copy(update={
        "llm": config.llm.model_copy(update={"provider": "openai", "base_url": url, "model": "scripted",
                                             "max_concurrency": concurrency, "timeout_s": 30.0}),
        "reports": config.reports.model_copy(update={"auto": False, "parallel_sections": parallel})})
    async with Daemon(config, folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        await daemon.views.catch_up()
        started = time.perf_counter()
        report_id = await daemon.reports.request(folder.name)
        state = await generate(daemon, report_id)
        elapsed = time.perf_counter() - started
    assert state.report_completed, f"report {state.report_id} did not complete"
    return elapsed, len(state.completed)


async def main(latency: float, runs: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(latency_s=latency, script=four_sections) as llm:
        folder = Path(tmp) / "sims" / "sim_parallel"
        simulate(folder, agents=40, rounds=12, seed=2)
        times: dict[int, list[float]] = {1: [], 4: []}
        for run in range(runs):
            for n in times:
                elapsed, sections = await one_report(Path(tmp) / f"run{run}-n{n}", folder, llm.base_url, n,
                                                      concurrency)
                times[n].append(elapsed)
        print(f"report with {sections} sections, model latency {latency} s, [llm] max_concurrency = {concurrency}, "
              f"{runs} runs each")
        print("| parallel_sections | best s | median s |\n|---|---|---|")
        for n, values in times.items():
            print(f"| {n} | {min(values):.2f} | {statistics.median(values):.2f} |")
        ratio = min(times[4]) / min(times[1])
        print(f"N=4 / N=1 (best): {ratio:.2f}x (goal <= 0.35x: {'met' if ratio <= 0.35 else 'not met'}); "
              f"peak requests at the server at once: {llm.peak_in_flight}")


if __name__ == "__main__":
    args = sys.argv[1:]
    anyio.run(main, float(args[0]) if args else 0.5, int(args[1]) if len(args) > 1 else 3,
              int(args[2]) if len(args) > 2 else 4)
