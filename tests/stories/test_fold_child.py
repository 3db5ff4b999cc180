"""The read models folded in a child process (`[service] fold = "child"`): the same rows as folding in the
daemon's own process, and no fold lost whichever of the two processes is killed or rebuilds."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import anyio
import pytest

from simreportd.daemon.service import Daemon
from simreportd.events import SQLiteEventStore
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for
from simreportd.simulator.simulate import simulate

from ..conftest import TIMEOUT, make_config, write_config
from ..processes import cli, kill9, wait_until

pytestmark = pytest.mark.slow


def fold_children(pid: int) -> list[int]:
    """The fold processes `pid` started (Linux: /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children if b"fold_child" in _cmdline(int(c))]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def running(pid: int) -> bool:
    """Whether `pid` is alive (a zombie waiting for a parent to reap it has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def digests_after_rebuild(daemon: Daemon) -> tuple[dict[str, str], dict[str, str]]:
    before = await daemon.views.digest()
    await daemon.views.rebuild()
    return before, await daemon.views.digest()


@pytest.mark.anyio
async def test_the_child_folds_what_the_daemon_ingests_into_the_rows_a_rebuild_gives(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_a", agents=12, rounds=6, seed=3)
    config = make_config(tmp_path, reports={"auto": False}, service={"fold": "child"})
    async with Daemon(config) as daemon, anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.run)
        await anyio.to_thread.run_sync(wait_until, lambda: fold_children(os.getpid()), "the fold child")
        await daemon.watcher.rescan()
        head = await daemon.store.last_position()
        await daemon.views.wait_for(head, TIMEOUT)
        assert head > 50 and len(fold_children(os.getpid())) == 1
        before, after = await digests_after_rebuild(daemon)  # the child folds beside this rebuild
        tasks.cancel_scope.cancel()
    assert before == after
    assert not fold_children(os.getpid())  # stopped with its owner


@pytest.mark.anyio
async def test_a_killed_fold_child_leaves_the_daemon_folding_in_its_own_process(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(tmp_path, reports={"auto": False}, service={"fold": "child"})
    async with Daemon(config) as daemon, anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.run)
        await anyio.to_thread.run_sync(wait_until, lambda: fold_children(os.getpid()), "the fold child")
        [child] = fold_children(os.getpid())
        with caplog.at_level(logging.WARNING, "simreportd"):
            os.kill(child, signal.SIGKILL)
            await anyio.to_thread.run_sync(wait_until, lambda: "folding in this one" in caplog.text, "the fallback")
        simulate(tmp_path / "sims" / "sim_b", agents=8, rounds=4, seed=5)
        await daemon.watcher.rescan()
        head = await daemon.store.last_position()
        await daemon.views.wait_for(head, TIMEOUT)
        assert head > 50
        before, after = await digests_after_rebuild(daemon)
        tasks.cancel_scope.cancel()
    assert before == after
    assert "exit code -9" in caplog.text


def test_the_fold_child_ends_when_its_daemon_is_killed(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_c", agents=12, rounds=6, seed=3)
    daemon = cli("run", "-c", str(write_config(tmp_path, auto=False)))
    wait_until(lambda: fold_children(daemon.pid), "the fold child")
    [child] = fold_children(daemon.pid)
    kill9(daemon)
    wait_until(lambda: not running(child), "the fold child to end once its parent is gone")


@pytest.mark.anyio
async def test_a_folder_whose_read_models_another_process_rebuilt_folds_again_from_the_start(
        tmp_path: Path) -> None:
    """Two folders of one read-model file, as the daemon and its child are: one rebuilds (drops every
    row and the checkpoint) while the other has folded further; the other must fold again from 0, not
    go on from where it was and leave the rebuilt models without what it had folded before."""
    from simreportd.daemon.ingest.ingestor import SimulationIngestor

    store_path = tmp_path / "events.sqlite3"
    for name, seed in (("sim_d", 3), ("sim_d2", 4)):
        simulate(tmp_path / "sims" / name, agents=12, rounds=6, seed=seed)
    async with SQLiteEventStore(store_path) as store:
        await SimulationIngestor(store, tmp_path / "sims" / "sim_d").check()
        async with ProjectionRunner(store, views_path_for(store_path), projections()) as folder, \
                ProjectionRunner(store, views_path_for(store_path), projections()) as rebuilder:
            await folder.catch_up()
            await rebuilder.in_thread(rebuilder._reset)  # what `rebuild` in another process does first
            await SimulationIngestor(store, tmp_path / "sims" / "sim_d2").check()
            assert await folder.catch_up() == await store.last_position()
            folded = await folder.digest()
            await rebuilder.rebuild()
            assert await rebuilder.digest() == folded


@pytest.mark.anyio
async def test_the_inline_fold_gives_the_rows_the_child_gives(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_e", agents=12, rounds=6, seed=3)
    digests = []
    for fold in ("child", "inline"):
        config = make_config(tmp_path / fold, reports={"auto": False}, service={"fold": fold},
                             watch={"roots": [tmp_path / "sims"]})
        async with Daemon(config) as daemon, anyio.create_task_group() as tasks:
            tasks.start_soon(daemon.run)
            await daemon.watcher.rescan()
            await daemon.views.wait_for(await daemon.store.last_position(), TIMEOUT)
            digests.append(await daemon.views.digest())
            assert bool(fold_children(os.getpid())) == (fold == "child")
            tasks.cancel_scope.cancel()
    assert digests[0] == digests[1]


@pytest.mark.anyio
async def test_a_rebuild_while_the_log_grows_says_its_digests_are_not_comparable(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from simreportd.daemon import actions
    from simreportd.events.models import PlanningStarted

    simulate(tmp_path / "sims" / "sim_a", agents=12, rounds=6, seed=3)
    config = make_config(tmp_path, reports={"auto": False}, service={"fold": "child"})
    async with Daemon(config) as daemon, anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.run)
        await daemon.watcher.rescan()
        idle = await actions.rebuild(daemon)
        assert idle.comparable and idle.before == idle.after
        rebuild = daemon.views.rebuild

        async def rebuild_while_a_report_starts() -> int:
            await daemon.store.append("report-x", [PlanningStarted(report_id="x")])  # the log grows meanwhile
            return await rebuild()

        monkeypatch.setattr(daemon.views, "rebuild", rebuild_while_a_report_starts)
        grown = await actions.rebuild(daemon)
        assert not grown.comparable and grown.position == grown.position_before + 1
        tasks.cancel_scope.cancel()


def test_a_fold_child_whose_daemon_stops_before_sending_its_spec_exits_0_without_a_traceback() -> None:
    """SIGTERM can reach the daemon between starting the child and writing its spec: the child sees stdin
    end before any line, which is a stop, not an error (a fresh clone's CI once caught the traceback)."""
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-m", "simreportd.daemon.fold_child"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=TIMEOUT)
    assert (child.returncode, child.stderr) == (0, b"")


@pytest.mark.anyio
async def test_a_command_that_ingests_then_writes_its_report_folds_both_in_one_fold_child(tmp_path: Path) -> None:
    """`simreportd report DIR --wait` with no daemon running: the fold child that folds the ingest folds the report
    too. Stopping it after the ingest and starting another made the second refold from the checkpoint the first
    left (at 1M actions, 400k events behind)."""
    from simreportd.daemon.cli.choose import executor_for

    folder = tmp_path / "sims" / "sim_once"
    simulate(folder, agents=12, rounds=6, seed=3)
    config = make_config(tmp_path, reports={"auto": False}, service={"fold": "child"})
    async with executor_for(config, "report", folders=[folder]) as work:
        await work.ingest(folder, until_complete=True)
        await anyio.to_thread.run_sync(wait_until, lambda: fold_children(os.getpid()), "the fold child")
        first = fold_children(os.getpid())
        report_id, standing = await work.request_report(folder, False, "offline", None, True)
        state = await work.follow(report_id)
        after = fold_children(os.getpid())
    assert standing == "new" and state.verdict is not None  # completed, degraded or not
    assert after == first and len(first) == 1
    assert not fold_children(os.getpid())  # stopped with the command
