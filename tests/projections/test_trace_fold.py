"""A trace step's iteration is counted by a seek on its report's section, not a scan of the report's steps.

Without the index every step of a report scanned every earlier step (a report of 10,000 steps folded in
5.7 s of CPU, 1.2 s with it): the fold child of a long report, or of bench/notify.py's one report stream,
took the CPU the daemon's websocket clients were waiting for.
"""

from __future__ import annotations

import sqlite3

from simreportd.events.codec import Recorded, encode
from simreportd.events.models import PlanningStarted
from simreportd.projections.trace import TraceView


def test_a_step_is_numbered_by_a_seek_on_its_reports_section() -> None:
    view, conn = TraceView(), sqlite3.connect(":memory:")
    conn.executescript(view.schema)
    event = PlanningStarted(report_id="r")
    [(sql, params)] = view.apply(Recorded(1, "report-r", 1, event.type_name, event.SCHEMA_VERSION, "e", "t",
                                          encode(event)))
    plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "USING COVERING INDEX trace_by_section (report_id=? AND section_index=? AND kind=?)" in plan, plan
