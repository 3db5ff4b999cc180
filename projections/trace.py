"""The trace view: every step the report agent took, with latency and tokens (docs/architecture.md#read-models).

One row per event; `report_queries.trace` nests them as report > sections > iterations > steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

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
        d = recorded.data
        label, detail = describe(recorded.type, d)
        usage = d.get("usage") or {}
        # Answers carry no section: they belong to the section of the step before them. A step carries the
        # iteration its section's LLM request opened; the steps that carry none (a section's start and end, and
        # every step of a store written before steps carried it) belong to the latest one (0 before any).
        section = ("coalesce(?, (SELECT section_index FROM trace_steps WHERE report_id = ?"
                   " ORDER BY position DESC LIMIT 1), 0)")
        yield (f"INSERT OR REPLACE INTO trace_steps SELECT ?, ?, s, coalesce(?, ? + (SELECT count(*) FROM trace_steps"
               f" WHERE report_id = ? AND section_index = s AND kind = 'llm_request')), ?, ?, ?, ?, ?, ?, ?"
               f" FROM (SELECT {section} AS s)",
               (recorded.position, d["report_id"], d.get("iteration"), int(recorded.type == LLMRequested.TYPE),
                d["report_id"], KINDS[recorded.type], label, detail, usage.get("prompt_tokens"),
                usage.get("completion_tokens"), d.get("latency_ms"), recorded.recorded_at, d.get("section_index"),
                d["report_id"]))


def describe(type_name: str, d: dict[str, Any]) -> tuple[str, str]:
    """A short label and the readable detail of one step."""
    if type_name == LLMRequested.TYPE:
        return f"{d['purpose']} request {d['call_id']}", f"{len(d['messages_added'])} new message(s), " \
                                                         f"fingerprint {d['fingerprint'][:12]}"
    if type_name == LLMResponded.TYPE:
        calls = ", ".join(t["name"] for t in d.get("tool_calls", []))
        return f"response {d['call_id']}" + (f" -> {calls}" if calls else ""), d.get("content", "")
    if type_name == LLMFailed.TYPE:
        return f"{d['kind']} (attempt {d['attempt']})", d["message"]
    if type_name == ToolCalled.TYPE:
        return d["tool"], json.dumps(d["arguments"], sort_keys=True, ensure_ascii=False)
    if type_name in (ToolObserved.TYPE, ToolFailed.TYPE):
        return d["tool"], d.get("result", d.get("error", ""))
    if type_name == ResponseRejected.TYPE:
        return d["reason"], d.get("detail") or d.get("feedback", "")
    if type_name == ThoughtRecorded.TYPE:
        return "thought", d["text"]
    if type_name == SectionCompleted.TYPE:
        return d["title"], d["content"]
    if type_name == OutlinePlanned.TYPE:
        return d["title"], "\n".join(s["title"] for s in d["sections"])
    if type_name == ContextGathered.TYPE:
        return "context", json.dumps(d["context"], sort_keys=True, ensure_ascii=False)[:2000]
    if type_name == ContextCompacted.TYPE:
        return f"{d['before_tokens']} -> {d['after_tokens']} tokens", d["reason"]
    if type_name == ReportFailed.TYPE:
        return d["stage"], d["error"]
    if type_name in (WriterChanged.TYPE, ReportForked.TYPE):
        return type_name, f"continues with {d['provider']} {d['model']}".rstrip()
    return type_name, d.get("title", "") or d.get("reason", "") or d.get("protocol", "")
