"""The trace view: every step the report agent took, with latency and tokens (docs/architecture.md#read-models).

One row per event; `report_queries.trace` nests them as report > sections > iterations > steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from simreportd.events.codec import Recorded
from simreportd.events.models import (
    ContextCompacted,
    ContextGathered,
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportEvent,
    ReportFailed,
    ReportForked,
    ReportResumed,
    ResponseRejected,
    SectionCompleted,
    SectionStarted,
    ThoughtRecorded,
    ToolCalled,
    ToolFailed,
    ToolObserved,
    ToolProtocolChosen,
    WriterChanged,
)

from .projection import Write, by_type_name

SCHEMA = """
CREATE TABLE IF NOT EXISTS trace_steps (
    position INTEGER PRIMARY KEY, report_id TEXT, section_index INTEGER, iteration INTEGER, kind TEXT,
    label TEXT, detail TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_ms REAL, recorded_at TEXT);
CREATE INDEX IF NOT EXISTS trace_by_report ON trace_steps (report_id, position);
CREATE INDEX IF NOT EXISTS trace_by_section ON trace_steps (report_id, section_index, kind);
"""

KINDS = by_type_name({  # the step each event stands for, as the trace names it
    PlanningStarted: "planning", ContextGathered: "context", OutlinePlanned: "outline", ToolProtocolChosen: "protocol",
    SectionStarted: "section", LLMRequested: "llm_request", LLMResponded: "llm_response", LLMFailed: "llm_failed",
    ThoughtRecorded: "thought", ToolCalled: "tool_call", ToolObserved: "observation", ToolFailed: "tool_failed",
    ResponseRejected: "rejection", SectionCompleted: "final_answer", ReportCompleted: "completed",
    InterviewUnlocked: "interview_unlocked", ReportFailed: "failed", ReportResumed: "resumed",
    WriterChanged: "writer_changed", ReportForked: "forked", ContextCompacted: "compaction"})


class TraceView:
    name = "trace"
    schema = SCHEMA
    tables = ("trace_steps",)
    extra_tables = ()
    deferred_indexes = ()
    types = frozenset(KINDS)

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        event = recorded.event
        assert isinstance(event, ReportEvent)  # the view folds the report stream's events only
        label, detail = describe(event)
        usage = event.usage if isinstance(event, LLMResponded) else None
        tokens = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (None, None)
        # Answers carry no section: they belong to the section of the step before them. A step carries the
        # iteration its section's LLM request opened; the steps that carry none (a section's start and end, and
        # every step of a store written before steps carried it) belong to the latest one (0 before any).
        section = ("coalesce(?, (SELECT section_index FROM trace_steps WHERE report_id = ?"
                   " ORDER BY position DESC LIMIT 1), 0)")
        yield (f"INSERT OR REPLACE INTO trace_steps SELECT ?, ?, s, coalesce(?, ? + (SELECT count(*) FROM trace_steps"
               f" WHERE report_id = ? AND section_index = s AND kind = 'llm_request')), ?, ?, ?, ?, ?, ?, ?"
               f" FROM (SELECT {section} AS s)",
               (recorded.position, event.report_id, getattr(event, "iteration", None),
                int(isinstance(event, LLMRequested)), event.report_id, KINDS[recorded.type], label, detail, *tokens,
                getattr(event, "latency_ms", None), recorded.recorded_at, getattr(event, "section_index", None),
                event.report_id))


def describe(event: ReportEvent) -> tuple[str, str]:
    """A short label and the readable detail of one step."""
    match event:
        case LLMRequested():
            return (f"{event.purpose} request {event.call_id}",
                    f"{len(event.messages_added)} new message(s), fingerprint {event.fingerprint[:12]}")
        case LLMResponded():
            calls = ", ".join(t.name for t in event.tool_calls)
            return f"response {event.call_id}" + (f" -> {calls}" if calls else ""), event.content
        case LLMFailed():
            return f"{event.kind} (attempt {event.attempt})", event.message
        case ToolCalled():
            return event.tool, json.dumps(event.arguments, sort_keys=True, ensure_ascii=False)
        case ToolObserved():
            return event.tool, event.result
        case ToolFailed():
            return event.tool, event.error
        case ResponseRejected():
            return event.reason, event.detail or event.feedback
        case ThoughtRecorded():
            return "thought", event.text
        case SectionCompleted():
            return event.title, event.content
        case OutlinePlanned():
            return event.title, "\n".join(s.title for s in event.sections)
        case ContextGathered():
            return "context", json.dumps(event.context, sort_keys=True, ensure_ascii=False)[:2000]
        case ContextCompacted():
            return f"{event.before_tokens} -> {event.after_tokens} tokens", event.reason
        case ReportFailed():
            return event.stage, event.error
        case WriterChanged() | ReportForked():
            return event.TYPE, f"continues with {event.provider} {event.model}".rstrip()
    # the steps with nothing more to say: a title, a reason or a protocol if they have one
    return event.TYPE, getattr(event, "title", "") or getattr(event, "reason", "") or getattr(event, "protocol", "")
