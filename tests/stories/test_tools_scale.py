"""Report tools at scale: every query a report makes is bounded by an index or a counter.

A dense simulated run (tens of thousands of actions, dozens of reactions per post) gets
a whole offline report; the plans of the queries the tools and the fold run are pinned
with EXPLAIN QUERY PLAN, so a schema change cannot quietly bring back a full scan (the
quadratic engagement query this replaces took minutes on this folder).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.agent.offline.offline import OfflineProvider
from simreportd.agent.tools.camps import camps_from_sayings
from simreportd.agent.tools.simulation_tools import MAX_RESULT, SimulationTools, bounded_json
from simreportd.daemon.interviews.interviewer import Interviewer, questions
from simreportd.events.codec import Recorded
from simreportd.projections import runner
from simreportd.projections import sqlite as toolkit
from simreportd.projections.runner import views_path_for
from simreportd.projections.simulation import SimulationModel
from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, write_config

pytestmark = pytest.mark.anyio
TOPIC = "AI proctoring"  # the scenario simulate writes with this seed


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """A 200-agent, 160-round run and its offline report, written by `simreportd report --wait`."""
    root = tmp_path_factory.mktemp("dense")
    folder = root / "sims" / "sim_dense"
    simulate(folder, agents=200, rounds=160, seed=3)
    config = write_config(root, auto=False)
    result = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report", str(folder), "--wait"],
                            cwd=root, capture_output=True, text=True, timeout=TIMEOUT * 5)
    return root / "state" / "events.sqlite3", folder, result


def views(dense: tuple[Path, Path, Any]) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{views_path_for(dense[0])}?mode=ro", uri=True)


def test_the_report_on_a_dense_run_completes_with_small_tool_results(dense: tuple) -> None:
    store, _, result = dense
    assert result.returncode == 0, result.stderr[-2000:]
    conn = views(dense)
    actions = conn.execute("SELECT sum(actions) FROM sim_platforms").fetchone()[0]
    posts = conn.execute("SELECT count(*) FROM sim_posts WHERE kind IN ('post', 'quote')").fetchone()[0]
    edges = conn.execute("SELECT count(*) FROM sim_edges").fetchone()[0]
    assert actions > 15_000 and posts * edges > 40_000_000  # the old query visited every edge once per post
    events = sqlite3.connect(store)
    results = [json.loads(r[0])["result"] for r in events.execute(
        "SELECT data FROM events WHERE type = 'ToolObserved'")]
    assert len(results) >= 10 and max(len(r.encode()) for r in results) <= MAX_RESULT
    assert events.execute("SELECT count(*) FROM events WHERE type = 'ReportCompleted'").fetchone()[0] == 1


@pytest.fixture
def traced(dense: tuple, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement the read-model connections run, parameters filled in."""
    statements: list[str] = []
    connect = toolkit.connect_views

    def tracing(path: Path, readonly: bool = True) -> sqlite3.Connection:
        conn = connect(path, readonly)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(toolkit, "connect_views", tracing)
    return statements


def plan(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


ACTION_SIZED = ("sim_posts", "sim_edges")  # the tables that grow with the actions
# Known and left for its own issue: the camps of simulation_analytics read every statement of the run.
KNOWN_UNBOUNDED: tuple[str, ...] = ()  # statements that may read a whole run (none since the camps' tally)
KEY_ONLY = "(simulation_id=? AND generation=?)"


def unbounded(lines: list[str], sql: str) -> list[str]:
    """Plan steps that read a whole table, or every post or edge of the run without an index-ordered LIMIT.

    FTS matches, json_each lists, subquery results and a SELECT of constants are bounded by what drives them.
    """
    subqueries = {s.split()[1] for s in lines if s.startswith(("MATERIALIZE ", "CO-ROUTINE "))}
    steps = [s for s in lines if s.startswith("SCAN ") and "VIRTUAL TABLE" not in s and s != "SCAN CONSTANT ROW"
             and s.split()[1] not in subqueries and not s.startswith("SCAN (")]
    names = {*ACTION_SIZED, *(m[1] for m in re.findall(r"\b(sim_posts|sim_edges) (?:AS )?(\w+)", sql)
                               if m[1].upper() not in ("WHERE", "JOIN", "LEFT", "ON", "CROSS", "USING", "GROUP"))}
    whole_run = [s for s in lines if s.startswith("SEARCH ") and s.split()[1] in names and s.endswith(KEY_ONLY)]
    if any("TEMP B-TREE" in s or "CORRELATED" in s for s in lines) or "LIMIT" not in sql:
        steps += whole_run
    return steps


async def test_no_query_of_any_tool_scans_a_whole_table(dense: tuple, traced: list[str]) -> None:
    key = ("sim_dense", 1)
    path = views_path_for(dense[0])
    interviewer = Interviewer(None, path, OfflineProvider(), "", TIMEOUT)  # type: ignore[arg-type]
    tools = SimulationTools(path, interviewer)
    await tools.context(*key)
    for name, args in [("quick_search", {"query": TOPIC}), ("panorama_search", {"query": TOPIC}),
                       ("insight_forge", {"query": f"Why did {TOPIC} divide people, and who led?"}),
                       ("simulation_analytics", {}), ("interview_agents", {"interview_topic": TOPIC}),
                       ("agent_profile", {"agent": 3}), ("coalitions", {})]:
        await tools.run(name, args, *key)
    reads = [s for s in traced if s.startswith("SELECT") and "'main'." not in s  # not FTS5's own look-ups
             and not s.endswith(KNOWN_UNBOUNDED)]
    assert len(reads) > 20
    conn = views(dense)
    assert {s: unbounded(plan(conn, s), s) for s in reads if unbounded(plan(conn, s), s)} == {}


def test_the_queries_that_matter_use_their_indexes(dense: tuple, traced: list[str]) -> None:
    key = ("sim_dense", 1)
    tools = SimulationTools(views_path_for(dense[0]))
    tools._call_raw(tools.gather_context, {}, key)
    tools._call_raw(tools.insight_forge, {"query": TOPIC}, key)
    tools._call_raw(tools.coalitions, {}, key)  # it finds the camps first
    conn = views(dense)
    plans = {s: " | ".join(plan(conn, s)) for s in traced if s.startswith("SELECT")}
    engaged = next(p for s, p in plans.items() if "p.engagement DESC" in s)
    assert "USING INDEX sim_posts_by_engagement" in engaged and "TEMP B-TREE" not in engaged
    chains = next(p for s, p in plans.items() if "FROM sim_links" in s)
    assert "sim_links USING INDEX sqlite_autoindex_sim_links_1" in chains
    assert "sim_links USING INDEX sim_links_by_dst" in chains
    search = next(p for s, p in plans.items() if "bm25(sim_posts_fts)" in s)
    assert search.startswith("CO-ROUTINE ranked | SCAN sim_posts_fts VIRTUAL TABLE")  # ranked, then joined
    assert "SEARCH p USING INTEGER PRIMARY KEY" in search
    first_post = next(p for s, p in plans.items() if s.startswith("SELECT id FROM sim_posts"))
    assert "USING COVERING INDEX sim_posts_by_row" in first_post
    mutual = next(p for s, p in plans.items() if "JOIN sim_links back" in s)  # coalitions: 73 -> 29 ms at 1M
    assert mutual.startswith("SEARCH f USING INDEX sim_links_follows")
    formed = next(p for s, p in plans.items() if "min(e.round)" in s)  # 123 -> 10 ms at 1M
    assert "sim_edges_by_src (simulation_id=? AND generation=? AND src_agent=? AND kind=? AND dst_agent=?)" in formed
    said = next(p for s, p in plans.items() if "FROM sim_sayings" in s)  # the camps: the tally, not the statements
    assert said.startswith("SEARCH s USING INDEX sqlite_autoindex_sim_sayings_1 (simulation_id=? AND generation=?)")


def test_interviews_let_the_topic_match_drive(dense: tuple, traced: list[str]) -> None:
    interviewer = Interviewer(None, views_path_for(dense[0]), OfflineProvider(), "", TIMEOUT)  # type: ignore[arg-type]
    chosen = interviewer._choose("sim_dense", 1, TOPIC, 5)
    interviewer._persona_materials("sim_dense", 1, [chosen[0]["agent_id"]], questions(TOPIC)[0])
    conn = views(dense)
    matched = [plan(conn, s) for s in traced if "sim_posts_fts MATCH" in s and "count(*)" not in s.split("FROM")[0]]
    assert len(chosen) == 5 and len(matched) == 2
    for steps in matched:  # the match drives, each matching row found by its row id (the agents' in a subquery)
        steps = [s for s in steps if not s.startswith("CO-ROUTINE")]
        assert steps[0].startswith("SCAN sim_posts_fts VIRTUAL TABLE") and steps[1].startswith("SEARCH p USING INTEGER")


def test_the_fold_finds_edges_and_posts_by_index(dense: tuple) -> None:
    """The writes an edge and an undo make: each look-up is a SEARCH on an index."""
    conn = views(dense)
    model = SimulationModel()
    like = {"simulation_id": "sim_dense", "generation": 1, "platform": "twitter", "round": 3, "agent_id": 4,
            "action_type": "LIKE_POST", "action_args": {"post_id": 7, "post_author_name": "x"}}
    unlike = {**like, "action_type": "UNDO_LIKE_POST"}
    for data in (like, unlike):
        recorded = Recorded(10**9, "simulation-sim_dense", 1, "AgentActed", 1, "e", "", json.dumps(data))
        for sql, params in model.apply(recorded):
            assert unbounded(plan(conn, sql, params), sql) == [], sql


def test_the_quadratic_engagement_query_would_be_caught(dense: tuple) -> None:
    """What the plan checks above would say of the queries this module replaced."""
    old = ("SELECT p.ref, (SELECT count(*) FROM sim_edges e WHERE e.simulation_id = p.simulation_id AND"
           " e.generation = p.generation AND e.target_ref = p.ref) AS engagement FROM sim_posts p"
           " WHERE p.simulation_id = 'sim_dense' AND p.generation = 1 ORDER BY engagement DESC, p.id LIMIT 5")
    undone = "SELECT count(*) FROM sim_edges WHERE simulation_id = 'sim_dense' AND generation = 1 AND undone = 1"
    conn = views(dense)
    assert unbounded(plan(conn, old), old) and unbounded(plan(conn, undone), undone)


def test_a_result_too_big_loses_list_items_not_validity() -> None:
    result = {"query": "q", "results": [{"ref": f"post:twitter:{i}", "content": "x" * 300} for i in range(200)],
              "agents": [{"ref": f"agent:{i}"} for i in range(5)]}
    text = bounded_json(result, MAX_RESULT)
    data = json.loads(text)
    assert len(text.encode()) <= MAX_RESULT and 20 < len(data["results"]) < 200 and len(data["agents"]) == 5
    assert data["results"][0]["ref"] == "post:twitter:0" and "shortened" in data["truncated"]


def test_cutting_a_result_to_size_leaves_the_lists_it_was_given_whole() -> None:
    cached = [{"agent_id": i, "content": "x" * 300} for i in range(200)]  # as the camps a tool's cache keeps
    first = bounded_json({"stance_shifts": cached}, MAX_RESULT)
    assert len(cached) == 200 and "truncated" not in cached[0]
    assert bounded_json({"stance_shifts": cached}, MAX_RESULT) == first  # the same answer the next time


@pytest.mark.anyio
async def test_camps_are_kept_only_until_the_run_has_new_statements(tmp_path: Path) -> None:
    """The cached camps of a running simulation follow it: never older than what the tools can read."""
    from simreportd.daemon.service import Daemon

    from ..conftest import make_config
    from .test_first_hour import running_simulation

    sim, rest = running_simulation(tmp_path)
    async with Daemon(make_config(tmp_path), folders=[sim]) as daemon:
        async def analytics(tools: SimulationTools) -> dict[str, Any]:
            await daemon.watcher.rescan()
            await daemon.views.catch_up()
            return json.loads(await tools.run("simulation_analytics", {}, "sim_live", 1))

        tools = SimulationTools(daemon.views.path)
        early = await analytics(tools)
        for platform, lines in rest.items():
            with (sim / platform / "actions.jsonl").open("a", encoding="utf-8") as f:
                f.writelines(lines)
        late = await analytics(tools)
        fresh = await analytics(SimulationTools(daemon.views.path))
    assert late["total_actions"] > early["total_actions"]
    assert late["camps"] == fresh["camps"] != early["camps"]


async def test_arguments_a_tool_does_not_take_are_named_not_fatal(tmp_path: Path, small_sim: Path) -> None:
    """Weak models invent arguments (`rounds`, `platforms`); the tool answers and says what it did not use."""
    from simreportd.daemon.service import Daemon

    from ..conftest import make_config

    async with Daemon(make_config(tmp_path), folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        await daemon.views.catch_up()
        tools = SimulationTools(daemon.views.path)
        plain = json.loads(await tools.run("simulation_analytics", {}, small_sim.name, 1))
        invented = json.loads(await tools.run("simulation_analytics", {"rounds": 3, "_x": 1, "platforms": {}},
                                              small_sim.name, 1))
    assert invented.pop("ignored_arguments") == ["platforms", "rounds"]
    assert invented == plain and plain["total_actions"] > 0


async def test_a_batch_fold_builds_the_same_simulation_model_as_one_event_at_a_time(dense: tuple) -> None:
    """The runner folds batches with the counters summed; the rows must be those of event-by-event folding."""
    from simreportd.events import SQLiteEventStore

    model = SimulationModel()
    async with SQLiteEventStore(dense[0]) as store:
        events = [r for r in await store.read_all(0, 10_000_000) if r.type in model.types]
    one, batched = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one, batched):
        conn.executescript(model.schema)
    for recorded in events:
        for sql, params in model.apply(recorded):
            one.execute(sql, params)
    for start in range(0, len(events), 777):
        runner._execute(batched, model.apply_batch(events[start:start + 777]))

    def rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}"), key=repr) for t in model.tables}  # noqa: S608

    assert len(events) > 15_000 and rows(one) == rows(batched)
    word = one.execute("SELECT content FROM sim_posts WHERE kind = 'post' LIMIT 1").fetchone()[0].split()[0]
    search = "SELECT rowid FROM sim_posts_fts WHERE sim_posts_fts MATCH ? ORDER BY rowid"
    assert one.execute(search, (f'"{word}"',)).fetchall() == batched.execute(search, (f'"{word}"',)).fetchall() != []


async def test_camps_found_ahead_are_found_once_however_many_ask_at_once(tmp_path: Path, small_sim: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A report warms the camps while its outline is planned; sections asking meanwhile wait for that answer."""
    from simreportd.agent.tools import simulation_tools as tools_module
    from simreportd.daemon.service import Daemon

    from ..conftest import make_config

    found: list[int] = []

    def counted(rows: Iterable[tuple[Any, ...]], **grouping: Any) -> dict[str, Any]:
        sayings = list(rows)
        found.append(len(sayings))
        time.sleep(0.3)  # as slow as a big run: the others ask while this one is still finding
        return camps_from_sayings(sayings, **grouping)

    monkeypatch.setattr(tools_module, "camps_from_sayings", counted)
    async with Daemon(make_config(tmp_path), folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        await daemon.views.catch_up()
        tools = SimulationTools(daemon.views.path)
        results: list[dict[str, Any]] = []

        async def analytics() -> None:
            results.append(json.loads(await tools.run("simulation_analytics", {}, small_sim.name, 1)))

        async with anyio.create_task_group() as group:
            group.start_soon(tools.warm, small_sim.name, 1)
            for _ in range(3):
                group.start_soon(analytics)
    assert len(found) == 1 and found[0] > 0
    assert len(results) == 3 and results[0]["camps"] == results[1]["camps"] == results[2]["camps"]
