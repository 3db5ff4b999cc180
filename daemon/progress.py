"""Print a report's progress on a terminal as its events arrive."""

from __future__ import annotations

import json
from typing import TextIO

from simreportd.agent.runner import report_stream
from simreportd.events.codec import Recorded
from simreportd.events.store import CaughtUp, EventStore

DONE = ("InterviewUnlocked", "ReportFailed")


async def follow_report(store: EventStore, report_id: str, out: TextIO) -> None:
    """Print one line per meaningful step until the report completes or fails."""
    total = 0
    async for item in store.subscribe(streams=[report_stream(report_id)]):
        if isinstance(item, CaughtUp):
            continue
        if item.type == "OutlinePlanned":
            total = len(item.data["sections"])
        line = describe(item, total)
        if line:
            print(line, file=out, flush=True)
        if item.type in DONE:
            return


def describe(recorded: Recorded, total: int) -> str | None:
    d, t = recorded.data, recorded.type
    lines = {
        "ReportRequested": lambda: f"Report {d['report_id']} for {d['simulation_id']} (generation "
                                   f"{d['generation']}, {d['provider']})",
        "PlanningStarted": lambda: "Planning the outline...",
        "OutlinePlanned": lambda: f"Outline: {d['title']} ({len(d['sections'])} sections"
                                  + (", derived from the data)" if d.get("fallback") else ")"),
        "SectionStarted": lambda: f"  [{d['section_index']}/{total}] writing: {d['title']}",
        "ToolCalled": lambda: f"        {d['tool']}({json.dumps(d['arguments'], ensure_ascii=False)[1:-1]})",
        "ResponseRejected": lambda: f"        rejected: {d['reason']}",
        "LLMFailed": lambda: f"        LLM call failed (attempt {d['attempt']}): {d['kind']}",
        "SectionCompleted": lambda: f"  [{d['section_index']}/{total}] {'degraded' if d.get('problems') else 'ready'}:"
                                    f" {d['title']} ({d['tool_calls']} tool calls)",
        "ReportCompleted": lambda: "Report completed." if not d.get("problems") else
                                   f"Report completed, degraded: {len(d['problems'])} problem(s).",
        "ToolProtocolChosen": lambda: f"Tool protocol: {d['protocol']} ({d['reason']})",
        "ContextCompacted": lambda: f"        context shortened: {d['before_tokens']} -> {d['after_tokens']} tokens "
                                    f"({d['reason']})",
        "ReportFailed": lambda: f"Report failed during {d['stage']}: {d['error']}",
        "ReportResumed": lambda: "Resuming from the last recorded step...",
    }
    return lines[t]() if t in lines else None
