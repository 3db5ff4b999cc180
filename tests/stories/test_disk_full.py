"""A store on a real small file system that fills up during a report: the report waits, `/healthz` says the disk
is full, and once space is freed the report completes and `/healthz` is ok again, without a restart.

The report's model is held while the disk is filled (`FakeLLM(held=True)`), so the report is under way and cannot
finish before the disk is full, however fast the machine: its next append is the first to find no room.

The file system is an 8 MiB tmpfs, mounted for the test (root, or a user allowed to mount, is needed: the test
is skipped otherwise, and tests/stories/test_store_guard.py covers the same path with SQLite's `max_page_count`)."""

from __future__ import annotations

import asyncio
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from simreportd.events.streams import report_stream

from ..conftest import TIMEOUT, make_config
from ..daemon.test_server import Running, http
from ..fake_llm import FakeLLM

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs at tmp_path/disk, unmounted after the test."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip()}); needs root or CAP_SYS_ADMIN")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def fill(disk: Path) -> Path:
    """A file taking every free byte of `disk`: written until the file system says it has no space left."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    out.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return filler


async def report_events(running: Running, report_id: str) -> list[str]:
    return [e.type for e in await running.daemon.store.read_stream(report_stream(report_id))]


async def test_a_report_stuck_on_a_full_file_system_completes_once_space_is_freed(
        tmp_path: Path, small_sim: Path, small_disk: Path) -> None:
    with FakeLLM(held=True) as llm:
        config = make_config(tmp_path, reports={"auto": False}, server={"port": 0},
                             llm={"provider": "openai", "base_url": llm.base_url, "model": "scripted"})
        config = config.with_paths(store=small_disk / "events.sqlite3", roots=[tmp_path / "sims"],
                                   output_dir=tmp_path / "reports")
        async with Running(config, [small_sim]) as r:
            await r.daemon.watcher.check(small_sim)
            await r.daemon.store._on_writer(r.daemon.store._truncate_wal)  # every append must grow the WAL
            report_id = await r.daemon.reports.request(small_sim.name)
            with anyio.fail_after(TIMEOUT):  # during the report: it has begun, and waits for its model's answer
                while not llm.requests:
                    await anyio.sleep(0.01)
            filler = fill(small_disk)
            llm.released.set()  # the answer comes: appending it finds the disk full
            with anyio.fail_after(TIMEOUT):
                while r.daemon.store.problem is None:
                    await anyio.sleep(0.05)
            status, health = await asyncio.to_thread(http, f"http://{r.base}/healthz")
            assert "PlanningStarted" in (stuck := await report_events(r, report_id))
            assert "ReportCompleted" not in stuck
            filler.unlink()  # space freed: nothing asks for the report again
            with anyio.fail_after(TIMEOUT):
                while "ReportCompleted" not in await report_events(r, report_id):
                    await anyio.sleep(0.05)
                while (healed := await asyncio.to_thread(http, f"http://{r.base}/healthz"))[1]["status"] != "ok":
                    await anyio.sleep(0.1)
            assert "ReportFailed" not in await report_events(r, report_id)
    assert "degraded" in str(health) and "full" in str(health) and healed[0] == 200, (status, health)
