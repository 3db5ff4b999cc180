"""kill -9 at any moment, then restart: the same final state as an uninterrupted run."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, make_config, write_config
from ..fake_llm import FakeLLM
from ..processes import NotifySocket, cli, count, kill9, wait_until

pytestmark = pytest.mark.slow

APPENDER = textwrap.dedent("""
    import asyncio, sys
    from simreportd.events.models import PlanningStarted
    from simreportd.events import SQLiteEventStore

    async def main(path):
        async with SQLiteEventStore(path) as store:
            version = len(await store.read_stream("report-k"))
            batch = version // 5
            while True:
                batch += 1
                events = [PlanningStarted(report_id=f"b{batch}") for _ in range(5)]
                await store.append("report-k", events, expected_version=version)
                version += 5

    asyncio.run(main(sys.argv[1]))
""")


def test_kill_9_while_appending_loses_no_committed_event_and_splits_no_batch(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    for round_no in range(3):
        process = subprocess.Popen([PYTHON, "-c", APPENDER, str(db)])
        target = count(db, "SELECT count(*) FROM events") + 200 + round_no * 37
        wait_until(lambda: count(db, "SELECT count(*) FROM events") >= target, "appends")
        kill9(process)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT position, version, data FROM events ORDER BY position").fetchall()
    conn.close()
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
    batches = Counter(json.loads(r[2])["report_id"] for r in rows)
    assert set(batches.values()) == {5}
    assert len(batches) == len(rows) // 5


def kill_and_restart(config: Path, db: Path, progress_sql: str, rng: random.Random, steps: tuple[int, int],
                     done: Callable[[], bool]) -> subprocess.Popen:
    """Four times: run the daemon until it made a random amount of progress, kill -9 it. Then start it for good."""
    for _ in range(4):
        daemon = cli("run", "-c", str(config))
        target = count(db, progress_sql) + rng.randint(*steps)
        wait_until(lambda: count(db, progress_sql) >= target or done(), "some progress")
        kill9(daemon)
    with NotifySocket(config.parent / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
    return daemon


OURS = ("simulation_id", "generation", "platform", "source")  # what ingest puts in front of an action's line


def simulation_lines(folder: Path) -> dict[str, list[dict]]:
    """Each platform's action lines, in file order, without keys of ours."""
    lines: dict[str, list[dict]] = {}
    for platform in ("twitter", "reddit"):
        for raw in (folder / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines():
            if "event_type" not in (line := json.loads(raw)):
                lines.setdefault(platform, []).append({k: v for k, v in line.items() if k not in OURS})
    return lines


def acted(db: Path) -> dict[str, list[dict]]:
    """Each platform's stored actions, in log order, as their lines: equal to `simulation_lines` when every line
    was ingested once and in order (an action's data is its line, ours in front)."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT data FROM events WHERE type = 'AgentActed' ORDER BY position").fetchall()
    conn.close()
    lines: dict[str, list[dict]] = {}
    for (data,) in rows:
        line = json.loads(data)
        lines.setdefault(line["platform"], []).append({k: v for k, v in line.items() if k not in OURS})
    return lines


def test_kill_9_during_live_ingest_ends_with_every_line_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, auto=False)
    folder, db = tmp_path / "sims" / "sim_live", tmp_path / "state" / "events.sqlite3"
    simulator = cli("simulate", str(folder), "--agents", "16", "--rounds", "10", "--live", "--round-seconds", "0.15")
    try:
        daemon = kill_and_restart(config, db, "SELECT count(*) FROM events", random.Random(11), (5, 40),
                                  lambda: (folder / "env_status.json").exists())
        wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE type = 'SimulationCompleted'") == 1,
                   "the run to complete")
        wait_until(lambda: (folder / "env_status.json").exists(), "the live phase")
        daemon.terminate()
        assert daemon.wait(timeout=TIMEOUT) == 0
    finally:
        simulator.terminate()
        simulator.wait(timeout=TIMEOUT)
    assert acted(db) == simulation_lines(folder)


def model_rows(views: Path) -> dict[str, list]:
    """The simulation model without positions (which depend on how reads interleaved)."""
    conn = sqlite3.connect(views)
    out = {
        "posts": sorted(conn.execute("SELECT platform, ref, kind, agent_id, round, content FROM sim_posts")),
        "rounds": sorted(conn.execute("SELECT platform, round, simulated_hour, actions FROM sim_rounds")),
        "platforms": sorted(conn.execute("SELECT platform, status, total_rounds, all_rounds_ran, actions"
                                         " FROM sim_platforms")),
        "edges": sorted(conn.execute("SELECT platform, round, kind, src_agent, dst_agent, target_ref FROM sim_edges")),
        "mix": sorted(conn.execute("SELECT platform, action_type, count FROM sim_action_mix")),
    }
    conn.close()
    return out


@pytest.mark.anyio
async def test_live_ingest_builds_the_same_model_as_ingesting_the_finished_folder(tmp_path: Path) -> None:
    from simreportd.daemon.service import Daemon

    folder = tmp_path / "sims" / "sim_live"
    simulator = cli("simulate", str(folder), "--agents", "12", "--rounds", "6", "--live", "--round-seconds", "0.1")
    live = make_config(tmp_path / "live", reports={"auto": False}, watch={"roots": [tmp_path / "sims"],
                                                                           "rescan_seconds": 0.1})
    try:
        async with Daemon(live) as daemon:
            import asyncio
            task = asyncio.create_task(daemon.run())
            await asyncio.to_thread(wait_until, lambda: (folder / "env_status.json").exists(), "the live phase")
            await daemon.watcher.rescan()
            await daemon.views.wait_for(await daemon.store.last_position(), TIMEOUT)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        simulator.terminate()
        simulator.wait(timeout=TIMEOUT)
    once = make_config(tmp_path / "once", reports={"auto": False})
    async with Daemon(once, folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        await daemon.views.catch_up()
    views = lambda c: c.store.path.with_name("events-views.sqlite3")  # noqa: E731
    assert model_rows(views(live)) == model_rows(views(once))
    assert sum(n for _, _, _, _, n in model_rows(views(once))["platforms"]) == sum(map(len, simulation_lines(folder).values()))


def test_kill_9_during_a_report_completes_it_with_each_section_once(tmp_path: Path) -> None:
    with FakeLLM(latency_s=0.01) as llm:
        reference = uninterrupted_sections(tmp_path / "reference", llm.base_url)
        base = tmp_path / "killed"
        simulate(base / "sims" / "sim_k", agents=12, rounds=6, seed=3)
        config = write_config(base, f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\nmodel = "m"\n'
                                    "retry_backoff_s = 0.01\n")
        db = base / "state" / "events.sqlite3"
        daemon = kill_and_restart(config, db, "SELECT count(*) FROM events WHERE stream LIKE 'report-%'",
                                  random.Random(5), (3, 25),
                                  lambda: count(db, "SELECT count(*) FROM events WHERE type = 'InterviewUnlocked'") > 0)
        wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE type = 'InterviewUnlocked'") == 1,
                   "the report to complete")
        daemon.terminate()
        assert daemon.wait(timeout=TIMEOUT) == 0
    conn = sqlite3.connect(db)
    sections = [json.loads(d) for (d,) in conn.execute(
        "SELECT data FROM events WHERE type = 'SectionCompleted' ORDER BY position")]
    responded = Counter(c for (c,) in conn.execute(
        "SELECT json_extract(data, '$.call_id') FROM events WHERE type = 'LLMResponded'"))
    observed = Counter(conn.execute(  # a model's tool-call ids need only be unique within a section
        "SELECT json_extract(data, '$.section_index'), json_extract(data, '$.call_id') FROM events"
        " WHERE type = 'ToolObserved'"))
    conn.close()
    assert [s["section_index"] for s in sections] == list(range(1, len(sections) + 1))
    assert [(s["title"], s["content"]) for s in sections] == reference
    assert set(responded.values()) == {1} and set(observed.values()) == {1}


def uninterrupted_sections(base: Path, base_url: str) -> list[tuple[str, str]]:
    simulate(base / "sims" / "sim_k", agents=12, rounds=6, seed=3)
    config = write_config(base, f'[llm]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "m"\n', auto=False)
    result = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report",
                             str(base / "sims" / "sim_k"), "--wait"], capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    conn = sqlite3.connect(base / "state" / "events.sqlite3")
    rows = [json.loads(d) for (d,) in conn.execute(
        "SELECT data FROM events WHERE type = 'SectionCompleted' ORDER BY position")]
    conn.close()
    return [(r["title"], r["content"]) for r in rows]
