"""Folding the read models again from the log, digests before and after: what a `rebuild` does, in the daemon
that holds the store (a handed-over command) or in the command's own process.

The command's own process opens only the store, the read models and the exporter: it loads neither the agent
nor the server, whose import cost as much CPU as folding 10k actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simreportd.events.positions import Position
from simreportd.projections import report_queries
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for
from simreportd.projections.sqlite import reading

from .config import Config
from .exporter import Exporter
from .lock import StoreLock


@dataclass(frozen=True)
class Rebuilt:
    """Digests of every read model before and after a rebuild, and the position reached."""

    before: dict[str, str]
    after: dict[str, str]
    position: Position
    position_before: Position  # where the read models were when `before` was taken

    @property
    def comparable(self) -> bool:
        """Both digests are of the same log: nothing was appended while the read models were rebuilt."""
        return self.position_before == self.position


async def rebuild_views(views: ProjectionRunner, exporter: Exporter) -> Rebuilt:
    """Drop the read models, fold the whole log again, export every report; digests before and after."""
    await views.catch_up()  # the digest before is of the whole log as it is now
    before, position_before = await views.digest_at()
    await views.rebuild()
    after, position = await views.digest_at()
    for report_id in await views.in_thread(report_ids, views.path):
        await exporter.export(report_id)
    return Rebuilt(before, after, position, position_before)


async def rebuild_here(config: Config) -> Rebuilt:
    """`rebuild_views` in this process, which holds the store's lock meanwhile (no daemon holds it)."""
    lock = StoreLock(config.store.path)
    lock.acquire("rebuild")
    try:
        views_path = views_path_for(config.store.path)
        async with config.store.open() as store, ProjectionRunner(store, views_path, projections()) as views:
            return await rebuild_views(views, Exporter(views_path, config.reports.output_dir, views.limiter))
    finally:
        lock.release()


def report_ids(views_path: Path) -> list[str]:
    with reading(views_path) as conn:
        return report_queries.report_ids(conn)
