"""Write report folders to `[reports] output_dir` as the report view changes."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from simreportd.errors import NotFound
from simreportd.projections.export import load_report, render
from simreportd.projections.runner import in_thread, reading


class Exporter:
    """Renders a report from the read models and writes only the files whose bytes changed."""

    def __init__(self, views_path: Path, output_dir: Path, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.views_path, self.output_dir, self.limiter = views_path, output_dir, limiter
        self._locks: dict[Path, anyio.Lock] = {}

    async def export(self, report_id: str, folder: Path | None = None) -> Path:
        """Write the report's folder (default: output_dir/<report_id>) and return it."""
        target = folder or self.output_dir / report_id
        async with self._locks.setdefault(target, anyio.Lock()):  # one writer per folder at a time
            await in_thread(self._export, report_id, target, limiter=self.limiter)
        return target

    def _export(self, report_id: str, target: Path) -> None:
        with reading(self.views_path) as conn:
            report = load_report(conn, report_id)
        if report is None:
            raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
        target.mkdir(parents=True, exist_ok=True)
        for name, data in render(report).items():
            write_if_changed(target / name, data)


def write_if_changed(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data` unless it already holds exactly that."""
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
