"""The pure folds, each on its own in memory: the read models.

No store, no runner, no daemon: events in, rows or frames out (projections/projection.py promises this).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.events import MemoryEventStore
from simreportd.events.codec import Recorded, encode
from simreportd.events.models import (
    AgentActed,
    DomainEvent,
    LLMRequested,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    PlatformFinished,
    PlatformStarted,
    ReportCompleted,
    ReportFailed,
    ReportRequested,
    ReportResumed,
    RoundStarted,
    SectionCompleted,
    SectionStarted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
    acted_fields,
)
from simreportd.projections import bookkeeping, report_queries, runner, simulation_queries
from simreportd.projections.catalogue import projections
from simreportd.projections.chart import activity_chart, activity_rows, activity_svg
from simreportd.projections.projection import Projection, index_names, index_statement
from simreportd.projections.report import ReportView
from simreportd.projections.simulation import SimulationModel
from simreportd.projections.sqlite import reading
from simreportd.projections.standing import progress_for
from simreportd.projections.trace import TraceView

SIM = {"simulation_id": "s", "generation": 1}
RUN: list[DomainEvent] = [
    SimulationDiscovered(**SIM, folder="/x", requirement="q", agents=[
        {"agent_id": 1, "name": "Ann", "stance": "supportive"}, {"agent_id": 2, "name": "Bob", "stance": "opposing"}]),
    PlatformStarted(**SIM, platform="twitter", agents_count=2),
    RoundStarted(**SIM, platform="twitter", round=1),
    AgentActed(**SIM, platform="twitter", round=1, agent_id=1, agent_name="Ann", action_type="CREATE_POST",
               action_args={"content": "Buses first", "post_id": 7}),
    AgentActed(**SIM, platform="twitter", round=1, agent_id=2, agent_name="Bob", action_type="LIKE_POST",
               action_args={"post_id": 7, "post_author_name": "Ann"}),
    AgentActed(**SIM, platform="twitter", round=2, agent_id=2, agent_name="Bob", action_type="FOLLOW",
               action_args={"target_user_name": "Ann"}),
    PlatformFinished(**SIM, platform="twitter", total_rounds=2, all_rounds_ran=True),
    SimulationCompleted(**SIM, all_rounds_ran=True, platforms=["twitter"]),
]
R = {"report_id": "r1"}
WRITING: list[DomainEvent] = [
    ReportRequested(**R, **SIM),
    PlanningStarted(**R),
    OutlinePlanned(**R, title="T", summary="S", sections=[OutlineSection(title="One"), OutlineSection(title="Two")]),
    SectionStarted(**R, section_index=1, title="One"),
    LLMRequested(**R, call_id="llm-1", purpose="section", section_index=1, model="m", fingerprint="f" * 64,
                 messages_added=[{"role": "user", "content": "write"}]),
    SectionCompleted(**R, section_index=1, title="One", content="first"),
    ReportFailed(**R, stage="section", error="boom"),
]


def recorded(events: list[DomainEvent], stream: str) -> list[Recorded]:
    return [Recorded(i, stream, i, e.type_name, e.SCHEMA_VERSION, f"id-{i}", "2026-01-01T00:00:00Z", encode(e))
            for i, e in enumerate(events, 1)]


def fold(projection: Projection, events: list[DomainEvent], stream: str) -> sqlite3.Connection:
    """Fold into a database with every read model's tables, as the views file has (the report view's queries
    join the simulation model's)."""
    conn = sqlite3.connect(":memory:")
    for each in projections():
        conn.executescript(each.schema)
    for r in recorded(events, stream):
        if r.type in projection.types:
            for sql, params in projection.apply(r):
                conn.execute(sql, params)
    return conn


def test_the_simulation_model_counts_posts_reactions_and_follows() -> None:
    conn = fold(SimulationModel(), RUN, "simulation-s")
    [generation] = simulation_queries.simulations(conn)
    assert (generation["status"], generation["actions"], generation["platforms"]) == ("completed", 3, {"twitter": "finished"})
    assert simulation_queries.rounds(conn, ("s", 1)) == [("twitter", 1, 2), ("twitter", 2, 1)]
    assert simulation_queries.agents_by_activity(conn, ("s", 1)) == [2, 1]
    assert simulation_queries.latest_statements(conn, ("s", 1), 1) == [
        {"ref": "post:twitter:7", "content": "Buses first", "round": 1}]
    edges = conn.execute("SELECT kind, src_agent, dst_agent FROM sim_edges ORDER BY kind").fetchall()
    assert edges == [("follow", 2, 1), ("like", 2, 1)]


def test_a_runs_chart_is_made_again_when_its_counts_change_and_kept_while_they_do_not() -> None:
    def chart_after(events: list[DomainEvent]) -> tuple[str, str]:
        conn = fold(SimulationModel(), events, "simulation-s")
        made = activity_svg(activity_rows(conn, "s", 1), "Actions per round: s")
        return activity_chart(conn, "s", 1), made

    early, early_made = chart_after(RUN[:4])
    later, later_made = chart_after(RUN)
    assert (early, later) == (early_made, later_made) and early != later
    assert chart_after(RUN[:4])[0] is early  # the same counts: the chart made before


def test_a_word_finds_its_post_in_chinese_as_in_english() -> None:
    """Han characters are indexed one by one (Chinese has no spaces); ASCII text is indexed as it is."""
    posts = [AgentActed(**SIM, platform="twitter", round=1, agent_id=1, action_type="CREATE_POST",
                        action_args={"content": content, "post_id": n}) for n, content in
             enumerate(["学生们支持新的考试政策", "Students back the exam policy", "Café owners oppose it"], 1)]
    conn = fold(SimulationModel(), [RUN[0], *posts], "simulation-s")
    for word, ref in [("政策", "post:twitter:1"), ("exam", "post:twitter:2"), ("cafe", "post:twitter:3")]:
        assert [post["ref"] for post in simulation_queries.search(conn, ("s", 1), word, 5, None)] == [ref]


def test_an_unfollow_by_the_followees_id_undoes_the_follow_of_that_agent() -> None:
    def acted(kind: str, followee: int) -> AgentActed:
        return AgentActed(simulation_id="s", generation=1, platform="twitter", round=1, agent_id=2, action_type=kind,
                          action_args={"followee_id": followee})  # OASIS's follow: the target by id, no name

    conn = fold(SimulationModel(), [RUN[0], acted("FOLLOW", 5), acted("FOLLOW", 6), acted("UNFOLLOW", 5)],
                "simulation-s")
    assert conn.execute("SELECT dst_agent, undone FROM sim_edges ORDER BY dst_agent").fetchall() == [(5, 1), (6, 0)]
    assert conn.execute("SELECT dst_agent, count, undone FROM sim_links ORDER BY dst_agent").fetchall() == [
        (5, 1, 1), (6, 1, 0)]


def test_a_new_generation_of_the_same_simulation_is_kept_apart() -> None:
    conn = fold(SimulationModel(), [*RUN, SimulationGenerationStarted(simulation_id="s", generation=2, folder="/x",
                                                                       reason="restart")], "simulation-s")
    assert [g["generation"] for g in simulation_queries.simulations(conn)] == [1, 2]
    assert simulation_queries.latest_generation(conn, "s") == (2, "/x")
    assert simulation_queries.rounds(conn, ("s", 2)) == []


def test_the_report_view_follows_status_and_progress_through_failure_and_resume() -> None:
    view = ReportView()
    conn = fold(view, WRITING, "report-r1")
    failed = report_queries.report_row(conn, "r1")
    assert failed is not None
    assert (failed["status"], failed["progress"], failed["llm_calls"]) == ("failed", progress_for(1, 2), 1)
    more: list[DomainEvent] = [ReportResumed(**R), SectionCompleted(**R, section_index=2, title="Two", content="2nd"),
                               ReportCompleted(**R, title="T", sections_total=2, status="completed_degraded",
                                               problems=["section 2: 0 tool call(s)"])]
    conn = fold(view, [*WRITING, *more], "report-r1")
    done = report_queries.report_row(conn, "r1")
    assert done is not None and (done["status"], done["progress"], done["error"]) == ("completed_degraded", 100, None)
    assert [s["status"] for s in report_queries.sections(conn, "r1")] == ["completed", "completed"]
    assert [r["report_id"] for r in report_queries.reports(conn)] == ["r1"]
    assert report_queries.report_ids(conn, completed_only=True) == ["r1"]


def test_the_trace_numbers_iterations_by_llm_request() -> None:
    conn = fold(TraceView(), WRITING, "report-r1")
    steps = report_queries.trace_steps(conn, "r1")
    assert [(s["kind"], s["section_index"], s["iteration"]) for s in steps] == [
        ("planning", 0, 0), ("outline", 0, 0), ("section", 1, 0), ("llm_request", 1, 1), ("final_answer", 1, 1),
        ("failed", 1, 1)]


def table_rows(conn: sqlite3.Connection, projection: Projection) -> dict[str, list[Any]]:
    """Every row of every table, sorted: what `rebuild`'s digests compare."""
    return {table: sorted(conn.execute(f"SELECT * FROM {table}"), key=repr)  # noqa: S608
            for table in (*projection.tables, "sim_posts_fts")}


def with_undos(events: list[Recorded]) -> list[Recorded]:
    """The run's events with an undo after some follows, likes and reposts (each the kind of write a batch must not reorder)."""
    out, undos = [], {"FOLLOW": "UNFOLLOW", "LIKE_POST": "UNLIKE_POST", "REPOST": "UNDO_REPOST"}
    for r in events:
        out.append(r)
        if r.type == "AgentActed" and r.data["action_type"] in undos and r.position % 2 == 0:
            undo = AgentActed(**{**acted_fields(r.data, r.stream), "action_type": undos[r.data["action_type"]]})
            out.append(Recorded(0, r.stream, 0, undo.type_name, undo.SCHEMA_VERSION, "u", r.recorded_at, encode(undo)))
    return [Recorded(i, r.stream, i, r.type, r.schema_version, r.event_id, r.recorded_at, r.raw_data)
            for i, r in enumerate(out, 1)]


@pytest.mark.anyio
@pytest.mark.parametrize("size", [1, 7, 500, 100_000])
async def test_a_batch_folds_to_the_rows_each_event_folded_alone_gives(small_sim: Path, tmp_path: Path,
                                                                       size: int) -> None:
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        events = with_undos(await store.read_all(0, 100_000))
    model = SimulationModel()
    assert sum(r.type == "AgentActed" and r.data["action_type"].startswith("UN") for r in events) >= 3
    one_by_one, batched = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one_by_one, batched):
        conn.executescript(model.schema)
    mine = [r for r in events if r.type in model.types]
    for r in mine:
        for sql, params in model.apply(r):
            one_by_one.execute(sql, params)
    for start in range(0, len(mine), size):
        runner._execute(batched, model.apply_batch(mine[start:start + size]))
    assert table_rows(batched, model) == table_rows(one_by_one, model)
    assert one_by_one.execute("SELECT sum(undone) FROM sim_edges").fetchone()[0] >= 3


def indexes(path: Path) -> set[str]:
    with reading(path) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


@pytest.mark.anyio
async def test_indexes_only_queries_use_are_built_once_a_fold_from_empty_has_caught_up_even_after_a_restart(
        small_sim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deferred = set(SimulationModel.deferred_indexes)
    monkeypatch.setattr(runner, "PAGE", 50)
    monkeypatch.setattr(runner, "GROUP_PAGES", 1)
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        views = tmp_path / "views.sqlite3"
        async with runner.ProjectionRunner(store, views, projections()) as first:
            assert not deferred & indexes(views)  # folding from empty: left out
            await first._fold_pages(await store.read_rows(0, 50))  # stopped after one page, as by a kill
            assert first.position == 50 and not deferred & indexes(views)
        async with runner.ProjectionRunner(store, views, projections()) as restarted:
            await restarted.catch_up()
            assert deferred <= indexes(views)
            resumed = await restarted.digest()
        async with runner.ProjectionRunner(store, tmp_path / "whole.sqlite3", projections()) as whole:
            await whole.catch_up()
            assert resumed == await whole.digest()
    with reading(views) as conn:  # the tools' query plans use them again
        plan = " ".join(r[3] for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM sim_posts WHERE simulation_id = ? AND generation = ? AND agent_id = ?",
            ("sim_small", 1, 3)))
    assert "sim_posts_by_agent" in plan


@pytest.mark.anyio
async def test_a_read_model_whose_schema_only_changed_its_indexes_gets_todays_without_a_new_fold(
        small_sim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of an earlier schema whose tables are today's (an edges index without the followee, no follows'
    index) is brought to today's indexes at open, its rows kept: folding a big log again would take minutes."""
    earlier = "an earlier schema's fingerprint"
    monkeypatch.setattr(bookkeeping, "INDEX_ONLY_UPGRADES", frozenset({earlier}))
    views = tmp_path / "views.sqlite3"
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        async with runner.ProjectionRunner(store, views, projections()) as first:
            await first.catch_up()
            folded, digest = first.position, await first.digest()
        conn = sqlite3.connect(views)  # as that schema left it
        conn.executescript("DROP INDEX sim_links_follows; DROP INDEX sim_edges_by_src;"
                           " CREATE INDEX sim_edges_by_src ON sim_edges (simulation_id, generation, src_agent, kind);")
        conn.execute("UPDATE projection_schema SET fingerprint = ?", (earlier,))
        conn.commit()
        conn.close()
        async with runner.ProjectionRunner(store, views, projections()) as reopened:
            assert reopened.position == folded  # not folded again: a new fold starts from 0
            assert await reopened.digest() == digest
            schema_sql = {name: bookkeeping.normal(index_statement(p.schema, name))
                          for p in projections() for name in index_names(p.schema)}
    with reading(views) as conn:
        made = {name: bookkeeping.normal(sql) for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
        assert made == schema_sql
        assert conn.execute("SELECT fingerprint FROM projection_schema").fetchone()[0] == reopened.fingerprint


def test_every_deferred_index_is_one_its_schema_creates() -> None:
    for projection in projections():
        for name in projection.deferred_indexes:
            assert f" {name} ON " in index_statement(projection.schema, name)
    with pytest.raises(ValueError, match="no index 'sim_nowhere'"):
        index_statement(SimulationModel.schema, "sim_nowhere")


ACTIONS = st.sampled_from(["CREATE_POST", "QUOTE_POST", "CREATE_COMMENT", "LIKE_POST", "DISLIKE_POST", "REPOST",
                           "LIKE_COMMENT", "FOLLOW", "MUTE", "UNFOLLOW", "UNLIKE_POST", "UNDO_REPOST", "UNMUTE"])
NAMES = ["Ada", "Bo", ""]


@st.composite
def an_action(draw: st.DrawFn) -> DomainEvent:
    """An action on a few agents and post ids, so that targets are often missing, repeated, or created later."""
    kind, post, other = draw(ACTIONS), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    name = draw(st.sampled_from(NAMES))
    args = {"content": f"text {post}", "post_id": post, "new_post_id": other, "quoted_id": post, "comment_id": other,
            "post_author_name": name, "original_author_name": name, "target_user_name": name,
            "comment_author_name": name, **({"agent_id": other} if draw(st.booleans()) else {})}
    return AgentActed(simulation_id="p", generation=draw(st.sampled_from([1, 1, 1, 2])), platform="twitter",
                      round=draw(st.integers(0, 2)), agent_id=draw(st.integers(0, 1)),
                      agent_name=NAMES[draw(st.integers(0, 1))], action_type=kind, action_args=args)


@settings(max_examples=300, deadline=None)
@given(st.lists(an_action(), max_size=40), st.integers(1, 12))
def test_any_actions_fold_in_batches_to_the_rows_one_by_one_gives(actions: list[DomainEvent], size: int) -> None:
    agents = [{"agent_id": i, "name": n, "stance": "supportive"} for i, n in enumerate(NAMES[:2])]
    starts = [SimulationDiscovered(simulation_id="p", generation=g, folder="/p", agents=agents) for g in (1, 2)]
    model = SimulationModel()
    events = recorded([*starts, *actions], "simulation-p")
    one_by_one, batched = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one_by_one, batched):
        conn.executescript(model.schema)
    for r in events:
        runner._execute(one_by_one, model.apply(r))
    for start in range(0, len(events), size):
        runner._execute(batched, model.apply_batch(events[start:start + size]))
    assert table_rows(batched, model) == table_rows(one_by_one, model)


def test_a_page_of_rows_folds_as_its_events_one_by_one_even_with_a_text_only_pythons_parser_reads() -> None:
    """The runner's path (`apply_rows` of plain rows, their data decoded a page at once): a lone surrogate escape,
    which pydantic-core's parser refuses, sends the page to the parser `Recorded.data` falls back to."""
    model = SimulationModel()
    events = recorded([*RUN[:3], AgentActed(**SIM, platform="twitter", round=1, agent_id=2, agent_name="Bob",
                                            action_type="CREATE_POST", action_args={"content": "LONE", "post_id": 8}),
                       *RUN[3:]], "simulation-s")
    rows = [(r.position, r.stream, r.version, r.type, r.schema_version, r.event_id, r.recorded_at,
             r.raw_data.replace('"Bob","action_type":"CREATE_POST"', '"\\ud800","action_type":"CREATE_POST"'), "{}")
            for r in events]  # in a field the fold does not store: SQLite takes no lone surrogate
    assert sum("\\ud800" in row[7] for row in rows) == 1
    one_by_one, paged = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one_by_one, paged):
        conn.executescript(model.schema)
    for row in rows:
        runner._execute(one_by_one, model.apply(Recorded(*row)))
    runner._execute_runs(paged, model.apply_rows(rows))
    assert table_rows(paged, model) == table_rows(one_by_one, model)
    assert paged.execute("SELECT count(*) FROM sim_posts WHERE content = 'LONE'").fetchone()[0] == 1
