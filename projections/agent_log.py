"""The report's agent_log.jsonl and console_log.txt, line by line, as MiroFish writes them (docs/formats.md#the-agent-log).

MiroFish's report panel is driven by these lines alone (`frontend/src/components/Step4Report.vue`
polls them): the outline appears from `planning_complete`'s `details.outline`, a section's text
from `section_complete`'s `details.content`, the tool panels from `tool_result`'s text. The
`details` keys and stage values follow `ReportLogger` in MiroFish's
`backend/app/services/report_agent.py`; the console lines follow `ReportConsoleLogger`'s
`[HH:MM:SS] LEVEL: message`. The messages are ours.

Part of the report view's fold: pure, one event in, SQL writes out. What an event does not
carry (its section's title, an answer's section and iteration) is filled in by the statement
from the view's own rows; the run's requirement, a fact of the simulation model, is joined in
when the log is read (`report_queries.agent_log`). A line's number is the next after the
report's last (a seek on the primary key, so no step grows with the length of the log).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from simreportd.events.codec import Recorded
from simreportd.events.models import (
    ContextGathered,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportRequested,
    ReportResumed,
    SectionCompleted,
    SectionStarted,
    ThoughtRecorded,
    ToolCalled,
    ToolFailed,
    ToolObserved,
)

from .mirofish_text import tool_text
from .projection import Write

SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_log (
    report_id TEXT, line_no INTEGER, position INTEGER, line TEXT, PRIMARY KEY (report_id, line_no));
CREATE TABLE IF NOT EXISTS console_log (
    report_id TEXT, line_no INTEGER, line TEXT, PRIMARY KEY (report_id, line_no));
CREATE TABLE IF NOT EXISTS report_calls (
    report_id TEXT, call_id TEXT, section_index INTEGER, iteration INTEGER, llm INTEGER,
    PRIMARY KEY (report_id, call_id));
"""
TABLES = ("agent_log", "console_log", "report_calls")
TYPES = frozenset({
    ReportRequested.TYPE, PlanningStarted.TYPE, ContextGathered.TYPE, OutlinePlanned.TYPE, SectionStarted.TYPE,
    LLMRequested.TYPE, LLMResponded.TYPE, LLMFailed.TYPE, ThoughtRecorded.TYPE, ToolCalled.TYPE,
    ToolObserved.TYPE, ToolFailed.TYPE, SectionCompleted.TYPE, ReportCompleted.TYPE, ReportFailed.TYPE,
    ReportResumed.TYPE})

# The next line number, the elapsed time since the report was asked for, and the section (the event's, or
# for an answer the one its request was for) with its title. ?1 report, ?2 position, ?3 line, ?4 time,
# ?5 the event's section, ?6 the call it answers.
_AGENT_LINE = (
    "INSERT INTO agent_log SELECT ?1, (SELECT coalesce(max(line_no) + 1, 0) FROM agent_log WHERE report_id = ?1), ?2,"
    " json_set(?3, '$.elapsed_seconds', round((julianday(?4) - julianday(r.created_at)) * 86400, 2),"
    " '$.section_index', c.s, '$.section_title',"
    " (SELECT title FROM report_sections WHERE report_id = ?1 AND section_index = c.s){extra})"
    " FROM reports r, (SELECT coalesce(?5, (SELECT section_index FROM report_calls WHERE report_id = ?1"
    " AND call_id = ?6)) AS s, (SELECT iteration FROM report_calls WHERE report_id = ?1 AND call_id = ?6) AS i) c"
    " WHERE r.report_id = ?1")
EXTRA = {
    "": "",
    "iteration": ", '$.details.iteration', coalesce(json_extract(?3, '$.details.iteration'), c.i)",
    "answer": ", '$.details.iteration', c.i, '$.details.has_final_answer',"
              " json(CASE WHEN c.s > 0 AND json_extract(?3, '$.details.has_final_answer') THEN 'true' ELSE 'false' END)",
    "elapsed": ", '$.details.total_time_seconds', round((julianday(?4) - julianday(r.created_at)) * 86400, 2)",
}
_CONSOLE_LINE = ("INSERT INTO console_log VALUES (?1, (SELECT coalesce(max(line_no) + 1, 0) FROM console_log"
                 " WHERE report_id = ?1), ?2)")


def log_writes(recorded: Recorded) -> Iterable[Write]:
    """The agent-log and console-log lines one report event stands for, and the calls it opens."""
    d, t = recorded.data, recorded.type
    rid = d["report_id"]
    if t == LLMRequested.TYPE:
        yield ("INSERT OR IGNORE INTO report_calls SELECT ?1, ?2, ?3, 1 + (SELECT count(*) FROM report_calls"
               " WHERE report_id = ?1 AND section_index = ?3 AND llm), 1", (rid, d["call_id"], d.get("section_index", 0)))
    elif t == ToolCalled.TYPE:
        yield ("INSERT OR IGNORE INTO report_calls VALUES (?, ?, ?, ?, 0)",
               (rid, d["call_id"], d["section_index"], d["iteration"]))
    for action, stage, details, extra in agent_lines(t, d):
        line = json.dumps({"timestamp": recorded.recorded_at, "elapsed_seconds": 0.0, "report_id": rid,
                           "action": action, "stage": stage, "section_title": None, "section_index": None,
                           "details": details}, ensure_ascii=False)
        yield (_AGENT_LINE.format(extra=EXTRA[extra]),
               (rid, recorded.position, line, recorded.recorded_at, d.get("section_index"), d.get("call_id")))
    for level, message in console_lines(t, d):
        yield _CONSOLE_LINE, (rid, f"[{recorded.recorded_at[11:19]}] {level}: {message}")


Line = tuple[str, str, dict[str, Any], str]  # action, stage, details, which context the statement adds


def agent_lines(t: str, d: dict[str, Any]) -> list[Line]:
    """The agent-log lines of one event: MiroFish's action, stage and `details` keys."""
    if t == ReportRequested.TYPE:
        return [("report_start", "pending", {"simulation_id": d["simulation_id"], "graph_id": "",
                                             "simulation_requirement": "", "message": "Report requested"}, "")]
    if t == PlanningStarted.TYPE:
        return [("planning_start", "planning", {"message": "Planning the outline"}, "")]
    if t == ContextGathered.TYPE:
        return [("planning_context", "planning", {"message": "Simulation context gathered", "context": d["context"]},
                 "")]
    if t == OutlinePlanned.TYPE:
        outline = {"title": d["title"], "summary": d["summary"],
                   "sections": [{"title": s["title"], "content": "", "subsections": []} for s in d["sections"]]}
        return [("planning_complete", "planning", {"message": f"Outline planned: {len(d['sections'])} sections",
                                                   "outline": outline}, "")]
    if t == SectionStarted.TYPE:
        return [("section_start", "generating", {"message": f"Writing section {d['section_index']}: {d['title']}"},
                 "")]
    if t == ThoughtRecorded.TYPE:
        return [("react_thought", "generating", {"iteration": d["iteration"], "thought": d["text"],
                                                 "message": f"Thought, iteration {d['iteration']}"}, "")]
    if t == ToolCalled.TYPE:
        return [("tool_call", "generating", {"iteration": d["iteration"], "tool_name": d["tool"],
                                             "parameters": d["arguments"], "message": f"Calling {d['tool']}"}, "")]
    return _later_lines(t, d)


def _later_lines(t: str, d: dict[str, Any]) -> list[Line]:
    if t == ToolObserved.TYPE:
        result = tool_text(d["tool"], d["result"])
        return [("tool_result", "generating", {"iteration": None, "tool_name": d["tool"], "result": result,
                                               "result_length": len(result),
                                               "message": f"{d['tool']} answered"}, "iteration")]
    if t == LLMResponded.TYPE:
        content, calls = d.get("content", ""), d.get("tool_calls", [])
        final = not calls and bool(content.strip())
        return [("llm_response", "generating", {"iteration": None, "response": content, "response_length": len(content),
                                                "has_tool_calls": bool(calls), "has_final_answer": final,
                                                "message": f"Model replied ({len(calls)} tool call(s))"}, "answer")]
    if t == SectionCompleted.TYPE:
        content = d["content"]
        return [("section_content", "generating", {"content": content, "content_length": len(content),
                                                   "tool_calls_count": d.get("tool_calls", 0), "is_subsection": False,
                                                   "message": f"Section {d['section_index']} written"}, ""),
                ("section_complete", "generating", {"content": content, "content_length": len(content),
                                                    "subsection_count": 0,
                                                    "message": f"Section {d['section_index']} complete"}, "")]
    if t == ReportCompleted.TYPE:
        return [("report_complete", "completed", {"total_sections": d["sections_total"], "total_time_seconds": 0.0,
                                                  "message": "Report completed", "quality": _quality(d)}, "elapsed")]
    if t == ReportFailed.TYPE:
        return [("error", "failed", {"error": d["error"], "message": f"Failed during {d['stage']}: {d['error']}",
                                     "resumable": d.get("resumable", True)}, "")]
    return []


def _quality(d: dict[str, Any]) -> str:
    return "degraded" if d.get("status") == "completed_degraded" else "ok"


def console_lines(t: str, d: dict[str, Any]) -> list[tuple[str, str]]:
    """The console-log lines of one event: (level, message)."""
    if t == ReportRequested.TYPE:
        return [("INFO", f"Report {d['report_id']} requested for simulation {d['simulation_id']} "
                         f"(generation {d['generation']}, writer {d.get('provider', '')} {d.get('model', '')})".rstrip())]
    if t == OutlinePlanned.TYPE:
        return [("INFO", f"Outline planned: {d['title']} ({len(d['sections'])} sections)")]
    if t == SectionStarted.TYPE:
        return [("INFO", f"Writing section {d['section_index']}: {d['title']}")]
    if t == ToolCalled.TYPE:
        return [("INFO", f"Tool call {d['tool']} {json.dumps(d['arguments'], ensure_ascii=False)}")]
    if t == ToolObserved.TYPE:
        return [("INFO", f"Tool {d['tool']} answered in {d.get('latency_ms', 0):.0f} ms ({len(d['result'])} characters)")]
    if t == ToolFailed.TYPE:
        return [("WARNING", f"Tool {d['tool']} failed: {d['error']}")]
    if t == LLMFailed.TYPE:
        level = "WARNING" if d.get("retryable", True) else "ERROR"
        return [(level, f"Model call failed ({d['kind']}, attempt {d['attempt']}): {d['message']}")]
    if t == SectionCompleted.TYPE:
        return [("INFO", f"Section {d['section_index']} complete: {d['title']} ({d.get('tool_calls', 0)} tool calls)")]
    if t == ReportCompleted.TYPE:
        problems = d.get("problems", [])
        return [("WARNING" if problems else "INFO",
                 f"Report completed: {d['sections_total']} sections" + (f"; problems: {'; '.join(problems)}"
                                                                        if problems else ""))]
    if t == ReportFailed.TYPE:
        return [("ERROR", f"Report failed during {d['stage']}: {d['error']}")]
    if t == ReportResumed.TYPE:
        return [("INFO", f"Report resumed ({d.get('reason', 'resume')})")]
    return []
