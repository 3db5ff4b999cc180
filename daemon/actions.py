"""What the writing commands do to a running Daemon, wherever they were asked for.

The CLI calls these on a Daemon of its own when no daemon holds the store; the server calls
the very same functions when a CLI command hands its work over (DESIGN.md section 9), so
both paths behave alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from simreportd.events.errors import UsageError
from simreportd.projections.runner import reading

from .folder import MARKERS, is_simulation_folder
from .replay import fork_report

if TYPE_CHECKING:
    from .service import Daemon


@dataclass(frozen=True)
class Rebuilt:
    """Digests of every read model before and after a rebuild, and the position reached."""

    before: dict[str, str]
    after: dict[str, str]
    position: int


async def request_report(daemon: Daemon, folder: Path) -> str:
    """Ingest one simulation folder (inside [watch] roots or not) and ask for its report; return its id."""
    return await daemon.reports.request(await ingest_folder(daemon, folder), trigger="cli")


async def ingest_folder(daemon: Daemon, folder: Path) -> str:
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
    return folder.name


async def resume_report(daemon: Daemon, report_id: str) -> str:
    await daemon.reports.resume(report_id)
    return report_id


async def fork(daemon: Daemon, report_id: str, at: int) -> str:
    """A new report sharing `report_id`'s history up to `at`, written by this daemon's provider."""
    provider = daemon.provider.name
    model = daemon.config.llm.model if provider == "openai" else "offline-writer"
    return await fork_report(daemon.store, report_id, at, provider, model)


def check_fork_writer(daemon: Daemon, provider: str | None, model: str | None) -> None:
    """A running daemon forks with its own provider and model; another one needs it stopped."""
    ours = daemon.provider.name
    if (provider and provider != ours) or (model and ours == "openai" and model != daemon.config.llm.model):
        raise UsageError(f"the running daemon writes with provider {ours!r}"
                         + (f", model {daemon.config.llm.model!r}" if ours == "openai" else "")
                         + "; to fork with another provider or model, stop the daemon first (the fork then "
                           "runs here), or change [llm] and reload it")


async def rebuild(daemon: Daemon) -> Rebuilt:
    """Drop the read models, fold the whole log again, export every report; digests before and after."""
    before = await daemon.views.digest()
    position = await daemon.views.rebuild()
    after = await daemon.views.digest()
    for report_id in await daemon.views.in_thread(report_ids, daemon.views.path):
        await daemon.exporter.export(report_id)
    return Rebuilt(before, after, position)


def report_ids(views_path: Path) -> list[str]:
    with reading(views_path) as conn:
        return [row[0] for row in conn.execute("SELECT report_id FROM reports ORDER BY report_id")]
