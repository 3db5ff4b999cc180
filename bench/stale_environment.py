"""Wall time of a report on a run whose env_status.json says `alive` while nothing reads its commands.

Run by hand: `python bench/stale_environment.py [TIMEOUT_S] [PROBE_S]` (defaults 60 and 5, config.toml's).
The run is `simulate --seed 3` (12 agents, 6 rounds), written by the offline writer in a real daemon. Three
reports, each on a fresh store: with no env_status.json; with a stale `alive` and `[interview] probe_s`
PROBE_S (the ping goes unanswered once, every interview is then answered in persona); and with a stale `alive`
and `probe_s` TIMEOUT_S, which is what every report waited before a ping was sent. The goal: a stale `alive`
costs a report at most PROBE_S more than no environment at all (docs/formats.md#interview-file-rpc).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import anyio

from simreportd.daemon.cli.local import generate
from simreportd.daemon.config import Config
from simreportd.daemon.service import Daemon
from simreportd.simulator.simulate import simulate


async def report_seconds(root: Path, stale: bool, timeout_s: float, probe_s: float) -> float:
    """Seconds one report takes on a fresh store, its run's environment stale or absent."""
    folder = root / "sims" / "sim_small"
    simulate(folder, agents=12, rounds=6, seed=3)
    if stale:  # no pid in run_state.json: only asking tells it from a live one
        (folder / "env_status.json").write_text(json.dumps({"status": "alive", "twitter_available": True,
                                                            "reddit_available": True}))
    config = Config().with_paths(store=root / "state" / "events.sqlite3", roots=[root / "sims"],
                                 output_dir=root / "reports")
    config = config.model_copy(update={
        "reports": config.reports.model_copy(update={"auto": False}),
        "embeddings": config.embeddings.model_copy(update={"provider": "off"}),
        "interview": config.interview.model_copy(update={"timeout_s": timeout_s, "probe_s": probe_s})})
    async with Daemon(config, folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        report_id = await daemon.reports.request(folder.name)
        started = time.monotonic()
        await generate(daemon, report_id)
        return time.monotonic() - started


async def main(timeout_s: float, probe_s: float) -> None:
    cases = (("no env_status.json", False, probe_s), (f"stale alive, probe_s {probe_s:g}", True, probe_s),
             (f"stale alive, probe_s {timeout_s:g} (the wait before the ping)", True, timeout_s))
    print(f"| environment ([interview] timeout_s {timeout_s:g}) | report's wall time, s |\n|---|---|")
    for label, stale, probe in cases:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"| {label} | {await report_seconds(Path(tmp), stale, timeout_s, probe):.1f} |", flush=True)


if __name__ == "__main__":
    anyio.run(main, *(float(a) for a in (sys.argv[1:] + ["60", "5"][len(sys.argv[1:]):])[:2]))
