"""The commands that work through the daemon or a local one (`executor_for`): one coroutine per command; parsing
lives in main.py, the commands that only read the store in store_commands.py, `simulate` in simulate.py."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import tempfile
from pathlib import Path

import anyio

from simreportd.agent.chat.chat_core import check_question
from simreportd.agent.chat.chat_runner import CHAT_ID_PREFIX
from simreportd.analysis.vectors import vectors_path_for
from simreportd.daemon import actions
from simreportd.daemon.chat_replay import replay_chat
from simreportd.daemon.config import Config, find_config, load_config
from simreportd.daemon.logs import setup_logging
from simreportd.daemon.report_replay import ReplayResult, replay_report
from simreportd.daemon.service import Daemon, replaced_or
from simreportd.daemon.systemd import notify
from simreportd.errors import ConfigError, NotFound, UsageError
from simreportd.events import EventStore
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries
from simreportd.projections.runner import views_path_for
from simreportd.projections.sqlite import reading
from simreportd.projections.standing import Standing
from simreportd.simulator.simulate import simulate as write_simulation

from .choose import executor_for
from .local import our_error_as_itself
from .say import say
from .store_commands import existing_store

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
            ended = await work.state(report_id)
        else:
            ended = await work.follow(report_id)
        served_at = work.served_at  # a daemon serving this store shows it already
    return finish(config, report_id, ended, root / "config.toml", served_at=served_at)


async def report(args: argparse.Namespace, config: Config) -> int:
    folder = Path(args.sim_dir).resolve()
    async with executor_for(config, "report", folders=[folder]) as work:
        written_now = args.wait or work.writes_at_once
        await actions.report_writer(config.llm, args.provider, args.model, folder.name, now=written_now)
        await work.ingest(folder, until_complete=not args.now)
        report_id, standing = await work.request_report(folder, args.force, args.provider, args.model, written_now)
        if standing == "running":  # asked for before: a daemon writes it, or this command does (with --wait)
            doing = ("; following it" if work.writes_at_once else "; writing it here") if args.wait else ""
            say(f"Report {report_id} of this run was asked for already{doing} (`--force` writes another once it "
                "has ended)")
        elif standing == "completed":
            say(f"The run already has report {report_id}, completed" + ("; here it is" if args.wait else "")
                + " (`--force` writes a new one)")
        if not args.wait:
            if not work.writes_at_once:
                say("report requested; no daemon is running, so it is written when `simreportd run` starts "
                    "(pass --wait to write it here and now)")
            print(report_id)
            return 0
        ended = await work.follow(report_id)
    return finish(config, report_id, ended, strict=args.strict)


async def resume(args: argparse.Namespace, config: Config) -> int:
    overrides = actions.resume_overrides(args.max_tokens, args.timeout)
    async with executor_for(config, "resume") as work:
        say(await work.resume(args.report_id, args.provider, args.model, overrides))
        ended = await work.follow(args.report_id)
    return finish(config, args.report_id, ended, strict=args.strict)


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


def finish(config: Config, report_id: str, ended: Standing, daemon_config: Path | None = None,
           strict: bool = False, served_at: str | None = None) -> int:
    """Say where the report is (and how to see it in the dashboard: at `served_at`, where a daemon serves it
    already, else by starting one on `daemon_config`); exit 1 if it failed (or, strict, degraded)."""
    folder = config.reports.output_dir / report_id
    outcome = ended.outcome(stopped=True)
    if outcome == "failed":  # its error was printed once, as its progress
        say(f"Fix the cause, then continue it with: simreportd resume {report_id} "
            "(--max-tokens and --timeout change those LLM settings from there on, --provider and --model the writer)")
    elif outcome == "interrupted":
        say(f"Report {report_id} stopped before it ended; a running daemon continues it: simreportd run")
    if outcome in ("failed", "interrupted"):
        print(report_id)
        return 1
    title = ended.title or report_id
    problems = ended.problems
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
    if served_at is not None:
        say(f"See it in the dashboard: open {served_at}#/reports/{report_id} (the daemon running there serves it)")
    elif daemon_config is not None:
        say(f"See it in the dashboard: simreportd -c {daemon_config} run   then open http://127.0.0.1:8765/")
    print(report_id)
    return 1 if strict and problems else 0


async def export(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "export") as work:
        folder = await work.export(args.report_id, Path(args.dir))
    say(f"Exported {args.report_id} to {folder}")
    return 0


async def replay(args: argparse.Namespace, config: Config) -> int:
    if bool(args.all) == bool(args.report_id):
        raise UsageError("pass either REPORT_ID or --all (`simreportd status` lists the reports)")
    existing_store(config)
    logging.getLogger("simreportd.agent.report.report_runner").setLevel(logging.ERROR)  # recorded LLM failures, served again
    async with config.store.open() as store:
        ids = await anyio.to_thread.run_sync(completed_report_ids, config) if args.all else [args.report_id]
        if not ids:
            raise NotFound(f"no completed report in {config.store.where} to replay")
        vectors = vectors_path_for(config.store.path)
        results = [await replay_one(store, report_id, args.into, vectors) for report_id in ids]
    if args.all:  # a table, then what each divergence was
        print(f"{'report':<22}{'steps':>7}  result")
        for r in results:
            verdict = "reproduced" if r.divergence is None else f"DIVERGED at position {r.divergence.position}"
            print(f"{r.report_id:<22}{r.steps:>7}  {verdict}")
    for r in results:
        if r.divergence is None and not args.all:
            print(f"{r.report_id}: reproduced {r.steps} steps, 0 divergences")
        elif r.divergence is not None:
            d = r.divergence
            print(f"{r.report_id}: first divergence at position {d.position} (stream version {d.version}): "
                  f"{d.reason}")
            print("  expected: " + json.dumps(d.expected, ensure_ascii=False)[:2000])
            print("  actual:   " + (json.dumps(d.actual, ensure_ascii=False)[:2000] if d.actual else "(nothing)"))
    diverged = any(r.divergence for r in results)
    return 1 if diverged and (args.verify or args.all) else 0


async def replay_one(store: EventStore, report_id: str, into: str | None, vectors: Path) -> ReplayResult:
    """Replay into --into, or into a scratch store that is removed afterwards (a chat's id replays the chat);
    the analysis reads the vectors the original computed (`vectors`, the store's cache)."""
    replay = replay_chat if report_id.startswith(CHAT_ID_PREFIX) else replay_report
    if into:
        return await replay(store, report_id, Path(into), vectors=vectors)
    with tempfile.TemporaryDirectory(prefix="simreportd-replay-") as tmp:
        return await replay(store, report_id, Path(tmp) / "events.sqlite3", vectors=vectors)


def completed_report_ids(config: Config) -> list[str]:
    with reading(views_path_for(config.store.path)) as conn:
        return report_queries.report_ids(conn, completed_only=True)


async def fork(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "fork") as work:
        new_id = await work.fork(args.report_id, args.at, args.provider, args.model)
        say(f"Forked {args.report_id} at position {args.at} into {new_id}")
        ended = await work.follow(new_id)
    return finish(config, new_id, ended)


async def interview(args: argparse.Namespace, config: Config) -> int:
    check_question(args.question, "interview")  # here, not after a 100 KB frame the daemon's port refuses
    async with executor_for(config, "interview") as work:
        answer = await work.interview(args.target, args.agent, args.question, args.platform)
    say(f"agent {answer['agent_id']} ({answer['mode']}{', ' + answer['note'] if answer['note'] else ''}):")
    print(answer["answer"])
    return 0
