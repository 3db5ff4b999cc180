"""The report view (docs/architecture.md#read-models): status, progress, outline, sections, interview
unlock, tokens, timings and error of every report, and (agent_log.py) the lines of its MiroFish agent and
console logs (docs/formats.md#the-agent-log).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Literal

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
    ReportEvent,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ResponseRejected,
    RunSoFar,
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


def partial_label(run: RunSoFar | None, language: Language = "en") -> str | None:
    """What a report on an unfinished run says about itself, from its ReportRequested (None: the run had ended)."""
    if run is None:
        return None
    rounds = sorted(run.rounds.items())
    if language == "zh":
        upto = "和".join(f" {platform} 第 {n} 轮" for platform, n in rounds)
        return (f"部分报告：撰写时模拟仍在进行，依据{'截至' + upto if upto else '第一轮结束前'}记录的 {run.actions} "
                "条行动写成。之后的轮次未包含在内。")
    upto = " and ".join(f"round {n} on {platform}" for platform, n in rounds)
    return (f"Partial report: written while the simulation was still running, from the {run.actions} actions "
            f"recorded {'up to ' + upto if upto else 'before its first round ended'}. Later rounds are not "
            "included.")


def partial_labels(run: RunSoFar | None) -> str | None:
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
        event, t, at = recorded.event, recorded.type, recorded.recorded_at
        assert isinstance(event, ReportEvent)  # the view folds the report stream's events only
        rid = event.report_id
        if (handler := self.HANDLERS.get(t)) is not None:
            yield from handler(self, event, at)
        if t in CHANGES:  # status and progress as standing.py's rule says, from the columns just written
            yield (STANDING, (rid,))
        if t in COUNT_COLUMNS:
            column = COUNT_COLUMNS[t]
            yield (f"UPDATE reports SET {column} = {column} + 1 WHERE report_id = ?", (rid,))
        yield ("UPDATE reports SET updated_at = ?, last_position = ? WHERE report_id = ?", (at, recorded.position, rid))
        yield from agent_log.log_writes(recorded)

    def _ReportRequested(self, e: ReportRequested, at: str) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO reports VALUES (?1, ?2, ?3, 'pending', 0, 'Report requested', '', '', '[]', 0, 0,"
               " 0, 0, 0, ?4, ?5, ?6, ?7, NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, ?8, NULL, ?8, 0, 0, ?9, '[]', 0,"
               " ?10, 0, NULL)",
               (e.report_id, e.simulation_id, e.generation, e.provider, e.model, e.trigger, e.forked_from, at,
                partial_label(e.partial), partial_labels(e.partial)))

    def _PlanningStarted(self, e: PlanningStarted, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET planned = 1, message = 'Planning the outline' WHERE report_id = ?", (e.report_id,))

    def _ToolProtocolChosen(self, e: ToolProtocolChosen, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET protocol = ? WHERE report_id = ?", (e.protocol, e.report_id))

    def _OutlinePlanned(self, e: OutlinePlanned, at: str) -> Iterable[Write]:
        outline = json.dumps([s.model_dump() for s in e.sections], ensure_ascii=False)
        yield ("UPDATE reports SET message = 'Outline planned', title = ?, summary = ?, outline = ?,"
               " sections_total = ? WHERE report_id = ?", (e.title, e.summary, outline, len(e.sections), e.report_id))
        yield ("UPDATE reports SET partial = json_extract(partial_labels, ?) WHERE report_id = ?"
               " AND partial_labels IS NOT NULL", (f"$.{title_language(e.title)}", e.report_id))
        for i, section in enumerate(e.sections, 1):
            yield ("INSERT OR REPLACE INTO report_sections VALUES (?, ?, ?, ?, 'pending', NULL, 0, 0, 0, NULL, NULL,"
                   " '[]', '{}', 0, 0)", (e.report_id, i, section.title, section.description))

    def _SectionStarted(self, e: SectionStarted, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET current_section = ?, message = ? WHERE report_id = ?",
               (e.section_index, f"Writing section {e.section_index}: {e.title}", e.report_id))
        yield ("UPDATE report_sections SET status = 'generating' WHERE report_id = ? AND section_index = ?",
               (e.report_id, e.section_index))

    def _LLMResponded(self, e: LLMResponded, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,"
               " tokens_estimated = max(tokens_estimated, ?) WHERE report_id = ?",
               (e.usage.prompt_tokens, e.usage.completion_tokens, int(e.usage.estimated), e.report_id))

    def _SectionCompleted(self, e: SectionCompleted, at: str) -> Iterable[Write]:
        rid, i = e.report_id, e.section_index
        yield ("UPDATE report_sections SET status = 'completed', content = ?, tool_calls = ?, iterations = ?,"
               " forced = ?, completed_at = ?, problems = ?, rejections = ?, grounded_quotes = ?, ungrounded_quotes = ?"
               " WHERE report_id = ? AND section_index = ?",
               (e.content, e.tool_calls, e.iterations, int(e.forced), at, json.dumps(e.problems, ensure_ascii=False),
                json.dumps(e.rejections), e.grounded_quotes, e.ungrounded_quotes, rid, i))
        yield ("UPDATE reports SET completed_sections = completed_sections + 1, message = ?,"
               " ungrounded_quotes = ungrounded_quotes + ? WHERE report_id = ?",
               (f"Section {i} completed: {e.title}", e.ungrounded_quotes, rid))

    def _ReportCompleted(self, e: ReportCompleted, at: str) -> Iterable[Write]:
        problems = e.problems
        message = f"Report completed with {len(problems)} problem(s): {'; '.join(problems)}" if problems \
            else "Report completed"
        yield ("UPDATE reports SET verdict = ?, message = ?, problems = ?,"
               " current_section = NULL, completed_at = ? WHERE report_id = ?",
               (e.status, message, json.dumps(problems, ensure_ascii=False), at, e.report_id))

    def _InterviewUnlocked(self, e: InterviewUnlocked, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET interview_unlocked = 1, live_environment = ? WHERE report_id = ?",
               (int(e.live_environment), e.report_id))

    def _ReportFailed(self, e: ReportFailed, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET error = ?, failed_stage = ?, resumable = ?, message = ? WHERE report_id = ?",
               (e.error, e.stage, int(e.resumable), f"Failed during {e.stage}", e.report_id))

    def _WriterChanged(self, e: WriterChanged, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET provider = ?, model = ? WHERE report_id = ?", (e.provider, e.model, e.report_id))

    def _ReportDeleted(self, e: ReportDeleted, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET deleted = 1 WHERE report_id = ?", (e.report_id,))

    def _ReportResumed(self, e: ReportResumed, at: str) -> Iterable[Write]:
        yield ("UPDATE reports SET error = NULL, failed_stage = NULL, message = 'Resumed' WHERE report_id = ?",
               (e.report_id,))

    def _ReportForked(self, e: ReportForked, at: str) -> Iterable[Write]:
        """A fork goes on from its shared history: a failure copied into it is not its own."""
        yield ("UPDATE reports SET error = NULL, failed_stage = NULL, message = 'Forked' WHERE report_id = ?",
               (e.report_id,))

    HANDLERS: dict[str, Callable[..., Iterable[Write]]] = by_type_name({  # each takes its own event type
        ReportRequested: _ReportRequested, PlanningStarted: _PlanningStarted, ToolProtocolChosen: _ToolProtocolChosen,
        OutlinePlanned: _OutlinePlanned, SectionStarted: _SectionStarted, LLMResponded: _LLMResponded,
        SectionCompleted: _SectionCompleted, ReportCompleted: _ReportCompleted, InterviewUnlocked: _InterviewUnlocked,
        ReportFailed: _ReportFailed, WriterChanged: _WriterChanged, ReportResumed: _ReportResumed, ReportForked: _ReportForked,
        ReportDeleted: _ReportDeleted})
    types = frozenset({*HANDLERS, *COUNT_COLUMNS, *agent_log.TYPES})  # counted and logged events touch the report too

