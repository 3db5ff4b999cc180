"""Ingest of folders written the way MiroFish's runner and OASIS v0.2.5 really write them.

The folders come from `simreportd.simulator.mirofish_folder` (our own fixture writer, from reading upstream:
666ghj/MiroFish `backend/scripts/run_parallel_simulation.py` and `action_logger.py`; camel-ai/oasis v0.2.5
`oasis/social_platform/platform.py`, `schema/*.sql`, `oasis/environment/env.py`); every assertion is checked
against the writer's own ground truth, never against what ingest produced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.daemon.ingest import foreign
from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.ingest.inputs import ANYWHERE
from simreportd.daemon.ingest.watcher import Watcher
from simreportd.events import MemoryEventStore
from simreportd.projections import simulation_queries
from simreportd.projections.catalogue import projections
from simreportd.projections.simulation import SimulationModel
from simreportd.simulator.mirofish_folder import MirofishRun, write_mirofish

from ..conftest import TIMEOUT, make_config, write_config
from ..processes import NotifySocket, cli, wait_until

pytestmark = pytest.mark.anyio
PLATFORMS = ("twitter", "reddit")


@pytest.fixture
async def store():
    async with MemoryEventStore() as store:
        yield store


async def ingest(store: MemoryEventStore, folder: Path) -> list[Any]:
    await SimulationIngestor(store, folder).check()
    return await store.read_stream(f"simulation-{folder.name}")


def acted(events: list[Any], platform: str) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "AgentActed" and e.data["platform"] == platform]


def by_type(actions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [a for a in actions if a["action_type"] == kind]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_every_action_is_counted_once_in_the_runners_round(store: MemoryEventStore, tmp_path: Path,
                                                                  seed: int) -> None:
    """Seed posts are logged in round 0 without ids, then again by the first round that steps the environment
    (run_parallel_simulation.py:1169 starts `last_rowid` at 0, :1177-1211 log round 0, :1257 reads `trace`);
    an idle round steps nothing (:1247-1251). One action each, in the round the runner gave it."""
    folder = tmp_path / f"sim_{seed}"
    truth = write_mirofish(folder, seed=seed)
    events = await ingest(store, folder)
    for platform in PLATFORMS:
        real = truth["platforms"][platform]["actions"]
        got = acted(events, platform)
        assert len(got) == len(real)
        assert Counter((a["round"], a["agent_id"], a["action_type"]) for a in got) == \
            Counter((a["round"], a["agent_id"], a["action_type"]) for a in real)
        seeds = [a for a in got if a["round"] == 0]
        assert sorted(a["action_args"]["post_id"] for a in seeds) == \
            sorted(a["post_id"] for a in real if a["round"] == 0)  # the copy's id, on the one seed post
        assert not {a["round"] for a in got} & set(truth["idle_rounds"])


@pytest.mark.parametrize("seed", [1, 2, 4])
async def test_targets_the_runner_drops_come_from_the_database(store: MemoryEventStore, tmp_path: Path, seed: int) -> None:
    """The runner keeps only some `info` keys (run_parallel_simulation.py:708-727): a repost loses
    `reposted_id` (platform.py:496), a mute its `mutee_id` (platform.py:996), and a comment never had its post
    in `info` (platform.py:1104). The database beside the file holds them all."""
    folder = tmp_path / f"sim_{seed}"
    truth = write_mirofish(folder, seed=seed, agents=10, rounds=8)
    events = await ingest(store, folder)
    names = {i: n for i, n in MirofishRun(tmp_path / "x", seed=seed, agents=10, rounds=8).names.items()}
    checked = 0
    for platform in PLATFORMS:
        real, got = truth["platforms"][platform]["actions"], acted(events, platform)
        for kind, key in (("CREATE_COMMENT", "post_id"), ("REPOST", "post_id")):
            assert [a["action_args"][key] for a in by_type(got, kind)] == [a[key] for a in by_type(real, kind)]
            checked += len(by_type(real, kind))
        for kind in ("MUTE", "FOLLOW", "LIKE_COMMENT", "DISLIKE_COMMENT"):
            name_key = "comment_author_name" if "COMMENT" in kind else "target_user_name"
            assert [a["action_args"][name_key] for a in by_type(got, kind)] == \
                [names[a["target_agent_id"]] for a in by_type(real, kind)]
            checked += len(by_type(real, kind))
    assert checked > 0


async def test_without_the_databases_nothing_is_counted_twice_and_targets_stay_as_the_lines_say(
        store: MemoryEventStore, tmp_path: Path) -> None:
    """A folder with actions.jsonl only: the same count and rounds; a comment keeps no post (the line has none)."""
    folder = tmp_path / "sim_nodb"
    truth = write_mirofish(folder, seed=5, databases=False)
    events = await ingest(store, folder)
    assert not list(folder.glob("*.db"))
    for platform in PLATFORMS:
        real, got = truth["platforms"][platform]["actions"], acted(events, platform)
        assert Counter((a["round"], a["action_type"]) for a in got) == Counter((a["round"], a["action_type"])
                                                                               for a in real)
        assert all("post_id" not in a["action_args"] for a in by_type(got, "CREATE_COMMENT"))
    assert not [e for e in events if e.type == "AgentInterviewed"]


async def test_interviews_after_the_run_are_interviews_never_actions(store: MemoryEventStore, tmp_path: Path) -> None:
    """Interviews are `trace` rows (platform.py:1380-1388) written after the last round; the runner's loop has
    ended, so they never reach actions.jsonl. They are interviews, with prompt and answer, in no round."""
    folder = tmp_path / "sim_iv"
    truth = write_mirofish(folder, seed=6)
    events = await ingest(store, folder)
    for platform in PLATFORMS:
        interviews = [e.data for e in events if e.type == "AgentInterviewed" and e.data["platform"] == platform]
        real = truth["platforms"][platform]["interviews"]
        assert [(i["agent_id"], i["prompt"], i["response"]) for i in interviews] == \
            [(i["agent_id"], i["prompt"], i["response"]) for i in real]
        assert not by_type(acted(events, platform), "INTERVIEW")
        assert max(a["round"] for a in acted(events, platform)) <= truth["rounds"]
    again = await ingest(store, folder)
    assert len(again) == len(events)  # nothing recorded twice


async def test_interviews_after_the_run_are_shown_with_the_run(store: MemoryEventStore, tmp_path: Path) -> None:
    """The simulation model keeps them beside the run (its row counts them), in the order they were asked."""
    folder = tmp_path / "sim_iv"
    truth = write_mirofish(folder, seed=6)
    events = await ingest(store, folder)
    conn, model = sqlite3.connect(":memory:"), SimulationModel()
    for projection in projections():
        conn.executescript(projection.schema)
    for recorded in events:
        for sql, params in model.apply(recorded) if recorded.type in model.types else ():
            conn.execute(sql, params)
    shown = simulation_queries.interviews(conn, ("sim_iv", 1))
    real = [i for platform in PLATFORMS for i in truth["platforms"][platform]["interviews"]]
    assert sorted((i["agent_id"], i["response"]) for i in shown) == sorted((i["agent_id"], i["response"]) for i in real)
    assert [row["interviews"] for row in simulation_queries.simulations(conn)] == [len(real)] and real


async def test_a_database_alone_counts_seeds_once_and_keeps_interviews_out_of_the_rounds(
        store: MemoryEventStore, tmp_path: Path) -> None:
    """No actions.jsonl (a single-platform runner): the database is the only source. Seeds are one post each,
    interviews are not actions, and the dropped targets are joined. (Rounds are only a guess there: an idle
    round leaves no trace, env.py:196-198 advances the clock only when the environment steps.)"""
    folder = tmp_path / "sim_db"
    truth = write_mirofish(folder, seed=2)
    for platform in PLATFORMS:
        shutil.rmtree(folder / platform)
    events = await ingest(store, folder)
    for platform in PLATFORMS:
        real, got = truth["platforms"][platform]["actions"], acted(events, platform)
        assert Counter(a["action_type"] for a in got) == Counter(a["action_type"] for a in real)
        assert [a["action_args"]["post_id"] for a in by_type(got, "CREATE_COMMENT")] == \
            [a["post_id"] for a in by_type(real, "CREATE_COMMENT")]
    assert len([e for e in events if e.type == "AgentInterviewed"]) == \
        sum(len(truth["platforms"][p]["interviews"]) for p in PLATFORMS)


def comparable(events: list[Any]) -> list[tuple[Any, ...]]:
    """What a run's actions say, platform by platform, without when or from which byte they were read."""
    return sorted([(a["platform"], a["round"], a["agent_id"], a["action_type"],
             json.dumps(a["action_args"], sort_keys=True, ensure_ascii=False))
            for a in (e.data for e in events if e.type == "AgentActed")], key=lambda a: a[0])


async def test_a_run_ingested_as_it_is_written_is_the_run_ingested_at_the_end(store: MemoryEventStore,
                                                                              tmp_path: Path) -> None:
    """Checked after every round (and by a fresh ingestor half way, as after a restart), the log holds the
    same actions as one check of the finished folder: seeds waiting for their copies are never lost."""
    live, done = tmp_path / "live" / "sim_r", tmp_path / "done" / "sim_r"
    run = MirofishRun(live, seed=3)
    run.start()
    await SimulationIngestor(store, live).check()
    ingestor = SimulationIngestor(store, live)
    for round_no in range(1, run.rounds + 1):
        run.play_round(round_no)
        await ingestor.check()
        if round_no == run.rounds // 2:
            ingestor = SimulationIngestor(store, live)
    run.finish()
    await ingestor.check()
    write_mirofish(done, seed=3)
    async with MemoryEventStore() as other:
        at_end = await ingest(other, done)
    assert comparable(await store.read_stream("simulation-sim_r")) == comparable(at_end)


async def test_report_tools_answer_the_same_however_the_run_was_read(tmp_path: Path) -> None:
    """quick_search, agent_profile and coalitions on one run read at the end, round by round, and round by
    round with the databases copied in before the lines (the order a copy or a sync may give)."""
    from simreportd.agent.tools.simulation_tools import SimulationTools
    from simreportd.daemon.service import Daemon

    answers = []
    for way in ("at_end", "live", "databases_first"):
        folder = tmp_path / way / "sims" / "sim_t"
        run = MirofishRun(folder, seed=8, agents=10, rounds=6)
        async with Daemon(make_config(tmp_path / way), folders=[folder]) as daemon:
            if way == "at_end":
                run.run()
            else:
                run.start()
                for round_no in range(1, run.rounds + 1):
                    if way == "databases_first":
                        files = [folder / p / "actions.jsonl" for p in PLATFORMS]
                        sizes = [f.stat().st_size for f in files]
                        run.play_round(round_no)
                        grown = [f.read_bytes() for f in files]
                        for f, size in zip(files, sizes):
                            os.truncate(f, size)  # the round's rows are in the databases, its lines not yet
                        await daemon.watcher.check(folder)
                        for f, size, data in zip(files, sizes, grown):
                            with f.open("r+b") as out:
                                out.seek(size)
                                out.write(data[size:])
                    else:
                        run.play_round(round_no)
                    await daemon.watcher.check(folder)
                run.finish()
            await daemon.watcher.check(folder)
            await daemon.views.catch_up()
            tools = SimulationTools(daemon.views.path)
            answers.append([json.loads(await tools.run(tool, args, "sim_t", 1)) for tool, args in (
                ("quick_search", {"query": "隐私"}), ("agent_profile", {"agent": "agent:3"}),
                ("coalitions", {"min_size": 2}))])
    assert answers[0][0] and answers[0] == answers[1] == answers[2]


async def test_a_first_line_with_a_byte_order_mark_is_read(store: MemoryEventStore, tmp_path: Path) -> None:
    folder = tmp_path / "sim_bom"
    write_mirofish(folder, seed=1, databases=False)
    path = folder / "twitter" / "actions.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    events = await ingest(store, folder)
    assert not [e for e in events if e.type == "IngestRejected"]
    assert [e.type for e in events].count("PlatformStarted") == 2


# --- foreign databases that do not answer ------------------------------------------------------

RECURSIVE_TRACE = ("CREATE VIEW trace(rowid, user_id, created_at, action, info) AS WITH RECURSIVE n(i) AS"
                   " (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i, 0, 0, 'do_nothing', '{}' FROM n"
                   " ORDER BY i DESC")


def recursive_view(folder: Path) -> None:
    """A `trace` that is a recursive view: any read of it never returns."""
    (folder / "twitter").mkdir(parents=True)
    conn = sqlite3.connect(folder / "twitter_simulation.db")
    conn.execute(RECURSIVE_TRACE)
    conn.close()


def not_sqlite(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "reddit_simulation.db").write_bytes(b"PK\x03\x04 this is a zip, not a database" * 100)


BAD = {"sim_a_recursive": (recursive_view, "deadline"), "sim_b_not_sqlite": (not_sqlite, "not an SQLite database")}


async def test_a_query_that_never_ends_stops_at_its_deadline(tmp_path: Path) -> None:
    recursive_view(tmp_path / "f")
    path = tmp_path / "f" / "twitter_simulation.db"
    with pytest.raises(foreign.Unreadable, match="deadline") as caught:
        await foreign.query(path, ANYWHERE, lambda c: c.execute("SELECT max(rowid) FROM trace").fetchone(),
                            deadline_s=0.2)
    assert not caught.value.transient


async def test_a_cancelled_caller_interrupts_the_query_at_once(tmp_path: Path) -> None:
    """Cancelling the caller stops the query in its worker (the thread is not abandoned, nor waited for until
    its deadline): the caller is back long before a deadline ten times the suite's wait bound, however loaded the
    machine (the bound is the deadline, not a time it could be slow to meet)."""
    recursive_view(tmp_path / "f")
    path = tmp_path / "f" / "twitter_simulation.db"
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await foreign.query(path, ANYWHERE, lambda c: c.execute("SELECT max(rowid) FROM trace").fetchone(),
                            deadline_s=TIMEOUT * 10)
    assert scope.cancelled_caught and time.monotonic() - started < TIMEOUT


async def test_bad_databases_are_recorded_once_and_their_neighbour_is_ingested(store: MemoryEventStore,
                                                                               tmp_path: Path) -> None:
    """A recursive-view `trace`, a `.db` that is not SQLite, a database locked by its writer: each is recorded
    with its reason, once; the folder beside them is ingested in the same rescan."""
    root = tmp_path / "sims"
    for name, (make, _) in BAD.items():
        make(root / name)
    write_mirofish(root / "sim_c_locked", seed=1)
    write_mirofish(root / "sim_d_good", seed=2)
    locker = sqlite3.connect(root / "sim_c_locked" / "twitter_simulation.db", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # as a writer in the middle of its transaction
    watcher = Watcher(store, [root])
    try:
        await watcher.rescan()
        await watcher.rescan()
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    good = await store.read_stream("simulation-sim_d_good")
    assert any(e.type == "SimulationCompleted" for e in good)
    for name, (_, reason) in {**BAD, "sim_c_locked": (None, "locked")}.items():
        notes = [e.data["reason"] for e in await store.read_stream(f"simulation-{name}")
                 if e.type == "IngestRejected"]
        assert sum(reason in n for n in notes) == 1, (name, notes)
    await watcher.rescan()  # the lock is gone: the locked folder's targets are read now
    locked = await store.read_stream("simulation-sim_c_locked")
    comments = [e.data for e in locked if e.type == "AgentActed" and e.data["action_type"] == "CREATE_COMMENT"]
    assert comments and all(isinstance(c["action_args"].get("post_id"), int) for c in comments)


def test_sigterm_stops_the_daemon_quickly_while_a_database_never_answers(tmp_path: Path) -> None:
    """A real daemon over a root with a recursive-view `trace` beside a good folder: the good one is ingested,
    the bad one's reason recorded, and SIGTERM (sent while a fresh bad folder is being read) ends it, exit 0. That
    the stop interrupts the query rather than waiting for its deadline is held by the test above, with a deadline
    no loaded machine reaches; a bound in seconds here failed at load 9-16 (4.46 s)."""
    sims = tmp_path / "sims"
    recursive_view(sims / "sim_a_recursive")
    write_mirofish(sims / "sim_b_good", seed=4)
    config = write_config(tmp_path, auto=False)
    db = tmp_path / "state" / "events.sqlite3"
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
    wait_until(lambda: _types(db, "simulation-sim_b_good").count("SimulationCompleted") == 1, "the good folder")
    wait_until(lambda: "IngestRejected" in _types(db, "simulation-sim_a_recursive"), "the bad folder's reason")
    recursive_view(sims / "sim_c_recursive")
    wait_until(lambda: "SimulationDiscovered" in _types(db, "simulation-sim_c_recursive"), "the new bad folder")
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=TIMEOUT) == 0
    assert os.path.exists(db)


def _types(db: Path, stream: str) -> list[str]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=TIMEOUT)
    try:
        return [t for (t,) in conn.execute("SELECT type FROM events WHERE stream = ? ORDER BY position", (stream,))]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def test_simulate_like_mirofish_writes_the_runners_folder(tmp_path: Path) -> None:
    """The CLI's `--like mirofish`: both databases, both action files, its truth; the seed posts appear in
    round 0 without ids and again later with them, as the runner writes them (run_parallel_simulation.py:1193)."""
    import subprocess

    from ..conftest import PYTHON

    folder = tmp_path / "sim_cli"
    done = subprocess.run([PYTHON, "-m", "simreportd", "simulate", str(folder), "--like", "mirofish", "--seed", "2"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    truth = json.loads((folder / "mirofish_truth.json").read_text(encoding="utf-8"))
    for platform in PLATFORMS:
        assert (folder / f"{platform}_simulation.db").exists()
        lines = [json.loads(raw) for raw in (folder / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines()]
        seeds = [x for x in lines if x.get("round") == 0 and x.get("action_type") == "CREATE_POST"]
        copies = [x for x in lines if x.get("round", 0) > 0 and x.get("action_type") == "CREATE_POST"
                  and x["action_args"]["content"] in {s["action_args"]["content"] for s in seeds}]
        assert all("post_id" not in s["action_args"] for s in seeds) and len(copies) >= len(seeds)
        assert len([x for x in lines if "action_type" in x]) > len(truth["platforms"][platform]["actions"])


async def test_an_offline_report_on_a_chinese_run_answers_each_question_with_a_statement_it_found(
        tmp_path: Path) -> None:
    """A MiroFish run where every profile is one camp: the answer to "how do students see it" cannot rest on
    camps or shifts; it quotes what the search for that question found, so the report meets the citation rule
    instead of ending degraded with "cites 0 quotes" (as it did)."""
    from simreportd.daemon.cli.local import generate
    from simreportd.daemon.service import Daemon

    folder = tmp_path / "sims" / "sim_zh"
    write_mirofish(folder, seed=7)
    async with Daemon(make_config(tmp_path, reports={"auto": False}), folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        state = await generate(daemon, await daemon.reports.request("sim_zh"))
    assert state.verdict is not None and state.verdict.status == "completed", state.verdict
    answers = state.completed[max(state.completed)].content
    quoted = re.findall(r'> "(.+?)" \((post:\w+:\d+)\)', answers)
    lines = [json.loads(line) for p in PLATFORMS for line in (folder / p / "actions.jsonl").read_text().splitlines()]
    said = {a["action_args"].get(k) for a in lines if a.get("action_args") for k in ("content", "quote_content")}
    assert quoted and all(text in said for text, _ in quoted), answers
