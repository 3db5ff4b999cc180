"""The store is watched: a store deleted or replaced while in use stops appends and the daemon; a read-only
store at start is one line and exit 2; work stuck on a full disk goes on by itself once there is room."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from simreportd.daemon.cli.local import running
from simreportd.daemon.service import Daemon
from simreportd.errors import StoreReplaced
from simreportd.events import SQLiteEventStore
from simreportd.events.models import PlanningStarted
from simreportd.events.streams import report_stream

from ..conftest import PYTHON, TIMEOUT, make_config, write_config
from ..processes import NotifySocket, await_until, cli, count

pytestmark = pytest.mark.anyio


async def test_an_append_to_a_deleted_store_fails_with_store_replaced_and_writes_nothing(store_path: Path) -> None:
    async with SQLiteEventStore(store_path) as store:
        await store.append("report-a", [PlanningStarted(report_id="a")])
        store_path.unlink()
        for _ in range(2):  # and every append after it
            with pytest.raises(StoreReplaced, match="was deleted"):
                await store.append("report-a", [PlanningStarted(report_id="a")])
        assert store.problem is not None and "was deleted" in store.problem
    assert not store_path.exists()  # nothing made a new file in its place


async def test_a_store_replaced_by_another_file_stops_appends(store_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    async with SQLiteEventStore(other) as second:
        await second.append("report-b", [PlanningStarted(report_id="b")])
    async with SQLiteEventStore(store_path) as store:
        await store.append("report-a", [PlanningStarted(report_id="a")])
        os.replace(other, store_path)
        with pytest.raises(StoreReplaced, match="was replaced"):
            await store.append("report-a", [PlanningStarted(report_id="a")])
    assert count(store_path, "SELECT count(*) FROM events") == 1  # the other file got nothing of ours


def test_the_daemon_exits_1_with_one_line_when_its_store_is_deleted_while_it_runs(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
    (tmp_path / "state" / "events.sqlite3").unlink()
    assert daemon.wait(timeout=TIMEOUT) == 1  # idle: found by the timer, not by an append
    log = daemon.log_path.read_text()  # type: ignore[attr-defined]
    assert "events.sqlite3 was deleted while in use" in log and "Traceback" not in log, log


def test_a_read_only_store_at_start_exits_2_with_one_line_naming_it(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("needs `unshare -rm` (user and mount namespaces) to mount the store's folder read-only")
    config = write_config(tmp_path)
    made = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "status"], capture_output=True)
    assert made.returncode == 2  # no store yet: make one
    assert subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "rebuild"], capture_output=True,
                          timeout=TIMEOUT).returncode == 0
    state = tmp_path / "state"
    for command in ("run", "status"):
        script = (f"mount --bind {state} {state} && mount -o remount,ro,bind {state} && "
                  f"exec {PYTHON} -m simreportd -c {config} {command}")
        result = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert result.returncode == 2, (command, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "is read-only" in lines[0] and str(state) in lines[0], result.stderr


async def test_a_report_stuck_on_a_full_disk_completes_by_itself_once_there_is_room(
        tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": False})  # the daemon's scheduler follows the log, as `run`'s
    async with Daemon(config, folders=[small_sim]) as daemon, running(daemon, follow=True):
        await daemon.watcher.check(small_sim)
        store = daemon.store
        assert isinstance(store, SQLiteEventStore)
        writer = store._writer  # the file may not grow past what it has: SQLITE_FULL
        assert writer is not None
        report_id = await daemon.reports.request(small_sim.name)
        [(pages,)] = await store._on_writer(lambda: writer.execute("PRAGMA page_count").fetchall())
        await store._on_writer(writer.execute, f"PRAGMA max_page_count = {pages}")
        await await_until(lambda: daemon.store.problem is not None, "the disk to be full")
        assert "full" in daemon.store.problem
        events = await daemon.store.read_stream(report_stream(report_id))
        assert "ReportCompleted" not in [e.type for e in events]  # stuck
        await store._on_writer(writer.execute, "PRAGMA max_page_count = 1073741823")  # space freed
        with anyio.fail_after(TIMEOUT):  # by itself: nothing asks for it again (`reports.wait` would restart it)
            while "ReportCompleted" not in [e.type for e in events]:
                await anyio.sleep(0.05)
                events = await daemon.store.read_stream(report_stream(report_id))
        assert "ReportFailed" not in [e.type for e in events]
        assert daemon.store.problem is None
