"""Ingest of real simulation folders: bad input, restarts, generations, completion."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.reports import runs_so_far
from simreportd.events import MemoryEventStore
from simreportd.events.models import RunSoFar
from simreportd.simulator.simulate import simulate

pytestmark = pytest.mark.anyio

ACTION = {"round": 1, "timestamp": "2026-03-02T09:00:00", "agent_id": 1, "agent_name": "A", "action_type": "CREATE_POST",
          "action_args": {"content": "hello", "post_id": 1}, "result": None, "success": True}


def line(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode()


async def ingest(store: MemoryEventStore, folder: Path) -> list:
    await SimulationIngestor(store, folder).check()
    return await store.read_stream(f"simulation-{folder.name}")


def append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(data)


@pytest.fixture
async def store():
    async with MemoryEventStore() as store:
        yield store


async def test_every_action_line_becomes_one_event(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_x"
    simulate(folder, agents=10, rounds=4, seed=1)
    events = await ingest(store, folder)
    lines = sum(1 for p in ("twitter", "reddit") for _ in (folder / p / "actions.jsonl").open(encoding="utf-8"))
    per_line = [e for e in events if e.data.get("source") or e.type == "AgentActed"]  # an action: its line's order
    assert len(per_line) == lines
    assert [e.type for e in events].count("SimulationCompleted") == 1
    assert events[0].type == "SimulationDiscovered" and events[0].data["requirement"]


async def test_a_second_check_appends_nothing(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_x"
    simulate(folder, agents=8, rounds=3, seed=1)
    first = await ingest(store, folder)
    assert await ingest(store, folder) == first


async def test_half_line_waits_for_its_end(store: MemoryEventStore, tmp_path: Path) -> None:
    folder, path = tmp_path / "sim_h", tmp_path / "sim_h" / "twitter" / "actions.jsonl"
    data = line(ACTION)
    append(path, data[:20])
    assert [e.type for e in await ingest(store, folder)] == ["SimulationDiscovered"]
    append(path, data[20:])
    assert [e.type for e in await ingest(store, folder)][-1] == "AgentActed"


@pytest.mark.parametrize("bad, reason", [
    (b"\xff\xfe not utf-8\n", "invalid UTF-8"),
    (b"{not json}\n", "not JSON"),
    (b"[1, 2]\n", "not a JSON object"),
    (line({**ACTION, "round": "one"}), "'round' must be an integer"),
    (line({k: v for k, v in ACTION.items() if k != "agent_id"}), "missing key 'agent_id'"),
    (line({**ACTION, "action_args": "x"}), "'action_args' must be an object"),
    (line({"event_type": "round_end"}), "missing key 'round'"),
])
async def test_each_bad_line_is_one_rejection_and_the_next_good_line_is_read(
        store: MemoryEventStore, tmp_path: Path, bad: bytes, reason: str) -> None:
    folder, path = tmp_path / "sim_b", tmp_path / "sim_b" / "twitter" / "actions.jsonl"
    append(path, line(ACTION) + bad + line({**ACTION, "agent_id": 2}))
    events = await ingest(store, folder)
    [rejected] = [e.data for e in events if e.type == "IngestRejected"]
    assert reason in rejected["reason"] and rejected["offset"] == len(line(ACTION))
    assert rejected["file"] == "twitter/actions.jsonl" and rejected["excerpt"]
    assert [e.data["agent_id"] for e in events if e.type == "AgentActed"] == [1, 2]


async def test_a_ten_megabyte_line_is_rejected_without_stopping_ingest(store: MemoryEventStore, tmp_path: Path) -> None:
    folder, path = tmp_path / "sim_big", tmp_path / "sim_big" / "twitter" / "actions.jsonl"
    append(path, line(ACTION) + b'{"content": "' + b"x" * 10_000_000 + b'"}\n' + line({**ACTION, "agent_id": 3}))
    events = await ingest(store, folder)
    [rejected] = [e.data for e in events if e.type == "IngestRejected"]
    assert "longer than the limit" in rejected["reason"] and len(rejected["excerpt"]) <= 200
    assert [e.data["agent_id"] for e in events if e.type == "AgentActed"] == [1, 3]


async def test_empty_file_and_deleted_folder_are_harmless(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_e"
    (folder / "twitter").mkdir(parents=True)
    (folder / "twitter" / "actions.jsonl").touch()
    assert [e.type for e in await ingest(store, folder)] == ["SimulationDiscovered"]
    ingestor = SimulationIngestor(store, folder)
    (folder / "twitter" / "actions.jsonl").unlink()
    (folder / "twitter").rmdir()
    folder.rmdir()
    await ingestor.check()
    assert len(await store.read_stream("simulation-sim_e")) == 1


async def test_force_restart_starts_a_second_generation_and_keeps_the_first(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_r"
    simulate(folder, agents=8, rounds=3, seed=1)
    first = await ingest(store, folder)
    simulate(folder, agents=8, rounds=4, seed=2, restart=True)
    events = await ingest(store, folder)
    assert events[: len(first)] == first
    later = events[len(first):]
    assert later[0].type == "SimulationGenerationStarted" and later[0].data["generation"] == 2
    assert all(e.data["generation"] == 2 for e in later)
    completed = [e.data["generation"] for e in events if e.type == "SimulationCompleted"]
    assert completed == [1, 2]


async def test_runs_so_far_says_which_generation_completed_and_how_far_a_running_one_got(
        store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_r"
    simulate(folder, agents=8, rounds=3, seed=1)
    await ingest(store, folder)
    simulate(folder, agents=8, rounds=4, seed=2, restart=True)
    for path in folder.glob("*/actions.jsonl"):  # the second run is still going: half its lines so far
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    events = await ingest(store, folder)
    second = [e for e in events if e.data["generation"] == 2]
    ended: dict[str, int] = {}
    for e in second:
        if e.type == "RoundEnded":
            ended[e.data["platform"]] = max(ended.get(e.data["platform"], 0), e.data["round"])
    runs = await runs_so_far(store, "sim_r")
    assert runs == {1: None, 2: RunSoFar(rounds=ended, actions=sum(e.type == "AgentActed" for e in second))}
    assert runs[2].actions > 0 and ended  # type: ignore[union-attr]


async def test_a_platform_stopped_early_has_not_run_all_rounds(store: MemoryEventStore, tmp_path: Path) -> None:
    folder, path = tmp_path / "sim_s", tmp_path / "sim_s" / "twitter" / "actions.jsonl"
    append(path, line({"event_type": "simulation_start", "platform": "twitter", "total_rounds": 99,
                       "agents_count": 2})
           + line({"event_type": "round_start", "round": 1, "simulated_hour": 9}) + line(ACTION)
           + line({"event_type": "round_end", "round": 1, "actions_count": 1})
           + line({"event_type": "simulation_end", "platform": "twitter", "total_rounds": 3, "total_actions": 1}))
    events = await ingest(store, folder)
    [finished] = [e.data for e in events if e.type == "PlatformFinished"]
    assert finished["all_rounds_ran"] is False
    [completed] = [e.data for e in events if e.type == "SimulationCompleted"]
    assert completed["platforms"] == ["twitter"] and completed["all_rounds_ran"] is False


async def test_stale_alive_environment_is_reported_stale(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_env"
    simulate(folder, agents=6, rounds=2, seed=1)
    (folder / "env_status.json").write_text(json.dumps({"status": "alive", "twitter_available": True}))
    state = json.loads((folder / "run_state.json").read_text())
    (folder / "run_state.json").write_text(json.dumps({**state, "process_pid": 2**22 + 12345}))
    events = await ingest(store, folder)
    [env] = [e.data for e in events if e.type == "EnvironmentStatusChanged"]
    assert env["status"] == "stale"
    (folder / "run_state.json").write_text(json.dumps({**state, "process_pid": os.getpid()}))
    events = await ingest(store, folder)
    assert [e.data["status"] for e in events if e.type == "EnvironmentStatusChanged"] == ["stale", "alive"]


async def test_oasis_database_is_written_readable_and_complete(tmp_path: Path) -> None:
    folder = tmp_path / "sim_o"
    story = simulate(folder, agents=6, rounds=3, seed=1, oasis_db=True)
    conn = sqlite3.connect(f"file:{folder / 'twitter_simulation.db'}?mode=ro", uri=True)
    actions = Counter(a for (a,) in conn.execute("SELECT action FROM trace"))
    conn.close()
    posts = sum(1 for r in story.lines["twitter"] for x in r if x["action_type"] == "CREATE_POST")
    assert actions["create_post"] == posts and actions["sign_up"] == 6


async def test_an_oasis_database_alone_is_ingested_with_its_joins(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_db"
    story = simulate(folder, agents=8, rounds=3, seed=1, oasis_db=True)
    for platform in ("twitter", "reddit"):
        (folder / platform / "actions.jsonl").unlink()
        (folder / platform).rmdir()
    events = await ingest(store, folder)
    acted = [e.data for e in events if e.type == "AgentActed"]
    expected = sum(1 for p in ("twitter", "reddit") for r in story.lines[p] for _ in r)
    assert len(acted) == expected
    follows = [a for a in acted if a["action_type"] == "FOLLOW"]
    assert follows and all(a["action_args"]["target_user_name"] for a in follows)
    comments = [a for a in acted if a["action_type"] == "CREATE_COMMENT"]
    assert comments and all(isinstance(a["action_args"]["post_id"], int) for a in comments)
    reddit_rounds = {a["round"] for a in acted if a["platform"] == "reddit"}
    assert reddit_rounds == {r for r, lines in enumerate(story.lines["reddit"]) if lines}
    assert [e.data["platforms"] for e in events if e.type == "SimulationCompleted"] == [["reddit", "twitter"]]
    assert await ingest(store, folder) == events


async def test_the_ingest_state_folds_recorded_actions_as_their_models_would(tmp_path: Path, small_sim: Path) -> None:
    """A restart folds actions from their data, without building models: the state must be the same."""
    from simreportd.daemon.ingest.ingest_state import IngestState
    from simreportd.events.streams import simulation_stream

    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        records = await store.read_stream(simulation_stream(small_sim.name))
    by_model, by_record = IngestState(small_sim.name), IngestState(small_sim.name)
    for recorded in records:
        by_model.apply(recorded.event)
        by_record.apply_recorded(recorded)
    assert sum(r.type == "AgentActed" for r in records) > 50
    assert by_record == by_model and by_model.files and by_model.last_round


async def test_a_restart_folds_only_what_came_after_the_ingest_snapshot(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The state from a snapshot plus the events after it is the state a full fold gives; a snapshot the
    log does not hold is ignored."""
    from simreportd.daemon.ingest import ingestor as ingestor_module
    from simreportd.daemon.ingest.ingest_state import IngestState
    from simreportd.daemon.ingest.snapshots import IngestSnapshots
    from simreportd.events.streams import simulation_stream

    monkeypatch.setattr(ingestor_module, "EVERY", 50)
    folder = tmp_path / "sims" / "sim_snap"
    simulate(folder, agents=12, rounds=6, seed=3)
    actions = folder / "twitter" / "actions.jsonl"
    lines = actions.read_text(encoding="utf-8").splitlines(keepends=True)
    actions.write_text("".join(lines[:len(lines) // 2]), encoding="utf-8")
    snapshots = IngestSnapshots(tmp_path / "snapshots.sqlite3")
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, folder, snapshots=snapshots).check()
        taken = snapshots.load("sim_snap")
        actions.write_text("".join(lines), encoding="utf-8")  # the rest arrives while the daemon is down
        folded_from: list[int] = []
        iter_stream = store.iter_stream
        monkeypatch.setattr(store, "iter_stream", lambda stream, after=0: folded_from.append(after) or
                            iter_stream(stream, after))
        restarted = SimulationIngestor(store, folder, snapshots=snapshots)
        await restarted.check()
        full = IngestState("sim_snap")
        for recorded in await store.read_stream(simulation_stream("sim_snap")):
            full.apply(recorded.event)
        snapshots.save("sim_snap", 3, "not-an-event-of-this-log", full)
        before = await store.last_position()
        ignored = SimulationIngestor(store, folder, snapshots=snapshots)
        await ignored.check()
        after = await store.last_position()
    assert taken is not None and 50 <= taken[0] < full.version  # taken midway, at an event of the log
    assert folded_from == [taken[0], 0]  # the restart read only what followed it; the bad one, everything
    assert restarted.state == full and ignored.state == full and after == before  # nothing ingested twice
