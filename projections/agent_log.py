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
    ReportEvent,
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
    event = recorded.event
    assert isinstance(event, ReportEvent)  # the report view folds the report stream's events only
    rid = event.report_id
    if isinstance(event, LLMRequested):
        yield ("INSERT OR IGNORE INTO report_calls SELECT ?1, ?2, ?3, 1 + (SELECT count(*) FROM report_calls"
               " WHERE report_id = ?1 AND section_index = ?3 AND llm), 1", (rid, event.call_id, event.section_index))
    elif isinstance(event, ToolCalled):
        yield ("INSERT OR IGNORE INTO report_calls VALUES (?, ?, ?, ?, 0)",
               (rid, event.call_id, event.section_index, event.iteration))
    for action, stage, details, extra in agent_lines(event):
        line = json.dumps({"timestamp": recorded.recorded_at, "elapsed_seconds": 0.0, "report_id": rid,
                           "action": action, "stage": stage, "section_title": None, "section_index": None,
                           "details": details}, ensure_ascii=False)
        yield (_AGENT_LINE.format(extra=EXTRA[extra]),
               (rid, recorded.position, line, recorded.recorded_at, getattr(event, "section_index", None),
                getattr(event, "call_id", None)))
    for level, message in console_lines(event):
        yield _CONSOLE_LINE, (rid, f"[{recorded.recorded_at[11:19]}] {level}: {message}")


Line = tuple[str, str, dict[str, Any], str]  # action, stage, details, which context the statement adds


def agent_lines(event: ReportEvent) -> list[Line]:
    """The agent-log lines of one event: MiroFish's action, stage and `details` keys."""
    match event:
        case ReportRequested():
            return [("report_start", "pending", {"simulation_id": event.simulation_id, "graph_id": "",
                                                 "simulation_requirement": "", "message": "Report requested"}, "")]
        case PlanningStarted():
            return [("planning_start", "planning", {"message": "Planning the outline"}, "")]
        case ContextGathered():
            return [("planning_context", "planning", {"message": "Simulation context gathered",
                                                      "context": event.context}, "")]
        case OutlinePlanned():
            outline = {"title": event.title, "summary": event.summary,
                       "sections": [{"title": s.title, "content": "", "subsections": []} for s in event.sections]}
            return [("planning_complete", "planning", {"message": f"Outline planned: {len(event.sections)} sections",
                                                       "outline": outline}, "")]
        case SectionStarted():
            return [("section_start", "generating",
                     {"message": f"Writing section {event.section_index}: {event.title}"}, "")]
        case ThoughtRecorded():
            return [("react_thought", "generating", {"iteration": event.iteration, "thought": event.text,
                                                     "message": f"Thought, iteration {event.iteration}"}, "")]
        case ToolCalled():
            return [("tool_call", "generating", {"iteration": event.iteration, "tool_name": event.tool,
                                                 "parameters": event.arguments, "message": f"Calling {event.tool}"},
                     "")]
    return _later_lines(event)


def _later_lines(event: ReportEvent) -> list[Line]:
    match event:
        case ToolObserved():
            result = tool_text(event.tool, event.result)
            return [("tool_result", "generating", {"iteration": None, "tool_name": event.tool, "result": result,
                                                   "result_length": len(result),
                                                   "message": f"{event.tool} answered"}, "iteration")]
        case LLMResponded():
            content, calls = event.content, event.tool_calls
            final = not calls and bool(content.strip())
            return [("llm_response", "generating", {"iteration": None, "response": content,
                                                    "response_length": len(content), "has_tool_calls": bool(calls),
                                                    "has_final_answer": final,
                                                    "message": f"Model replied ({len(calls)} tool call(s))"}, "answer")]
        case SectionCompleted():
            return _section_lines(event)
        case ReportCompleted():
            quality = "degraded" if event.status == "completed_degraded" else "ok"
            return [("report_complete", "completed", {"total_sections": event.sections_total,
                                                      "total_time_seconds": 0.0, "message": "Report completed",
                                                      "quality": quality}, "elapsed")]
        case ReportFailed():
            return [("error", "failed", {"error": event.error, "message": f"Failed during {event.stage}: {event.error}",
                                         "resumable": event.resumable}, "")]
    return []


def _section_lines(event: SectionCompleted) -> list[Line]:
    content = event.content
    return [("section_content", "generating", {"content": content, "content_length": len(content),
                                               "tool_calls_count": event.tool_calls, "is_subsection": False,
                                               "message": f"Section {event.section_index} written"}, ""),
            ("section_complete", "generating", {"content": content, "content_length": len(content),
                                                "subsection_count": 0,
                                                "message": f"Section {event.section_index} complete"}, "")]


def console_lines(event: ReportEvent) -> list[tuple[str, str]]:
    """The console-log lines of one event: (level, message)."""
    match event:
        case ReportRequested():
            return [("INFO", f"Report {event.report_id} requested for simulation {event.simulation_id} "
                             f"(generation {event.generation}, writer {event.provider} {event.model})".rstrip())]
        case OutlinePlanned():
            return [("INFO", f"Outline planned: {event.title} ({len(event.sections)} sections)")]
        case SectionStarted():
            return [("INFO", f"Writing section {event.section_index}: {event.title}")]
        case ToolCalled():
            return [("INFO", f"Tool call {event.tool} {json.dumps(event.arguments, ensure_ascii=False)}")]
        case ToolObserved():
            return [("INFO", f"Tool {event.tool} answered in {event.latency_ms:.0f} ms ({len(event.result)} characters)")]
        case ToolFailed():
            return [("WARNING", f"Tool {event.tool} failed: {event.error}")]
        case LLMFailed():
            return [("WARNING" if event.retryable else "ERROR",
                     f"Model call failed ({event.kind}, attempt {event.attempt}): {event.message}")]
    return _later_console_lines(event)


def _later_console_lines(event: ReportEvent) -> list[tuple[str, str]]:
    match event:
        case SectionCompleted():
            return [("INFO", f"Section {event.section_index} complete: {event.title} ({event.tool_calls} tool calls)")]
        case ReportCompleted():
            problems = f"; problems: {'; '.join(event.problems)}" if event.problems else ""
            return [("WARNING" if event.problems else "INFO", f"Report completed: {event.sections_total} sections"
                                                              + problems)]
        case ReportFailed():
            return [("ERROR", f"Report failed during {event.stage}: {event.error}")]
        case ReportResumed():
            return [("INFO", f"Report resumed ({event.reason})")]
    return []
