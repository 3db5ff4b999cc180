"""What each `simreportd` command does, one coroutine per command (parsing lives in cli.py)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from simreportd.agent.chat import check_question
from simreportd.agent.chat_runner import CHAT_ID_PREFIX
from simreportd.agent.state import ReportState
from simreportd.daemon import actions
from simreportd.daemon.chat_replay import replay_chat
from simreportd.daemon.config import Config, find_config, load_config
from simreportd.daemon.leases import leases_for
from simreportd.daemon.lock import read_holder
from simreportd.daemon.logs import setup_logging
from simreportd.daemon.replay import ReplayResult, replay_report
from simreportd.daemon.service import Daemon, replaced_or
from simreportd.daemon.systemd import notify
from simreportd.errors import ConfigError, NotFound, UsageError
from simreportd.events.log import EventLog
from simreportd.events.models import EVENT_TYPES
from simreportd.events.store import CaughtUp
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.bookkeeping import checkpoint
from simreportd.projections.derived import damaged
from simreportd.projections.failures import fold_failures
from simreportd.projections.runner import views_path_for
from simreportd.projections.sqlite import reading
from simreportd.simulator.mirofish import TRUTH_FILE as MIROFISH_TRUTH
from simreportd.simulator.mirofish import write_mirofish
from simreportd.simulator.simulate import simulate as write_simulation

from .choose import executor_for
from .local import our_error_as_itself

log = logging.getLogger("simreportd.daemon.cli.commands")


async def run(args: argparse.Namespace, config: Config) -> int:
    async with Daemon(config) as daemon:
        try:
            with our_error_as_itself():  # a busy port: one line naming [server] port, exit 2
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(reload_on_sighup, daemon, args)
                    await daemon.run(ready=True, serve=True)
        except BaseExceptionGroup as group:
            raise replaced_or(group) from None
        finally:
            notify("STOPPING=1")
    return 0


async def reload_on_sighup(daemon: Daemon, args: argparse.Namespace) -> None:
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            reload(daemon, args)


def reload(daemon: Daemon, args: argparse.Namespace) -> None:
    """SIGHUP: read config.toml again; a bad one is refused, with its reason, and the old one stays."""
    notify("RELOADING=1")
    try:
        config = load_config(find_config(getattr(args, "config", None)))
    except ConfigError as exc:
        log.error("config reload refused, keeping the running configuration: %s", exc)
    else:
        setup_logging(config.log.level, config.log.format, journal="JOURNAL_STREAM" in os.environ)
        for note in daemon.reload(config):
            log.warning(note)
        log.info("configuration reloaded")
    notify("READY=1")


async def demo(args: argparse.Namespace, config: Config) -> int:
    root = Path(args.dir).resolve()
    folder = root / "simulations" / "sim_demo"
    config = config.with_paths(store=root / "state" / "events.sqlite3", roots=[root / "simulations"],
                               output_dir=root / "reports")
    if not (folder / "simulation_config.json").exists():
        story = write_simulation(folder, agents=40, rounds=16, seed=7)
        say(f"Simulated {len(story.agents)} agents over {story.rounds} rounds into {folder}")
    (root / "config.toml").write_text(DEMO_CONFIG.format(config=root / "config.toml"), encoding="utf-8")
    async with executor_for(config, "demo") as work:
        report_id, standing = await work.request_demo_report(folder, args.provider, args.model)
        if standing == "completed":
            say(f"The demo report was already written here by an earlier `simreportd demo`; nothing was redone.\n"
                f"To start over: rm -rf {root} && simreportd demo {args.dir}")
            state = await work.state(report_id)
        else:
            state = await work.follow(report_id)
    return finish(config, report_id, state, root / "config.toml")


async def report(args: argparse.Namespace, config: Config) -> int:
    folder = Path(args.sim_dir).resolve()
    async with executor_for(config, "report", folders=[folder]) as work:
        written_now = args.wait or work.writes_at_once
        await actions.report_writer(config.llm, args.provider, args.model, folder.name, now=written_now)
        await work.ingest(folder, until_complete=not args.now)
        report_id, standing = await work.request_report(folder, args.force, args.provider, args.model, written_now)
        if standing != "new":
            say(f"The run already has report {report_id} ({standing}); `--force` writes a new one")
        if not args.wait:
            if not work.writes_at_once:
                say("report requested; no daemon is running, so it is written when `simreportd run` starts "
                    "(pass --wait to write it here and now)")
            print(report_id)
            return 0
        state = await work.follow(report_id)
    return finish(config, report_id, state, strict=args.strict)


async def resume(args: argparse.Namespace, config: Config) -> int:
    overrides = actions.resume_overrides(args.max_tokens, args.timeout)
    async with executor_for(config, "resume") as work:
        say(await work.resume(args.report_id, args.provider, args.model, overrides))
        state = await work.follow(args.report_id)
    return finish(config, args.report_id, state, strict=args.strict)


DEMO_CONFIG = """# Written by `simreportd demo`: the daemon on the demo's folders. Run it with
#   simreportd -c {config} run
# and open http://127.0.0.1:8765/ for the dashboard. Every other key keeps its default.
[store]
path = "state/events.sqlite3"

[watch]
roots = ["simulations"]

[reports]
output_dir = "reports"
"""


def finish(config: Config, report_id: str, state: ReportState, daemon_config: Path | None = None,
           strict: bool = False) -> int:
    """Say where the report is (and how to watch it in the dashboard); exit 1 if it failed (or, strict, degraded)."""
    folder = config.reports.output_dir / report_id
    if state.failed is not None:  # the error itself was printed once, as the report's progress
        say(f"Fix the cause, then continue it with: simreportd resume {report_id} "
            "(--max-tokens and --timeout change those LLM settings from there on, --provider and --model the writer)")
        print(report_id)
        return 1
    title = state.outline.title if state.outline else report_id
    problems = state.verdict.problems if state.verdict else []
    if problems:
        say(f"\nWARNING: report ready but degraded: {title}\n  it does not meet the [agent] rules:")
        for problem in problems:
            say(f"  - {problem}")
    else:
        say(f"\nReport ready: {title}")
    say(f"  full report  {folder / 'full_report.md'}")
    say(f"  sections     {folder}/section_NN.md  (MiroFish-compatible folder: {folder})")
    say(f"  trace        {folder / 'agent_log.jsonl'}  and  simreportd events --stream {report_stream(report_id)}")
    say(f"  event store  {config.store.where}")
    if daemon_config is not None:
        say(f"See it in the dashboard: simreportd -c {daemon_config} run   then open http://127.0.0.1:8765/")
    print(report_id)
    return 1 if strict and problems else 0


def simulate(args: argparse.Namespace, config: Config) -> int:
    """Synchronous on purpose: `--live` owns the main thread to receive SIGTERM like a real simulator."""
    if getattr(args, "like", "story") == "mirofish":
        if args.live or args.restart:
            raise UsageError("--like mirofish writes a finished run; drop --live and --restart")
        truth = write_mirofish(Path(args.dir), seed=args.seed, agents=args.agents, rounds=args.rounds,
                               databases=True)
        actions = sum(len(p["actions"]) for p in truth["platforms"].values())
        say(f"Wrote simulation {Path(args.dir).resolve().name} as MiroFish writes it ({args.agents} agents, "
            f"{args.rounds} rounds, {actions} actions) to {args.dir}; its truth is in {MIROFISH_TRUTH}")
        return 0
    story = write_simulation(Path(args.dir), agents=args.agents, rounds=args.rounds, seed=args.seed, live=args.live,
                             round_seconds=args.round_seconds, restart=args.restart, oasis_db=args.oasis_db, say=say)
    if not args.live:
        say(f"Wrote simulation {Path(args.dir).resolve().name} ({len(story.agents)} agents, {story.rounds} rounds) "
            f"to {args.dir}; its folder's name is its id here")
    return 0


async def rebuild(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "rebuild") as work:
        rebuilt = await work.rebuild()
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


async def export(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "export") as work:
        folder = await work.export(args.report_id, Path(args.dir))
    say(f"Exported {args.report_id} to {folder}")
    return 0


async def replay(args: argparse.Namespace, config: Config) -> int:
    if bool(args.all) == bool(args.report_id):
        raise UsageError("pass either REPORT_ID or --all (`simreportd status` lists the reports)")
    existing_store(config)
    logging.getLogger("simreportd.agent.runner").setLevel(logging.ERROR)  # recorded LLM failures, served again
    async with config.store.open() as store:
        ids = await anyio.to_thread.run_sync(completed_report_ids, config) if args.all else [args.report_id]
        if not ids:
            raise NotFound(f"no completed report in {config.store.where} to replay")
        results = [await replay_one(store, report_id, args.into) for report_id in ids]
    if args.all:
        print(f"{'report':<22}{'steps':>7}  result")
        for r in results:
            verdict = "reproduced" if r.divergence is None else f"DIVERGED at position {r.divergence.position}"
            print(f"{r.report_id:<22}{r.steps:>7}  {verdict}")
    for r in results:
        if r.divergence is None:
            print(f"{r.report_id}: reproduced {r.steps} steps, 0 divergences")
        else:
            d = r.divergence
            print(f"{r.report_id}: first divergence at position {d.position} (stream version {d.version}): "
                  f"{d.reason}")
            print("  expected: " + json.dumps(d.expected, ensure_ascii=False)[:2000])
            print("  actual:   " + (json.dumps(d.actual, ensure_ascii=False)[:2000] if d.actual else "(nothing)"))
    diverged = any(r.divergence for r in results)
    return 1 if diverged and (args.verify or args.all) else 0


async def replay_one(store: EventLog, report_id: str, into: str | None) -> ReplayResult:
    """Replay into --into, or into a scratch store that is removed afterwards (a chat's id replays the chat)."""
    replay = replay_chat if report_id.startswith(CHAT_ID_PREFIX) else replay_report
    if into:
        return await replay(store, report_id, Path(into))
    with tempfile.TemporaryDirectory(prefix="simreportd-replay-") as tmp:
        return await replay(store, report_id, Path(tmp) / "events.sqlite3")


def completed_report_ids(config: Config) -> list[str]:
    with reading(views_path_for(config.store.path)) as conn:
        return report_queries.report_ids(conn, completed_only=True)


async def fork(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "fork") as work:
        new_id = await work.fork(args.report_id, args.at, args.provider, args.model)
        say(f"Forked {args.report_id} at position {args.at} into {new_id}")
        state = await work.follow(new_id)
    return finish(config, new_id, state)


async def interview(args: argparse.Namespace, config: Config) -> int:
    check_question(args.question, "interview")  # here, not after a 100 KB frame the daemon's port refuses
    async with executor_for(config, "interview") as work:
        answer = await work.interview(args.target, args.agent, args.question, args.platform)
    say(f"agent {answer['agent_id']} ({answer['mode']}{', ' + answer['note'] if answer['note'] else ''}):")
    print(answer["answer"])
    return 0


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
    return {**empty, "position": position, "simulations": sims, "reports": reports, "fold_failures": failures}


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
    for r in info["reports"]:
        scope = "partial" if r.get("partial") else "full"  # a report on a run still going, or on the whole run
        print(f"  {r['report_id']:<20} {r['simulation_id']:<20} {r['status']:<10} {scope:<7} {r['progress']:>3}%  "
              f"{r['title'] or ''}")
    if info["fold_failures"]:
        print(f"fold failures {len(info['fold_failures'])} (events skipped by a read model; see the daemon log)")
        for f in info["fold_failures"]:
            print(f"  position {f['position']:<8} {f['projection']:<12} {f['type']:<20} {f['error'][:80]}")


def views_hint(info: dict[str, Any]) -> str | None:
    """What to run when the read models, which the lists below come from, lag behind the log and no daemon is
    folding them: a new node of a PostgreSQL store, a store just migrated, a deleted read-model file."""
    lag = info["projection_lag"]
    if lag <= 0 or info["daemon"] is not None:
        return None
    state = "not built yet" if info["projection_position"] == 0 else f"{lag} events behind the log"
    return (f"read models  {state}, so the lists below miss what those events say: `simreportd run` folds them as "
            "it starts, `simreportd rebuild` folds them now")


def say(text: str) -> None:
    """Human-facing progress goes to stderr, so stdout stays machine-readable."""
    print(text, file=sys.stderr, flush=True)
