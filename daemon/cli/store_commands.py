"""The commands that read the event store and its read models directly, daemon or not: `events`, `status`,
`migrate`. They load the store, not the agent nor the server."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from simreportd.daemon.leases import leases_for
from simreportd.daemon.lock import read_holder
from simreportd.errors import NotFound, UsageError
from simreportd.events import CaughtUp
from simreportd.events.models import EVENT_TYPES
from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.bookkeeping import checkpoint
from simreportd.projections.derived import damaged
from simreportd.projections.failures import fold_failures
from simreportd.projections.runner import views_path_for
from simreportd.projections.sqlite import reading, typed

from .say import say

if TYPE_CHECKING:
    from simreportd.daemon.config import Config


async def events(args: argparse.Namespace, config: Config) -> int:
    streams = [args.stream] if args.stream else None
    unknown = sorted(set(args.types or ()) - set(EVENT_TYPES))
    if unknown:
        raise UsageError(f"unknown event type {', '.join(unknown)}; the types are: {', '.join(EVENT_TYPES)}")
    existing_store(config)
    async with config.store.open() as store:
        if args.stream and not args.follow and not await store.read_stream(args.stream):
            raise NotFound(f"no stream {args.stream!r} in {config.store.where}; streams are named like "
                           "simulation-SIM_ID and report-REPORT_ID (`simreportd status` lists the ids)")
        if args.follow:
            async for item in store.subscribe(args.after, args.types, streams):
                if not isinstance(item, CaughtUp):
                    print(json.dumps(item.as_json(), ensure_ascii=False), flush=True)
        position = args.after
        while batch := await store.read_all(position, 1000, args.types, streams):
            for recorded in batch:
                print(json.dumps(recorded.as_json(), ensure_ascii=False))
            position = batch[-1].position
    return 0


async def migrate(args: argparse.Namespace, config: Config) -> int:
    from simreportd.daemon.migrate import (
        migrate as copy_store,  # only PostgreSQL users need asyncpg
    )

    if not args.to.startswith(("postgresql://", "postgres://")):
        raise UsageError(f"--to {args.to!r} is not a postgresql:// URL")
    count, digest = await copy_store(config, args.to)
    say(f"Copied {count} events into {args.to.split('@')[-1]}; digests match ({digest[:16]}).")
    say("Set [store] url to it (password in the variable named by [store] password_env) to use it.")
    return 0


def existing_store(config: Config) -> None:
    """Commands that only read refuse to create an empty store where none was meant to be."""
    if not config.store.url and not config.store.path.exists():
        raise NotFound(f"no event store at {config.store.path}; run `simreportd demo`, `report` or `run` first, "
                       "or point -c / [store] path at an existing store")


async def status(args: argparse.Namespace, config: Config) -> int:
    existing_store(config)
    async with config.store.open() as store, leases_for(config.store) as leases:
        head = await store.last_position()
        streams = await store.stream_summaries()
        owners = await leases.owners() if config.store.url else {}
    views = await anyio.to_thread.run_sync(read_views_summary, views_path_for(config.store.path))
    holder = read_holder(config.store.path)
    info = {"store": config.store.where, "last_position": head, "streams": len(streams),
            "daemon": {"pid": holder.pid, "since": holder.since, "command": holder.command, "url": holder.url}
            if holder else None,
            "projection_position": views["position"], "projection_lag": head - views["position"],
            "simulations": views["simulations"], "reports": views["reports"], "leases": owners,
            "fold_failures": views["fold_failures"], "read_models_problem": views["read_models_problem"]}
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print_status(info)
    return 0


def read_views_summary(path: Path) -> dict[str, Any]:
    """What the read models say; a file that cannot be read is reported, not fatal (the daemon makes it again)."""
    empty = {"position": 0, "simulations": [], "reports": [], "fold_failures": [], "read_models_problem": None}
    if not path.exists():
        return empty
    try:
        with reading(path) as conn:
            position = checkpoint(conn)
            sims = simulation_queries.simulations(conn)
            reports = report_queries.reports(conn)
            failures = fold_failures(conn)
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        return {**empty, "read_models_problem": f"the read models {path} cannot be read ({exc}); the daemon moves "
                                                  "them aside and rebuilds them from the log when it runs"}
    return {**empty, "position": position, "simulations": [typed(s) for s in sims],
            "reports": [typed(r) for r in reports], "fold_failures": failures}


def print_status(info: dict[str, Any]) -> None:
    print(f"store        {info['store']}")
    holder = info["daemon"]
    print("daemon       " + (f"pid {holder['pid']}, simreportd {holder['command']} since {holder['since']}"
                             + (f", serving {holder['url']}" if holder["url"] else "") if holder
                             else "none (no process holds the store)"))
    print(f"position     {info['last_position']} ({info['streams']} streams, projection lag {info['projection_lag']})")
    if info["read_models_problem"]:
        print(f"read models  {info['read_models_problem']}")
    elif hint := views_hint(info):
        print(hint)
    print(f"simulations  {len(info['simulations'])}")
    for s in info["simulations"]:
        refused = f", {s['rejections']} refused (`simreportd events --type IngestRejected`)" if s["rejections"] else ""
        print(f"  {s['simulation_id']:<20} gen {s['generation']}  {s['status']:<10} {s['actions']} actions{refused}")
    for name, node in info["leases"].items():
        print(f"lease        {name:<32} held by {node}")
    print(f"reports      {len(info['reports'])}")
    width = max([10, *(len(r["status"]) for r in info["reports"])])
    for r in info["reports"]:
        scope = "partial" if r.get("partial") else "full"  # a report on a run still going, or on the whole run
        notes = "".join(f"  ({note})" for note in report_notes(r, info["daemon"] is not None))
        print(f"  {r['report_id']:<20} {r['simulation_id']:<20} {r['status']:<{width}} {scope:<7} {r['progress']:>3}%  "
              f"{(r['created_at'] or '')[:16].replace('T', ' ')}  {r['title'] or ''}{notes}")
    if info["fold_failures"]:
        print(f"fold failures {len(info['fold_failures'])} (events skipped by a read model; see the daemon log)")
        for f in info["fold_failures"]:
            print(f"  position {f['position']:<8} {f['projection']:<12} {f['type']:<20} {f['error'][:80]}")


def report_notes(report: dict[str, Any], daemon_running: bool) -> list[str]:
    """What tells a report from the others of its run: forced or forked, and a report stopped mid-way."""
    notes = []
    if (report.get("trigger") or "").endswith(report_queries.FORCED):
        notes.append("forced: written again although the run had a report")
    if report.get("forked_from"):
        notes.append(f"forked from {report['forked_from']}")
    if report["status"] == "pending" and not daemon_running:
        notes.append("waiting: `simreportd run` writes it")
    elif report["status"] in ("planning", "generating") and not daemon_running:
        notes.append("stopped mid-way: `simreportd run` continues it")
    return notes


def views_hint(info: dict[str, Any]) -> str | None:
    """What to run when the read models, which the lists below come from, lag behind the log and no daemon is
    folding them: a new node of a PostgreSQL store, a store just migrated, a deleted read-model file."""
    lag = info["projection_lag"]
    if lag <= 0 or info["daemon"] is not None:
        return None
    state = "not built yet" if info["projection_position"] == 0 else f"{lag} events behind the log"
    return (f"read models  {state}, so the lists below miss what those events say: `simreportd run` folds them as "
            "it starts, `simreportd rebuild` folds them now")
