"""Where a report stands (projections/standing.py): one table of event histories, and what the rule, the
report view's columns and the websocket's frames say of each."""

from __future__ import annotations

import sqlite3

import pytest

from simreportd.daemon.server.protocol import notifications
from simreportd.events.codec import Recorded, encode
from simreportd.events.models import (
    DomainEvent,
    InterviewUnlocked,
    LLMRequested,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    SectionCompleted,
)
from simreportd.projections.catalogue import projections
from simreportd.projections.report import ReportView
from simreportd.projections.standing import Standing, standing_of

R = {"report_id": "r1"}
ASKED = ReportRequested(**R, simulation_id="s", generation=1)
PLANNING = PlanningStarted(**R)
PLANNED = OutlinePlanned(**R, title="T", summary="S", sections=[OutlineSection(title=t) for t in ("A", "B", "C")])
DONE = [SectionCompleted(**R, section_index=i, title=t, content="x") for i, t in ((1, "A"), (3, "C"), (2, "B"))]
FAILED = ReportFailed(**R, stage="section", error="boom")
RESUMED = ReportResumed(**R)
FORKED = ReportForked(**R, forked_from="r0", at=9, provider="offline", model="")
COMPLETED = ReportCompleted(**R, title="T", sections_total=3)
DEGRADED = ReportCompleted(**R, title="T", sections_total=3, status="completed_degraded", problems=["thin"])
UNLOCKED = InterviewUnlocked(**R, simulation_id="s", live_environment=False)

# history -> (status, progress, ended, outcome once its writer stopped)
TABLE: dict[str, tuple[list[DomainEvent], tuple[str, int, bool, str]]] = {
    "asked": ([ASKED], ("pending", 0, False, "interrupted")),
    "planning": ([ASKED, PLANNING], ("planning", 5, False, "interrupted")),
    "failed while planning": ([ASKED, PLANNING, FAILED], ("failed", 5, True, "failed")),
    "resumed while planning": ([ASKED, PLANNING, FAILED, RESUMED], ("planning", 5, False, "interrupted")),
    "planned": ([ASKED, PLANNING, PLANNED], ("generating", 10, False, "interrupted")),
    "one of three": ([ASKED, PLANNING, PLANNED, DONE[0]], ("generating", 38, False, "interrupted")),
    "out of order": ([ASKED, PLANNING, PLANNED, *DONE[:2]], ("generating", 66, False, "interrupted")),
    "failed mid-way": ([ASKED, PLANNING, PLANNED, DONE[0], FAILED], ("failed", 38, True, "failed")),
    "resumed mid-way": ([ASKED, PLANNING, PLANNED, DONE[0], FAILED, RESUMED], ("generating", 38, False, "interrupted")),
    "a fork of a failure": ([ASKED, PLANNING, PLANNED, FAILED, FORKED], ("generating", 10, False, "interrupted")),
    "all written": ([ASKED, PLANNING, PLANNED, *DONE], ("generating", 95, False, "interrupted")),
    "completed": ([ASKED, PLANNING, PLANNED, *DONE, COMPLETED], ("completed", 100, False, "completed")),
    "unlocked": ([ASKED, PLANNING, PLANNED, *DONE, COMPLETED, UNLOCKED], ("completed", 100, True, "completed")),
    "degraded": ([ASKED, PLANNING, PLANNED, *DONE, DEGRADED, UNLOCKED], ("completed_degraded", 100, True,
                                                                         "completed_degraded")),
    "failed to unlock": ([ASKED, PLANNING, PLANNED, *DONE, COMPLETED, FAILED], ("failed", 100, True, "failed")),
    "resumed to unlock": ([ASKED, PLANNING, PLANNED, *DONE, COMPLETED, FAILED, RESUMED], ("completed", 100, False,
                                                                                          "completed")),
}


def recorded(events: list[DomainEvent]) -> list[Recorded]:
    return [Recorded(i, "report-r1", i, e.type_name, e.SCHEMA_VERSION, f"id-{i}", "2026-01-01T00:00:00Z", encode(e))
            for i, e in enumerate(events, 1)]


def view_row(events: list[DomainEvent]) -> sqlite3.Row:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    for each in projections():
        conn.executescript(each.schema)
    view = ReportView()
    for r in recorded(events):
        if r.type in view.types:
            for sql, params in view.apply(r):
                conn.execute(sql, params)
    row: sqlite3.Row = conn.execute("SELECT * FROM reports WHERE report_id = 'r1'").fetchone()
    return row


@pytest.mark.parametrize("case", list(TABLE))
def test_a_report_stands_where_the_table_says_in_the_rule_the_view_and_the_frames(case: str) -> None:
    events, (status, progress, ended, outcome) = TABLE[case]
    standing = standing_of(events, "r1")
    assert (standing.status, standing.progress, standing.ended, standing.outcome(stopped=True)) == (
        status, progress, ended, outcome)
    assert standing.outcome(stopped=False) == (outcome if outcome != "interrupted" else "running")
    row = view_row(events)
    assert (row["status"], row["progress"]) == (status, progress)  # the view's SQL says the same rule
    before = standing_of(events[:-1], "r1")
    frames = notifications(recorded(events)[-1], before.after(events[-1]))
    said = [f for f in frames if f["type"] == "report_status"]
    if said:  # a frame's status is the view's, its progress MiroFish's (-1 once failed)
        assert said[0]["status"] == status
        assert said[0].get("progress", progress if status != "failed" else -1) == (
            progress if status != "failed" else -1)


def test_sections_done_of_total_count_completions_not_section_numbers() -> None:
    standing = standing_of([ASKED, PLANNED, DONE[1]], "r1")  # section 3 finished first (parallel sections)
    assert (standing.sections_done, standing.sections_total, standing.simulation_id) == (1, 3, "s")


def test_events_that_do_not_move_a_report_leave_its_standing_as_it_was() -> None:
    standing = standing_of([ASKED, PLANNING], "r1")
    assert standing.after(LLMRequested(**R, call_id="c", purpose="outline", model="m", fingerprint="f",
                                       messages_added=[])) is standing
    assert Standing().status == "pending" and not Standing().ended


def test_an_unfinished_report_is_described_from_the_same_rule() -> None:
    """The words every refusal uses (resume, chat, interviews) follow the standing, not a fold of their own."""
    assert "planning the outline" in standing_of([ASKED, PLANNING]).described()
    assert "(2 of 3 sections done;" in standing_of([ASKED, PLANNING, PLANNED, *DONE[:2]]).described()
    failed = standing_of([ASKED, PLANNING, PLANNED, FAILED]).described()
    assert failed == "failed during section (`simreportd resume r1` continues it)"
    assert "failed" not in standing_of([ASKED, PLANNING, PLANNED, FAILED, RESUMED]).described()
