"""Reads of the report and trace views (their tables are in report.py and trace.py): one function per question.

The HTTP API, the CLI, interviews and the exporter ask here, so a change of those tables touches
this module and the folds, nothing else.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .runner import rows_as_dicts

COMPLETED = ("completed", "completed_degraded")


def reports(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every report's summary, oldest first."""
    return rows_as_dicts(conn.execute(
        "SELECT report_id, simulation_id, generation, status, progress, title, sections_total, completed_sections,"
        " interview_unlocked, created_at, completed_at, error, provider, model, partial, problems FROM reports"
        " ORDER BY created_at, report_id"))


def report_ids(conn: sqlite3.Connection, completed_only: bool = False) -> list[str]:
    """Report ids, oldest first; with `completed_only`, those that completed (degraded or not)."""
    sql = "SELECT report_id, status FROM reports ORDER BY created_at, report_id"
    return [r[0] for r in conn.execute(sql) if not completed_only or r[1] in COMPLETED]


def latest_report(conn: sqlite3.Connection, simulation_id: str) -> dict[str, Any] | None:
    """The simulation's newest report: report_id, status, interview_unlocked; None if it has none."""
    found = rows_as_dicts(conn.execute(
        "SELECT report_id, status, interview_unlocked FROM reports WHERE simulation_id = ?"
        " ORDER BY created_at DESC, report_id DESC LIMIT 1", (simulation_id,)))
    return found[0] if found else None


def report_row(conn: sqlite3.Connection, report_id: str) -> dict[str, Any] | None:
    found = rows_as_dicts(conn.execute("SELECT * FROM reports WHERE report_id = ?", (report_id,)))
    return found[0] if found else None


def sections(conn: sqlite3.Connection, report_id: str) -> list[dict[str, Any]]:
    return rows_as_dicts(conn.execute(
        "SELECT * FROM report_sections WHERE report_id = ? ORDER BY section_index", (report_id,)))


def agent_log(conn: sqlite3.Connection, report_id: str, from_line: int = 0) -> list[str]:
    """The report's agent_log.jsonl lines (JSON text) from `from_line` on."""
    return [r[0] for r in conn.execute(
        "SELECT line FROM agent_log WHERE report_id = ? AND line_no >= ? ORDER BY line_no", (report_id, from_line))]


def agent_log_length(conn: sqlite3.Connection, report_id: str) -> int:
    return int(conn.execute("SELECT count(*) FROM agent_log WHERE report_id = ?", (report_id,)).fetchone()[0])


def counts_by_status(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT status, count(*) FROM reports GROUP BY status").fetchall())


def totals(conn: sqlite3.Connection) -> tuple[int, int, int, int]:
    """LLM calls, tool calls, prompt tokens and completion tokens over every report."""
    llm, tools, prompt, completion = conn.execute(
        "SELECT coalesce(sum(llm_calls), 0), coalesce(sum(tool_calls), 0), coalesce(sum(prompt_tokens), 0),"
        " coalesce(sum(completion_tokens), 0) FROM reports").fetchone()
    return int(llm), int(tools), int(prompt), int(completion)


def trace_steps(conn: sqlite3.Connection, report_id: str) -> list[dict[str, Any]]:
    """Every step of the report's trace, in log order."""
    return rows_as_dicts(conn.execute("SELECT * FROM trace_steps WHERE report_id = ? ORDER BY position",
                                      (report_id,)))
