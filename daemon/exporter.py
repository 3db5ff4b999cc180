"""Write report folders to `[reports] output_dir` as the report view changes."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import anyio

from simreportd.errors import NotFound
from simreportd.projections import report_queries
from simreportd.projections.chart import activity_chart
from simreportd.projections.derived import set_aside
from simreportd.projections.export import load_report, render
from simreportd.projections.sqlite import ViewsMissing, in_thread, reading
from simreportd.projections.standing import mirofish_status

log = logging.getLogger("simreportd.daemon.exporter")

# A report's view changes at every step of its agent (about 30 exports a report), and each export renders
# the whole folder: a third of a fast report's time at 100k actions. Folders are written at most this often
# instead; a dashboard polling progress.json every few seconds sees no difference.
EXPORT_EVERY_S = 0.5
FLUSH_TIMEOUT_S = 10.0  # how long a stopping daemon spends writing the folders still due
ALWAYS_WRITTEN = ("meta.json", "outline.json", "progress.json", "agent_log.jsonl", "full_report.md", "activity.svg")


class Exporter:
    """Renders a report from the read models and writes only the files whose bytes changed."""

    def __init__(self, views_path: Path, output_dir: Path, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.views_path, self.output_dir, self.limiter = views_path, output_dir, limiter
        self._locks: dict[Path, anyio.Lock] = {}
        self._due: set[str] = set()
        self._woken = anyio.Event()

    def changed(self, report_ids: Iterable[str]) -> None:
        """These reports' views changed: `run` writes their folders."""
        self._due.update(report_ids)
        self._woken.set()

    async def run(self) -> None:
        """Write the folders of changed reports, at most every EXPORT_EVERY_S, until cancelled (then `flush`
        writes those still due). First the folders a killed daemon left behind their views."""
        await self._mark_stale()
        while True:
            await self._woken.wait()
            self._woken = anyio.Event()
            await self._export_due()
            await anyio.sleep(EXPORT_EVERY_S)

    async def flush(self) -> None:
        """Write the folders still due now, even while being cancelled (a stopping daemon), for at most
        FLUSH_TIMEOUT_S."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(FLUSH_TIMEOUT_S):
            await self._export_due()

    async def _export_due(self) -> None:
        """Write each due folder; a report stays due until its write ends, so a write cancelled by a stopping
        daemon is still done by `flush` (a change during the write makes it due again)."""
        for report_id in sorted(self._due):
            self._due.discard(report_id)
            try:
                await self.export(report_id)
            except anyio.get_cancelled_exc_class():
                self._due.add(report_id)
                raise
            except NotFound:
                pass  # a stream without a ReportRequested has nothing to export
            except Exception:
                log.exception("writing the folder of report %s failed; it is written again at its next change",
                              report_id)

    async def _mark_stale(self) -> None:
        try:
            self.changed(await in_thread(self._stale, limiter=self.limiter))
        except ViewsMissing as exc:  # deleted under the daemon: a folder behind is written at its next change
            log.warning("%s; report folders behind them are written at their next change", exc)
        except Exception:
            log.exception("finding the report folders behind their views failed; each is written at its next change")

    def _stale(self) -> list[str]:
        """Reports whose folder's progress.json is not their view's (a daemon killed between folding a report's
        events and writing its folder, or a folder deleted by hand), and deleted reports that still have one."""
        with reading(self.views_path) as conn:
            rows = conn.execute("SELECT report_id, status, updated_at, deleted FROM reports").fetchall()

        def behind(report_id: str, status: str, updated_at: str, deleted: int) -> bool:
            folder = self.output_dir / report_id
            if deleted:
                return folder.exists()
            return _progress_of(folder) != (mirofish_status(status), updated_at) or not _whole(folder)

        return [row[0] for row in rows if behind(*row)]

    async def export(self, report_id: str, folder: Path | None = None) -> Path:
        """Write the report's folder (default: output_dir/<report_id>) and return it."""
        target = folder or self.output_dir / report_id
        async with self._locks.setdefault(target, anyio.Lock()):  # one writer per folder at a time
            await in_thread(self._export, report_id, target, limiter=self.limiter)
        return target

    def _export(self, report_id: str, target: Path) -> None:
        with reading(self.views_path) as conn:
            report = load_report(conn, report_id)
            if report is None and report_queries.is_deleted(conn, report_id):
                _remove_folder(target)
                return
            if report is None:
                raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
            chart = activity_chart(conn, report["simulation_id"], report["generation"])
        target.mkdir(parents=True, exist_ok=True)
        for name, data in render(report, chart).items():
            write_if_changed(target / name, data)


def _remove_folder(folder: Path) -> None:
    """Remove a deleted report's folder: its files are derived, its events stay in the log."""
    if (folder / "meta.json").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        log.info("removed the folder of deleted report %s", folder.name)


def write_if_changed(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data` unless it already holds exactly that."""
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    except OSError as exc:  # a folder, a FIFO or an unreadable file in its place: kept aside, written anew
        set_aside(path, str(exc), "the report file")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _whole(folder: Path) -> bool:
    """Whether every file a report folder always holds is there and can be read (a section's file is checked
    when the report changes, or by `simreportd rebuild`)."""
    for name in ALWAYS_WRITTEN:
        try:
            with (folder / name).open("rb"):
                pass
        except OSError:
            return False
    return True


def _progress_of(folder: Path) -> tuple[str, str] | None:
    """(status, updated_at) of a written folder's progress.json; None if it has none that reads."""
    try:
        progress = json.loads((folder / "progress.json").read_bytes())
        return progress["status"], progress["updated_at"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
