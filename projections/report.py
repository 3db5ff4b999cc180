"""The report view (docs/architecture.md#read-models): status, progress, outline, sections, interview
unlock, tokens, timings and error of every report, and (agent_log.py) the lines of its MiroFish agent and
console logs (docs/formats.md#the-agent-log).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Literal

from simreportd.events.codec import Recorded
from simreportd.events.models import (
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportDeleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ResponseRejected,
    SectionCompleted,
    SectionStarted,
    ToolCalled,
    ToolProtocolChosen,
    WriterChanged,
)

from . import agent_log
from .projection import Write, by_type_name
from .standing import CHANGES, PROGRESS_SQL, STATUS_SQL

SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    report_id TEXT PRIMARY KEY, simulation_id TEXT, generation INTEGER, status TEXT, progress INTEGER,
    message TEXT, title TEXT, summary TEXT, outline TEXT, sections_total INTEGER, completed_sections INTEGER,
    current_section INTEGER, interview_unlocked INTEGER, live_environment INTEGER, provider TEXT, model TEXT,
    trigger TEXT, forked_from TEXT, protocol TEXT, llm_calls INTEGER, llm_failures INTEGER, tool_calls INTEGER,
    rejections INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, tokens_estimated INTEGER,
    error TEXT, failed_stage TEXT, resumable INTEGER, created_at TEXT, completed_at TEXT, updated_at TEXT,
    last_position INTEGER, ungrounded_quotes INTEGER DEFAULT 0, partial TEXT, problems TEXT DEFAULT '[]',
    deleted INTEGER DEFAULT 0, partial_labels TEXT, planned INTEGER DEFAULT 0, verdict TEXT);
CREATE TABLE IF NOT EXISTS report_sections (
    report_id TEXT, section_index INTEGER, title TEXT, description TEXT, status TEXT, content TEXT,
    tool_calls INTEGER, iterations INTEGER, forced INTEGER, completed_at TEXT, position INTEGER,
    problems TEXT DEFAULT '[]', rejections TEXT DEFAULT '{}', grounded_quotes INTEGER DEFAULT 0,
    ungrounded_quotes INTEGER DEFAULT 0, PRIMARY KEY (report_id, section_index));
""" + agent_log.SCHEMA

COUNT_COLUMNS = by_type_name({LLMRequested: "llm_calls", LLMFailed: "llm_failures", ToolCalled: "tool_calls",
                              ResponseRejected: "rejections"})


HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
Language = Literal["en", "zh"]


def title_language(title: str | None) -> Language:
    """A report's language, as its files and labels follow it: Chinese when its title has Han characters (a
    report on a Chinese run is titled and written in Chinese), else English."""
    return "zh" if HAN.search(title or "") else "en"


def partial_label(run: dict[str, Any] | None, language: Language = "en") -> str | None:
    """What a report on an unfinished run says about itself, from its ReportRequested (None: the run had ended)."""
    if run is None:
        return None
    rounds = sorted(run["rounds"].items())
    if language == "zh":
        upto = "和".join(f" {platform} 第 {n} 轮" for platform, n in rounds)
        return (f"部分报告：撰写时模拟仍在进行，依据{'截至' + upto if upto else '第一轮结束前'}记录的 {run['actions']} "
                "条行动写成。之后的轮次未包含在内。")
    upto = " and ".join(f"round {n} on {platform}" for platform, n in rounds)
    return (f"Partial report: written while the simulation was still running, from the {run['actions']} actions "
            f"recorded {'up to ' + upto if upto else 'before its first round ended'}. Later rounds are not "
            "included.")


def partial_labels(run: dict[str, Any] | None) -> str | None:
    """The label in every language, as JSON: the report's language is known only once its outline is planned
    (`_OutlinePlanned` then shows the label in it); until then the label is English."""
    if run is None:
        return None
    return json.dumps({language: partial_label(run, language) for language in ("en", "zh")}, ensure_ascii=False)


STANDING = "UPDATE reports SET status = " + STATUS_SQL + ", progress = " + PROGRESS_SQL + " WHERE report_id = ?"


class ReportView:
    name = "report"
    schema = SCHEMA
    tables = ("reports", "report_sections", *agent_log.TABLES)
    extra_tables = ()
    deferred_indexes = ()

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        d, t, at = recorded.data, recorded.type, recorded.recorded_at
        rid = d["report_id"]
        if (handler := self.HANDLERS.get(t)) is not None:
            yield from handler(self, d, at)
        if t in CHANGES:  # status and progress as standing.py's rule says, from the columns just written
            yield (STANDING, (rid,))
        if t in COUNT_COLUMNS:
            column = COUNT_COLUMNS[t]
            yield (f"UPDATE reports SET {column} = {column} + 1 WHERE report_id = ?", (rid,))
        yield ("UPDATE reports SET updated_at = ?, last_position = ? WHERE report_id = ?", (at, recorded.position, rid))
        yield from agent_log.log_writes(recorded)

    def _ReportRequested(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO reports VALUES (?1, ?2, ?3, 'pending', 0, 'Report requested', '', '', '[]', 0, 0,"
               " 0, 0, 0, ?4, ?5, ?6, ?7, NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, ?8, NULL, ?8, 0, 0, ?9, '[]', 0,"
               " ?10, 0, NULL)",
               (d["report_id"], d["simulation_id"], d["generation"], d.get("provider", ""), d.get("model", ""),
                d.get("trigger", ""), d.get("forked_from"), at, partial_label(d.get("partial")),
                partial_labels(d.get("partial"))))

    def _PlanningStarted(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET planned = 1, message = 'Planning the outline' WHERE report_id = ?",
               (d["report_id"],))

    def _ToolProtocolChosen(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET protocol = ? WHERE report_id = ?", (d["protocol"], d["report_id"]))

    def _OutlinePlanned(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        sections = d["sections"]
        yield ("UPDATE reports SET message = 'Outline planned', title = ?, summary = ?, outline = ?,"
               " sections_total = ? WHERE report_id = ?",
               (d["title"], d["summary"],
                json.dumps(sections, ensure_ascii=False), len(sections), d["report_id"]))
        yield ("UPDATE reports SET partial = json_extract(partial_labels, ?) WHERE report_id = ?"
               " AND partial_labels IS NOT NULL", (f"$.{title_language(d['title'])}", d["report_id"]))
        for i, section in enumerate(sections, 1):
            yield ("INSERT OR REPLACE INTO report_sections VALUES (?, ?, ?, ?, 'pending', NULL, 0, 0, 0, NULL, NULL,"
                   " '[]', '{}', 0, 0)",
                   (d["report_id"], i, section["title"], section.get("description", "")))

    def _SectionStarted(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET current_section = ?, message = ? WHERE report_id = ?",
               (d["section_index"], f"Writing section {d['section_index']}: {d['title']}", d["report_id"]))
        yield ("UPDATE report_sections SET status = 'generating' WHERE report_id = ? AND section_index = ?",
               (d["report_id"], d["section_index"]))

    def _LLMResponded(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        usage = d.get("usage") or {}
        yield ("UPDATE reports SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,"
               " tokens_estimated = max(tokens_estimated, ?) WHERE report_id = ?",
               (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), int(bool(usage.get("estimated"))),
                d["report_id"]))

    def _SectionCompleted(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        rid, i = d["report_id"], d["section_index"]
        yield ("UPDATE report_sections SET status = 'completed', content = ?, tool_calls = ?, iterations = ?,"
               " forced = ?, completed_at = ?, problems = ?, rejections = ?, grounded_quotes = ?, ungrounded_quotes = ?"
               " WHERE report_id = ? AND section_index = ?",
               (d["content"], d.get("tool_calls", 0), d.get("iterations", 0), int(d.get("forced", False)), at,
                json.dumps(d.get("problems", []), ensure_ascii=False), json.dumps(d.get("rejections", {})),
                d.get("grounded_quotes", 0), d.get("ungrounded_quotes", 0), rid, i))
        yield ("UPDATE reports SET completed_sections = completed_sections + 1, message = ?,"
               " ungrounded_quotes = ungrounded_quotes + ? WHERE report_id = ?",
               (f"Section {i} completed: {d['title']}", d.get("ungrounded_quotes", 0), rid))

    def _ReportCompleted(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        problems = d.get("problems", [])
        message = f"Report completed with {len(problems)} problem(s): {'; '.join(problems)}" if problems \
            else "Report completed"
        yield ("UPDATE reports SET verdict = ?, message = ?, problems = ?,"
               " current_section = NULL, completed_at = ? WHERE report_id = ?",
               (d.get("status", "completed"), message, json.dumps(problems, ensure_ascii=False), at, d["report_id"]))

    def _InterviewUnlocked(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET interview_unlocked = 1, live_environment = ? WHERE report_id = ?",
               (int(d["live_environment"]), d["report_id"]))

    def _ReportFailed(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET error = ?, failed_stage = ?, resumable = ?, message = ?"
               " WHERE report_id = ?", (d["error"], d["stage"],
                                        int(d.get("resumable", True)), f"Failed during {d['stage']}", d["report_id"]))

    def _WriterChanged(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET provider = ?, model = ? WHERE report_id = ?", (d["provider"], d["model"], d["report_id"]))

    def _ReportDeleted(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET deleted = 1 WHERE report_id = ?", (d["report_id"],))

    def _ReportResumed(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET error = NULL, failed_stage = NULL, message = 'Resumed' WHERE report_id = ?",
               (d["report_id"],))

    def _ReportForked(self, d: dict[str, Any], at: str) -> Iterable[Write]:
        """A fork goes on from its shared history: a failure copied into it is not its own."""
        yield ("UPDATE reports SET error = NULL, failed_stage = NULL, message = 'Forked' WHERE report_id = ?",
               (d["report_id"],))

    HANDLERS = by_type_name({
        ReportRequested: _ReportRequested, PlanningStarted: _PlanningStarted, ToolProtocolChosen: _ToolProtocolChosen,
        OutlinePlanned: _OutlinePlanned, SectionStarted: _SectionStarted, LLMResponded: _LLMResponded,
        SectionCompleted: _SectionCompleted, ReportCompleted: _ReportCompleted, InterviewUnlocked: _InterviewUnlocked,
        ReportFailed: _ReportFailed, WriterChanged: _WriterChanged, ReportResumed: _ReportResumed, ReportForked: _ReportForked,
        ReportDeleted: _ReportDeleted})
    types = frozenset({*HANDLERS, *COUNT_COLUMNS, *agent_log.TYPES})  # counted and logged events touch the report too

