"""Poison in the log or a folder stops nothing (docs/architecture.md#untrusted-input): fold and folder isolation, rewrites."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.ingest.watcher import Watcher
from simreportd.daemon.service import Daemon, projections
from simreportd.errors import StoreUnusable
from simreportd.events import MemoryEventStore
from simreportd.events.models import AgentActed, SimulationDiscovered
from simreportd.projections import runner as runner_module
from simreportd.projections.failures import fold_failures
from simreportd.projections.runner import ProjectionRunner
from simreportd.projections.sqlite import reading
from simreportd.simulator.simulate import simulate

from ..conftest import make_config

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store():
    async with MemoryEventStore() as store:
        yield store


def acted(agent_id: int, round_no: int = 1) -> AgentActed:
    return AgentActed(simulation_id="p", generation=1, platform="twitter", round=round_no, agent_id=agent_id,
                      action_type="CREATE_POST", action_args={"content": "hi", "post_id": agent_id})


async def test_an_event_a_fold_cannot_store_is_skipped_marked_and_never_refolded(store: MemoryEventStore,
                                                                                   tmp_path: Path) -> None:
    # Written by an older daemon, before validation at the door: the log keeps it for ever.
    await store.append("simulation-p", [SimulationDiscovered(simulation_id="p", generation=1, folder="/p"),
                                        acted(1), acted(2**63), acted(3)])
    views = tmp_path / "views.sqlite3"
    for _start in (1, 2):  # the second start must neither loop nor mark it again
        async with ProjectionRunner(store, views, projections()) as runner:
            assert await runner.catch_up() == 4
    with reading(views) as conn:
        [failure] = fold_failures(conn)
        agents = [r[0] for r in conn.execute("SELECT DISTINCT agent_id FROM sim_activity ORDER BY 1")]
    assert (failure["projection"], failure["position"], failure["type"]) == ("simulation", 3, "AgentActed")
    assert "OverflowError" in failure["error"]
    assert agents == [1, 3]  # the events on either side are folded; only the poison's effect is skipped


async def test_pages_folded_in_one_transaction_skip_only_the_poison_and_match_page_by_page(
        store: MemoryEventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await store.append("simulation-p", [SimulationDiscovered(simulation_id="p", generation=1, folder="/p"),
                                        *(acted(n) for n in (1, 2, 3)), acted(2**63), *(acted(n) for n in (6, 7))])
    monkeypatch.setattr(runner_module, "PAGE", 2)  # the poison in the third page of a group of four
    digests = []
    for group in (4, 1):
        monkeypatch.setattr(runner_module, "GROUP_PAGES", group)
        views = tmp_path / f"views-{group}.sqlite3"
        async with ProjectionRunner(store, views, projections()) as runner:
            assert await runner.catch_up() == 7
            digests.append(await runner.digest())
        with reading(views) as conn:
            assert [f["position"] for f in fold_failures(conn)] == [5]
            agents = [r[0] for r in conn.execute("SELECT DISTINCT agent_id FROM sim_activity ORDER BY 1")]
        assert agents == [1, 2, 3, 6, 7]
    assert digests[0] == digests[1]


async def test_rebuild_reaches_the_same_rows_and_the_same_markers(store: MemoryEventStore, tmp_path: Path) -> None:
    await store.append("simulation-p", [SimulationDiscovered(simulation_id="p", generation=1, folder="/p"),
                                        acted(2**64), acted(5)])
    async with ProjectionRunner(store, tmp_path / "views.sqlite3", projections()) as runner:
        await runner.catch_up()
        first = await runner.digest()
        await runner.rebuild()
        assert await runner.digest() == first
    with reading(tmp_path / "views.sqlite3") as conn:
        assert [f["position"] for f in fold_failures(conn)] == [2]


class Exploding(SimulationIngestor):
    """A folder whose check fails in a way nobody foresaw."""

    async def check(self) -> None:
        raise KeyError("something nobody foresaw")


async def test_a_folder_that_fails_is_recorded_backed_off_and_does_not_stop_the_others(
        store: MemoryEventStore, tmp_path: Path) -> None:
    root = tmp_path / "sims"
    simulate(root / "a_bad", agents=4, rounds=2, seed=1)
    simulate(root / "b_good", agents=4, rounds=2, seed=2)
    watcher = Watcher(store, [root])
    watcher.ingestors[root / "a_bad"] = Exploding(store, root / "a_bad")
    await watcher.rescan()
    await watcher.rescan()  # within the backoff: the bad folder is not tried again
    failed = [r.data for r in await store.read_stream("simulation-a_bad")]
    good = [r.type for r in await store.read_stream("simulation-b_good")]
    assert [f["failures"] for f in failed] == [1] and "KeyError" in failed[0]["error"]
    assert failed[0]["retry_in_s"] > 0 and watcher.failing[root / "a_bad"][0] == 1
    assert "SimulationCompleted" in good


async def test_a_cancelled_watcher_stops_at_once_not_at_its_next_rescan(store: MemoryEventStore, tmp_path: Path) -> None:
    """watchfiles waits for changes in a worker thread; cancelling the watch used to wait for that thread's
    timeout (`rescan_seconds`): every `simreportd report` and every stop took that long."""
    root = tmp_path / "sims"
    simulate(root / "a", agents=4, rounds=2, seed=1)
    watcher = Watcher(store, [root], rescan_seconds=90)
    with anyio.fail_after(30):  # fails (after 90 s) if the stop waits for the rescan timeout
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watcher.run)
            while not (ingested := await store.read_stream("simulation-a")):
                await anyio.sleep(0.05)
            with (root / "a" / "twitter" / "actions.jsonl").open("a") as actions:  # seen only by the watch:
                actions.write(json.dumps({"round": 2, "agent_id": 1, "agent_name": "A", "action_type": "CREATE_POST",
                                          "action_args": {"content": "one more"}}) + "\n")  # the next rescan: in 90 s
            while len(await store.read_stream("simulation-a")) == len(ingested):
                await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # the change is ingested; the watch waits in its thread again
            tasks.cancel_scope.cancel()


def rewrite(path: Path, how: str, data: bytes) -> None:
    """Replace a file's content the three ways a restarted run was seen to do it."""
    if how == "truncate":
        with path.open("r+b") as f:
            f.truncate(0)
            f.write(data)
    elif how == "recreate":
        os.remove(path)
        path.write_bytes(data)
    else:  # "overwrite": no truncation, the new run is longer than the old one
        with path.open("r+b") as f:
            f.write(data)


@pytest.mark.parametrize("how", ["truncate", "recreate", "overwrite"])
async def test_a_rewritten_file_with_the_same_first_line_starts_a_generation_and_loses_nothing(
        store: MemoryEventStore, tmp_path: Path, how: str) -> None:
    folder, other = tmp_path / "sim_r", tmp_path / "other"
    simulate(folder, agents=6, rounds=3, seed=1)
    simulate(other, agents=6, rounds=3, seed=2)
    path = folder / "twitter" / "actions.jsonl"
    old, new_run = path.read_bytes().splitlines(keepends=True), (other / "twitter" / "actions.jsonl").read_bytes()
    new_lines = new_run.splitlines(keepends=True)
    assert new_lines[0] == old[0]  # the same simulation_start line: only the bytes further on differ
    await SimulationIngestor(store, folder).check()
    new = [old[0], *new_lines[1:] * 3]  # longer than the old file, so neither shrink nor size gives it away
    rewrite(path, how, b"".join(new))
    await SimulationIngestor(store, folder).check()  # a fresh ingestor: the daemon was down meanwhile
    events = [r.data | {"type": r.type} for r in await store.read_stream("simulation-sim_r")]
    assert [e["type"] for e in events].count("SimulationGenerationStarted") == 1

    def actions(generation: int) -> int:
        return sum(1 for e in events if e["type"] == "AgentActed" and e["generation"] == generation
                   and e["platform"] == "twitter")

    def action_lines(lines: list[bytes]) -> int:
        return sum(1 for raw in lines if "event_type" not in json.loads(raw))

    assert actions(1) == action_lines(old) and actions(2) == action_lines(new)


async def test_appending_to_the_same_file_is_not_mistaken_for_a_rewrite(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_g"
    simulate(folder, agents=6, rounds=3, seed=1)
    path = folder / "twitter" / "actions.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:10]))
    await SimulationIngestor(store, folder).check()
    with path.open("ab") as f:
        f.write(b"".join(lines[10:]))
    await SimulationIngestor(store, folder).check()
    types = [r.type for r in await store.read_stream("simulation-sim_g")]
    assert "SimulationGenerationStarted" not in types and "SimulationCompleted" in types


async def test_a_rescan_and_a_watch_that_meet_a_new_folder_together_ingest_it_once_without_a_failure(
        store: MemoryEventStore, tmp_path: Path) -> None:
    """At startup the first rescan and the first watch both check every folder: they used to make an ingestor
    each, and the slower one's append conflicted (an IngestFailed in the log, a traceback, a 1 s backoff)."""
    root = tmp_path / "sims"
    simulate(root / "a", agents=30, rounds=8, seed=1)
    watcher = Watcher(store, [root])
    async with anyio.create_task_group() as tasks:
        for _ in range(3):
            tasks.start_soon(watcher.check, root / "a")
    types = [r.type for r in await store.read_stream("simulation-a")]
    assert "IngestFailed" not in types and not watcher.failing
    assert types.count("SimulationDiscovered") == 1 and "SimulationCompleted" in types


async def test_a_failure_folding_at_start_comes_out_as_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def unreadable(self: ProjectionRunner) -> int:
        raise StoreUnusable(tmp_path, "it cannot be read")

    monkeypatch.setattr(ProjectionRunner, "catch_up", unreadable)
    with pytest.raises(StoreUnusable, match="cannot be read"):  # not an ExceptionGroup: the CLI says it in one line
        async with Daemon(make_config(tmp_path)):
            pass
