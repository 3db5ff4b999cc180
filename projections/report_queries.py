"""Reads of the report and trace views (their tables are in report.py and trace.py): one function per question.

The HTTP API, the CLI, interviews and the exporter ask here, so a change of those tables touches
this module and the folds, nothing else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from .sqlite import rows_as_dicts
from .standing import COMPLETED

SHOWN = "NOT deleted"  # a deleted report (ReportDeleted) is in no answer


FORCED = "-forced"  # ends the trigger of a report asked for with `force` although its run had one ("cli-forced")


def reports(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every report's summary, oldest first."""
    return rows_as_dicts(conn.execute(
        "SELECT report_id, simulation_id, generation, status, progress, title, sections_total, completed_sections,"
        " interview_unlocked, created_at, completed_at, error, provider, model, partial, problems, trigger,"
        " forked_from FROM reports"
        f" WHERE {SHOWN} ORDER BY created_at, report_id"))


def report_ids(conn: sqlite3.Connection, completed_only: bool = False) -> list[str]:
    """Report ids, oldest first; with `completed_only`, those that completed (degraded or not)."""
    sql = f"SELECT report_id, status FROM reports WHERE {SHOWN} ORDER BY created_at, report_id"
    return [r[0] for r in conn.execute(sql) if not completed_only or r[1] in COMPLETED]


def latest_report(conn: sqlite3.Connection, simulation_id: str, generation: int | None = None,
                  whole_run: bool = False) -> dict[str, Any] | None:
    """The simulation's (or one generation's) newest report, with `whole_run` not counting partial ones:
    report_id, status, interview_unlocked; None if it has none."""
    found = rows_as_dicts(conn.execute(
        f"SELECT report_id, status, interview_unlocked FROM reports WHERE simulation_id = ?1 AND {SHOWN}"
        " AND (?2 IS NULL OR generation = ?2) AND (NOT ?3 OR partial IS NULL)"
        " ORDER BY created_at DESC, report_id DESC LIMIT 1", (simulation_id, generation, whole_run)))
    return found[0] if found else None


def report_row(conn: sqlite3.Connection, report_id: str) -> dict[str, Any] | None:
    """The report's row with its run's requirement and graph id (from the simulation model); None if unknown
    or deleted."""
    found = rows_as_dicts(conn.execute(
        "SELECT r.*, coalesce(g.requirement, '') AS requirement,"
        " coalesce(json_extract(g.config, '$.graph_id'), '') AS graph_id FROM reports r"
        " LEFT JOIN sim_generations g ON g.simulation_id = r.simulation_id AND g.generation = r.generation"
        f" WHERE r.report_id = ? AND {SHOWN}", (report_id,)))
    return found[0] if found else None


def is_deleted(conn: sqlite3.Connection, report_id: str) -> bool:
    return conn.execute("SELECT 1 FROM reports WHERE report_id = ? AND deleted", (report_id,)).fetchone() is not None


def report_list(conn: sqlite3.Connection, simulation_id: str | None, limit: int) -> list[str]:
    """Ids of the newest reports first (of one simulation, if given), at most `limit`."""
    return [r[0] for r in conn.execute(
        f"SELECT report_id FROM reports WHERE {SHOWN} AND (?1 IS NULL OR simulation_id = ?1)"
        " ORDER BY created_at DESC, report_id DESC LIMIT ?2", (simulation_id, limit))]


def sections(conn: sqlite3.Connection, report_id: str) -> list[dict[str, Any]]:
    return rows_as_dicts(conn.execute(
        "SELECT * FROM report_sections WHERE report_id = ? ORDER BY section_index", (report_id,)))


def agent_log(conn: sqlite3.Connection, report_id: str, from_line: int = 0) -> list[str]:
    """The report's agent_log.jsonl lines (JSON text) from `from_line` on; the first (`report_start`) with the
    run's requirement and graph id, which the simulation model holds."""
    return list(agent_log_lines(conn, report_id, from_line))


def agent_log_lines(conn: sqlite3.Connection, report_id: str, from_line: int = 0) -> Iterator[str]:
    """`agent_log`, a line at a time as SQLite reads them (a caller may stop early: a page of a long log)."""
    return (r[0] for r in conn.execute(
        "SELECT CASE WHEN a.line_no = 0 THEN json_set(a.line, '$.details.simulation_requirement',"
        " coalesce(g.requirement, ''), '$.details.graph_id', coalesce(json_extract(g.config, '$.graph_id'), ''))"
        " ELSE a.line END FROM agent_log a JOIN reports r ON r.report_id = a.report_id"
        " LEFT JOIN sim_generations g ON g.simulation_id = r.simulation_id AND g.generation = r.generation"
        " WHERE a.report_id = ? AND a.line_no >= ? ORDER BY a.line_no", (report_id, from_line)))


def console_log(conn: sqlite3.Connection, report_id: str, from_line: int = 0) -> list[str]:
    """The report's console_log.txt lines from `from_line` on."""
    return list(console_log_lines(conn, report_id, from_line))


def console_log_lines(conn: sqlite3.Connection, report_id: str, from_line: int = 0) -> Iterator[str]:
    """`console_log`, a line at a time as SQLite reads them."""
    return (r[0] for r in conn.execute(
        "SELECT line FROM console_log WHERE report_id = ? AND line_no >= ? ORDER BY line_no", (report_id, from_line)))


def log_length(conn: sqlite3.Connection, table: str, report_id: str) -> int:
    """How many lines the report's agent log (`agent_log`) or console log (`console_log`) has."""
    statement = {"agent_log": "SELECT max(line_no) FROM agent_log WHERE report_id = ?",
                 "console_log": "SELECT max(line_no) FROM console_log WHERE report_id = ?"}[table]
    last = conn.execute(statement, (report_id,)).fetchone()[0]
    return 0 if last is None else int(last) + 1


def counts_by_status(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute(f"SELECT status, count(*) FROM reports WHERE {SHOWN} GROUP BY status").fetchall())


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


def trace(conn: sqlite3.Connection, report_id: str) -> dict[str, Any] | None:
    """The report's trace nested as sections > iterations > steps, each in log order; None if it has no step."""
    steps = trace_steps(conn, report_id)
    if not steps:
        return None
    sections: dict[int, dict[int, list[dict[str, Any]]]] = {}
    for step in steps:
        sections.setdefault(step["section_index"] or 0, {}).setdefault(step["iteration"] or 0, []).append(step)
    return {"report_id": report_id, "sections": [
        {"section_index": index, "iterations": [{"iteration": i, "steps": v} for i, v in sorted(iterations.items())]}
        for index, iterations in sorted(sections.items())]}
