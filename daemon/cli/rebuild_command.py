"""The `rebuild` command: handed to the daemon that holds the store, else done in this process, which loads
neither the agent nor the server (daemon/rebuild.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from simreportd.daemon.lock import read_holder
from simreportd.daemon.rebuild import Rebuilt, rebuild_here

from .say import say

if TYPE_CHECKING:
    from simreportd.daemon.config import Config


async def rebuild(args: argparse.Namespace, config: Config) -> int:
    holder = read_holder(config.store.path)
    if holder is not None and holder.url:  # a daemon serving the store: it rebuilds (handover.running_daemon)
        from .handover import HandedOverExecutor  # a websocket client, and the daemon's actions: only for it

        rebuilt = await HandedOverExecutor(holder, config).rebuild()
    else:
        rebuilt = await rebuild_here(config)
    return verdict(rebuilt)


def verdict(rebuilt: Rebuilt) -> int:
    """Print each read model's digest and whether the rebuild changed it; the exit code that says so."""
    for name in sorted(rebuilt.after):
        verdict = "not compared" if not rebuilt.comparable else \
            "identical" if rebuilt.before.get(name) == rebuilt.after[name] else "CHANGED"
        print(f"{name:<12} {rebuilt.after[name][:16]}  {verdict}")
    print(f"rebuilt read models to position {rebuilt.position}")
    if not rebuilt.comparable:
        say(f"the log grew from position {rebuilt.position_before} to {rebuilt.position} while the read models were "
            "rebuilt (a simulation being ingested, a report being written): the digests are of different logs. "
            "Run `simreportd rebuild` again when nothing is being written to compare them.")
        return 3
    return 0 if rebuilt.before == rebuilt.after else 1
