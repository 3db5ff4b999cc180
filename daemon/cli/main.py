"""`simreportd`: the command line, the front door of the daemon (docs/protocol.md#command-line).

Exit codes: 0 success, 1 a failed run, 2 bad usage or configuration. Our errors are
printed as one line that says what to do, never as a traceback.

Async commands run under one root cancel scope (docs/architecture.md#shutdown): SIGTERM or SIGINT
cancel it, every component finishes or rolls back what it has in flight, and the process
exits 0. If that takes longer than `[service] stop_timeout_s`, or a second SIGINT comes, it
exits at once: SQLite keeps every committed event either way.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from simreportd import __version__
from simreportd.daemon.interpreter import tune_gc
from simreportd.daemon.logs import setup_logging
from simreportd.errors import SimreportdError
from simreportd.stop_request import stop_requested

if TYPE_CHECKING:
    from simreportd.daemon.config import Config

STORE_COMMANDS = ("events", "status", "migrate")  # daemon/cli/store_commands.py
Handler = Callable[[argparse.Namespace, "Config"], Any]  # returns an exit code, or a coroutine that does


log = logging.getLogger("simreportd.daemon.cli.main")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    tune_gc()
    from simreportd.daemon.config import load_config

    try:
        config = load_config(config_path(args))
        config = config.model_copy(update={"log": config.log.model_copy(update={"level": console_level(args, config)})})
        setup_logging(config.log.level, config.log.format, journal="JOURNAL_STREAM" in os.environ)
        if args.command != "run" and not getattr(args, "verbose", False):  # they print a report's end themselves
            logging.getLogger("simreportd.agent.report.report_runner.outcome").setLevel(logging.ERROR)
        handler = handler_for(args.command)
        if not inspect.iscoroutinefunction(handler):
            _restore_default_signals()
            if stop_requested():
                return 0
            code: int = handler(args, config)
            return code
        return anyio.run(_until_signalled, handler, args, config, backend="asyncio")
    except BrokenPipeError:
        return _reader_gone()
    except SimreportdError as exc:
        print(f"simreportd: {'' if exc.exit_code == 2 else 'error: '}{exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def handler_for(command: str) -> Handler:
    """The function of `command`, its module imported only now: `--version`, `simulate` and `status` do not load
    the daemon, the agent and the server, which take most of a second to import."""
    handler: Handler
    if command == "simulate":
        from simreportd.daemon.cli.simulate_command import simulate

        handler = simulate
    elif command == "chat":
        from simreportd.daemon.cli.chat_command import chat

        handler = chat
    elif command == "rebuild":
        from simreportd.daemon.cli.rebuild_command import rebuild

        handler = rebuild
    elif command in STORE_COMMANDS:
        from simreportd.daemon.cli import store_commands

        handler = getattr(store_commands, command)
    else:
        from simreportd.daemon.cli import commands

        handler = getattr(commands, command)
    return handler


def console_level(args: argparse.Namespace, config: Config) -> str:
    """The level this command logs at: `run` at [log] level. The others print their own progress on stderr,
    and INFO lines would say each step twice, interleaved with it: they log warnings and errors, unless -v
    (INFO) or [log] level DEBUG asks for more. The fold child a command starts inherits the level."""
    asked: int = logging.getLevelNamesMapping()[config.log.level]
    if args.command == "run" or asked == logging.DEBUG:
        return config.log.level
    level = min(asked, logging.INFO) if getattr(args, "verbose", False) else max(asked, logging.WARNING)
    return logging.getLevelName(level)


def _reader_gone() -> int:
    """`simreportd events | head`: the reader closed the pipe, so stop quietly, as `cat` does."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush must not fail again
    return 0


def config_path(args: argparse.Namespace) -> Path | None:
    from simreportd.daemon.config import find_config

    return find_config(getattr(args, "config", None))


def _restore_default_signals() -> None:
    """Synchronous commands (`simulate --live`) handle signals themselves, like a real simulator."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


async def _until_signalled(handler: Callable[..., Awaitable[int]], args: argparse.Namespace, config: Config) -> int:
    """Run the command under a root scope that SIGTERM or SIGINT cancel (exit 0 for a command asked to stop)."""
    result: int = 0
    error: Exception | None = None
    async with anyio.create_task_group() as tasks:

        async def work() -> None:
            nonlocal result, error
            try:
                result = await handler(args, config)
            except (SimreportdError, BrokenPipeError) as exc:  # raised again below, not wrapped in an ExceptionGroup
                error = exc
            finally:
                tasks.cancel_scope.cancel()

        await tasks.start(_stop_on_signal, tasks.cancel_scope, config.service.stop_timeout_s)
        if stop_requested():  # asked to stop while we were starting
            tasks.cancel_scope.cancel()
        else:
            tasks.start_soon(work)
    if error is not None:
        raise error
    return result


async def _stop_on_signal(root: anyio.CancelScope, stop_timeout_s: float,
                          task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            if root.cancel_called:  # a second signal: stop now
                log.warning("stopping at once (%s again)", signal.Signals(signum).name)
                os._exit(130 if signum == signal.SIGINT else 0)
            log.info("stopping (%s)", signal.Signals(signum).name)
            _exit_after(stop_timeout_s)
            root.cancel()


def _exit_after(seconds: float) -> None:
    """The last resort of a bounded stop: exit even if some work in flight will not let go."""

    def give_up() -> None:
        log.error("stopping took longer than [service] stop_timeout_s = %g; exiting now", seconds)
        logging.shutdown()
        os._exit(0)

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand without -c must not erase a -c given before the subcommand.
    common.add_argument("-c", "--config", metavar="PATH", default=argparse.SUPPRESS,
                        help="config.toml to use (default: ./config.toml, or the embedded defaults)")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log INFO lines too (commands other than `run` log only warnings and errors "
                        "beside their own progress)")
    parser = argparse.ArgumentParser(prog="simreportd", parents=[common], description=(
        "Watch social-simulation output folders, record everything as events in SQLite, and write "
        "reports about each run."))
    parser.add_argument("--version", action="version", version=f"simreportd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=text, description=text)

    command("run", "Run the daemon: watch [watch] roots, ingest, write reports.")
    p = command("demo", "Simulate a run, ingest it and write its report, all under DIR "
                "(no API key, no network needed).")
    p.add_argument("dir", nargs="?", default="simreportd-demo", metavar="DIR",
                   help="the folder it writes everything into: simulations/, state/ (the event store), reports/ "
                   "and a config.toml to run the daemon on them (default: ./%(default)s; run again, it reuses "
                   "the report there)")
    writer_options(p, "write the demo report with")
    p = command("simulate", "Write a realistic MiroFish simulation folder into DIR.")
    p.add_argument("dir", metavar="DIR", help="the simulation folder to write (its name is the simulation id)")
    p.add_argument("--agents", type=int, default=24, metavar="N", help="simulated agents (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=12, metavar="R", help="rounds per platform (default: %(default)s)")
    p.add_argument("--seed", type=int, default=7, metavar="S", help="random seed: the same seed writes the same "
                   "run (default: %(default)s)")
    p.add_argument("--live", action="store_true", help="write one round every --round-seconds like a running "
                   "simulator, then keep running to answer interviews until Ctrl-C or SIGTERM")
    p.add_argument("--round-seconds", type=float, default=0.5, metavar="X", help="with --live, seconds per round "
                   "(default: %(default)s)")
    p.add_argument("--restart", action="store_true", help="delete and rewrite the run files (force restart)")
    p.add_argument("--oasis-db", action="store_true", help="also write the OASIS SQLite databases")
    p.add_argument("--style", choices=("catalogue", "llm"), default="catalogue", help="how the story's agents write: "
                   "catalogue: each camp's fixed lines; llm: every statement written anew as LLM agents write them "
                   "(paraphrased arguments, chatter, replies that argue back, side changes), with each statement's "
                   "argument in ground_truth.json (default: %(default)s)")
    p.add_argument("--like", choices=("story", "mirofish"), default="story", help="story: the stand-in simulator's "
                   "run with its story; mirofish: what MiroFish's runner over OASIS v0.2.5 really writes (seed posts "
                   "logged twice, dropped targets, idle rounds, interviews in the databases, Chinese text), with "
                   "its truth in mirofish_truth.json (default: %(default)s)")
    p = command("report", "Ingest SIM_DIR and generate its report, once the run has completed.")
    p.add_argument("sim_dir", metavar="SIM_DIR", help="the simulation folder (holding simulation_config.json or "
                   "twitter/actions.jsonl)")
    p.add_argument("--wait", action="store_true", help="write the report here and return when it ends; print its "
                   "id last")
    p.add_argument("--now", action="store_true", help="do not wait for a running simulation to complete: report on "
                   "what it has written so far (the report says it is partial)")
    writer_options(p, "write the report with")
    p.add_argument("--force", action="store_true", help="write a new report even if the run has a completed one "
                   "(without it, the run's report is returned: the one being written or the one written)")
    strict(p)
    p = command("resume", "Continue a failed report from its last recorded step, with the "
                "provider and model it was written with unless --provider/--model ask for another.")
    report_id(p, "the failed report to continue")
    p.add_argument("--provider", choices=["openai", "offline"], help="continue with this provider instead "
                   "(recorded as a WriterChanged event)")
    p.add_argument("--model", help="continue with this model instead (over the OpenAI API; recorded)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="continue with this completion token limit (recorded "
                   "in the ReportResumed event)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="continue with this LLM request timeout "
                   "(recorded)")
    strict(p)
    p = command("replay", "Re-run a completed report (or a chat) with LLM answers served from "
                "the log and tools re-run against the rebuilt simulation model; compare every step.")
    p.add_argument("report_id", nargs="?", metavar="REPORT_ID|CHAT_ID", help="the completed report (or the chat, "
                   "chat_...) to reproduce; `simreportd status` lists the reports")
    p.add_argument("--verify", action="store_true", help="exit 1 and show the first divergence, if any")
    p.add_argument("--all", action="store_true", help="replay every completed report; print a summary table")
    p.add_argument("--into", metavar="PATH", help="the store to replay into (default: a scratch file)")
    p = command("fork", "Start a new report from a report's events up to POSITION, continued live.")
    report_id(p, "the report to fork")
    p.add_argument("--at", type=int, required=True, metavar="POSITION", help="a position in the event log (the "
                   "`position` field of `simreportd events --stream report-REPORT_ID`) between the report's first "
                   "and last event: the fork shares its history up to there and writes the rest")
    p.add_argument("--model", help="the model the fork continues with (default: [llm] model)")
    p.add_argument("--provider", choices=["openai", "offline"], help="the provider the fork continues with "
                   "(default: [llm] provider)")
    p = command("interview", "Ask a simulated agent a question once its report is complete "
                "(live when the simulation is still running, else in persona).")
    p.add_argument("target", metavar="SIMULATION_ID|REPORT_ID", help="a simulation (its latest report's run) "
                   "or a report, once that report has completed; `simreportd status` lists both")
    p.add_argument("--agent", type=int, required=True, metavar="N", help="the agent's id in the simulation (its "
                   "user_id in the profiles: 0 to the number of agents - 1)")
    p.add_argument("--platform", choices=["twitter", "reddit"], help="a live interview asks the agent on this "
                   "platform only (default: on both, as MiroFish does); in persona it changes nothing")
    p.add_argument("question", help="the question, in quotes")
    p = command("chat", "Ask follow-up questions about a completed report: one per line, or at a prompt "
                "when stdin is a terminal. Answers cite the simulation's ids; the chat is recorded as stream "
                "chat-CHAT_ID.")
    report_id(p, "the completed report to ask about")
    p.add_argument("--chat", metavar="CHAT_ID", help="continue this chat instead of opening a new one")
    command("rebuild", "Drop every read model and export, replay the log, compare digests "
            "(exit 1: a read model changed; 3: the log grew meanwhile, not compared).")
    p = command("export", "Write a report's MiroFish-compatible folder into DIR.")
    report_id(p, "the report to export")
    p.add_argument("dir", metavar="DIR", help="the folder to write it into (made if missing)")
    p = command("events", "Print events as JSON lines.")
    p.add_argument("--after", type=int, default=0, metavar="N", help="only events after log position N (the "
                   "`position` field; default: from the first)")
    p.add_argument("--stream", metavar="S", help="only this stream: simulation-SIM_ID, report-REPORT_ID or "
                   "chat-CHAT_ID")
    p.add_argument("--type", dest="types", action="append", metavar="T", help="only events of this type, e.g. "
                   "SectionCompleted (repeat it for several; docs/events.md lists them)")
    p.add_argument("--follow", action="store_true", help="keep printing new events")
    p = command("migrate", "Copy the SQLite event store into an empty PostgreSQL database, "
                "positions and ids intact, and verify it.")
    p.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host/database")
    p = command("status", "Show the store, simulations and reports.")
    p.add_argument("--json", action="store_true", help="print it as one JSON object")
    return parser


def writer_options(p: argparse.ArgumentParser, task: str) -> None:
    p.add_argument("--provider", choices=["openai", "offline"], help=f"{task} this provider (default: [llm] "
                   "provider; offline needs no model nor network)")
    p.add_argument("--model", help=f"{task} this model, over the OpenAI API (default: [llm] model)")


def report_id(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("report_id", metavar="REPORT_ID", help=f"{what} (report_...; `simreportd status` lists them)")


def strict(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true", help="exit 1 when the report completes degraded "
                   "(a section does not meet the [agent] rules)")


if __name__ == "__main__":
    sys.exit(main())
