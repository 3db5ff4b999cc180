"""What the writing commands do to a running daemon (a `Host`), wherever they were asked for.

The CLI calls these on a Daemon of its own when no daemon holds the store; the server calls
the very same functions when a CLI command hands its work over (docs/architecture.md#one-writer-per-store), so
both paths behave alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simreportd.daemon.ingest.folder import MARKERS, is_simulation_folder
from simreportd.errors import UsageError
from simreportd.events.positions import Position

from .config import LLMConfig
from .host import Host
from .rebuild import Rebuilt, rebuild_views
from .report_replay import fork_report
from .writers import check_writer, choose_writer, missing_configuration


async def request_report(daemon: Host, folder: Path, force: bool = False, provider: str | None = None,
                         model: str | None = None, now: bool = True) -> tuple[str, str]:
    """Ingest one simulation folder (inside [watch] roots or not) and return its run's report, as
    `ReportScheduler.ensure` does: the one it has (being written or written) unless `force`, else a new one, by the
    writer asked for (else `[llm]`'s; checked reachable when the report is to be written `now`)."""
    writer = await report_writer(daemon.config.llm, provider, model, folder.name, now=now)
    return await daemon.reports.ensure(await ingest_folder(daemon, folder), force=force, trigger="cli", writer=writer)


async def report_writer(llm: LLMConfig, provider: str | None, model: str | None, simulation_id: str,
                        now: bool = True) -> tuple[str, str]:
    """The writer a report of `simulation_id` is asked for with (the flags, else `[llm]`'s), checked before
    any work: one this configuration lacks is refused, and one it cannot reach, if the report is to be
    written `now`, in one line naming its URL and model, not after a report's retries."""
    writer = choose_writer(llm, provider, model)
    if now or (writer[0] == "openai" and missing_configuration(llm, "openai")):
        await check_writer(llm, writer, f"write the report of {simulation_id}", own=False,
                           fallback="pass --provider offline to write it without a language model")
    return writer


async def ingest_folder(daemon: Host, folder: Path) -> str:
    """Ingest what one simulation folder holds now, and watch it from then on; return the simulation id."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder; pass the simulation folder (the one holding "
                         "simulation_config.json or twitter/actions.jsonl)")
    if not is_simulation_folder(folder):
        raise UsageError(f"{folder} holds no simulation: none of {', '.join(MARKERS)} is in it. Pass the folder a "
                         "simulator writes its run into (`simreportd simulate DIR` writes an example)")
    if folder not in daemon.watcher.folders:
        daemon.watcher.folders.append(folder)
    await daemon.watcher.check(folder)
    return daemon.watcher.simulation_id_of(folder)


async def resume_report(daemon: Host, report_id: str, provider: str | None = None, model: str | None = None,
                        overrides: dict[str, Any] | None = None) -> str:
    """Resume a failed report (see ReportScheduler.resume); return the line saying which writer continues."""
    return await daemon.reports.resume(report_id, provider, model, overrides)


def resume_overrides(max_tokens: int | None, timeout_s: float | None) -> dict[str, Any]:
    """The LLM settings a resume changes (recorded in its ReportResumed): only those given."""
    given = {"max_tokens": max_tokens, "timeout_s": timeout_s}
    return {k: v for k, v in given.items() if v is not None}


async def fork(daemon: Host, report_id: str, at: int, provider: str | None = None,
               model: str | None = None) -> str:
    """A new report sharing `report_id`'s history up to `at`, continued by the writer asked for (else `[llm]`'s)."""
    writer = choose_writer(daemon.config.llm, provider, model)
    await check_writer(daemon.config.llm, writer, f"fork report {report_id}", own=False, fallback="")
    return await fork_report(daemon.store, report_id, Position(at), *writer)


async def rebuild(daemon: Host) -> Rebuilt:
    """Drop the read models, fold the whole log again, export every report; digests before and after."""
    return await rebuild_views(daemon.views, daemon.exporter)
