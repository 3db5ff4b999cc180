"""Print a report's progress on a terminal as its events arrive."""

from __future__ import annotations

import json
from typing import TextIO

from simreportd.agent.runner import report_stream
from simreportd.events.codec import Recorded
from simreportd.events.store import CaughtUp, EventStore

DONE = ("InterviewUnlocked", "ReportFailed")
CONTINUED = ("ReportResumed", "ReportForked")


async def follow_report(store: EventStore, report_id: str, out: TextIO) -> None:
    """Print one line per meaningful step until the report completes or fails (a failure that was
    resumed since, or a fork's copy of one, is history: it does not end the following)."""
    total, ended, live = 0, False, False
    async for item in store.subscribe(streams=[report_stream(report_id)]):
        if isinstance(item, CaughtUp):
            live = True
        else:
            total = len(item.data["sections"]) if item.type == "OutlinePlanned" else total
            if line := describe(item, total):
                print(line, file=out, flush=True)
            ended = item.type in DONE or (ended and item.type not in CONTINUED)
        if ended and live:
            return


def describe(recorded: Recorded, total: int) -> str | None:
    d, t = recorded.data, recorded.type
    lines = {
        "ReportRequested": lambda: f"Report {d['report_id']} for {d['simulation_id']} (generation "
                                   f"{d['generation']}, {writer(d)})",
        "PlanningStarted": lambda: "Planning the outline...",
        "OutlinePlanned": lambda: f"Outline: {d['title']} ({len(d['sections'])} sections"
                                  + (", derived from the data)" if d.get("fallback") else ")"),
        "SectionStarted": lambda: f"  [{d['section_index']}/{total}] writing: {d['title']}",
        "ToolCalled": lambda: f"        {d['tool']}({json.dumps(d['arguments'], ensure_ascii=False)[1:-1]})",
        "ResponseRejected": lambda: f"        rejected: {d['reason']}",
        "LLMFailed": lambda: f"        LLM call failed: {d['kind']} (attempt {d['attempt']})",
        "SectionCompleted": lambda: f"  [{d['section_index']}/{total}] ready: {d['title']} "
                                    f"({d['tool_calls']} tool calls)",
        "ReportCompleted": lambda: "Report completed.",
        "ReportFailed": lambda: f"Report failed during {d['stage']}: {d['error']}",
        "ReportResumed": lambda: "Resuming from the last recorded step...",
        "WriterChanged": lambda: f"Continuing with {writer(d)} instead of "
                                 f"{writer({'provider': d['previous_provider'], 'model': d['previous_model']})}",
        "ReportForked": lambda: f"Forked from {d['forked_from']} at position {d['at']}; continuing with {writer(d)}",
    }
    return lines[t]() if t in lines else None


def writer(d: dict[str, object]) -> str:
    """`openai model 'gpt-x'`, or the provider alone when its model says nothing more."""
    return f"{d['provider']} model {d['model']!r}" if d.get("model") and d["provider"] == "openai" else str(d["provider"])
