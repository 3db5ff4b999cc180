"""Derived files heal themselves: a read model, snapshot or report file that is missing, corrupt or unreadable is
moved aside, made again from the log, and never stops `run`, `rebuild` or `status`."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from simreportd.daemon.exporter import Exporter, write_if_changed
from simreportd.daemon.healing_snapshots import HealingSnapshots
from simreportd.daemon.ingest.ingest_state import IngestState
from simreportd.events import SQLiteEventStore
from simreportd.events.models import AgentActed, ReportRequested, SimulationDiscovered
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner
from simreportd.projections.sqlite import reading

from ..conftest import PYTHON, TIMEOUT, write_config
from ..processes import NotifySocket, cli, serving, wait_until

pytestmark = pytest.mark.anyio
GARBAGE = b"this is not an SQLite file, a bad day wrote it " * 100


@pytest.fixture
async def store(store_path: Path):
    async with SQLiteEventStore(store_path) as store:
        await store.append("simulation-p", [SimulationDiscovered(simulation_id="p", generation=1, folder="/p"), *(
            AgentActed(simulation_id="p", generation=1, platform="twitter", round=1, agent_id=n,
                       action_type="CREATE_POST", action_args={"content": "hi", "post_id": n}) for n in range(50))])
        yield store


def set_aside_copies(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt-*"))


async def test_a_read_model_that_is_not_a_database_is_moved_aside_and_rebuilt_to_the_same_digest(
        store: SQLiteEventStore, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    async with ProjectionRunner(store, views, projections()) as runner:
        await runner.catch_up()
        digest = await runner.digest()
    views.write_bytes(GARBAGE)
    async with ProjectionRunner(store, views, projections()) as runner:
        assert runner.problem is not None and "moved aside" in runner.problem  # degraded until caught up
        assert await runner.catch_up() == 51
        assert await runner.digest() == digest
    [aside] = set_aside_copies(views)
    assert aside.read_bytes() == GARBAGE  # kept for inspection


async def test_a_read_model_deleted_while_folding_is_noticed_rebuilt_and_readable_again(
        store: SQLiteEventStore, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    async with ProjectionRunner(store, views, projections()) as runner:
        await runner.catch_up()
        views.unlink()
        assert runner.problem is not None and "deleted or replaced" in runner.problem  # at once, for /healthz
        await runner.check_file()
        assert runner.problem is not None and "rebuilding" in runner.problem
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(runner.run)
            await runner.wait_for(51, timeout=TIMEOUT)
            with anyio.fail_after(TIMEOUT):
                while runner.problem is not None:
                    await anyio.sleep(0.02)
            tasks.cancel_scope.cancel()
    assert posts(views) == 50


async def test_a_read_model_overwritten_in_place_while_idle_is_found_by_the_timer(
        store: SQLiteEventStore, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    async with ProjectionRunner(store, views, projections()) as runner, anyio.create_task_group() as tasks:
        tasks.start_soon(runner.run)
        await runner.wait_for(51, timeout=TIMEOUT)
        with views.open("r+b") as file:  # same inode, garbage in its header
            file.write(GARBAGE[:100])
        with anyio.fail_after(TIMEOUT):
            while not set_aside_copies(views) or posts(views) != 50:
                await anyio.sleep(0.02)
        tasks.cancel_scope.cancel()


def posts(views: Path) -> int:
    """The posts the read models hold, or -1 while they cannot be read."""
    try:
        with reading(views) as conn:
            return int(conn.execute("SELECT count(*) FROM sim_posts").fetchone()[0])
    except sqlite3.Error:
        return -1


def test_a_snapshot_file_that_is_not_a_database_is_set_aside_and_written_again(tmp_path: Path) -> None:
    path = tmp_path / "events-snapshots.sqlite3"
    path.write_bytes(GARBAGE)
    snapshots = HealingSnapshots(path)
    assert snapshots.load("p") is None  # a full fold of the stream, not a failed ingest
    assert len(set_aside_copies(path)) == 1
    snapshots.save("p", 7, "e7", IngestState("p"))
    found = snapshots.load("p")
    assert found is not None and found[:2] == (7, "e7")


def test_a_report_file_with_a_folder_in_its_place_is_set_aside_and_written(tmp_path: Path) -> None:
    target = tmp_path / "progress.json"
    target.mkdir()
    write_if_changed(target, b"{}")
    assert target.read_bytes() == b"{}" and set_aside_copies(target)[0].is_dir()


def healthz(url: str) -> dict:
    try:
        with urllib.request.urlopen(url + "healthz", timeout=TIMEOUT) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return {}


def report_answer(url: str, report_id: str) -> int:
    """The HTTP status of the report's API answer (200 only if it names the report)."""
    try:
        with urllib.request.urlopen(url + f"api/reports/{report_id}", timeout=TIMEOUT) as response:
            return 200 if json.load(response)["report_id"] == report_id else 0
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return 0


def simreportd(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2)


def test_corrupt_derived_files_never_stop_status_rebuild_or_run_and_a_deleted_one_heals_while_running(
        tmp_path: Path, small_sim: Path) -> None:
    config = write_config(tmp_path, auto=False)
    made = simreportd(config, "report", str(small_sim), "--wait")
    assert made.returncode == 0, made.stderr
    report_id = made.stdout.split()[-1]
    state, folder = tmp_path / "state", tmp_path / "reports" / report_id
    views, snapshots = state / "events-views.sqlite3", state / "events-snapshots.sqlite3"
    expected = {p.name: p.read_bytes() for p in folder.iterdir()}
    views.write_bytes(GARBAGE)
    snapshots.write_bytes(GARBAGE)
    status = simreportd(config, "status")
    assert status.returncode == 0 and "cannot be read" in status.stdout, status.stdout + status.stderr
    rebuilt = simreportd(config, "rebuild")
    assert rebuilt.returncode == 0 and "CHANGED" not in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr
    assert len(set_aside_copies(views)) == 1
    views.write_bytes(GARBAGE)
    (folder / "full_report.md").unlink()
    (folder / "meta.json").unlink()
    (folder / "meta.json").mkdir()
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        [ready] = [m for m in systemd.wait_for("READY=1") if "READY=1" in m]
    url = serving(ready)
    wait_until(lambda: healthz(url).get("status") == "ok", "the daemon to be healthy after rebuilding")
    wait_until(lambda: (folder / "meta.json").is_file() and (folder / "full_report.md").is_file(),
               "the report folder to be whole again")
    assert {name: (folder / name).read_bytes() for name in expected} == expected
    assert [p.name for p in folder.iterdir() if p.name not in expected] == [set_aside_copies(folder / "meta.json")[0].name]
    before = set_aside_copies(views)
    views.unlink()  # while it runs
    wait_until(lambda: report_answer(url, report_id) == 200 or daemon.poll() is not None,
               "the API to answer from the rebuilt read models")
    assert daemon.poll() is None, daemon.log_path.read_text()  # type: ignore[attr-defined]
    wait_until(lambda: healthz(url).get("status") == "ok", "the daemon to be healthy again")
    kept = [p for p in set_aside_copies(views) if not p.name.endswith(("-wal", "-shm"))]
    assert kept == before  # of a deleted file, only its stale WAL is moved aside (else taken for the new file's)
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=TIMEOUT) == 0
    log = daemon.log_path.read_text()  # type: ignore[attr-defined]
    assert "Exception Group" not in log and "fold_child" not in log, log  # no task crashed, the child never ended


async def test_a_folder_whose_write_a_stopping_daemon_cancelled_is_still_written_by_the_flush(
        store: SQLiteEventStore, tmp_path: Path) -> None:
    """The exporter takes a report off its due list when it writes it; a write cancelled before it began (a
    SIGTERM at that moment) left the folder behind its view for good, as test_shutdown saw under load."""
    await store.append("report-r1", [ReportRequested(report_id="r1", simulation_id="p", generation=1)])
    views, output = tmp_path / "views.sqlite3", tmp_path / "reports"
    async with ProjectionRunner(store, views, projections()) as runner:
        await runner.catch_up()
    exporter = Exporter(views, output)
    exporter.changed(["r1"])
    with anyio.CancelScope() as scope:
        scope.cancel()  # the daemon stops as the exporter begins its round
        await exporter._export_due()
    assert not (output / "r1").exists()
    await exporter.flush()
    assert json.loads((output / "r1" / "progress.json").read_text(encoding="utf-8"))["status"]
