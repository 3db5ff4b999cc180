"""One simulation id, the config's (docs/formats.md#simulation-ids): its events, its report's meta.json and the
API carry the `simulation_id` of simulation_config.json; the folder's name is an alias wherever an id is taken;
a store that knew the folder by its name, an id that is not plain, or one another folder goes by keep the name.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from simreportd.daemon.service import Daemon
from simreportd.events.streams import simulation_stream
from simreportd.simulator.simulate import simulate

from ..conftest import TIMEOUT, make_config
from ..in_process import acall
from .test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio


def run_named(folder: Path, simulation_id: str) -> Path:
    """A finished run whose config gives `simulation_id` (a MiroFish run copied or renamed keeps its config's)."""
    simulate(folder, agents=8, rounds=3, seed=5)
    set_config_id(folder, simulation_id)
    return folder


def set_config_id(folder: Path, simulation_id: str) -> None:
    path = folder / "simulation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "simulation_id": simulation_id}), encoding="utf-8")


async def streams_of(daemon: Daemon, *ids: str) -> dict[str, int]:
    """How many events each simulation's stream holds."""
    return {i: len(await daemon.store.read_stream(simulation_stream(i))) for i in ids}


async def test_a_run_is_recorded_reported_and_served_under_its_configs_id(tmp_path: Path) -> None:
    folder = run_named(tmp_path / "sims" / "copy_of_run", "sim_0a1b2c3d4e5f")
    async with Running(server_config(tmp_path), [folder]) as running:
        daemon = running.daemon
        counts = await streams_of(daemon, "sim_0a1b2c3d4e5f", "copy_of_run")
        assert counts["sim_0a1b2c3d4e5f"] > 0 and counts["copy_of_run"] == 0
        events = await daemon.store.read_stream(simulation_stream("sim_0a1b2c3d4e5f"))
        assert {r.event.simulation_id for r in events} == {"sim_0a1b2c3d4e5f"}  # an action's: its stream's
        report_id = await daemon.reports.request("copy_of_run")  # the folder's name is an alias
        state = await daemon.reports.wait(report_id)
        assert state.request is not None and state.request.simulation_id == "sim_0a1b2c3d4e5f"
        await daemon.views.wait_for(await daemon.store.last_position(), timeout=TIMEOUT)
        meta = json.loads((await daemon.exporter.export(report_id) / "meta.json").read_text())
        assert meta["simulation_id"] == "sim_0a1b2c3d4e5f"
        for given in ("copy_of_run", "sim_0a1b2c3d4e5f"):
            _, info, _ = await acall(running.base, f"/api/simulation/{given}")
            assert info["data"]["simulation_id"] == "sim_0a1b2c3d4e5f", given
            _, by_sim, _ = await acall(running.base, f"/api/report/by-simulation/{given}")
            assert by_sim["data"]["report_id"] == report_id and by_sim["data"]["simulation_id"] == "sim_0a1b2c3d4e5f"
        status, svg, _ = await acall(running.base, "/api/simulations/copy_of_run/activity.svg")
        assert status == 200, svg


async def test_a_store_that_knew_the_folder_by_name_keeps_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = run_named(tmp_path / "sims" / "sim_old", "sim_old")  # as MiroFish names it: no alias yet
    config = make_config(tmp_path, reports={"auto": False})
    async with Daemon(config, [folder]) as daemon:
        await daemon.watcher.rescan()
    set_config_id(folder, "sim_renamed")
    with caplog.at_level(logging.INFO, "simreportd.daemon.ingest.identity"):
        async with Daemon(config, [folder]) as daemon:
            await daemon.watcher.rescan()
            await daemon.watcher.rescan()
            assert daemon.watcher.simulation_id_of(folder) == "sim_old"
            assert (await streams_of(daemon, "sim_renamed"))["sim_renamed"] == 0
    said = [r.getMessage() for r in caplog.records if "keeps its name" in r.getMessage()]
    assert len(said) == 1 and "recorded the folder under its name" in said[0]


async def test_a_copy_whose_id_another_folder_goes_by_keeps_its_name(tmp_path: Path) -> None:
    first = run_named(tmp_path / "sims" / "a_run", "sim_shared")
    second = run_named(tmp_path / "sims" / "b_copy", "sim_shared")
    async with Daemon(make_config(tmp_path, reports={"auto": False}), [first, second]) as daemon:
        await daemon.watcher.rescan()
        assert daemon.watcher.simulation_id_of(first) == "sim_shared"
        assert daemon.watcher.simulation_id_of(second) == "b_copy"
        folders = {r.data["folder"] for r in await daemon.store.read_stream(simulation_stream("sim_shared"))
                   if "folder" in r.data}
        assert folders == {str(first)}
    async with Daemon(make_config(tmp_path, reports={"auto": False}), [second, first]) as daemon:
        await daemon.watcher.check(second)  # after a restart, the copy seen first still does not take the id
        assert daemon.watcher.simulation_id_of(second) == "b_copy"


async def test_a_config_id_that_is_not_plain_leaves_the_folders_name(tmp_path: Path) -> None:
    folder = run_named(tmp_path / "sims" / "sim_plain", "../../etc/passwd")
    async with Daemon(make_config(tmp_path, reports={"auto": False}), [folder]) as daemon:
        await daemon.watcher.rescan()
        assert daemon.watcher.simulation_id_of(folder) == "sim_plain"
        assert (await streams_of(daemon, "sim_plain"))["sim_plain"] > 0


async def test_the_websocket_takes_the_folders_name_for_the_id(tmp_path: Path) -> None:
    folder = run_named(tmp_path / "sims" / "copy_of_run", "sim_0a1b2c3d4e5f")
    async with Running(server_config(tmp_path), [folder]) as running:
        async with connect(f"ws://{running.base}/ws") as ws:
            await ws.send(json.dumps({"op": "generate_report", "simulation_id": "copy_of_run"}))
            status = await frames_until(ws, "report_status")
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": 0,
                                      "filter": {"simulation_id": "copy_of_run"}}))
            frames = await frames_until(ws, "caught_up", limit=5000)
    assert status[-1]["report_id"].startswith("report_")  # asked by the folder's name, not refused
    streams = {f["stream"] for f in frames if f["type"] == "event"}
    assert "simulation-sim_0a1b2c3d4e5f" in streams and "simulation-copy_of_run" not in streams


async def test_a_copy_seen_before_its_original_leaves_the_id_to_the_original(tmp_path: Path) -> None:
    original = run_named(tmp_path / "sims" / "sim_orig", "sim_orig")
    copy = run_named(tmp_path / "sims" / "a_copy", "sim_orig")  # sorted first: checked before the original
    async with Daemon(make_config(tmp_path, reports={"auto": False}), []) as daemon:
        await daemon.watcher.rescan()
        assert [daemon.watcher.simulation_id_of(f) for f in (copy, original)] == ["a_copy", "sim_orig"]
        first = await daemon.store.read_stream(simulation_stream("sim_orig"), limit=1)
        assert first[0].data["folder"] == str(original) and (await streams_of(daemon, "a_copy"))["a_copy"] > 0
