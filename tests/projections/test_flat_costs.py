"""No fold step grows with the length of a stream: a report's log lines are numbered by a seek, not a count.

Cost is counted in SQLite virtual-machine steps (a progress handler called every step), which
depend on the work done and not on the machine's load, so the comparison is exact.
"""

from __future__ import annotations

import sqlite3

from simreportd.events.codec import Recorded, encode
from simreportd.events.models import DomainEvent, ReportRequested, ToolCalled, ToolObserved
from simreportd.projections.catalogue import projections
from simreportd.projections.report import ReportView

R = {"report_id": "r1"}


def steps_to_fold(view: ReportView, conn: sqlite3.Connection, events: list[DomainEvent], first: int) -> int:
    """SQLite VM steps spent folding `events` (positions from `first`) into `conn`."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    for position, event in enumerate(events, first):
        recorded = Recorded(position, "report-r1", position, event.type_name, event.SCHEMA_VERSION, f"id-{position}",
                            "2026-01-01T00:00:00Z", encode(event))
        for sql, params in view.apply(recorded):
            conn.execute(sql, params)
    conn.set_progress_handler(None, 1)
    return steps


def tool_calls(start: int, n: int) -> list[DomainEvent]:
    events: list[DomainEvent] = []
    for i in range(start, start + n):
        events += [ToolCalled(**R, section_index=1, iteration=1, call_id=f"c{i}", tool="quick_search",
                              arguments={"query": f"q{i}"}),
                   ToolObserved(**R, section_index=1, call_id=f"c{i}", tool="quick_search", result='{"results": []}')]
    return events


def test_a_log_line_costs_the_same_at_the_thirty_two_thousandth_as_at_the_thousandth() -> None:
    view, conn = ReportView(), sqlite3.connect(":memory:")
    for projection in projections():
        conn.executescript(projection.schema)
    steps_to_fold(view, conn, [ReportRequested(**R, simulation_id="s", generation=1)], 1)
    steps_to_fold(view, conn, tool_calls(0, 500), 2)  # 1,000 events, 2,000 log lines (agent and console)
    early = steps_to_fold(view, conn, tool_calls(500, 100), 1002)
    steps_to_fold(view, conn, tool_calls(600, 15_400), 1202)  # to 32,000 events
    late = steps_to_fold(view, conn, tool_calls(16_000, 100), 32_002)
    lines = conn.execute("SELECT count(*) FROM agent_log WHERE report_id = 'r1'").fetchone()[0]
    assert lines == 1 + 2 * 16_100
    assert late < 1.25 * early, (early, late)
