"""`simreportd simulate`: write a simulation folder, without loading the daemon (docs/protocol.md#command-line)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from simreportd.errors import UsageError
from simreportd.simulator.mirofish_folder import TRUTH_FILE as MIROFISH_TRUTH
from simreportd.simulator.mirofish_folder import write_mirofish
from simreportd.simulator.simulate import simulate as write_simulation

from .say import say

if TYPE_CHECKING:
    from simreportd.daemon.config import Config


def simulate(args: argparse.Namespace, config: Config) -> int:
    """Synchronous on purpose: `--live` owns the main thread to receive SIGTERM like a real simulator."""
    if getattr(args, "like", "story") == "mirofish":
        if args.live or args.restart or args.style != "catalogue":
            raise UsageError("--like mirofish writes a finished run in its own words; drop --live, --restart "
                             "and --style")
        truth = write_mirofish(Path(args.dir), seed=args.seed, agents=args.agents, rounds=args.rounds,
                               databases=True)
        actions = sum(len(p["actions"]) for p in truth["platforms"].values())
        say(f"Wrote simulation {Path(args.dir).resolve().name} as MiroFish writes it ({args.agents} agents, "
            f"{args.rounds} rounds, {actions} actions) to {args.dir}; its truth is in {MIROFISH_TRUTH}")
        return 0
    story = write_simulation(Path(args.dir), agents=args.agents, rounds=args.rounds, seed=args.seed, live=args.live,
                             round_seconds=args.round_seconds, restart=args.restart, oasis_db=args.oasis_db, say=say,
                             style=args.style)
    if not args.live:
        say(f"Wrote simulation {Path(args.dir).resolve().name} ({len(story.agents)} agents, {story.rounds} rounds, "
            f"{args.style} style) to {args.dir}; its folder's name is its id here")
    return 0
